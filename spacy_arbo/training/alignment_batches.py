"""Batches of synonym pairs for self-alignment: random, or built from index neighbours.

In a random batch of a KB with thousands of entities, two entities that the encoder
confuses (two subtypes of one disease, a disease and its syndrome) almost never meet, so
in-batch mining has no hard negative to find. Neighbour batches put each entity beside the
entities whose names lie nearest to its name under the current encoder.
"""
from collections import defaultdict
from typing import Dict, List, Sequence

import numpy as np

from .alignment_settings import BATCHINGS  # noqa: F401 (importable from here, as before)
from .synonyms import SynonymPair, batches

# Entity queries scored against every name at once; bounds the (queries x names) matrix.
QUERY_CHUNK = 256


def nearest_entities(vectors: np.ndarray, owners: np.ndarray, queries: Dict[int, int], k: int) -> Dict[int, List[int]]:
    """Entity row -> up to `k` other entity rows, nearest first, ranked by their names'
    cosine with the name at position `queries[row]` of `vectors` (unit rows, owners[i]
    the entity of name i)."""
    rows = sorted(queries)
    positions = np.asarray([queries[row] for row in rows], dtype=np.int64)
    depth = min(len(owners), 4 * k + 1)
    neighbours: Dict[int, List[int]] = {}
    for start in range(0, len(rows), QUERY_CHUNK):
        similarity = vectors[positions[start: start + QUERY_CHUNK]] @ vectors.T
        top = np.argpartition(-similarity, depth - 1, axis=1)[:, :depth]
        for i, row in enumerate(rows[start: start + QUERY_CHUNK]):
            ranked = top[i][np.argsort(-similarity[i, top[i]], kind="stable")]
            others = [int(owners[j]) for j in ranked if owners[j] != row]
            neighbours[row] = list(dict.fromkeys(others))[:k]
    return neighbours


def neighbour_order(neighbours: Dict[int, List[int]], rng: np.random.Generator) -> List[int]:
    """Every entity of `neighbours` once, each walk (depth first, nearest neighbour first)
    starting from a random entity not yet visited, so that neighbours come close together."""
    rows = sorted(neighbours)
    placed, order = set(), []
    for seed in rng.permutation(len(rows)):
        stack = [rows[seed]]
        while stack:
            row = stack.pop()
            if row in placed or row not in neighbours:
                continue
            placed.add(row)
            order.append(row)
            stack.extend(reversed(neighbours[row]))
    return order


def neighbour_batches(pairs: Sequence[SynonymPair], order: Sequence[int], batch_size: int,
                      rng: np.random.Generator) -> List[Sequence[SynonymPair]]:
    """Every pair once, in batches of `batch_size` whose entities follow `order`. An entity
    gives at most `batch_size // 16` pairs (2 or more) to a run of neighbours, so that one
    with dozens of names does not fill a batch without negatives; its other pairs follow in
    later rounds. Batches are shuffled."""
    by_row: Dict[int, List[SynonymPair]] = defaultdict(list)
    for pair in pairs:
        by_row[pair.row].append(pair)
    share = max(2, batch_size // 16)
    rank = {row: i for i, row in enumerate(order)}
    chunks = sorted(((start // share, rank.get(row, len(rank)), row), own[start: start + share])
                    for row, own in by_row.items() for start in range(0, len(own), share))
    stream = [pair for _, chunk in chunks for pair in chunk]
    result = list(batches(stream, batch_size))
    return [result[i] for i in rng.permutation(len(result))]
