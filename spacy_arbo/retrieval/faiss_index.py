"""A FAISS index over entity vectors, with validation, metadata and atomic saving.

The index stores the int64 ids it is given (by default 0..n-1, the rows of the
EntityStore; several vectors may share one id when synonyms are indexed), so
search results map straight back to entities. The metadata records which encoder
made the vectors (an opaque fingerprint), so a pipeline refuses an index built by
a different encoder instead of returning confident nonsense.

Approximate kinds are tuned when built: `nprobe` (IVF) or `efSearch` (HNSW) is the
smallest that finds `recall_target` of the exact top `recall_k` for a sample of the
indexed vectors, and the recall reached is kept in `params`. `build_from_chunks` fills an
index from chunks (e.g. memory-mapped shards), so a 10M-vector KB never needs its float32
matrix in memory at once.

This module builds, searches, updates and places indexes (the kinds and the GPU); the
saved form and its checks are in faiss_format.py, recall tuning in faiss_recall.py and
the checks of vectors and ids in faiss_checks.py.
"""
import functools
import hashlib
import math
import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import numpy as np
import srsly
import torch

try:
    import faiss
except ImportError:  # faiss is an extra: faiss-cpu or faiss-gpu provide the module
    raise ImportError(
        "spacy-arbo needs FAISS for its entity index: "
        "pip install 'spacy-arbo[cpu]' (or 'spacy-arbo[gpu]')"
    ) from None

from ..ranges import check_range
from ..util import ArboError, PathLike
from . import torch_search
from .faiss_checks import as_ids, as_matrix, check_positive, faiss_metric
from .faiss_format import INDEX_FILE, KINDS, META_FILE, Description, index_from_blob, index_meta, read_index, write_index
from .faiss_recall import ExactTopK, recall_queries, tune

__all__ = ["INDEX_FILE", "KINDS", "META_FILE", "ExactTopK", "FaissIndex", "gpu_available"]

# kind="auto": exact search up to this many vectors (0.3 GB at 384 dimensions, a few ms a
# query on 2 cores), IVF with 8-bit scalar quantization above it (a quarter of the memory).
AUTO_FLAT_MAX = 200_000
AUTO_KIND = "ivfsq"
SQ_TYPES = {
    "8bit": faiss.ScalarQuantizer.QT_8bit,
    "6bit": faiss.ScalarQuantizer.QT_6bit,
    "4bit": faiss.ScalarQuantizer.QT_4bit,
    "fp16": faiss.ScalarQuantizer.QT_fp16,
}
# k-means wants this many training points per centroid; fewer gives poor lists. More than
# MAX_POINTS_PER_CENTROID only slows training, so larger samples are subsampled.
POINTS_PER_CENTROID = 39
MAX_POINTS_PER_CENTROID = 64
# The default nlist stops here: k-means and assigning every vector to a list grow with it,
# and 4096 lists keep a 10M-vector build on a 2-core CPU within minutes.
MAX_DEFAULT_NLIST = 4096
# From this many lists the coarse quantizer is an HNSW graph over the centroids, so adding
# and searching walk a graph instead of scanning every centroid.
HNSW_QUANTIZER_NLIST = 1024
# The efSearch values tried when tuning an HNSW index.
EF_SEARCH_TRIED = (16, 32, 64, 128, 256, 512, 1024, 2048)


