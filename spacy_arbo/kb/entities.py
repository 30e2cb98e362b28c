"""Entity records and identifier normalisation."""
import re
from dataclasses import dataclass, field
from typing import Tuple

NIL = "NIL"

_BARE_MESH = re.compile(r"^[CDcd](\d{6}|\d{9})$")
_PREFIXED = re.compile(r"^([A-Za-z][A-Za-z_]*):(.+)$")


@dataclass(frozen=True)
class Entity:
    """One KB concept, in the shape of scispacy's JSONL records plus alternative ids and
    parent concepts (CTD's ParentIDs: GER's entity-side knowledge units read their names)."""

    id: str
    name: str
    aliases: Tuple[str, ...] = ()
    definition: str = ""
    types: Tuple[str, ...] = ()
    alt_ids: Tuple[str, ...] = field(default=())
    parents: Tuple[str, ...] = ()


def split_ids(kb_id: str) -> Tuple[str, ...]:
    """The parts of a composite id (`D001|D002`, as NCBI Disease and BC5CDR write a
    mention of several concepts); a plain id is its own single part."""
    return tuple(part for part in kb_id.split("|") if part)


def normalize_id(raw: str) -> str:
    """Canonical spelling of a concept id.

    Bare MeSH ids (`D008107`, `C538288`) get the `MESH:` prefix that CTD uses, and
    namespace prefixes are upper-cased (`mesh:D1` -> `MESH:D1`, `omim:1` -> `OMIM:1`),
    so that corpora and KBs written by different tools agree. Anything else (UMLS
    CUIs, free-form ids) is only stripped of surrounding white space.
    """
    raw = raw.strip()
    if _BARE_MESH.match(raw):
        return "MESH:" + raw.upper()
    match = _PREFIXED.match(raw)
    if match and match.group(1).upper() in {"MESH", "OMIM"}:
        return f"{match.group(1).upper()}:{match.group(2).strip()}"
    return raw
