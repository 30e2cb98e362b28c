import pytest

from spacy_arbo.evaluation import accuracies
from spacy_arbo.scoring import CREDIT_RULES, MentionOutcome, accuracy, gold_ids


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
    o = outcome(gold, predicted)
    assert tuple(o.credited(rule) for rule in CREDIT_RULES) == credit
    assert o.correct == credit[0]


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