class FaissIndex:
    """Nearest-neighbour search over entity vectors; higher scores are better.

    Scores are inner products for metric "ip" (cosine when the caller normalised
    the vectors) and negated squared distances for metric "l2".
    """

    def __init__(
        self,
        index: "faiss.Index",
        kind: str,
        *,
        metric: str = "ip",
        params: Optional[Dict[str, Any]] = None,
        fingerprint: str = "",
        use_gpu: Optional[bool] = None,
    ) -> None:
        self._kind = kind
        self._metric = metric
        self._params = dict(params or {})
        self._fingerprint = fingerprint
        self._index, self._on_gpu = _place(index, kind, use_gpu)

    @classmethod
    def build(
        cls, vectors: np.ndarray, kind: str = "flat", *, ids: Optional[np.ndarray] = None, **options: Any
    ) -> "FaissIndex":
        """Build an index over `vectors` (one row per id; ids default to 0..n-1).

        `options` are those of `build_from_chunks`; the vectors are also its sample.
        """
        matrix = as_matrix(vectors, "vectors")
        return cls.build_from_chunks([(matrix, ids)], count=len(matrix), sample=matrix, kind=kind, **options)

    @classmethod
    def build_from_chunks(
        cls,
        chunks: Iterable[Tuple[np.ndarray, Optional[np.ndarray]]],
        *,
        count: int,
        sample: np.ndarray,
        kind: str = "flat",
        metric: str = "ip",
        fingerprint: str = "",
        hnsw_m: int = 32,
        ef_construction: int = 200,
        ef_search: Optional[int] = None,
        nlist: Optional[int] = None,
        nprobe: Optional[int] = None,
        pq_m: Optional[int] = None,
        pq_nbits: int = 8,
        sq_type: str = "8bit",
        recall_target: float = 0.95,
        recall_k: int = 64,
        tuning_queries: Optional[np.ndarray] = None,
        use_gpu: Optional[bool] = None,
        seed: int = 0,
    ) -> "FaissIndex":
        """Build an index from `(vectors, ids)` chunks holding `count` vectors in all (ids
        None: the running row numbers); IVF and PQ train on `sample`, a random subset.

        kind: "flat" (exact), "hnsw" (graph; fast and accurate, CPU only),
        "ivfpq" (inverted lists + product quantization: smallest), "ivfsq" (inverted lists
        + scalar quantization), or "auto": flat up to AUTO_FLAT_MAX vectors, else ivfsq.
        nlist defaults to about 4 * sqrt(count), at most MAX_DEFAULT_NLIST and lowered so
        every list has enough training points; pq_m (sub-quantizers) to about dim / 8.
        nprobe / ef_search None: the smallest value reaching `recall_target` of the exact
        top `recall_k` for `tuning_queries` (queries like those the index will serve, e.g.
        mention vectors; default: sampled indexed vectors), measured while the chunks are added.
        use_gpu: None moves the index to a GPU when faiss has one (never HNSW), and a flat
        index to torch's exact search when only torch has one (torch_search.py).
        seed fixes IVF and PQ training, so rebuilding gives the same index; HNSW
        graphs are built in parallel and may differ slightly between builds.
        """
        if kind == "auto":
            kind = "flat" if count <= AUTO_FLAT_MAX else AUTO_KIND
        if kind not in KINDS:
            raise ArboError(f"Unknown index kind '{kind}'; choose one of auto, {', '.join(KINDS)}.")
        metric_type = faiss_metric(metric)
        train = as_matrix(sample, "sample")
        if count < 1 or not len(train):
            raise ArboError("Cannot build an index from an empty vector matrix (0 rows).")
        dim = train.shape[1]
        for name, value in (("hnsw_m", hnsw_m), ("ef_construction", ef_construction),
                            ("pq_nbits", pq_nbits), ("recall_k", recall_k)):
            check_positive(name, value)
        for name, value in (("ef_search", ef_search), ("nprobe", nprobe)):
            if value is not None:
                check_positive(name, value)
        check_range("recall_target", recall_target, 0, 1, low_open=True)
        if kind == "flat":
            # IndexFlat and IndexHNSW number vectors themselves; the id map stores ours.
            index = faiss.IndexIDMap(faiss.IndexFlat(dim, metric_type))
            params: Dict[str, Any] = {}
            tuned: Optional[Tuple[str, List[int], Callable[[int], None]]] = None
        elif kind == "hnsw":
            graph = faiss.IndexHNSWFlat(dim, hnsw_m, metric_type)
            graph.hnsw.efConstruction = ef_construction
            index = faiss.IndexIDMap(graph)
            params = {"hnsw_m": hnsw_m, "ef_construction": ef_construction}
            tuned = ("ef_search", [ef_search] if ef_search else [v for v in EF_SEARCH_TRIED if v >= recall_k],
                     lambda value: setattr(graph.hnsw, "efSearch", value))
        else:
            ivf, params = _ivf_index(kind, count, train, metric_type, nlist, pq_m, pq_nbits, sq_type, seed)
            index = ivf
            tried = [min(nprobe, ivf.nlist)] if nprobe else \
                sorted({min(2 ** i, ivf.nlist) for i in range(ivf.nlist.bit_length() + 1)})
            tuned = ("nprobe", tried, lambda value: setattr(ivf, "nprobe", value))
        if not index.is_trained:
            index.train(train)
        if tuning_queries is not None:
            tuning_queries = as_matrix(tuning_queries, "tuning_queries")
            if tuning_queries.shape[1] != dim:
                raise ArboError(f"tuning_queries have dimension {tuning_queries.shape[1]}; the sample has {dim}.")
        probe = None if tuned is None else ExactTopK(
            recall_queries(train, seed) if tuning_queries is None else tuning_queries, recall_k, metric)
        added = 0
        for vectors, ids in chunks:
            matrix = as_matrix(vectors, "vectors")
            if matrix.shape[1] != dim:
                raise ArboError(f"A chunk of vectors has dimension {matrix.shape[1]}; the sample has {dim}.")
            chunk_ids = np.arange(added, added + len(matrix), dtype=np.int64) if ids is None \
                else as_ids(ids, len(matrix))
            index.add_with_ids(matrix, chunk_ids)
            if probe is not None:
                probe.update(matrix, chunk_ids)
            added += len(matrix)
        if added != count:
            raise ArboError(f"The chunks held {added:,} vectors but count says {count:,}.")
        if tuned is not None:
            params.update(tune(index, kind, probe, recall_target, *tuned))
        return cls(index, kind, metric=metric, params=params, fingerprint=fingerprint, use_gpu=use_gpu)

    @property
    def kind(self) -> str:
        return self._kind

    @property
    def metric(self) -> str:
        return self._metric

    @property
    def dim(self) -> int:
        return self._index.d

    @property
    def ntotal(self) -> int:
        return self._index.ntotal

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def params(self) -> Dict[str, Any]:
        return dict(self._params)

    @property
    def on_gpu(self) -> bool:
        return self._on_gpu

    def __len__(self) -> int:
        return self.ntotal

    def __repr__(self) -> str:
        return (f"FaissIndex(kind={self.kind!r}, dim={self.dim}, ntotal={self.ntotal}, "
                f"metric={self.metric!r}, on_gpu={self.on_gpu})")

    def search(self, queries: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
        """Return (scores, ids), both (n_queries, k), best first.

        Slots with no result (k larger than the index, or an approximate index
        that found fewer than k vectors) hold id -1 and score -inf.
        """
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ArboError(f"k must be a positive integer; got {k!r}.")
        matrix = as_matrix(queries, "queries")
        if matrix.shape[1] != self.dim:
            raise ArboError(
                f"Query vectors have dimension {matrix.shape[1]} but the index has "
                f"dimension {self.dim}."
            )
        scores = np.full((len(matrix), k), -np.inf, dtype=np.float32)
        ids = np.full((len(matrix), k), -1, dtype=np.int64)
        width = min(int(k), self.ntotal)
        if len(matrix) and width:
            try:
                found_scores, found_ids = self._index.search(matrix, width)
            except RuntimeError as err:
                if not self.on_gpu:
                    raise
                # GPU kernels cap k (2048 in current builds).
                raise ArboError(f"FAISS GPU search with k={width} failed: {err}") from None
            if self.metric == "l2":
                found_scores = -found_scores
            found_scores[found_ids < 0] = -np.inf
            scores[:, :width] = found_scores
            ids[:, :width] = found_ids
        return scores, ids

    def update(self, remove: np.ndarray, vectors: np.ndarray, ids: np.ndarray, fingerprint: str) -> None:
        """Drop every vector held under an id in `remove`, add `vectors` under `ids`, and take
        the `fingerprint` of the KB they now describe: a KB update encodes only what changed.
        IVF lists keep their trained centroids, so a large update drifts from a fresh build."""
        if self.kind == "hnsw":
            raise ArboError("An hnsw index cannot drop vectors; rebuild it (refresh_index) or use "
                            "kind 'auto', 'flat', 'ivfsq' or 'ivfpq' for a KB that changes.")
        matrix = np.zeros((0, self.dim), dtype=np.float32) if not len(vectors) else as_matrix(vectors, "vectors")
        if matrix.shape[1] != self.dim:
            raise ArboError(f"New vectors have dimension {matrix.shape[1]} but the index has dimension {self.dim}.")
        new_ids = as_ids(ids, len(matrix))
        index = self._cpu_index()
        gone = np.unique(np.asarray(remove, dtype=np.int64))
        if len(gone):
            index.remove_ids(gone)
        if len(matrix):
            index.add_with_ids(matrix, new_ids)
        if index is not self._index:  # updated through a CPU FAISS copy
            self._index, self._on_gpu = _place(index, self.kind, self.on_gpu)
        self._fingerprint = fingerprint

    # Serialization: the format and its checks are in faiss_format.py --------------

    def to_disk(self, path: PathLike) -> None:
        """Write `path/index.faiss` and `path/index.json` atomically."""
        write_index(self._cpu_index(), self._description(), path)

    @classmethod
    def from_disk(
        cls,
        path: PathLike,
        expected_fingerprint: Optional[str] = None,
        expected_dim: Optional[int] = None,
        *,
        use_gpu: Optional[bool] = None,
    ) -> "FaissIndex":
        return cls._from_loaded(*read_index(path, expected_fingerprint, expected_dim), use_gpu)

    def to_bytes(self) -> bytes:
        index = self._cpu_index()
        blob = faiss.serialize_index(index).tobytes()
        return srsly.msgpack_dumps({"meta": index_meta(index, self._description(), hashlib.sha256(blob).hexdigest()),
                                    "index": blob})

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        expected_fingerprint: Optional[str] = None,
        expected_dim: Optional[int] = None,
        *,
        use_gpu: Optional[bool] = None,
    ) -> "FaissIndex":
        origin = "serialized FAISS index"
        try:
            msg = srsly.msgpack_loads(data)
            meta, blob = msg["meta"], msg["index"]
        except Exception as err:  # msgpack raises several unrelated types
            raise ArboError(f"{origin}: cannot read it ({err!r}).") from None
        return cls._from_loaded(index_from_blob(blob, meta, origin, expected_fingerprint, expected_dim), meta, use_gpu)

    @classmethod
    def _from_loaded(cls, index: "faiss.Index", meta: Dict[str, Any], use_gpu: Optional[bool]) -> "FaissIndex":
        return cls(index, meta["kind"], metric=meta["metric"], params=meta["params"],
                   fingerprint=meta["fingerprint"], use_gpu=use_gpu)

    def _cpu_index(self) -> "faiss.Index":
        # GPU and torch indexes cannot be serialized directly.
        if isinstance(self._index, torch_search.TorchFlatSearch):
            return self._index.to_faiss()
        return faiss.index_gpu_to_cpu(self._index) if self.on_gpu else self._index

    def _description(self) -> Description:
        return {"kind": self.kind, "metric": self.metric, "params": self.params, "fingerprint": self.fingerprint}


