"""What a linked document says of each mention: span, label, id, the entity's KB name, the
score and top candidates (`span._.kb_candidates`), and `span._.kb_confidence` where the pipeline
writes it; mentions below `min_confidence` are written NIL and marked for review, with the id and
name held back as `proposed_kb_id` and `proposed_name` (the chosen id need not be the top candidate)."""
from typing import Any, Dict, List, Optional, Tuple

from spacy.language import Language
from spacy.tokens import Doc, Span

from ..kb.entities import NIL, split_ids
from ..pipeline.common.kb_versions import pipeline_kb
from ..util import ArboError
from .records import Record
from .shards import RunRefused
from .writers import LinkedDocument

CONFIDENCE = "kb_confidence"


class LinkedDocuments:
    """Turns a record and the doc the pipeline made of its text into a linked document."""

    def __init__(self, nlp: Language, candidates: int = 5, min_confidence: Optional[float] = None) -> None:
        if min_confidence is not None and not Span.has_extension(CONFIDENCE):
            raise ArboError(f"--min-confidence {min_confidence}: this pipeline gives no confidence "
                            f"(span._.{CONFIDENCE} is not set by any installed component).")
        linking = pipeline_kb(nlp)
        self.kb = linking[1] if linking else None
        self.nlp, self.candidates, self.min_confidence = nlp, candidates, min_confidence

    def link(self, records: List[Record], batch_size: int) -> Tuple[List[LinkedDocument], List[Doc]]:
        """A shard's records through the pipeline, as a Ray worker links them."""
        docs = list(self.nlp.pipe((record.text for record in records), batch_size=batch_size))
        return self.documents(records, docs), docs

    def document(self, record: Record, doc: Doc) -> LinkedDocument:
        document: LinkedDocument = {"id": record.id, **record.fields, "text": record.text}
        if record.passages:
            document["passages"] = [list(p) for p in record.passages]
        if record.gold:
            document["gold"] = record.gold
        document["mentions"] = [self.mention(ent) for ent in doc.ents]
        return document

    def documents(self, records: List[Record], docs: List[Doc]) -> List[LinkedDocument]:
        """The linked documents of a shard, each doc named by its record's id (`.spacy` output);
        with `min_confidence`, a shard whose mentions all lack a confidence is an error (the
        pipeline computes none)."""
        for record, doc in zip(records, docs):
            doc.user_data["doc_id"] = record.id
        linked = [self.document(record, doc) for record, doc in zip(records, docs)]
        mentions = [m for document in linked for m in document["mentions"]]
        if self.min_confidence is not None and mentions and all(m.get("confidence") is None for m in mentions):
            raise RunRefused(f"--min-confidence {self.min_confidence}: the pipeline set no span._.{CONFIDENCE} "
                             f"on the {len(mentions)} mentions of documents {linked[0]['id']}..{linked[-1]['id']}; "
                             "add a component that computes it, or leave --min-confidence out.")
        return linked

    def mention(self, ent: Span) -> Dict[str, Any]:
        ranked = ent._.kb_candidates or []
        kb_id = ent.kb_id_ or NIL
        mention: Dict[str, Any] = {
            "start": ent.start_char, "end": ent.end_char, "text": ent.text, "label": ent.label_, "kb_id": kb_id,
            "name": self.name(kb_id), "score": next((float(s) for c, s in ranked if c == kb_id), None),
            "candidates": [[c, float(s)] for c, s in ranked[:self.candidates]],
        }
        if Span.has_extension(CONFIDENCE):
            confidence = getattr(ent._, CONFIDENCE)
            mention["confidence"] = None if confidence is None else float(confidence)
            if self.min_confidence is not None and confidence is not None and confidence < self.min_confidence:
                mention.update(kb_id=NIL, name=None, review=True, proposed_kb_id=kb_id, proposed_name=mention["name"])
        return mention

    def name(self, kb_id: str) -> Optional[str]:
        """The KB's name of the entity (of each part of a composite id, joined by ' | ')."""
        if self.kb is None or kb_id == NIL:
            return None
        names = [self.kb[part].name for part in split_ids(kb_id) if part in self.kb]
        return " | ".join(names) or None
