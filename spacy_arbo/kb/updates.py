"""Adding, replacing and removing entities of a KB whose rows an index already points to.

Rows stay dense (0..n-1, the ids of every index over the KB) by filling each removed
row with one of the last rows, so an update touches the index only where entities were
added, replaced, removed or moved: those rows are re-encoded, nothing else.
"""
import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ..util import ArboError, PathLike
from .disk_store import DiskEntityStore
from .entities import Entity, normalize_id
from .store import BaseEntityStore, EntityStore


@dataclass(frozen=True)
class KBUpdate:
    """How rows change: `row_map[old_row]` is the entity's new row (-1: removed);
    `dropped` are old rows whose vectors must leave the index, `encoded` new rows whose
    entities must be (re-)encoded."""

    row_map: np.ndarray
    dropped: np.ndarray
    encoded: np.ndarray
    added: int
    replaced: int
    removed: int

    @property
    def size(self) -> int:
        """Rows after the update."""
        return int((self.row_map >= 0).sum()) + self.added

    @property
    def moved(self) -> int:
        """Kept entities moved into the rows removed ones left (so encoded in their new row)."""
        return len(self.encoded) - self.added - self.replaced

    def describe(self, encodes: bool) -> str:
        """What changed and what was encoded, for `kb add` / `kb remove`; `encodes`: the
        linker has a dense index (a TF-IDF one is rebuilt, nothing is encoded)."""
        changes = f"{self.added:,} added, {self.replaced:,} replaced, {self.removed:,} removed"
        if not encodes:
            encoded = "none encoded (no dense index: the TF-IDF index is rebuilt)"
        elif not len(self.encoded):
            encoded = "none encoded"
        else:
            why = [f"{n:,} {what}" for n, what in ((self.added, "new"), (self.replaced, "replaced"),
                                                   (self.moved, "moved into a removed entity's row")) if n]
            encoded = f"{_entities(len(self.encoded))} encoded ({', '.join(why)})"
        return f"{changes}; {encoded}; {_entities(self.size)} in the KB"


def _entities(n: int) -> str:
    return f"{n:,} entit{'y' if n == 1 else 'ies'}"


def kb_spellings(kb: BaseEntityStore) -> Dict[str, str]:
    """Normalised id -> the KB's own spelling, for the ids a KB built under an older
    normalisation spells otherwise (`chem:0001`); empty for a KB built now."""
    return {normal: kb_id for kb_id in kb.ids if (normal := normalize_id(kb_id)) != kb_id}


def kb_id_of(kb: BaseEntityStore, entity_id: str, spellings: Dict[str, str]) -> Optional[str]:
    """The KB's id for `entity_id` compared normalised (`chem:0001` finds `CHEM:0001`), or None."""
    normal = normalize_id(entity_id)
    for candidate in (entity_id, normal):
        if candidate in kb:
            return candidate
    return spellings.get(normal)


def align_ids(kb: BaseEntityStore, add: Sequence[Entity]) -> List[Entity]:
    """`add` with each id the KB holds in another spelling written as the KB writes it, so
    that the new entity replaces the KB's rather than tying with it."""
    spellings = kb_spellings(kb)
    aligned = []
    for entity in add:
        kb_id = kb_id_of(kb, entity.id, spellings)
        aligned.append(entity if kb_id in (None, entity.id) else dataclasses.replace(entity, id=kb_id))
    return aligned


def ids_the_kb_has(kb: BaseEntityStore, add: Sequence[Entity]) -> List[Tuple[str, str]]:
    """(new id, the KB's id) of each entity of `add` whose id the KB has (compared normalised):
    what adding only new entities (a curator's accepted proposals) refuses."""
    spellings = kb_spellings(kb)
    return [(entity.id, kb_id) for entity in add if (kb_id := kb_id_of(kb, entity.id, spellings)) is not None]


