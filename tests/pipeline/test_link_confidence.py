import pytest
import spacy
import srsly
from spacy.training import Example
from thinc.api import Adam

from spacy_arbo.confidence import label_free
from spacy_arbo.tuning.confidence_calibration import calibrate_pipeline
from spacy_arbo.kb.entities import NIL
from spacy_arbo.util import ArboError

from ..conftest import TOY_TEXTS, make_doc
from ..util import hashed_model, make_nlp


def toy_inputs(nlp):
    return [make_doc(nlp, text, mentions, with_ids=False) for text, mentions in TOY_TEXTS]


def confidences(docs):
    return [(e.text, e.kb_id_, e._.kb_confidence) for doc in docs for e in doc.ents]


def test_linker_writes_a_confidence_for_each_link(toy_kb_dir):
    nlp = make_nlp(toy_kb_dir)
    assert nlp.get_pipe("arbo_linker").confidence.calibration.source == "label-free"
    found = confidences(nlp.pipe(toy_inputs(nlp)))
    assert all(0.0 < c < 1.0 for _, _, c in found)
    assert len({round(c, 6) for _, _, c in found}) > 2  # it tells links apart


def test_nil_links_have_no_confidence_and_the_setting_turns_it_off(toy_kb_dir):
    nlp = make_nlp(toy_kb_dir, threshold=2.0)
    assert {(kb_id, c) for _, kb_id, c in confidences(nlp.pipe(toy_inputs(nlp)))} == {(NIL, None)}
    off = make_nlp(toy_kb_dir, confidence=False)
    assert off.get_pipe("arbo_linker").confidence.calibration is None
    assert {c for _, _, c in confidences(off.pipe(toy_inputs(off)))} == {None}


def test_confidence_round_trips(toy_kb_dir, tmp_path):
    nlp = make_nlp(toy_kb_dir)
    before = confidences(nlp.pipe(toy_inputs(nlp)))
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    assert confidences(loaded.pipe(toy_inputs(loaded))) == before
    again = spacy.blank("en").from_config(nlp.config)
    again.get_pipe("arbo_linker").from_bytes(nlp.get_pipe("arbo_linker").to_bytes())
    assert confidences(again.pipe(toy_inputs(again))) == before


def counted_fits(monkeypatch):
    """How many label-free fits run from now on."""
    fits = []
    fit = label_free.label_free_calibration
    monkeypatch.setattr(label_free, "label_free_calibration", lambda *a, **k: fits.append(1) or fit(*a, **k))
    return fits


def test_confidence_is_fitted_again_where_a_scoring_setting_changes(toy_kb_dir, monkeypatch):
    nlp = make_nlp(toy_kb_dir)
    linker = nlp.get_pipe("arbo_linker")
    fitted_for = linker.confidence.fitted_for
    fits = counted_fits(monkeypatch)
    linker.configure(threshold=0.1)  # changes no score
    assert linker.confidence.fitted_for == fitted_for and fits == []
    linker.configure(top_k=2)
    assert fitted_for != linker.confidence.fitted_for == linker.confidence_key() and fits == [1]
    list(nlp.pipe(toy_inputs(nlp)))
    assert fits == [1]


def test_training_fits_the_confidence_when_it_saves_never_while_piping(toy_kb_dir, tmp_path, monkeypatch):
    """spaCy scores dev docs between updates, under the parameter averages: a fit there would
    link the KB's names at every evaluation, and in the middle of `nlp.pipe`."""
    nlp = make_nlp(toy_kb_dir)
    linker = nlp.get_pipe("arbo_linker")
    before = confidences(nlp.pipe(toy_inputs(nlp)))
    nlp.update([Example(nlp.make_doc(doc.text), doc) for doc in gold(nlp)], sgd=Adam(0.01))
    assert linker.confidence.fitted_for != linker.confidence_key()  # the weights moved
    fits = counted_fits(monkeypatch)
    # Linked with the new weights, rated with the calibration of the old ones.
    assert [c for _, _, c in confidences(nlp.pipe(toy_inputs(nlp)))] != [c for _, _, c in before]
    assert fits == []
    nlp.to_disk(tmp_path / "p")  # linking refreshed the index, as scoring does before spacy train saves
    assert fits == [1] and linker.confidence.fitted_for == linker.confidence_key()


def test_a_loaded_pipeline_keeps_its_saved_calibration(toy_kb_dir, tmp_path, monkeypatch):
    nlp = make_nlp(toy_kb_dir)
    nlp.to_disk(tmp_path / "p")
    fits = counted_fits(monkeypatch)
    loaded = spacy.load(tmp_path / "p")
    linker = loaded.get_pipe("arbo_linker")
    assert linker.confidence.calibration == nlp.get_pipe("arbo_linker").confidence.calibration
    assert linker.confidence.fitted_for == linker.confidence_key()
    list(loaded.pipe(toy_inputs(loaded)))
    linker.configure(threshold=0.5)
    loaded.to_disk(tmp_path / "again")
    assert fits == []


def test_saving_behind_a_stale_index_keeps_the_calibration_and_encodes_nothing(toy_kb_dir, tmp_path, monkeypatch):
    """Saving never encodes the KB; fitting would, behind an index that lags the weights."""
    nlp = make_nlp(toy_kb_dir)
    linker = nlp.get_pipe("arbo_linker")
    calibration = linker.confidence.calibration
    nlp.update([Example(nlp.make_doc(doc.text), doc) for doc in gold(nlp)], sgd=Adam(0.01))
    fits = counted_fits(monkeypatch)
    nlp.to_disk(tmp_path / "stale")
    assert fits == [] and not linker.index_is_current() and linker.confidence.calibration is calibration
    linker.ensure_fresh()
    nlp.to_disk(tmp_path / "fresh")
    assert fits == [1] and linker.confidence.fitted_for == linker.confidence_key()


