"""A disease the text says a drug induced ("levodopa-induced dyskinesias"), linked to the KB's
own entity of it so induced ("Dyskinesia, Drug-Induced") where the KB has one, with the doc's
other mentions of that disease: MeSH keeps drug-induced diseases as entities of their own, and
the name alone ("dyskinesias") reads as the general one wherever the doc repeats it.

The inducer is read where the text writes "X-induced" (or "X induced") right before the mention
or at its start, X not one of the few inducers that are no substance ("exercise-induced",
"radiation-induced"), nor a verb or adverb ("was induced", "experimentally induced"). Nothing is
linked to a variant the KB lacks, and a link memory after the linker still wins, as it does over
KB names."""
import re
from dataclasses import replace
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from spacy.language import Language
from spacy.tokens import Span

from ...kb.entities import NIL
from ...retrieval.retriever import EntityRetriever
from ..link_memory import LinkMemory, fold_plurals, memories_after, memory_key
from .link_decisions import Link

# The KB's words for something a substance induced, as its names write them ("Drug-Induced").
SUBSTANCE_WORDS = ("drug", "substance", "chemically")
_VARIANT = re.compile(rf"^(?:(?P<before>.+) (?:{'|'.join(SUBSTANCE_WORDS)}) induced"
                      rf"|(?:{'|'.join(SUBSTANCE_WORDS)}) induced (?P<after>.+))$")
# "X-induced" right before a mention (X its last word), or at its start; any dash, or a space.
_DASHES = "-\u2010\u2011\u2012\u2013"
_INDUCED_BEFORE = re.compile(rf"(\w+)\)?[{_DASHES}\s]induced\s*$", re.IGNORECASE)
_INDUCED_AT_START = re.compile(rf"^\S*?(\w+)\)?[{_DASHES}\s]induced\s+(?P<rest>\S.*)$", re.IGNORECASE | re.DOTALL)
# Inducers that are no substance (MeSH's "Exercise-Induced", "Radiation-Induced", "Noise-Induced" and the like).
NOT_SUBSTANCES = frozenset({"exercise", "exertion", "radiation", "pregnancy", "noise", "cold", "stress", "virus",
                            "viral", "infection", "ischemia", "hypoxia", "trauma", "surgery", "heat", "light",
                            "injury", "immune", "autoimmune", "ventilator", "deprivation", "eating"})
# Words before "induced" that make it a verb, not an inducer (so do adverbs in -ly).
NOT_INDUCERS = frozenset({"was", "were", "is", "are", "be", "been", "being", "not", "also", "and", "or", "then",
                          "thus", "first", "can", "may"})
# Characters before a mention read for its inducer.
CONTEXT_CHARS = 40


def name_key(text: str) -> str:
    """How a disease name is compared with the one a variant is named after (case, punctuation
    and plural endings aside)."""
    return fold_plurals(memory_key(text))


