"""PEL's proxy loss (eq. 3) over random, mixed or mined negative entities."""
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..component_settings import check_choice
from ..ranges import check_range
from ..util import ArboError
from . import losses
from .arborescence import hard_negatives
from .entity_edges import ENTITY_CACHES, EntityEdges, MinedNegatives
from .objective_base import gather_scores, indices

PROXY_NEGATIVES = ("random", "mixed", "mined")


@dataclass
class Proxy(EntityEdges):
    """PEL eq. 3: proxy loss on cosine similarities with scale `alpha` and margin `delta`,
    against `k` random negatives, or `mixed` ones where a share `p` are the nearest wrong
    entities of the current index, or `mined` ones: DEER's accumulated negatives
    (`MinedNegatives`: those ranked above the gold among the index's top `k`, at most
    `max_negatives` per mention), which an update encodes only where the index errs.
    With `share_negatives` (ours, not the paper's), every entity the update encodes but a
    mention's own gold one is that mention's negative: the batch's other gold entities and
    everyone's sampled negatives, so each mention meets about batch x k negatives for the
    cost of encoding k per mention. The settings measured to trail hard negatives warn when
    training starts (`measured_limits`; docs/results.md, Training objectives)."""

    alpha: float = 32.0
    delta: float = 0.0
    negatives_from: str = "mixed"
    p: float = 0.5
    k: int = 16
    entity_cache: str = "none"
    share_negatives: bool = False
    max_negatives: int = 16

    @property
    def uses_index(self) -> bool:
        return self.negatives_from == "mined" or (self.negatives_from == "mixed" and self.p > 0)

    def __post_init__(self) -> None:
        if self.negatives_from not in PROXY_NEGATIVES:
            raise ArboError(f"Unknown proxy negatives '{self.negatives_from}'; expected one of {PROXY_NEGATIVES}.")
        check_range("proxy: p", self.p, 0, 1)
        check_choice("entity_cache", self.entity_cache, ENTITY_CACHES)
        self.mined = MinedNegatives(self.k, self.max_negatives)

    def measured_limits(self) -> Optional[str]:
        if self.delta <= 0:
            return ("proxy loss with delta 0 on cosine similarities: its only gradient pushes every cosine below "
                    "zero (MiniLM on NCBI Disease: gold cosines 0.51 -> 0.28 in 2 updates); use delta 0.6 with "
                    "mined negatives (configs/retriever_proxy.cfg).")
        if self.entity_cache != "none":
            return ("proxy loss against cached entity vectors collapsed on NCBI Disease (dev recall@1 0.000 after "
                    "129 updates with entity_cache = \"negatives\"); use entity_cache = \"none\".")
        if not self.share_negatives:
            return ("the proxy loss with per-mention negatives encodes each with gradient (16 of them: 12 s an update "
                    "on 2 CPU cores, 5x hard negatives') and trailed hard negatives at equal CPU time on NCBI Disease "
                    "(test accuracy 0.749 vs 0.843); share_negatives = true with mined negatives came within 0.3 "
                    "points of them in dev recall@1 (configs/retriever_proxy.cfg).")
        if self.negatives_from != "mined":
            return ("the proxy loss over sampled negatives, even shared across the batch, trailed hard negatives at "
                    "equal CPU time on NCBI Disease (6 minutes: dev recall@1 0.761 vs 0.795 with entity names); "
                    "negatives = \"mined\" with delta 0.6 reached 0.792 (configs/retriever_proxy.cfg).")
        if self.delta < 0.6:
            return (f"the proxy loss over mined negatives with delta {self.delta:g} trailed hard negatives at equal "
                    "CPU time on NCBI Disease (6 minutes, delta 0.4: dev recall@1 0.773 vs 0.795 with entity names); "
                    "delta 0.6 reached 0.792 (configs/retriever_proxy.cfg).")
        return None

    def negatives(self, state, batch, query):
        if self.negatives_from == "mined":
            return self.mined(state, batch, query)
        n_hard = int(round(self.p * self.k)) if self.negatives_from == "mixed" else 0
        hard = hard_negatives(state.nearest_entities(query, n_hard + 1), batch.gold_rows, n_hard) if n_hard else (
            np.zeros((len(batch), 0), dtype=np.int64))
        random = state.rng.integers(0, len(state.entity_inputs), size=(len(batch), self.k - n_hard))
        # A random draw of the gold entity is no negative.
        random = np.where(random == batch.gold_rows[:, None], -1, random)
        return np.concatenate([hard, random], axis=1)

    def edge_loss(self, state, mentions, entities, gold, negatives):
        similarity = mentions @ entities.T
        positive = similarity.gather(1, indices(gold, similarity).unsqueeze(1)).squeeze(1)
        if self.share_negatives:
            negatives = np.tile(np.arange(len(entities)), (len(gold), 1))
            negatives[np.arange(len(gold)), gold] = -1
        negative, mask = gather_scores(similarity, negatives)
        return losses.proxy_loss(positive, negative, mask, self.alpha, self.delta)

