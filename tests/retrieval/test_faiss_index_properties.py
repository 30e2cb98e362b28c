"""Property-based tests of FaissIndex serialization: for random vectors, ids and index
settings, an index read back from disk or from bytes answers every query exactly as the
index that was saved."""
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from spacy_arbo.retrieval.faiss_index import FaissIndex

FLOATS = st.floats(-100, 100, width=32, allow_nan=False, allow_infinity=False)


@st.composite
def indexes(draw):
    """(index, queries, k) over random vectors, ids, kind and metric."""
    kind = draw(st.sampled_from(["flat", "hnsw", "ivfsq", "ivfpq"]))
    dim = draw(st.integers(1, 12))
    n = draw(st.integers(16 if kind == "ivfpq" else 1, 60))
    vectors = draw(arrays(np.float32, (n, dim), elements=FLOATS))
    ids = draw(st.one_of(st.none(), arrays(np.int64, n, elements=st.integers(0, 2**40))))
    options = {"pq_nbits": 4, "pq_m": 1} if kind == "ivfpq" else {}
    index = FaissIndex.build(vectors, kind, ids=ids, metric=draw(st.sampled_from(["ip", "l2"])),
                             fingerprint=draw(st.text(max_size=8)), use_gpu=False, **options)
    queries = draw(arrays(np.float32, (draw(st.integers(0, 5)), dim), elements=FLOATS))
    return index, queries, draw(st.integers(1, n + 3))


def assert_same(loaded: FaissIndex, index: FaissIndex, queries: np.ndarray, k: int) -> None:
    assert (loaded.kind, loaded.metric, loaded.dim, loaded.ntotal, loaded.fingerprint, loaded.params) == (
        index.kind, index.metric, index.dim, index.ntotal, index.fingerprint, index.params)
    want_scores, want_ids = index.search(queries, k)
    scores, ids = loaded.search(queries, k)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_array_equal(scores, want_scores)


@settings(max_examples=40, deadline=None)
@given(indexes())
def test_saved_index_searches_like_the_original(case):
    index, queries, k = case
    with tempfile.TemporaryDirectory() as tmp:
        index.to_disk(Path(tmp) / "index")
        from_disk = FaissIndex.from_disk(Path(tmp) / "index", index.fingerprint, index.dim, use_gpu=False)
    assert_same(from_disk, index, queries, k)
    assert_same(FaissIndex.from_bytes(index.to_bytes(), index.fingerprint, index.dim, use_gpu=False),
                index, queries, k)
