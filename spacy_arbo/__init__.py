"""spacy-arbo: entity linking and entity discovery for spaCy."""
from .forking import register_fork_handler
from .lazy import lazy_exports

# Before any worker starts: nlp.pipe(docs, n_process=2) forks.
register_fork_handler()

__version__ = "0.1.0"
_EXPORTS = {"NIL": ".kb.entities", "Entity": ".kb.entities", "ArboError": ".util", "DiskEntityStore": ".kb.disk_store",
            "EntityStore": ".kb.store", "build_kb": ".kb.readers"}
__all__ = ["__version__", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
