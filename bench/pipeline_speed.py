"""Speed and accuracy of trained pipelines on one corpus, side by side in one process: linking gold
mentions (mentions/s), or raw text end to end (docs/s).

Each pipeline links the gold mentions of DOCS as `python -m spacy_arbo evaluate` does; the
pipelines take turns, REPEATS times, and each one's fastest pass counts. The table gives
mentions/s, the ratio to the first pipeline (list the TF-IDF baseline first), strict accuracy,
and how many `kb_id_` differ from the second pipeline's (list a variant right after what it
changes). A PIPELINE may carry settings after a colon: arbo_linker settings
(`training/ncbi/final:memory_first=false,precision="int8"`) and `recognizer_precision=auto|fp32|bf16|int8`,
which loads its transformer recognizer under spacy_arbo.Tok2VecTransformer.v1 at that precision (as
`configure --recognizer-precision` stores it). With `--profile`, one extra pass of each pipeline
runs under cProfile and the table says where its time goes.

With `--end-to-end`, each pipeline reads the raw texts of DOCS instead, with every component
(recognizer, linker, memory, filters), as `python -m spacy_arbo evaluate --end-to-end` does, and
the table gives docs/s, NER F and end-to-end F (strict and any-id).

Why: speeds differ between machines of one model, so only ratios taken in one run compare; and
a change meant to save time must be shown to leave the links (and the mentions) as they were.

    python bench/pipeline_speed.py training/tfidf training/ncbi/final training/ncbi/final:memory_first=false \\
        --docs corpus/ncbi/test.spacy [--repeats 3] [--profile] [--output speed.json]
    python bench/pipeline_speed.py training/ncbi/e2e training/ncbi/e2e:kb_names_first=true,recognizer_precision=auto \\
        --docs corpus/ncbi/test.spacy --end-to-end [--repeats 3] [--output raw_text_speed.json]
"""
import argparse
import cProfile
import pstats
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import srsly

from spacy.util import load_config

from spacy_arbo.cli.linker_options import apply_settings
from spacy_arbo.corpora import read_docbin
from spacy_arbo.encoders.recognizer_transformer import precision_overrides
from spacy_arbo.evaluation import evaluate_end_to_end, link_gold_mentions, linking_metrics
from spacy_arbo.pipeline_loading import load_pipeline
from spacy_arbo.pipeline.arbo_linker import arbo_linkers

# Where a linked mention's time goes: (label, the function's file and name as cProfile sees them).
STAGES = [
    ("read mentions (context, long forms)", "mention_inputs.py", "__call__"),
    ("encode mentions", "linker_encoder.py", "encode_mentions"),
    ("dense search", "faiss_index.py", "search"),
    ("TF-IDF search", "tfidf.py", "search"),
    ("fuse candidates", "candidates.py", "fuse_candidates"),
    ("memory lookups before encoding", "link_decisions.py", "remembered_links"),
    ("KB names before encoding", "exact_names.py", "links"),
    ("write links", "link_decisions.py", "write_decision"),
    ("link_memory component", "link_memory.py", "__call__"),
    ("reranker", "component.py", "predict"),
]


# What --end-to-end keeps of `evaluate_end_to_end`'s figures.
END_TO_END_SCORES = ("ner_p", "ner_r", "ner_f", "e2e_p", "e2e_r", "e2e_f", "e2e_any_id_f")


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


def profile(nlp, docs, batch_size: int) -> Tuple[float, Dict[str, float]]:
    profiler = cProfile.Profile()
    profiler.enable()
    link_gold_mentions(nlp, docs, batch_size)
    profiler.disable()
    stats = pstats.Stats(profiler).stats
    total = max(cumulative for (_, _, _, cumulative, _) in stats.values())
    stages = {label: sum(row[3] for (file, _, name), row in stats.items() if file.endswith(module) and name == func)
              for label, module, func in STAGES}
    return total, stages


def linking_rows(args: argparse.Namespace, pipelines: List[Any], gold: List[Any]) -> List[Dict[str, Any]]:
    """Each pipeline's fastest pass over the gold mentions, its accuracies and changed links."""
    seconds: List[float] = [float("inf")] * len(pipelines)
    predicted: List[Any] = [None] * len(pipelines)
    for _ in range(args.repeats):
        for i, nlp in enumerate(pipelines):
            start = time.perf_counter()
            predicted[i] = link_gold_mentions(nlp, gold[i], args.batch_size)
            seconds[i] = min(seconds[i], time.perf_counter() - start)
    rows = []
    reference = [[e.kb_id_ for e in doc.ents] for doc in predicted[min(1, len(pipelines) - 1)]]
    for spec, nlp, own_gold, elapsed, linked in zip(args.pipelines, pipelines, gold, seconds, predicted):
        metrics = linking_metrics(linked, own_gold)
        ids = [[e.kb_id_ for e in doc.ents] for doc in linked]
        row = {"pipeline": spec, "seconds": elapsed, "mentions_per_second": metrics["n_mentions"] / elapsed,
               "accuracy_strict": metrics["accuracy_strict"], "accuracy": metrics["accuracy"],
               "kb_ids_differing_from_second": sum(a != b for x, y in zip(ids, reference) for a, b in zip(x, y))}
        if args.profile:
            total, stages = profile(nlp, own_gold, args.batch_size)
            row["profile_seconds"] = total
            row["profile"] = stages
        rows.append(row)
    return rows


