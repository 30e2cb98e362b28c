"""How well a pipeline's `span._.kb_confidence` means what it says: the label-free calibration
(fitted on the KB's own names) for several draws of those names, with the seconds each fit takes, and a calibration fitted on a
labelled dev set, each scored on the gold mentions of the evaluation sets (expected calibration
error over 15 bins, and the share of mentions linked at 95% / 99% precision).

Why: a curator accepts the sure links unread only if "0.95" means 95% right on their texts; the
label-free calibration rests on a random draw of names, so its spread over draws is part of the
figure, and the dev-fitted one says what a labelled dev set buys.

    python bench/confidence_calibration.py training/kb_only/linker --dev corpus/ncbi/dev.spacy \
        --eval corpus/ncbi/test.spacy corpus/bc5cdr/dev.spacy --seeds 0 1 2 --output confidence.json
"""
import argparse
import json
import time
from typing import Dict, List, Tuple

from spacy_arbo.confidence.calibration import fit_calibration
from spacy_arbo.confidence.label_free import label_free_calibration
from spacy_arbo.confidence.metrics import confidence_metrics
from spacy_arbo.cli import load_pipeline
from spacy_arbo.evaluation import gold_mention_outcomes, link_gold_mentions
from spacy_arbo.gold_corpus import read_gold_links
from spacy_arbo.pipeline.link_confidence import ConfidenceFeatures, pipeline_linker

KEYS = ("confidence_ece", "coverage_at_precision_95", "coverage_at_precision_99")


def gold_links(nlp, path: str, features: ConfidenceFeatures) -> Tuple[List[List[float]], List[bool], int]:
    """Features of each link the pipeline makes on the gold mentions of `path`, whether it is
    right (the exact id set), and how many mentions there are."""
    gold = read_gold_links(path, nlp)
    spans, right = gold_mention_outcomes(link_gold_mentions(nlp, gold), gold)
    return features(spans), right, sum(len(doc.ents) for doc in gold)


def scored(calibration, links: Tuple[List[List[float]], List[bool], int]) -> Dict[str, float]:
    rows, right, n = links
    confidence = list(calibration(rows)) + [None] * (n - len(rows))
    metrics = confidence_metrics(confidence, right + [False] * (n - len(rows)))
    return {key: round(metrics[key], 4) for key in KEYS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline")
    parser.add_argument("--dev", required=True, help="labelled .spacy: fits the dev calibration")
    parser.add_argument("--eval", nargs="+", required=True, help="labelled .spacy files to score on")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="draws of the KB's names")
    parser.add_argument("--output", help="write the figures as JSON here")
    args = parser.parse_args()

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
    calibration = fit_calibration(dev[0], dev[1], "dev")
    rows.append({"calibration": f"dev ({args.dev})", "seed": None, **{p: scored(calibration, s) for p, s in sets.items()}})

    print(f"| calibration | seed | {' | '.join(f'{p} ECE | cov@95 | cov@99' for p in args.eval)} |")
    print(f"|---|---:|{'---:|---:|---:|' * len(args.eval)}")
    for row in rows:
        cells = " | ".join(f"{row[p][k]:.3f}" for p in args.eval for k in KEYS)
        print(f"| {row['calibration']} | {'' if row['seed'] is None else row['seed']} | {cells} |")
    if args.output:
        with open(args.output, "w", encoding="utf8") as out:
            json.dump({"pipeline": args.pipeline, "rows": rows}, out, indent=2)


if __name__ == "__main__":
    main()
