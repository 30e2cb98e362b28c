"""Retriever training objectives, one registered function each (`[components.arbo_linker.objective]`).

Each objective turns a `TrainingBatch` into a scalar torch loss with gradients into the
dual encoder. They share the same steps (embed the batch, mine negatives from the
current index or the training-mention cache, gather edge scores: `objective_base`) and
differ in which edges are positives and negatives, and in the loss of the paper they
implement: DEER's in-batch softmax and hard negatives (`entity_edges`) and its softmax
over the KB (`kb_softmax`), PEL's proxy loss (`proxy`) and its FGSM (`fgsm`), and ArboEL's
arborescence, defined here: the tests and bench/objective_diagnostics.py record its
positives by wrapping `objectives.batch_positives`.
"""
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
from spacy.util import registry

from ..ranges import check_range
from ..util import ArboError
from . import losses
from .arborescence import VARIANTS, batch_positives, hard_negatives
from .entity_edges import ENTITY_CACHES, EntityEdges, HardNegatives, InBatch, MinedNegatives
from .fgsm import Adversarial
from .kb_softmax import KBSoftmax
from .mentions import TrainingBatch
from .objective_base import Objective, TrainingState, detached, entity_columns, entity_rows, gather_scores, indices
from .proxy import PROXY_NEGATIVES, Proxy

__all__ = [
    "ENTITY_CACHES", "PROXY_NEGATIVES", "Adversarial", "Arborescence", "EntityEdges", "HardNegatives", "InBatch",
    "KBSoftmax", "MinedNegatives", "Objective", "Proxy", "TrainingState", "make_arborescence", "make_fgsm",
    "make_hard_negatives", "make_in_batch", "make_kb_softmax", "make_proxy",
]


@dataclass
class Arborescence(Objective):
    """ArboEL 2.3: each mention's positive is its incoming edge in the minimum spanning
    arborescence over its gold entity and coreferent training mentions; negatives are the
    k/2 nearest wrong entities and k/2 nearest non-coreferent mentions; eq. 6 loss.

    Mention nodes other than the batch mention use cached vectors (refreshed every
    `refresh_every` updates): gradients flow through the batch mention and the entities.
    `entity_weight` > 0 adds, with that weight, a softmax of each mention over the entities
    the update encodes anyway (its gold one against the batch's others and its entity
    negatives): where most positives are mention-mention edges, it keeps pulling mentions
    towards entity names, which linking needs. 0 is ArboEL's loss alone.
    """

    variant: str = "full"
    k: int = 8
    max_cluster_size: int = 64
    entity_weight: float = 0.0
    uses_index = True
    uses_corpus_vectors = True

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ArboError(f"Unknown arborescence variant '{self.variant}'; expected one of {VARIANTS}.")
        check_range("arborescence: entity_weight", self.entity_weight, 0)

    def measured_limits(self) -> Optional[str]:
        if self.entity_weight > 0:
            return None
        return ("the arborescence loss alone (entity_weight 0) trailed hard negatives at equal CPU time on NCBI "
                "Disease (dev recall@1 0.602 vs 0.798 after 6 minutes from MiniLM, names only); entity_weight 1 "
                "reached 0.795 (configs/retriever_arborescence.cfg).")

    def __call__(self, state: TrainingState, batch: TrainingBatch) -> torch.Tensor:
        mentions = state.module.embed_mentions(batch.mentions)
        query = detached(mentions)
        n_entities = self.k // 2
        entity_negatives = hard_negatives(state.nearest_entities(query, n_entities + 1), batch.gold_rows, n_entities)
        corpus = state.corpus
        mention_negatives = hard_negatives(
            state.nearest_corpus_mentions(query, 4 * self.k), batch.gold_rows, self.k - n_entities,
            labels=corpus.gold_rows,
        )
        rows = entity_rows(batch.gold_rows, entity_negatives)
        entities = state.embed_entities(rows)
        gold_columns = entity_columns(rows, batch.gold_rows)
        cached = torch.as_tensor(corpus.vectors if corpus.vectors is not None else np.zeros((0, mentions.shape[1]), np.float32),
                                 device=mentions.device)
        by_entity = corpus.by_entity()
        positives = batch_positives(
            batch.corpus_ids if corpus.vectors is not None else np.full(len(batch), -1),
            gold_columns, {c: by_entity.get(int(r), np.zeros(0, np.int64)) for c, r in enumerate(rows)},
            corpus.vectors if corpus.vectors is not None else np.zeros((0, query.shape[1]), np.float32),
            detached(entities), variant=self.variant, max_cluster_size=self.max_cluster_size, rng=state.rng,
        )
        scale = state.module.scale
        positive = torch.stack([
            mentions[i] @ (entities[node.index] if node.kind == "entity" else cached[node.index])
            for i, node in enumerate(positives)
        ]).unsqueeze(1) * scale
        entity_scores, entity_mask = gather_scores(mentions @ entities.T, entity_columns(rows, entity_negatives))
        mention_scores, mention_mask = gather_scores(mentions @ cached.T, mention_negatives) if len(cached) else (
            entity_scores[:, :0], entity_mask[:, :0])
        negative = torch.cat([entity_scores, mention_scores], dim=1) * scale
        mask = torch.cat([entity_mask, mention_mask], dim=1)
        loss = losses.edge_softmax(positive, torch.ones_like(positive, dtype=torch.bool), negative, mask)
        if self.entity_weight > 0:
            loss = loss + self.entity_weight * losses.in_batch_softmax(
                state.module.score(mentions, entities), indices(gold_columns, mentions))
        return loss


