"""The FAISS index kinds side by side on clustered synthetic vectors: build time, memory,
query time and recall@k against the exact flat index.

Entity vectors cluster by topic, so points are drawn around gaussian centres and
normalised, like encoder outputs; queries are drawn the same way.

Why: `index.kind` trades recall for speed and memory, and the trade depends on the number of
vectors; this shows it for a KB of the size at hand before choosing a kind or its parameters.

    python bench/index_bench.py --n 100000 --dim 384 --queries 1000
"""
import argparse
import time
from typing import Dict, List, Tuple

import faiss
import numpy as np

from spacy_arbo.retrieval.faiss_index import KINDS, FaissIndex

SINGLE_QUERIES = 200


def clustered_unit_vectors(
    rng: np.random.Generator, centres: np.ndarray, n: int, spread: float
) -> np.ndarray:
    points = centres[rng.integers(len(centres), size=n)]
    points = points + spread * rng.standard_normal(points.shape, dtype=np.float32)
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def measure(index: FaissIndex, queries: np.ndarray, k: int) -> Tuple[np.ndarray, float, float]:
    """(ids, batched ms per query, single-query ms)."""
    start = time.perf_counter()
    _, ids = index.search(queries, k)
    batched = (time.perf_counter() - start) * 1000 / len(queries)
    singles = queries[:SINGLE_QUERIES]
    start = time.perf_counter()
    for query in singles:
        index.search(query[None], k)
    single = (time.perf_counter() - start) * 1000 / len(singles)
    return ids, batched, single


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    k = exact.shape[1]
    return float(np.mean([len(set(f) & set(e)) / k for f, e in zip(found, exact)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="indexed vectors")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--centres", type=int, default=1000)
    parser.add_argument("--spread", type=float, default=0.05, help="per-dimension noise std")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--threads", type=int, default=None,
                        help="faiss OpenMP threads (default: all cores); on a busy shared "
                             "machine 1 avoids threads waiting on each other")
    args = parser.parse_args()
    if args.threads:
        faiss.omp_set_num_threads(args.threads)

    rng = np.random.default_rng(args.seed)
    centres = rng.standard_normal((args.centres, args.dim), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    vectors = clustered_unit_vectors(rng, centres, args.n, args.spread)
    queries = clustered_unit_vectors(rng, centres, args.queries, args.spread)
    print(f"{args.n} x {args.dim} vectors around {args.centres} centres, "
          f"{args.queries} queries, recall@{args.k} vs flat, "
          f"{faiss.omp_get_max_threads()} faiss threads\n")

    # Flat goes first: it is the reference for recall and latency ratios.
    kinds = ["flat"] + [kind for kind in args.kinds if kind != "flat"]
    rows: List[Dict] = []
    exact = None
    for kind in kinds:
        start = time.perf_counter()
        index = FaissIndex.build(vectors, kind, seed=args.seed)
        build = time.perf_counter() - start
        ids, batched, single = measure(index, queries, args.k)
        exact = ids if exact is None else exact
        rows.append({"kind": kind, "build": build, "batched": batched, "single": single,
                     "recall": recall(ids, exact), "size": len(index.to_bytes()) / 1e6,
                     "params": index.params})
        del index

    flat = rows[0]
    header = (f"{'kind':<6} {'build s':>8} {'batch ms/q':>10} {'x flat':>7} {'single ms':>9} "
              f"{'x flat':>7} {f'recall@{args.k}':>9} {'size MB':>8}  params")
    print(header)
    print("-" * len(header))
    for row in rows:
        if row["kind"] not in args.kinds:
            continue
        print(f"{row['kind']:<6} {row['build']:>8.2f} {row['batched']:>10.3f} "
              f"{row['batched'] / flat['batched']:>7.2f} {row['single']:>9.3f} "
              f"{row['single'] / flat['single']:>7.2f} {row['recall']:>9.3f} "
              f"{row['size']:>8.1f}  {row['params']}")


if __name__ == "__main__":
    main()
