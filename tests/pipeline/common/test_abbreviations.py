import re

import spacy

from spacy_arbo.pipeline.common.abbreviations import LongForms, SpelledOut, parenthesized_definitions

# NCBI Disease test (PMID 10071185): spaCy splits "T-PLL" at its hyphen, which scispacy's
# detector alone never reads as a short form.
DEFINES = "Patients with sporadic T-cell prolymphocytic leukaemia (T-PLL), a rare disease. T-PLL cells and T-PLLs."


def test_a_hyphenated_short_form_gets_its_long_form_wherever_the_doc_uses_it():
    nlp = spacy.blank("en")
    doc = nlp(DEFINES)
    assert [t.text for t in doc[8:13]] == ["(", "T", "-", "PLL", ")"]
    assert list(parenthesized_definitions(doc)) == [("T-PLL", "T-cell prolymphocytic leukaemia")]
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
        assert list(parenthesized_definitions(nlp(text))) == [], text
    # scispacy's own definitions still come through.
    doc = nlp("Wilson disease (WD) is rare.")
    assert list(LongForms(nlp.vocab)(doc).values()) == ["Wilson disease"]



# NCBI Disease test: a short form followed by more in its parentheses, which scispacy's
# detector reads as a long form of the word before them.
LISTED = "Cowden disease (CD; MIM 158350) and Wolfram syndrome (WFS, OMIM 222300) are rare. CD and WFS differ."


def test_a_short_form_before_a_semicolon_or_comma_in_its_parentheses_is_defined():
    nlp = spacy.blank("en")
    doc = nlp(LISTED)
    assert list(parenthesized_definitions(doc)) == [("CD", "Cowden disease"), ("WFS", "Wolfram syndrome")]
    forms = LongForms(nlp.vocab)(doc)
    assert sorted((LISTED[start:end], long) for (start, end), long in forms.items()) == [
        ("CD", "Cowden disease"), ("CD", "Cowden disease"), ("WFS", "Wolfram syndrome"), ("WFS", "Wolfram syndrome")]


def test_what_is_not_a_listed_definition_is_left_alone():
    nlp = spacy.blank("en")
    for text in [
        # A coordination before a list of short forms: the long form's last word lacks the 1.
        "with autosomal dominant spinocerebellar ataxias 1 and 2 (SCA1, n = 11; SCA2, n = 10) and",
        # The parentheses hold the long form of the word before them.
        "The ATM (A-T, mutated) gene is large.",
        # A list of words, not a short form (fewer than two capitals).
        "cardiovascular thrombotic events (cardiac, cerebrovascular and peripheral) were seen",
        "nephrectomized (Nx, N = 38) or sham-operated (Sham, N = 22) rats",
        # No closing parenthesis, or no space after the separator.
        "Cowden disease (CD; MIM 158350 and more",
        "Cowden disease (CD;MIM 158350) here",
    ]:
        assert list(parenthesized_definitions(nlp(text))) == [], text


# The pattern of NCBI Disease test PMID 9607188: a short form defined through another one.
NESTED = ("Most patients have diffuse mesangial sclerosis (DMS) with Wilms tumor (WT). Of 24 "
          "patients, 10 had isolated DMS (IDMS). Later IDMS, primary DMS and von Hippel-Lindau "
          "(VHL) tumor were seen.")


def read_as(text: str, mentions: list, corpus_forms: dict = None) -> list:
    """What each mention (text, occurrence) is read as."""
    nlp = spacy.blank("en")
    doc = nlp(text)
    spelled = SpelledOut(text, LongForms(nlp.vocab)(doc), corpus_forms or {})
    read = []
    for mention, occurrence in mentions:
        found = list(re.finditer(rf"(?<!\w){re.escape(mention)}(?!\w)", text))[occurrence]
        read.append(spelled(doc.char_span(*found.span())))
    return read


def test_short_forms_are_spelt_out_inside_mentions_and_inside_long_forms():
    assert read_as(NESTED, [("IDMS", 1), ("isolated DMS", 0), ("primary DMS", 0), ("DMS", 2), ("Wilms tumor", 0)]) == [
        "isolated diffuse mesangial sclerosis",  # "IDMS" stands for "isolated DMS"
        "isolated diffuse mesangial sclerosis",  # a short form inside a mention
        "primary diffuse mesangial sclerosis",
        "diffuse mesangial sclerosis",
        None,  # nothing to spell out: read as written
    ]


def test_a_mention_that_carries_its_own_definition_is_read_as_written():
    assert read_as(NESTED, [("von Hippel-Lindau (VHL) tumor", 0)]) == [None]


def test_corpus_long_forms_stand_in_for_whole_short_forms_the_doc_does_not_define():
    text = "FUO was seen, and recurrent FUO too."
    assert read_as(text, [("FUO", 0), ("recurrent FUO", 0)], {"FUO": "fever of unknown origin"}) == [
        "fever of unknown origin", None]
