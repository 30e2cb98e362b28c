"""The one range check (issue 87): each bound open or closed at its edge, None, bools, strings,
NaN, and the one wording that every check of the package gives."""
import argparse
import math
from fractions import Fraction

import numpy as np
import pytest

from spacy_arbo.ranges import check_range, in_range, interval_text, range_message
from spacy_arbo.util import ArboError


@pytest.mark.parametrize("bounds,text", [
    ((0, 1, False, False), "[0, 1]"), ((0.5, 1, True, False), "(0.5, 1]"), ((0, 1, False, True), "[0, 1)"),
    ((0, 1, True, True), "(0, 1)"), ((0, None, False, False), ">= 0"), ((0, None, True, False), "> 0"),
    ((None, 1, False, False), "<= 1"), ((None, 1, False, True), "< 1"), ((None, None, False, False), "any number")])
def test_interval_text(bounds, text):
    assert interval_text(*bounds) == text


@pytest.mark.parametrize("low_open,high_open,inside,outside", [
    (False, False, [0, 0.0, 0.3, 1, 1.0], [-1e-9, 1 + 1e-9]),
    (True, False, [1e-9, 1], [0, 0.0, -0.1, 1.5]),
    (False, True, [0, 1 - 1e-9], [1, 1.0, -0.1]),
    (True, True, [0.5], [0, 1]),
])
def test_each_bound_open_or_closed_at_its_edge(low_open, high_open, inside, outside):
    for value in inside:
        check_range("x", value, 0, 1, low_open=low_open, high_open=high_open)
        assert in_range(value, 0, 1, low_open=low_open, high_open=high_open)
    for value in outside:
        assert not in_range(value, 0, 1, low_open=low_open, high_open=high_open)
        with pytest.raises(ArboError, match="^x takes a number in "):
            check_range("x", value, 0, 1, low_open=low_open, high_open=high_open)


def test_one_sided_bounds():
    check_range("w", 0, 0)
    check_range("w", 1e9, 0)
    with pytest.raises(ArboError, match=r"^w takes a number >= 0; got -0.001\.$"):
        check_range("w", -0.001, 0)
    check_range("s", 1e-12, 0, low_open=True)
    with pytest.raises(ArboError, match=r"^s takes a number > 0; got 0\.$"):
        check_range("s", 0, 0, low_open=True)
    with pytest.raises(ArboError, match=r"^h takes a number < 1; got 1\.$"):
        check_range("h", 1, high=1, high_open=True)


def test_the_message_text():
    with pytest.raises(ArboError) as error:
        check_range("link_memory: min_share", 2, 0.5, 1, low_open=True)
    assert str(error.value) == "link_memory: min_share takes a number in (0.5, 1]; got 2."
    with pytest.raises(ArboError) as error:
        check_range("threshold", 1.5, 0, 1, allow_none=True)
    assert str(error.value) == "threshold takes a number in [0, 1] or null; got 1.5."
    with pytest.raises(ArboError) as error:
        check_range("name", "abc", 0, 1)
    assert str(error.value) == "name takes a number in [0, 1]; got 'abc'."
    assert range_message("2", 0, 1) == "takes a number in [0, 1]; got '2'."
    assert range_message(-1, 0) == "takes a number >= 0; got -1."


def test_none_only_where_allowed():
    check_range("threshold", None, 0, 1, allow_none=True)
    with pytest.raises(ArboError, match=r"^threshold takes a number in \[0, 1\]; got None\.$"):
        check_range("threshold", None, 0, 1)
    with pytest.raises(ArboError, match=r"^threshold takes a number in \[0, 1\] or null; got -1\.$"):
        check_range("threshold", -1, 0, 1, allow_none=True)


@pytest.mark.parametrize("value", [True, False, "0.5", "abc", b"1", [0.5], float("nan"), math.inf, -math.inf])
def test_bools_strings_nan_and_infinities_are_not_numbers(value):
    assert not in_range(value, 0)
    with pytest.raises(ArboError, match=r"^x takes a number >= 0 or null; got "):
        check_range("x", value, 0, allow_none=True)
    with pytest.raises(ArboError, match=r"^x takes a number in \[0, 1\]; got "):
        check_range("x", value, 0, 1)


@pytest.mark.parametrize("value", [np.float32(0.5), np.float64(1.0), np.int64(0), Fraction(1, 2), 10 ** 400])
def test_other_real_numbers_are_numbers(value):
    check_range("x", value, 0)
    assert in_range(value, 0) and in_range(value, 0, 1) == (value <= 1)


@pytest.mark.parametrize("value", ["1.5", "-0.5", "nan", "inf", "high"])
def test_the_cli_argument_type_uses_the_same_rule_and_words(value):
    from spacy_arbo.cli._util import probability

    assert probability("0") == 0.0 and probability("1") == 1.0 and probability("0.25") == 0.25
    with pytest.raises(argparse.ArgumentTypeError) as error:
        probability(value)
    assert str(error.value) == f"takes a number in [0, 1]; got '{value}'."


def test_the_package_checks_use_it():
    """A check of each module gives the one wording (faiss_index's is in test_faiss_index.py)."""
    import torch

    from spacy_arbo.encoders.graph import check_graph_settings
    from spacy_arbo.pipeline.link_confidence import check_threshold
    from spacy_arbo.pipeline.link_memory import check_memory_settings
    from spacy_arbo.training.alignment_holdout import hold_out_names
    from spacy_arbo.training.losses import combine_adversarial, fgsm_perturbation
    from spacy_arbo.training.objectives import Arborescence
    from spacy_arbo.training.proxy import Proxy

    cases = [
        (lambda: check_threshold(True), "threshold takes a number in [0, 1] or null; got True."),
        (lambda: check_memory_settings(1, 0.5, False), "link_memory: min_share takes a number in (0.5, 1]; got 0.5."),
        (lambda: Proxy(p=1.5), "proxy: p takes a number in [0, 1]; got 1.5."),
        (lambda: hold_out_names(None, float("nan"), 0), "held_out takes a number in [0, 1); got nan."),
        (lambda: Arborescence(entity_weight=-1), "arborescence: entity_weight takes a number >= 0; got -1."),
        (lambda: fgsm_perturbation(torch.ones(2), -1), "FGSM epsilon takes a number >= 0; got -1."),
        (lambda: combine_adversarial(torch.tensor(1.0), torch.tensor(0.5), True),
         "FGSM lambda takes a number >= 0; got True."),
        (lambda: check_graph_settings(1, 1, "both", "elu", -2), "learn_rate_scale takes a number > 0; got -2."),
    ]
    check_threshold(None)
    check_threshold(1)
    for call, message in cases:
        with pytest.raises(ArboError) as error:
            call()
        assert str(error.value) == message