def gold(nlp):
    return [make_doc(nlp, text, mentions) for text, mentions in TOY_TEXTS]


def test_link_confidence_is_calibrated_on_dev_and_turns_unsure_links_nil(toy_kb_dir, tmp_path):
    nlp = make_nlp(toy_kb_dir)
    fitted = calibrate_pipeline(nlp, gold(nlp))
    assert nlp.pipe_names[-1] == "link_confidence"
    assert nlp.get_pipe("link_confidence").calibration.source == "dev"
    assert fitted["n_links"] == 8 and 0 <= fitted["confidence_ece"] <= 1
    calibrate_pipeline(nlp, gold(nlp), threshold=1.0)
    assert {kb_id for _, kb_id, _ in confidences(nlp.pipe(toy_inputs(nlp)))} == {NIL}
    assert nlp.config["components"]["link_confidence"]["threshold"] == 1.0
    calibrate_pipeline(nlp, gold(nlp))
    plain = confidences(nlp.pipe(toy_inputs(nlp)))
    assert NIL not in {kb_id for _, kb_id, _ in plain}
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    assert confidences(loaded.pipe(toy_inputs(loaded))) == plain


def test_link_confidence_must_be_last_and_calibrated(toy_kb_dir, tmp_path):
    nlp = make_nlp(toy_kb_dir)
    component = nlp.add_pipe("link_confidence")
    with pytest.raises(ArboError, match="not calibrated"):
        nlp(toy_inputs(nlp)[0])
    component.initialize(lambda: [], nlp=nlp)
    assert component.calibration.source == "label-free"
    assert all(c is not None for _, _, c in confidences([nlp(toy_inputs(nlp)[0])]))
    nlp.add_pipe("link_memory")
    with pytest.raises(ArboError, match="not the last component"):
        calibrate_pipeline(nlp, gold(nlp))


def test_a_damaged_calibration_is_named(toy_kb_dir, tmp_path):
    nlp = make_nlp(toy_kb_dir)
    calibrate_pipeline(nlp, gold(nlp))
    nlp.to_disk(tmp_path / "p")
    srsly.write_msgpack(tmp_path / "p" / "link_confidence" / "calibration", {"weights": [1]})
    with pytest.raises(ArboError, match="calibration: not a saved confidence calibration"):
        spacy.load(tmp_path / "p")
    (tmp_path / "p" / "arbo_linker" / "confidence").write_bytes(b"\xc1")
    with pytest.raises(ArboError, match="confidence: not a saved confidence calibration"):
        spacy.load(tmp_path / "p", exclude=["link_confidence"])


def test_a_pipeline_saved_before_confidence_loads_without_it(toy_kb_dir, tmp_path):
    nlp = make_nlp(toy_kb_dir, confidence=False)
    nlp.to_disk(tmp_path / "p")
    (tmp_path / "p" / "arbo_linker" / "cfg").unlink()  # saved before linkers had a cfg, too
    config = (tmp_path / "p" / "config.cfg").read_text(encoding="utf8")
    (tmp_path / "p" / "config.cfg").write_text(config.replace("confidence = false\n", ""), encoding="utf8")
    loaded = spacy.load(tmp_path / "p")
    assert loaded.get_pipe("arbo_linker").settings.confidence is False
    assert {c for _, _, c in confidences(loaded.pipe(toy_inputs(loaded)))} == {None}


def test_link_confidence_calibrates_label_free_behind_a_kb_finder_and_its_filter(toy_kb_dir):
    """The label-free fit runs the components between the mention finder and itself, a plain
    function component (kb_mention_filter) among them."""
    nlp = spacy.blank("en")
    nlp.add_pipe("kb_mention_finder")
    nlp.add_pipe("arbo_linker", config={"model": hashed_model()})  # hybrid: TF-IDF finds the toy names
    nlp.add_pipe("kb_mention_filter")
    nlp.add_pipe("link_confidence")
    for name in ("kb_mention_finder", "arbo_linker"):
        nlp.config["initialize"]["components"][name] = {"kb_loader": {"@misc": "spacy_arbo.KBFromDir.v1",
                                                                      "path": str(toy_kb_dir)}}
    nlp.initialize()
    assert nlp.get_pipe("link_confidence").calibration.source == "label-free"
    doc = nlp("Wilson disease and fever.")
    assert [e.kb_id_ for e in doc.ents] == ["MESH:D006527", "MESH:D005334"]
    assert all(0 < e._.kb_confidence < 1 for e in doc.ents)


def test_label_free_confidence_gives_what_a_link_memory_remembers_no_weight(toy_kb_dir):
    """A memory links the KB names it remembers as the corpus's annotators linked those texts, which
    is not the entity each name was taken from: what that shows says nothing of how often the
    memory is right on a corpus's mentions."""
    from spacy_arbo.confidence.features import FEATURES

    nlp = make_nlp(toy_kb_dir)
    nlp.add_pipe("link_memory", last=True).add(gold(nlp))
    linker = nlp.get_pipe("arbo_linker")
    linker.configure(top_k=3)  # fitted again, with the memory after the linker
    assert linker.confidence.fitted_for == linker.confidence_key()
    weights = linker.confidence.calibration.weights
    assert weights[FEATURES.index("remembered")] == 0.0 and weights[FEATURES.index("top_score")] != 0.0
