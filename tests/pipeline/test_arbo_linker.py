import pickle

import numpy as np
import pytest
import spacy
from spacy.tokens import Span
from spacy.training import Example

from spacy_arbo.encoders.templates import entity_inputs
from spacy_arbo.kb.entities import NIL
from spacy_arbo.util import ArboError

from ..conftest import TOY_TEXTS, make_doc
from ..util import hashed_model, links, make_nlp, unlinked


def test_candidates_equal_brute_force_scoring(toy_kb_dir, toy_kb, toy_docs):
    nlp = make_nlp(toy_kb_dir)
    linker = nlp.get_pipe("arbo_linker")
    docs = list(nlp.pipe(unlinked(nlp, toy_docs)))
    spans = [e for d in docs for e in d.ents]
    mentions = linker.encode_mentions(linker.mention_inputs(spans))
    entities = linker.model.ops.to_numpy(linker.model.predict(([], entity_inputs(toy_kb, linker.cfg["entity_fields"])))[1])
    scores = mentions @ entities.T
    for span, row in zip(spans, scores):
        order = np.argsort(-row, kind="stable")[:4]
        assert [kb_id for kb_id, _ in span._.kb_candidates] == [toy_kb.ids[i] for i in order]
        np.testing.assert_allclose([s for _, s in span._.kb_candidates], row[order], rtol=1e-5, atol=1e-6)
        assert span.kb_id_ == span._.kb_candidates[0][0]
        assert span._.kb_ents == span._.kb_candidates


def test_kb_ents_keeps_the_best_above_its_threshold(toy_kb_dir, toy_docs):
    nlp = make_nlp(toy_kb_dir, top_k=6, max_entities_per_mention=3)
    linker = nlp.get_pipe("arbo_linker")
    spans = [e for d in nlp.pipe(unlinked(nlp, toy_docs)) for e in d.ents]
    assert all(len(s._.kb_candidates) == 6 and s._.kb_ents == s._.kb_candidates[:3] for s in spans)
    cut = float(np.median([score for s in spans for _, score in s._.kb_candidates[:3]]))
    linker.configure(kb_ents_threshold=cut)
    spans = [e for d in nlp.pipe(unlinked(nlp, toy_docs)) for e in d.ents]
    assert all(s._.kb_ents == [c for c in s._.kb_candidates[:3] if c[1] >= cut] for s in spans)
    assert any(s._.kb_ents == [] for s in spans) or any(0 < len(s._.kb_ents) < 3 for s in spans)
    with pytest.raises(ArboError, match="max_entities_per_mention"):
        linker.configure(max_entities_per_mention=0)


@pytest.mark.parametrize("source", ["dense", "tfidf", "hybrid"])
def test_round_trip_gives_identical_predictions(tmp_path, toy_kb_dir, toy_docs, source):
    nlp = make_nlp(toy_kb_dir, candidate_source=source)
    before = links(nlp.pipe(unlinked(nlp, toy_docs)))
    nlp.to_disk(tmp_path / "pipeline")
    # The KB directory the pipeline was built from is gone: the pipeline brings its own.
    import shutil

    shutil.rmtree(toy_kb_dir)
    loaded = spacy.load(tmp_path / "pipeline")
    assert links(loaded.pipe(unlinked(loaded, toy_docs))) == before
    assert all(cands for doc in before for _, _, cands in doc)


def test_pipe_equals_call(toy_kb_dir, toy_docs):
    nlp = make_nlp(toy_kb_dir)
    piped = links(nlp.pipe(unlinked(nlp, toy_docs), batch_size=3))
    called = links([nlp(d) for d in unlinked(nlp, toy_docs)])
    # Ids are identical; scores may differ in the last float32 bits with the batch shape.
    ids = [[(t, k, [c for c, _ in cands]) for t, k, cands in doc] for doc in piped]
    assert ids == [[(t, k, [c for c, _ in cands]) for t, k, cands in doc] for doc in called]
    np.testing.assert_allclose([s for d in piped for *_, c in d for _, s in c],
                               [s for d in called for *_, c in d for _, s in c], atol=1e-6)


