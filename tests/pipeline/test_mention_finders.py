import subprocess
import sys
import warnings

import pytest

from spacy_arbo.util import ArboWarning

from ..conftest import make_doc
from ..util import make_nlp


def test_a_linker_with_nothing_before_it_that_finds_mentions_warns(toy_kb_dir):
    """`add_pipe("arbo_linker")` then `nlp("text")`: `ents: []`, and nothing said why."""
    nlp = make_nlp(toy_kb_dir)
    with pytest.warns(ArboWarning, match="arbo_linker: no component before it finds mentions, so it links none"):
        assert nlp("Fever and cough.").ents == ()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [e.kb_id_ for e in nlp(make_doc(nlp, "Fever here.", [("Fever", "")], with_ids=False)).ents] == [
            "MESH:D005334"]
        ruled = make_nlp(toy_kb_dir)
        ruled.add_pipe("entity_ruler", first=True).add_patterns([{"label": "Disease", "pattern": "fever"}])
        assert ruled("No disease here.").ents == ()  # a recognizer that found nothing is no reason to warn
    # Once per linker.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert nlp("Fever and cough again.").ents == ()


def test_training_or_evaluating_a_linker_only_pipeline_does_not_warn(toy_kb_dir):
    """`spacy train` and `nlp.evaluate` pipe the bare docs; the scorer puts the gold mentions on them.
    A frozen linker in `annotating_components` (the reranker's training) is piped the bare training docs."""
    from spacy.training import Example

    nlp = make_nlp(toy_kb_dir)
    gold = make_doc(nlp, "Fever here.", [("Fever", "MESH:D005334")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores = nlp.evaluate([Example(nlp.make_doc(gold.text), gold)])
        nlp.update([Example(nlp.make_doc(gold.text), gold)], exclude=["arbo_linker"], annotates=["arbo_linker"])
    assert scores["nel_micro_f"] == 1.0
    with pytest.warns(ArboWarning, match="no component before it finds mentions"):
        nlp("Fever and cough.")


def test_spacy_apply_on_a_linker_only_pipeline_warns(toy_kb_dir, tmp_path):
    make_nlp(toy_kb_dir).to_disk(tmp_path / "linker")
    (tmp_path / "texts.jsonl").write_text('{"text": "Fever and cough."}\n')
    run = subprocess.run([sys.executable, "-m", "spacy", "apply", str(tmp_path / "linker"), str(tmp_path / "texts.jsonl"),
                          str(tmp_path / "out.spacy")], capture_output=True, text=True)
    assert run.returncode == 0 and "ArboWarning: arbo_linker: no component before it finds mentions" in run.stderr
