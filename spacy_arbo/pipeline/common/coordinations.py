"""KB names inside a coordination: "breast and ovarian cancer", "breast/ovarian cancer",
"colorectal adenomas and carcinoma". A name finder matches one conjunct ("ovarian cancer"),
while the text names several concepts in one mention and corpora annotate the whole
coordination with every concept's id. A match grows over the coordination around it when each
concept the grown span names, split as the linker splits composites (`composite_parts`), reads
as a KB name while a conjunct alone does not; a span that names something else ("patients with
breast and ovarian cancer") splits into parts that are not names and is left as matched."""
from typing import Callable, List, Optional, Sequence

from spacy.tokens import Span

from .composites import CONJUNCTIONS, MAX_PARTS, composite_parts, conjunct_texts

# The most tokens a coordination may add to a match: up to MAX_PARTS conjuncts and their separators.
MAX_GROWTH = 2 * MAX_PARTS


def coordinated_spans(spans: Sequence[Span], is_name: Callable[[str], bool]) -> List[Span]:
    """For each span, the longest coordination around it that names KB names only (none where
    there is none), labelled as the span."""
    grown = []
    for span in spans:
        for coordination in (_grown_left(span, is_name), _grown_right(span, is_name)):
            if coordination is not None:
                grown.append(coordination)
    return grown


def _grown_left(span: Span, is_name: Callable[[str], bool]) -> Optional[Span]:
    """"breast and ovarian cancer" from "ovarian cancer": a shared head."""
    doc = span.doc
    if span.start == 0 or doc[span.start - 1].lower_ not in CONJUNCTIONS:
        return None
    for start in range(max(0, span.start - MAX_GROWTH), span.start - 1):
        if _names_only(Span(doc, start, span.end, label=span.label), is_name):
            return Span(doc, start, span.end, label=span.label)
    return None


def _grown_right(span: Span, is_name: Callable[[str], bool]) -> Optional[Span]:
    """"colorectal adenomas and carcinoma" from "colorectal adenomas": a shared prefix."""
    doc = span.doc
    if span.end >= len(doc) or doc[span.end].lower_ not in CONJUNCTIONS:
        return None
    for end in range(min(len(doc), span.end + MAX_GROWTH), span.end + 1, -1):
        if _names_only(Span(doc, span.start, end, label=span.label), is_name):
            return Span(doc, span.start, end, label=span.label)
    return None


def _names_only(candidate: Span, is_name: Callable[[str], bool]) -> bool:
    """Every concept it names is a KB name, and one of its conjuncts alone is not ("breast"):
    a list of whole names ("deafness and blindness") is several mentions, as corpora mark it,
    and so is a shared prefix whose last conjunct is a name alone ("carcinoma": growing those
    too cost NCBI dev and BC5CDR dev 0.2 points end to end)."""
    parts = composite_parts(candidate)
    return (len(parts) > 1 and all(is_name(part) for part in parts)
            and not all(is_name(conjunct) for conjunct in conjunct_texts(candidate)))
