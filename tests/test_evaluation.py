"""End-to-end scores under both credit rules, counted by hand."""
import pytest
import spacy
from spacy.language import Language
from spacy.tokens import Span

from spacy_arbo.evaluation import evaluate_end_to_end

from .conftest import make_doc

PREDICTED_IDS = {"breast and ovarian cancer": "D1", "fever": "D3", "cough": "D9"}


@Language.component("test_fixed_links")
def fixed_links(doc):
    doc.ents = [Span(doc, e.start, e.end, label=e.label_, kb_id=PREDICTED_IDS[e.text]) for e in doc.ents]
    return doc


def test_end_to_end_strict_and_any_id():
    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler", name="ner").add_patterns(
        [{"label": "Disease", "pattern": text} for text in PREDICTED_IDS])
    nlp.add_pipe("test_fixed_links")
    text = "breast and ovarian cancer with fever and cough"
    # Gold: the composite carries two ids; "cough" is gold with another id; "fever" is not gold.
    gold = make_doc(nlp, text, [("breast and ovarian cancer", "D1|D2"), ("cough", "D5")])
    metrics = evaluate_end_to_end(nlp, [gold])
    assert (metrics["ner_p"], metrics["ner_r"]) == pytest.approx((2 / 3, 1.0))
    assert (metrics["e2e_p"], metrics["e2e_r"]) == pytest.approx((0.0, 0.0))  # no exact id set
    # Any-id: "D1" is one of the composite's ids.
    assert (metrics["e2e_any_id_p"], metrics["e2e_any_id_r"]) == pytest.approx((1 / 3, 1 / 2))
    assert metrics["n_gold_mentions"] == 2 and metrics["n_predicted_mentions"] == 3
