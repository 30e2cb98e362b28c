"""Property-based tests of `arbo_linker` over random docs and entity spans (issue #15): any
text (emoji, combining marks, right-to-left scripts, whitespace or punctuation only, very long
tokens) and any non-overlapping spans are linked without error to NIL or a KB id with ranked
candidates, the same way one doc at a time as in a batch and after the doc is serialized."""
import math
import pickle
import string

import pytest
import spacy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spacy.tokens import Doc, Span

from spacy_arbo.discovery import discover_entities
from spacy_arbo.kb.entities import NIL, Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.pipeline.linker.exact_names import WORDLESS

from ..conftest import TOY_ENTITIES
from ..util import make_nlp

KB_IDS = {entity[0] for entity in TOY_ENTITIES}
TOP_K = 4  # make_nlp's
PROPERTIES = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

PIECES = [
    "diabetes mellitus", "Wilson disease", "WD", "fever", "heart failure", "colon cancer", "coughing",
    "😀", "👩🏽‍⚕️", "🇫🇷", "e\u0301\u0308", "\u0301", "\u0915\u094d\u0937", "مرض السكري", "שלום", "\u200f", "\u200b",
    "--", "(", ")", ";", "...", "«»", "“”", "\t", "\n", " ", "\u00a0", "\u3000", "İ", "ß" * 300, "x" * 3000,
    "diabetes" * 400,
]
CHUNKS = st.one_of(
    st.sampled_from(PIECES),
    st.text(max_size=12),
    st.text(alphabet=" \t\n\r\u00a0\u2003\u3000", min_size=1, max_size=4),
    st.text(alphabet=string.punctuation + "«»—…¿¡", min_size=1, max_size=6),
)
TEXTS = st.lists(CHUNKS, max_size=10).flatmap(
    lambda chunks: st.lists(st.sampled_from(["", " ", "  ", "\n"]), min_size=len(chunks), max_size=len(chunks))
    .map(lambda seps: "".join(c + s for c, s in zip(chunks, seps))))
TOKENIZER = spacy.blank("en").tokenizer


@st.composite
def doc_specs(draw):
    """(text, [(start, end, label)]): non-overlapping token spans, possibly adjacent, possibly none."""
    text = draw(TEXTS)
    n_tokens = len(TOKENIZER(text))
    bounds = sorted(draw(st.lists(st.integers(0, n_tokens), max_size=12)))
    pairs = [(start, end) for start, end in zip(bounds[::2], bounds[1::2]) if start < end]
    labels = draw(st.lists(st.sampled_from(["Disease", "Chemical"]), min_size=len(pairs), max_size=len(pairs)))
    return text, [(start, end, label) for (start, end), label in zip(pairs, labels)]


BATCHES = st.lists(doc_specs(), max_size=5)


def build(nlp, spec) -> Doc:
    text, spans = spec
    doc = nlp.make_doc(text)
    doc.ents = [Span(doc, start, end, label=label) for start, end, label in spans]
    return doc


def decisions(docs):
    """Each mention's span, id and candidates, with tuples as lists (msgpack's shape)."""
    return [[(e.start, e.end, e.label_, e.kb_id_, [list(c) for c in e._.kb_candidates]) for e in doc.ents]
            for doc in docs]


def assert_same_decisions(got, want):
    """Equal spans, ids and candidate ids; equal scores up to float32 rounding."""
    assert [[m[:4] + ([c[0] for c in m[4]],) for m in doc] for doc in got] == \
        [[m[:4] + ([c[0] for c in m[4]],) for m in doc] for doc in want]
    got_scores = [c[1] for doc in got for m in doc for c in m[4]]
    assert got_scores == pytest.approx([c[1] for doc in want for m in doc for c in m[4]], rel=1e-5, abs=1e-6)


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("properties") / "kb"
    EntityStore([Entity(i, n, a, d) for i, n, a, d in TOY_ENTITIES], source="toy").to_disk(path)
    return path


@pytest.fixture(scope="module")
def nlp(kb_dir):
    return make_nlp(kb_dir)


@pytest.fixture(scope="module")
def clustering_nlp(kb_dir):
    # Whole mentions: a coordination split into parts ("WD/diabetes") takes its parts' ids, not its cluster's.
    return make_nlp(kb_dir, linking="clustering", knn_mentions=3, composites="whole")


