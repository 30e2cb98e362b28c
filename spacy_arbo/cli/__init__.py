"""The command line, `python -m spacy_arbo COMMAND`: one module per family of commands, each
command parsing its arguments and calling functions that Python code can call too.

Building the parser imports no spaCy, torch or FAISS (each command imports what it runs when it
runs), so that `--help` and a usage error are answered in a fraction of a second."""
import argparse
from typing import Any, List, Optional

from . import corpora, discover, encoder, evaluate, kb, link, pipeline, recognizer, results, tune
from ._util import reporting_errors, use_gpu
from .linker_options import apply_settings

__all__ = ["apply_settings", "load_pipeline", "main", "make_parser", "reporting_errors"]

DESCRIPTION = "`python -m spacy_arbo COMMAND`: build a KB, convert corpora, link a corpus, evaluate and discover."
# In the order `--help` lists them: data in, KB, the pipeline, annotating a corpus, encoders, tuning, scoring.
FAMILIES = (corpora, kb, pipeline, recognizer, link, encoder, tune, evaluate, discover, results)
# The Weasel workflow's plumbing, under `python -m spacy_arbo workflow COMMAND` (as spaCy keeps
# `spacy project` apart from its user commands); every other command is top-level.
WORKFLOW_COMMANDS = ("fetch-assets", "convert-corpus", "join-corpora", "select-pipeline", "compare-runs", "report")


class CommandGroups:
    """What each family's `add_commands` adds its commands to: a workflow command lands in the
    `workflow` group, any other at the top level."""

    def __init__(self, top: "argparse._SubParsersAction", workflow: "argparse._SubParsersAction") -> None:
        self.top = top
        self.workflow = workflow

    def add_parser(self, name: str, **kwargs) -> argparse.ArgumentParser:
        return (self.workflow if name in WORKFLOW_COMMANDS else self.top).add_parser(name, **kwargs)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m spacy_arbo", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True)
    workflow = commands.add_parser("workflow", help="the Weasel workflow's steps (project.yml): fetch data, "
                                   "join corpora, choose and compare pipelines, report")
    groups = CommandGroups(commands, workflow.add_subparsers(dest="workflow_command", required=True))
    for family in FAMILIES:
        family.add_commands(groups)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Run a command (see `reporting_errors`)."""
    args = make_parser().parse_args(argv)

    def run() -> None:
        use_gpu(getattr(args, "gpu_id", -1))
        args.func(args)

    return reporting_errors(run)


def __getattr__(name: str) -> Any:
    """`load_pipeline` (spaCy) on first use."""
    if name != "load_pipeline":
        raise AttributeError(f"module 'spacy_arbo.cli' has no attribute {name!r}")
    from ..pipeline_loading import load_pipeline

    return load_pipeline
