"""Readers that turn KB source files into an entity store (in memory or on disk).

Formats: scispacy's JSONL (`concept_id, canonical_name, aliases, types, definition`; what
scispacy's records cannot hold, alternative ids and parents, in a `.extra.jsonl` file beside
it), CTD's disease vocabulary TSV (`.tsv` or `.tsv.gz`, `#` header), MEDIC
(`IDs||name|synonym|...`, the release NCBI Disease was annotated against), a names list
(`ID<TAB>name` a line, e.g. BC5CDR's MeSH id -> name file: a KB with no synonyms at all) and
ontologies (OBO, OBO Graphs JSON, OWL RDF/XML: kb/ontology.py).
"""
import io
import json
import re
from array import array
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Tuple, TypeVar

from ..util import ArboError, PathLike, atomic_path, read_json_objects, read_lines
from .disk_store import DiskEntityStore
from .entities import Entity, dedupe_aliases, normalize_id
from .formats import KB_FORMATS
from .ontology import read_ontology
from .store import BaseEntityStore, DuplicateIdError, EntityStore

STORES = ("memory", "disk")
Store = TypeVar("Store", bound=BaseEntityStore)
CTD_COLUMNS = 9
NAMES_COLUMNS = 2
ONTOLOGY_SUFFIXES = (".obo", ".owl", ".ofn")
# An OBO Graphs JSON file opens with its list of graphs; a scispacy record with its fields.
OBO_GRAPHS = re.compile(r'\s*\{\s*"graphs"\s*:')


def _split(field: str, sep: str = "|") -> Tuple[str, ...]:
    return tuple(part.strip() for part in field.split(sep) if part.strip())


_JSON_TYPES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
               list: "a list", dict: "an object", type(None): "null"}