def gpu_available() -> bool:
    """Whether the installed faiss was built with GPU support and sees a GPU."""
    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


@functools.lru_cache(maxsize=None)
def _gpu_resources() -> "faiss.StandardGpuResources":
    # One per process: each reserves a slice of GPU memory for scratch space.
    return faiss.StandardGpuResources()


def _place(index: "faiss.Index", kind: str, use_gpu: Optional[bool]) -> Tuple["faiss.Index", bool]:
    """Move a CPU index to the GPU (torch's current one: spaCy's `require_gpu`, `--gpu-id`) when
    asked (or, with use_gpu=None, when possible): FAISS's GPU index where faiss has GPU support,
    else, for a flat index, torch's exact search on CUDA. A flat index left on the CPU is
    searched by torch there too (faster, same results)."""
    on_torch = kind == "flat" and not gpu_available() and torch_search.torch_device() is not None
    if use_gpu is None:
        use_gpu, explicit = gpu_available() or on_torch, False
    elif use_gpu and not (gpu_available() or on_torch):
        raise ArboError(
            "use_gpu=True but faiss sees no GPU: install faiss-gpu (instead of faiss-cpu) "
            "and check that a CUDA device is visible (a flat index also runs on torch's CUDA)."
        )
    else:
        explicit = True
    if not use_gpu:
        return (torch_search.TorchFlatSearch.from_faiss(index, "cpu") if kind == "flat" else index), False
    if on_torch:
        return torch_search.TorchFlatSearch.from_faiss(index, torch_search.torch_device()), True
    if kind == "hnsw":
        if explicit:
            warnings.warn("FAISS has no GPU version of HNSW; the hnsw index stays on CPU.")
        return index, False
    try:
        device = torch.cuda.current_device() if torch.cuda.is_available() else 0
        return faiss.index_cpu_to_gpu(_gpu_resources(), device, index), True
    except RuntimeError as err:  # e.g. a PQ code size the GPU kernels do not support
        warnings.warn(f"Could not move the {kind} index to the GPU ({err}); it stays on CPU.")
        return index, False


