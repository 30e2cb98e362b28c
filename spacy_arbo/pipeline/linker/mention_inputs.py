"""What the towers read of a mention and of an entity, besides their names: the mention's
context, the long form of an abbreviation, and GER's knowledge units on either side.

Training and inference must read a mention the same way, so both go through one reader.
"""
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import srsly
from spacy.tokens import Doc, Span
from spacy.vocab import Vocab

from ...encoders.knowledge_units import KnowledgeUnits
from ...encoders.templates import MentionInput, Triplet, mention_input
from ...kb.entities import NIL, Entity
from ...kb.store import BaseEntityStore
from ...util import ArboError, atomic_path, read_json
from ..common.abbreviations import LongForms, SpelledOut, corpus_long_forms


class MentionReader:
    """Turns spans into `MentionInput`s (and entities into their knowledge units).

    `graph_sides()` says which inputs the model's graph towers read ("mentions",
    "entities"): knowledge units are extracted only for those.
    """

    def __init__(self, vocab: Vocab, name: str, settings: Callable[[], Any],
                 knowledge_units: Optional[KnowledgeUnits], graph_sides: Callable[[], Tuple[str, ...]]) -> None:
        self.vocab = vocab
        self.name = name
        self._settings = settings
        self.knowledge_units = knowledge_units
        self.graph_sides = graph_sides
        self._long_forms: Optional[LongForms] = None
        # Short form -> long form, from other docs, for docs that use a short form undefined
        # (`learn_corpus_long_forms`; stored with the pipeline).
        self.corpus_long_forms: Dict[str, str] = {}

    def _knowledge_sides(self) -> Tuple[str, ...]:
        return () if self.knowledge_units is None else self.graph_sides()

    @property
    def reads_sentences(self) -> bool:
        """Whether a mention's input holds its sentence's knowledge units, which need a parse."""
        return "mentions" in self._knowledge_sides()

    def check_knowledge_units(self) -> None:
        if self.graph_sides() and self.knowledge_units is None:
            raise ArboError(
                f"'{self.name}' has a graph tower but no knowledge units to build its graphs from: set "
                f'[components.{self.name}.knowledge_units] @misc = "spacy_arbo.knowledge_units.v1".')

    def entity_triplets(self, entity: Entity, kb: BaseEntityStore) -> List[Triplet]:
        if self.knowledge_units is None or "entities" not in self._knowledge_sides():
            return []
        return self.knowledge_units.entities(entity, kb)

    def long_form_finder(self) -> LongForms:
        if self._long_forms is None:
            self._long_forms = LongForms(self.vocab)
        return self._long_forms

    def __call__(self, spans: Sequence[Span]) -> List[MentionInput]:
        """With `use_long_form`, an abbreviation defined in its doc (else in the corpus of
        `learn_corpus_long_forms`) is read as its long form; with a graph tower on mentions,
        the knowledge units of its sentence come along."""
        settings = self._settings()
        units = self.knowledge_units.mentions if "mentions" in self._knowledge_sides() else None
        # Per doc, read once: its text (`Doc.text` joins every token again) and its short forms.
        per_doc: Dict[int, Tuple[str, Optional[SpelledOut]]] = {}
        inputs = []
        for span in spans:
            cached = per_doc.get(id(span.doc))
            if cached is None:
                text = span.doc.text
                spelled = (SpelledOut(text, self.long_form_finder()(span.doc), self.corpus_long_forms)
                           if settings.use_long_form else None)
                cached = per_doc[id(span.doc)] = (text, spelled)
            text, spelled = cached
            long_form = spelled(span) if spelled is not None else None
            inputs.append(mention_input(span, settings.context_chars, long_form, units(span) if units else (), text))
        return inputs

    def gold_names(self, docs: Iterable[Doc], kb: BaseEntityStore) -> List[Tuple[str, int]]:
        """(name as read, entity row) of every gold mention of `docs` with one KB id: what
        the retriever's dictionary takes."""
        linked = [(ent, kb.row(ent.kb_id_)) for doc in docs for ent in doc.ents if ent.kb_id_ != NIL and ent.kb_id_ in kb]
        inputs = self([ent for ent, _ in linked])
        return [(m.mention, row) for m, (_, row) in zip(inputs, linked)]

    # Corpus long forms ------------------------------------------------------------------

    def learn_corpus_long_forms(self, docs: Iterable[Doc]) -> int:
        self.corpus_long_forms = corpus_long_forms(docs, self.long_form_finder())
        return len(self.corpus_long_forms)

    def long_forms_bytes(self) -> bytes:
        return srsly.msgpack_dumps(self.corpus_long_forms)

    def load_long_forms_bytes(self, data: bytes) -> None:
        self._load_long_forms(srsly.msgpack_loads(data), "bytes")

    def write_long_forms(self, path: Path) -> None:
        with atomic_path(path) as tmp:
            srsly.write_json(tmp, self.corpus_long_forms)

    def read_long_forms(self, path: Path) -> None:
        if not path.exists():
            self.corpus_long_forms = {}
            return
        self._load_long_forms(read_json(path), str(path))

    def _load_long_forms(self, forms: Any, origin: str) -> None:
        if not isinstance(forms, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in forms.items()):
            raise ArboError(f"{self.name}: the corpus long forms in {origin} are not an object of short form -> "
                            "long form strings.")
        self.corpus_long_forms = dict(forms)
