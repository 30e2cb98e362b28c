"""The entity store: an ordered, id-addressable collection of KB entities.

Row `i` of every vector matrix and index built over the KB belongs to `store.ids[i]`,
so the store is the single source of truth for that order.
"""
import hashlib
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Tuple

import srsly
from spacy.util import registry

from ..util import ArboError, PathLike, atomic_path
from .entities import Entity, normalize_id

STORE_FILE = "entities.msgpack"
META_FILE = "meta.json"
FORMAT_VERSION = 1


class EntityStore:
    def __init__(self, entities: Iterable[Entity] = (), source: str = "") -> None:
        self.source = source
        # The directory this store was loaded from; it may also hold a prebuilt index.
        self.path: Optional[Path] = None
        self._entities: List[Entity] = []
        self._row: Dict[str, int] = {}
        self._alt: Dict[str, str] = {}
        for entity in entities:
            self.add(entity)

    def add(self, entity: Entity) -> None:
        if entity.id in self._row:
            raise ArboError(f"Duplicate KB id '{entity.id}' (entity '{entity.name}').")
        if not entity.id:
            raise ArboError(f"KB entity '{entity.name}' has an empty id.")
        self._row[entity.id] = len(self._entities)
        self._entities.append(entity)
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

    def __getitem__(self, entity_id: str) -> Entity:
        try:
            return self._entities[self._row[entity_id]]
        except KeyError:
            raise KeyError(f"Unknown KB id '{entity_id}'") from None

    @property
    def ids(self) -> List[str]:
        return [e.id for e in self._entities]

    def entity_at(self, row: int) -> Entity:
        return self._entities[row]

    def row(self, entity_id: str) -> int:
        return self._row[entity_id]

    def resolve(self, raw_id: str) -> Optional[str]:
        """Map an id as written in a corpus to the store's id, or None if unknown.

        Tries the id itself, its normalised spelling, then both as alternative ids,
        so `D008107`, `MESH:D008107` and an `OMIM:` alt id reach one entity.
        """
        raw_id = raw_id.strip()
        for candidate in (raw_id, normalize_id(raw_id)):
            if candidate in self._row:
                return candidate
        for candidate in (raw_id, normalize_id(raw_id)):
            if candidate in self._alt:
                return self._alt[candidate]
        return None

    def alias_pairs(self) -> List[Tuple[str, int]]:
        """(surface form, row) for every distinct name and alias of every entity."""
        pairs = []
        for row, entity in enumerate(self._entities):
            seen = set()
            for text in (entity.name, *entity.aliases):
                key = text.strip().lower()
                if key and key not in seen:
                    seen.add(key)
                    pairs.append((text.strip(), row))
        return pairs

    def stats(self) -> Dict[str, int]:
        return {
            "entities": len(self),
            "aliases": sum(len(e.aliases) for e in self._entities),
            "with_definition": sum(1 for e in self._entities if e.definition),
            "alt_ids": sum(len(e.alt_ids) for e in self._entities),
        }

    def fingerprint(self) -> str:
        """A hash of ids and texts, so a vector file can be checked against its KB."""
        digest = hashlib.sha1()
        for e in self._entities:
            digest.update("\x1f".join((e.id, e.name, e.definition, *e.aliases)).encode("utf8"))
            if e.parents:  # KBs without parents keep the fingerprints they had before parents existed
                digest.update(("\x1d" + "\x1f".join(e.parents)).encode("utf8"))
            digest.update(b"\x1e")
        return digest.hexdigest()

    def subset(self, keep: Callable[[Entity], bool]) -> "EntityStore":
        return EntityStore((e for e in self._entities if keep(e)), source=self.source)

    # Serialization -------------------------------------------------------------

    def to_dict(self) -> Dict:
        return {
            "format_version": FORMAT_VERSION,
            "source": self.source,
            "ids": [e.id for e in self._entities],
            "names": [e.name for e in self._entities],
            "aliases": [list(e.aliases) for e in self._entities],
            "definitions": [e.definition for e in self._entities],
            "types": [list(e.types) for e in self._entities],
            "alt_ids": [list(e.alt_ids) for e in self._entities],
            "parents": [list(e.parents) for e in self._entities],
        }

    @classmethod
    def from_dict(cls, data: Dict, origin: str = "entity store") -> "EntityStore":
        try:
            if data["format_version"] != FORMAT_VERSION:
                raise ArboError(
                    f"{origin}: format version {data['format_version']} is not supported "
                    f"(expected {FORMAT_VERSION}); rebuild it with `python -m spacy_arbo build-kb`."
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

    def to_bytes(self) -> bytes:
        return srsly.msgpack_dumps(self.to_dict())

    @classmethod
    def from_bytes(cls, data: bytes) -> "EntityStore":
        return cls.from_dict(srsly.msgpack_loads(data))

    def to_disk(self, path: PathLike) -> None:
        with atomic_path(path) as tmp:
            tmp.mkdir()
            srsly.write_msgpack(tmp / STORE_FILE, self.to_dict())
            srsly.write_json(tmp / META_FILE, {"source": self.source, **self.stats(),
                                               "fingerprint": self.fingerprint()})

    @classmethod
    def from_disk(cls, path: PathLike) -> "EntityStore":
        path = Path(path)
        store_file = path / STORE_FILE
        if not store_file.exists():
            raise ArboError(
                f"No entity store at '{path}' (missing {STORE_FILE}); "
                "build one with `python -m spacy_arbo build-kb`."
            )
        try:
            data = srsly.read_msgpack(store_file)
        except Exception as err:  # msgpack raises several unrelated types
            raise ArboError(f"{store_file}: cannot read entity store ({err}).") from None
        store = cls.from_dict(data, origin=str(store_file))
        store.path = path
        return store


@registry.misc("spacy_arbo.KBFromDir.v1")
def create_kb_loader(path: Optional[PathLike]) -> Callable[..., EntityStore]:
    """A `kb_loader` for `[initialize.components.arbo_linker.kb_loader]`.

    `path` may stay null in a shipped config (so `spacy debug config` passes); it must be set,
    usually by `--paths.kb`, before the pipeline is initialized.
    """

    def load(*_args, **_kwargs) -> EntityStore:
        if path is None:
            raise ArboError(
                "kb_loader: no KB directory given; set it with --paths.kb DIR "
                "(a directory written by `python -m spacy_arbo build-kb`)."
            )
        return EntityStore.from_disk(path)

    return load
