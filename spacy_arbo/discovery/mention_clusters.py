"""Clusters of NIL mentions across a whole corpus (ArboEL, Agarwal et al. 2022, 3.5 and A.2):
each mention is joined to its k nearest mentions, found by an exact FAISS search over all of them
(a k-nearest-neighbour graph: k edges a mention, never a matrix of all pairs), and to its nearest
KB entity; edges less similar than `min_similarity` are cut and the directed pruning leaves at most
one entity per cluster. A cluster that still reaches an entity holds mentions of it after all (the
chain of similar mentions that `Partition.path` shows); the others are entities the KB lacks.

The mentions come NIL from a linker that already weighed their nearest entities, so an entity edge
has a cut of its own, `min_entity_similarity`: only a mention all but equal to a KB name takes its
cluster back into the KB. One cut for both (ArboEL's lambda) sent most mentions of entities the KB
lacks to a sibling or child entity (docs/discovery.md).

Mentions read alike (the same vector: one text, context and long form) are one node of the graph,
their copies hanging from it: otherwise the k neighbours of a name written thirty times are all its
own copies, and two spellings of one entity ("tumor", "tumors") never meet."""
from typing import Optional, Sequence, Tuple

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
    same_entity: Sequence[Tuple[int, int]] = (),
) -> Partition:
    """Partition the mentions of `vectors` (unit rows) with their nearest entities (rows, -1 for
    none; leave both out to cluster mentions alone, every cluster a new entity). An entity edge is
    kept when its similarity reaches both cuts (`min_entity_similarity` None: `min_similarity`);
    `same_entity`: pairs of mentions the text says are one (`corpus_discovery.same_entity_pairs`),
    joined whatever their vectors say."""
    if vectors.ndim != 2:
        raise ArboError(f"Mention vectors must be a matrix (mentions x dimensions); got shape {vectors.shape}.")
    if entity_rows is not None and len(entity_rows) != len(vectors):
        raise ArboError(f"{len(vectors)} mention vectors but {len(entity_rows)} nearest entities: one each is needed.")
    indices, similarities = with_pairs(*knn_graph(vectors, knn_mentions), same_entity)
    if entity_rows is not None and entity_similarities is not None and min_entity_similarity is not None:
        entity_rows = np.where(entity_similarities >= min_entity_similarity, entity_rows, -1)
    return partition(indices, similarities, entity_rows, entity_similarities, graph="directed",
                     min_similarity=min_similarity)


def knn_graph(vectors: np.ndarray, knn_mentions: int) -> Tuple[np.ndarray, np.ndarray]:
    """Each mention's nearest mentions and their similarities, (n, k) with -1 padding, as `partition`
    reads them: a distinct vector (its first mention) lists its `knn_mentions` nearest distinct
    vectors' first mentions, and every other mention of the same vector that one alone."""
    first, representative = _distinct_rows(vectors)
    knn = max(0, min(knn_mentions, len(first) - 1))
    width = max(knn, 1) if len(first) < len(vectors) else knn
    indices = np.full((len(vectors), width), -1, dtype=np.int64)
    similarities = np.zeros((len(vectors), width), dtype=np.float32)
    if knn:
        nodes = vectors if len(first) == len(vectors) else vectors[first]
        found, found_similarities = exact_search(nodes, nodes, knn, exclude_self=True)
        indices[first, :knn] = np.where(found >= 0, first[np.maximum(found, 0)], -1)
        similarities[first, :knn] = found_similarities
    copies = np.flatnonzero(representative != np.arange(len(vectors)))
    if len(copies):
        indices[copies, 0] = representative[copies]
        similarities[copies, 0] = 1.0
    return indices, similarities


def _distinct_rows(vectors: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The first row of each distinct vector, in row order, and each row's first row with its vector."""
    if not len(vectors):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    rows = np.ascontiguousarray(vectors).view(np.dtype((np.void, vectors.dtype.itemsize * vectors.shape[1])))
    _, first, inverse = np.unique(rows.reshape(-1), return_index=True, return_inverse=True)
    return np.sort(first), first[inverse.reshape(-1)]


def with_pairs(indices: np.ndarray, similarities: np.ndarray,
               pairs: Sequence[Tuple[int, int]]) -> Tuple[np.ndarray, np.ndarray]:
    """The neighbour lists with an edge of similarity 1 each way between the two mentions of each pair."""
    if not len(pairs):
        return indices, similarities
    ends = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if ends.min() < 0 or ends.max() >= len(indices):
        raise ArboError(f"Mention pairs must name mentions 0 to {len(indices) - 1}; got {ends.min()} to {ends.max()}.")
    sources, targets = np.concatenate([ends[:, 0], ends[:, 1]]), np.concatenate([ends[:, 1], ends[:, 0]])
    order = np.argsort(targets, kind="stable")
    sources, targets = sources[order], targets[order]
    slot = np.arange(len(targets)) - np.searchsorted(targets, targets)  # the how-many-th pair edge into its target
    extra_indices = np.full((len(indices), int(slot.max()) + 1), -1, dtype=np.int64)
    extra_similarities = np.zeros(extra_indices.shape, dtype=np.float32)
    extra_indices[targets, slot] = sources
    extra_similarities[targets, slot] = 1.0
    return np.hstack([indices, extra_indices]), np.hstack([similarities, extra_similarities])
