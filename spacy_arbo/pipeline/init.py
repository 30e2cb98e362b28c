"""Build, initialize and save a linking pipeline in one step."""
from pathlib import Path
from typing import Optional

from spacy.language import Language
from spacy.util import load_config, load_model_from_config
from thinc.api import Config

from ..util import ArboError, PathLike, atomic_path

DEFAULT_CONFIG = """
[paths]
kb = null

[nlp]
lang = "en"
pipeline = ["arbo_linker"]

[components]

[components.arbo_linker]
factory = "arbo_linker"

[initialize]

[initialize.components]

[initialize.components.arbo_linker]

[initialize.components.arbo_linker.kb_loader]
@misc = "spacy_arbo.KBFromDir.v1"
path = ${paths.kb}
"""


def init_pipeline(kb_dir: PathLike, output: PathLike, config_path: Optional[PathLike] = None) -> Language:
    """Encode the KB with the configured (pretrained) encoder and write the pipeline.

    A config file must read its KB from `${paths.kb}`, which is set to `kb_dir`.
    """
    overrides = {"paths.kb": str(kb_dir)}
    if config_path is None:
        config = Config().from_str(DEFAULT_CONFIG, overrides=overrides)
    else:
        if not Path(config_path).exists():
            raise ArboError(f"Config file '{config_path}' does not exist.")
        config = load_config(config_path, overrides=overrides, interpolate=False)
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    nlp.initialize()
    with atomic_path(output) as tmp:
        nlp.to_disk(tmp)
    return nlp
