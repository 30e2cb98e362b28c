"""Objectives over (mention, entity) edges only, from DEER: the in-batch softmax, and hard
negatives mined from the current index."""
from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np
import torch

from ..component_settings import check_choice
from . import losses
from .arborescence import hard_negatives
from .mentions import TrainingBatch
from .objective_base import Objective, TrainingState, detached, entity_columns, entity_rows, gather_scores, indices

ENTITY_CACHES = ("none", "negatives", "all")


class EntityEdges(Objective):
    """Objectives over (mention, entity) edges only: choose negative entities, embed them
    with the gold ones, score. Split in two steps so FGSM can re-score the same edges
    with perturbed entity inputs. `entity_cache` = "negatives" scores the negatives against
    the entity vectors of the last refresh, so the entity tower encodes (and backpropagates
    through) only the gold entities, the bulk of an update's cost otherwise; "all" takes
    the gold entities from there too, so only the mention side gets a gradient."""

    def negatives(self, state: TrainingState, batch: TrainingBatch, query: np.ndarray) -> np.ndarray:
        """(B, K) negative entity rows, -1 padded."""
        return np.zeros((len(batch), 0), dtype=np.int64)

    def edge_loss(
        self, state: TrainingState, mentions: torch.Tensor, entities: torch.Tensor,
        gold: np.ndarray, negatives: np.ndarray,
    ) -> torch.Tensor:
        """The loss given entity vectors; `gold` (B,) and `negatives` (B, K) are columns."""
        raise NotImplementedError

    def edges(self, state: TrainingState, batch: TrainingBatch):
        mentions = state.module.embed_mentions(batch.mentions)
        negatives = self.negatives(state, batch, detached(mentions))
        rows = entity_rows(batch.gold_rows, negatives)
        return mentions, rows, entity_columns(rows, batch.gold_rows), entity_columns(rows, negatives)

    def __call__(self, state: TrainingState, batch: TrainingBatch) -> torch.Tensor:
        mentions, rows, gold, negatives = self.edges(state, batch)
        encode = {"none": None, "negatives": batch.gold_rows, "all": batch.gold_rows[:0]}[self.entity_cache]
        entities = state.embed_entities(rows, encode=encode)
        return self.edge_loss(state, mentions, entities, gold, negatives)


class InBatch(EntityEdges):
    """DEER eq. 2-3: softmax over the batch's gold entities, logits = scale * similarity
    (cosine with a learned scale, or BLINK's dot product, as the encoder is configured)."""

    def edge_loss(self, state, mentions, entities, gold, negatives):
        return losses.in_batch_softmax(state.module.score(mentions, entities), indices(gold, mentions))


@dataclass
class MinedNegatives:
    """DEER 4.3's negatives: the entities the current index ranks above the gold one among
    its top `k`, accumulated per training mention across mining rounds (the newest
    `max_negatives` kept), so a mention keeps meeting the confusions it has shown."""

    k: int = 10
    max_negatives: int = 16
    memory: Dict[int, List[int]] = field(default_factory=dict)

    def __call__(self, state: TrainingState, batch: TrainingBatch, query: np.ndarray) -> np.ndarray:
        """(B, max_negatives) entity rows, -1 padded."""
        above = hard_negatives(state.nearest_entities(query, self.k), batch.gold_rows, self.k, stop_at_gold=True)
        negatives = np.full((len(batch), self.max_negatives), -1, dtype=np.int64)
        for i, row in enumerate(above):
            fresh = [int(r) for r in row if r >= 0]
            key = int(batch.corpus_ids[i])
            if key >= 0:
                known = self.memory.setdefault(key, [])
                known.extend(r for r in fresh if r not in known)
                fresh = known
            fresh = fresh[-self.max_negatives:]
            negatives[i, : len(fresh)] = fresh
        return negatives


@dataclass
class HardNegatives(EntityEdges):
    """DEER 4.3: mined negatives (`MinedNegatives`) in a logistic loss (eq. 4-5), mixed with
    the in-batch softmax at equal weight."""

    k: int = 10
    max_negatives: int = 16
    entity_cache: str = "none"
    uses_index = True

    def __post_init__(self) -> None:
        check_choice("entity_cache", self.entity_cache, ENTITY_CACHES)
        self.mined = MinedNegatives(self.k, self.max_negatives)

    def negatives(self, state, batch, query):
        return self.mined(state, batch, query)

    def edge_loss(self, state, mentions, entities, gold, negatives):
        similarity = mentions @ entities.T
        # The softmax sees only the batch's gold entities, as in the original task.
        in_batch = np.unique(gold)
        softmax = losses.in_batch_softmax(
            state.module.scale * similarity[:, indices(in_batch, similarity)],
            indices(np.searchsorted(in_batch, gold), similarity),
        )
        positive = similarity.gather(1, indices(gold, similarity).unsqueeze(1)).squeeze(1)
        negative, mask = gather_scores(similarity, negatives)
        a_h, b_h = state.module.logistic_calibration
        return softmax + losses.logistic_hard_negatives(positive, negative, mask, a_h, b_h)

