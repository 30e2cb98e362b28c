"""NIL detection by a confidence threshold, on hand-made outcomes whose every figure is worked
out below: NIL P/R/F, what the threshold costs the in-KB mentions, the area under the NIL PR curve
and the threshold a dev set picks."""
import dataclasses

import pytest
import spacy
from spacy.tokens import Span

from spacy_arbo.confidence.nil_curve import (CURVE_THRESHOLDS, best_nil_threshold, nil_at, nil_average_precision,
                                             nil_curve_metrics)
from spacy_arbo.evaluation import linking_metrics
from spacy_arbo.pipeline.common.links import install_extensions
from spacy_arbo.scoring import MentionOutcome, accuracy, nil_prf


def outcome(gold, predicted, confidence):
    return MentionOutcome(label="Disease", gold=tuple(gold.split("|")), predicted=predicted, candidates=(),
                          confidence=confidence)


# Three gold NIL mentions (one the pipeline left NIL itself) and four in the KB: two right, one
# wrong, and a composite whose one part found is wrong under the strict rule.
OUTCOMES = [
    outcome("NIL", "D7", 0.1),
    outcome("NIL", "D8", 0.5),
    outcome("NIL", "NIL", None),
    outcome("D1", "D1", 0.9),
    outcome("D2", "D3", 0.3),
    outcome("D4", "D4", 0.5),
    outcome("D5|D6", "D5", 0.8),
]


@pytest.mark.parametrize("threshold,nil_p,nil_r,in_kb,kept", [
    (0.0, 1.0, 1 / 3, 2 / 4, 2 / 4),  # the pipeline's own NIL only
    (0.4, 2 / 3, 2 / 3, 2 / 4, 2 / 3),  # + 0.1 (gold NIL) and 0.3 (a wrong link)
    (0.5, 2 / 3, 2 / 3, 2 / 4, 2 / 3),  # below the threshold, not at it
    (0.6, 3 / 5, 1.0, 1 / 4, 1 / 2),  # + both at 0.5: a gold NIL and a right link
    (1.0, 3 / 7, 1.0, 0.0, None),  # every mention NIL
])
def test_each_threshold_counts_nil_and_in_kb_mentions(threshold, nil_p, nil_r, in_kb, kept):
    point = nil_at(OUTCOMES, threshold)
    assert (point["nil_p"], point["nil_r"], point["in_kb_strict"]) == pytest.approx((nil_p, nil_r, in_kb))
    assert point["in_kb_strict_kept"] == (None if kept is None else pytest.approx(kept))
    assert point["nil_f"] == pytest.approx(2 * nil_p * nil_r / (nil_p + nil_r))


@pytest.mark.parametrize("threshold", [0.0, 0.2, 0.4, 0.5, 0.6, 0.85, 1.0])
def test_a_point_is_what_the_metrics_give_with_those_links_nil(threshold):
    """The same outcomes with each link below the threshold made NIL, scored by scoring.nil_prf and
    the strict accuracy of the in-KB mentions: one rule, not a second one here."""
    thresholded = [dataclasses.replace(o, predicted="NIL") if o.confidence is not None and o.confidence < threshold
                   else o for o in OUTCOMES]
    expected = nil_prf(thresholded)
    point = nil_at(OUTCOMES, threshold)
    assert (point["nil_p"], point["nil_r"], point["nil_f"]) == pytest.approx(
        (expected["nil_p"], expected["nil_r"], expected["nil_f"]))
    assert point["in_kb_strict"] == pytest.approx(accuracy([o for o in thresholded if not o.gold_is_nil], "exact"))


def test_area_under_the_nil_pr_curve_is_average_precision():
    # Thresholds at 0.1, 0.3, 0.5, 0.8, 0.9 and past every link: recall 0 -> 1/3 at precision 1 (the
    # pipeline's NIL), 1/3 -> 2/3 at precision 1 (+ 0.1), 2/3 at 2/3 (+ 0.3: no recall added), 2/3 -> 1
    # at precision 3/5 (both 0.5s in one step).
    assert nil_average_precision(OUTCOMES) == pytest.approx(1 / 3 + 1 / 3 + 1 / 3 * 3 / 5)
    perfect = [outcome("NIL", "D7", 0.1), outcome("NIL", "D8", 0.2), outcome("D1", "D1", 0.9)]
    assert nil_average_precision(perfect) == pytest.approx(1.0)
    inverted = [outcome("NIL", "D7", 0.9), outcome("D1", "D1", 0.1)]
    assert nil_average_precision(inverted) == pytest.approx(0.5)  # found only with every link NIL
    assert nil_average_precision([outcome("D1", "D1", 0.9)]) is None


def test_a_dev_set_picks_the_threshold_of_the_best_nil_f():
    # NIL F: 0.5 below 0.1, 0.8 at 0.3 (just the 0.1 NIL), 2/3 at 0.5, 0.75 at 0.8.
    assert best_nil_threshold(OUTCOMES) == pytest.approx(0.3)
    # Of thresholds that tie, the lowest: NIL F 2/3 at 0.3 (the 0.1 NIL) and at 1.0 (every link NIL).
    tie = [outcome("NIL", "D7", 0.1), outcome("D1", "D1", 0.3), outcome("D2", "D2", 0.5), outcome("NIL", "D8", 0.7)]
    assert nil_at(tie, 0.3)["nil_f"] == pytest.approx(nil_at(tie, 1.0)["nil_f"]) == pytest.approx(2 / 3)
    assert best_nil_threshold(tie) == pytest.approx(0.3)


def test_a_link_without_a_confidence_is_never_nil():
    outcomes = OUTCOMES + [outcome("NIL", "D9", None)]
    assert nil_at(outcomes, 1.0)["nil_r"] == pytest.approx(3 / 4)


def test_the_metrics_carry_the_curve_only_where_gold_nil_and_confidence_are():
    metrics = nil_curve_metrics(OUTCOMES)
    assert metrics["nil_pr_auc"] == pytest.approx(1 / 3 + 1 / 3 + 1 / 3 * 3 / 5)
    assert [p["threshold"] for p in metrics["nil_curve"]] == list(CURVE_THRESHOLDS)
    assert metrics["nil_curve"][60] == nil_at(OUTCOMES, 0.6)
    assert nil_curve_metrics([o for o in OUTCOMES if not o.gold_is_nil]) == {}
    assert nil_curve_metrics([dataclasses.replace(o, confidence=None) for o in OUTCOMES]) == {}


def test_evaluate_reports_the_nil_curve_of_an_out_of_kb_set():
    """linking_metrics, which `evaluate` writes, scores a gold NIL mention linked at low confidence."""
    install_extensions()
    nlp = spacy.blank("en")
    gold = nlp.make_doc("Fever and Zellweger syndrome.")
    gold.ents = [Span(gold, 0, 1, label="Disease", kb_id="D1"), Span(gold, 2, 4, label="Disease", kb_id="NIL")]
    predicted = nlp.make_doc(gold.text)
    predicted.ents = [Span(predicted, 0, 1, label="Disease", kb_id="D1"),
                      Span(predicted, 2, 4, label="Disease", kb_id="D2")]
    for span, confidence in zip(predicted.ents, (0.9, 0.2)):
        span._.kb_confidence = confidence
    metrics = linking_metrics([predicted], [gold])
    assert metrics["nil_pr_auc"] == pytest.approx(1.0)
    assert metrics["nil_curve"][50]["nil_f"] == pytest.approx(1.0)
    assert metrics["nil_curve"][50]["in_kb_strict"] == pytest.approx(1.0)
