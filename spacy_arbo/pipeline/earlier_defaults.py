"""The defaults a pipeline saved before they changed was made with.

spaCy fills a setting that a saved config.cfg lacks with the factory's default of today. The
linker's defaults became the label-free recipe's (every name indexed, dense + TF-IDF, KB names
first), so a pipeline saved before those settings were written into its config would otherwise
link differently after loading: for those settings it gets the values it was made with.
"""
from pathlib import Path
from typing import Any, Dict

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
}


def settings_saved_without(component_dir: Path, name: str, current: Any) -> Dict[str, Any]:
    """The earlier defaults of the settings missing from component `name`'s block of the
    config.cfg beside `component_dir` (none when there is no such file or block), except those
    `current` (the settings the component was made with) no longer holds at today's default: a
    value given at load time (`spacy.load(path, config=...)`) wins."""
    config_file = Path(component_dir).parent / "config.cfg"
    if not config_file.is_file():
        return {}
    block = Config().from_disk(config_file, interpolate=False).get("components", {}).get(name)
    if not isinstance(block, dict):
        return {}
    today = LinkerSettings()
    return {key: value for key, value in EARLIER_DEFAULTS.items()
            if key not in block and getattr(current, key) == getattr(today, key)}