def end_to_end_rows(args: argparse.Namespace, pipelines: List[Any], gold: List[Any]) -> List[Dict[str, Any]]:
    """Each pipeline's fastest pass over the raw texts, and its mention and end-to-end scores."""
    rows: List[Dict[str, Any]] = [{"pipeline": spec, "docs_per_second": 0.0} for spec in args.pipelines]
    for _ in range(args.repeats):
        for row, nlp, docs in zip(rows, pipelines, gold):
            metrics = evaluate_end_to_end(nlp, docs, args.batch_size)
            row["docs_per_second"] = max(row["docs_per_second"], metrics["docs_per_second"])
            row.update({key: metrics[key] for key in END_TO_END_SCORES})
    return rows


def print_linking(rows: List[Dict[str, Any]], args: argparse.Namespace, docs: List[Any]) -> None:
    n_mentions = sum(len(d.ents) for d in docs)
    print(f"{args.docs}: {len(docs)} docs, {n_mentions} mentions; fastest of {args.repeats} passes each")
    print(f"{'pipeline':<58} {'mentions/s':>10} {'x first':>8} {'strict':>7} {'any-id':>7} {'ids != 2nd':>10}")
    for row in rows:
        print(f"{row['pipeline']:<58} {row['mentions_per_second']:>10.1f} {row['ratio_to_first']:>8.2f} "
              f"{row['accuracy_strict']:>7.3f} {row['accuracy']:>7.3f} {row['kb_ids_differing_from_second']:>10}")
    if args.profile:
        for row in rows:
            print(f"\n{row['pipeline']}: {row['profile_seconds']:.2f} s under cProfile "
                  f"({1000 * row['profile_seconds'] / n_mentions:.2f} ms a mention)")
            for label, spent in row["profile"].items():
                if spent:
                    print(f"  {label:<40} {spent:>7.2f} s {100 * spent / row['profile_seconds']:>5.1f}%")


def print_end_to_end(rows: List[Dict[str, Any]], args: argparse.Namespace, docs: List[Any]) -> None:
    print(f"{args.docs}: {len(docs)} docs; fastest of {args.repeats} passes each")
    print(f"{'pipeline':<70} {'docs/s':>7} {'x first':>8} {'NER F':>6} {'e2e F':>6} {'any-id':>7}")
    for row in rows:
        print(f"{row['pipeline']:<70} {row['docs_per_second']:>7.1f} {row['ratio_to_first']:>8.2f} "
              f"{row['ner_f']:>6.3f} {row['e2e_f']:>6.3f} {row['e2e_any_id_f']:>7.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipelines", nargs="+", help="PATH[:setting=value,...]; the first is the baseline")
    parser.add_argument("--docs", required=True, help=".spacy file with gold mentions (e.g. corpus/ncbi/test.spacy)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--end-to-end", action="store_true", help="read the raw texts: recognition, then linking")
    parser.add_argument("--profile", action="store_true", help="also say where each pipeline's time goes")
    parser.add_argument("--output", help="write the figures as JSON")
    args = parser.parse_args()
    if args.end_to_end and args.profile:
        parser.error("--profile says where linking's time goes; it does not go with --end-to-end")

    pipelines = [load(spec) for spec in args.pipelines]
    # Each pipeline reads the gold docs with its own vocab, as `evaluate` does.
    gold = [read_docbin(args.docs, nlp.vocab) for nlp in pipelines]
    rows = (end_to_end_rows if args.end_to_end else linking_rows)(args, pipelines, gold)
    speed = "docs_per_second" if args.end_to_end else "mentions_per_second"
    for row in rows:
        row["ratio_to_first"] = row[speed] / rows[0][speed]
    (print_end_to_end if args.end_to_end else print_linking)(rows, args, gold[0])
    if args.output:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        srsly.write_json(args.output, {"commit": commit, "docs": args.docs, "repeats": args.repeats, "rows": rows})
        print(f"\nWrote {Path(args.output)}")


if __name__ == "__main__":
    main()
