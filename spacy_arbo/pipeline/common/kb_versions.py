"""One KB version per pipeline. Every component that keeps something made from a KB (the names a
`kb_mention_finder` matches, the ids a `link_memory` writes) records the
version of that KB (its fingerprint), and is checked against the KB the pipeline links to: a
finder over another KB proposes names that the linker then links to whatever entity is nearest,
and one left behind by `kb add` never finds the new entities. `follow_kb` brings every such
component to a changed KB.
"""
from pathlib import Path
from typing import Any, List, Optional, Protocol, Tuple, runtime_checkable

import srsly
from spacy.language import Language

from ...kb.store import BaseEntityStore
from ...util import ArboError, atomic_path, read_json

VERSION_FILE = "kb_version.json"
# How many characters of the fingerprint name a version in messages and files.
VERSION_LENGTH = 16


@runtime_checkable
class KBDerived(Protocol):
    """A component holding state made from a KB: `kb_version` is that KB's (None: saved before
    versions were recorded, or made from a list of names rather than a KB)."""

    kb_version: Optional[str]

    def follow_kb(self, kb: BaseEntityStore) -> Optional[str]:
        """Remake the state from `kb` and record its version; what changed (None: nothing)."""


def kb_version(kb: BaseEntityStore) -> str:
    return kb.fingerprint()[:VERSION_LENGTH]


def kb_holders(nlp: Language) -> List[Tuple[str, BaseEntityStore]]:
    """The components that link to a KB (arbo_linkers, rerankers), with their KBs, in order."""
    return [(name, proc.kb) for name, proc in nlp.pipeline if isinstance(getattr(proc, "kb", None), BaseEntityStore)]


def pipeline_kb(nlp: Optional[Language]) -> Optional[Tuple[str, BaseEntityStore]]:
    """The last component that links to a KB, which decides the links, and its KB."""
    holders = kb_holders(nlp) if nlp is not None else []
    return holders[-1] if holders else None


def kb_derived(nlp: Language) -> List[Tuple[str, KBDerived]]:
    return [(name, proc) for name, proc in nlp.pipeline if isinstance(proc, KBDerived)]


def check_kb_version(name: str, component: KBDerived, nlp: Optional[Language]) -> None:
    """`component` was made from the KB that `nlp` links to, or says so in one line with what to do."""
    linking = pipeline_kb(nlp)
    if linking is None or component.kb_version is None:
        return
    owner, kb = linking
    if component.kb_version != kb_version(kb):
        raise ArboError(f"{name} was made from another KB (version {component.kb_version}) than the one {owner} "
                        f"links to (version {kb_version(kb)}, {len(kb):,} entities); remove it and add it again "
                        "from that KB (add-kb-finder, add-ner, add-memory), or change the KB with `kb add` / "
                        "`kb remove`, which keep every component in step.")


def check_kb_versions(nlp: Language) -> None:
    """Every component that links to a KB links to the same one, and every component made from a
    KB was made from it (`check_kb_version`)."""
    holders = kb_holders(nlp)
    versions = {kb_version(kb) for _, kb in holders}
    if len(versions) > 1:
        raise ArboError("The components link to different KBs: " + ", ".join(
            f"{name} (version {kb_version(kb)}, {len(kb):,} entities)" for name, kb in holders) + ".")
    for name, component in kb_derived(nlp):
        check_kb_version(name, component, nlp)


def follow_kb(nlp: Language, kb: BaseEntityStore) -> List[str]:
    """Bring every KB-derived component of `nlp` to `kb` (after `kb add` / `kb remove`); a line
    per component that changed, saying how."""
    changes = [(name, component.follow_kb(kb)) for name, component in kb_derived(nlp)]
    return [f"{name}: {change}" for name, change in changes if change]


def write_version(path: Path, version: Optional[str]) -> None:
    """The version beside a component's other files (none written for an unknown one)."""
    if version is not None:
        with atomic_path(path / VERSION_FILE) as tmp:
            srsly.write_json(tmp, {"kb_version": version})


def read_version(path: Path) -> Optional[str]:
    """The version `write_version` wrote; None for a component saved before versions were recorded."""
    file = path / VERSION_FILE
    if not file.exists():
        return None
    data: Any = read_json(file)
    if not isinstance(data, dict) or not isinstance(data.get("kb_version"), str):
        raise ArboError(f"{file}: expected {{\"kb_version\": \"...\"}}.")
    return data["kb_version"]
