"""Ranked (kb_id, score) candidates: from search results, and merged across sources."""
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
Candidates = List[Tuple[str, float]]

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


def fuse_candidates(
    sources: Sequence[List[Candidates]], k: int, weights: Optional[Sequence[float]] = None
) -> List[Candidates]:
    """Merge ranked lists from several sources.

    Without `weights`, by reciprocal rank fusion: a dense encoder's and TF-IDF's scores live
    on different scales, so only ranks count, sum(1 / (RRF_K + rank)). With `weights`, by the
    weighted sum of the scores, as BioSyn adds its sparse and dense scores; an entity missing
    from a source's list takes the lowest score that list shows (its score there is at most that).
    """
    fused = []
    for per_source in zip(*sources):
        totals: Dict[str, float] = {}
        if weights is None:
            for ranked in per_source:
                for rank, (kb_id, _score) in enumerate(ranked, start=1):
                    totals[kb_id] = totals.get(kb_id, 0.0) + 1.0 / (RRF_K + rank)
        else:
            scores = [dict(ranked) for ranked in per_source]
            floors = [min(by_id.values(), default=0.0) for by_id in scores]
            for kb_id in dict.fromkeys(kb_id for ranked in per_source for kb_id, _ in ranked):
                totals[kb_id] = sum(w * by_id.get(kb_id, floor) for w, by_id, floor in zip(weights, scores, floors))
        best = sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:k]
        fused.append([(kb_id, float(score)) for kb_id, score in best])
    return fused
