"""End-to-end scores under both credit rules, counted by hand; loading a damaged pipeline."""
import shutil
from pathlib import Path

import numpy as np
import pytest
import spacy
from spacy.language import Language
from spacy.tokens import Span

from spacy_arbo.evaluation import evaluate_end_to_end, format_metrics, gold_mention_outcomes, linking_metrics
from spacy_arbo.pipeline_loading import load_pipeline
from spacy_arbo.util import ArboError

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


@Language.component("test_typed_links")
def typed_links(doc):
    ids = {"aspirin": "C1", "fever": "D3", "cough": "D9"}
    doc.ents = [Span(doc, e.start, e.end, label=e.label_, kb_id=ids[e.text]) for e in doc.ents]
    return doc


def test_end_to_end_per_type_where_the_pipeline_has_the_gold_types():
    """Chemicals and diseases linked to two KBs: each type scored on its own mentions."""
    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler", name="ner").add_patterns(
        [{"label": "Chemical", "pattern": "aspirin"}, {"label": "Disease", "pattern": "fever"},
         {"label": "Chemical", "pattern": "cough"}])
    nlp.add_pipe("test_typed_links")
    text = "aspirin for fever and cough"
    gold = nlp.make_doc(text)
    gold.ents = [Span(gold, 0, 1, label="Chemical", kb_id="C1"), Span(gold, 2, 3, label="Disease", kb_id="D3"),
                 Span(gold, 4, 5, label="Disease", kb_id="D9")]
    metrics = evaluate_end_to_end(nlp, [gold])
    # Labels aside, "cough" is a right link; per type it is a wrong Chemical and a missed Disease.
    assert metrics["e2e_f"] == pytest.approx(1.0)
    per_type = metrics["e2e_per_type"]
    assert (per_type["Chemical"]["ner_p"], per_type["Chemical"]["e2e_p"], per_type["Chemical"]["e2e_r"]) \
        == pytest.approx((0.5, 0.5, 1.0))
    assert (per_type["Disease"]["ner_p"], per_type["Disease"]["e2e_r"]) == pytest.approx((1.0, 0.5))
    assert "Chemical e2e_p" in format_metrics(metrics)
    # One gold type (or a recognizer naming its types otherwise): no per-type table.
    one_type = make_doc(nlp, text, [("aspirin", "C1"), ("fever", "D3"), ("cough", "D9")])
    assert "e2e_per_type" not in evaluate_end_to_end(nlp, [one_type])


def test_confidence_is_fitted_on_the_mentions_the_metrics_score():
    """A gold mention with an empty id has no gold link: calibration leaves it out, as the metrics do."""
    nlp = spacy.blank("en")
    text = "fever and cough and rash"
    gold = make_doc(nlp, text, [("fever", "D1"), ("cough", ""), ("rash", "D3|D4")])
    predicted = make_doc(nlp, text, [("fever", "D1"), ("cough", "D2"), ("rash", "D4|D3")])
    spans, right = gold_mention_outcomes([predicted], [gold])
    assert [span.text for span in spans] == ["fever", "rash"] and right == [True, True]
    assert linking_metrics([predicted], [gold])["n_mentions"] == 2


@pytest.mark.parametrize("name", ["meta.json", "config.cfg", "tokenizer", "vocab/strings.json", "vocab/lookups.bin",
                                  "vocab/vectors.cfg", "vocab/key2row", "vocab/vectors"])
def test_a_damaged_file_of_spacys_own_is_one_error_naming_it(tmp_path, name):
    saved = Path(__file__).parent / "fixtures" / "saved_pipelines" / "tfidf"
    shutil.copytree(saved, tmp_path / "p")
    (tmp_path / "p" / name).write_bytes(np.random.default_rng(0).bytes(100))
    with pytest.raises(ArboError) as raised:
        load_pipeline(tmp_path / "p")
    message = str(raised.value)
    assert "\n" not in message
    # The numpy files of spaCy's vectors are named by their pipeline only.
    assert str(tmp_path / "p" / name) in message or (name.startswith("vocab/") and str(tmp_path / "p") in message)
