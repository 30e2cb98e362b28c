"""Model selection for self-alignment without corpus labels: some of the KB's own names,
hidden from training, and how often the nearest other name of each belongs to its entity.

A hidden name stands in for a mention the encoder never saw: a synonym the alignment did
not pull towards its entity. Everything here reads the KB and the encoder only, never a
corpus, so choosing a pass (or the TF-IDF weight) with it uses no labelled mention.
"""
from dataclasses import dataclass
from typing import AbstractSet, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import torch

from ..encoders.batching import encode_by_length
from ..encoders.templates import EntityInput, entity_length
from ..encoders.tower import Tower
from ..kb.store import BaseEntityStore
from ..ranges import check_range
from ..retrieval.tfidf import TfidfAliasIndex
from ..util import ArboError
from .synonyms import Name, names_by_entity

# The softmax scale of the held-out loss: the dual encoder's starting scale.
LOSS_SCALE = 20.0
# Held-out queries scored against every name at once; bounds the (queries x names) matrix.
QUERY_CHUNK = 256


@dataclass(frozen=True)
class HeldOutNames:
    """One name of each of a seeded sample of the entities that have at least two names."""

    names: Tuple[Name, ...]

    def __len__(self) -> int:
        return len(self.names)

    @property
    def hidden(self) -> AbstractSet[Name]:
        return frozenset(self.names)


def hold_out_names(kb: BaseEntityStore, fraction: float, seed: int) -> HeldOutNames:
    """`fraction` of the entities with at least two names (at least one entity when
    `fraction` > 0), and one of each one's names, drawn with `seed`."""
    check_range("held_out", fraction, 0, 1, high_open=True)
    by_row = names_by_entity(kb)
    rows = sorted(row for row, names in by_row.items() if len(names) >= 2)
    if fraction == 0.0 or not rows:
        return HeldOutNames(())
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(len(rows), size=max(1, round(fraction * len(rows))), replace=False))
    return HeldOutNames(tuple((by_row[rows[i]][int(rng.integers(len(by_row[rows[i]])))], rows[i]) for i in chosen))


class KBNames:
    """Every name of a KB (`alias_pairs` order), the entity row of each, and where each is."""

    def __init__(self, kb: BaseEntityStore) -> None:
        pairs = kb.alias_pairs()
        self.texts: List[str] = [text for text, _ in pairs]
        self.owners = np.asarray([row for _, row in pairs], dtype=np.int64)
        self.position: Dict[Name, int] = {name: i for i, name in enumerate(pairs)}

    def __len__(self) -> int:
        return len(self.texts)

    def positions(self, names: Sequence[Name]) -> np.ndarray:
        return np.asarray([self.position[name] for name in names], dtype=np.int64)


def encode_names(tower: Tower, texts: Sequence[str], batch_size: int = 256, progress: bool = False) -> np.ndarray:
    """Unit vectors of `texts` read as entity names (as the index reads them), input order."""
    inputs = [EntityInput(text, "") for text in texts]
    with torch.no_grad():
        vectors = encode_by_length(inputs, lambda batch: tower.encode_entities(batch).float().cpu().numpy(),
                                   entity_length, tower.dim, batch_size, progress=progress, desc="encoding KB names")
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True).clip(min=1e-12)


class HeldOutScore(NamedTuple):
    recall_at_1: Optional[float]
    loss: Optional[float]


def _other_name_similarities(vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Cosines of the names at `queries` with every name, each query's own name at -inf."""
    similarity = vectors[queries] @ vectors.T
    similarity[np.arange(len(queries)), queries] = -np.inf
    return similarity


def score_held_out(vectors: np.ndarray, names: KBNames, held_out: HeldOutNames) -> HeldOutScore:
    """Recall@1 of the held-out names among all KB names (is the nearest other name one
    of the same entity's?), and their loss: the mean over them of -log of the softmax
    (scale `LOSS_SCALE`) share of their entity's other names."""
    if not len(held_out):
        return HeldOutScore(None, None)
    hits, losses = [], []
    positions = names.positions(held_out.names)
    for start in range(0, len(positions), QUERY_CHUNK):
        queries = positions[start: start + QUERY_CHUNK]
        similarity = _other_name_similarities(vectors, queries)
        same = names.owners[None, :] == names.owners[queries][:, None]
        hits.append(same[np.arange(len(queries)), similarity.argmax(1)])
        logits = torch.from_numpy(LOSS_SCALE * similarity)
        positive = torch.from_numpy(same) & torch.isfinite(logits)
        losses.append((torch.logsumexp(logits, 1) - torch.logsumexp(logits.masked_fill(~positive, -np.inf), 1)).numpy())
    return HeldOutScore(float(np.concatenate(hits).mean()), float(np.concatenate(losses).mean()))


def _entity_maxima(scores: np.ndarray, owners: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Per query, each entity's best score over its names, and the entity rows (columns)."""
    order = np.argsort(owners, kind="stable")
    sorted_owners = owners[order]
    starts = np.flatnonzero(np.r_[True, sorted_owners[1:] != sorted_owners[:-1]])
    return np.maximum.reduceat(scores[:, order], starts, axis=1), sorted_owners[starts]


def hybrid_recall(vectors: np.ndarray, names: KBNames, held_out: HeldOutNames, kb: BaseEntityStore,
                  weights: Sequence[float]) -> Dict[str, Optional[float]]:
    """Recall@1 of the held-out names among all other KB names under TF-IDF alone
    ("tfidf") and under each dense + w x TF-IDF score in `weights` (w = 0: dense alone),
    scored per entity as the linker's hybrid candidates are: each source's best name."""
    if not len(held_out):
        return {"tfidf": None, **{f"{w:g}": None for w in weights}}
    tfidf = TfidfAliasIndex.build(kb)
    if tfidf.alias_texts != names.texts:
        raise ArboError("The TF-IDF index and the KB list the names in different orders.")
    positions = names.positions(held_out.names)
    gold = names.owners[positions]
    hits: Dict[str, List[np.ndarray]] = {"tfidf": [], **{f"{w:g}": [] for w in weights}}
    for start in range(0, len(positions), QUERY_CHUNK):
        chunk = positions[start: start + QUERY_CHUNK]
        dense = _other_name_similarities(vectors, chunk)
        sparse = (tfidf.alias_matrix[chunk] @ tfidf.alias_matrix.T).toarray()
        sparse[np.arange(len(chunk)), chunk] = -np.inf
        dense_best, entities = _entity_maxima(dense, names.owners)
        sparse_best, _ = _entity_maxima(sparse, names.owners)
        rows = gold[start: start + len(chunk)]
        hits["tfidf"].append(entities[sparse_best.argmax(1)] == rows)
        for w in weights:
            fused = dense_best + w * np.where(np.isfinite(sparse_best), sparse_best, 0.0)
            hits[f"{w:g}"].append(entities[fused.argmax(1)] == rows)
    return {key: float(np.concatenate(found).mean()) for key, found in hits.items()}
