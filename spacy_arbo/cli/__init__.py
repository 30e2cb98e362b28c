"""The command line, `python -m spacy_arbo COMMAND`: one module per family of commands, each
command parsing its arguments and calling functions that Python code can call too."""
import argparse
from typing import List, Optional

from . import corpora, encoder, evaluate, kb, link, pipeline, report, tune
from ._util import load_pipeline, reporting_errors, use_gpu
from .settings import apply_settings

__all__ = ["apply_settings", "load_pipeline", "main", "make_parser", "reporting_errors"]

DESCRIPTION = "`python -m spacy_arbo COMMAND`: build a KB, convert corpora, link a corpus, evaluate and discover."
# In the order `--help` lists them: data in, KB, the pipeline, annotating a corpus, encoders, tuning, scoring.
FAMILIES = (corpora, kb, pipeline, link, encoder, tune, evaluate, report)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m spacy_arbo", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True)
    for family in FAMILIES:
        family.add_commands(commands)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Run a command (see `reporting_errors`)."""
    args = make_parser().parse_args(argv)

    def run() -> None:
        use_gpu(getattr(args, "gpu_id", -1))
        args.func(args)

    return reporting_errors(run)
