"""The input's own mentions as the pipeline's `doc.ents` (`link --mentions input` or `both`).

spaCy's entities lie on token boundaries and never overlap, while mentions found elsewhere can do
both. A mention inside or across tokens is linked as the smallest token span holding it (counted as
aligned; the output keeps the input's offsets). Overlapping mentions are all linked: the longest of
each overlapping group is linked in the document, the others in copies of it that hold only
mentions that do not overlap each other, so every mention is read in its whole context and none is
dropped. With `both`, the pipeline's recognizers run around the input's mentions (spaCy's `ner` and
`kb_mention_finder` keep mentions already set); an input mention a recognizer replaced is linked in a
copy too, and a mention of the pipeline's that overlaps an input mention is not written."""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

from spacy.language import Language
from spacy.tokens import Doc, Span

from ..pipeline.common.mention_finders import MENTIONS

# The label a mention without one is linked under (a span without a label is no entity in spaCy);
# the output keeps the input's empty label.
UNLABELLED = "ENTITY"


@dataclass
class PlacedMention:
    """An input mention (the index of `record.gold`) and the token span `[start, end)` it is linked as."""

    index: int
    start: int
    end: int
    label: str
    aligned: bool

    @property
    def tokens(self) -> Tuple[int, int]:
        return self.start, self.end

    def span(self, doc: Doc) -> Span:
        return Span(doc, self.start, self.end, label=self.label)


@dataclass
class Placement:
    """Where a record's input mentions are linked: `layers[0]` in the document itself, each later
    layer in a copy; `unplaced` the indexes of mentions no token holds (whitespace only)."""

    layers: List[List[PlacedMention]] = field(default_factory=list)
    unplaced: List[int] = field(default_factory=list)


def place_mentions(doc: Doc, mentions: List[Dict[str, Any]]) -> Placement:
    """The token spans of `mentions` (dicts with character `start` and `end`), in `layers_of`."""
    placed, unplaced = [], []
    for index, mention in enumerate(mentions):
        span = doc.char_span(mention["start"], mention["end"], alignment_mode="strict")
        aligned = span is None
        if span is None:
            span = doc.char_span(mention["start"], mention["end"], alignment_mode="expand")
        if span is None or not span.text.strip():
            unplaced.append(index)
            continue
        placed.append(PlacedMention(index, span.start, span.end, mention.get("label") or UNLABELLED, aligned))
    return Placement(layers_of(placed), unplaced)


def layers_of(mentions: List[PlacedMention]) -> List[List[PlacedMention]]:
    """`mentions` in layers that do not overlap: each goes to the first layer it overlaps nothing
    in, longest first (then leftmost), so a layer is what spaCy's `filter_spans` keeps of the rest."""
    layers: List[List[PlacedMention]] = []
    taken: List[Set[int]] = []
    for mention in sorted(mentions, key=lambda m: (m.start - m.end, m.start, m.index)):
        tokens = set(range(mention.start, mention.end))
        layer = next((i for i, used in enumerate(taken) if not used & tokens), len(taken))
        if layer == len(taken):
            taken.append(set())
            layers.append([])
        taken[layer] |= tokens
        layers[layer].append(mention)
    return [sorted(layer, key=lambda m: m.start) for layer in layers]


def with_mentions(doc: Doc, mentions: List[PlacedMention]) -> Doc:
    """`doc` with `mentions` (which do not overlap) as its entities."""
    doc.ents = [mention.span(doc) for mention in mentions]
    return doc


def copy_with_mentions(nlp: Language, text: str, mentions: List[PlacedMention]) -> Doc:
    return with_mentions(nlp.make_doc(text), mentions)


def mention_changers(nlp: Language) -> List[str]:
    """The components that set or change `doc.ents` (recognizers, KB finders, their filters), and
    the embedding components only they listen to: what `--mentions input` leaves out."""
    found = nlp.analyze_pipes()["attrs"].get(MENTIONS, {"assigns": []})
    changers = list(found["assigns"])
    for name, proc in nlp.pipeline:
        listeners = getattr(proc, "listening_components", None)
        if listeners and set(listeners) <= set(changers):
            changers.append(name)
    return changers


def linked_span(doc: Doc, mention: PlacedMention) -> Optional[Span]:
    """The entity of `doc` at the mention's tokens, if the pipeline kept it there."""
    return next((ent for ent in doc.ents if (ent.start, ent.end) == mention.tokens), None)