def test_threshold_makes_nil_but_keeps_candidates(toy_kb_dir, toy_docs):
    nlp = make_nlp(toy_kb_dir, threshold=1e9)
    for doc in nlp.pipe(unlinked(nlp, toy_docs)):
        for ent in doc.ents:
            assert ent.kb_id_ == NIL and len(ent._.kb_candidates) == 4


def test_labels_discard_and_overwrite(toy_kb_dir):
    nlp = make_nlp(toy_kb_dir, labels_discard=["Chemical"], overwrite=False)
    doc = make_doc(nlp, "Fever and coughing.", [("Fever", "MY:ID"), ("coughing", "")])
    doc.ents = [doc.ents[0], spacy.tokens.Span(doc, 2, 3, label="Chemical")]
    doc = nlp(doc)
    assert doc.ents[0].kb_id_ == "MY:ID" and doc.ents[0]._.kb_candidates is None
    assert doc.ents[1].kb_id_ == "" and doc.ents[1]._.kb_candidates is None
    doc = make_nlp(toy_kb_dir, overwrite=True)(make_doc(nlp, "Fever.", [("Fever", "MY:ID")]))
    assert doc.ents[0].kb_id_ != "MY:ID" and doc.ents[0]._.kb_candidates


def test_tfidf_source_ranks_an_exact_alias_first(toy_kb_dir):
    nlp = make_nlp(toy_kb_dir, candidate_source="tfidf")
    doc = nlp(make_doc(nlp, "He had pyrexia and colon cancer.", [("pyrexia", ""), ("colon cancer", "")]))
    assert [e.kb_id_ for e in doc.ents] == ["MESH:D005334", "MESH:D015179"]
    assert doc.ents[0]._.kb_candidates[0][1] == pytest.approx(1.0)


def test_tfidf_pipeline_neither_builds_nor_ships_an_encoder(tmp_path, toy_kb_dir, toy_docs):
    from spacy_arbo.torch_model import is_built

    nlp = make_nlp(toy_kb_dir, candidate_source="tfidf")
    linker = nlp.get_pipe("arbo_linker")
    assert not is_built(linker.model)
    before = links(nlp.pipe(unlinked(nlp, toy_docs)))
    nlp.to_disk(tmp_path / "pipeline")
    # It ships a marker, not weights: a missing weights file means a pipeline copied without them.
    assert (tmp_path / "pipeline" / "arbo_linker" / "model").stat().st_size < 100
    for loaded in (spacy.load(tmp_path / "pipeline"), spacy.blank("en").from_config(nlp.config).from_bytes(nlp.to_bytes())):
        assert not is_built(loaded.get_pipe("arbo_linker").model)
        assert links(loaded.pipe(unlinked(loaded, toy_docs))) == before
    examples = [Example(nlp.make_doc(text), make_doc(nlp, text, mentions)) for text, mentions in TOY_TEXTS]
    with pytest.raises(ArboError, match="no dual encoder to train"):
        nlp.update(examples)
    # Switched to dense candidates, it builds the configured (here hashed, untrained) encoder.
    loaded.get_pipe("arbo_linker").configure(candidate_source="dense")
    dense = links(loaded.pipe(unlinked(loaded, toy_docs)))
    assert is_built(loaded.get_pipe("arbo_linker").model) and all(c for d in dense for *_, c in d)


def test_index_aliases_keeps_entities_distinct(toy_kb_dir, toy_docs):
    nlp = make_nlp(toy_kb_dir, index_aliases=True, top_k=6)
    assert len(nlp.get_pipe("arbo_linker").retriever.dense) == 6 + 11  # names + aliases
    for doc in nlp.pipe(unlinked(nlp, toy_docs)):
        for ent in doc.ents:
            ids = [kb_id for kb_id, _ in ent._.kb_candidates]
            assert len(ids) == len(set(ids)) == 6


