"""spacy-arbo: entity linking and entity discovery for spaCy."""
from importlib import import_module
from typing import Any

from .forking import register_fork_handler

# Before any worker starts: nlp.pipe(docs, n_process=2) forks.
register_fork_handler()

__version__ = "0.1.0"
# Read on first use, so that `python -m spacy_arbo --help` and spaCy's entry points do not load
# spaCy, torch and numpy for a name they never touch.
_EXPORTS = {"NIL": ".kb.entities", "Entity": ".kb.entities", "ArboError": ".util", "DiskEntityStore": ".kb.disk_store",
            "EntityStore": ".kb.store", "build_kb": ".kb.readers"}
__all__ = ["NIL", "ArboError", "DiskEntityStore", "Entity", "EntityStore", "__version__", "build_kb"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'spacy_arbo' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name], __name__), name)


def __dir__() -> list:
    return sorted(__all__)
