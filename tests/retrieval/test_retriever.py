import numpy as np
import pytest

from spacy_arbo.encoders.templates import EntityInput
from spacy_arbo.retrieval.retriever import EntityRetriever, RetrievalSettings, exact_search
from spacy_arbo.util import ArboError


def test_exact_search_matches_brute_force():
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(30, 8)).astype(np.float32)
    indices, similarities = exact_search(vectors, vectors, 4, exclude_self=True)
    scores = vectors @ vectors.T
    np.fill_diagonal(scores, -np.inf)
    expected = np.argsort(-scores, axis=1, kind="stable")[:, :4]
    np.testing.assert_array_equal(indices, expected)
    np.testing.assert_allclose(similarities, np.take_along_axis(scores, expected, axis=1), rtol=1e-5)
    few, few_similarities = exact_search(vectors[:2], vectors[:3], 5)
    assert few[:, 3:].tolist() == [[-1, -1], [-1, -1]]
    assert np.isneginf(few_similarities[:, 3:]).all()
    with pytest.raises(ArboError, match="dimension"):
        exact_search(vectors, vectors[:, :4], 2)
    with pytest.raises(ArboError, match="first rows of the keys"):
        exact_search(vectors, vectors[:3], 2, exclude_self=True)


def one_hot_encoder(inputs):
    """Entity i's title "e<i>" (or an alias of it) -> the i-th unit vector."""
    vectors = np.zeros((len(inputs), 8), dtype=np.float32)
    for row, entity in enumerate(inputs):
        vectors[row, len(entity.title) % 8] = 1.0
    return vectors


def test_alias_vectors_give_distinct_entities_and_the_fingerprint_names_the_texts(toy_kb):
    names = RetrievalSettings(top_k=3, index_aliases=False)
    aliases = RetrievalSettings(top_k=3, index_aliases=True)
    retriever = EntityRetriever(toy_kb, names)
    inputs, owners = retriever.entity_texts()
    assert len(inputs) == len(toy_kb) and owners.tolist() == list(range(len(toy_kb)))
    first = retriever.fingerprint("enc")
    assert retriever.configure(aliases)  # other entity texts: the index must be re-encoded
    inputs, owners = retriever.entity_texts()
    assert len(inputs) == len(toy_kb) + sum(len(e.aliases) for e in toy_kb)
    assert retriever.fingerprint("enc") != first
    retriever.refresh(one_hot_encoder, "enc")
    assert retriever.is_current("enc") and not retriever.is_current("other")
    query = one_hot_encoder([EntityInput("x" * len("diabetes"), "")])
    ranked = retriever.candidates(query, ["diabetes"])[0]
    assert len(ranked) == 3 and len({kb_id for kb_id, _ in ranked}) == 3
    rows = retriever.nearest_entities(query, 3)
    assert rows.shape == (1, 3) and len(set(rows[0].tolist())) == 3
    # With scores (discovery's entity edges): each entity once, with its best name's score, best first.
    same_rows, scores = retriever.nearest_entity_scores(query, 3)
    assert same_rows.tolist() == rows.tolist() and scores[0].tolist() == sorted(scores[0].tolist(), reverse=True)
    found_scores, found_rows = retriever.dense.search(query, len(retriever.dense))
    best = {}
    for row, score in zip(found_rows[0].tolist(), found_scores[0].tolist()):
        best[row] = max(best.get(row, -1.0), score)
    assert scores[0].tolist() == pytest.approx([best[r] for r in rows[0].tolist()])
    assert not retriever.configure(RetrievalSettings(top_k=5, index_aliases=True))


def test_index_bytes_round_trip(toy_kb):
    retriever = EntityRetriever(toy_kb, RetrievalSettings(candidate_source="hybrid", top_k=4, index_aliases=False, sparse_weight=None))
    retriever.refresh(one_hot_encoder, "enc")
    retriever.ensure_tfidf()
    query = one_hot_encoder([EntityInput("fever", "")])
    before = retriever.candidates(query, ["fever"])
    copy = EntityRetriever(toy_kb, retriever.settings)
    copy.load_index_bytes(retriever.index_bytes())
    assert copy.candidates(query, ["fever"]) == before
    assert copy.is_current("enc")


@pytest.mark.parametrize("bad", [{"top_k": 0}, {"candidate_source": "bm25"}, {"entity_fields": ["colour"]},
                                 {"index_aliases": "yes"}])
def test_bad_settings_name_the_setting(bad):
    with pytest.raises(ArboError, match=next(iter(bad))):
        RetrievalSettings(**bad)


def test_fusion_by_rank_and_by_weighted_score():
    from spacy_arbo.retrieval.candidates import RRF_K, fuse_candidates

    dense = [[("A", 0.9), ("B", 0.8), ("C", 0.6)]]
    sparse = [[("C", 1.0), ("B", 0.2)]]
    by_rank = fuse_candidates([dense, sparse], k=3)[0]
    assert [kb_id for kb_id, _ in by_rank] == ["C", "B", "A"]
    assert by_rank[0][1] == pytest.approx(1 / (RRF_K + 3) + 1 / (RRF_K + 1))
    # A is missing from the sparse list: it takes that list's lowest score, 0.2.
    weighted = fuse_candidates([dense, sparse], k=3, weights=(1.0, 0.5))[0]
    assert weighted == [("C", pytest.approx(1.1)), ("A", pytest.approx(1.0)), ("B", pytest.approx(0.9))]
    assert fuse_candidates([dense, [[]]], k=2, weights=(1.0, 0.5))[0] == [("A", 0.9), ("B", 0.8)]
