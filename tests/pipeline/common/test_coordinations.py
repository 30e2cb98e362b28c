"""A KB name inside a coordination grows into the whole coordination when it names KB names only."""
import pytest
import spacy
from spacy.tokens import Span

from spacy_arbo.pipeline.common.coordinations import coordinated_spans

NAMES = {"breast cancer", "ovarian cancer", "kidney cancer", "brain cancer", "colorectal adenomas",
         "colorectal carcinoma", "deafness", "blindness"}


@pytest.mark.parametrize("text,expected", [
    ("Risk of breast and ovarian cancer rises.", ["breast and ovarian cancer"]),
    ("In breast/ovarian cancer families.", ["breast/ovarian cancer"]),
    ("Patients with breast, brain and kidney cancer.", ["breast, brain and kidney cancer"]),
    ("Seen in colorectal adenomas and carcinoma.", ["colorectal adenomas and carcinoma"]),
    # Whole names listed are several mentions; a conjunct that makes no KB name stops the growth.
    ("Deafness and blindness.", []),
    ("Lung and ovarian cancer.", []),
    ("Ovarian cancer and fever.", []),
])
def test_grown_over_coordinations_of_names(text, expected):
    check_grown(text, expected, NAMES)


def test_a_shared_prefix_whose_last_conjunct_is_a_name_alone_is_not_grown():
    check_grown("Seen in colorectal adenomas and carcinoma.", [], NAMES | {"carcinoma"})


def check_grown(text, expected, names):
    def is_name(text):
        return text.lower() in names

    nlp = spacy.blank("en")
    doc = nlp(text)
    matched = [Span(doc, i, j, label="Disease") for i in range(len(doc)) for j in range(i + 1, len(doc) + 1)
               if is_name(doc[i:j].text)]
    grown = coordinated_spans(matched, is_name)
    assert sorted({span.text for span in grown}) == expected
    assert all(span.label_ == "Disease" for span in grown)
