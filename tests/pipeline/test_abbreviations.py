import spacy

from spacy_arbo.pipeline.abbreviations import LongForms, hyphenated_definitions

# NCBI Disease test (PMID 10071185): spaCy splits "T-PLL" at its hyphen, which scispacy's
# detector alone never reads as a short form.
DEFINES = "Patients with sporadic T-cell prolymphocytic leukaemia (T-PLL), a rare disease. T-PLL cells and T-PLLs."


def test_a_hyphenated_short_form_gets_its_long_form_wherever_the_doc_uses_it():
    nlp = spacy.blank("en")
    doc = nlp(DEFINES)
    assert [t.text for t in doc[8:13]] == ["(", "T", "-", "PLL", ")"]
    assert list(hyphenated_definitions(doc)) == [("T-PLL", "T-cell prolymphocytic leukaemia")]
    forms = LongForms(nlp.vocab)(doc)
    starts = [i for i in range(len(DEFINES)) if DEFINES.startswith("T-PLL", i)]
    # Every whole-word use; "T-PLLs" is another word.
    assert {span: DEFINES[span[0]:span[1]] for span in forms} == {(s, s + 5): "T-PLL" for s in starts[:2]}
    assert set(forms.values()) == {"T-cell prolymphocytic leukaemia"}


def test_what_is_not_a_hyphenated_definition_is_left_alone():
    nlp = spacy.blank("en")
    for text in [
        "a link to gene expression (A-B) here",  # no long form matches its letters
        "seen in 1-cell prolymphocytic leukaemia (1-PLL)",  # starts with a digit
        "in T-cell prolymphocytic leukaemia (T - PLL)",  # spaces: not one word
        "in the complicated very-long-disease-name (VERY-LONG-DN)",  # over 10 characters
        "Wilson disease (WD)",  # one token: scispacy's detector's case
    ]:
        assert list(hyphenated_definitions(nlp(text))) == [], text
    # scispacy's own definitions still come through.
    doc = nlp("Wilson disease (WD) is rare.")
    assert list(LongForms(nlp.vocab)(doc).values()) == ["Wilson disease"]
