"""One KB version per entity label. Every component that keeps something made from a KB (the names
a `kb_mention_finder` matches, the ids a `link_memory` writes) records the version of that KB (its
fingerprint), and is checked against the KB the pipeline links its mentions to: a finder over
another KB proposes names that the linker then links to whatever entity is nearest, and one left
behind by `kb add` never finds the new entities. `follow_kb` brings every such component to a
changed KB. A pipeline may link each label to a KB of its own (linkers with `labels` that do not
overlap, e.g. Disease to CTD and Chemical to MeSH); components that link the same label link it
to one KB.
"""
from pathlib import Path
from typing import Any, FrozenSet, List, Optional, Protocol, Tuple, runtime_checkable

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


def _labels(nlp: Language, name: str) -> Tuple[Optional[FrozenSet[str]], FrozenSet[str]]:
    """The labels component `name` links (None: every label) and those it never links (a
    linker's `labels` and `labels_discard`; a component without them links every label)."""
    settings = getattr(nlp.get_pipe(name), "settings", None)
    labels, discard = getattr(settings, "labels", None), getattr(settings, "labels_discard", None)
    return (frozenset(labels) if labels else None), frozenset(discard or ())


def serves(nlp: Language, name: str, label: Optional[str]) -> bool:
    """Whether component `name` links mentions of `label` (None: of any label)."""
    labels, discard = _labels(nlp, name)
    return label is None or (label not in discard and (labels is None or label in labels))


def link_the_same_label(nlp: Language, name: str, other: str) -> bool:
    """Whether two components link some label both: two that name no labels always do."""
    labels, other_labels = _labels(nlp, name)[0], _labels(nlp, other)[0]
    if labels is None and other_labels is None:
        return True
    named = (labels or frozenset()) | (other_labels or frozenset())
    return any(serves(nlp, name, label) and serves(nlp, other, label) for label in named)


def label_kb(nlp: Optional[Language], label: Optional[str]) -> Optional[Tuple[str, BaseEntityStore]]:
    """The last component that links mentions of `label` (None: of any label), and its KB."""
    holders = kb_holders(nlp) if nlp is not None else []
    serving = [(name, kb) for name, kb in holders if serves(nlp, name, label)]
    return serving[-1] if serving else None


def several_kbs(nlp: Language) -> bool:
    return len({kb_version(kb) for _, kb in kb_holders(nlp)}) > 1


def kb_derived(nlp: Language) -> List[Tuple[str, KBDerived]]:
    return [(name, proc) for name, proc in nlp.pipeline if isinstance(proc, KBDerived)]


def check_kb_version(name: str, component: KBDerived, nlp: Optional[Language]) -> None:
    """`component` was made from the KB that `nlp` links its mentions to (a KB finder: those of its
    label; another component: any of the pipeline's KBs), or says so in one line with what to do."""
    label = getattr(component, "label", None)
    linking = label_kb(nlp, label)
    if linking is None or component.kb_version is None:
        return
    owner, kb = linking
    allowed = {kb_version(kb)} if label is not None else {kb_version(other) for _, other in kb_holders(nlp)}
    if component.kb_version not in allowed:
        raise ArboError(f"{name} was made from another KB (version {component.kb_version}) than the one {owner} "
                        f"links to (version {kb_version(kb)}, {len(kb):,} entities); remove it and add it again "
                        "from that KB (add-kb-finder, add-ner, add-memory), or change the KB with `kb add` / "
                        "`kb remove`, which keep every component in step.")


def check_kb_versions(nlp: Language) -> None:
    """Components that link the same label link it to the same KB, and every component made from a
    KB was made from the one it serves (`check_kb_version`)."""
    holders = kb_holders(nlp)
    for i, (name, kb) in enumerate(holders):
        for other, other_kb in holders[i + 1:]:
            if kb_version(kb) != kb_version(other_kb) and link_the_same_label(nlp, name, other):
                raise ArboError(
                    f"The components link the same labels to different KBs: {name} (version {kb_version(kb)}, "
                    f"{len(kb):,} entities) and {other} (version {kb_version(other_kb)}, {len(other_kb):,} entities); "
                    "give each linker the labels it links (`labels`, or `labels_discard` for the others) to link "
                    "each type to its own KB.")
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
