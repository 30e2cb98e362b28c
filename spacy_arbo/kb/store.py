"""The entity store: an ordered, id-addressable collection of KB entities, and the function
that opens whichever kind a KB directory holds.

Row `i` of every vector matrix and index built over the KB belongs to `store.ids[i]`. The
stores themselves live in kb/memory_store.py (`EntityStore`, and the `BaseEntityStore`
API both kinds share) and kb/disk_store.py (`DiskEntityStore`); this module sits above
both, so that neither has to import the other, and is where the rest of the package
imports them from.
"""
from typing import Callable, Optional

from spacy.util import registry

from ..util import ArboError, PathLike
from .disk_store import DiskEntityStore
from .memory_store import (
    FORMAT_VERSION, META_FILE, STORE_FILE, BaseEntityStore, DuplicateIdError, EntityStore, Summary,
)

__all__ = [
    "FORMAT_VERSION", "META_FILE", "STORE_FILE", "BaseEntityStore", "DiskEntityStore", "DuplicateIdError",
    "EntityStore", "Summary", "create_kb_loader", "open_store",
]


def open_store(path: PathLike) -> BaseEntityStore:
    """The entity store in a KB directory: on disk or in memory, whichever
    `python -m spacy_arbo build-kb` (or `to_disk`) wrote there."""
    if DiskEntityStore.is_at(path):
        return DiskEntityStore.from_disk(path)
    return EntityStore.from_disk(path)


@registry.misc("spacy_arbo.KBFromDir.v1")
def create_kb_loader(path: Optional[PathLike]) -> Callable[..., BaseEntityStore]:
    """A `kb_loader` for `[initialize.components.arbo_linker.kb_loader]`.

    `path` may stay null in a shipped config (so `spacy debug config` passes); it must be set,
    usually by `--paths.kb`, before the pipeline is initialized.
    """

    def load(*_args, **_kwargs) -> BaseEntityStore:
        if path is None:
            raise ArboError(
                "kb_loader: no KB directory given; set it with --paths.kb DIR "
                "(a directory written by `python -m spacy_arbo build-kb`)."
            )
        return open_store(path)

    return load
