"""Exact nearest-neighbour search on torch: how a flat index is searched, on a CPU or a GPU.

faiss-cpu cannot put an index on a GPU, and faiss-gpu wheels are not built for every CUDA
version, but a CUDA build of torch can hold a flat index's vectors on the device and search
them as FAISS's flat index does: a matrix product per chunk of queries and of vectors, and
the top k kept across chunks. On a CPU the same search is also faster than FAISS's flat
index at the depths the linker reads (hundreds of rows a query), where FAISS spends its
time in a result heap per query. Ties are broken as FAISS's flat index breaks them, so a
pipeline links the same on either placement: of vectors with equal scores the earliest rows
are kept, listed in the order FAISS's result heap leaves them in (latest first for inner
products, earliest first for distances). Results come
back in FAISS's form, so `FaissIndex` searches, updates and saves either the same way.
"""
from typing import Optional, Tuple

import faiss
import numpy as np
import torch

from ..util import ArboError

# (queries, vectors) a chunk holds, by device: a 256 MB score matrix on a GPU; on a CPU
# 128 MB, with the KB's vectors in as few chunks as possible (merging chunks costs a top k).
CHUNKS = {"cuda": (1 << 10, 1 << 16), "cpu": (1 << 7, 1 << 18)}


def torch_device() -> Optional[str]:
    """The device torch's exact search runs on: CUDA where torch sees a GPU, else None."""
    return "cuda" if torch.cuda.is_available() else None


