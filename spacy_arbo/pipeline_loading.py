"""Loading a saved pipeline: a damaged or missing file is one error naming it, never a
traceback from inside `spacy.load`."""
import configparser
from pathlib import Path
from typing import Any, Dict, Optional

import spacy
from confection import ConfigValidationError
from spacy.language import Language
from thinc.api import Config

from .component_settings import config_error_line
from .pipeline.common.kb_versions import check_kb_versions
from .util import ArboError, PathLike, read_json, read_msgpack


def load_pipeline(path: PathLike, overrides: Optional[Dict[str, Any]] = None) -> Language:
    """A saved pipeline (with `overrides` of its config, in spaCy's dot notation); a missing
    directory is an error naming it, not spaCy's guess that `path` is a package name, and a
    damaged file of spaCy's own (config, meta, tokenizer, vocab) is an error naming the file,
    not a traceback from inside `spacy.load`; components made from another KB than the one
    the pipeline links to are an error naming the pipeline (`kb_versions`)."""
    path = Path(path)
    if not path.is_dir():
        raise ArboError(f"Pipeline directory '{path}' does not exist.")
    try:
        nlp = spacy.load(path, config=overrides or {})
    except ConfigValidationError as err:  # a bad setting in config.cfg (or in `overrides`)
        line = str(err) if isinstance(err, ArboError) else config_error_line(err)
        raise ArboError(f"{path / 'config.cfg'}: {line}") from None
    except ArboError:
        raise
    except (ValueError, KeyError, TypeError, configparser.Error) as err:  # raised by spaCy's readers of its own files
        check_spacy_files(path)  # names the damaged file where it can; read only when loading failed
        raise ArboError(f"{path}: spaCy cannot load the pipeline, a file of it is damaged "
                        f"({type(err).__name__}: {err}).") from None
    try:
        check_kb_versions(nlp)
    except ArboError as err:
        raise ArboError(f"{path}: {err}") from None
    return nlp


def check_spacy_files(path: Path) -> None:
    """Parse the files spaCy writes beside the components' own, naming the one that is damaged."""
    config = path / "config.cfg"
    try:
        Config().from_disk(config, interpolate=False)
    except OSError as err:
        raise ArboError(f"{config}: cannot read ({err.strerror or err}).") from None
    except Exception as err:  # configparser and thinc raise several unrelated types
        raise ArboError(f"{config}: not a spaCy config ({type(err).__name__}: {err}).") from None
    for name, expected in (("meta.json", dict), ("vocab/strings.json", list), ("vocab/vectors.cfg", dict)):
        if (path / name).exists() and not isinstance(read_json(path / name), expected):
            raise ArboError(f"{path / name}: expected a JSON {expected.__name__}.")
    for name in ("tokenizer", "vocab/lookups.bin"):
        if (path / name).exists() and not isinstance(read_msgpack(path / name, "spaCy's " + name), dict):
            raise ArboError(f"{path / name}: expected spaCy's {name} (a msgpack map).")
