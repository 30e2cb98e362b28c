"""The evaluation page: what it marks, and that it works in a real browser (Debian's chromium,
driven by playwright, where both are installed: `.ci/install` installs them)."""
import re

import spacy

from spacy_arbo.cli import main
from spacy_arbo.error_report import doc_mentions, error_report
from spacy_arbo.evaluation import linking_metrics
from spacy_arbo.kb.entities import NIL

from .conftest import make_doc
from .util import headless_chromium, launch, make_nlp

TEXT = "Fever and coughing in Wilson disease, not diabetes."
GOLD = [("Fever", "MESH:D005334"), ("coughing", "MESH:D003371"), ("Wilson disease", "MESH:D006527"),
        ("diabetes", "MESH:D003920")]
# right, wrong id, NIL, (diabetes missed), spurious "not"
PREDICTED = [("Fever", "MESH:D005334"), ("coughing", "MESH:D005334"), ("Wilson disease", NIL), ("not", "MESH:D003920")]


def docs():
    nlp = spacy.blank("en")
    predicted = make_doc(nlp, TEXT, PREDICTED)
    for ent, confidence in zip(predicted.ents, (0.97, 0.3, None, 0.6)):
        ent._.kb_confidence = confidence
        ent._.kb_candidates = [(ent.kb_id_, 0.9), ("MESH:D003371", 0.4)] if ent.kb_id_ != NIL else []
    return predicted, make_doc(nlp, TEXT, GOLD)


def test_each_mention_is_marked_by_what_happened_to_it(toy_kb):
    predicted, gold = docs()
    outcomes = {m.text: (m.outcome, m.confidence, m.unseen) for m in doc_mentions(predicted, gold, {"MESH:D005334"})}
    assert outcomes == {"Fever": ("right", 0.97, False), "coughing": ("wrong", 0.3, True),
                        "Wilson disease": ("nil", None, True), "diabetes": ("missed", None, True),
                        "not": ("spurious", 0.6, False)}
    page = error_report("toy", {"accuracy": 0.25, "reliability": []}, [predicted], [gold], toy_kb)
    assert len(re.findall(r'<tr id="m0-\d+" class="(\w+)"', page)) == 5
    assert page.count('<mark class="wrong"') == 2  # the mention and the legend
    assert "Cough</li>" not in page and 'Cough <span class="score">0.400</span>' in page  # KB names beside ids
    assert "http" not in page.replace('href="#', "")  # nothing fetched from a network


def test_the_page_counts_what_the_metrics_count():
    """A gold mention with an empty id has no gold link: the metrics leave it out, and the page
    shows it unscored, neither right nor an error (it was a wrong id there before)."""
    nlp = spacy.blank("en")
    gold = make_doc(nlp, TEXT, [("Fever", "MESH:D005334"), ("coughing", ""), ("Wilson disease", "MESH:D1|MESH:D2"),
                                ("diabetes", NIL)])
    predicted = make_doc(nlp, TEXT, [("Fever", "MESH:D005334"), ("coughing", "MESH:D003371"),
                                     ("Wilson disease", "MESH:D2|MESH:D1"), ("diabetes", NIL)])
    metrics = linking_metrics([predicted], [gold])
    mentions = {m.text: m for m in doc_mentions(predicted, gold, None)}
    scored = [m for m in mentions.values() if m.outcome != "unscored"]
    assert metrics["n_mentions"] == len(scored) == 3
    assert metrics["accuracy_strict"] == sum(m.outcome == "right" for m in scored) / len(scored) == 1.0
    assert mentions["coughing"].outcome == "unscored" and not mentions["coughing"].error


def test_text_and_ids_are_escaped_by_the_template(toy_kb):
    nlp = spacy.blank("en")
    text = "<b>Fever</b> & cough"
    gold = make_doc(nlp, text, [("Fever</b>", "<i>")])
    page = error_report("<script>", {"n_mentions": 1, "note": "a<b"}, [gold], [gold], toy_kb)
    body = page.split("<body>")[1].split("<script>")[0]
    assert "<b>" not in body and "</b>" not in body and "<i>" not in body
    assert "<h1>&lt;script&gt;</h1>" in body and "&lt;b&gt;" in body and "&lt;i&gt;" in body and "a&lt;b" in body


def test_evaluate_writes_the_page(toy_kb_dir, tmp_path):
    nlp = make_nlp(toy_kb_dir)
    nlp.to_disk(tmp_path / "p")
    from spacy.tokens import DocBin
    predicted, gold = docs()
    DocBin(docs=[gold], store_user_data=True).to_disk(tmp_path / "gold.spacy")
    assert main(["evaluate", str(tmp_path / "p"), str(tmp_path / "gold.spacy"), "--html", str(tmp_path / "r.html"),
                 "--output", str(tmp_path / "m.json")]) == 0
    page = (tmp_path / "r.html").read_text(encoding="utf8")
    assert page.count("<tr id=") == 4 and "reliability diagram" in page and "confidence_ece" in page


def test_the_page_works_in_headless_chromium(toy_kb, tmp_path):
    sync_playwright, path = headless_chromium()
    predicted, gold = docs()
    metrics = {"accuracy": 0.25, "confidence_ece": 0.1, "reliability": [{"low": 0.9, "high": 1.0, "n": 1, "accuracy": 1.0}],
               "precision_coverage": [{"coverage": 0.25, "precision": 1.0}, {"coverage": 0.75, "precision": 0.33}]}
    (tmp_path / "r.html").write_text(error_report("toy", metrics, [predicted, gold], [gold, gold], toy_kb,
                                                  {"MESH:D005334"}), encoding="utf8")
    with sync_playwright() as p:
        browser = launch(p, path)
        page = browser.new_page()
        errors = []
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto((tmp_path / "r.html").as_uri())

        def visible(selector):
            return page.locator(selector).evaluate_all("els => els.filter(e => e.offsetParent !== null).length")

        assert visible("tr[data-outcome]") == 5 + 4 and visible("section.doc") == 2
        page.check("#errors")
        assert visible("tr[data-outcome]") == 4 and visible("section.doc") == 1
        page.check("#low")
        assert visible("tr[data-outcome]") == 1  # the wrong id at 0.3 (a NIL has no confidence)
        page.uncheck("#errors")
        page.check("#unseen")
        assert visible("tr[data-outcome]") == 1
        assert "1 documents, 1 mentions shown" in page.inner_text("#shown")
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        browser.close()
    assert errors == []
    assert (tmp_path / "report.png").stat().st_size > 1000
