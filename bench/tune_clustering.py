r"""Tune clustering-based linking (lambda = -min_similarity, per graph) on a dev set.

Links the dev mentions independently, then with clustering for each graph and each
threshold, and prints accuracy, recall@1 and the mention-clustering ARI of every
setting, with the best threshold per graph last. Use the printed `--set` flags with
`python -m spacy_arbo evaluate` on the test set.

Why: `min_similarity` (ArboEL's lambda) depends on the scale of the retriever's scores, so
it is chosen on dev for each retriever, never on test.

    python bench/tune_clustering.py training/ncbi/retriever/model-best corpus/ncbi/dev.spacy \
        --set index_aliases=true --thresholds none 0.6 0.7 0.8
"""
import argparse
import json
import sys
from typing import Optional

import spacy

from spacy_arbo.cli import apply_settings, reporting_errors
from spacy_arbo.corpora import read_docbin
from spacy_arbo.evaluation import evaluate_linking
from spacy_arbo.linking.clustering import GRAPHS
from spacy_arbo.pipeline.arbo_linker import arbo_linkers


def threshold(text: str) -> Optional[float]:
    return None if text.lower() in ("none", "inf") else float(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline")
    parser.add_argument("dev", help=".spacy DocBin with gold kb ids")
    parser.add_argument("--thresholds", nargs="+", type=threshold, default=[None, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85],
                        help="min_similarity values ('none' keeps every edge, lambda = inf)")
    parser.add_argument("--graphs", nargs="+", choices=GRAPHS, default=list(GRAPHS))
    parser.add_argument("--knn-mentions", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=64, help="docs clustered together")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="arbo_linker setting applied first, as for `evaluate --set`, e.g. index_aliases=true")
    parser.add_argument("--output", help="write every row as JSON here")
    args = parser.parse_args()

    nlp = spacy.load(args.pipeline)
    linkers = arbo_linkers(nlp)
    apply_settings(linkers, args.set)
    linker = linkers[0]
    docs = read_docbin(args.dev, nlp.vocab)

    rows = []

    def run(**settings) -> None:
        linker.configure(**settings)
        metrics = evaluate_linking(nlp, docs, batch_size=args.batch_size)
        rows.append({**settings, **{k: metrics.get(k) for k in ("accuracy", "recall@1", "ari", "nil_r")}})
        row = rows[-1]
        ari = "-" if row["ari"] is None else f"{row['ari']:.3f}"
        print(f"| {settings.get('graph', '-')} | {settings.get('min_similarity', '-')} | {row['accuracy']:.3f} | "
              f"{row['recall@1']:.3f} | {ari} |", flush=True)

    print(f"{len(docs)} docs, knn_mentions {args.knn_mentions}, batches of {args.batch_size} docs\n")
    print("| graph | min_similarity | accuracy | recall@1 | ARI |\n|---|---|---|---|---|")
    run(linking="independent")
    for graph in args.graphs:
        for value in args.thresholds:
            run(linking="clustering", graph=graph, knn_mentions=args.knn_mentions, min_similarity=value)
    for graph in args.graphs:
        best = max((r for r in rows if r.get("graph") == graph), key=lambda r: r["accuracy"])
        flag = "" if best["min_similarity"] is None else f" --set min_similarity={best['min_similarity']}"
        print(f"best {graph}: accuracy {best['accuracy']:.3f} with --set linking=clustering "
              f"--set graph={graph} --set knn_mentions={args.knn_mentions}{flag}")
    if args.output:
        with open(args.output, "w", encoding="utf8") as file:
            json.dump(rows, file, indent=1)


if __name__ == "__main__":
    sys.exit(reporting_errors(main))
