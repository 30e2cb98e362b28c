"""Discovery at corpus scale: `propose_entities` over synthetic NIL mentions the size of a large
`link` run, with a KB the size of CTD's diseases, in one process on this machine's cores.

Concepts are random unit centres in the MiniLM's 384 dimensions; the KB holds an entity near each of
the first --entities (a random tree over them gives parents), and --unseen more concepts have no
entity. Every mention is NIL (what `link` left NIL), drawn around its concept: those of KB concepts
should reach their entity, those of unseen ones come out as proposals. Each size runs the product's
path: the nearest KB entities (FAISS), the mentions joined by their texts (`same_entity_pairs`:
each concept's mentions are written alike here), the k-nearest-neighbour graph over the mentions (exact FAISS
search), the partition, the proposals with their parents, the JSONL and the HTML page; times per
stage, the process's peak resident memory, and ARI of the unseen concepts' mentions. Beside the
largest size, the kNN graph that discovery builds by exact search is built again with an HNSW index
(`FaissIndex` kind "hnsw"), timed, with the share of the exact neighbours it finds.

Why: a curator runs discovery over a whole corpus's NIL mentions, never all pairs: its cost must
grow with the kNN search, not with the square of the mentions in memory, and fit 2 cores.

    python bench/discovery_scale.py --sizes 10000 30000 100000 --hnsw \\
        --output bench/results/out_of_kb/discovery_scale.json
"""
import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from spacy_arbo.discovery import NilMention, propose_entities, write_proposal_page, write_proposals
from spacy_arbo.discovery.corpus_discovery import same_entity_pairs
from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.linking.clustering import adjusted_rand_index
from spacy_arbo.retrieval.faiss_index import FaissIndex
from spacy_arbo.retrieval.retriever import exact_search

from clustering_bench import unit_rows


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def hnsw_side_by_side(vectors: np.ndarray, k: int) -> dict:
    """The exact kNN graph (what discovery builds) against an HNSW graph of the same vectors."""
    start = time.perf_counter()
    exact, _ = exact_search(vectors, vectors, k, exclude_self=True)
    exact_s = time.perf_counter() - start
    start = time.perf_counter()
    _, found = FaissIndex.build(vectors, "hnsw").search(vectors, k + 1)
    hnsw_s = time.perf_counter() - start
    recall = np.mean([len(set(a) & set(b)) / k for a, b in zip(exact.tolist(), found.tolist())])
    return {"mentions": len(vectors), "exact_knn_s": round(exact_s, 1), "hnsw_build_and_search_s": round(hnsw_s, 1),
            "hnsw_over_exact": round(hnsw_s / exact_s, 2), "hnsw_recall_of_exact": round(float(recall), 4)}


def run(n: int, args: argparse.Namespace, rng: np.random.Generator) -> dict:
    centres = unit_rows(rng.standard_normal((args.entities + args.unseen, args.dim)))
    parents = rng.integers(0, np.maximum(1, np.arange(args.entities)))  # entity i under an earlier one
    kb = EntityStore([Entity(f"E:{i}", f"entity {i}", parents=(f"E:{parents[i]}",) if i else ())
                      for i in range(args.entities)])
    entities = unit_rows(centres[:args.entities] + args.entity_spread * rng.standard_normal((args.entities, args.dim)))
    concept = rng.integers(len(centres), size=n)
    vectors = unit_rows(centres[concept] + args.spread * rng.standard_normal((n, args.dim)))
    mentions = [NilMention(f"doc{i // 10}", 0, 8, f"mention of {c}", "Disease", "", "") for i, c in enumerate(concept)]
    times = {}
    start = time.perf_counter()
    index = FaissIndex.build(entities, "flat")
    scores, rows = index.search(vectors, 5)  # one vector per entity: distinct, as nearest_entity_scores gives
    nearest = (rows, scores)
    times["nearest_entities_s"] = time.perf_counter() - start
    start = time.perf_counter()
    pairs = same_entity_pairs(mentions, kb)
    times["same_entity_pairs_s"] = time.perf_counter() - start
    start = time.perf_counter()
    found = propose_entities(mentions, vectors, kb, nearest, min_similarity=args.min_similarity,
                             knn_mentions=args.k, min_size=2, same_entity=pairs)
    times["cluster_and_propose_s"] = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        write_proposals(found, Path(tmp) / "new.jsonl")
        write_proposal_page("scale", found, Path(tmp) / "new.html")
        times["write_s"] = time.perf_counter() - start
        sizes = {"jsonl_mib": (Path(tmp) / "new.jsonl").stat().st_size / 2**20,
                 "html_mib": (Path(tmp) / "new.html").stat().st_size / 2**20}
    unseen = concept >= args.entities
    assigned = np.array(found.assigned)
    row = {
        "mentions": n, **{k: round(v, 2) for k, v in times.items()},
        "total_s": round(sum(times.values()), 2), "peak_rss_mib": round(peak_mib()),
        "proposals": len(found.proposals), **{k: round(v, 1) for k, v in sizes.items()},
        "unseen_mentions": int(unseen.sum()),
        "ari_unseen": round(adjusted_rand_index(concept[unseen], assigned[unseen]), 4),
        "seen_reach_their_entity": round(float(np.mean(assigned[~unseen] == [f"E:{c}" for c in concept[~unseen]])), 4),
    }
    if args.hnsw and n == max(args.sizes):
        row["hnsw"] = hnsw_side_by_side(vectors, args.k)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 30_000, 100_000])
    parser.add_argument("--entities", type=int, default=13_000, help="KB entities (CTD diseases: about 13,000)")
    parser.add_argument("--unseen", type=int, default=2_000, help="concepts the KB lacks")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=8, help="nearest mentions per mention (the linker's knn_mentions)")
    parser.add_argument("--spread", type=float, default=0.01, help="per-dimension noise of mentions")
    parser.add_argument("--entity-spread", type=float, default=0.005, help="the same for entity vectors")
    parser.add_argument("--min-similarity", type=float, default=0.9)
    parser.add_argument("--hnsw", action="store_true", help="at the largest size, an HNSW kNN graph beside the exact one")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", help="write the figures as JSON here")
    args = parser.parse_args()
    rows = []
    print(f"start: peak RSS {peak_mib():.0f} MiB")
    for n in sorted(args.sizes):
        rows.append(run(n, args, np.random.default_rng(args.seed)))
        print(json.dumps(rows[-1]))
    base = rows[0]
    for row in rows[1:]:
        print(f"{row['mentions']:,} vs {base['mentions']:,} mentions ({row['mentions'] / base['mentions']:.0f}x): "
              f"cluster_and_propose {row['cluster_and_propose_s'] / base['cluster_and_propose_s']:.1f}x, "
              f"total {row['total_s'] / base['total_s']:.1f}x")
    if args.output:
        Path(args.output).write_text(json.dumps({"args": vars(args), "rows": rows}, indent=2) + "\n", encoding="utf8")


if __name__ == "__main__":
    main()