@PROPERTIES
@given(batch=BATCHES)
def test_every_mention_gets_nil_or_a_kb_id_and_ranked_kb_candidates(nlp, batch):
    """Whatever the text, predict keeps the spans and writes a valid decision on each."""
    docs = list(nlp.pipe(build(nlp, spec) for spec in batch))
    assert [[(e.start, e.end, e.label_) for e in doc.ents] for doc in docs] == [spans for _, spans in batch]
    for ent in (ent for doc in docs for ent in doc.ents):
        candidates = ent._.kb_candidates
        assert isinstance(candidates, list) and set(ent.kb_id_.split("|")) <= KB_IDS | {NIL}
        assert all(isinstance(kb_id, str) and type(score) is float and math.isfinite(score)
                   for kb_id, score in candidates)
        ids, scores = [c[0] for c in candidates], [c[1] for c in candidates]
        assert set(ids) <= KB_IDS and len(set(ids)) == len(ids) <= TOP_K
        assert scores == sorted(scores, reverse=True)
        if WORDLESS.match(ent.text):
            assert (ent.kb_id_, candidates) == (NIL, [])
        elif ent._.arbo_parts:  # a coordination split into parts: their distinct ids
            assert ent.kb_id_ == "|".join(dict.fromkeys(kb_id for _, kb_id, _ in ent._.arbo_parts))
        else:  # no threshold: the best of a full top-k is the link
            assert len(candidates) == TOP_K and ent.kb_id_ == ids[0]


@PROPERTIES
@given(batch=BATCHES, batch_size=st.integers(1, 4))
def test_pipe_links_a_batch_as_one_doc_at_a_time(nlp, batch, batch_size):
    piped = decisions(nlp.pipe([build(nlp, spec) for spec in batch], batch_size=batch_size))
    assert_same_decisions(piped, decisions(nlp(build(nlp, spec)) for spec in batch))


@PROPERTIES
@given(spec=doc_specs())
def test_a_doc_round_tripped_through_bytes_or_pickle_links_the_same(nlp, spec):
    """Serialized before linking, the copy links like the original; after, it keeps the links."""
    linked = nlp(build(nlp, spec))
    want = decisions([linked])
    copies = [Doc(nlp.vocab).from_bytes(build(nlp, spec).to_bytes()), pickle.loads(pickle.dumps(build(nlp, spec)))]
    for copy in copies:
        assert_same_decisions(decisions([nlp(copy)]), want)
    assert decisions([Doc(nlp.vocab).from_bytes(linked.to_bytes())]) == want
    assert decisions([pickle.loads(pickle.dumps(linked))]) == want


@PROPERTIES
@given(batch=BATCHES)
def test_clustering_gives_mentions_of_one_cluster_one_kb_id(clustering_nlp, batch):
    """Every linked mention is in an int cluster (one numbering per batch) whose mentions share
    their id; a mention without a word character is linked to nothing and in no cluster."""
    docs = list(clustering_nlp.pipe([build(clustering_nlp, spec) for spec in batch], batch_size=len(batch) + 1))
    ids_by_cluster = {}
    for ent in (ent for doc in docs for ent in doc.ents):
        if WORDLESS.match(ent.text):
            assert (ent.kb_id_, ent._.kb_candidates, ent._.arbo_cluster) == (NIL, [], None)
            continue
        assert type(ent._.arbo_cluster) is int and ent.kb_id_ in KB_IDS | {NIL}
        ids_by_cluster.setdefault(ent._.arbo_cluster, set()).add(ent.kb_id_)
    assert all(len(ids) == 1 for ids in ids_by_cluster.values()), ids_by_cluster


@PROPERTIES
@given(batch=BATCHES)
def test_discovery_proposes_only_clustered_nil_mentions(clustering_nlp, batch):
    """A mention in no cluster (no word character) is not proposed as a new entity."""
    docs = [build(clustering_nlp, spec) for spec in batch]
    result = discover_entities(clustering_nlp, docs)
    linked = list(clustering_nlp.pipe(docs, batch_size=len(docs) + 1))
    nil_mentions = [e for doc in linked for e in doc.ents if e.kb_id_ == NIL and e._.arbo_cluster is not None]
    proposed = [m["text"] for record in result["records"] for m in record["mentions"]]
    assert sorted(proposed) == sorted(e.text for e in nil_mentions)
    assert result["n_nil_mentions"] == len(nil_mentions)
    assert len(result["records"]) == len({e._.arbo_cluster for e in nil_mentions})