class TorchFlatSearch:
    """A flat index's vectors and ids as tensors on `device`, searched exactly.

    metric "ip" ranks by inner product, "l2" by squared Euclidean distance; `search`
    returns what FAISS's flat index returns for that metric.
    """

    def __init__(
        self,
        vectors: np.ndarray,
        ids: np.ndarray,
        metric: str = "ip",
        *,
        device: str = "cuda",
        query_chunk: Optional[int] = None,
        key_chunk: Optional[int] = None,
    ) -> None:
        if metric not in ("ip", "l2"):
            raise ArboError(f"Unknown metric '{metric}'; choose one of ip, l2.")
        if vectors.ndim != 2 or len(ids) != len(vectors):
            raise ArboError(f"Got {len(ids)} ids for vectors of shape {vectors.shape}.")
        self.metric = metric
        self.device = torch.device(device)
        default_queries, default_keys = CHUNKS["cpu" if self.device.type == "cpu" else "cuda"]
        self.query_chunk = query_chunk or default_queries
        self.key_chunk = key_chunk or default_keys
        self.d = vectors.shape[1]
        self._vectors = torch.as_tensor(np.ascontiguousarray(vectors, dtype=np.float32)).to(self.device)
        self._ids = torch.as_tensor(np.asarray(ids, dtype=np.int64)).to(self.device)
        # l2: the nearest vectors are those with the highest q.x - |x|^2 / 2.
        self._bias = -0.5 * (self._vectors ** 2).sum(1) if metric == "l2" else None

    @property
    def ntotal(self) -> int:
        return len(self._ids)

    @classmethod
    def from_faiss(cls, index: "faiss.Index", device: str = "cuda", **chunks: int) -> "TorchFlatSearch":
        """The vectors and ids of a flat FAISS index (an IndexFlat, or one in an IndexIDMap)."""
        mapped = isinstance(index, faiss.IndexIDMap)
        flat = faiss.downcast_index(index.index) if mapped else index
        if not isinstance(flat, faiss.IndexFlat):
            raise ArboError(f"Torch's exact search takes a flat FAISS index; got {type(flat).__name__}.")
        vectors = faiss.vector_to_array(flat.codes).view(np.float32).reshape(flat.ntotal, flat.d)
        ids = faiss.vector_to_array(index.id_map) if mapped else np.arange(flat.ntotal, dtype=np.int64)
        metric = "l2" if flat.metric_type == faiss.METRIC_L2 else "ip"
        return cls(vectors, ids, metric, device=device, **chunks)

    def to_faiss(self) -> "faiss.IndexIDMap":
        """The same vectors and ids as a CPU FAISS index, as `FaissIndex.build` makes it."""
        metric_type = faiss.METRIC_L2 if self.metric == "l2" else faiss.METRIC_INNER_PRODUCT
        index = faiss.IndexIDMap(faiss.IndexFlat(self.d, metric_type))
        if self.ntotal:
            index.add_with_ids(self._vectors.cpu().numpy(), self._ids.cpu().numpy())
        return index

    def search(self, queries: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
        """(distances, ids), both (n_queries, k), as FAISS's flat index gives them: inner
        products highest first (ip) or squared distances nearest first (l2); slots beyond
        the index's size hold id -1 and -inf (ip) or +inf (l2)."""
        matrix = torch.as_tensor(np.ascontiguousarray(queries, dtype=np.float32))
        if matrix.ndim != 2 or matrix.shape[1] != self.d:
            raise ArboError(f"Query vectors have shape {tuple(matrix.shape)}; the index has dimension {self.d}.")
        width = min(int(k), self.ntotal)
        scores = np.full((len(matrix), k), -np.inf if self.metric == "ip" else np.inf, dtype=np.float32)
        ids = np.full((len(matrix), k), -1, dtype=np.int64)
        if not width:
            return scores, ids
        for start in range(0, len(matrix), self.query_chunk):
            chunk = matrix[start:start + self.query_chunk].to(self.device)
            found, rows = self._top(chunk, width)
            if self.metric == "l2":  # |q - x|^2 = |q|^2 - 2 (q.x - |x|^2 / 2)
                found = ((chunk ** 2).sum(1, keepdim=True) - 2 * found).clamp_(min=0)
            scores[start:start + len(chunk), :width] = found.cpu().numpy()
            ids[start:start + len(chunk), :width] = self._ids[rows].cpu().numpy()
        return scores, ids

    def _top(self, queries: torch.Tensor, k: int) -> Tuple[torch.Tensor, torch.Tensor]:
        """The k best (score, row) of each query, in FAISS's order."""
        best = queries.new_empty((len(queries), 0))
        best_rows = torch.empty((len(queries), 0), dtype=torch.long, device=self.device)
        for offset in range(0, self.ntotal, self.key_chunk):
            keys = self._vectors[offset:offset + self.key_chunk]
            scores = queries @ keys.T
            if self._bias is not None:
                scores += self._bias[offset:offset + self.key_chunk]
            rows = torch.arange(offset, offset + len(keys), device=self.device).expand(len(queries), -1)
            scores, rows = keep_best(scores, rows, k)
            if best.shape[1]:
                scores, rows = keep_best(torch.cat([best, scores], 1), torch.cat([best_rows, rows], 1), k)
            best, best_rows = scores, rows
        if self.metric == "ip":  # of equal inner products, FAISS lists the latest row first
            best, best_rows = best.flip(1), best_rows.flip(1)
        order = torch.sort(best, dim=1, descending=True, stable=True).indices
        return best.gather(1, order), best_rows.gather(1, order)


def keep_best(scores: torch.Tensor, rows: torch.Tensor, k: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Of each query's candidates, given in ascending row order, the k with the highest
    scores and, of equal scores, the lowest rows (FAISS's choice), still in row order."""
    width = scores.shape[1]
    k = min(k, width)
    # One more than k: where the (k+1)-th score equals the k-th, topk chose among tied
    # scores arbitrarily; there take every score above the k-th, then the earliest equal to it.
    top = torch.topk(scores, min(k + 1, width), dim=1)
    chosen = top.indices[:, :k]
    kth = top.values[:, k - 1:k]
    tied = (top.values[:, k] == kth[:, 0]).nonzero().flatten() if width > k else chosen.new_empty(0)
    if len(tied):
        earlier = torch.arange(width, 0, -1, dtype=torch.int32, device=scores.device)
        some, bound = scores[tied], kth[tied]
        priority = torch.where(some > bound, earlier + width, torch.where(some == bound, earlier, 0))
        chosen = chosen.index_put((tied,), torch.topk(priority, k, dim=1).indices)
    chosen = chosen.sort(dim=1).values
    return scores.gather(1, chosen), rows.gather(1, chosen)
