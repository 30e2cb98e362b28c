"""spacy-arbo: entity linking and entity discovery for spaCy."""
from . import forking  # noqa: F401  (registers the fork handler before any worker starts)
from .kb.entities import NIL, Entity
from .kb.store import EntityStore
from .util import ArboError

__version__ = "0.1.0"
__all__ = ["NIL", "ArboError", "Entity", "EntityStore", "__version__"]