class InducedVariants:
    """The drug-induced variants of the KB of `retriever` (the linker's), by what they are variants
    of, rebuilt when its list of names is another one (a KB update)."""

    def __init__(self, retriever: Callable[[], EntityRetriever]) -> None:
        self._retriever = retriever
        self._source: Optional[List[Tuple[str, int]]] = None
        self._by_name: Dict[str, str] = {}  # base name (`name_key`) -> its one variant
        self._by_entity: Dict[str, str] = {}  # an entity named so -> its variant
        self._bases: Dict[str, Set[str]] = {}  # a variant -> the entities it is a variant of

    def _build(self) -> None:
        retriever = self._retriever()
        alias_pairs, kb = retriever.alias_pairs(), retriever.kb
        if alias_pairs is self._source:
            return
        variants: Dict[str, Set[str]] = {}
        keys: List[Tuple[str, str]] = []
        for text, row in alias_pairs:
            key = name_key(text)
            keys.append((key, kb.ids[row]))
            found = _VARIANT.match(key)
            if found:
                variants.setdefault(found.group("before") or found.group("after"), set()).add(kb.ids[row])
        self._by_name = {base: next(iter(ids)) for base, ids in variants.items() if len(ids) == 1}
        named: Dict[str, Set[str]] = {}
        for key, kb_id in keys:
            if key in self._by_name and self._by_name[key] != kb_id:
                named.setdefault(kb_id, set()).add(self._by_name[key])
        self._by_entity = {kb_id: next(iter(found)) for kb_id, found in named.items() if len(found) == 1}
        self._bases = {}
        for kb_id, variant in self._by_entity.items():
            self._bases.setdefault(variant, set()).add(kb_id)
        self._source = alias_pairs

    def relinked(self, spans_per_doc: Sequence[Sequence[Span]], links_per_doc: List[List[Link]],
                 nlp: Optional[Language], linker: object) -> List[List[Link]]:
        """`links_per_doc` with each doc's mentions relinked (`relink`), the link memories after
        `linker` in `nlp` left to link what they remember."""
        memories = memories_after(nlp, linker)
        for spans, links in zip(spans_per_doc, links_per_doc):
            self.relink(spans, links, memories)
        return links_per_doc

    def relink(self, spans: Sequence[Span], links: List[Link], memories: Sequence[LinkMemory] = ()) -> None:
        """Within one doc (`spans` and their `links`): once a mention reads as drug-induced, every
        mention linked to its entity links to the entity's variant (a mention linked by its text
        alone, to its own); a mention that one of `memories` (link memories after the linker)
        remembers is left to it."""
        text = spans[0].doc.text if spans else ""
        if "induced" not in text.lower():
            return
        self._build()
        doc_wide: Dict[str, str] = {}
        alone: Dict[int, str] = {}
        for i, (span, link) in enumerate(zip(spans, links)):
            disease = _induced_text(span, text)
            if disease is None or link.kb_id == NIL or "|" in link.kb_id:
                continue
            if link.kb_id in self._by_entity:
                doc_wide.setdefault(link.kb_id, self._by_entity[link.kb_id])
            elif link.kb_id in self._bases:  # already the variant ("levodopa-induced dyskinesias" whole)
                for base in self._bases[link.kb_id]:
                    doc_wide.setdefault(base, link.kb_id)
            elif name_key(disease) in self._by_name:
                alone[i] = self._by_name[name_key(disease)]
        for i, (span, link) in enumerate(zip(spans, links)):
            variant = alone.get(i) or doc_wide.get(link.kb_id)
            if variant is not None and variant != link.kb_id and all(m.lookup(span) is None for m in memories):
                links[i] = _relinked(link, variant)


def _induced_text(span: Span, text: str) -> Optional[str]:
    """The disease `span` (in its doc's `text`) names if the text says a drug induced it (its text
    less a leading "X-induced"), else None."""
    at_start = _INDUCED_AT_START.match(span.text)
    if at_start:
        return at_start.group("rest") if _is_inducer(at_start.group(1)) else None
    before = _INDUCED_BEFORE.search(text[max(0, span.start_char - CONTEXT_CHARS):span.start_char])
    return span.text if before and _is_inducer(before.group(1)) else None


def _is_inducer(word: str) -> bool:
    """Whether `word`, written before "induced", can be a substance that induced something."""
    word = word.lower()
    return word not in NOT_SUBSTANCES and word not in NOT_INDUCERS and not word.endswith("ly")


def _relinked(link: Link, variant: str) -> Link:
    """`link` to `variant`, which swaps places with the entity among the candidates (scores, ranks and
    so the confidence's features stay); a cluster's path starts at what it links to."""
    swap = {link.kb_id: variant, variant: link.kb_id}
    candidates = [(swap.get(kb_id, kb_id), score) for kb_id, score in link.candidates]
    path = [variant, *link.path[1:]] if link.path else link.path
    return replace(link, kb_id=variant, candidates=candidates, path=path)
