"""End-to-end scores of a PubTator prediction file against a gold one, as `evaluate
--end-to-end` counts them: a mention is right with its exact span and exact id set; ids are
read through the KB (`MESH:D001` for `D001`, alt ids to their entity), unresolvable and -1 ids
dropped, mentions left with no id not counted."""
from typing import Dict, FrozenSet, Optional, Sequence, Set, Tuple

from spacy.scorer import PRFScore

from ..corpora import parse_gold_ids, read_pubtator
from ..kb.store import BaseEntityStore
from ..util import ArboError, PathLike

Link = Tuple[str, int, int, FrozenSet[str]]


def pubtator_links(path: PathLike, kb: Optional[BaseEntityStore] = None,
                   types: Optional[Sequence[str]] = None) -> Set[Link]:
    """(PMID, start, end, ids) of the linked mentions of a PubTator file (of `types`, if given)."""
    return _read_links(path, kb, types)[0]


def _read_links(path: PathLike, kb: Optional[BaseEntityStore],
                types: Optional[Sequence[str]]) -> Tuple[Set[Link], Set[str], Set[str]]:
    """The linked mentions, the PMIDs and the mention types of a PubTator file."""
    links, pmids, seen_types = set(), set(), set()
    for doc in read_pubtator(path):
        pmids.add(doc.pmid)
        for m in doc.mentions:
            seen_types.add(m.type)
            ids = frozenset(filter(None, (kb.resolve(i) if kb is not None else i for i in parse_gold_ids(m.ids_raw))))
            if ids and (types is None or m.type in types):
                links.add((doc.pmid, m.start, m.end, ids))
    return links, pmids, seen_types


def score_pubtator(predicted: PathLike, gold: PathLike, kb: Optional[BaseEntityStore] = None,
                   types: Optional[Sequence[str]] = None) -> Dict[str, float]:
    """e2e_p, e2e_r, e2e_f of `predicted` against `gold`, both read through `kb`, gold mentions
    of `types` only (predicted ones of any type: a linker's label is not what is scored). Files
    that share no document, or a gold file with nothing to score, are an error, not a zero."""
    predicted_links, predicted_pmids, _ = _read_links(predicted, kb, None)
    gold_links, gold_pmids, gold_types = _read_links(gold, kb, types)
    if not predicted_pmids & gold_pmids:
        raise ArboError(f"{predicted} and {gold} share no document (PMID): score the predictions of the gold "
                        "file's own texts.")
    if not gold_links:
        unknown = [t for t in types or () if t not in gold_types]
        why = (f"it has no mention of type {', '.join(unknown)} (it has {', '.join(sorted(gold_types)) or 'none'})"
               if unknown and len(unknown) == len(types) else
               "none of its mentions has an id the KB knows" if kb is not None else "none of its mentions has an id")
        raise ArboError(f"{gold}: nothing to score against: {why}.")
    prf = PRFScore()
    prf.score_set(predicted_links, gold_links)
    return {"e2e_p": prf.precision, "e2e_r": prf.recall, "e2e_f": prf.fscore}