def _json_type(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _text_field(record: Dict, key: str, where: str, allow_int: bool = False) -> str:
    """A required text field, stripped; ids may be JSON integers (`12345`), as some
    KB exports write them."""
    value = record.get(key)
    if allow_int and isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if value is not None and not isinstance(value, str):
        expected = "a string or an integer" if allow_int else "a string"
        raise ArboError(f"{where}: field '{key}' must be {expected}; got {_json_type(value)} ({value!r}).")
    if not value or not value.strip():
        raise ArboError(f"{where}: missing or empty field '{key}'.")
    return value.strip()


def extra_path(path: PathLike) -> Path:
    """Where `write_jsonl` keeps the fields scispacy's `KnowledgeBase` would reject."""
    path = Path(path)
    return path.with_name(f"{path.name[: -len(path.suffix)] if path.suffix else path.name}.extra.jsonl")


def _read_extra(path: Path) -> Dict[str, Dict]:
    """The `.extra.jsonl` beside a JSONL KB: alt_ids and parents per concept_id."""
    extra = extra_path(path)
    if not extra.exists():
        return {}
    records = {}
    for _number, where, record in read_json_objects(extra):
        concept_id = normalize_id(_text_field(record, "concept_id", where, allow_int=True))
        if set(record) - {"concept_id", "alt_ids", "parents"}:
            raise ArboError(f"{where}: only 'concept_id', 'alt_ids' and 'parents' belong here.")
        records[concept_id] = {**record, "where": where}
    return records


def read_jsonl(path: PathLike) -> Iterator[Tuple[int, Entity]]:
    """scispacy JSONL (with its `.extra.jsonl`, if any); ids are normalised as in the CTD
    reader, so `D008107` and `MESH:D008107` name one entity (read_kb rejects the second
    as a duplicate)."""
    path = Path(path)
    extra = _read_extra(path)
    for number, where, record in read_json_objects(path):
        concept_id = _text_field(record, "concept_id", where, allow_int=True)
        name = _text_field(record, "canonical_name", where)
        links = extra.pop(normalize_id(concept_id), None)
        if links is not None:
            record = {**record, **{k: v for k, v in links.items() if k in ("alt_ids", "parents")}}
            where = f"{where} (with {links['where']})"
        for key in ("aliases", "types", "alt_ids", "parents"):
            value = record.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ArboError(f"{where}: field '{key}' must be a list of strings.")
        definition = record.get("definition") or ""
        if not isinstance(definition, str):
            raise ArboError(f"{where}: field 'definition' must be a string.")
        yield number, Entity(
            id=normalize_id(concept_id),
            name=name,
            aliases=dedupe_aliases(name, _split("|".join(record.get("aliases", [])))),
            definition=definition.strip(),
            types=tuple(record.get("types", [])),
            alt_ids=tuple(normalize_id(a) for a in record.get("alt_ids", []) if a.strip()),
            parents=tuple(normalize_id(a) for a in record.get("parents", []) if a.strip()),
        )
    if extra:
        concept_id, links = next(iter(extra.items()))
        raise ArboError(f"{links['where']}: concept_id '{concept_id}' is not in {path}.")


def read_ctd(path: PathLike) -> Iterator[Tuple[int, Entity]]:
    path = Path(path)
    for number, line in read_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != CTD_COLUMNS:
            raise ArboError(
                f"{path}:{number}: expected {CTD_COLUMNS} tab-separated CTD columns, "
                f"found {len(fields)}."
            )
        name, disease_id, alt_ids, definition, parents, tree, _ptree, synonyms, slims = fields
        if not name.strip() or not disease_id.strip():
            raise ArboError(f"{path}:{number}: empty DiseaseName or DiseaseID.")
        yield number, Entity(
            id=normalize_id(disease_id),
            name=name.strip(),
            aliases=dedupe_aliases(name.strip(), _split(synonyms)),
            definition=definition.strip(),
            types=_split(slims),
            alt_ids=tuple(normalize_id(a) for a in _split(alt_ids)),
            parents=tuple(normalize_id(a) for a in _split(parents)),
        )


def read_medic(path: PathLike) -> Iterator[Tuple[int, Entity]]:
    """MEDIC lines: `MESHID|OMIM|...||name|synonym|...`; bare OMIM numbers get `OMIM:`."""
    path = Path(path)
    for number, line in read_lines(path):
        if not line.strip():
            continue
        if "||" not in line:
            raise ArboError(f"{path}:{number}: expected 'IDs||name|synonym...'.")
        id_field, names_field = line.split("||", 1)
        ids = [i if not i.isdigit() else f"OMIM:{i}" for i in _split(id_field)]
        names = _split(names_field)
        if not ids or not names:
            raise ArboError(f"{path}:{number}: empty id or name.")
        yield number, Entity(
            id=normalize_id(ids[0]),
            name=names[0],
            aliases=dedupe_aliases(names[0], names[1:]),
            alt_ids=tuple(normalize_id(i) for i in ids[1:]),
        )


def read_names(path: PathLike) -> Iterator[Tuple[int, Entity]]:
    """`ID<TAB>name` lines (blank lines and `#` comments skipped); a bare MeSH id such as
    `D004961` is normalised as the other readers do (`MESH:D004961`)."""
    path = Path(path)
    for number, line in read_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != NAMES_COLUMNS:
            raise ArboError(f"{path}:{number}: expected 'ID<TAB>name', found {len(fields)} tab-separated "
                            f"field{'s' if len(fields) != 1 else ''}.")
        entity_id, name = (field.strip() for field in fields)
        if not entity_id or not name:
            raise ArboError(f"{path}:{number}: empty {'ID' if not entity_id else 'name'}.")
        yield number, Entity(id=normalize_id(entity_id), name=name)


READERS: Dict[str, Callable[..., Iterator[Tuple[int, Entity]]]] = {
    "jsonl": read_jsonl,
    "ctd": read_ctd,
    "medic": read_medic,
    "names": read_names,
    "obo": read_ontology,  # the only reader with options: synonym_scopes, root
}


def _tsv_format(path: Path) -> str:
    """A `.tsv` whose first entry line has two columns is a names list; else CTD's TSV."""
    for _number, line in read_lines(path):
        if line.strip() and not line.startswith("#"):
            return "names" if len(line.split("\t")) == NAMES_COLUMNS else "ctd"
    return "ctd"


def _obo_graphs(path: Path) -> bool:
    """Whether a `.json` file is OBO Graphs JSON (its first key "graphs"), not scispacy's records."""
    head = ""
    for _number, line in read_lines(path):
        head += line
        if len(head.strip()) >= len('{"graphs":'):
            break
    return bool(OBO_GRAPHS.match(head))


def guess_format(path: PathLike) -> str:
    name = Path(path).name.lower().removesuffix(".gz")
    if name.endswith(ONTOLOGY_SUFFIXES) or (name.endswith(".json") and _obo_graphs(Path(path))):
        return "obo"
    if name.endswith((".jsonl", ".json")):
        return "jsonl"
    if name.endswith(".tsv"):
        return _tsv_format(Path(path))
    if "medic" in name:
        return "medic"
    raise ArboError(f"{path}: cannot tell the KB format from the name; pass one of {KB_FORMATS}.")


def read_kb(path: PathLike, fmt: str = "auto", **options: Any) -> EntityStore:
    """Read a KB source file into memory; a duplicate id is an error naming both lines.
    `options` go to the reader (an ontology's `synonym_scopes` and `root`)."""
    return _stream_kb(path, fmt, lambda entities: EntityStore(entities, source=str(path)), **options)


def entity_lines(path: PathLike, fmt: str = "auto") -> Dict[str, int]:
    """Each entity id of a KB source file -> the line that defines it, for an error about one."""
    fmt = guess_format(path) if fmt == "auto" else fmt
    return {entity.id: number for number, entity in READERS[fmt](Path(path))}


def build_kb(path: PathLike, out_dir: PathLike, fmt: str = "auto", store: str = "memory",
             **options: Any) -> BaseEntityStore:
    """Read a KB source file and write its entity store to `out_dir`: `memory` (an
    `EntityStore`, loaded whole) or `disk` (a `DiskEntityStore`, streamed from the source
    into SQLite without holding every entity, and read on demand). `options` go to the reader."""
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise ArboError(f"{out_dir} is a file: a KB is written as a directory; give a new path, or a "
                        "KB directory to replace.")
    if store == "memory":
        kb = read_kb(path, fmt, **options)
        kb.to_disk(out_dir)
        return kb
    if store == "disk":
        return _stream_kb(path, fmt, lambda entities: DiskEntityStore.write(entities, out_dir, source=str(path)),
                          **options)
    raise ArboError(f"Unknown entity store '{store}'; expected one of {STORES}.")


def _stream_kb(path: PathLike, fmt: str, make: Callable[[Iterator[Entity]], Store], **options: Any) -> Store:
    """What `make` builds from the file's entities, streamed. The store finds duplicate
    ids; the row -> line array here names both lines."""
    path = Path(path)
    if not path.exists():
        raise ArboError(f"KB source '{path}' does not exist.")
    fmt = guess_format(path) if fmt == "auto" else fmt
    if fmt not in READERS:
        raise ArboError(f"Unknown KB format '{fmt}'; expected one of {KB_FORMATS}.")
    if options and fmt != "obo":
        raise ArboError(f"{path}: {', '.join(options)}: for ontologies only (format 'obo'); this file is read "
                        f"as '{fmt}'.")
    read = READERS[fmt]
    lines = array("q")

    def entities() -> Iterator[Entity]:
        for number, entity in read(path, **options):
            lines.append(number)
            yield entity
        if not lines:
            raise ArboError(f"{path}: no entities found.")

    try:
        return make(entities())
    except DuplicateIdError as err:
        raise ArboError(
            f"{path}:{lines[err.row]}: duplicate id '{err.entity_id}' "
            f"(first defined on line {lines[err.first_row]}); ids are compared normalised (docs/kb.md), "
            f"so e.g. 'D008107' and 'MESH:D008107' are one id, as are 'chem:1' and 'CHEM:1'."
        ) from None


def write_jsonl(store: BaseEntityStore, path: PathLike) -> None:
    """Write a store as scispacy's JSONL, which scispacy's `KnowledgeBase` loads as it is;
    alternative ids and parents go to `extra_path(path)` (written only when there are any,
    and removed when there are none, so a re-export leaves no stale file)."""
    extras = [{"concept_id": e.id, **({"alt_ids": list(e.alt_ids)} if e.alt_ids else {}),
               **({"parents": list(e.parents)} if e.parents else {})} for e in store if e.alt_ids or e.parents]
    with atomic_path(path) as tmp:
        with io.open(tmp, "w", encoding="utf8") as handle:
            for e in store:
                record = {"concept_id": e.id, "canonical_name": e.name, "aliases": list(e.aliases),
                          "types": list(e.types), "definition": e.definition}
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    extra = extra_path(path)
    if not extras:
        extra.unlink(missing_ok=True)
        return
    with atomic_path(extra) as tmp:
        with io.open(tmp, "w", encoding="utf8") as handle:
            for record in extras:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
