"""The training mentions an objective can draw on beyond the current batch.

ArboEL builds each batch mention's graph from its coreferent training mentions, and
mines negatives among non-coreferent ones, so the component keeps every gold mention of
the training corpus with a cached embedding, refreshed as the encoder changes.
"""
from dataclasses import dataclass, field
from typing import Dict, Hashable, Iterable, List, Optional, Tuple

import numpy as np
from spacy.tokens import Span

from ..encoders.templates import MentionInput
from ..kb.entities import NIL
from ..kb.store import EntityStore

MentionKey = Tuple[Hashable, int, int]


def mention_key(span: Span) -> MentionKey:
    """Identifies a mention across the copies of a doc that spaCy's training makes."""
    return (hash(span.doc.text), span.start_char, span.end_char)


def gold_row(kb: EntityStore, kb_id: str) -> Optional[int]:
    """The entity row a gold id trains towards; for composite ids, the first one in the KB."""
    for part in kb_id.split("|"):
        if part and part != NIL and part in kb:
            return kb.row(part)
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
