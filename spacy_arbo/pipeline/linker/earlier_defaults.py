"""The defaults a linker saved before they changed was made with.

spaCy fills a setting that a saved config.cfg lacks with the factory's default of today. The
linker's defaults became the label-free recipe's (every name indexed, dense + TF-IDF, KB names
first), so a linker saved before those settings existed would otherwise link differently after
loading: for those settings it gets the values it was made with. Which settings a saved linker
had is what its `cfg` names; a linker saved before it had a `cfg` names them in its block of the
pipeline's config.cfg beside it.
"""
from pathlib import Path
from typing import Any, Collection, Dict, Optional

from thinc.api import Config

from .linker_settings import LinkerSettings

# Each setting whose default changed, with the default it had before.
EARLIER_DEFAULTS: Dict[str, Any] = {
    "candidate_source": "dense",
    "top_k": 64,
    "index_aliases": False,
    "sparse_weight": None,
    "kb_names_first": False,
    "confidence": False,
    "induced_variants": False,
}


def settings_saved_without(saved: Collection[str], current: LinkerSettings) -> Dict[str, Any]:
    """The earlier defaults of the settings missing from `saved` (the names of the settings a
    linker was saved with), except those `current` (the settings the component was made with)
    no longer holds at today's default: a value given at load time (`spacy.load(path, config=...)`) wins."""
    today = LinkerSettings()
    return {key: value for key, value in EARLIER_DEFAULTS.items()
            if key not in saved and getattr(current, key) == getattr(today, key)}


def names_in_config_beside(component_dir: Path, name: str) -> Optional[Collection[str]]:
    """For a linker saved without its `cfg`: the settings that component `name`'s block of the
    config.cfg beside `component_dir` names; None when there is no such file or block, as when
    the component is loaded alone."""
    config_file = Path(component_dir).parent / "config.cfg"
    if not config_file.is_file():
        return None
    block = Config().from_disk(config_file, interpolate=False).get("components", {}).get(name)
    return set(block) if isinstance(block, dict) else None
