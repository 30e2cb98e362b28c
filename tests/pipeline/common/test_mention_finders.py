import subprocess
import sys
import warnings

import pytest
import spacy

from spacy_arbo.util import ArboWarning

from ...conftest import make_doc
from ...util import DENSE_LINKER, hashed_model, make_nlp


def test_a_linker_with_nothing_before_it_that_finds_mentions_warns(toy_kb_dir):
    """`add_pipe("arbo_linker")` then `nlp("text")`: `ents: []`, and nothing said why. The
    pipeline says so where it is initialized, once."""
    with pytest.warns(ArboWarning, match="arbo_linker: no component before it finds mentions, so it links none"):
        nlp = make_nlp(toy_kb_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert nlp("Fever and cough.").ents == ()
        assert [e.kb_id_ for e in nlp(make_doc(nlp, "Fever here.", [("Fever", "")], with_ids=False)).ents] == [
            "MESH:D005334"]
        ruled = spacy.blank("en")
        ruler = ruled.add_pipe("entity_ruler")
        ruled.add_pipe("arbo_linker", config={"model": hashed_model(), **DENSE_LINKER})
        ruled.config["initialize"]["components"]["arbo_linker"] = {
            "kb_loader": {"@misc": "spacy_arbo.KBFromDir.v1", "path": str(toy_kb_dir)}}
        ruled.initialize()
        ruler.add_patterns([{"label": "Disease", "pattern": "fever"}])
        assert ruled("No disease here.").ents == ()  # a recognizer that found nothing is no reason to warn


def test_training_or_evaluating_a_linker_only_pipeline_does_not_warn(toy_kb_dir):
    """`spacy train` initializes the linker on gold mentions, and it and `nlp.evaluate` pipe the
    bare docs before the scorer puts the gold mentions on them. A frozen linker in
    `annotating_components` (the reranker's training) is piped the bare training docs."""
    from spacy.training import Example

    with pytest.warns(ArboWarning, match="no component before it finds mentions"):
        nlp = make_nlp(toy_kb_dir)
    gold = make_doc(nlp, "Fever here.", [("Fever", "MESH:D005334")])
    examples = [Example(nlp.make_doc(gold.text), gold)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores = nlp.evaluate(examples)
        nlp.update(examples, exclude=["arbo_linker"], annotates=["arbo_linker"])
        nlp.initialize(lambda: examples)  # as spacy train does
        nlp.update(examples)
        assert nlp.evaluate(examples)["nel_micro_f"] == 1.0
    assert scores["nel_micro_f"] == 1.0


def test_a_loaded_linker_only_pipeline_warns_at_its_first_batch_without_mentions(toy_kb_dir, tmp_path):
    """Loaded, it cannot tell who will run it: spacy_arbo's commands give it gold mentions."""
    with pytest.warns(ArboWarning):
        make_nlp(toy_kb_dir).to_disk(tmp_path / "p")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = spacy.load(tmp_path / "p")
        assert loaded(make_doc(loaded, "Fever here.", [("Fever", "")], with_ids=False)).ents
    with pytest.warns(ArboWarning, match="arbo_linker: no component before it finds mentions"):
        loaded("Fever and cough.")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded("Fever and cough again.")  # once


def test_spacy_apply_on_a_linker_only_pipeline_warns(toy_kb_dir, tmp_path):
    make_nlp(toy_kb_dir).to_disk(tmp_path / "linker")
    (tmp_path / "texts.jsonl").write_text('{"text": "Fever and cough."}\n')
    run = subprocess.run([sys.executable, "-m", "spacy", "apply", str(tmp_path / "linker"), str(tmp_path / "texts.jsonl"),
                          str(tmp_path / "out.spacy")], capture_output=True, text=True)
    assert run.returncode == 0 and "ArboWarning: arbo_linker: no component before it finds mentions" in run.stderr