@registry.losses("spacy_arbo.in_batch.v1")
def make_in_batch() -> Objective:
    return InBatch()


@registry.losses("spacy_arbo.hard_negatives.v1")
def make_hard_negatives(k: int = 10, max_negatives: int = 16, entity_cache: str = "none") -> Objective:
    return HardNegatives(k=k, max_negatives=max_negatives, entity_cache=entity_cache)


@registry.losses("spacy_arbo.kb_softmax.v1")
def make_kb_softmax() -> Objective:
    return KBSoftmax()


@registry.losses("spacy_arbo.arborescence.v1")
def make_arborescence(
    variant: str = "full", k: int = 8, max_cluster_size: int = 64, entity_weight: float = 0.0,
) -> Objective:
    return Arborescence(variant=variant, k=k, max_cluster_size=max_cluster_size, entity_weight=entity_weight)


@registry.losses("spacy_arbo.proxy.v1")
def make_proxy(
    alpha: float = 32.0, delta: float = 0.0, negatives: str = "mixed", p: float = 0.5, k: int = 16,
    entity_cache: str = "none", share_negatives: bool = False, max_negatives: int = 16,
) -> Objective:
    return Proxy(alpha=alpha, delta=delta, negatives_from=negatives, p=p, k=k, entity_cache=entity_cache,
                 share_negatives=share_negatives, max_negatives=max_negatives)


@registry.losses("spacy_arbo.fgsm.v1")
def make_fgsm(base: Optional[Objective] = None, epsilon: float = 0.01, lam: float = 1.0) -> Objective:
    """Wraps `proxy` or `in_batch` (or `hard_negatives`) with FGSM adversarial entities.
    Without `base`, the proxy loss with its defaults, as PEL pairs them; a default also
    lets a command-line override switch to FGSM, which cannot add a `base` block."""
    base = Proxy() if base is None else base
    if not isinstance(base, EntityEdges):
        raise ArboError("fgsm wraps an objective over (mention, entity) edges: in_batch, hard_negatives or proxy.")
    if base.entity_cache != "none":
        raise ArboError("fgsm perturbs the entities' inputs, so it needs them encoded: set entity_cache = \"none\".")
    return Adversarial(base, epsilon=epsilon, lam=lam)