def test_configure_rebuilds_what_a_setting_changes(toy_kb_dir, toy_docs):
    nlp = make_nlp(toy_kb_dir, top_k=6)
    linker = nlp.get_pipe("arbo_linker")
    linker.configure(index_aliases=True, candidate_source="hybrid")
    docs = list(nlp.pipe(unlinked(nlp, toy_docs)))
    assert len(linker.retriever.dense) == 6 + 11 and linker.retriever.tfidf is not None
    assert all(len(e._.kb_candidates) == 6 for d in docs for e in d.ents)
    with pytest.raises(ArboError, match="Unknown arbo_linker settings"):
        linker.configure(colour="red")


def test_bad_and_edge_input(toy_kb_dir):
    nlp = make_nlp(toy_kb_dir)
    empty = nlp("")
    assert len(empty) == 0 and not empty.ents
    no_ents = nlp("No entities here.")
    assert not no_ents.ents
    text = "fever " * 1700
    doc = nlp(make_doc(nlp, text, [(text.strip(), "")]))
    assert len(doc.ents[0].text) > 10_000 and doc.ents[0].kb_id_ == doc.ents[0]._.kb_candidates[0][0]


def test_prebuilt_index_from_another_encoder_is_an_error(toy_kb_dir, monkeypatch):
    nlp = make_nlp(toy_kb_dir, seed=0)
    nlp.get_pipe("arbo_linker").retriever.save_prebuilt(toy_kb_dir)
    with pytest.raises(ArboError, match=r"encoder=\w+ .*encoder=\w+"):
        make_nlp(toy_kb_dir, seed=1)
    # The same encoder reuses the stored index instead of encoding the KB again.
    from spacy_arbo.pipeline.arbo_linker import ArboLinker

    def fail(*_args, **_kwargs):
        raise AssertionError("the KB was encoded again")

    monkeypatch.setattr(ArboLinker, "refresh_index", fail)
    reused = make_nlp(toy_kb_dir, seed=0)
    assert len(reused.get_pipe("arbo_linker").retriever.dense) == 6


