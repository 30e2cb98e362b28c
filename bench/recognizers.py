"""Recognizers side by side in one process: mention F, docs/s, size on disk and load time.

Each PIPELINE finds the mentions of the raw texts of DOCS (its components up to and including
the last one that finds mentions; linking components after it do not run), REPEATS times in
turn; the fastest pass counts. Spans are scored exactly, labels aside (a linker needs the
mentions, not their types). Size is the pipeline folder's bytes; load time is `spacy.load`'s
fastest of REPEATS.

With --consistency-shares, each recognizer's mentions also go through a `mention_consistency` at
each `min_share` (1 adds short forms only: every text is then labelled at all its occurrences
already), scored the same way.

Why: the transformer recognizer is meant to buy accuracy with speed and size; only figures taken
in one run on one machine say what it costs against the CNN.

    python bench/recognizers.py training/ncbi/ner/model-best training/ncbi/ner_trf/model-best \\
        --docs corpus/ncbi/test.spacy [--repeats 2] [--consistency-shares 1 0.5 0.35 0.2] [--output recognizers.json]
"""
import argparse
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, List

import srsly
from spacy.scorer import PRFScore
from spacy.tokens import Doc

from spacy_arbo.corpora import read_docbin
from spacy_arbo.evaluation import mention_spans, recognizer_position, run_components
from spacy_arbo.pipeline_loading import load_pipeline
from spacy_arbo.pipeline.mention_consistency import MentionConsistency


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def scored(found: List[Doc], gold: List[Doc]) -> Dict[str, float]:
    prf = PRFScore()
    prf.score_set(mention_spans(found), mention_spans(gold))
    return {"ner_p": prf.precision, "ner_r": prf.recall, "ner_f": prf.fscore}


def measure(path: str, docs_path: str, repeats: int, shares: List[float]) -> Dict[str, Any]:
    load_seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        nlp = load_pipeline(path)
        load_seconds.append(time.perf_counter() - start)
    gold = read_docbin(docs_path, nlp.vocab)
    finders = nlp.pipe_names[: recognizer_position(nlp) + 1]
    seconds, found = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        found = list(run_components(nlp, finders, (nlp.make_doc(doc.text) for doc in gold)))
        seconds.append(time.perf_counter() - start)
    consistency = []
    for share in shares:
        pipe = MentionConsistency(nlp.vocab, min_share=share)
        copies = [doc.copy() for doc in found]
        start = time.perf_counter()
        made_consistent = [pipe(doc) for doc in copies]
        consistency.append({"min_share": share, **scored(made_consistent, gold),
                            "seconds": time.perf_counter() - start})
    return {"pipeline": path, "components": finders, **scored(found, gold), "consistency": consistency,
            "docs": len(gold), "docs_per_second": len(gold) / min(seconds),
            "megabytes": folder_bytes(Path(path)) / 1e6, "load_seconds": min(load_seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipelines", nargs="+")
    parser.add_argument("--docs", required=True, help=".spacy DocBin with gold mentions")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--consistency-shares", nargs="*", type=float, default=[], metavar="SHARE",
                        help="also score each recognizer's mentions after a mention_consistency at these min_share")
    parser.add_argument("--output", help="write the figures as JSON here")
    args = parser.parse_args()
    rows: List[Dict[str, Any]] = [measure(path, args.docs, args.repeats, args.consistency_shares)
                                  for path in args.pipelines]
    print("| recognizer | P | R | F | docs/s | MB | load s |\n|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['pipeline']} | {row['ner_p']:.3f} | {row['ner_r']:.3f} | {row['ner_f']:.3f} | "
              f"{row['docs_per_second']:.1f} | {row['megabytes']:.1f} | {row['load_seconds']:.2f} |")
        for variant in row["consistency"]:
            print(f"| + mention_consistency, min_share {variant['min_share']:g} | {variant['ner_p']:.3f} | "
                  f"{variant['ner_r']:.3f} | {variant['ner_f']:.3f} | | | |")
    if args.output:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        srsly.write_json(args.output, {"docs": args.docs, "commit": commit, "rows": rows})


if __name__ == "__main__":
    main()
