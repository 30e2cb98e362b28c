"""The reader API every entity store shares, and the store that holds its entities in memory.

Row `i` of every vector matrix and index built over the KB belongs to `store.ids[i]`,
so the store is the single source of truth for that order. `EntityStore` holds its
entities in memory; `DiskEntityStore` (kb/disk_store.py) reads them from disk, for KBs
too large to hold as Python objects. Both live below kb/store.py, which opens whichever
a directory holds. The base class is here because what it builds from any store (a
subset, a serialization) is an in-memory store.
"""
import hashlib
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import srsly

from ..util import ArboError, PathLike, atomic_path, read_json, read_msgpack
from .entities import Entity, normalize_id

STORE_FILE = "entities.msgpack"
META_FILE = "meta.json"
FORMAT_VERSION = 1
REBUILD = "rebuild the KB with `python -m spacy_arbo build-kb`"


class DuplicateIdError(ArboError):
    """An entity whose id the store already holds: `row` is the row it would have taken,
    `first_row` the row of the entity that has the id (readers turn both into lines)."""

    def __init__(self, entity: Entity, row: int, first_row: int) -> None:
        super().__init__(f"Duplicate KB id '{entity.id}' (entity '{entity.name}').")
        self.entity_id = entity.id
        self.row = row
        self.first_row = first_row


class Summary:
    """The counts and fingerprint of a stream of entities, in one pass: what `stats` and
    `fingerprint` report, and what the disk store's writer records as it streams."""

    def __init__(self) -> None:
        self.counts = {"entities": 0, "aliases": 0, "with_definition": 0, "alt_ids": 0}
        self._digest = hashlib.sha1()

    def add(self, e: Entity) -> None:
        self.counts["entities"] += 1
        self.counts["aliases"] += len(e.aliases)
        self.counts["with_definition"] += bool(e.definition)
        self.counts["alt_ids"] += len(e.alt_ids)
        self._digest.update("\x1f".join((e.id, e.name, e.definition, *e.aliases)).encode("utf8"))
        if e.parents:  # KBs without parents keep the fingerprints they had before parents existed
            self._digest.update(("\x1d" + "\x1f".join(e.parents)).encode("utf8"))
        self._digest.update(b"\x1e")

    def fingerprint(self) -> str:
        return self._digest.hexdigest()

    @classmethod
    def of(cls, entities: Iterable[Entity]) -> "Summary":
        summary = cls()
        for entity in entities:
            summary.add(entity)
        return summary


class BaseEntityStore(ABC):
    """The reader API that the retriever, the linkers and the CLI use, whether the
    entities are in memory or on disk. What can be written over iteration and lookup
    is written once here."""

    source: str
    # The directory this store was loaded from; it may also hold a prebuilt index.
    path: Optional[Path]

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def __iter__(self) -> Iterator[Entity]:
        """The entities in row order."""

    @abstractmethod
    def __contains__(self, entity_id: object) -> bool: ...

    @property
    @abstractmethod
    def ids(self) -> Sequence[str]:
        """Row -> id; cheap to call (the retriever does on every batch). Do not modify."""

    @abstractmethod
    def entity_at(self, row: int) -> Entity: ...

    @abstractmethod
    def row(self, entity_id: str) -> int:
        """The row of an id; KeyError if the store lacks it."""

    @abstractmethod
    def _alt_owner(self, alt_id: str) -> Optional[str]:
        """The id of the first entity that claimed `alt_id` as an alternative id."""

    @abstractmethod
    def to_disk(self, path: PathLike) -> None: ...

    def __getitem__(self, entity_id: str) -> Entity:
        try:
            row = self.row(entity_id)
        except KeyError:
            raise KeyError(f"Unknown KB id '{entity_id}'") from None
        return self.entity_at(row)

    def resolve(self, raw_id: str) -> Optional[str]:
        """Map an id as written in a corpus to the store's id, or None if unknown.

        Tries the id itself, its normalised spelling, then both as alternative ids,
        so `D008107`, `MESH:D008107` and an `OMIM:` alt id reach one entity.
        """
        raw_id = raw_id.strip()
        candidates = (raw_id, normalize_id(raw_id))
        for candidate in candidates:
            if candidate in self:
                return candidate
        for candidate in candidates:
            owner = self._alt_owner(candidate)
            if owner is not None:
                return owner
        return None

    def alias_pairs(self) -> List[Tuple[str, int]]:
        """(surface form, row) for every distinct name and alias of every entity."""
        pairs = []
        for row, entity in enumerate(self):
            seen = set()
            for text in (entity.name, *entity.aliases):
                key = text.strip().lower()
                if key and key not in seen:
                    seen.add(key)
                    pairs.append((text.strip(), row))
        return pairs

    def stats(self) -> Dict[str, int]:
        return Summary.of(self).counts

    def fingerprint(self) -> str:
        """A hash of ids and texts, so a vector file can be checked against its KB."""
        return Summary.of(self).fingerprint()

    def subset(self, keep: Callable[[Entity], bool]) -> "EntityStore":
        """The entities `keep` accepts, in an in-memory store (of any store: subsets are
        meant to be small)."""
        return EntityStore((e for e in self if keep(e)), source=self.source)

    def to_dict(self) -> Dict:
        """The msgpack layout of `EntityStore`; builds every column in memory."""
        entities = list(self)
        return {
            "format_version": FORMAT_VERSION,
            "source": self.source,
            "ids": [e.id for e in entities],
            "names": [e.name for e in entities],
            "aliases": [list(e.aliases) for e in entities],
            "definitions": [e.definition for e in entities],
            "types": [list(e.types) for e in entities],
            "alt_ids": [list(e.alt_ids) for e in entities],
            "parents": [list(e.parents) for e in entities],
        }

    def to_bytes(self) -> bytes:
        """An `EntityStore` serialization: `EntityStore.from_bytes` reads it back, into memory."""
        return srsly.msgpack_dumps(self.to_dict())


