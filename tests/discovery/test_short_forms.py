"""What NIL mentions say of one another: short forms their text defines."""
from spacy_arbo.discovery.nil_mentions import NilMention
from spacy_arbo.discovery.short_forms import defined_short_forms


def _mentions(doc: str, text: str, spans):
    return [NilMention(doc, start, end, text[start:end], "Disease", text[max(0, start - 80):start],
                       text[end:end + 80]) for start, end in spans]


def test_a_short_form_in_parentheses_after_its_long_form_is_defined_by_it():
    text = "Myotonic dystrophy (DM) is common; DM and cancer (CA) differ, as cancer [CA] does."
    spans = [(0, 18), (20, 22), (35, 37), (42, 48), (50, 52), (65, 71), (73, 75)]
    mentions = _mentions("7", text, spans)
    # Listed out of order: pairs are read in each document's reading order; brackets define nothing.
    shuffled = [mentions[i] for i in (3, 0, 6, 1, 5, 2, 4)]
    pairs = {(shuffled[a].text, shuffled[b].text, shuffled[b].start) for a, b in defined_short_forms(shuffled)}
    assert pairs == {("Myotonic dystrophy", "DM", 20), ("cancer", "CA", 50)}


def test_no_definition_across_documents_words_or_longer_short_forms():
    text = "Myotonic dystrophy (DM)"
    other = _mentions("8", text, [(20, 22)]) + _mentions("9", text, [(0, 18)])
    assert defined_short_forms(other) == []
    phrase = "DM (myotonic dystrophy)"
    assert defined_short_forms(_mentions("7", phrase, [(0, 2), (4, 22)])) == []
    spaced = "breast cancer (breast tumour)"
    assert defined_short_forms(_mentions("7", spaced, [(0, 13), (15, 28)])) == []
