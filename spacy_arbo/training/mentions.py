"""The training mentions an objective can draw on beyond the current batch.

ArboEL builds each batch mention's graph from its coreferent training mentions, and
mines negatives among non-coreferent ones, so the component keeps every gold mention of
the training corpus with a cached embedding, refreshed as the encoder changes.
"""
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Hashable, Iterable, List, Optional, Tuple

import numpy as np
import srsly
from spacy.tokens import Span

from ..encoders.templates import MentionInput
from ..kb.entities import NIL, split_ids
from ..kb.store import BaseEntityStore
from ..util import ArboError, atomic_path

MentionKey = Tuple[Hashable, int, int]
MENTIONS_FILE = "mentions.msgpack"


def mention_key(span: Span) -> MentionKey:
    """Identifies a mention across the copies of a doc that spaCy's training makes."""
    return (hash(span.doc.text), span.start_char, span.end_char)


def gold_row(kb: BaseEntityStore, kb_id: str) -> Optional[int]:
    """The entity row a gold id trains towards; for composite ids, the first one in the KB
    (as the KB resolves ids: "D005334" reaches "MESH:D005334")."""
    for part in split_ids(kb_id):
        if part != NIL and (resolved := kb.resolve(part)) is not None:
            return kb.row(resolved)
    return None


@dataclass
class TrainingBatch:
    """One update's (mention, gold entity) pairs; `corpus_ids` point into
    `TrainingMentions` (-1 for pairs from outside the corpus, such as KB aliases)."""

    mentions: List[MentionInput]
    gold_rows: np.ndarray
    corpus_ids: np.ndarray

    def __len__(self) -> int:
        return len(self.mentions)


@dataclass
class TrainingMentions:
    mentions: List[MentionInput] = field(default_factory=list)
    gold_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    keys: Dict[MentionKey, int] = field(default_factory=dict)
    vectors: Optional[np.ndarray] = None
    # Encoder fingerprint the vectors were made with: other weights mean stale vectors.
    vectors_fingerprint: Optional[str] = None

    @classmethod
    def collect(cls, spans_and_rows: Iterable[Tuple[Span, MentionInput, int]]) -> "TrainingMentions":
        mentions, rows, keys = [], [], {}
        for span, mention, row in spans_and_rows:
            key = mention_key(span)
            if key in keys:
                continue
            keys[key] = len(mentions)
            mentions.append(mention)
            rows.append(row)
        return cls(mentions, np.asarray(rows, dtype=np.int64), keys)

    def __len__(self) -> int:
        return len(self.mentions)

    def by_entity(self) -> Dict[int, np.ndarray]:
        """Entity row -> indices of its training mentions (its coreference cluster)."""
        order = np.argsort(self.gold_rows, kind="stable")
        rows, starts = np.unique(self.gold_rows[order], return_index=True)
        return {int(r): idx for r, idx in zip(rows, np.split(order, starts[1:]))}

    def remapped(self, row_map: np.ndarray) -> "TrainingMentions":
        """The mentions after a KB update that moved entity `r` to row `row_map[r]`; mentions of
        removed entities (-1) go."""
        new_rows = row_map[self.gold_rows]
        keep = np.flatnonzero(new_rows >= 0)
        position = {int(old): new for new, old in enumerate(keep)}
        return TrainingMentions(
            [self.mentions[i] for i in keep], new_rows[keep],
            {key: position[i] for key, i in self.keys.items() if i in position},
            None if self.vectors is None else self.vectors[keep], self.vectors_fingerprint)

    def to_dict(self, kb: BaseEntityStore) -> Dict[str, Any]:
        """Mentions, gold ids and vectors (the transductive clustering's anchors). Gold
        entities are stored as KB ids, so the data do not depend on row order."""
        if self.vectors is None or len(self.vectors) != len(self):
            raise ArboError("The training mentions have no current vectors to store.")
        vectors = np.ascontiguousarray(self.vectors, dtype=np.float32)
        return {
            "mentions": [[m.left, m.mention, m.right, [list(t) for t in m.triplets]] for m in self.mentions],
            "kb_ids": [kb.ids[row] for row in self.gold_rows],
            "vectors_fingerprint": self.vectors_fingerprint,
            "vectors": vectors.tobytes(),
            "dim": vectors.shape[1],
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any], kb: BaseEntityStore, origin: str) -> "TrainingMentions":
        try:
            # Mentions stored before knowledge units existed have three fields.
            mentions = [MentionInput(*m[:3], tuple(tuple(t) for t in (m[3] if len(m) > 3 else ())))
                        for m in data["mentions"]]
            kb_ids, fingerprint = list(data["kb_ids"]), data["vectors_fingerprint"]
            vectors = np.frombuffer(data["vectors"], dtype=np.float32).reshape(-1, int(data["dim"])).copy()
        except (ValueError, KeyError, TypeError) as err:
            raise ArboError(f"Cannot read the stored training mentions in {origin}: {err!r}") from None
        unknown = sorted({i for i in kb_ids if i not in kb})
        if unknown:
            raise ArboError(f"{origin}: {len(unknown)} stored training mentions link to ids the KB lacks, "
                            f"e.g. {unknown[:3]}.")
        if len(vectors) != len(mentions) or len(kb_ids) != len(mentions):
            raise ArboError(f"{origin}: {len(mentions)} mentions, {len(kb_ids)} ids and vectors of "
                            f"shape {vectors.shape} do not match.")
        return cls(mentions, np.asarray([kb.row(i) for i in kb_ids], dtype=np.int64),
                   vectors=vectors, vectors_fingerprint=fingerprint)

    def to_bytes(self, kb: BaseEntityStore) -> bytes:
        return srsly.msgpack_dumps(self.to_dict(kb))

    @classmethod
    def from_bytes(cls, data: bytes, kb: BaseEntityStore) -> "TrainingMentions":
        try:
            loaded = srsly.msgpack_loads(data)
        except Exception as err:  # msgpack raises several unrelated types
            raise ArboError(f"Cannot read the serialized training mentions: {err!r}") from None
        return cls.from_dict(loaded, kb, "serialized training mentions")

    def to_disk(self, path: Path, kb: BaseEntityStore) -> None:
        data = self.to_dict(kb)
        with atomic_path(path) as tmp:
            tmp.mkdir()
            srsly.write_msgpack(tmp / MENTIONS_FILE, data)

    @classmethod
    def from_disk(cls, path: Path, kb: BaseEntityStore) -> "TrainingMentions":
        path = Path(path)
        try:
            data = srsly.read_msgpack(path / MENTIONS_FILE)
        except Exception as err:  # msgpack raises several unrelated types
            raise ArboError(f"Cannot read the stored training mentions in '{path}': {err!r}") from None
        return cls.from_dict(data, kb, f"'{path}'")
