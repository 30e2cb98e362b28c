import pytest
import spacy

from spacy_arbo.cli import main
from spacy_arbo.corpora import write_docbin
from spacy_arbo.kb.entities import NIL
from spacy_arbo.tuning.threshold import deciding_components, tune_threshold
from spacy_arbo.util import ArboError

from ..conftest import TOY_TEXTS, make_doc
from ..util import make_nlp

# Mentions of no KB entity: a threshold should send them to NIL.
UNKNOWN = [("Patients with zorblax syndrome and quimbly fever.", [("zorblax syndrome", NIL), ("quimbly fever", NIL)]),
           ("Xyloqua disease was reported.", [("Xyloqua disease", NIL)])]


def dev_docs(nlp):
    return [make_doc(nlp, text, mentions) for text, mentions in TOY_TEXTS + UNKNOWN]


def test_the_threshold_with_the_best_link_f_is_chosen_and_stored(tmp_path, toy_kb_dir):
    nlp = make_nlp(toy_kb_dir)
    rows, best = tune_threshold(nlp, dev_docs(nlp))
    assert rows[0][0] is None and len(rows) > 2
    f_at = {threshold: f for threshold, f, _ in rows}
    assert f_at[best] == max(f_at.values())
    # The hashed encoder scores unknown words low: some threshold beats none here.
    assert best is not None and f_at[best] > f_at[None]
    assert nlp.get_pipe("arbo_linker").cfg["threshold"] == best
    assert nlp.config["components"]["arbo_linker"]["threshold"] == best


def test_a_threshold_that_gains_less_than_min_gain_is_not_kept(toy_kb_dir):
    nlp = make_nlp(toy_kb_dir)
    rows, best = tune_threshold(nlp, dev_docs(nlp))
    gain = max(f for _, f, _ in rows) - rows[0][1]
    assert best is not None and gain > 0.005
    assert tune_threshold(nlp, dev_docs(nlp), min_gain=gain + 1e-6) == (rows, None)
    assert nlp.get_pipe("arbo_linker").cfg["threshold"] is None
    assert tune_threshold(nlp, dev_docs(nlp), min_gain=gain)[1] == best
    with pytest.raises(ArboError, match="min_gain"):
        tune_threshold(nlp, dev_docs(nlp), min_gain=-0.1)


def test_cli_stores_the_threshold(tmp_path, toy_kb_dir, capsys):
    nlp = make_nlp(toy_kb_dir)
    nlp.to_disk(tmp_path / "p")
    write_docbin(dev_docs(nlp), tmp_path / "dev.spacy")
    assert main(["tune-threshold", str(tmp_path / "p"), str(tmp_path / "dev.spacy"), "--output", str(tmp_path / "t")]) == 0
    out = capsys.readouterr().out
    assert "| none |" in out and "Wrote" in out
    threshold = spacy.load(tmp_path / "t").get_pipe("arbo_linker").cfg["threshold"]
    assert threshold is not None and f"threshold = {threshold}" in out
    assert spacy.load(tmp_path / "p").get_pipe("arbo_linker").cfg["threshold"] is None
    assert main(["tune-threshold", str(tmp_path / "p"), str(tmp_path / "dev.spacy"), "--output", str(tmp_path / "u"),
                 "--min-gain", "0.99"]) == 0
    assert "threshold = None" in capsys.readouterr().out
    assert spacy.load(tmp_path / "u").get_pipe("arbo_linker").cfg["threshold"] is None


def test_no_linking_component_is_an_error():
    with pytest.raises(ArboError, match="no arbo_linker or multi_cross_reranker"):
        tune_threshold(spacy.blank("en"), [])


def test_each_linker_of_a_kb_per_label_gets_a_threshold_from_its_own_mentions(tmp_path):
    """Chemicals all linked right, diseases some unknown: only the disease linker needs a
    threshold (the last linker alone, tuned on every mention, once took it)."""
    from ..pipeline.test_several_kbs import two_kb_nlp

    nlp = two_kb_nlp(tmp_path)
    chemicals = [("cocaine", "MESH:D003042"), ("paracetamol", "MESH:D000082"), ("Methamphetamine", "MESH:D008694")]
    docs = [make_doc(nlp, text, mentions) for text, mentions in TOY_TEXTS + UNKNOWN]
    docs.append(make_doc(nlp, "Cocaine or paracetamol, then Methamphetamine.",
                         [(text.capitalize() if text == "cocaine" else text, kb_id) for text, kb_id in chemicals],
                         label="Chemical"))
    assert [c.name for c in deciding_components(nlp)] == ["disease_linker", "chemical_linker"]
    chosen = {c.name: tune_threshold(nlp, docs, component=c)[1] for c in deciding_components(nlp)}
    assert chosen["disease_linker"] is not None and chosen["chemical_linker"] is None
    assert nlp.get_pipe("disease_linker").cfg["threshold"] == chosen["disease_linker"]


def test_a_linker_whose_labels_dev_lacks_keeps_its_threshold(tmp_path, capsys):
    """A dev set of diseases only: the chemical linker is left as it was, the disease linker tuned."""
    from ..pipeline.test_several_kbs import two_kb_nlp

    nlp = two_kb_nlp(tmp_path)
    nlp.get_pipe("chemical_linker").configure(threshold=0.5)
    nlp.to_disk(tmp_path / "p")
    write_docbin([make_doc(nlp, text, mentions) for text, mentions in TOY_TEXTS + UNKNOWN], tmp_path / "dev.spacy")
    assert main(["tune-threshold", str(tmp_path / "p"), str(tmp_path / "dev.spacy"), "--output", str(tmp_path / "t")]) == 0
    out = capsys.readouterr().out
    assert "chemical_linker threshold left as it was (no mention of its labels in" in out
    tuned = spacy.load(tmp_path / "t")
    assert tuned.get_pipe("chemical_linker").cfg["threshold"] == 0.5
    assert f"disease_linker threshold = {tuned.get_pipe('disease_linker').cfg['threshold']}" in out
