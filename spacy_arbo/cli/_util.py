"""What the commands share: reading corpora, writing pipelines, and bad input as one line."""
import sys
from typing import Any, Callable, List, Sequence

import srsly
from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab

from ..corpora import read_docbin
from ..evaluation import load_pipeline, recognizer_position
from ..util import ArboError, PathLike, atomic_path

__all__ = ["load_pipeline", "read_corpora", "reporting_errors", "require_recognizer", "write_json", "write_pipeline"]


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


def reporting_errors(run: Callable[[], Any]) -> int:
    """Call `run`; a bad input (ArboError) or a file that cannot be read or written (OSError)
    is one line on stderr and exit code 1, not a traceback. Also for the scripts in bench/."""
    try:
        run()
    except ArboError as err:
        return _fail(str(err))
    except OSError as err:
        where = " -> ".join(str(f) for f in (err.filename, err.filename2) if f is not None)
        return _fail(f"{where}: {err.strerror or err}" if where else str(err))
    return 0


def _fail(message: str) -> int:
    print("error: " + message.replace("\n", " "), file=sys.stderr)
    return 1
