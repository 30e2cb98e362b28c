"""ArboEL clustering-based linking on synthetic clustered mentions: time, accuracy and NIL clusters.

Concepts are random unit centres; the KB holds an entity near each of the first
--entities centres, while --unseen more concepts have no entity, so their mentions
should come out as NIL clusters (discovered entities). Mentions scatter around their
concept's centre, entities a little further off, so a mention's nearest entity is
often wrong or below the threshold and its neighbours have to carry the link. The kNN
graph (FAISS) and the nearest entity (brute force) are timed apart from the
partition itself, which runs "independent" (k = 0), directed and undirected.
Columns: accuracy on mentions of KB concepts, share of unseen-concept mentions left
NIL, and the adjusted Rand index against the concepts (all mentions / unseen only).

Why: `linking = "clustering"` partitions a graph over every mention of a batch, so its cost
must stay small next to encoding as batches grow, and mentions of concepts the KB lacks must
end up in NIL clusters of their own.

    python bench/clustering_bench.py --n 100000 --k 8 --entities 5000
"""
import argparse
import time

import faiss
import numpy as np

from spacy_arbo.linking.clustering import GRAPHS, adjusted_rand_index, partition
from spacy_arbo.retrieval.faiss_index import KINDS, FaissIndex
from spacy_arbo.retrieval.retriever import exact_search


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="mentions")
    parser.add_argument("--k", type=int, default=8, help="nearest mentions per mention")
    parser.add_argument("--entities", type=int, default=5000, help="concepts in the KB")
    parser.add_argument("--unseen", type=int, default=500, help="concepts missing from the KB")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--spread", type=float, default=0.07,
                        help="per-dimension noise std of mentions around their concept")
    parser.add_argument("--entity-spread", type=float, default=0.14,
                        help="the same for entity vectors: entities sit off their mentions")
    parser.add_argument("--min-similarity", type=float, default=0.6,
                        help="keep edges at least this similar (= -lambda)")
    parser.add_argument("--index", default="flat", choices=KINDS, help="FAISS index for the kNN")
    parser.add_argument("--threads", type=int, default=None, help="faiss OpenMP threads")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.threads:
        faiss.omp_set_num_threads(args.threads)

    rng = np.random.default_rng(args.seed)
    centres = unit_rows(rng.standard_normal((args.entities + args.unseen, args.dim)))
    concept = rng.integers(len(centres), size=args.n)
    mentions = unit_rows(centres[concept] + args.spread * rng.standard_normal((args.n, args.dim)))
    entities = unit_rows(centres[:args.entities]
                         + args.entity_spread * rng.standard_normal((args.entities, args.dim)))
    seen = concept < args.entities
    print(f"{args.n} mentions of {len(centres)} concepts ({args.entities} in the KB, "
          f"{(~seen).sum()} mentions of unseen ones), dim {args.dim}, k {args.k}, "
          f"min_similarity {args.min_similarity}\n")

    start = time.perf_counter()
    index = FaissIndex.build(mentions, args.index, seed=args.seed)
    # k + 1: each mention finds itself first; partition skips self-matches.
    knn_similarities, knn_indices = index.search(mentions, args.k + 1)
    knn_seconds = time.perf_counter() - start
    start = time.perf_counter()
    nearest, nearest_similarity = exact_search(mentions, entities, 1)
    entity_seconds = time.perf_counter() - start
    print(f"kNN graph ({args.index}): {knn_seconds:.1f} s; "
          f"nearest entity: {entity_seconds:.1f} s\n")

    print(f"{'graph':<12}{'partition s':>12}{'clusters':>10}{'NIL clust':>10}"
          f"{'acc seen':>10}{'NIL unseen':>11}{'ARI all':>9}{'ARI unseen':>11}")
    empty = (np.empty((args.n, 0), dtype=np.int64), np.empty((args.n, 0)))
    for name, graph, knn in [("independent", "directed", empty)] + [
            (graph, graph, (knn_indices, knn_similarities)) for graph in GRAPHS]:
        start = time.perf_counter()
        result = partition(*knn, nearest[:, 0], nearest_similarity[:, 0], graph=graph,
                           min_similarity=args.min_similarity)
        seconds = time.perf_counter() - start
        accuracy = np.mean(result.entity[seen] == concept[seen])
        nil_rate = np.mean(result.entity[~seen] < 0)
        ari_all = adjusted_rand_index(concept, result.cluster)
        ari_unseen = adjusted_rand_index(concept[~seen], result.cluster[~seen])
        print(f"{name:<12}{seconds:>12.2f}{result.n_clusters:>10}{result.nil_clusters:>10}"
              f"{accuracy:>10.3f}{nil_rate:>11.3f}{ari_all:>9.3f}{ari_unseen:>11.3f}")


if __name__ == "__main__":
    main()