class EntityStore(BaseEntityStore):
    """The entities as Python objects: fast lookups, for KBs up to a few million entities."""

    def __init__(self, entities: Iterable[Entity] = (), source: str = "") -> None:
        self.source = source
        self.path: Optional[Path] = None
        self._entities: List[Entity] = []
        self._row: Dict[str, int] = {}
        self._alt: Dict[str, str] = {}
        self._ids: Optional[List[str]] = None
        # (counts, fingerprint), kept until the next `add`: the retriever checks its indexes
        # against the fingerprint. Plain values, so the store pickles.
        self._summary: Optional[Tuple[Dict[str, int], str]] = None
        for entity in entities:
            self.add(entity)

    def add(self, entity: Entity) -> None:
        if entity.id in self._row:
            raise DuplicateIdError(entity, len(self._entities), self._row[entity.id])
        if not entity.id:
            raise ArboError(f"KB entity '{entity.name}' has an empty id.")
        self._row[entity.id] = len(self._entities)
        self._entities.append(entity)
        self._ids = None
        self._summary = None
        for alt in entity.alt_ids:
            # The first entity to claim an alternative id keeps it.
            self._alt.setdefault(alt, entity.id)
            self._alt.setdefault(normalize_id(alt), entity.id)

    def __len__(self) -> int:
        return len(self._entities)

    def __iter__(self) -> Iterator[Entity]:
        return iter(self._entities)

    def __contains__(self, entity_id: object) -> bool:
        return entity_id in self._row

    @property
    def ids(self) -> List[str]:
        if self._ids is None:
            self._ids = [e.id for e in self._entities]
        return self._ids

    def entity_at(self, row: int) -> Entity:
        return self._entities[row]

    def row(self, entity_id: str) -> int:
        return self._row[entity_id]

    def _alt_owner(self, alt_id: str) -> Optional[str]:
        return self._alt.get(alt_id)

    def _summarized(self) -> Tuple[Dict[str, int], str]:
        if self._summary is None:
            summary = Summary.of(self)
            self._summary = (summary.counts, summary.fingerprint())
        return self._summary

    def stats(self) -> Dict[str, int]:
        return dict(self._summarized()[0])

    def fingerprint(self) -> str:
        return self._summarized()[1]

    # Serialization -------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Dict, origin: str = "entity store") -> "EntityStore":
        try:
            if data["format_version"] != FORMAT_VERSION:
                raise ArboError(
                    f"{origin}: format version {data['format_version']} is not supported "
                    f"(expected {FORMAT_VERSION}); {REBUILD}."
                )
            # Stores written before parents were kept have none.
            parents = data.get("parents") or [[] for _ in data["ids"]]
            columns = zip(
                data["ids"], data["names"], data["aliases"], data["definitions"],
                data["types"], data["alt_ids"], parents,
            )
            entities = [
                Entity(i, n, tuple(a), d, tuple(t), tuple(x), tuple(p)) for i, n, a, d, t, x, p in columns
            ]
        except (KeyError, TypeError) as err:
            raise ArboError(f"{origin}: corrupt entity store ({err!r}).") from None
        return cls(entities, source=data.get("source", ""))

    @classmethod
    def from_bytes(cls, data: bytes) -> "EntityStore":
        try:
            content = srsly.msgpack_loads(data)
        except Exception as err:  # msgpack raises several unrelated types
            raise ArboError(f"serialized entity store: cannot read it ({type(err).__name__}: {err}).") from None
        return cls.from_dict(content)

    def to_disk(self, path: PathLike) -> None:
        with atomic_path(path) as tmp:
            tmp.mkdir()
            srsly.write_msgpack(tmp / STORE_FILE, self.to_dict())
            counts, fingerprint = self._summarized()
            srsly.write_json(tmp / META_FILE, {"source": self.source, **counts, "fingerprint": fingerprint})

    @classmethod
    def from_disk(cls, path: PathLike) -> "EntityStore":
        path = Path(path)
        store_file = path / STORE_FILE
        if not store_file.exists():
            raise ArboError(
                f"No entity store at '{path}' (missing {STORE_FILE}); "
                "build one with `python -m spacy_arbo build-kb`."
            )
        store = cls.from_dict(read_msgpack(store_file, "entity store"), origin=str(store_file))
        store._check_meta(path / META_FILE, store_file)
        store.path = path
        return store

    def _check_meta(self, meta_file: Path, store_file: Path) -> None:
        """The fingerprint `to_disk` wrote beside the entities must be theirs: a damaged
        store file can still parse, into other entities. KB directories made by hand may
        lack the file."""
        if not meta_file.exists():
            return
        meta = read_json(meta_file)
        if not isinstance(meta, dict) or not isinstance(meta.get("fingerprint"), str):
            raise ArboError(f"{meta_file}: not the metadata of an entity store (no fingerprint); {REBUILD}.")
        if meta["fingerprint"] != self.fingerprint():
            raise ArboError(f"{store_file}: its entities do not match the fingerprint in {meta_file} "
                            f"(a damaged file); {REBUILD}.")
