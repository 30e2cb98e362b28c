"""End-to-end scores of a PubTator prediction file against a gold one, as `evaluate
--end-to-end` counts them: a mention is right with its exact span and exact id set. Ids are
compared as the KB compares them: normalised (`D001` is `MESH:D001`, prefixes case-blind),
or, with a KB, read through it (alt ids to their entity, unknown ids dropped); -1 ids are
dropped and mentions left with no id not counted. Inputs that cannot be compared (other
documents, other id spellings, types the gold file lacks) are an error, never a zero. Whether a
link is right is `scoring.link_is_right`'s exact rule. When the predictions are of the gold file's
own mentions (`link --mentions input`), the linking-only figure is given too: the share of gold
mentions whose predicted id set is theirs (no id: NIL), as `evaluate` scores gold mentions."""
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from ..corpora import parse_gold_ids, read_pubtator
from ..kb.entities import namespace, normalize_id
from ..kb.store import BaseEntityStore
from ..scoring import Link, end_to_end_prf
from ..util import ArboError, PathLike

EXAMPLES = 3
Span = Tuple[str, int, int, str]  # PMID, start, end, type


@dataclass
class _Read:
    """What scoring needs of one file: its links, documents and mention types, and an
    example id of each namespace and of an id the KB lacks, for the errors."""

    links: Set[Link] = field(default_factory=set)
    pmids: Dict[str, None] = field(default_factory=dict)
    types: Counter = field(default_factory=Counter)
    namespaces: Dict[str, str] = field(default_factory=dict)
    ids: int = 0
    unknown: List[str] = field(default_factory=list)
    # Every mention's span and type -> its id set (empty: NIL, or ids the KB lacks), of `types` / of any type.
    spans: Dict[Span, FrozenSet[str]] = field(default_factory=dict)
    all_spans: Set[Span] = field(default_factory=set)


def pubtator_links(path: PathLike, kb: Optional[BaseEntityStore] = None,
                   types: Optional[Sequence[str]] = None) -> Set[Link]:
    """(PMID, start, end, ids) of the linked mentions of a PubTator file (of `types`, if given)."""
    return _read(path, kb, types).links


def _read(path: PathLike, kb: Optional[BaseEntityStore], types: Optional[Sequence[str]]) -> _Read:
    read = _Read()
    for doc in read_pubtator(path):
        read.pmids[doc.pmid] = None
        for m in doc.mentions:
            read.types[m.type] += 1
            read.all_spans.add((doc.pmid, m.start, m.end, m.type))
            if types is not None and m.type not in types:
                continue
            ids = set()
            for raw in parse_gold_ids(m.ids_raw):
                read.ids += 1
                kb_id = kb.resolve(raw) if kb is not None else normalize_id(raw)
                where = f"'{raw}' (PMID {doc.pmid}, {m.start}-{m.end})"
                if kb_id is None:
                    read.unknown.append(where)
                    continue
                ids.add(kb_id)
                read.namespaces.setdefault(namespace(kb_id), where)
            read.spans[(doc.pmid, m.start, m.end, m.type)] = frozenset(ids)
            if ids:
                read.links.add((doc.pmid, m.start, m.end, frozenset(ids)))
    if not read.pmids:
        raise ArboError(f"{path}: no document (an empty file?).")
    return read


def _some(items: Sequence[str]) -> str:
    return ", ".join(items[:EXAMPLES]) + (", ..." if len(items) > EXAMPLES else "")


def _check_documents(predicted: PathLike, gold: PathLike, pred: _Read, want: _Read) -> None:
    """Both files must hold the same documents: a predicted one the gold file lacks would count
    its mentions as false, a gold one the predictions lack its mentions as missed."""
    only_pred = [p for p in pred.pmids if p not in want.pmids]
    only_gold = [p for p in want.pmids if p not in pred.pmids]
    if len(only_pred) == len(pred.pmids):
        raise ArboError(f"{predicted} and {gold} share no document (PMID): score the predictions of the gold "
                        "file's own texts.")
    if only_pred or only_gold:
        sides = [f"{len(ids):,} only in {path} (PMID {_some(ids)})"
                 for ids, path in ((only_pred, predicted), (only_gold, gold)) if ids]
        raise ArboError(f"{predicted} and {gold} hold different documents: {'; '.join(sides)}; score the "
                        "predictions of the gold file's own texts (link GOLD), or cut both files to the same PMIDs.")


def _check_ids(predicted: PathLike, gold: PathLike, kb: Optional[BaseEntityStore], pred: _Read, want: _Read) -> None:
    """Ids that cannot match whatever the linker did: another KB's, or spelled by another
    convention than any normalisation reconciles."""
    if kb is not None and pred.ids and len(pred.unknown) == pred.ids:
        raise ArboError(f"{predicted}: none of its {pred.ids:,} ids is in --kb {kb.path or kb.source} (e.g. "
                        f"{_some(pred.unknown)}): it was linked against another KB.")
    if kb is None and pred.namespaces and want.namespaces and not set(pred.namespaces) & set(want.namespaces):
        raise ArboError(f"{predicted} and {gold} spell ids differently: {next(iter(pred.namespaces.values()))} in "
                        f"the one, {next(iter(want.namespaces.values()))} in the other, and no normalisation "
                        "makes them one id (docs/kb.md); read both through a KB that has both spellings as ids "
                        "or alternative ids (--kb).")


def score_pubtator(predicted: PathLike, gold: PathLike, kb: Optional[BaseEntityStore] = None,
                   types: Optional[Sequence[str]] = None) -> Dict[str, float]:
    """e2e_p, e2e_r, e2e_f of `predicted` against `gold`, gold mentions of `types` only
    (predicted ones of any type: a linker's label is not what is scored)."""
    pred = _read(predicted, kb, None)
    want = _read(gold, kb, types)
    _check_documents(predicted, gold, pred, want)
    missing = [t for t in types or () if t not in want.types]
    if missing:
        present = ", ".join(f"{t} ({n:,})" for t, n in want.types.most_common()) or "none"
        raise ArboError(f"{gold}: no mention has type {', '.join(missing)} (--types); its mention types: {present}.")
    if not want.links:
        why = "an id the KB knows" if kb is not None else "an id"
        raise ArboError(f"{gold}: nothing to score against: none of its mentions{' of --types' if types else ''} "
                        f"has {why}.")
    _check_ids(predicted, gold, kb, pred, want)
    scores = {f"e2e_{key}": value for key, value in end_to_end_prf(pred.links, want.links, "exact").items()}
    if pred.all_spans == want.all_spans:  # the gold mentions, linked: how many links are right
        scores["accuracy"] = sum(pred.spans[span] == ids for span, ids in want.spans.items()) / len(want.spans)
    return scores
