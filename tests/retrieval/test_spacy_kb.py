"""spaCy's own entity_linker trains and links against our KB (ArboKnowledgeBase)."""
import numpy as np
import pytest
import spacy
from spacy.training import Example
from spacy.util import fix_random_seed

from spacy_arbo.pipeline.linker.spacy_kb_export import spacy_kb_from_linker
from spacy_arbo.retrieval.spacy_kb import ArboKnowledgeBase
from spacy_arbo.util import ArboError

from ..conftest import TOY_TEXTS, make_doc
from ..util import make_nlp


@pytest.fixture
def arbo_kb(toy_kb_dir):
    linker = make_nlp(toy_kb_dir).get_pipe("arbo_linker")
    return spacy_kb_from_linker(linker, top_k=4)


def spacy_linker(kb_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("entity_linker", config={
        "generate_empty_kb": {"@misc": "spacy_arbo.EmptyArboKB.v1"},
        "entity_vector_length": 16, "use_gold_ents": True})
    nlp.config["initialize"]["components"]["entity_linker"] = {
        "kb_loader": {"@misc": "spacy_arbo.ArboKBFromDir.v1", "path": str(kb_dir)}}
    return nlp


def linked(nlp):
    docs = nlp.pipe([make_doc(nlp, text, [(s, "") for s, _ in mentions]) for text, mentions in TOY_TEXTS])
    return [[e.kb_id_ for e in doc.ents] for doc in docs]


def test_candidates_come_from_tfidf_with_entity_vectors(arbo_kb, toy_kb):
    nlp = spacy.blank("en")
    doc = make_doc(nlp, "He had pyrexia.", [("pyrexia", "")])
    candidates = arbo_kb.get_candidates(doc.ents[0])
    assert candidates[0].entity_ == "MESH:D005334" and candidates[0].alias_ == "pyrexia"
    assert candidates[0].prior_prob == pytest.approx(1.0)
    assert [c.prior_prob for c in candidates] == sorted((c.prior_prob for c in candidates), reverse=True)
    np.testing.assert_array_equal(candidates[0].entity_vector, arbo_kb.get_vector("MESH:D005334"))
    assert len(arbo_kb) == len(toy_kb) and arbo_kb.entity_vector_length == 16
    with pytest.raises(ArboError, match="unknown entity id"):
        arbo_kb.get_vector("MESH:NOPE")
    with pytest.raises(ArboError, match="one vector of width 16 per entity"):
        ArboKnowledgeBase(nlp.vocab, 16).set_entities(toy_kb, np.zeros((2, 16)))


def test_spacy_entity_linker_trains_against_our_kb(tmp_path, arbo_kb):
    arbo_kb.to_disk(tmp_path / "spacy_kb")
    fix_random_seed(0)
    nlp = spacy_linker(tmp_path / "spacy_kb")
    examples = [Example(nlp.make_doc(text), make_doc(nlp, text, mentions)) for text, mentions in TOY_TEXTS]
    optimizer = nlp.initialize(lambda: examples)
    assert isinstance(nlp.get_pipe("entity_linker").kb, ArboKnowledgeBase)
    losses = []
    for _ in range(60):
        losses.append(nlp.update(examples, sgd=optimizer)["entity_linker"])
    assert losses[-1] < 0.2 * losses[0]
    # spaCy's linker scores one context vector per sentence against the entity vectors and
    # mixes in the prior (the TF-IDF cosine): two entities in one sentence need the prior.
    gold = [[kb_id for _, kb_id in mentions] for _, mentions in TOY_TEXTS]
    assert linked(nlp) == gold
    # The KB travels with the pipeline: spacy.load gives the same links.
    nlp.to_disk(tmp_path / "pipeline")
    assert linked(spacy.load(tmp_path / "pipeline")) == gold


def test_round_trip_and_bad_files(tmp_path, arbo_kb):
    nlp = spacy.blank("en")
    arbo_kb.to_disk(tmp_path / "kb")
    loaded = ArboKnowledgeBase(nlp.vocab, 16).from_disk(tmp_path / "kb")
    from_bytes = ArboKnowledgeBase(nlp.vocab, 16).from_bytes(arbo_kb.to_bytes())
    doc = make_doc(nlp, "colon cancer and cough", [("colon cancer", ""), ("cough", "")])
    for kb in (loaded, from_bytes):
        for a, b in zip(kb.get_candidates_batch(doc.ents), arbo_kb.get_candidates_batch(doc.ents)):
            assert [(c.entity_, c.prior_prob) for c in a] == [(c.entity_, c.prior_prob) for c in b]
            np.testing.assert_array_equal([c.entity_vector for c in a], [c.entity_vector for c in b])
    with pytest.raises(ArboError, match="width 16, the entity_linker expects 8"):
        ArboKnowledgeBase(nlp.vocab, 8).from_disk(tmp_path / "kb")
    with pytest.raises(ArboError, match="not an ArboKnowledgeBase directory"):
        ArboKnowledgeBase(nlp.vocab, 16).from_disk(tmp_path)
    with pytest.raises(ArboError, match="corrupt or truncated"):
        ArboKnowledgeBase(nlp.vocab, 16).from_bytes(arbo_kb.to_bytes()[:-40])


@pytest.mark.parametrize("file,content,message", [
    ("cfg.json", b"\xc5\x93 not utf-8", "cfg.json: not valid JSON"),
    ("cfg.json", b'{"top_k": "3", "width": 16}', "cfg.json: expected an object with positive integers"),
    ("vectors.npy", b"", "vectors.npy: cannot read the entity vectors"),
    ("vectors.npy", None, r"vectors.npy: expected 6 vectors of width 16, one per entity; found a float64 array of shape \(6,\)"),
])
def test_damaged_files_are_named(tmp_path, arbo_kb, file, content, message):
    arbo_kb.to_disk(tmp_path / "kb")
    if content is None:
        np.save(tmp_path / "kb" / file, np.zeros(6))
    else:
        (tmp_path / "kb" / file).write_bytes(content)
    with pytest.raises(ArboError, match=message):
        ArboKnowledgeBase(spacy.blank("en").vocab, 16).from_disk(tmp_path / "kb")
