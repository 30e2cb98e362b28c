"""`calibrate`: a link_confidence fitted on dev, on the gold mentions or end to end."""
import pytest
import spacy
from spacy.tokens import DocBin

from spacy_arbo.cli import main

from ..conftest import TOY_TEXTS, make_doc
from ..util import make_nlp


def write_gold(nlp, path):
    DocBin(docs=[make_doc(nlp, text, mentions) for text, mentions in TOY_TEXTS], store_user_data=True).to_disk(path)


def test_calibrate_then_evaluate_reports_the_confidence(toy_kb_dir, tmp_path, capsys):
    nlp = make_nlp(toy_kb_dir)
    nlp.to_disk(tmp_path / "p")
    write_gold(nlp, tmp_path / "dev.spacy")
    assert main(["calibrate", str(tmp_path / "p"), str(tmp_path / "dev.spacy"), "--output", str(tmp_path / "c"),
                 "--min-confidence", "0.2"]) == 0
    assert "8 links on" in capsys.readouterr().out
    loaded = spacy.load(tmp_path / "c")
    assert loaded.pipe_names[-1] == "link_confidence" and loaded.get_pipe("link_confidence").threshold == 0.2
    assert main(["evaluate", str(tmp_path / "c"), str(tmp_path / "dev.spacy"), "--output", str(tmp_path / "m.json")]) == 0
    metrics = spacy.util.srsly.read_json(tmp_path / "m.json")
    bins = metrics["reliability"]
    # the links with a confidence: a NIL has none
    assert len(bins) == 15 and sum(b["n"] for b in bins) == metrics["n_confident"] == 6
    # The ECE is the reliability diagram's gaps weighted by their links, not any number in [0, 1].
    gaps = sum(b["n"] * abs(b["confidence"] - b["accuracy"]) for b in bins if b["n"]) / metrics["n_confident"]
    assert metrics["confidence_ece"] == pytest.approx(gaps) and metrics["confidence_ece"] < 0.5


def test_end_to_end_calibration_keeps_link_confidence_last(toy_kb_dir, tmp_path):
    nlp = make_nlp(toy_kb_dir)
    nlp.to_disk(tmp_path / "p")
    write_gold(nlp, tmp_path / "dev.spacy")
    assert main(["calibrate", str(tmp_path / "p"), str(tmp_path / "dev.spacy")]) == 0
    assert main(["add-kb-finder", str(tmp_path / "p"), str(tmp_path / "raw")]) == 0
    assert spacy.load(tmp_path / "raw").pipe_names == ["kb_mention_finder", "arbo_linker", "kb_mention_filter",
                                                        "link_confidence"]
    assert main(["calibrate", str(tmp_path / "raw"), str(tmp_path / "dev.spacy"), "--end-to-end"]) == 0
    raw = spacy.load(tmp_path / "raw")
    assert raw.get_pipe("link_confidence").calibration.source == "dev end to end"
    doc = raw(TOY_TEXTS[0][0])
    assert doc.ents and all(e._.kb_confidence is not None for e in doc.ents)
    assert main(["calibrate", str(tmp_path / "p"), str(tmp_path / "dev.spacy"), "--end-to-end"]) == 1


def test_a_minimum_confidence_outside_0_1_is_refused_before_any_work(toy_kb_dir, tmp_path, capsys):
    nlp = make_nlp(toy_kb_dir)
    nlp.to_disk(tmp_path / "p")
    write_gold(nlp, tmp_path / "dev.spacy")
    assert main(["calibrate", str(tmp_path / "p"), str(tmp_path / "dev.spacy"), "--min-confidence", "1.5"]) == 1
    assert "threshold takes a number in [0, 1] or null; got 1.5." in capsys.readouterr().err
    assert "link_confidence" not in spacy.load(tmp_path / "p").pipe_names
