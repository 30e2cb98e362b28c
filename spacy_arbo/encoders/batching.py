"""Encoding many texts in batches of similar length, so little of each batch is padding."""
from contextlib import nullcontext
from typing import Callable, List, Sequence, TypeVar

import numpy as np
from tqdm import tqdm

from .threads import threads_beside_other_work

T = TypeVar("T")


def encode_by_length(
    items: Sequence[T],
    encode: Callable[[List[T]], np.ndarray],
    length: Callable[[T], int],
    dim: int,
    batch_size: int,
    *,
    progress: bool = False,
    desc: str = "encoding",
) -> np.ndarray:
    """(len(items), dim) float32 vectors, rows in input order."""
    vectors = np.zeros((len(items), dim), dtype=np.float32)
    order = length_order(items, length)
    with tqdm(total=len(items), desc=desc, unit="text", disable=not progress, leave=False, mininterval=2.0) as bar, \
            (threads_beside_other_work() if len(items) > batch_size else nullcontext()):
        for start in range(0, len(order), batch_size):
            rows = order[start: start + batch_size]
            vectors[rows] = encode([items[i] for i in rows])
            bar.update(len(rows))
    return vectors


def length_order(items: Sequence[T], length: Callable[[T], int]) -> List[int]:
    """The order `encode_by_length` encodes `items` in: by length, ties in input order.
    Items already in this order keep it, so encoding consecutive whole batches of it
    apart (on several workers) gives the batches, hence the vectors, of one pass."""
    return sorted(range(len(items)), key=lambda i: length(items[i]))
