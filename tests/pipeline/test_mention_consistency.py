import pytest
import spacy
from confection import ConfigValidationError

from spacy_arbo.pipeline.mention_consistency import MentionConsistency
from spacy_arbo.util import ArboError

from ..conftest import make_doc


def consistent(text, labelled, **config):
    """`text` with the (surface, label) mentions a recognizer found, left to right, through a
    mention_consistency."""
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("mention_consistency", config=config)
    doc = nlp.make_doc(text)
    spans, start = [], 0
    for surface, label in labelled:
        begin = text.index(surface, start)
        start = begin + len(surface)
        spans.append(doc.char_span(begin, start, label=label))
    doc.ents = spans
    return [(e.text, e.start_char, e.label_) for e in pipe(doc).ents]


# "Ataxia" as a word, in its case: 4 occurrences ("ataxia" and "Ataxias" are other texts).
TEXT = "Ataxia came first. Later ataxia and Ataxia, then Ataxia again; Ataxias and Ataxia."


def test_a_text_labelled_often_enough_is_labelled_everywhere():
    found = consistent(TEXT, [("Ataxia", "Disease"), ("Ataxia", "Disease")])  # 2 of 4: 50% >= 35%
    assert found == [("Ataxia", start, "Disease") for start in (0, 36, 49, 75)]


def test_one_labelled_occurrence_among_many_is_not_spread():
    assert consistent(TEXT, [("Ataxia", "Disease")]) == [("Ataxia", 0, "Disease")]
    # ... unless the share asked for is that low.
    assert len(consistent(TEXT, [("Ataxia", "Disease")], min_share=0.2)) == 4


def test_short_forms_of_a_labelled_long_form_are_labelled_where_they_occur():
    text = "Wilson disease (WD) is rare. In WD, copper builds up; WDR5 is a gene."
    found = consistent(text, [("Wilson disease", "Disease")])
    assert [(t, s) for t, s, _ in found] == [("Wilson disease", 0), ("WD", 16), ("WD", 32)]
    assert consistent(text, [("Wilson disease", "Disease")], short_forms=False) == [("Wilson disease", 0, "Disease")]
    # A long form the recognizer did not label gives nothing.
    assert consistent(text, [("copper", "Chemical")]) == [("copper", 36, "Chemical")]
    # NCBI Disease test PMID 9467011's definition, with more in its parentheses.
    text = "Cowden disease (CD; MIM 158350) is rare. In CD, tumours form."
    assert [(t, s) for t, s, _ in consistent(text, [("Cowden disease", "Disease")])] == [
        ("Cowden disease", 0), ("CD", 16), ("CD", 44)]


def test_labels_carry_over_and_the_longer_span_stays():
    text = "Breast cancer and hereditary breast cancer; breast cancer in men."
    found = consistent(text, [("hereditary breast cancer", "Disease"), ("breast cancer", "Cancer")])
    # "breast cancer": 2 occurrences, 1 labelled (50%): the other is inside the longer mention.
    assert found == [("hereditary breast cancer", 18, "Disease"), ("breast cancer", 44, "Cancer")]
    found = consistent("Gout. Then gout and Gout.", [("Gout", "A"), ("gout", "B"), ("Gout", "A")])
    assert found == [("Gout", 0, "A"), ("gout", 11, "B"), ("Gout", 20, "A")]


def test_docs_without_mentions_or_repeats_pass_unchanged():
    assert consistent("", []) == []
    assert consistent("Nothing to see here.", []) == []
    assert consistent("Fever once.", [("Fever", "Disease")]) == [("Fever", 0, "Disease")]


def test_round_trip_and_pipe(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler", name="ner").add_patterns(
        [{"label": "Disease", "pattern": [{"LOWER": "wilson"}, {"LOWER": "disease"}]}])
    nlp.add_pipe("mention_consistency", config={"min_share": 0.5})
    texts = ["Wilson disease (WD) is rare. In WD, copper builds up.", "No mention.", "",
             "Hepatolenticular degeneration, or Wilson Disease (WD); WD"]
    expected = [["Wilson disease", "WD", "WD"], [], [], ["Wilson Disease", "WD", "WD"]]
    assert [[e.text for e in doc.ents] for doc in nlp.pipe(texts)] == expected
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    assert loaded.get_pipe_config("mention_consistency")["min_share"] == 0.5
    assert [[(e.text, e.start, e.label_) for e in d.ents] for d in loaded.pipe(texts)] == \
        [[(e.text, e.start, e.label_) for e in d.ents] for d in nlp.pipe(texts)]


@pytest.mark.parametrize("share", [0, -0.5, 1.5])
def test_bad_share_is_a_clear_error(share):
    with pytest.raises(ArboError, match=rf"^mention_consistency: min_share takes a number in \(0, 1\]; got {share}\.$"):
        spacy.blank("en").add_pipe("mention_consistency", config={"min_share": share})
    with pytest.raises(ArboError, match=r"^mention_consistency: min_share takes a number in \(0, 1\]; got True\.$"):
        MentionConsistency(spacy.blank("en").vocab, min_share=True)
    with pytest.raises(ConfigValidationError, match="min_share"):  # spaCy checks the type
        spacy.blank("en").add_pipe("mention_consistency", config={"min_share": "half"})


def test_gold_style_docs_keep_their_ids():
    """A doc whose mentions carry kb ids (a linker upstream) keeps them."""
    nlp = spacy.blank("en")
    doc = make_doc(nlp, "Fever, then Fever.", [("Fever", "MESH:D005334"), ("Fever", "MESH:D005334")])
    pipe = nlp.add_pipe("mention_consistency")
    assert [(e.text, e.kb_id_) for e in pipe(doc).ents] == [("Fever", "MESH:D005334")] * 2
