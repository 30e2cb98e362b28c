import pytest

from spacy_arbo.confidence.metrics import (confidence_metrics, coverage_at_precision, expected_calibration_error,
                                           precision_coverage, reliability)


def test_ece_is_zero_when_confidence_matches_accuracy():
    # 10 links at 0.8 of which 8 right, 10 at 0.3 of which 3 right
    conf = [0.8] * 10 + [0.3] * 10
    right = [True] * 8 + [False] * 2 + [True] * 3 + [False] * 7
    assert expected_calibration_error(conf, right) == pytest.approx(0.0)


def test_ece_weights_each_bin_by_its_share():
    # bin of 0.95 (all right: gap 0.05) holds 3 of 4 links; bin of 0.1 (right: gap 0.9) holds 1
    assert expected_calibration_error([0.95, 0.95, 0.95, 0.1], [True, True, True, True]) == pytest.approx(
        0.75 * 0.05 + 0.25 * 0.9)


def test_confidence_of_one_falls_in_the_last_bin():
    bins = reliability([1.0, 0.99], [True, False])
    assert bins[-1]["n"] == 2 and sum(b["n"] for b in bins) == 2


def test_precision_coverage_keeps_equal_confidences_together():
    curve = precision_coverage([0.9, 0.9, 0.5, 0.2], [True, False, True, False])
    assert [(p["confidence"], p["coverage"], p["precision"]) for p in curve] == [
        (0.9, 0.5, 0.5), (0.5, 0.75, pytest.approx(2 / 3)), (0.2, 1.0, 0.5)]


def test_coverage_at_precision_is_the_largest_share_kept_that_precise():
    curve = precision_coverage([0.99, 0.98, 0.97, 0.5, 0.4], [True, True, True, False, True])
    assert coverage_at_precision(curve, 0.95) == pytest.approx(0.6)
    assert coverage_at_precision(curve, 0.75) == pytest.approx(1.0)
    assert coverage_at_precision(precision_coverage([0.9], [False]), 0.95) == 0.0


def test_unlinked_mentions_count_as_not_covered():
    metrics = confidence_metrics([0.99, 0.99, None, None], [True, True, False, True])
    assert metrics["n_confident"] == 2
    assert metrics["coverage_at_precision_99"] == pytest.approx(0.5)
    assert metrics["confidence_ece"] == pytest.approx(0.01)
    assert confidence_metrics([None], [True]) == {}
