"""Choosing the link memory's settings on a dev set."""
from typing import Iterable, List, Optional, Tuple

from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example

from ..evaluation import link_gold_mentions
from ..pipeline.link_memory import LinkMemory
from ..scoring import accuracy, mention_outcomes
from ..util import ArboError
from .rule import Trial, choose

# Settings (min_count, min_share, fold_plurals) `tune_link_memory` tries, the most cautious
# first (the first of equals wins).
MEMORY_GRID = [(count, share, fold) for fold in (False, True) for count in (3, 2, 1)
               for share in (1.0, 0.9, 0.8, 0.7, 0.6)]
MemorySetting = Tuple[int, float, bool]


def tune_link_memory(
    nlp: Language, memory: LinkMemory, dev_docs: List[Doc], grid: Iterable[MemorySetting] = MEMORY_GRID,
) -> Tuple[float, List[Tuple[int, float, bool, float]], Optional[MemorySetting]]:
    """Strict accuracy@1 of `nlp` on the gold mentions of `dev_docs` without the memory, the
    rows (min_count, min_share, fold_plurals, strict accuracy) with it, and the best setting:
    None when none beats the pipeline without it. `nlp` links the docs once; each setting
    relinks copies."""
    if not any(ent.kb_id_ for doc in dev_docs for ent in doc.ents):
        raise ArboError("The dev set has no linked gold mentions to choose the link memory's settings on.")
    linked = link_gold_mentions(nlp, dev_docs, exclude=[memory.name])

    def strict(docs: Iterable[Doc]) -> float:
        return accuracy(mention_outcomes(Example(p, g) for p, g in zip(docs, dev_docs)), "exact") or 0.0

    without = strict(linked)
    rows = []
    for count, share, fold in grid:
        candidate = memory.with_settings(count, share, fold)
        rows.append((count, share, fold, strict(candidate(doc.copy()) for doc in linked)))
    trials = [Trial(None, without)] + [Trial(row[:3], row[3], cost=1) for row in rows]
    return without, rows, choose(trials).setting
