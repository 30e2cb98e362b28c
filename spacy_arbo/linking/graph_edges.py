"""The mention graph of `clustering.partition` as validated edge arrays (ArboEL eq. 7): an
edge to each mention from each of its k nearest mentions and from its nearest entity.

Nodes are numbered mentions first (0..n-1), then the entities that occur as someone's
nearest or anchor entity. Malformed input raises an `ArboError` naming the array, and the
mention where it is wrong, rather than a numpy or scipy error further on.
"""
from typing import Optional

import numpy as np

from ..util import ArboError


def graph_edges(knn_indices, knn_similarities, entity_rows, entity_similarities,
                anchor_entities):
    """Validated directed edges (src, dst, similarity) and the entity row of each entity node."""
    indices = np.asarray(knn_indices)
    similarities = np.asarray(knn_similarities)
    if indices.ndim != 2:
        raise ArboError(f"knn_indices must be a (mentions, k) matrix; got shape {indices.shape}.")
    if similarities.shape != indices.shape:
        raise ArboError(f"knn_similarities has shape {similarities.shape} but knn_indices has "
                        f"shape {indices.shape}.")
    n = len(indices)
    if indices.size and not np.issubdtype(indices.dtype, np.integer):
        raise ArboError(f"knn_indices must hold integer mention indices (-1 for padding); got "
                        f"dtype {indices.dtype} (were indices and similarities swapped?).")
    indices = indices.astype(np.int64, copy=False)
    similarities = _as_float(similarities, "knn_similarities")
    _check_range(indices, n, "knn_indices", f"mention indices 0..{n - 1}")
    listed = indices >= 0
    _check_no_nan(similarities[listed], np.nonzero(listed)[0], "knn_similarities")
    owner = np.broadcast_to(np.arange(n)[:, None], indices.shape)
    # Edge u -> m for each neighbour u in m's list; self-matches add nothing.
    edge = listed & (indices != owner)
    src, dst, similarity = indices[edge], owner[edge], similarities[edge]

    if (entity_rows is None) != (entity_similarities is None):
        raise ArboError("Pass entity_rows and entity_similarities together (or neither).")
    if entity_rows is None:
        nearest = np.full(n, -1, dtype=np.int64)
        nearest_similarity = np.zeros(n)
    else:
        nearest = _as_rows(entity_rows, n, "entity_rows")
        nearest_similarity = _as_float(np.asarray(entity_similarities), "entity_similarities")
        if nearest_similarity.shape != (n,):
            raise ArboError(f"entity_similarities must have one value per mention ({n}); got "
                            f"shape {nearest_similarity.shape}.")
        has = nearest >= 0
        _check_no_nan(nearest_similarity[has], np.nonzero(has)[0], "entity_similarities")
    if anchor_entities is not None:
        gold = _as_rows(anchor_entities, n, "anchor_entities")
        anchored = gold >= 0
        nearest = np.where(anchored, gold, nearest)
        nearest_similarity = np.where(anchored, np.inf, nearest_similarity)

    linked = nearest >= 0
    rows = np.unique(nearest[linked])
    entity_src = n + np.searchsorted(rows, nearest[linked])
    src = np.concatenate([src, entity_src])
    dst = np.concatenate([dst, np.nonzero(linked)[0]])
    similarity = np.concatenate([similarity, nearest_similarity[linked]])
    return n, src.astype(np.int64), dst.astype(np.int64), similarity, rows


def _as_rows(values, n: int, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.shape != (n,):
        raise ArboError(f"{name} must have one value per mention ({n}); got shape {array.shape}.")
    if n and not np.issubdtype(array.dtype, np.integer):
        raise ArboError(f"{name} must hold integer entity rows (-1 for none); got dtype "
                        f"{array.dtype}.")
    array = array.astype(np.int64, copy=False)
    _check_range(array, None, name, "entity rows >= 0")
    return array


def _check_range(array: np.ndarray, end: Optional[int], name: str, expected: str) -> None:
    bad = array < -1
    if end is not None:
        bad |= array >= end
    if bad.any():
        position = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ArboError(f"{name}{list(position)} is {int(array[position])}; expected -1 or "
                        f"{expected}.")


def _as_float(array: np.ndarray, name: str) -> np.ndarray:
    if array.size and not (np.issubdtype(array.dtype, np.floating)
                           or np.issubdtype(array.dtype, np.integer)):
        raise ArboError(f"{name} must be numbers; got dtype {array.dtype}.")
    return array.astype(np.float64)


def _check_no_nan(values: np.ndarray, mentions: np.ndarray, name: str) -> None:
    if np.isnan(values).any():
        raise ArboError(f"{name} is NaN for mention {int(mentions[np.isnan(values)][0])}.")

