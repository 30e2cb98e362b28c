"""How approximate indexes are tuned: the recall of their search against exact search.

An IVF or HNSW index trades recall for speed through one search parameter (`nprobe`,
`efSearch`). Rather than a fixed value, the smallest value that finds `recall_target` of
the exact top `recall_k` for a sample of the indexed vectors is chosen, so an index is as
fast as its data allows and says how exact it is.
"""
import warnings
from typing import Any, Callable, Dict, List, Tuple

import faiss
import numpy as np

from .faiss_checks import as_matrix, faiss_metric

# How many sampled vectors measure recall against exact search.
RECALL_QUERIES = 256


class ExactTopK:
    """The exact top-k ids of some queries over vectors that arrive in chunks, merged as they
    come: the reference for recall when the vectors never fit in memory at once. It keeps a
    pool twice as deep, so that a vector scoring as high as the k-th (a duplicate string, an
    alias encoded alike) counts as found: which of several tied vectors exact search ranks
    k-th is arbitrary, and missing the arbitrary one is no miss."""

    def __init__(self, queries: np.ndarray, k: int, metric: str = "ip") -> None:
        self.queries = as_matrix(queries, "queries")
        self.k = k
        self._metric_type = faiss_metric(metric)
        self.pool_scores = np.full((len(self.queries), 0), -np.inf, dtype=np.float32)
        self.pool_ids = np.full((len(self.queries), 0), -1, dtype=np.int64)

    @property
    def ids(self) -> np.ndarray:
        return self.pool_ids[:, : self.k]

    def update(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        exact = faiss.IndexFlat(vectors.shape[1], self._metric_type)
        exact.add(vectors)
        found, rows = exact.search(self.queries, min(2 * self.k, len(vectors)))
        if self._metric_type == faiss.METRIC_L2:
            found = -found
        scores = np.hstack([self.pool_scores, found])
        ids = np.hstack([self.pool_ids, ids[rows]])
        order = np.argsort(-scores, axis=1, kind="stable")[:, : 2 * self.k]
        self.pool_scores, self.pool_ids = np.take_along_axis(scores, order, 1), np.take_along_axis(ids, order, 1)

    def recall(self, found: np.ndarray, within: float = 0.0) -> float:
        """Mean share of each query's exact top-k ids among `found` (n_queries, >= k) ids; an id
        held by several vectors (an entity's aliases) counts once, and a found id whose exact
        score is within `within` of the k-th one counts as one of the top k (0: exact ties;
        ann-benchmarks counts distances within 1e-3)."""
        last = min(self.k, self.pool_scores.shape[1]) - 1
        kth = self.pool_scores[:, last:last + 1] - within
        shares = []
        for got, pool, reached, top in zip(found.tolist(), self.pool_ids.tolist(), (self.pool_scores >= kth).tolist(),
                                           self.ids.tolist()):
            accepted = {id_ for id_, ok in zip(pool, reached) if ok}
            shares.append(min(1.0, len(set(got) & accepted) / len(set(top))))
        return float(np.mean(shares))


def recall_queries(sample: np.ndarray, seed: int) -> np.ndarray:
    """Sampled indexed vectors: the queries whose recall tunes nprobe / efSearch."""
    picked = np.random.default_rng(seed).choice(len(sample), size=min(RECALL_QUERIES, len(sample)), replace=False)
    return sample[np.sort(picked)]


def tune(
    index: "faiss.Index", kind: str, probe: ExactTopK, target: float,
    name: str, values: List[int], apply: Callable[[int], None]
) -> Dict[str, Any]:
    """Set the first of `values` (ascending: slower, more exact) whose recall reaches
    `target`; when none does, warn and take the first within half a point of the best
    (quantization caps recall, and scanning every list would not lift it)."""
    reached: List[Tuple[int, float]] = []
    for value in values:
        apply(value)
        reached.append((value, probe.recall(index.search(probe.queries, probe.k)[1])))
        if reached[-1][1] >= target:
            break
    else:
        best = max(recall for _, recall in reached)
        reached = [next(item for item in reached if item[1] >= best - 0.005)]
        apply(reached[0][0])
        if len(values) > 1:
            warnings.warn(f"The {kind} index finds {best:.3f} of the exact top {probe.k} at most, below "
                          f"recall_target={target}; {name}={reached[0][0]}. Use kind='ivfsq' or 'flat'.")
    value, recall = reached[-1]
    return {name: value, "recall_target": target, "recall_k": probe.k, "recall": round(recall, 4)}
