"""Clusters of NIL mentions across a whole corpus (ArboEL, Agarwal et al. 2022, 3.5 and A.2):
each mention is joined to its k nearest mentions, found by an exact FAISS search over all of them
(a k-nearest-neighbour graph: k edges a mention, never a matrix of all pairs), and to its nearest
KB entity; edges less similar than `min_similarity` are cut and the directed pruning leaves at most
one entity per cluster. A cluster that still reaches an entity holds mentions of it after all (the
chain of similar mentions that `Partition.path` shows); the others are entities the KB lacks.

The mentions come NIL from a linker that already weighed their nearest entities, so an entity edge
has a cut of its own, `min_entity_similarity`: only a mention all but equal to a KB name takes its
cluster back into the KB. One cut for both (ArboEL's lambda) sent most mentions of entities the KB
lacks to a sibling or child entity (docs/discovery.md)."""
from typing import Optional

import numpy as np

from ..linking.clustering import Partition, partition
from ..retrieval.retriever import exact_search
from ..util import ArboError


def cluster_mentions(
    vectors: np.ndarray,
    entity_rows: Optional[np.ndarray] = None,
    entity_similarities: Optional[np.ndarray] = None,
    *,
    knn_mentions: int = 8,
    min_similarity: float,
    min_entity_similarity: Optional[float] = None,
) -> Partition:
    """Partition the mentions of `vectors` (unit rows) with their nearest entities (rows, -1 for
    none; leave both out to cluster mentions alone, every cluster a new entity). An entity edge is
    kept when its similarity reaches both cuts (`min_entity_similarity` None: `min_similarity`)."""
    if vectors.ndim != 2:
        raise ArboError(f"Mention vectors must be a matrix (mentions x dimensions); got shape {vectors.shape}.")
    if entity_rows is not None and len(entity_rows) != len(vectors):
        raise ArboError(f"{len(vectors)} mention vectors but {len(entity_rows)} nearest entities: one each is needed.")
    knn = max(0, min(knn_mentions, len(vectors) - 1))
    if knn:
        indices, similarities = exact_search(vectors, vectors, knn, exclude_self=True)
    else:
        indices = np.full((len(vectors), 0), -1, dtype=np.int64)
        similarities = np.zeros((len(vectors), 0), dtype=np.float32)
    if entity_rows is not None and entity_similarities is not None and min_entity_similarity is not None:
        entity_rows = np.where(entity_similarities >= min_entity_similarity, entity_rows, -1)
    return partition(indices, similarities, entity_rows, entity_similarities, graph="directed",
                     min_similarity=min_similarity)
