"""Ranked (kb_id, score) candidates: from search results, merged across sources, and
written onto spans the same way by every component that decides links."""
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Span

from ..kb.entities import NIL

Candidates = List[Tuple[str, float]]

for _attr in ("kb_candidates", "kb_ents"):
    if not Span.has_extension(_attr):
        Span.set_extension(_attr, default=None)

# Reciprocal rank fusion constant (Cormack et al. 2009): damps the weight of the very
# first ranks so neither source dominates.
RRF_K = 60


def rows_to_candidates(scores: np.ndarray, rows: np.ndarray, ids: Sequence[str], k: int) -> List[Candidates]:
    """Per query, the best `k` distinct entities, best first.

    An entity with several vectors (its name and its aliases) keeps its best-scoring
    one; padding rows (-1) are dropped.
    """
    result = []
    for score_row, id_row in zip(scores, rows):
        seen: Dict[int, None] = {}
        ranked: Candidates = []
        for score, row in zip(score_row, id_row):
            if row < 0:
                continue
            entity = int(row)
            if entity in seen:
                continue
            seen[entity] = None
            ranked.append((ids[entity], float(score)))
            if len(ranked) == k:
                break
        result.append(ranked)
    return result


def fuse_candidates(sources: Sequence[List[Candidates]], k: int) -> List[Candidates]:
    """Merge ranked lists from several sources by reciprocal rank fusion.

    Scores of a dense encoder and of TF-IDF live on different scales, so only ranks are
    combined; the fused score is sum(1 / (RRF_K + rank)).
    """
    fused = []
    for per_source in zip(*sources):
        totals: Dict[str, float] = {}
        for ranked in per_source:
            for rank, (kb_id, _score) in enumerate(ranked, start=1):
                totals[kb_id] = totals.get(kb_id, 0.0) + 1.0 / (RRF_K + rank)
        best = sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:k]
        fused.append([(kb_id, float(score)) for kb_id, score in best])
    return fused


def best_above(ranked: Candidates, threshold: Optional[float]) -> str:
    """The best candidate's id, or NIL when there is none or it scores below `threshold`."""
    return ranked[0][0] if ranked and (threshold is None or ranked[0][1] >= threshold) else NIL


def write_link(span: Span, kb_id: str, ranked: Candidates) -> None:
    """`ent.kb_id_`, and the ranked candidates also in scispacy's `kb_ents` shape."""
    for token in span:
        token.ent_kb_id_ = kb_id
    span._.kb_candidates = ranked
    span._.kb_ents = ranked
