"""An entity store read from disk, for KBs too large to hold as Python objects.

The records live in SQLite (one table of entities keyed by row, one of alternative ids),
the ids also in a memory-mapped `.npy`, so `store.ids[row]` (what every search maps its
rows through) costs no query. Counts and fingerprint are computed once, while writing,
and kept in `meta.json`. A store is written once, streamed, into a temporary directory
that replaces the old one only when complete; it is never modified in place, which is
what makes sharing its files between processes safe.
"""
import itertools
import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union, overload

import numpy as np
import srsly

from ..util import ArboError, PathLike, atomic_path
from .entities import Entity, normalize_id
from .memory_store import META_FILE, BaseEntityStore, DuplicateIdError, EntityStore, Summary

KIND = "spacy_arbo.DiskEntityStore"
FORMAT_VERSION = 1
DB_FILE = "entities.sqlite"
IDS_FILE = "ids.npy"
# Entities per INSERT while writing and per fetch while iterating.
BATCH_SIZE = 10_000
REBUILD = "rebuild it with `python -m spacy_arbo build-kb --store disk`"

SCHEMA = """
CREATE TABLE entities (
    row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, name TEXT NOT NULL, aliases TEXT NOT NULL,
    definition TEXT NOT NULL, types TEXT NOT NULL, alt_ids TEXT NOT NULL, parents TEXT NOT NULL
);
CREATE TABLE alt_ids (alt TEXT PRIMARY KEY, id TEXT NOT NULL) WITHOUT ROWID;
"""
COLUMNS = "id, name, aliases, definition, types, alt_ids, parents"


def _pack(values: Tuple[str, ...]) -> str:
    return json.dumps(values, ensure_ascii=False) if values else ""


def _unpack(text: str) -> Tuple[str, ...]:
    return tuple(json.loads(text)) if text else ()


def _record(row: int, e: Entity) -> Tuple[Any, ...]:
    return (row, e.id, e.name, _pack(e.aliases), e.definition, _pack(e.types), _pack(e.alt_ids), _pack(e.parents))


def _entity(record: Tuple[str, ...]) -> Entity:
    entity_id, name, aliases, definition, types, alt_ids, parents = record
    return Entity(entity_id, name, _unpack(aliases), definition, _unpack(types), _unpack(alt_ids), _unpack(parents))


