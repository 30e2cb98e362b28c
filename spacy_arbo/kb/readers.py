"""Readers that turn KB source files into an `EntityStore`.

Formats: scispacy's JSONL (`concept_id, canonical_name, aliases, types, definition`),
CTD's disease vocabulary TSV (`.tsv` or `.tsv.gz`, `#` header) and MEDIC
(`IDs||name|synonym|...`, the release NCBI Disease was annotated against).
"""
import io
import json
from pathlib import Path
from typing import Callable, Dict, Iterator, Tuple

from ..util import ArboError, PathLike, atomic_path, read_json_objects, read_lines
from .entities import Entity, normalize_id
from .store import EntityStore

KB_FORMATS = ("jsonl", "ctd", "medic")
CTD_COLUMNS = 9


def _split(field: str, sep: str = "|") -> Tuple[str, ...]:
    return tuple(part.strip() for part in field.split(sep) if part.strip())


def _dedupe_aliases(name: str, aliases: Tuple[str, ...]) -> Tuple[str, ...]:
    seen = {name.lower()}
    kept = []
    for alias in aliases:
        if alias.lower() not in seen:
            seen.add(alias.lower())
            kept.append(alias)
    return tuple(kept)


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


def read_jsonl(path: PathLike) -> Iterator[Tuple[int, Entity]]:
    """scispacy JSONL; ids are normalised as in the CTD reader, so `D008107` and
    `MESH:D008107` name one entity (read_kb rejects the second as a duplicate)."""
    path = Path(path)
    for number, where, record in read_json_objects(path):
        concept_id = _text_field(record, "concept_id", where, allow_int=True)
        name = _text_field(record, "canonical_name", where)
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
            aliases=_dedupe_aliases(name, _split("|".join(record.get("aliases", [])))),
            definition=definition.strip(),
            types=tuple(record.get("types", [])),
            alt_ids=tuple(normalize_id(a) for a in record.get("alt_ids", []) if a.strip()),
            parents=tuple(normalize_id(a) for a in record.get("parents", []) if a.strip()),
        )


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
            aliases=_dedupe_aliases(name.strip(), _split(synonyms)),
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
            aliases=_dedupe_aliases(names[0], names[1:]),
            alt_ids=tuple(normalize_id(i) for i in ids[1:]),
        )


READERS: Dict[str, Callable[[PathLike], Iterator[Tuple[int, Entity]]]] = {
    "jsonl": read_jsonl,
    "ctd": read_ctd,
    "medic": read_medic,
}


def guess_format(path: PathLike) -> str:
    name = Path(path).name.lower().removesuffix(".gz")
    if name.endswith((".jsonl", ".json")):
        return "jsonl"
    if name.endswith(".tsv"):
        return "ctd"
    if "medic" in name:
        return "medic"
    raise ArboError(f"{path}: cannot tell the KB format from the name; pass one of {KB_FORMATS}.")


def read_kb(path: PathLike, fmt: str = "auto") -> EntityStore:
    """Read a KB source file; a duplicate id is an error naming both lines."""
    path = Path(path)
    if not path.exists():
        raise ArboError(f"KB source '{path}' does not exist.")
    fmt = guess_format(path) if fmt == "auto" else fmt
    if fmt not in READERS:
        raise ArboError(f"Unknown KB format '{fmt}'; expected one of {KB_FORMATS}.")
    store = EntityStore(source=str(path))
    first_line: Dict[str, int] = {}
    for number, entity in READERS[fmt](path):
        if entity.id in first_line:
            raise ArboError(
                f"{path}:{number}: duplicate id '{entity.id}' "
                f"(first defined on line {first_line[entity.id]}); ids are compared normalised, "
                f"so e.g. 'D008107' and 'MESH:D008107' are one id."
            )
        first_line[entity.id] = number
        store.add(entity)
    if not len(store):
        raise ArboError(f"{path}: no entities found.")
    return store


def write_jsonl(store: EntityStore, path: PathLike) -> None:
    """Write a store as scispacy-style JSONL, so any KB can be exported for other tools."""
    with atomic_path(path) as tmp:
        with io.open(tmp, "w", encoding="utf8") as handle:
            for e in store:
                record: Dict[str, object] = {
                    "concept_id": e.id,
                    "canonical_name": e.name,
                    "aliases": list(e.aliases),
                    "types": list(e.types),
                    "definition": e.definition,
                }
                if e.alt_ids:
                    record["alt_ids"] = list(e.alt_ids)
                if e.parents:
                    record["parents"] = list(e.parents)
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
