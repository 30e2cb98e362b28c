"""NIL detection by a confidence threshold: a link whose `span._.kb_confidence` is below the
threshold is taken for NIL (as `link_confidence`'s `threshold` and `link --min-confidence` do), so
1 - confidence is a NIL score. Over thresholds this gives NIL precision and recall against the gold
NIL mentions (PEL's out-of-KB evaluation, section 5 and Figure 2), what the threshold costs the
in-KB mentions (their strict accuracy, a mention turned NIL wrong), the area under the NIL PR
curve, and the threshold a dev set would pick (PEL's: the best NIL F1).

Whether a link is right is `MentionOutcome.credited("exact")` (scoring.link_is_right); a mention
the pipeline itself left NIL is NIL at every threshold, a link without a confidence at none.
"""
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ..kb.entities import NIL
from ..scoring import MentionOutcome

# The thresholds the curve in the metrics JSON is given at (the area uses every distinct confidence).
CURVE_THRESHOLDS = tuple(round(t / 100, 2) for t in range(101))


class NilCounts:
    """The outcomes as arrays, and the counts of every point at any threshold, in one sort."""

    def __init__(self, outcomes: Sequence[MentionOutcome]) -> None:
        gold_nil = np.array([o.gold_is_nil for o in outcomes], dtype=bool)
        pipeline_nil = np.array([o.predicted == NIL for o in outcomes], dtype=bool)
        right = np.array([o.credited("exact") for o in outcomes], dtype=bool) & ~pipeline_nil
        confidence = np.array([np.inf if o.confidence is None else o.confidence for o in outcomes], dtype=float)
        confidence[pipeline_nil] = -np.inf  # NIL whatever the threshold
        self.confidence = confidence
        self.n_gold_nil = int(gold_nil.sum())
        self.n_in_kb = int((~gold_nil).sum())
        # Sorted confidences of each group, so that how many lie below a threshold is one search.
        self._nil = np.sort(confidence[gold_nil])
        self._in_kb = np.sort(confidence[~gold_nil])
        self._in_kb_right = np.sort(confidence[~gold_nil & right])

    def points(self, thresholds: Sequence[float]) -> List[Dict[str, Any]]:
        """At each threshold: NIL P/R/F, the in-KB mentions' strict accuracy (`in_kb_strict`, a
        mention turned NIL wrong) and that of those still linked (`in_kb_strict_kept`)."""
        t = np.asarray(thresholds, dtype=float)
        tp = np.searchsorted(self._nil, t, side="left")
        fp = np.searchsorted(self._in_kb, t, side="left")
        right = len(self._in_kb_right) - np.searchsorted(self._in_kb_right, t, side="left")
        kept = self.n_in_kb - fp
        rows = []
        for i, threshold in enumerate(thresholds):
            p = tp[i] / (tp[i] + fp[i]) if tp[i] + fp[i] else 0.0
            r = tp[i] / self.n_gold_nil if self.n_gold_nil else 0.0
            rows.append({"threshold": float(threshold), "nil_p": float(p), "nil_r": float(r),
                         "nil_f": float(2 * p * r / (p + r)) if p + r else 0.0,
                         "in_kb_strict": float(right[i] / self.n_in_kb) if self.n_in_kb else None,
                         "in_kb_strict_kept": float(right[i] / kept[i]) if kept[i] else None,
                         "n_nil_predicted": int(tp[i] + fp[i])})
        return rows

    def average_precision(self) -> Optional[float]:
        """The area under the NIL precision-recall curve, as average precision (the precision at each
        threshold weighted by the recall it adds; ties of confidence one step), over every threshold;
        None without gold NIL mentions."""
        if not self.n_gold_nil:
            return None
        points = self.points(self.every_threshold())
        recall = np.array([0.0] + [p["nil_r"] for p in points])
        precision = np.array([p["nil_p"] for p in points])
        return float(np.sum(np.diff(recall) * precision))

    def every_threshold(self) -> np.ndarray:
        """Each distinct finite confidence, and infinity: every NIL set a threshold can make."""
        finite = self.confidence[np.isfinite(self.confidence)]
        return np.r_[np.unique(finite), np.inf]


def nil_at(outcomes: Sequence[MentionOutcome], threshold: float) -> Dict[str, Any]:
    """The point of `threshold` (`NilCounts.points`)."""
    return NilCounts(outcomes).points([threshold])[0]


def nil_average_precision(outcomes: Sequence[MentionOutcome]) -> Optional[float]:
    """`NilCounts.average_precision` of `outcomes`."""
    return NilCounts(outcomes).average_precision()


def best_nil_threshold(outcomes: Sequence[MentionOutcome]) -> float:
    """The threshold in [0, 1] of the best NIL F1 on `outcomes` (PEL's choice on a validation set);
    of thresholds that tie, the lowest, which turns the fewest links NIL."""
    counts = NilCounts(outcomes)
    thresholds = [float(t) for t in counts.every_threshold() if t <= 1] + [1.0]
    points = counts.points(thresholds)
    best = max(range(len(points)), key=lambda i: (points[i]["nil_f"], -points[i]["threshold"]))
    return points[best]["threshold"]


def nil_curve_metrics(outcomes: Sequence[MentionOutcome]) -> Dict[str, Any]:
    """`nil_pr_auc` and `nil_curve` (the points at `CURVE_THRESHOLDS`) for the metrics JSON; empty
    without a gold NIL mention or a link with a confidence."""
    if not any(o.gold_is_nil for o in outcomes) or not any(o.confidence is not None and o.predicted != NIL
                                                           for o in outcomes):
        return {}
    counts = NilCounts(outcomes)
    return {"nil_pr_auc": counts.average_precision(), "nil_curve": counts.points(CURVE_THRESHOLDS)}
