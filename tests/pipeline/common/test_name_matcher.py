"""NameMatcher finds what spaCy's PhraseMatcher finds, overlapping occurrences included."""
import pytest
import spacy
from hypothesis import given, settings
from hypothesis import strategies as st
from spacy.matcher import PhraseMatcher

from spacy_arbo.pipeline.common.name_matcher import NameMatcher
from spacy_arbo.util import ArboError

NLP = spacy.blank("en")
NAMES = ["heart failure", "Heart Failure", "failure", "congestive heart failure", "DM", "type 2 DM", "heart"]
TEXTS = ["Congestive heart failure and HEART failure.", "Type 2 DM, not dm; heart-failure.", "", "failure failure"]


def phrase_matches(attr, names, text):
    matcher = PhraseMatcher(NLP.vocab, attr=attr)
    matcher.add("N", [NLP.make_doc(name) for name in names])
    return sorted((start, end) for _, start, end in matcher(NLP.make_doc(text)))


@pytest.mark.parametrize("attr", ["LOWER", "ORTH"])
@pytest.mark.parametrize("text", TEXTS)
def test_finds_what_the_phrase_matcher_finds(attr, text):
    matcher = NameMatcher.from_docs(attr, map(NLP.make_doc, NAMES))
    assert sorted(matcher(NLP.make_doc(text))) == phrase_matches(attr, NAMES, text)


def test_overlapping_occurrences_and_a_round_trip():
    matcher = NameMatcher.from_docs("LOWER", map(NLP.make_doc, NAMES))
    doc = NLP.make_doc("congestive heart failure")
    assert matcher(doc) == [(0, 3), (1, 2), (1, 3), (2, 3)]
    assert NameMatcher("LOWER", matcher.to_list())(doc) == matcher(doc) and len(matcher) == 6
    with pytest.raises(ArboError, match="LOWER or ORTH, not 'NORM'"):
        NameMatcher("NORM", [])


WORDS = st.sampled_from(["heart", "Heart", "failure", "of", "the", "DM", "dm", ",", "-"])


@settings(max_examples=60, deadline=None)
@given(names=st.lists(st.lists(WORDS, min_size=1, max_size=4).map(" ".join), min_size=1, max_size=6),
       text=st.lists(WORDS, max_size=20).map(" ".join))
def test_any_names_and_text(names, text):
    for attr in ("LOWER", "ORTH"):
        matcher = NameMatcher.from_docs(attr, map(NLP.make_doc, names))
        assert sorted(matcher(NLP.make_doc(text))) == phrase_matches(attr, names, text)
