"""Entity records and identifier normalisation."""
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, List, Optional, Tuple

NIL = "NIL"

_BARE_MESH = re.compile(r"^[CDcd](\d{6}|\d{9})$")
# A namespace prefix: a letter, then letters, digits, `_`, `.` or `-`, before the first colon
# (`MESH:`, `DO:DOID:893`, `ICD10CM:`); `http://...` is a URL, not a prefix.
_PREFIXED = re.compile(r"^([A-Za-z][A-Za-z0-9_.\-]*):(?!//)(.+)$")


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


def dedupe_aliases(name: str, aliases: Iterable[str]) -> Tuple[str, ...]:
    """`aliases` in order, one per spelling ignoring case, none the name's."""
    seen = {name.lower()}
    kept = []
    for alias in aliases:
        if alias.lower() not in seen:
            seen.add(alias.lower())
            kept.append(alias)
    return tuple(kept)


def kept_parts(kb_id: str, keep: Callable[[str], bool]) -> str:
    """`kb_id` with the parts `keep` accepts only, `|`-joined; NIL when none is left. A composite
    keeps the parts a KB still has: the mention still names those entities."""
    return NIL if kb_id == NIL else "|".join(part for part in split_ids(kb_id) if keep(part)) or NIL


def normalize_id(raw: str) -> str:
    """Canonical spelling of a concept id, so that corpora and KBs written by different tools
    agree: every KB, corpus and scorer compares ids through it (docs/kb.md, "Ids").

    Bare MeSH ids (`D008107`, `c538288`) get the `MESH:` prefix that CTD uses; a namespace
    prefix is case-blind and upper-cased (`mesh:D1` -> `MESH:D1`, `chem:0001` ->
    `CHEM:0001`); the part after it is kept as written (some vocabularies tell ids apart by
    case), except a MeSH id's letter (`MESH:d008107` -> `MESH:D008107`). Anything else (UMLS
    CUIs, free-form ids) is only stripped of surrounding white space.
    """
    raw = raw.strip()
    if _BARE_MESH.match(raw):
        return "MESH:" + raw.upper()
    match = _PREFIXED.match(raw)
    if not match:
        return raw
    prefix, local = match.group(1).upper(), match.group(2).strip()
    if prefix == "MESH" and _BARE_MESH.match(local):
        local = local.upper()
    return f"{prefix}:{local}"


def namespace(kb_id: str) -> str:
    """The prefix of a normalised id (`MESH` of `MESH:D001`), or "" for an id without one:
    ids of two files that share no namespace are spelled by two conventions."""
    match = _PREFIXED.match(kb_id)
    return match.group(1) if match else ""


def common_type(entities: Iterable[Entity]) -> Optional[str]:
    """The one type every entity lists (e.g. `Chemical`), or None when they list none or
    disagree: what a mention found by a KB's names is labelled with when nobody says."""
    shared: Optional[List[str]] = None
    for entity in entities:
        shared = [t for t in (entity.types if shared is None else shared) if t in entity.types]
        if not shared:
            return None
    return shared[0] if shared and len(set(shared)) == 1 else None
