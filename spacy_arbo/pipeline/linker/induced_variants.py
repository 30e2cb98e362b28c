"""A disease the text says a substance induced ("levodopa-induced dyskinesias"), linked to the
KB's own entity of it so induced ("Dyskinesia, Drug-Induced") where the KB has one, with the
doc's other mentions of that disease: MeSH keeps drug-induced diseases as entities of their
own, and the name alone ("dyskinesias") reads as the general one wherever the doc repeats it.
The inducer is read only where the text writes "X-induced" right before the mention, or at
its start; nothing is linked to a variant the KB lacks."""
import re
from dataclasses import replace
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from spacy.tokens import Span

from ...kb.entities import NIL
from ...retrieval.retriever import EntityRetriever
from ..link_memory import fold_plurals, memory_key
from .link_decisions import Link

# The KB's words for something a substance induced, as its names write them ("Drug-Induced").
INDUCERS = ("drug", "substance", "chemically")
_VARIANT = re.compile(rf"^(?:(?P<before>.+) (?:{'|'.join(INDUCERS)}) induced|(?:{'|'.join(INDUCERS)}) induced (?P<after>.+))$")
# "X-induced" (or "X induced") right before a mention, or at its start.
_INDUCED_BEFORE = re.compile(r"\w[-\s]induced\s*$", re.IGNORECASE)
_INDUCED_AT_START = re.compile(r"^\S+[-\s]induced\s+(?P<rest>\S.*)$", re.IGNORECASE | re.DOTALL)
# Characters before a mention read for its inducer.
CONTEXT_CHARS = 40


def name_key(text: str) -> str:
    """How a disease name is compared with the one a variant is named after (case, punctuation
    and plural endings aside)."""
    return fold_plurals(memory_key(text))


class InducedVariants:
    """Base name (`name_key`) -> the one entity that is its induced variant in the KB of
    `retriever` (the linker's), rebuilt when its list of names is another one (a KB update)."""

    def __init__(self, retriever: Callable[[], EntityRetriever]) -> None:
        self._retriever = retriever
        self._source: Optional[List[Tuple[str, int]]] = None
        self._variants: Dict[str, str] = {}
        self._names: Dict[str, Set[str]] = {}

    def _build(self) -> None:
        retriever = self._retriever()
        alias_pairs, kb = retriever.alias_pairs(), retriever.kb
        if alias_pairs is self._source:
            return
        variants: Dict[str, Set[str]] = {}
        names: Dict[str, Set[str]] = {}
        for text, row in alias_pairs:
            key = name_key(text)
            names.setdefault(kb.ids[row], set()).add(key)
            found = _VARIANT.match(key)
            if found:
                variants.setdefault(found.group("before") or found.group("after"), set()).add(kb.ids[row])
        self._variants = {base: next(iter(ids)) for base, ids in variants.items() if len(ids) == 1}
        self._names = names
        self._source = alias_pairs

    def variant(self, kb_id: str, text: str) -> Optional[str]:
        """The induced variant of entity `kb_id`, named after one of its names or after `text` (the
        mention, its inducer left out); None when the KB has none, or several."""
        self._build()
        if not self._variants or kb_id == NIL or "|" in kb_id:
            return None
        found = {self._variants[key] for key in {name_key(text), *self._names.get(kb_id, ())} if key in self._variants}
        found.discard(kb_id)
        return found.pop() if len(found) == 1 else None

    def relink(self, spans: Sequence[Span], links: List[Link]) -> None:
        """Within one doc (`spans` and their `links`): once a mention reads as induced and its
        entity has an induced variant, every mention linked to that entity links to the variant,
        which takes the entity's place among its candidates."""
        induced: Dict[str, str] = {}
        for span, link in zip(spans, links):
            text = _induced_text(span)
            if text is not None and link.kb_id not in induced:
                variant = self.variant(link.kb_id, text)
                if variant is not None:
                    induced[link.kb_id] = variant
        if not induced:
            return
        for i, link in enumerate(links):
            variant = induced.get(link.kb_id)
            if variant is not None:
                kept = [(kb_id, score) for kb_id, score in link.candidates if kb_id not in (link.kb_id, variant)]
                score = next((score for kb_id, score in link.candidates if kb_id == link.kb_id), 1.0)
                path = [variant, *link.path[1:]] if link.path else link.path  # a cluster's root is what it links to
                links[i] = replace(link, kb_id=variant, candidates=[(variant, score), *kept], path=path)


def _induced_text(span: Span) -> Optional[str]:
    """The disease `span` names if the text says something induced it (the span's text less a
    leading "X-induced"), else None."""
    at_start = _INDUCED_AT_START.match(span.text)
    if at_start:
        return at_start.group("rest")
    before = span.doc.text[max(0, span.start_char - CONTEXT_CHARS):span.start_char]
    return span.text if _INDUCED_BEFORE.search(before) else None
