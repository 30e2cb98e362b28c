"""End-to-end scores of a PubTator prediction file against a gold one, as `evaluate
--end-to-end` counts them: a mention is right with its exact span and exact id set; ids are
read through the KB (`MESH:D001` for `D001`, alt ids to their entity), unresolvable and -1 ids
dropped, mentions left with no id not counted."""
from typing import Dict, FrozenSet, Optional, Sequence, Set, Tuple

from spacy.scorer import PRFScore

from ..corpora import parse_gold_ids, read_pubtator
from ..kb.store import BaseEntityStore
from ..util import PathLike

Link = Tuple[str, int, int, FrozenSet[str]]


def pubtator_links(path: PathLike, kb: Optional[BaseEntityStore] = None,
                   types: Optional[Sequence[str]] = None) -> Set[Link]:
    """(PMID, start, end, ids) of the linked mentions of a PubTator file (of `types`, if given)."""
    links = set()
    for doc in read_pubtator(path):
        for m in doc.mentions:
            ids = frozenset(filter(None, (kb.resolve(i) if kb is not None else i for i in parse_gold_ids(m.ids_raw))))
            if ids and (types is None or m.type in types):
                links.add((doc.pmid, m.start, m.end, ids))
    return links


def score_pubtator(predicted: PathLike, gold: PathLike, kb: Optional[BaseEntityStore] = None,
                   types: Optional[Sequence[str]] = None) -> Dict[str, float]:
    """e2e_p, e2e_r, e2e_f of `predicted` against `gold`, both read through `kb`, gold mentions
    of `types` only (predicted ones of any type: a linker's label is not what is scored)."""
    prf = PRFScore()
    prf.score_set(pubtator_links(predicted, kb), pubtator_links(gold, kb, types))
    return {"e2e_p": prf.precision, "e2e_r": prf.recall, "e2e_f": prf.fscore}
