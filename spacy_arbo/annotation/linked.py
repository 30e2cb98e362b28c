"""What a linked document says of each mention: span, label, id, the entity's KB name, the
score and top candidates (`span._.kb_candidates`), and `span._.kb_confidence` where the pipeline
writes it; mentions below `min_confidence` are written NIL and marked for review, with the id and
name held back as `proposed_kb_id` and `proposed_name` (the chosen id need not be the top candidate).
With `mentions` "input" or "both", the input's own mentions are linked (`input_mentions`)."""
from typing import Any, Dict, List, Optional, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc, Span, SpanGroup

from ..kb.entities import NIL, split_ids
from ..kb.store import BaseEntityStore
from ..pipeline.common.kb_versions import label_kb, several_kbs
from ..util import ArboError
from .input_mentions import (Placement, PlacedMention, copy_with_mentions, layers_of, linked_span, mention_changers,
                             place_mentions, with_mentions)
from .records import Record
from .shards import RunRefused
from .writers import LinkedDocument

CONFIDENCE = "kb_confidence"
# Where a `.spacy` output keeps the input mentions linked in a copy of their document (they overlap
# one of `doc.ents`), with their ids.
OVERLAPPING = "overlapping_mentions"


class LinkedDocuments:
    """Turns a record and the doc the pipeline made of its text into a linked document."""

    def __init__(self, nlp: Language, candidates: int = 5, min_confidence: Optional[float] = None,
                 mentions: str = "pipeline") -> None:
        if min_confidence is not None and not Span.has_extension(CONFIDENCE):
            raise ArboError(f"--min-confidence {min_confidence}: this pipeline gives no confidence "
                            f"(span._.{CONFIDENCE} is not set by any installed component).")
        # With a KB per label (linkers with `labels`), each mention says which component linked it.
        self.several_kbs = several_kbs(nlp)
        self._kbs: Dict[str, Tuple[Optional[str], Optional[BaseEntityStore]]] = {}
        self.nlp, self.candidates, self.min_confidence, self.mentions = nlp, candidates, min_confidence, mentions
        # What the copies holding overlapping input mentions (and every doc under "input") skip.
        self.changers = mention_changers(nlp) if mentions != "pipeline" else []
        self.disabled = self.changers if mentions == "input" else []

    def input(self, record: Record) -> Union[str, Doc]:
        """What `nlp.pipe` reads of a record: its text, or a doc whose entities are its mentions."""
        if self.mentions == "pipeline":
            return record.text
        doc = self.nlp.make_doc(record.text)
        layers = place_mentions(doc, record.gold).layers
        return with_mentions(doc, layers[0] if layers else [])

    def link(self, records: List[Record], batch_size: int) -> Tuple[List[LinkedDocument], List[Doc]]:
        """A shard's records through the pipeline, as a Ray worker links them."""
        docs = list(self.nlp.pipe(map(self.input, records), batch_size=batch_size, disable=self.disabled))
        return self.documents(records, docs), docs

    def document(self, record: Record, mentions: List[Dict[str, Any]]) -> LinkedDocument:
        document: LinkedDocument = {"id": record.id, **record.fields, "text": record.text}
        if record.passages:
            document["passages"] = [list(p) for p in record.passages]
        if record.gold:
            document["gold"] = record.gold
        document["mentions"] = mentions
        return document

    def input_document(self, record: Record, doc: Doc, placement: Placement,
                       linked: Dict[int, Span]) -> LinkedDocument:
        """The record's input mentions in their order, spans and labels as the input gives them, with
        the links of `linked` (input index -> the span linked); with "both", the pipeline's mentions
        that overlap none of them too."""
        tokens = {m.index: m for layer in placement.layers for m in layer}
        mentions = []
        for index, gold in enumerate(record.gold):
            mention = self.input_mention(gold, linked.get(index), tokens.get(index))
            mentions.append({**mention, "source": "input"} if self.mentions == "both" else mention)
        if self.mentions == "both":
            covered = {i for m in tokens.values() for i in range(m.start, m.end)}
            mentions += [{**self.mention(ent), "source": "pipeline"} for ent in doc.ents
                         if not covered.intersection(range(ent.start, ent.end))]
            mentions.sort(key=lambda m: (m["start"], m["end"]))
        return self.document(record, mentions)

    def input_mention(self, gold: Dict[str, Any], ent: Optional[Span],
                      placed: Optional[PlacedMention]) -> Dict[str, Any]:
        """An input mention with its link; one no token holds is NIL with no candidates."""
        if ent is None:
            mention = {"kb_id": NIL, "name": None, "score": None, "candidates": [], "linked_span": None}
            if Span.has_extension(CONFIDENCE):
                mention["confidence"] = None
        else:
            mention = self.mention(ent)
            if placed is not None and placed.aligned:
                mention["linked_span"] = [ent.start_char, ent.end_char]
        return {**mention, "start": gold["start"], "end": gold["end"], "text": gold["text"], "label": gold["label"]}

    def input_links(self, records: List[Record], docs: List[Doc],
                    placements: List[Placement]) -> List[Dict[int, Span]]:
        """Input index -> linked span, for each record: those in `doc.ents`, and those linked in
        copies of the doc (one copy per layer of mentions that do not overlap), all copies of a
        shard through one `nlp.pipe`. The copies' links are kept in `doc.spans[OVERLAPPING]`."""
        links: List[Dict[int, Span]] = []
        copies: List[Tuple[int, List[PlacedMention]]] = []
        for number, (doc, placement) in enumerate(zip(docs, placements)):
            found = {m.index: linked_span(doc, m) for m in placement.layers[0]} if placement.layers else {}
            links.append({index: span for index, span in found.items() if span is not None})
            missing = [m for m in (placement.layers[0] if placement.layers else []) if found[m.index] is None]
            rest = missing + [m for layer in placement.layers[1:] for m in layer]
            copies += [(number, layer) for layer in layers_of(rest)]
        texts = [copy_with_mentions(self.nlp, records[number].text, layer) for number, layer in copies]
        for (number, layer), copy in zip(copies, self.nlp.pipe(texts, disable=self.changers)):
            doc = docs[number]
            group = doc.spans.get(OVERLAPPING) or SpanGroup(doc, name=OVERLAPPING)
            for mention in layer:
                span = linked_span(copy, mention)
                if span is not None:
                    links[number][mention.index] = span
                    group.append(Span(doc, span.start, span.end, label=span.label_, kb_id=span.kb_id_))
            doc.spans[OVERLAPPING] = group
        return links

    def documents(self, records: List[Record], docs: List[Doc]) -> List[LinkedDocument]:
        """The linked documents of a shard, each doc named by its record's id (`.spacy` output);
        with `min_confidence`, a shard whose mentions all lack a confidence is an error (the
        pipeline computes none)."""
        for record, doc in zip(records, docs):
            doc.user_data["doc_id"] = record.id
        if self.mentions == "pipeline":
            linked = [self.document(record, list(map(self.mention, doc.ents))) for record, doc in zip(records, docs)]
        else:
            placements = [place_mentions(doc, record.gold) for record, doc in zip(records, docs)]
            links = self.input_links(records, docs, placements)
            linked = [self.input_document(*args) for args in zip(records, docs, placements, links)]
        mentions = [m for document in linked for m in document["mentions"]]
        if self.min_confidence is not None and mentions and all(m.get("confidence") is None for m in mentions):
            raise RunRefused(f"--min-confidence {self.min_confidence}: the pipeline set no span._.{CONFIDENCE} "
                             f"on the {len(mentions)} mentions of documents {linked[0]['id']}..{linked[-1]['id']}; "
                             "add a component that computes it, or leave --min-confidence out.")
        return linked

    def mention(self, ent: Span) -> Dict[str, Any]:
        ranked = ent._.kb_candidates or []
        kb_id = ent.kb_id_ or NIL
        owner, kb = self.label_kb(ent.label_)
        mention: Dict[str, Any] = {
            "start": ent.start_char, "end": ent.end_char, "text": ent.text, "label": ent.label_, "kb_id": kb_id,
            "name": name_in(kb, kb_id), "score": next((float(s) for c, s in ranked if c == kb_id), None),
            "candidates": [[c, float(s)] for c, s in ranked[:self.candidates]],
        }
        if self.several_kbs:
            mention["kb"] = owner
        if Span.has_extension(CONFIDENCE):
            confidence = getattr(ent._, CONFIDENCE)
            mention["confidence"] = None if confidence is None else float(confidence)
            if self.min_confidence is not None and confidence is not None and confidence < self.min_confidence:
                mention.update(kb_id=NIL, name=None, review=True, proposed_kb_id=kb_id, proposed_name=mention["name"])
        return mention

    def label_kb(self, label: str) -> Tuple[Optional[str], Optional[BaseEntityStore]]:
        if label not in self._kbs:
            self._kbs[label] = label_kb(self.nlp, label) or (None, None)
        return self._kbs[label]


def name_in(kb: Optional[BaseEntityStore], kb_id: str) -> Optional[str]:
    """The KB's name of the entity (of each part of a composite id, joined by ' | ')."""
    if kb is None or kb_id == NIL:
        return None
    names = [kb[part].name for part in split_ids(kb_id) if part in kb]
    return " | ".join(names) or None
