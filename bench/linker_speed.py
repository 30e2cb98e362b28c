"""Mentions per second of `nlp.pipe` with each candidate source, on NCBI Disease test + CTD.

Every system links the same gold mentions against the same KB in one process; the table
gives mentions/s and the ratio to the TF-IDF baseline, plus recall@1/@64 as a sanity
check that each system does real work.

Why: `candidate_source` (TF-IDF, dense, hybrid) trades accuracy for speed; the ratio to
TF-IDF on the same machine says what the dual encoder costs.

    python bench/linker_speed.py [--data DIR] [--kb-limit N] [--repeats 3]
"""
import argparse
import os
import time
from pathlib import Path

import spacy
from spacy.training import Example

from spacy_arbo.corpora import convert_corpus
from spacy_arbo.pipeline.common.gold_ents import strip_links
from spacy_arbo.kb.readers import read_kb
from spacy_arbo.pipeline.linker.earlier_defaults import EARLIER_DEFAULTS  # the linker these systems vary
from spacy_arbo.scoring import mention_outcomes, recall_at_k

SYSTEMS = {
    "tfidf": {"candidate_source": "tfidf"},
    "dense-hashed": {"model": {
        "@architectures": "spacy_arbo.DualEncoder.v1",
        "mention_tower": {"@architectures": "spacy_arbo.HashedNgramTower.v1"},
    }},
    "dense-minilm": {},
    "hybrid-minilm": {"candidate_source": "hybrid"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_data = os.environ.get("SPACY_ARBO_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--data", default=default_data)
    parser.add_argument("--kb-limit", type=int, default=0, help="use only the first N KB entities (0: all)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS))
    args = parser.parse_args()
    data = Path(args.data)

    kb = read_kb(data / "ctd" / "CTD_diseases_2017-06-06.tsv.gz", "ctd")
    if args.kb_limit:
        keep = set(kb.ids[: args.kb_limit])
        kb = kb.subset(lambda e: e.id in keep)
    gold, _ = convert_corpus(data / "ncbi_disease" / "NCBItestset_corpus.txt", kb=kb)
    n_mentions = sum(len(d.ents) for d in gold)
    print(f"KB: {len(kb):,} entities; NCBI test: {len(gold)} docs, {n_mentions} mentions; "
          f"torch threads: {__import__('torch').get_num_threads()}")

    rows = []
    for name in args.systems:
        nlp = spacy.blank("en")
        linker = nlp.add_pipe("arbo_linker", config={"batch_size": args.batch_size, **EARLIER_DEFAULTS, **SYSTEMS[name]})
        linker.set_kb(kb)
        started = time.perf_counter()
        nlp.initialize()
        init_seconds = time.perf_counter() - started
        timings = []
        for _ in range(args.repeats):
            docs = [strip_links(d) for d in gold]
            started = time.perf_counter()
            predicted = list(nlp.pipe(docs, batch_size=args.batch_size))
            timings.append(time.perf_counter() - started)
        recall = recall_at_k(mention_outcomes(Example(p, g) for p, g in zip(predicted, gold)), (1, 64))
        rows.append((name, init_seconds, n_mentions / min(timings), recall[1], recall[64]))

    baseline = next((r[2] for r in rows if r[0] == "tfidf"), rows[0][2])
    print(f"\n{'system':<15}{'init s':>9}{'mentions/s':>12}{'x tfidf':>9}{'R@1':>8}{'R@64':>8}")
    for name, init_s, speed, r1, r64 in rows:
        print(f"{name:<15}{init_s:>9.1f}{speed:>12.1f}{speed / baseline:>9.2f}{r1:>8.3f}{r64:>8.3f}")


if __name__ == "__main__":
    main()
