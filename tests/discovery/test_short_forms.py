"""What NIL mentions say of one another: short forms their text defines."""
import pytest

from spacy_arbo.annotation.records import Record
from spacy_arbo.discovery.nil_mentions import _nil_mention
from spacy_arbo.discovery.short_forms import defined_short_forms, short_form_definitions


def _mentions(doc: str, text: str, spans, label="Disease"):
    """NIL mentions as discovery reads them (`_nil_mention`: whitespace-collapsed context windows)."""
    record = Record(doc, text, f"doc {doc}")
    return [_nil_mention(record, {"start": start, "end": end, "label": label}) for start, end in spans]


def _pairs(mentions):
    return {(mentions[a].text, mentions[b].text, mentions[b].start) for a, b in defined_short_forms(mentions)}


def test_a_short_form_in_parentheses_after_its_long_form_is_defined_by_it():
    text = "Myotonic dystrophy (DM) is common; DM and Cowden disease (CD) differ, as Cowden disease [CD] does."
    mentions = _mentions("7", text, [(0, 18), (20, 22), (35, 37), (42, 56), (58, 60), (73, 87), (89, 91)])
    # Listed out of order: pairs are read in each document's reading order; brackets define nothing.
    shuffled = [mentions[i] for i in (3, 0, 6, 1, 5, 2, 4)]
    assert _pairs(shuffled) == {("Myotonic dystrophy", "DM", 20), ("Cowden disease", "CD", 58)}


def test_the_long_form_may_run_over_a_line():
    text = "myotonic\n dystrophy\n(DM) again"
    assert _pairs(_mentions("7", text, [(0, 19), (21, 23)])) == {("myotonic\n dystrophy", "DM", 21)}


@pytest.mark.parametrize("text,spans", [
    ("breast cancer, (BC) here", [(0, 13), (16, 18)]),  # something between them
    ("breast cancer (BC, OC) here", [(0, 13), (15, 17)]),  # a list
    ("skin cancer (melanoma) here", [(0, 11), (13, 21)]),  # letters that are no initials of its words
    ("the dementia (AD) here", [(4, 12), (14, 16)]),
    ("DM (myotonic dystrophy)", [(0, 2), (4, 22)]),  # longer in the parentheses
    ("breast cancer (breast tumour)", [(0, 13), (15, 28)]),  # words
])
def test_what_is_no_definition(text, spans):
    assert defined_short_forms(_mentions("7", text, spans)) == []


def test_no_definition_across_documents_or_labels():
    text = "Myotonic dystrophy (DM)"
    assert defined_short_forms(_mentions("8", text, [(20, 22)]) + _mentions("9", text, [(0, 18)])) == []
    mixed = _mentions("7", text, [(0, 18)]) + _mentions("7", text, [(20, 22)], label="Chemical")
    assert defined_short_forms(mixed) == []


def test_a_short_form_defined_as_two_things_gets_no_pair():
    one = "myotonic dystrophy (DM) and congenital myotonic dystrophy (DM)"
    assert len(defined_short_forms(_mentions("1", one, [(0, 18), (20, 22), (28, 57), (59, 61)]))) == 2
    two = _mentions("1", "myotonic dystrophy (DM)", [(0, 18), (20, 22)]) + \
        _mentions("2", "diabetes mellitus (DM)", [(0, 17), (19, 21)])
    assert defined_short_forms(two) == []
    assert short_form_definitions(two)[1] == {"DM"} and short_form_definitions(two[:2])[1] == set()
