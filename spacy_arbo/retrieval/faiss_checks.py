"""Checks of what callers hand the FAISS layer: vector matrices, ids, metrics, counts.

FAISS takes C-contiguous float32 matrices and int64 ids and crashes or silently
misbehaves on anything else (a NaN row, a wrong dtype, a negative id); these checks turn
such input into one-line errors before FAISS sees it.
"""
from typing import Any, Optional

import faiss
import numpy as np

from ..util import ArboError

METRICS = {"ip": faiss.METRIC_INNER_PRODUCT, "l2": faiss.METRIC_L2}


def faiss_metric(metric: str) -> int:
    if metric not in METRICS:
        raise ArboError(f"Unknown metric '{metric}'; choose one of {', '.join(METRICS)}.")
    return METRICS[metric]


def check_positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ArboError(f"{name} must be a positive integer; got {value!r}.")


def as_matrix(array: Any, name: str) -> np.ndarray:
    """A C-contiguous float32 (rows, dim) copy or view of `array`, checked for sanity."""
    try:
        matrix = np.asarray(array)
    except (ValueError, TypeError) as err:
        raise ArboError(f"{name} must be a 2-D numeric matrix ({err}).") from None
    if matrix.dtype.kind not in "fiu":
        raise ArboError(f"{name} must be numeric; got dtype {matrix.dtype}.")
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise ArboError(f"{name} must be a 2-D matrix (rows, dim) with dim > 0; "
                        f"got shape {matrix.shape}.")
    with np.errstate(over="ignore"):  # overflow becomes inf, reported below
        matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        raise ArboError(f"{name} row {int(np.argmin(finite))} has a NaN or infinite value "
                        "(or one too large for float32).")
    return matrix


def as_ids(ids: Optional[np.ndarray], n: int) -> np.ndarray:
    if ids is None:
        return np.arange(n, dtype=np.int64)
    array = np.asarray(ids)
    if array.dtype.kind not in "iu" or array.ndim != 1:
        raise ArboError(f"ids must be a 1-D integer array; got dtype {array.dtype}, "
                        f"shape {array.shape}.")
    if len(array) != n:
        raise ArboError(f"Got {len(array)} ids for {n} vectors.")
    if len(array) and array.min() < 0:
        raise ArboError(f"ids must be non-negative (-1 marks a missing result); "
                        f"got {int(array.min())}.")
    return np.ascontiguousarray(array, dtype=np.int64)
