"""Raw text to `kb_id_` side by side in one process: docs/s, NER F and end-to-end F of pipelines.

Each PIPELINE reads the raw texts of DOCS with every component (recognizer, linker, memory,
filters), as `python -m spacy_arbo evaluate --end-to-end` does; the pipelines take turns, REPEATS
times, and each one's fastest pass counts. A PIPELINE may carry settings after a colon:
arbo_linker settings (`kb_names_first=true`) and `recognizer_precision=auto|fp32|bf16`, which
loads its transformer recognizer under spacy_arbo.Tok2VecTransformer.v1 at that precision (as
`configure --recognizer-precision` stores it), so one saved package is measured before and after.

Why: speeds differ between machines of one model, so only figures taken in one run compare, and
a change meant to save time must be shown to leave the mentions and links as they were.

    python bench/raw_text_speed.py training/ncbi/e2e training/ncbi/e2e:kb_names_first=true,recognizer_precision=auto \\
        --docs corpus/ncbi/test.spacy [--repeats 3] [--output raw_text_speed.json]
"""
import argparse
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import srsly
from spacy.util import load_config

from spacy_arbo.cli.settings import apply_settings
from spacy_arbo.corpora import read_docbin
from spacy_arbo.encoders.recognizer_transformer import precision_overrides
from spacy_arbo.evaluation import evaluate_end_to_end, load_pipeline
from spacy_arbo.pipeline.arbo_linker import arbo_linkers

SCORES = ("ner_p", "ner_r", "ner_f", "e2e_p", "e2e_r", "e2e_f", "e2e_any_id_f")


def load(spec: str):
    path, _, settings = spec.partition(":")
    pairs = [item for item in settings.split(",") if item]
    precision = [item.partition("=")[2] for item in pairs if item.startswith("recognizer_precision=")]
    linker_settings = [item for item in pairs if not item.startswith("recognizer_precision=")]
    overrides = precision_overrides(load_config(Path(path) / "config.cfg"), precision[-1]) if precision else None
    nlp = load_pipeline(path, overrides)
    if linker_settings:
        apply_settings(arbo_linkers(nlp), linker_settings)
    return nlp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipelines", nargs="+", help="PATH[:setting=value,...]; the first is the baseline")
    parser.add_argument("--docs", required=True, help=".spacy file with gold mentions and ids (e.g. corpus/ncbi/test.spacy)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--output", help="write the figures as JSON")
    args = parser.parse_args()

    pipelines = [load(spec) for spec in args.pipelines]
    gold = [read_docbin(args.docs, nlp.vocab) for nlp in pipelines]
    rows: List[Dict[str, Any]] = [{"pipeline": spec, "docs_per_second": 0.0} for spec in args.pipelines]
    for _ in range(args.repeats):
        for row, nlp, docs in zip(rows, pipelines, gold):
            metrics = evaluate_end_to_end(nlp, docs, args.batch_size)
            row["docs_per_second"] = max(row["docs_per_second"], metrics["docs_per_second"])
            row.update({key: metrics[key] for key in SCORES})
    for row in rows:
        row["ratio_to_first"] = row["docs_per_second"] / rows[0]["docs_per_second"]

    print(f"{args.docs}: {len(gold[0])} docs; fastest of {args.repeats} passes each")
    print(f"{'pipeline':<70} {'docs/s':>7} {'x first':>8} {'NER F':>6} {'e2e F':>6} {'any-id':>7}")
    for row in rows:
        print(f"{row['pipeline']:<70} {row['docs_per_second']:>7.1f} {row['ratio_to_first']:>8.2f} "
              f"{row['ner_f']:>6.3f} {row['e2e_f']:>6.3f} {row['e2e_any_id_f']:>7.3f}")
    if args.output:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        srsly.write_json(args.output, {"commit": commit, "docs": args.docs, "repeats": args.repeats, "rows": rows})
        print(f"\nWrote {Path(args.output)}")


if __name__ == "__main__":
    main()
