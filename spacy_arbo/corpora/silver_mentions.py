"""Silver mentions: what a recognizer learns from where no one annotated a text.

A linking pipeline that finds its own mentions (the KB name finder, or a recognizer with it)
reads the texts; a mention it links to a KB entity with enough confidence becomes an entity, and
a span that the name finder proposed and the linker then linked to NIL is evidence of a
non-mention (a recognizer's NIL mention may be an entity the KB lacks: it is left missing).
The rest of the text is where a dictionary is silent. Taught as "not a mention" (`outside`),
it teaches the recognizer the name list's gaps; left a missing value (spaCy's NER takes a doc
whose ents leave tokens unset, and its scorer skips them) it teaches nothing there. `kb_words`
sits between, as AutoNER's unknown spans do: a word that no KB name uses is outside, the rest
missing. Which teaches best is measured, not assumed (docs/raw_text.md).
"""
from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional, Set, Tuple

from spacy.language import Language
from spacy.tokens import Doc, Span

from ..kb.entities import NIL
from ..pipeline.common.links import install_extensions
from ..pipeline.kb_mention_finder import KBMentionFinder
from ..util import ArboError

# What a token that no silver mention covers becomes: outside a mention, a missing value, or
# outside only when its word is in no KB name ("kb_words").
UNMATCHED = ("outside", "kb_words", "missing")
FINDER = "kb_mention_finder"
FILTER = "kb_mention_filter"


@dataclass
class SilverSettings:
    """min_confidence: a linked mention below it is left missing (neither taught as a mention
    nor as text). unmatched: one of `UNMATCHED`."""

    min_confidence: float = 0.0
    unmatched: str = "outside"

    def __post_init__(self) -> None:
        if self.unmatched not in UNMATCHED:
            raise ArboError(f"unmatched must be one of {', '.join(UNMATCHED)}, not {self.unmatched!r}")
        if not 0.0 <= self.min_confidence <= 1.0:
            raise ArboError(f"min_confidence must be within [0, 1], not {self.min_confidence}")


def finder(nlp: Language) -> KBMentionFinder:
    """The name finder whose proposals are the silver mentions (and `kb_words` its words)."""
    if FINDER not in nlp.pipe_names:
        raise ArboError(f"silver mentions need a pipeline with a {FINDER} (python -m spacy_arbo add-kb-finder).")
    return nlp.get_pipe(FINDER)


@dataclass
class SilverCounts:
    """What the silver annotation holds, for the progress line and the run's report."""

    docs: int = 0
    mentions: int = 0
    tokens: int = 0
    missing: int = 0
    nil: int = 0
    unsure: int = 0

    def add(self, doc: Doc, nil: int, unsure: int) -> None:
        self.docs += 1
        self.mentions += len(doc.ents)
        self.tokens += len(doc)
        self.missing += sum(token.ent_iob_ == "" for token in doc)
        self.nil += nil
        self.unsure += unsure

    def __str__(self) -> str:
        parts = [f"{self.mentions:,} silver mentions in {self.docs:,} texts",
                 f"{self.missing / max(1, self.tokens):.0%} of tokens left missing"]
        if self.nil:
            parts.append(f"{self.nil:,} proposals linked to NIL taught as text")
        if self.unsure:
            parts.append(f"{self.unsure:,} links left missing (below the confidence, or a recognizer's NIL)")
        return "; ".join(parts)


def silver_docs(nlp: Language, texts: Iterable[str], settings: SilverSettings, label: str,
                counts: Optional[SilverCounts] = None, batch_size: int = 32) -> Iterator[Doc]:
    """One doc per text, tokenized by `nlp`, with the silver mentions as its ents, labelled `label`."""
    install_extensions()
    names = finder(nlp)
    words = names.name_words() if settings.unmatched == "kb_words" else set()
    spans_key = names.cfg["spans_key"]
    counts = counts if counts is not None else SilverCounts()
    disabled = [FILTER] if FILTER in nlp.pipe_names else []
    with nlp.select_pipes(disable=disabled):
        for linked in nlp.pipe(texts, batch_size=batch_size):
            doc = nlp.make_doc(linked.text)
            entities, outside, missing = _silver_spans(linked, settings, spans_key)
            _annotate(doc, entities, outside, missing, settings.unmatched, words, label)
            counts.add(doc, nil=len(outside), unsure=len(missing))
            yield doc


Bounds = List[Tuple[int, int]]


def _silver_spans(linked: Doc, settings: SilverSettings, spans_key: str) -> Tuple[Bounds, Bounds, Bounds]:
    proposed = {(span.start, span.end) for span in linked.spans.get(spans_key, [])}
    entities, outside, missing = [], [], []
    for ent in linked.ents:
        bounds = (ent.start, ent.end)
        if ent.kb_id_ in ("", NIL):
            (outside if bounds in proposed else missing).append(bounds)
        elif (ent._.kb_confidence if ent._.kb_confidence is not None else 1.0) < settings.min_confidence:
            missing.append(bounds)
        else:
            entities.append(bounds)
    return entities, outside, missing


def _annotate(doc: Doc, entities: Bounds, outside: Bounds, missing: Bounds, unmatched: str, words: Set[str],
              label: str) -> None:
    covered = {i for start, end in entities + outside + missing for i in range(start, end)}
    if unmatched == "kb_words":
        missing = missing + [(t.i, t.i + 1) for t in doc if t.i not in covered and t.lower_ in words]
        outside = outside + [(t.i, t.i + 1) for t in doc if t.i not in covered and t.lower_ not in words]
    ents = [Span(doc, start, end, label=label) for start, end in entities]
    doc.set_ents(ents, missing=[doc[s:e] for s, e in missing], outside=[doc[s:e] for s, e in outside],
                 default="missing" if unmatched in ("missing", "kb_words") else "outside")
