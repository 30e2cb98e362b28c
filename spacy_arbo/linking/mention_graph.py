"""Clustering-based linking of a batch of mentions (ArboEL A.2-A.3): assemble the graph of
each mention's k nearest mentions and its nearest entity, per group, and partition it."""
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ..retrieval.retriever import exact_search
from .clustering import partition

# A path step: ("entity", KB row), ("mention", index into the batch) or ("anchor", index
# into the anchors).
Step = Tuple[str, int]


@dataclass(frozen=True)
class ClusteredMention:
    entity: int  # KB row, -1 for NIL (a discovered entity)
    cluster: int  # unique across the groups of one call
    path: List[Step]  # from the cluster's root (entity or NIL root mention) to the mention


def cluster_mentions(
    vectors: np.ndarray,
    nearest_entity: Sequence[Optional[Tuple[int, float]]],
    groups: Sequence[Sequence[int]],
    *,
    knn: int,
    graph: str,
    min_similarity: Optional[float],
    anchor_vectors: Optional[np.ndarray] = None,
    anchor_rows: Optional[np.ndarray] = None,
) -> List[ClusteredMention]:
    """Link each mention through its cluster. `nearest_entity[i]` is mention i's best
    (KB row, score) or None; each group (lists of mention indices, e.g. one doc, or the
    whole batch) is clustered alone. Anchors (ArboEL's transductive setting: training
    mentions with their gold entity rows) join every group's kNN search and only lend
    their entity, so they need no neighbour lists of their own."""
    n_anchors = 0 if anchor_vectors is None else len(anchor_vectors)
    anchors = anchor_vectors if n_anchors else vectors[:0]
    result: List[Optional[ClusteredMention]] = [None] * len(vectors)
    next_cluster = 0
    for group in filter(None, groups):
        members = np.asarray(group)
        nodes = np.concatenate([vectors[members], anchors])
        k = min(knn, len(nodes) - 1)
        if k > 0:
            neighbours, similarity = exact_search(vectors[members], nodes, k, exclude_self=True)
        else:
            neighbours, similarity = np.zeros((len(members), 0), np.int64), np.zeros((len(members), 0), np.float32)
        neighbours = np.concatenate([neighbours, np.full((n_anchors, neighbours.shape[1]), -1, np.int64)])
        similarity = np.concatenate([similarity, np.zeros((n_anchors, neighbours.shape[1]), np.float32)])
        top = [nearest_entity[i] for i in members]
        entity_rows = np.asarray([t[0] if t else -1 for t in top] + [-1] * n_anchors, dtype=np.int64)
        entity_scores = np.asarray([t[1] if t else -np.inf for t in top] + [-np.inf] * n_anchors, dtype=np.float32)
        anchor_entities = np.concatenate([np.full(len(members), -1, np.int64), anchor_rows]) if n_anchors else None
        parts = partition(neighbours, similarity, entity_rows, entity_scores, anchor_entities=anchor_entities,
                          graph=graph, min_similarity=min_similarity)

        def step(kind: str, index: int) -> Step:
            if kind == "entity":
                return (kind, index)
            return ("mention", int(members[index])) if index < len(members) else ("anchor", index - len(members))

        for local, i in enumerate(members):
            result[i] = ClusteredMention(int(parts.entity[local]), next_cluster + int(parts.cluster[local]),
                                         [step(kind, index) for kind, index in parts.path(local)])
        next_cluster += parts.n_clusters
    return result  # type: ignore[return-value]
