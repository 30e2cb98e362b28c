import pytest

from spacy_arbo.evaluation import accuracies
from spacy_arbo.scoring import (CREDIT_RULES, MentionOutcome, accuracy, credited_links, end_to_end_prf, gold_ids,
                                link_is_right)


def outcome(gold: str, predicted: str) -> MentionOutcome:
    return MentionOutcome(label="Disease", gold=gold_ids(gold), predicted=predicted, candidates=())


@pytest.mark.parametrize("gold,predicted,credit", [
    ("MESH:D1", "MESH:D1", (True, True, True)),
    ("MESH:D1", "MESH:D2", (False, False, False)),
    ("MESH:D1|MESH:D2", "MESH:D1", (True, False, True)),
    ("MESH:D1|MESH:D2", "MESH:D2|MESH:D1", (True, True, False)),
    ("MESH:D1|MESH:D2", "MESH:D1|MESH:D3", (False, False, False)),
    ("MESH:D1", "MESH:D1|MESH:D2", (False, False, False)),
    ("", "NIL", (True, True, True)),
    ("", "MESH:D1", (False, False, False)),
    ("MESH:D1", "NIL", (False, False, False)),
])
def test_credit_rules(gold, predicted, credit):
    assert tuple(link_is_right(gold_ids(predicted), gold_ids(gold), rule) for rule in CREDIT_RULES) == credit
    o = outcome(gold, predicted)
    assert tuple(o.credited(rule) for rule in CREDIT_RULES) == credit
    assert o.correct == credit[0]


def test_end_to_end_links_are_credited_by_the_same_rules():
    """A link is right where a gold link of its span is (PubTator may hold two at one span); any-id
    credit needs every predicted id among the gold, as for the gold mentions."""
    gold = {("1", 0, 5, frozenset({"D1", "D2"})), ("1", 0, 5, frozenset({"D9"})), ("1", 10, 15, frozenset({"D3"}))}
    predicted = [("1", 0, 5, frozenset({"D9"})), ("1", 0, 5, frozenset({"D1"})), ("1", 10, 15, frozenset({"D3", "D4"})),
                 ("1", 20, 25, frozenset({"D5"}))]
    assert credited_links(predicted, gold, "exact") == [True, False, False, False]
    assert credited_links(predicted, gold, "any_id") == [True, True, False, False]
    assert end_to_end_prf(predicted, gold, "any_id") == pytest.approx({"p": 2 / 4, "r": 2 / 3, "f": 4 / 7})


def test_accuracy_under_each_rule():
    outcomes = [outcome("MESH:D1|MESH:D2", "MESH:D1"), outcome("MESH:D3", "MESH:D3"),
                outcome("MESH:D4", "MESH:D5"), outcome("MESH:D1|MESH:D2", "MESH:D1|MESH:D2")]
    assert accuracy(outcomes) == 0.75
    assert accuracy(outcomes, "exact") == 0.5
    assert accuracy(outcomes, "single") == 0.5
    assert accuracies(outcomes, "_seen") == {"accuracy_seen": 0.75, "accuracy_seen_strict": 0.5,
                                             "accuracy_seen_belb": 0.5}
    # A NIL gold mention counts for the other rules, not for BELB's (its corpora drop them).
    with_nil = outcomes + [outcome("", "MESH:D1")]
    assert accuracies(with_nil) == {"accuracy": 0.6, "accuracy_strict": 0.4, "accuracy_belb": 0.5}
    assert accuracy([]) is None
    with pytest.raises(ValueError, match="credit rule 'lenient'"):
        outcome("MESH:D1", "MESH:D1").credited("lenient")
