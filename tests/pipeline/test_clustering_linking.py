"""arbo_linker with `linking = "clustering"`: links through chains of mentions, NIL clusters."""
import pytest
import spacy

from spacy_arbo.kb.entities import NIL
from spacy_arbo.util import ArboError

from ..conftest import make_doc
from ..util import make_nlp, unlinked


def clusters(docs):
    return [[(e.kb_id_, e._.arbo_cluster, e._.arbo_path) for e in d.ents] for d in docs]


def test_no_mention_neighbours_is_independent_linking(toy_kb_dir, toy_docs):
    independent = make_nlp(toy_kb_dir)
    clustering = make_nlp(toy_kb_dir, linking="clustering", knn_mentions=0)
    a = [e.kb_id_ for d in independent.pipe(unlinked(independent, toy_docs)) for e in d.ents]
    b = [e.kb_id_ for d in clustering.pipe(unlinked(clustering, toy_docs)) for e in d.ents]
    assert a == b


@pytest.mark.parametrize("graph", ["directed", "undirected"])
def test_clusters_hold_one_entity_and_paths_point_to_real_spans(toy_kb_dir, toy_docs, graph):
    nlp = make_nlp(toy_kb_dir, linking="clustering", graph=graph, knn_mentions=3)
    docs = list(nlp.pipe(unlinked(nlp, toy_docs)))
    by_cluster = {}
    for doc_index, doc in enumerate(docs):
        for ent in doc.ents:
            by_cluster.setdefault(ent._.arbo_cluster, set()).add(ent.kb_id_)
            root, *chain = ent._.arbo_path
            assert root == ent.kb_id_  # the path starts at the cluster's entity (or NIL)
            for d, start, end, text in chain:
                assert docs[d].text[start:end] == text
            assert chain[-1] == (doc_index, ent.start_char, ent.end_char, ent.text)
    assert all(len(ids) == 1 for ids in by_cluster.values())
    # The two "WD" mentions of one doc are nearest neighbours: same cluster.
    wd = [e for e in docs[1].ents if e.text == "WD"]
    assert wd[0]._.arbo_cluster == wd[1]._.arbo_cluster


def test_threshold_makes_nil_clusters(toy_kb_dir, toy_docs):
    nlp = make_nlp(toy_kb_dir, linking="clustering", knn_mentions=3, min_similarity=1.5)
    docs = list(nlp.pipe(unlinked(nlp, toy_docs)))
    ents = [e for d in docs for e in d.ents]
    assert all(e.kb_id_ == NIL and e._.arbo_path[0] == NIL for e in ents)
    # Every edge is cut: each mention is a discovered entity of its own.
    assert len({e._.arbo_cluster for e in ents}) == len(ents)
    assert all(e._.kb_candidates for e in ents)  # retrieval still ran


def test_doc_scope_keeps_clusters_inside_docs(toy_kb_dir, toy_docs):
    nlp = make_nlp(toy_kb_dir, linking="clustering", clustering_scope="doc", knn_mentions=3)
    docs = list(nlp.pipe(unlinked(nlp, toy_docs)))
    owners = {}
    for doc_index, doc in enumerate(docs):
        for ent in doc.ents:
            owners.setdefault(ent._.arbo_cluster, set()).add(doc_index)
            assert all(step[0] == doc_index for step in ent._.arbo_path[1:])
    assert all(len(d) == 1 for d in owners.values())


def test_round_trip_and_pipe_give_identical_clusters(tmp_path, toy_kb_dir, toy_docs):
    nlp = make_nlp(toy_kb_dir, linking="clustering", graph="undirected", knn_mentions=3)
    before = clusters(nlp.pipe(unlinked(nlp, toy_docs)))
    assert clusters(nlp.pipe(unlinked(nlp, toy_docs))) == before
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    assert clusters(loaded.pipe(unlinked(loaded, toy_docs))) == before


def test_bad_clustering_settings(toy_kb_dir):
    with pytest.raises(ArboError, match="Unknown graph 'tree'"):
        make_nlp(toy_kb_dir, linking="clustering", graph="tree")
    with pytest.raises(ArboError, match="needs mention vectors"):
        make_nlp(toy_kb_dir, linking="clustering", candidate_source="tfidf")


def relabelled(doc, kb_id):
    """A copy of `doc` whose mentions all carry `kb_id`: anchors that contradict retrieval."""
    from spacy.tokens import Span

    copy = doc.copy()
    copy.ents = [Span(copy, e.start, e.end, label=e.label_, kb_id=kb_id) for e in doc.ents]
    return copy


# No mention here is spelled like its entity's name: an identical anchor is strictly
# closer than any entity (an exact tie would be broken by node numbers).
SYMPTOMS = ("A high temperature and coughing were reported.",
            [("high temperature", "MESH:D005334"), ("coughing", "MESH:D003371")])


def transductive_nlp(toy_kb_dir, graph="directed"):
    nlp = make_nlp(toy_kb_dir, linking="clustering", graph=graph, knn_mentions=3)
    linker = nlp.get_pipe("arbo_linker")
    linker.set_training_mentions([relabelled(make_doc(nlp, *SYMPTOMS), "MESH:D003920")])
    linker.configure(transductive=True)
    return nlp


@pytest.mark.parametrize("graph", ["directed", "undirected"])
def test_transductive_anchors_lend_their_gold_entity(toy_kb_dir, toy_docs, graph):
    plain = make_nlp(toy_kb_dir, linking="clustering", graph=graph, knn_mentions=3)
    fever = make_doc(plain, *SYMPTOMS)
    assert "MESH:D003920" not in [e.kb_id_ for e in plain(unlinked(plain, [fever])[0]).ents]
    nlp = transductive_nlp(toy_kb_dir, graph)
    doc = nlp(unlinked(nlp, [fever])[0])
    # Each mention's identical anchor (a training mention, doc index -1) outbids retrieval.
    for ent in doc.ents:
        assert ent.kb_id_ == "MESH:D003920"
        assert ent._.arbo_path == ["MESH:D003920", (-1, -1, -1, ent.text), (0, ent.start_char, ent.end_char, ent.text)]
    # Mentions the anchors do not reach keep their own links.
    other = nlp(unlinked(nlp, [toy_docs[3]])[0])
    assert [e.kb_id_ for e in other.ents] == [e.kb_id_ for e in plain(unlinked(plain, [toy_docs[3]])[0]).ents]


def test_transductive_anchors_round_trip(tmp_path, toy_kb_dir, toy_docs):
    nlp = transductive_nlp(toy_kb_dir)
    before = clusters(nlp.pipe(unlinked(nlp, toy_docs)))
    nlp.to_disk(tmp_path / "p")
    assert (tmp_path / "p" / "arbo_linker" / "anchors" / "mentions.msgpack").exists()
    loaded = spacy.load(tmp_path / "p")
    assert clusters(loaded.pipe(unlinked(loaded, toy_docs))) == before


def test_transductive_needs_training_mentions(toy_kb_dir, toy_docs):
    nlp = make_nlp(toy_kb_dir, linking="clustering", transductive=True)
    with pytest.raises(ArboError, match="needs the training mentions"):
        nlp(unlinked(nlp, toy_docs[:1])[0])


def test_corrupt_stored_anchors_name_the_file(tmp_path, toy_kb_dir, toy_docs):
    transductive_nlp(toy_kb_dir).to_disk(tmp_path / "p")
    (tmp_path / "p" / "arbo_linker" / "anchors" / "mentions.msgpack").write_bytes(b"not msgpack")
    with pytest.raises(ArboError, match="stored training mentions in .*anchors"):
        spacy.load(tmp_path / "p")
