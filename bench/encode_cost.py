"""What no-gradient encoding costs in fp32, bf16 and int8 (`precision`), side by side in
one process, with what each precision gives on NCBI Disease test + CTD.

PIPELINE is a trained arbo_linker pipeline (e.g. the workflow's
`training/ncbi/retriever/model-best`). For each `precision:batch_size` setting, the KB is
encoded with entity names only and with names + aliases (texts/s), and the test mentions
are linked against each index (mentions/s, recall@1 / @64, any-id and strict accuracy).
Ratios are against the first setting (fp32, batch 64) on the same index. The first int8
setting's KB time includes exporting and quantizing the encoder (once per set of weights).

Why: which `precision` and `batch_size` pay depends on the CPU's instructions and on the
model, so speed and accuracy are measured together on the machine and pipeline at hand.

    python bench/encode_cost.py PIPELINE [--data DIR] [--settings fp32:64 bf16:64 int8:64 int8:128]
        [--output bench_encode_cost.json]
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import spacy

from spacy_arbo.cli import reporting_errors
from spacy_arbo.corpora import convert_corpus
from spacy_arbo.evaluation import evaluate_linking

ROOT = Path(__file__).resolve().parents[1]


def measure(nlp, gold, precision: str, batch_size: int, index_aliases: bool) -> Dict[str, Any]:
    linker = nlp.get_pipe("arbo_linker")
    linker.configure(precision=precision, batch_size=batch_size, index_aliases=index_aliases)
    retriever = linker.retriever
    texts = len(retriever.entity_texts()[0])
    started = time.perf_counter()
    linker.refresh_index(progress=False)
    encode_seconds = time.perf_counter() - started
    metrics = evaluate_linking(nlp, gold)
    return {
        "precision": precision, "batch_size": batch_size, "index_aliases": index_aliases, "kb_texts": texts,
        "kb_encode_seconds": encode_seconds, "kb_texts_per_second": texts / encode_seconds,
        **{key: metrics[key] for key in ("recall@1", "recall@64", "accuracy", "accuracy_strict",
                                         "mentions_per_second")},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline")
    default_data = os.environ.get("SPACY_ARBO_DATA", str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--data", default=default_data)
    parser.add_argument("--settings", nargs="+", default=["fp32:64", "bf16:64", "int8:64", "int8:128"],
                        help="precision:batch_size pairs, the first one the baseline")
    parser.add_argument("--output", default="bench_encode_cost.json")
    args = parser.parse_args()
    nlp = spacy.load(args.pipeline)
    # Dense candidates only: the TF-IDF side of a hybrid pipeline costs the same in both.
    linker = nlp.get_pipe("arbo_linker")
    linker.configure(candidate_source="dense", sparse_weight=None)
    gold, _ = convert_corpus(Path(args.data) / "ncbi_disease" / "NCBItestset_corpus.txt", kb=linker.kb)
    evaluate_linking(nlp, gold[:5])  # warm-up: tokenizer, FAISS and thread pools
    settings = [(precision, int(size)) for precision, size in (s.split(":") for s in args.settings)]
    rows: List[Dict[str, Any]] = []
    for index_aliases in (False, True):
        for precision, batch_size in settings:
            rows.append(measure(nlp, gold, precision, batch_size, index_aliases))
            print(json.dumps(rows[-1]), flush=True)
    base = {r["index_aliases"]: r for r in rows[:: len(settings)]}
    print("\n| index | precision | batch | KB texts/s | x | R@1 | R@64 | acc | acc strict | mentions/s | x |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        b = base[r["index_aliases"]]
        print(f"| {'names + aliases' if r['index_aliases'] else 'names'} ({r['kb_texts']:,}) | {r['precision']} | "
              f"{r['batch_size']} | {r['kb_texts_per_second']:.0f} | "
              f"{r['kb_texts_per_second'] / b['kb_texts_per_second']:.2f} | {r['recall@1']:.3f} | "
              f"{r['recall@64']:.3f} | {r['accuracy']:.3f} | {r['accuracy_strict']:.3f} | "
              f"{r['mentions_per_second']:.1f} | {r['mentions_per_second'] / b['mentions_per_second']:.2f} |")
    Path(args.output).write_text(json.dumps(rows, indent=2))
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    sys.exit(reporting_errors(main))
