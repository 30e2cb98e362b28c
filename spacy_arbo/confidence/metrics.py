"""Whether a confidence means what it says: expected calibration error, and how many links can
be kept at a given precision (the share a curator accepts without looking)."""
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

ECE_BINS = 15
TARGET_PRECISIONS = (0.95, 0.99)


def expected_calibration_error(confidence: Sequence[float], right: Sequence[bool], bins: int = ECE_BINS) -> float:
    """Sum over equal-width bins (`reliability`) of |accuracy - mean confidence|, weighted by the
    bin's share."""
    return float(sum(abs(b["accuracy"] - b["confidence"]) * b["n"] for b in reliability(confidence, right, bins)
                     if b["n"]) / len(confidence))


def precision_coverage(confidence: Sequence[float], right: Sequence[bool]) -> List[Dict[str, float]]:
    """At each distinct confidence, the links at or above it: their share and their precision."""
    conf, y = np.asarray(confidence, dtype=float), np.asarray(right, dtype=bool)
    order = np.argsort(-conf, kind="stable")
    conf, y = conf[order], y[order]
    kept = np.arange(1, len(conf) + 1)
    precision = np.cumsum(y) / kept
    last = np.r_[conf[1:] != conf[:-1], True]  # the last link of each run of equal confidences
    return [{"confidence": float(c), "coverage": float(k / len(conf)), "precision": float(p)}
            for c, k, p in zip(conf[last], kept[last], precision[last])]


def coverage_at_precision(curve: Sequence[Dict[str, float]], precision: float) -> float:
    """The largest share of links kept at a confidence where the kept ones are at least `precision` right."""
    return max((point["coverage"] for point in curve if point["precision"] >= precision), default=0.0)


def reliability(confidence: Sequence[float], right: Sequence[bool], bins: int = ECE_BINS) -> List[Dict[str, Any]]:
    """Per equal-width bin: its range, links, mean confidence and accuracy (the reliability diagram)."""
    conf, y = np.asarray(confidence, dtype=float), np.asarray(right, dtype=float)
    which = np.minimum((conf * bins).astype(int), bins - 1)
    return [{"low": b / bins, "high": (b + 1) / bins, "n": int((which == b).sum()),
             "confidence": float(conf[which == b].mean()) if (which == b).any() else None,
             "accuracy": float(y[which == b].mean()) if (which == b).any() else None} for b in range(bins)]


def confidence_metrics(confidence: Sequence[Optional[float]], right: Sequence[bool]) -> Dict[str, Any]:
    """`confidence_ece`, `coverage_at_precision_95/99`, the curve and the reliability bins of the
    links that carry a confidence (None: no link, e.g. NIL); coverage is a share of every item
    given, so a mention left unlinked counts as not covered. Empty when no link has a confidence."""
    pairs = [(c, r) for c, r in zip(confidence, right) if c is not None]
    if not pairs:
        return {}
    conf, y = [c for c, _ in pairs], [r for _, r in pairs]
    share = len(pairs) / len(confidence)
    curve = [{**point, "coverage": point["coverage"] * share} for point in precision_coverage(conf, y)]
    metrics: Dict[str, Any] = {"confidence_ece": expected_calibration_error(conf, y), "n_confident": len(pairs)}
    for p in TARGET_PRECISIONS:
        metrics[f"coverage_at_precision_{round(p * 100)}"] = coverage_at_precision(curve, p)
    metrics["precision_coverage"] = _thinned(curve)
    metrics["reliability"] = reliability(conf, y)
    return metrics


def _thinned(curve: List[Dict[str, float]], points: int = 101) -> List[Dict[str, float]]:
    """At most `points` of the curve, evenly spread by coverage, the ends kept (JSON stays small)."""
    if len(curve) <= points:
        return curve
    picks = sorted({int(round(i)) for i in np.linspace(0, len(curve) - 1, points)})
    return [curve[i] for i in picks]
