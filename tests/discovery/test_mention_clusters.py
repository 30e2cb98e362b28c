"""Clusters of NIL mentions over the kNN graph, with mentions read alike as one node."""
import numpy as np
import pytest

from spacy_arbo.discovery.mention_clusters import cluster_mentions, knn_graph, with_pairs
from spacy_arbo.util import ArboError


def _spellings(copies: int) -> np.ndarray:
    """Three readings, each `copies` times in turn: "tumor", "tumors" (cosine 0.9 to it) and an
    unrelated one (cosine 0.1 and 0.09)."""
    tumor = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    tumors = np.array([0.9, np.sqrt(1 - 0.81), 0.0], dtype=np.float32)
    other = np.array([0.1, 0.0, np.sqrt(1 - 0.01)], dtype=np.float32)
    return np.stack([tumor, tumors, other] * copies)


def test_two_spellings_written_more_often_than_k_still_meet():
    vectors = _spellings(12)  # 12 copies each: a mention's 8 nearest would all be its own copies
    found = cluster_mentions(vectors, knn_mentions=8, min_similarity=0.8)
    clusters = found.cluster.reshape(12, 3)
    assert found.n_clusters == 2
    assert len(set(clusters[:, 0]) | set(clusters[:, 1])) == 1
    assert len(set(clusters[:, 2])) == 1 and clusters[0, 2] != clusters[0, 0]
    assert (found.entity == -1).all()


def test_a_spelling_below_the_cut_stays_apart():
    found = cluster_mentions(_spellings(12), knn_mentions=8, min_similarity=0.95)
    assert found.n_clusters == 3


def test_copies_hang_from_their_first_mention():
    vectors = _spellings(4)
    indices, similarities = knn_graph(vectors, 8)
    assert indices.shape == (12, 2)  # 3 distinct readings: 2 neighbours each
    assert indices[:3].tolist() == [[1, 2], [0, 2], [0, 1]]
    assert np.allclose(similarities[0], [0.9, 0.1], atol=1e-6)
    for copy in range(3, 12):
        assert indices[copy].tolist() == [copy % 3, -1]
        assert similarities[copy, 0] == 1.0


def test_without_neighbours_only_copies_join():
    found = cluster_mentions(_spellings(2), knn_mentions=0, min_similarity=0.8)
    assert found.n_clusters == 3
    assert found.cluster[:3].tolist() == found.cluster[3:].tolist()


def test_distinct_mentions_keep_their_plain_neighbour_lists():
    vectors = _spellings(1)
    indices, _ = knn_graph(vectors, 0)
    assert indices.shape == (3, 0)
    found = cluster_mentions(vectors, knn_mentions=0, min_similarity=0.8)
    assert found.n_clusters == 3


def test_a_defined_short_form_joins_its_long_form_whatever_its_vector():
    # "myotonic dystrophy" x3, "DM" x3 (read unresolved: cosine 0 to it); mention 1 is defined by mention 0.
    long, short = np.array([1.0, 0.0, 0.0], np.float32), np.array([0.0, 1.0, 0.0], np.float32)
    vectors = np.stack([long, short, long, short, long, short])
    apart = cluster_mentions(vectors, knn_mentions=8, min_similarity=0.8)
    assert apart.n_clusters == 2
    joined = cluster_mentions(vectors, knn_mentions=8, min_similarity=0.8, same_entity=[(0, 1)])
    assert joined.n_clusters == 1


def test_pairs_add_one_edge_each_way():
    indices = np.array([[1], [0], [-1]], dtype=np.int64)
    similarities = np.array([[0.9], [0.9], [0.0]], dtype=np.float32)
    got, got_similarities = with_pairs(indices, similarities, [(0, 2), (1, 2)])
    assert got.tolist() == [[1, 2, -1], [0, 2, -1], [-1, 0, 1]]
    assert got_similarities[2].tolist() == [0.0, 1.0, 1.0]
    assert with_pairs(indices, similarities, [])[0] is indices


def test_copies_follow_their_first_mention_to_a_kb_entity():
    vectors = _spellings(12)
    rows = np.tile([5, -1, -1], 12)
    similarity = np.tile(np.array([0.97, 0.5, 0.5], dtype=np.float32), 12)
    found = cluster_mentions(vectors, rows, similarity, knn_mentions=8, min_similarity=0.8, min_entity_similarity=0.95)
    assert (found.entity[0::3] == 5).all()
    assert (found.entity[1::3] == 5).all()  # "tumors" reaches it through "tumor"
    assert (found.entity[2::3] == -1).all()


def test_pairs_must_name_mentions():
    indices, similarities = knn_graph(_spellings(1), 2)
    with pytest.raises(ArboError, match="0 to 2"):
        with_pairs(indices, similarities, [(0, 3)])
    with pytest.raises(ArboError, match="0 to 2"):
        with_pairs(indices, similarities, [(-1, 1)])
