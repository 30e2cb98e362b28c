"""spacy-arbo: entity linking and entity discovery for spaCy."""
from .forking import register_fork_handler
from .kb.disk_store import DiskEntityStore
from .kb.entities import NIL, Entity
from .kb.readers import build_kb
from .kb.store import EntityStore
from .util import ArboError

# Before any worker starts: nlp.pipe(docs, n_process=2) forks.
register_fork_handler()

__version__ = "0.1.0"
__all__ = ["NIL", "ArboError", "DiskEntityStore", "Entity", "EntityStore", "__version__", "build_kb"]
