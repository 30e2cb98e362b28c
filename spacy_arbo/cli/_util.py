"""What the commands share: reading corpora, writing pipelines, spaCy's --gpu-id, and bad input as one line."""
import argparse
import sys
import warnings
from typing import Any, Callable, List, Optional, Sequence

import spacy
import srsly
import torch
from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab

from ..corpora import read_docbin
from ..evaluation import recognizer_position
from ..pipeline.arbo_linker import ArboLinker
from ..pipeline_loading import load_pipeline
from ..util import ArboError, PathLike, atomic_path

__all__ = ["add_gpu_option", "add_types_option", "linker_component", "load_pipeline", "non_negative_int", "read_corpora",
           "reporting_errors", "require_recognizer", "torch_device", "use_gpu", "write_json",
           "write_pipeline"]


def add_gpu_option(cmd: argparse.ArgumentParser) -> None:
    """spaCy's `--gpu-id`, for the commands that link or encode."""
    cmd.add_argument("--gpu-id", type=int, default=-1,
                     help="GPU to run the pipeline's torch models on, as spaCy's --gpu-id (default -1: the CPU); "
                     "the entity index goes where the linker's use_gpu_index says")


class _TypesAction(argparse.Action):
    """`--types A,B`, `--types A B` and `--types A --types B` all mean [A, B]: two commands
    once took two of these forms each, and a user of one typed the other."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: Optional[str] = None) -> None:
        types = [part.strip() for value in values for part in value.split(",") if part.strip()]
        if not types:
            parser.error(f"argument {option_string}: no type given (e.g. --types Disease,Chemical)")
        setattr(namespace, self.dest, list(dict.fromkeys([*(getattr(namespace, self.dest) or []), *types])))


def add_types_option(cmd: argparse.ArgumentParser, what: str) -> None:
    """The one `--types` of the commands that keep mentions of some types (convert, score-pubtator)."""
    cmd.add_argument("--types", nargs="+", action=_TypesAction, metavar="TYPE",
                     help=f"{what}; comma- or space-separated (Disease,Chemical or Disease Chemical); put it "
                     "after the files, since it takes every word that follows")


def use_gpu(gpu_id: int) -> None:
    """Pipelines loaded from now on run on GPU `gpu_id` (thinc's ops and torch models), as
    `spacy train --gpu-id` trains them; -1 leaves them on the CPU."""
    if gpu_id < 0:
        return
    try:
        spacy.require_gpu(gpu_id)
    except Exception as err:  # no CuPy (ValueError), or no such device (CuPy's and torch's own errors)
        raise ArboError(f"--gpu-id {gpu_id}: {err} Running on a GPU needs a CUDA build of torch and CuPy for the "
                        "same CUDA (docs/gpu.md); --gpu-id -1 runs on the CPU.") from None


def non_negative_int(text: str) -> int:
    """argparse `type` of a count where 0 means "all" (`--limit`): a negative one is a usage
    error naming the option, not an exception from deep inside."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0 (0: all), got '{text}'")
    return value


def torch_device(gpu_id: int) -> torch.device:
    """Where a command's own torch module (not a pipeline's) runs under `--gpu-id`."""
    return torch.device("cuda", gpu_id) if gpu_id >= 0 else torch.device("cpu")


def read_corpora(paths: Sequence[PathLike], vocab: Vocab) -> List[Doc]:
    """The documents of several .spacy files, in order."""
    return [doc for path in paths for doc in read_docbin(path, vocab)]


def write_pipeline(nlp: Language, output: PathLike) -> None:
    """`nlp.to_disk` through a temp path: an interrupted write leaves the old pipeline."""
    with atomic_path(output) as tmp:
        nlp.to_disk(tmp)


def write_json(data: Any, output: PathLike) -> None:
    with atomic_path(output) as tmp:
        srsly.write_json(tmp, data)


def require_recognizer(nlp: Language, path: str) -> None:
    """--end-to-end needs a component that finds mentions; the error names the pipeline."""
    try:
        recognizer_position(nlp)
    except ArboError as err:
        raise ArboError(f"--end-to-end: {path}: {err}") from None


def linker_component(nlp: Language, name: str, path: PathLike) -> ArboLinker:
    """The arbo_linker `--component NAME` of the pipeline at `path`; a name the pipeline lacks,
    or a component of another kind, is an error naming both and the components there."""
    if name not in nlp.component_names:
        raise ArboError(f"{path} has no component '{name}' (--component); its components: "
                        f"{', '.join(nlp.component_names) or 'none'}.")
    component = nlp.get_pipe(name)
    if not isinstance(component, ArboLinker):
        raise ArboError(f"{path}: component '{name}' (--component) is a {nlp.get_pipe_meta(name).factory}, "
                        f"not an arbo_linker; its arbo_linkers: "
                        f"{', '.join(n for n, c in nlp.components if isinstance(c, ArboLinker)) or 'none'}.")
    return component


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
