"""What the commands' bodies share: corpora read, pipelines loaded and written, JSON written, a
pipeline's linker found, a command's own torch device. These import spaCy and torch, so the
command functions import this module when they run, never the parser (`_util` is its half)."""
from typing import Any, List, Sequence

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

__all__ = ["linker_component", "load_pipeline", "read_corpora", "require_recognizer", "torch_device", "write_json",
           "write_pipeline"]


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
