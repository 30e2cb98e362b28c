"""Commands that gather results: report (a table and a plot from evaluate JSON files),
compare-runs (training runs scored beside their clocks)."""
import argparse
from pathlib import Path
from typing import Any, Dict, List

from ..util import ArboError
from ._util import add_gpu_option
from .linker_options import apply_settings, linkers_to_change


def add_commands(commands: "argparse._SubParsersAction") -> None:
    cmd = commands.add_parser("compare-runs", help="score trained runs on dev and test beside their training clocks (JSON)")
    cmd.add_argument("runs", nargs="+", metavar="NAME=DIR[+DIR...]",
                     help="a run: `spacy train` output directories of its stages, in order (the last one's "
                          "model-best is scored; the clocks, DIR/clock.json, are summed)")
    cmd.add_argument("--dev", required=True, help="dev .spacy DocBin with gold kb ids")
    cmd.add_argument("--test", required=True, help="test .spacy DocBin with gold kb ids")
    cmd.add_argument("--seen-from", help="training .spacy file: accuracy of unseen entities")
    cmd.add_argument("--output", required=True, help="the JSON to write: run name -> clock and scores")
    cmd.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help="inference setting applied to every run before scoring (repeatable)")
    add_gpu_option(cmd)
    cmd.set_defaults(func=compare_runs_command)

    cmd = commands.add_parser("report", help="results table (markdown) and recall@k plot from evaluate JSON files")
    cmd.add_argument("metrics_dir")
    cmd.add_argument("--output", default="report.md")
    cmd.set_defaults(func=report_command)


def parse_runs(specs: List[str]) -> Dict[str, List[Path]]:
    """`NAME=DIR[+DIR...]` -> {NAME: [DIR, ...]}."""
    runs: Dict[str, List[Path]] = {}
    for spec in specs:
        name, sep, stages = spec.partition("=")
        if not sep or not name or not stages or name in runs:
            raise ArboError(f"compare-runs takes distinct NAME=DIR[+DIR...] runs; got '{spec}'.")
        runs[name] = [Path(stage) for stage in stages.split("+")]
    return runs


def compare_runs_command(args: argparse.Namespace) -> None:
    from ..corpora import read_docbin
    from ..evaluation import gold_id_set
    from ..metrics_tables import RUN_COLUMNS, markdown_table, read_run_clock, score_run
    from ._pipelines import load_pipeline, write_json

    seen = None
    rows: Dict[str, Dict[str, Any]] = {}
    for name, stages in parse_runs(args.runs).items():
        clock = read_run_clock(stages)  # before the slow part, so a missing clock fails at once
        nlp = load_pipeline(stages[-1] / "model-best")
        apply_settings(linkers_to_change(nlp, stages[-1] / "model-best", ["--set"] if args.set else []), args.set or [])
        if args.seen_from and seen is None:
            seen = gold_id_set(read_docbin(args.seen_from, nlp.vocab))
        rows[name] = {**clock, **score_run(nlp, {"dev": args.dev, "test": args.test}, seen_ids=seen)}
        print(f"{name}: {rows[name]}", flush=True)
    print(markdown_table(rows, RUN_COLUMNS))
    write_json(rows, args.output)
    print(f"Wrote {args.output}")


def report_command(args: argparse.Namespace) -> None:
    from ..metrics_tables import write_report

    print("\n".join(write_report(args.metrics_dir, args.output)))
    print(f"Wrote {args.output} and {Path(args.output).with_suffix('.png')}")