def _ivf_index(
    kind: str,
    count: int,
    train: np.ndarray,
    metric_type: int,
    nlist: Optional[int],
    pq_m: Optional[int],
    pq_nbits: int,
    sq_type: str,
    seed: int,
) -> Tuple["faiss.IndexIVF", Dict[str, Any]]:
    """An untrained IVF index with a seeded clustering; IVF stores custom ids itself."""
    n, dim = train.shape
    if nlist is None:
        nlist = max(1, min(round(4 * math.sqrt(count)), MAX_DEFAULT_NLIST, n // POINTS_PER_CENTROID))
    check_positive("nlist", nlist)
    if nlist > n:
        raise ArboError(f"nlist={nlist} inverted lists need at least {nlist} vectors to train; "
                        f"got {n}. Lower nlist or use kind='flat'.")
    if nlist >= HNSW_QUANTIZER_NLIST:
        quantizer = faiss.IndexHNSWFlat(dim, 32, metric_type)
        quantizer.hnsw.efSearch = 64
    else:
        quantizer = faiss.IndexFlat(dim, metric_type)
    if kind == "ivfpq":
        pq_m = _default_pq_m(dim) if pq_m is None else pq_m
        check_positive("pq_m", pq_m)
        if dim % pq_m:
            raise ArboError(f"pq_m={pq_m} must divide the vector dimension {dim}.")
        if n < 2 ** pq_nbits:
            raise ArboError(
                f"ivfpq with pq_nbits={pq_nbits} needs at least {2 ** pq_nbits} vectors to "
                f"train its codebooks; got {n}. Use kind='flat' (exact, and fast at this "
                "size) or lower pq_nbits."
            )
        index = faiss.IndexIVFPQ(quantizer, dim, nlist, pq_m, pq_nbits, metric_type)
        index.pq.cp.seed = seed
        params = {"nlist": nlist, "pq_m": pq_m, "pq_nbits": pq_nbits}
    else:
        if sq_type not in SQ_TYPES:
            raise ArboError(f"Unknown sq_type '{sq_type}'; choose one of {', '.join(SQ_TYPES)}.")
        index = faiss.IndexIVFScalarQuantizer(quantizer, dim, nlist, SQ_TYPES[sq_type],
                                              metric_type)
        params = {"nlist": nlist, "sq_type": sq_type}
    if nlist >= HNSW_QUANTIZER_NLIST:
        # k-means runs on a flat index; the centroids then fill the graph.
        index.quantizer_trains_alone = 2
    index.cp.seed = seed
    index.cp.max_points_per_centroid = MAX_POINTS_PER_CENTROID
    return index, {**params, "seed": seed}


def _default_pq_m(dim: int) -> int:
    """The largest divisor of dim up to dim / 8 (8-dimensional sub-vectors)."""
    return max(m for m in range(1, max(1, dim // 8) + 1) if dim % m == 0)