def test_missing_kb_and_bad_config(toy_kb_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("arbo_linker", config={"model": hashed_model()})
    with pytest.raises(ArboError, match="has no KB"):
        nlp.initialize()
    with pytest.raises(ArboError, match="Unknown candidate_source 'bm25'"):
        spacy.blank("en").add_pipe("arbo_linker", config={"model": hashed_model(), "candidate_source": "bm25"})
    with pytest.raises(ArboError, match="Unknown entity_fields"):
        spacy.blank("en").add_pipe("arbo_linker", config={"model": hashed_model(), "entity_fields": ["colour"]})


def test_scorer_reports_recall_and_links(toy_kb_dir, toy_docs):
    nlp = make_nlp(toy_kb_dir, candidate_source="tfidf")
    toy_docs = [make_doc(nlp, text, mentions) for text, mentions in TOY_TEXTS]
    # No NER in the pipeline: use_gold_ents puts the gold mentions on the predicted docs.
    examples = [Example(nlp.make_doc(d.text), d) for d in toy_docs]
    scores = nlp.evaluate(examples)
    predicted = [e for doc in nlp.pipe(unlinked(nlp, toy_docs)) for e in doc.ents]
    gold = [e for doc in toy_docs for e in doc.ents]
    correct = sum(p.kb_id_ == g.kb_id_ for p, g in zip(predicted, gold))
    assert scores["arbo_recall@1"] == pytest.approx(correct / len(gold))
    assert scores["nel_micro_r"] == pytest.approx(correct / len(gold))
    assert scores["arbo_recall@4"] >= scores["arbo_recall@1"]


@pytest.mark.parametrize("upstream_detector", [None, "spans", "dicts"])
def test_long_form_reads_a_defined_abbreviation_as_what_it_stands_for(toy_kb_dir, toy_docs, upstream_detector):
    nlp = make_nlp(toy_kb_dir)  # use_long_form is on by default
    if upstream_detector:
        nlp.add_pipe("abbreviation_detector", before="arbo_linker",
                     config={"make_serializable": upstream_detector == "dicts"})
    doc = nlp(unlinked(nlp, toy_docs)[1])  # "Wilson disease (WD) is rare; WD causes copper build-up."
    if upstream_detector != "spans":  # what the linker leaves on the doc can be copied and pickled
        assert pickle.loads(pickle.dumps(doc.copy())).text == doc.text
    linker = nlp.get_pipe("arbo_linker")
    assert [m.mention for m in linker.mention_inputs(list(doc.ents))] == ["Wilson disease"] * 3
    # Same text, no context: the short forms get exactly the long form's candidates.
    assert doc.ents[1]._.kb_candidates == doc.ents[2]._.kb_candidates == doc.ents[0]._.kb_candidates
    plain = make_nlp(toy_kb_dir, use_long_form=False)
    assert [m.mention for m in plain.get_pipe("arbo_linker").mention_inputs(list(doc.ents))] == \
        ["Wilson disease", "WD", "WD"]


def test_bytes_and_pickle_round_trips_give_identical_predictions(toy_kb_dir, toy_docs):
    nlp = make_nlp(toy_kb_dir, candidate_source="hybrid")
    before = links(nlp.pipe(unlinked(nlp, toy_docs)))
    copy = spacy.blank("en").from_config(nlp.config).from_bytes(nlp.to_bytes())
    assert links(copy.pipe(unlinked(copy, toy_docs))) == before
    unpickled = pickle.loads(pickle.dumps(nlp))
    assert links(unpickled.pipe(unlinked(unpickled, toy_docs))) == before
    # `exclude` is honoured: without its KB the component cannot link.
    bare = spacy.blank("en").from_config(nlp.config)
    bare.get_pipe("arbo_linker").from_bytes(nlp.get_pipe("arbo_linker").to_bytes(exclude=["kb", "indexes"]))
    assert bare.get_pipe("arbo_linker").kb is None


def test_settings_given_at_load_time_take_effect(tmp_path, toy_kb_dir, toy_docs):
    nlp = make_nlp(toy_kb_dir)
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p", config={"components": {"arbo_linker": {
        "labels_discard": ["Modifier"], "top_k": 3, "index_aliases": True}}})
    linker = loaded.get_pipe("arbo_linker")
    assert linker.cfg["top_k"] == 3 and linker.cfg["labels_discard"] == ["Modifier"]
    docs = unlinked(loaded, toy_docs)
    docs[0].ents = [Span(docs[0], e.start, e.end, label="Modifier") if i == 0 else e
                    for i, e in enumerate(docs[0].ents)]
    linked = list(loaded.pipe(docs))
    assert linked[0].ents[0].kb_id_ == "" and linked[0].ents[0]._.kb_candidates is None
    assert all(len(e._.kb_candidates) == 3 for doc in linked for e in doc.ents if e.label_ != "Modifier")
    # The saved index held names only: the alias vectors were encoded before first use.
    assert len(linker.retriever.dense) == 6 + 11
    with pytest.raises(ArboError, match="top_k takes a positive integer; got 0"):
        spacy.load(tmp_path / "p", config={"components": {"arbo_linker": {"top_k": 0}}})


def test_configure_persists_in_the_saved_config(tmp_path, toy_kb_dir, toy_docs):
    nlp = make_nlp(toy_kb_dir)
    nlp.get_pipe("arbo_linker").configure(threshold=0.99, linking="clustering")
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p").get_pipe("arbo_linker")
    assert loaded.cfg["threshold"] == 0.99 and loaded.cfg["linking"] == "clustering"


def test_mentions_without_word_characters_are_not_linked(toy_kb_dir):
    nlp = make_nlp(toy_kb_dir)
    doc = make_doc(nlp, "Fever -- and ( ) coughing", [("Fever", ""), ("--", ""), ("( )", ""), ("coughing", "")],
                   with_ids=False)
    doc = nlp(doc)
    assert [e.kb_id_ for e in doc.ents][1:3] == [NIL, NIL]
    assert doc.ents[1]._.kb_candidates == [] and doc.ents[2]._.kb_candidates == []
    assert all(e.kb_id_ != NIL and len(e._.kb_candidates) == 4 for e in (doc.ents[0], doc.ents[3]))
