"""Choosing the NIL threshold of the component that makes the final link, on a dev set.

Below the threshold a mention is NIL. spaCy's link F-score rewards exactly what a threshold
is for: a wrong link that becomes NIL removes a false positive and costs no recall, a right
one that becomes NIL costs a true positive. So the threshold that maximises `nel_micro_f`
on dev is the calibrated one; accuracy@1, which counts a NIL as wrong for a linked gold
mention, can only fall (both are reported).
"""
from dataclasses import replace
from typing import List, Optional, Tuple

import numpy as np
from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example

from .evaluation import link_gold_mentions
from .kb.entities import NIL
from .scoring import MentionOutcome, accuracy, link_prf, mention_outcomes
from .util import ArboError

# Thresholds tried: these quantiles of the dev mentions' best scores, and None (no threshold).
QUANTILES = np.linspace(0.0, 0.5, 26)

Row = Tuple[Optional[float], float, float]  # threshold, nel_micro_f, accuracy


def deciding_component(nlp: Language):
    """The last component that writes `ent.kb_id_` from ranked candidates and has a threshold."""
    deciders = [proc for _, proc in nlp.pipeline if "threshold" in getattr(proc, "cfg", {})]
    if not deciders:
        raise ArboError("The pipeline has no arbo_linker or multi_cross_reranker to set a threshold on.")
    return deciders[-1]


def tune_threshold(nlp: Language, gold_docs: List[Doc]) -> Tuple[List[Row], Optional[float]]:
    """[(threshold, nel_micro_f, accuracy)] on the gold mentions of `gold_docs`, and the
    threshold with the best F (the lowest of equals, None first); the deciding component
    (and the pipeline's config) is left set to it."""
    component = deciding_component(nlp)
    component.configure(threshold=None)
    docs = link_gold_mentions(nlp, gold_docs)
    outcomes = mention_outcomes(Example(p, g) for p, g in zip(docs, gold_docs))
    scores = [o.score for o in outcomes if o.score is not None]
    if not scores:
        raise ArboError("The dev set has no linked gold mentions to choose a threshold on.")
    thresholds: List[Optional[float]] = [None] + sorted({float(q) for q in np.quantile(scores, QUANTILES)})
    rows = [(t, *_score_at(outcomes, t)) for t in thresholds]
    best = max(rows, key=lambda row: row[1])[0]  # max keeps the first of equals
    component.configure(threshold=best)
    return rows, best


def _score_at(outcomes: List[MentionOutcome], threshold: Optional[float]) -> Tuple[float, float]:
    thresholded = [
        o if threshold is None or (o.score is not None and o.score >= threshold) else replace(o, predicted=NIL)
        for o in outcomes
    ]
    return link_prf(thresholded)["nel_micro_f"], accuracy(thresholded)
