"""How well a pipeline's `span._.kb_confidence` means what it says: the label-free calibration
(fitted on the KB's own names) for several draws of those names, with the seconds each fit takes, and a calibration fitted on a
labelled dev set, each scored on the gold mentions of the evaluation sets (expected calibration
error over 15 bins, and the share of mentions linked at 95% / 99% precision). With `--folds K`, the
dev calibration is also cross-fitted: the dev documents split into K folds, each scored by a
calibration fitted on the others (for a corpus whose evaluation set is its dev set, as BC5CDR's
here, where the workflow's `calibrate` fits and is scored on the same mentions).

Why: a curator accepts the sure links unread only if "0.95" means 95% right on their texts; the
label-free calibration rests on a random draw of names, so its spread over draws is part of the
figure, and the dev-fitted one says what a labelled dev set buys.

    python bench/confidence_calibration.py training/kb_only/linker --dev corpus/ncbi/dev.spacy \
        --eval corpus/ncbi/test.spacy corpus/bc5cdr/dev.spacy --seeds 0 1 2 --output confidence.json
    python bench/confidence_calibration.py training/bc5cdr/final --dev corpus/bc5cdr/dev.spacy \
        --eval corpus/bc5cdr/dev.spacy --folds 5 --output confidence.json
"""
import argparse
import json
import time
from typing import Dict, List, NamedTuple

import numpy as np

from spacy_arbo.confidence.calibration import fit_calibration
from spacy_arbo.confidence.label_free import label_free_calibration
from spacy_arbo.confidence.metrics import confidence_metrics
from spacy_arbo.cli import load_pipeline
from spacy_arbo.evaluation import gold_mention_outcomes, link_gold_mentions
from spacy_arbo.gold_corpus import read_gold_links
from spacy_arbo.pipeline.link_confidence import ConfidenceFeatures, pipeline_linker

KEYS = ("confidence_ece", "coverage_at_precision_95", "coverage_at_precision_99")


class Links(NamedTuple):
    rows: List[List[float]]  # the features of each link
    right: List[bool]  # whether it is the exact gold id set
    docs: List[int]  # the index of its document
    n_mentions: int  # the gold mentions, linked or not


def gold_links(nlp, path: str, features: ConfidenceFeatures) -> Links:
    """The links the pipeline makes on the gold mentions of `path`."""
    gold = read_gold_links(path, nlp)
    predicted = link_gold_mentions(nlp, gold)
    spans, right = gold_mention_outcomes(predicted, gold)
    doc_index = {id(doc): i for i, doc in enumerate(predicted)}
    return Links(features(spans), right, [doc_index[id(span.doc)] for span in spans],
                 sum(len(doc.ents) for doc in gold))


def metrics_of(confidence: List[float], links: Links) -> Dict[str, float]:
    """The confidence metrics over every gold mention (an unlinked one is a wrong link with no confidence)."""
    unlinked = links.n_mentions - len(links.rows)
    metrics = confidence_metrics(list(confidence) + [None] * unlinked, list(links.right) + [False] * unlinked)
    return {key: round(metrics[key], 4) for key in KEYS}


def scored(calibration, links: Links) -> Dict[str, float]:
    return metrics_of(list(calibration(links.rows)), links)


def cross_fitted(links: Links, folds: int) -> Dict[str, float]:
    """Each fold of documents (every `folds`-th) scored by a calibration fitted on the other folds."""
    fold = np.asarray(links.docs) % folds
    confidence = np.zeros(len(links.rows))
    rows, right = np.asarray(links.rows), np.asarray(links.right)
    for k in range(folds):
        held_out = fold == k
        if held_out.any():
            calibration = fit_calibration(rows[~held_out].tolist(), right[~held_out].tolist(), "dev")
            confidence[held_out] = calibration(rows[held_out].tolist())
    return metrics_of(confidence.tolist(), links)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline")
    parser.add_argument("--dev", required=True, help="labelled .spacy: fits the dev calibration")
    parser.add_argument("--eval", nargs="+", required=True, help="labelled .spacy files to score on")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="draws of the KB's names")
    parser.add_argument("--folds", type=int, default=0,
                        help="also cross-fit the dev calibration over this many folds of dev documents")
    parser.add_argument("--output", help="write the figures as JSON here")
    args = parser.parse_args()
    if args.folds == 1 or args.folds < 0:
        parser.error(f"--folds takes 2 or more folds (0: no cross-fit); got {args.folds}")

    nlp = load_pipeline(args.pipeline)
    linker = pipeline_linker(nlp, args.pipeline)
    features = ConfidenceFeatures(nlp, linker)
    dev = gold_links(nlp, args.dev, features)
    sets = {path: gold_links(nlp, path, features) for path in args.eval}
    kb = linker.require_retriever().kb
    rows = []
    for seed in args.seeds:
        start = time.perf_counter()
        calibration = label_free_calibration(kb, nlp.vocab, nlp.make_doc, lambda docs: list(linker.pipe(docs)),
                                             features, seed=seed)
        rows.append({"calibration": "label-free", "seed": seed, "fit_seconds": round(time.perf_counter() - start, 1),
                     **{p: scored(calibration, s) for p, s in sets.items()}})
    calibration = fit_calibration(dev.rows, dev.right, "dev")
    rows.append({"calibration": f"dev ({args.dev})", "seed": None, **{p: scored(calibration, s) for p, s in sets.items()}})
    if args.folds > 1:
        rows.append({"calibration": f"dev ({args.dev}), cross-fitted over {args.folds} folds", "seed": None,
                     args.dev: cross_fitted(dev, args.folds)})

    print(f"| calibration | seed | {' | '.join(f'{p} ECE | cov@95 | cov@99' for p in args.eval)} |")
    print(f"|---|---:|{'---:|---:|---:|' * len(args.eval)}")
    for row in rows:
        cells = " | ".join(f"{row[p][k]:.3f}" if p in row else "" for p in args.eval for k in KEYS)
        print(f"| {row['calibration']} | {'' if row['seed'] is None else row['seed']} | {cells} |")
    if args.output:
        with open(args.output, "w", encoding="utf8") as out:
            json.dump({"pipeline": args.pipeline, "rows": rows}, out, indent=2)


if __name__ == "__main__":
    main()
