import pytest

from spacy_arbo.tuning.rule import MIN_GAIN, Trial, check_min_gain, choose
from spacy_arbo.util import ArboError


def trials(*scored):
    """(setting, score, cost) triples as trials."""
    return [Trial(setting, score, cost) for setting, score, cost in scored]


def test_settings_of_one_cost_compete_on_score_and_the_earliest_of_equals_wins():
    assert choose(trials(("a", 0.5, 0), ("b", 0.7, 0), ("c", 0.6, 0))).setting == "b"
    assert choose(trials(("a", 0.5, 0), ("b", 0.7, 0), ("c", 0.7, 0))).setting == "b"
    # min_gain only weighs cost: within one cost the best wins by any margin.
    assert choose(trials(("a", 0.5, 0), ("b", 0.501, 0)), min_gain=0.1).setting == "b"


def test_a_costlier_setting_must_gain_min_gain_over_a_cheaper_one():
    scored = trials(("none", 0.5, 0), ("low", 0.625, 1), ("high", 0.75, 1))
    assert choose(scored).setting == "high"
    assert choose(scored, min_gain=0.25).setting == "high"  # exactly the minimum gain is enough
    assert choose(scored, min_gain=0.2501).setting == "none"
    # A tie keeps the cheaper setting, whatever the order it was tried in.
    assert choose(trials(("costly", 0.9, 1), ("cheap", 0.9, 0))).setting == "cheap"
    assert choose(trials(("cheap", 0.9, 0), ("costly", 0.8, 1)), min_gain=0.05).setting == "cheap"


def test_the_cheapest_cost_within_min_gain_of_the_best_wins():
    # One cost per number of candidates, each with its best setting: 2 is within 0.005 of 5's
    # accuracy, 1 is not.
    scored = trials(((1, 0.0), 0.80, 1), ((1, 4.0), 0.82, 1), ((2, 4.0), 0.851, 2), ((5, 2.0), 0.855, 5),
                    ((5, 4.0), 0.84, 5))
    assert choose(scored, min_gain=0.005).setting == (2, 4.0)
    assert choose(scored, min_gain=0.0).setting == (5, 2.0)
    assert choose(scored, min_gain=0.05).setting == (1, 4.0)


def test_nothing_to_choose_from_is_an_error():
    with pytest.raises(ArboError, match="No settings to choose from"):
        choose([])


@pytest.mark.parametrize("min_gain", [-0.1, 1.0, True, "0.1"])
def test_min_gain_is_a_difference_in_zero_to_one(min_gain):
    check_min_gain(0.0)
    check_min_gain(MIN_GAIN)
    with pytest.raises(ArboError, match=r"^max_loss \(a difference of accuracy@1\) takes a number in \[0, 1\); got "):
        check_min_gain(min_gain, "max_loss", "accuracy@1")
