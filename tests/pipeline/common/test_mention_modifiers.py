"""A name grows over the modifiers before it that corpora keep in the mention."""
import spacy
from spacy.tokens import Span

from spacy_arbo.pipeline.common.mention_modifiers import ORIGIN_WORDS, grown_over


def test_spans_grow_over_the_words_before_them():
    doc = spacy.blank("en")("Left renal hamartomas; acute hamartomas; renal")
    spans = [Span(doc, 2, 3, label="Disease"), Span(doc, 5, 6, label="Disease"), Span(doc, 7, 8, label="Disease")]
    grown = grown_over(spans, {"renal", "left"})
    assert [(s.text, s.label_) for s in grown] == [("Left renal hamartomas", "Disease"), ("hamartomas", "Disease"),
                                                   ("renal", "Disease")]


def test_origin_words_are_taken_in_and_words_of_time_or_degree_are_not():
    doc = spacy.blank("en")("Hereditary breast cancer, sporadic tumours, acute cystitis, severe anemia.")
    spans = [Span(doc, 1, 3, label="D"), Span(doc, 5, 6, label="D"), Span(doc, 8, 9, label="D"),
             Span(doc, 11, 12, label="D")]
    assert [s.text for s in grown_over(spans, ORIGIN_WORDS)] == ["Hereditary breast cancer", "sporadic tumours",
                                                                 "cystitis", "anemia"]


def test_a_subtype_before_or_after_a_name_is_taken_in():
    doc = spacy.blank("en")("Type IID von Willebrand disease, SJS type 2, cancer type, this type of cancer.")
    spans = [Span(doc, 2, 5, label="D"), Span(doc, 6, 7, label="D"), Span(doc, 10, 11, label="D"),
             Span(doc, 16, 17, label="D")]
    assert [(s.text, s.label_) for s in grown_over(spans, set())] == [
        ("Type IID von Willebrand disease", "D"), ("SJS type 2", "D"), ("cancer", "D"), ("cancer", "D")]
    doc = spacy.blank("en")("familial type II hyperlipidemia")
    assert [s.text for s in grown_over([Span(doc, 3, 4)], ORIGIN_WORDS)] == ["familial type II hyperlipidemia"]