class IdView(Sequence[str]):
    """A store's ids by row, decoded on access from the memory-mapped id array."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __len__(self) -> int:
        return len(self._array)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> List[str]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[str, List[str]]:
        if isinstance(index, slice):
            return [value.decode("utf8") for value in self._array[index].tolist()]
        return self._array[index].decode("utf8")

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self._array), BATCH_SIZE):
            yield from self[start: start + BATCH_SIZE]


class DiskEntityStore(BaseEntityStore):
    """The reader API of `EntityStore` over a directory written by `DiskEntityStore.write`.

    Entities are read on demand (iteration streams them in row order); the SQLite
    connection opens on first use, read-only, and again in a forked child. Pickling
    (and copying) re-opens the store from its directory.
    """

    def __init__(self, path: PathLike) -> None:
        path = Path(path)
        self.path: Path = path
        self._db_file = path / DB_FILE
        meta = _read_meta(path)
        if not self._db_file.exists():
            raise ArboError(f"{self._db_file}: missing; {REBUILD}.")
        self.source: str = meta["source"]
        self._count: int = meta["count"]
        self._stats: Dict[str, int] = meta["stats"]
        self._fingerprint: str = meta["fingerprint"]
        self._ids = IdView(_read_ids(path / IDS_FILE, self._count))
        self._connection: Optional[sqlite3.Connection] = None
        self._pid = os.getpid()
        record = self._query_one("SELECT max(row) FROM entities")
        rows = 0 if record is None or record[0] is None else record[0] + 1
        if rows != self._count:
            raise ArboError(f"{self._db_file}: holds {rows} rows, but {path / META_FILE} says "
                            f"{self._count} entities; {REBUILD}.")
        self._close()  # opened lazily, by the process that uses it

    @classmethod
    def from_disk(cls, path: PathLike) -> "DiskEntityStore":
        return cls(path)

    @classmethod
    def from_bytes(cls, data: bytes) -> EntityStore:
        """`to_bytes` writes the in-memory layout (bytes are in memory anyway): this
        reads it into an `EntityStore`."""
        return EntityStore.from_bytes(data)

    @staticmethod
    def is_at(path: PathLike) -> bool:
        """Whether `path` holds a disk store (maybe a damaged one, which loading names)."""
        path = Path(path)
        if (path / DB_FILE).exists() or (path / IDS_FILE).exists():
            return True
        try:
            return srsly.read_json(path / META_FILE).get("kind") == KIND
        except (OSError, ValueError, AttributeError):
            return False

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (self.path,))

    # Reading -------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Entity]:
        cursor = self._execute(f"SELECT {COLUMNS} FROM entities ORDER BY row")
        while True:
            try:
                records = cursor.fetchmany(BATCH_SIZE)
            except sqlite3.Error as err:
                raise self._error(err) from None
            if not records:
                return
            yield from map(_entity, records)

    def __contains__(self, entity_id: object) -> bool:
        return isinstance(entity_id, str) and self._row_of(entity_id) is not None

    @property
    def ids(self) -> IdView:
        return self._ids

    def entity_at(self, row: int) -> Entity:
        row = int(row)
        position = row + self._count if row < 0 else row
        record = self._query_one(f"SELECT {COLUMNS} FROM entities WHERE row = ?", (position,))
        if record is None:
            raise IndexError(f"KB row {row} is out of range ({self._count} entities).")
        return _entity(record)

    def row(self, entity_id: str) -> int:
        row = self._row_of(entity_id)
        if row is None:
            raise KeyError(entity_id)
        return row

    def _row_of(self, entity_id: str) -> Optional[int]:
        record = self._query_one("SELECT row FROM entities WHERE id = ?", (entity_id,))
        return None if record is None else record[0]

    def _alt_owner(self, alt_id: str) -> Optional[str]:
        record = self._query_one("SELECT id FROM alt_ids WHERE alt = ?", (alt_id,))
        return None if record is None else record[0]

    def stats(self) -> Dict[str, int]:
        return dict(self._stats)

    def fingerprint(self) -> str:
        return self._fingerprint

    # SQLite ----------------------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        # A connection must not cross a fork: a child opens its own.
        if self._connection is None or self._pid != os.getpid():
            try:
                uri = f"{self._db_file.resolve().as_uri()}?mode=ro"
                self._connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
            except sqlite3.Error as err:
                raise self._error(err) from None
            self._pid = os.getpid()
        return self._connection

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _execute(self, sql: str, params: Tuple[Any, ...] = ()) -> sqlite3.Cursor:
        try:
            return self._db().execute(sql, params)
        except sqlite3.Error as err:
            raise self._error(err) from None

    def _query_one(self, sql: str, params: Tuple[Any, ...] = ()) -> Optional[Tuple[Any, ...]]:
        try:
            return self._execute(sql, params).fetchone()
        except sqlite3.Error as err:
            raise self._error(err) from None

    def _error(self, err: sqlite3.Error) -> ArboError:
        return ArboError(f"{self._db_file}: cannot read the entity store ({err}); {REBUILD}.")

    # Writing ---------------------------------------------------------------------------

    @classmethod
    def write(cls, entities: Iterable[Entity], path: PathLike, source: str = "") -> "DiskEntityStore":
        """Stream `entities` into a new store at `path`, `BATCH_SIZE` at a time. A store
        already at `path` is replaced only once the new one is complete: an error (a
        duplicate or empty id, a failing reader) or a kill leaves it as it was."""
        with atomic_path(path) as tmp:
            tmp.mkdir()
            summary, id_width = _write_database(entities, tmp / DB_FILE)
            _write_ids(tmp / DB_FILE, tmp / IDS_FILE, summary.counts["entities"], id_width)
            srsly.write_json(tmp / META_FILE, {
                "kind": KIND, "format_version": FORMAT_VERSION, "source": source,
                "count": summary.counts["entities"], "stats": summary.counts, "fingerprint": summary.fingerprint(),
            })
        return cls(path)

    def to_disk(self, path: PathLike) -> None:
        """Copy the store's files (e.g. into a pipeline directory); a store is never
        modified in place, so writing it onto its own directory does nothing."""
        if Path(path).resolve() == self.path.resolve():
            return
        with atomic_path(path) as tmp:
            tmp.mkdir()
            for name in (DB_FILE, IDS_FILE, META_FILE):
                shutil.copyfile(self.path / name, tmp / name)


def _write_database(entities: Iterable[Entity], db_file: Path) -> Tuple[Summary, int]:
    """Insert the entities and their alternative ids; their summary and the widest id
    (in utf-8 bytes)."""
    summary, id_width = Summary(), 1
    connection = sqlite3.connect(db_file)
    try:
        # The file is a temporary one until it is complete: no journal needed.
        connection.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;" + SCHEMA)
        stream = iter(entities)
        while True:
            batch = list(itertools.islice(stream, BATCH_SIZE))
            if not batch:
                break
            first = summary.counts["entities"]
            records, alts = [], []
            for row, entity in enumerate(batch, start=first):
                if not entity.id:
                    raise ArboError(f"KB entity '{entity.name}' has an empty id.")
                if "\x00" in entity.id:
                    raise ArboError(f"KB id {entity.id!r} (entity '{entity.name}') contains a NUL character.")
                records.append(_record(row, entity))
                # The first entity to claim an alternative id keeps it (INSERT OR IGNORE).
                alts.extend((alt, entity.id) for alt in entity.alt_ids)
                alts.extend((normalize_id(alt), entity.id) for alt in entity.alt_ids)
                id_width = max(id_width, len(entity.id.encode("utf8")))
                summary.add(entity)
            try:
                connection.executemany("INSERT INTO entities VALUES (?, ?, ?, ?, ?, ?, ?, ?)", records)
            except sqlite3.IntegrityError as err:
                raise _duplicate(connection, batch, first) or ArboError(
                    f"Cannot store KB entities {first}-{first + len(batch) - 1} ({err}).") from None
            connection.executemany("INSERT OR IGNORE INTO alt_ids VALUES (?, ?)", alts)
        connection.commit()
    finally:
        connection.close()
    return summary, id_width


def _duplicate(connection: sqlite3.Connection, batch: List[Entity], first: int) -> Optional[DuplicateIdError]:
    """The first entity of the batch whose id an earlier row has: the INSERT stopped there."""
    for row, entity in enumerate(batch, start=first):
        earlier = connection.execute("SELECT row FROM entities WHERE id = ? AND row < ?", (entity.id, row)).fetchone()
        if earlier is not None:
            return DuplicateIdError(entity, row, earlier[0])
    return None


def _write_ids(db_file: Path, ids_file: Path, count: int, width: int) -> None:
    ids = np.lib.format.open_memmap(ids_file, mode="w+", dtype=f"S{width}", shape=(count,))
    connection = sqlite3.connect(db_file)
    try:
        cursor = connection.execute("SELECT id FROM entities ORDER BY row")
        start = 0
        while records := cursor.fetchmany(BATCH_SIZE):
            ids[start: start + len(records)] = [record[0].encode("utf8") for record in records]
            start += len(records)
        ids.flush()
    finally:
        connection.close()
        del ids


def _read_meta(path: Path) -> Dict[str, Any]:
    meta_file = path / META_FILE
    if not meta_file.exists():
        raise ArboError(f"No entity store at '{path}' (missing {META_FILE}); "
                        "build one with `python -m spacy_arbo build-kb --store disk`.")
    try:
        meta = srsly.read_json(meta_file)
    except (OSError, ValueError) as err:  # UnicodeDecodeError is a ValueError
        raise ArboError(f"{meta_file}: cannot read ({err}); {REBUILD}.") from None
    if not isinstance(meta, dict) or meta.get("kind") != KIND:
        raise ArboError(f"{meta_file}: not the metadata of a disk entity store (no kind '{KIND}').")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ArboError(f"{meta_file}: disk entity store format version {meta.get('format_version')} is not "
                        f"supported (expected {FORMAT_VERSION}); {REBUILD}.")
    fields = {"source": str, "count": int, "stats": dict, "fingerprint": str}
    for key, kind in fields.items():
        if not isinstance(meta.get(key), kind):
            raise ArboError(f"{meta_file}: corrupt (field '{key}' missing or not {kind.__name__}); {REBUILD}.")
    return meta


def _read_ids(ids_file: Path, count: int) -> np.ndarray:
    try:
        ids = np.load(ids_file, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:  # an empty file is an EOFError
        raise ArboError(f"{ids_file}: cannot read the entity ids ({err}); {REBUILD}.") from None
    if ids.ndim != 1 or ids.dtype.kind != "S":
        raise ArboError(f"{ids_file}: expected a 1-d array of byte strings, found {ids.dtype} {ids.shape}; {REBUILD}.")
    if len(ids) != count:
        raise ArboError(f"{ids_file}: holds {len(ids)} ids, but {ids_file.parent / META_FILE} says "
                        f"{count} entities; {REBUILD}.")
    return ids
