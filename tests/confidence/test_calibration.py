import numpy as np
import pytest

from spacy_arbo.confidence.calibration import Calibration, fit_calibration
from spacy_arbo.confidence.features import FEATURES
from spacy_arbo.util import ArboError


def rows_and_outcomes(n=400, seed=0):
    """A top score that predicts the outcome: right with probability equal to the score."""
    rng = np.random.default_rng(seed)
    top = rng.uniform(0, 1, n)
    rows = [[t, t / 2] + [0.0] * (len(FEATURES) - 2) for t in top]
    return rows, rng.uniform(0, 1, n) < top


def test_fitted_confidence_follows_the_score_and_is_calibrated():
    rows, right = rows_and_outcomes(4000)
    calibration = fit_calibration(rows, right, "dev")
    high, low = calibration([[0.9, 0.45] + [0.0] * 10, [0.1, 0.05] + [0.0] * 10])
    assert high > 0.75 and low < 0.25
    test_rows, test_right = rows_and_outcomes(4000, seed=1)
    confidence = calibration(test_rows)
    assert abs(confidence.mean() - np.mean(test_right)) < 0.03


def test_links_all_right_give_a_confidence_short_of_certainty():
    rows = [[1.0, 0.5] + [0.0] * 10] * 3
    confidence = fit_calibration(rows, [True] * 3, "label-free")(rows)
    assert np.all(confidence < 0.95) and np.all(confidence > 0.5)


def test_calibration_round_trips_and_refuses_other_features():
    rows, right = rows_and_outcomes()
    calibration = fit_calibration(rows, right, "dev")
    again = Calibration.from_dict(calibration.to_dict(), "here")
    assert np.array_equal(again(rows), calibration(rows))
    with pytest.raises(ArboError, match="fitted on features"):
        Calibration.from_dict({**calibration.to_dict(), "features": ["top_score"]}, "here")
    with pytest.raises(ArboError, match="here: not a saved confidence calibration"):
        Calibration.from_dict({"weights": []}, "here")
    with pytest.raises(ArboError, match="no links"):
        fit_calibration([], [], "dev")


def test_ignored_features_get_no_weight():
    rows, right = rows_and_outcomes()
    calibration = fit_calibration(rows, right, "label-free", ignore=["top_score"])
    assert calibration.weights[FEATURES.index("top_score")] == 0.0
    assert calibration.weights[FEATURES.index("margin")] > 0.5  # the score's other view carries it
