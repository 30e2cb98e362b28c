"""What building the parser and running any command share: the options and argument types of
several commands, spaCy's --gpu-id, and bad input as one line. Light (argparse, no spaCy or
torch), so that `--help` and usage errors are answered at once; what the commands' bodies share
is in `_pipelines`."""
import argparse
import sys
import warnings
from typing import Any, Callable, Optional

from ..ranges import in_range, range_message
from ..util import ArboError

__all__ = ["add_gpu_option", "add_types_option", "non_negative_int", "probability", "reporting_errors", "use_gpu"]


def add_gpu_option(cmd: argparse.ArgumentParser) -> None:
    """spaCy's `--gpu-id`, for the commands that link or encode."""
    cmd.add_argument("--gpu-id", type=int, default=-1,
                     help="GPU to run the pipeline's torch models on, as spaCy's --gpu-id (default -1: the CPU); "
                     "the entity index goes where the linker's use_gpu_index says")


class TypesAction(argparse.Action):
    """`--types A,B`, `--types A B` and `--types A --types B` all mean [A, B]: two commands
    once took two of these forms each, and a user of one typed the other (add-linker's --labels too)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: Optional[str] = None) -> None:
        types = [part.strip() for value in values for part in value.split(",") if part.strip()]
        if not types:
            parser.error(f"argument {option_string}: nothing given (e.g. {option_string} Disease,Chemical)")
        setattr(namespace, self.dest, list(dict.fromkeys([*(getattr(namespace, self.dest) or []), *types])))


def add_types_option(cmd: argparse.ArgumentParser, what: str) -> None:
    """The one `--types` of the commands that keep mentions of some types (convert, score-pubtator)."""
    cmd.add_argument("--types", nargs="+", action=TypesAction, metavar="TYPE",
                     help=f"{what}; comma- or space-separated (Disease,Chemical or Disease Chemical); put it "
                     "after the files, since it takes every word that follows")


def non_negative_int(text: str) -> int:
    """argparse `type` of a count where 0 means "all" (`--limit`): a negative one is a usage
    error naming the option, not an exception from deep inside."""
    return _int_at_least(text, 0, " (0: all)")


def positive_int(text: str) -> int:
    """argparse `type` of a count that must be 1 or more (`--max-steps`: spaCy reads 0 as no limit)."""
    return _int_at_least(text, 1)


def _int_at_least(text: str, minimum: int, note: str = "") -> int:
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}{note}, got '{text}'")
    return value


def probability(text: str) -> float:
    """argparse `type` of --min-confidence: a confidence is a probability, so a threshold outside
    [0, 1] would send every link (or none) to review; a usage error naming the option instead."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not in_range(value, 0, 1):
        raise argparse.ArgumentTypeError(range_message(text, 0, 1))  # "takes a number in [0, 1]; got '2'."
    return value


def use_gpu(gpu_id: int) -> None:
    """Pipelines loaded from now on run on GPU `gpu_id` (thinc's ops and torch models), as
    `spacy train --gpu-id` trains them; -1 leaves them on the CPU."""
    if gpu_id < 0:
        return
    import spacy  # here, not above: on the CPU the command imports spaCy when it needs it

    try:
        spacy.require_gpu(gpu_id)
    except Exception as err:  # no CuPy (ValueError), or no such device (CuPy's and torch's own errors)
        raise ArboError(f"--gpu-id {gpu_id}: {err} Running on a GPU needs a CUDA build of torch and CuPy for the "
                        "same CUDA (docs/gpu.md); --gpu-id -1 runs on the CPU.") from None


def reporting_errors(run: Callable[[], Any]) -> int:
    """Call `run`; a bad input (ArboError) or a file that cannot be read or written (OSError)
    is one line on stderr and exit code 1, not a traceback, and a warning is one line on stderr.
    Also for the scripts in bench/."""
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            run()
    except ArboError as err:
        return _fail(str(err))
    except OSError as err:
        where = " -> ".join(str(f) for f in (err.filename, err.filename2) if f is not None)
        return _fail(f"{where}: {err.strerror or err}" if where else str(err))
    return 0


def _show_warning(message: Warning | str, category: type, filename: str, lineno: int, file: Any = None,
                  line: Optional[str] = None) -> None:
    print("warning: " + str(message).replace("\n", " "), file=sys.stderr)


def _fail(message: str) -> int:
    print("error: " + message.replace("\n", " "), file=sys.stderr)
    return 1