def plan_update(kb, add: Sequence[Entity] = (), remove: Iterable[str] = ()) -> KBUpdate:
    """The row changes that adding `add` (an entity whose id the KB has replaces it in its
    row) and removing the ids in `remove` make to `kb`. Ids are compared normalised: an id to
    remove finds the KB's in any spelling; a new one the KB spells otherwise is an error
    (`align_ids` first), as two new ones that normalise alike are."""
    size = len(kb)
    spellings = kb_spellings(kb)
    gone = []
    for entity_id in dict.fromkeys(remove):
        kb_id = kb_id_of(kb, entity_id, spellings)
        if kb_id is None:
            raise ArboError(f"Cannot remove '{entity_id}': the KB has no entity with that id.")
        gone.append(kb.row(kb_id))
    gone = list(dict.fromkeys(gone))
    seen: Dict[str, int] = {}
    for i, entity in enumerate(add):
        if not entity.id:
            raise ArboError(f"New entity '{entity.name}' (entry {i}) has an empty id.")
        normal = normalize_id(entity.id)
        if normal in seen:
            raise ArboError(f"The new entities name id '{normal}' twice (entries {seen[normal]} and {i}); ids are "
                            "compared normalised.")
        seen[normal] = i
        kb_id = kb_id_of(kb, entity.id, spellings)
        if kb_id not in (None, entity.id):
            raise ArboError(f"New entity '{entity.id}' (entry {i}) is the KB's '{kb_id}' spelled otherwise; give it "
                            "the KB's spelling (spacy_arbo.kb.updates.align_ids) so that it replaces it.")
    gone_set = set(gone)
    replaced = sorted(kb.row(e.id) for e in add if e.id in kb and kb.row(e.id) not in gone_set)
    added = sum(1 for e in add if e.id not in kb or kb.row(e.id) in gone_set)
    kept = size - len(gone)
    holes = sorted(row for row in gone if row < kept)
    movers = [row for row in range(kept, size) if row not in gone_set]
    row_map = np.arange(size, dtype=np.int64)
    row_map[list(gone_set)] = -1
    row_map[movers] = holes
    dropped = np.asarray(sorted(gone_set | set(movers) | set(replaced)), dtype=np.int64)
    encoded = np.asarray(sorted(set(holes) | set(row_map[replaced].tolist()) | set(range(kept, kept + added))),
                         dtype=np.int64)
    return KBUpdate(row_map, dropped, encoded, added, len(replaced), len(gone))


def updated_entities(kb, update: KBUpdate, add: Sequence[Entity]) -> Iterator[Entity]:
    """The KB's entities after `update`, in their new row order (streamed, for stores larger
    than memory)."""
    replacements = {e.id: e for e in add if e.id in kb and update.row_map[kb.row(e.id)] >= 0}
    new_ones: List[Entity] = [e for e in add if e.id not in replacements]
    movers = np.flatnonzero((update.row_map >= 0) & (update.row_map != np.arange(len(update.row_map))))
    moved_in = dict(zip(update.row_map[movers].tolist(), movers.tolist()))
    kept = len(kb) - update.removed
    for row, entity in enumerate(kb):
        if row >= kept:
            break
        if row in moved_in:
            entity = kb.entity_at(moved_in[row])
        yield replacements.get(entity.id, entity)
    yield from new_ones


def updated_store(kb: BaseEntityStore, update: KBUpdate, add: Sequence[Entity],
                  path: Optional[PathLike] = None) -> BaseEntityStore:
    """A store of the same kind holding the KB after `update`. An on-disk store is written to
    `path` (default: a new temporary directory), streamed, never over the store it reads."""
    entities = updated_entities(kb, update, add)
    if not isinstance(kb, DiskEntityStore):
        return EntityStore(entities, source=kb.source)
    target = Path(path) if path is not None else Path(tempfile.mkdtemp(prefix="spacy_arbo_kb_")) / "kb"
    if kb.path is not None and target.resolve() == Path(kb.path).resolve():
        raise ArboError(f"Write the updated KB somewhere other than the store it reads ('{target}').")
    return DiskEntityStore.write(entities, target, source=kb.source)
