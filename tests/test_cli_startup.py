"""`python -m spacy_arbo --help`, `COMMAND --help` and a usage error are answered without
importing spaCy or torch (seconds of imports on a small machine, issue 89); a command that
runs still loads what it needs (every other CLI test)."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "spacy", "thinc", "faiss")

# Run in a fresh interpreter, so that what this test process imported does not count: every
# command and command group asked for --help, then given an option it does not take.
HELP_AND_USAGE_ERRORS = """
    import argparse, contextlib, io, json, sys

    from spacy_arbo.cli import main, make_parser

    def commands(parser, path=()):
        yield path
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from commands(sub, (*path, name))

    codes = {}
    for path in commands(make_parser()):
        for words in ([*path, "--help"], [*path, "--no-such-option"]):
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                try:
                    code = f"ran, returned {main(words)}"
                except SystemExit as exit:
                    code = exit.code
            codes[" ".join(words)] = code
    print(json.dumps({"codes": codes, "loaded": [name for name in sys.argv[1:] if name in sys.modules]}))
"""


def test_help_and_usage_errors_import_no_spacy_or_torch():
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(HELP_AND_USAGE_ERRORS), *HEAVY], capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": path}, timeout=300)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    codes = result["codes"]
    assert len(codes) > 2 * 25 and "link --help" in codes and "workflow report --no-such-option" in codes
    assert {words: code for words, code in codes.items() if code != (0 if words.endswith("--help") else 2)} == {}
    assert result["loaded"] == []
