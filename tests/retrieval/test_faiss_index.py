import numpy as np
import pytest

from spacy_arbo.retrieval import faiss_index as index_module
from spacy_arbo.retrieval.faiss_index import KINDS, ExactTopK, FaissIndex, gpu_available
from spacy_arbo.util import ArboError

DIM = 16


def unit_rows(matrix):
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def random_vectors(n, dim=DIM, seed=0):
    return unit_rows(np.random.default_rng(seed).normal(size=(n, dim)))


def clustered_vectors(n, dim=DIM, centres=20, seed=0):
    rng = np.random.default_rng(seed)
    middle = unit_rows(rng.normal(size=(centres, dim)))
    return unit_rows(middle[rng.integers(centres, size=n)] + 0.15 * rng.normal(size=(n, dim)))


def brute_force(vectors, queries, k):
    scores = queries.astype(np.float64) @ vectors.astype(np.float64).T
    top = np.argsort(-scores, axis=1)[:, :k]
    return np.take_along_axis(scores, top, axis=1), top


@pytest.fixture(scope="module")
def small_indexes():
    """One index of each kind over the same 2000 vectors."""
    vectors = clustered_vectors(2000)
    return vectors, {kind: FaissIndex.build(vectors, kind, fingerprint="enc1") for kind in KINDS}


def test_flat_equals_brute_force():
    vectors, queries = random_vectors(500), random_vectors(20, seed=1)
    index = FaissIndex.build(vectors)
    scores, ids = index.search(queries, 10)
    want_scores, want_ids = brute_force(vectors, queries, 10)
    assert scores.dtype == np.float32 and ids.dtype == np.int64
    assert np.array_equal(ids, want_ids)
    assert np.allclose(scores, want_scores, atol=1e-5)
    assert (index.kind, index.dim, len(index), index.ntotal) == ("flat", DIM, 500, 500)


def test_l2_scores_are_negated_squared_distances():
    vectors, queries = random_vectors(50), random_vectors(3, seed=1)
    scores, ids = FaissIndex.build(vectors, metric="l2").search(queries, 5)
    distances = ((queries[:, None, :] - vectors[None]) ** 2).sum(-1)
    assert np.array_equal(ids, np.argsort(distances, axis=1)[:, :5])
    assert np.allclose(scores, -np.sort(distances, axis=1)[:, :5], atol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_custom_ids(kind):
    vectors = clustered_vectors(1000)
    ids = np.arange(1000, dtype=np.int64) * 7 + 3
    index = FaissIndex.build(vectors, kind, ids=ids)
    _, found = index.search(vectors[:5], 10)
    assert np.isin(found, ids).all()
    # Product quantization is lossy: a vector finds itself among its neighbours, not always first.
    assert all(own in row for own, row in zip([3, 10, 17, 24, 31], found))


def test_shared_ids_for_synonym_rows():
    vectors = random_vectors(6)
    _, found = FaissIndex.build(vectors, ids=np.array([0, 0, 1, 1, 2, 2])).search(vectors[:1], 6)
    assert sorted(found[0]) == [0, 0, 1, 1, 2, 2]


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_k_larger_than_index_is_padded(kind):
    vectors = random_vectors(3)
    scores, ids = FaissIndex.build(vectors, kind).search(vectors[:2], 5)
    assert ids.shape == scores.shape == (2, 5)
    assert (ids[:, 3:] == -1).all() and np.isneginf(scores[:, 3:]).all()
    assert sorted(ids[0, :3]) == [0, 1, 2] and np.isfinite(scores[:, :3]).all()


def test_empty_query_matrix(small_indexes):
    scores, ids = small_indexes[1]["flat"].search(np.zeros((0, DIM)), 4)
    assert scores.shape == ids.shape == (0, 4)


def test_hnsw_recall_against_flat(small_indexes):
    vectors, indexes = small_indexes
    queries = clustered_vectors(100, seed=1)
    _, exact = indexes["flat"].search(queries, 10)
    _, approx = indexes["hnsw"].search(queries, 10)
    recall = np.mean([len(set(a) & set(e)) / 10 for a, e in zip(approx, exact)])
    assert recall >= 0.95


@pytest.mark.parametrize("kind", ["ivfpq", "ivfsq"])
def test_ivf_returns_valid_ids(small_indexes, kind):
    vectors, indexes = small_indexes
    scores, ids = indexes[kind].search(vectors[:50], 10)
    assert ((ids >= 0) & (ids < len(vectors))).all()
    assert np.isfinite(scores).all() and (np.diff(scores, axis=1) <= 1e-6).all()
    assert all(own in row for own, row in zip(range(50), ids))


@pytest.mark.parametrize("kind", ["ivfpq", "ivfsq"])
def test_ivf_build_is_deterministic(small_indexes, kind):
    vectors, indexes = small_indexes
    again = FaissIndex.build(vectors, kind, fingerprint="enc1")
    assert again.to_bytes() == indexes[kind].to_bytes()


def test_ivf_params_are_recorded(small_indexes):
    params = small_indexes[1]["ivfsq"].params
    assert set(params) == {"nlist", "sq_type", "seed", "nprobe", "recall_target", "recall_k", "recall"}
    assert (params["nlist"], params["sq_type"], params["seed"]) == (2000 // 39, "8bit", 0)
    assert (params["recall_target"], params["recall_k"]) == (0.95, 64)
    pq = small_indexes[1]["ivfpq"].params
    assert (pq["nlist"], pq["pq_m"], pq["pq_nbits"]) == (2000 // 39, 2, 8)


def exact_recall(index, vectors, queries, k):
    _, want = brute_force(vectors, queries, k)
    _, found = index.search(queries, k)
    return np.mean([len(set(f) & set(w)) / k for f, w in zip(found, want)])


@pytest.mark.parametrize("kind,name", [("ivfsq", "nprobe"), ("hnsw", "ef_search")])
def test_search_width_is_the_smallest_meeting_the_recall_target(kind, name):
    vectors = clustered_vectors(4000, centres=40, seed=3)
    index = FaissIndex.build(vectors, kind, recall_target=0.9, recall_k=16)
    width = index.params[name]
    sample = vectors[np.random.default_rng(5).choice(4000, 200, replace=False)]
    assert index.params["recall"] >= 0.9 and exact_recall(index, vectors, sample, 16) >= 0.85
    if kind == "ivfsq":
        assert 1 < width < index.params["nlist"]
        narrower = FaissIndex.build(vectors, kind, recall_target=0.9, recall_k=16, nprobe=width // 2)
        assert narrower.params["recall"] < 0.9 and narrower.params["nprobe"] == width // 2


def test_recall_target_out_of_range():
    with pytest.raises(ArboError, match=r"^recall_target takes a number in \(0, 1\]; got 1.5\.$"):
        FaissIndex.build(random_vectors(10), "ivfsq", recall_target=1.5)


def test_capped_recall_warns_and_takes_the_plateau():
    vectors = clustered_vectors(3000, seed=4)
    with pytest.warns(UserWarning, match="below recall_target=0.999"):
        index = FaissIndex.build(vectors, "ivfpq", pq_m=2, recall_target=0.999)
    assert index.params["nprobe"] < index.params["nlist"] and index.params["recall"] < 0.999


def test_auto_is_flat_when_small_and_ivfsq_when_large(monkeypatch):
    vectors = clustered_vectors(2000)
    assert FaissIndex.build(vectors, "auto").kind == "flat"
    monkeypatch.setattr(index_module, "AUTO_FLAT_MAX", 1999)
    index = FaissIndex.build(vectors, "auto")
    assert index.kind == "ivfsq" and index.params["recall"] >= 0.95


def test_chunks_build_the_same_index_as_one_matrix():
    vectors = clustered_vectors(3000, seed=6)
    ids = np.arange(3000) // 2  # two vectors per entity, as with alias vectors
    whole = FaissIndex.build(vectors, "ivfsq", ids=ids)
    chunks = [(vectors[i:i + 700], ids[i:i + 700]) for i in range(0, 3000, 700)]
    streamed = FaissIndex.build_from_chunks(iter(chunks), count=3000, sample=vectors, kind="ivfsq")
    assert streamed.to_bytes() == whole.to_bytes()
    numbered = FaissIndex.build_from_chunks(((vectors[i:i + 1000], None) for i in range(0, 3000, 1000)),
                                            count=3000, sample=vectors[:1500])
    assert np.array_equal(numbered.search(vectors[2990:], 1)[1][:, 0], np.arange(2990, 3000))


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_exact_top_k_over_chunks_equals_brute_force(metric):
    vectors, queries = random_vectors(900), random_vectors(12, seed=8)
    exact = ExactTopK(queries, 10, metric)
    for start in range(0, 900, 250):
        exact.update(vectors[start:start + 250], np.arange(start, min(900, start + 250)) + 1000)
    if metric == "ip":
        want = brute_force(vectors, queries, 10)[1]
    else:
        want = np.argsort(((queries[:, None] - vectors[None]) ** 2).sum(-1), axis=1)[:, :10]
    assert np.array_equal(exact.ids, want + 1000)
    assert exact.recall(want + 1000) == 1.0 and exact.recall(want[:, :5] + 1000) == 0.5


def test_chunk_errors():
    vectors = random_vectors(100)
    with pytest.raises(ArboError, match="chunks held 100 vectors but count says 120"):
        FaissIndex.build_from_chunks([(vectors, None)], count=120, sample=vectors)
    with pytest.raises(ArboError, match="chunk of vectors has dimension 8; the sample has 16"):
        FaissIndex.build_from_chunks([(np.ones((4, 8)), None)], count=4, sample=vectors)
    with pytest.raises(ArboError, match="Unknown index kind 'ivf'; choose one of auto, flat"):
        FaissIndex.build(vectors, "ivf")


def test_many_lists_use_a_graph_quantizer(monkeypatch, tmp_path):
    monkeypatch.setattr(index_module, "HNSW_QUANTIZER_NLIST", 8)
    vectors = clustered_vectors(2000, seed=7)
    index = FaissIndex.build(vectors, "ivfsq", nlist=32)
    quantizer = index_module.faiss.downcast_index(index_module.faiss.extract_index_ivf(index._index).quantizer)
    assert isinstance(quantizer, index_module.faiss.IndexHNSWFlat) and quantizer.ntotal == 32
    index.to_disk(tmp_path / "index")
    loaded = FaissIndex.from_disk(tmp_path / "index")
    assert np.array_equal(loaded.search(vectors[:20], 5)[1], index.search(vectors[:20], 5)[1])
    assert index.params["recall"] >= 0.95


@pytest.mark.parametrize("kind", KINDS)
def test_disk_and_bytes_round_trip(small_indexes, tmp_path, kind):
    vectors, indexes = small_indexes
    index = indexes[kind]
    index.to_disk(tmp_path / "index")
    assert sorted(p.name for p in (tmp_path / "index").iterdir()) == ["index.faiss", "index.json"]
    queries = clustered_vectors(30, seed=2)
    want = index.search(queries, 7)
    for loaded in (FaissIndex.from_disk(tmp_path / "index", "enc1", DIM),
                   FaissIndex.from_bytes(index.to_bytes(), "enc1", DIM)):
        got = loaded.search(queries, 7)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        assert (loaded.kind, loaded.params, loaded.fingerprint) == (kind, index.params, "enc1")
    assert list(tmp_path.iterdir()) == [tmp_path / "index"]


def test_to_disk_overwrites(small_indexes, tmp_path):
    small_indexes[1]["flat"].to_disk(tmp_path / "index")
    FaissIndex.build(random_vectors(4)).to_disk(tmp_path / "index")
    assert len(FaissIndex.from_disk(tmp_path / "index")) == 4


@pytest.mark.parametrize("load", ["disk", "bytes"])
def test_metadata_mismatch(small_indexes, tmp_path, load):
    index = small_indexes[1]["flat"]
    index.to_disk(tmp_path / "index")

    def reload(**expected):
        if load == "disk":
            return FaissIndex.from_disk(tmp_path / "index", **expected)
        return FaissIndex.from_bytes(index.to_bytes(), **expected)

    with pytest.raises(ArboError, match=r"encoder 'enc1' but the pipeline's encoder is 'enc2'"):
        reload(expected_fingerprint="enc2")
    with pytest.raises(ArboError, match=r"holds 16-dimensional .* makes 384-dimensional"):
        reload(expected_dim=384)


def test_corrupt_index_file(small_indexes, tmp_path):
    small_indexes[1]["flat"].to_disk(tmp_path / "index")
    index_file = tmp_path / "index" / "index.faiss"
    index_file.write_bytes(index_file.read_bytes()[:100])
    with pytest.raises(ArboError, match="index.faiss"):
        FaissIndex.from_disk(tmp_path / "index")
    index_file.unlink()
    with pytest.raises(ArboError, match="index.faiss: missing"):
        FaissIndex.from_disk(tmp_path / "index")


def test_unreadable_faiss_data_with_matching_checksum(small_indexes):
    index = small_indexes[1]["flat"]
    data = index_module.srsly.msgpack_loads(index.to_bytes())
    data["index"] = b"not a faiss index"
    data["meta"]["sha256"] = index_module.hashlib.sha256(data["index"]).hexdigest()
    with pytest.raises(ArboError, match="cannot read FAISS index"):
        FaissIndex.from_bytes(index_module.srsly.msgpack_dumps(data))


def test_corrupt_or_missing_metadata(small_indexes, tmp_path):
    with pytest.raises(ArboError, match="missing index.json"):
        FaissIndex.from_disk(tmp_path / "nothing")
    small_indexes[1]["flat"].to_disk(tmp_path / "index")
    (tmp_path / "index" / "index.json").write_text("{not json")
    with pytest.raises(ArboError, match="index.json"):
        FaissIndex.from_disk(tmp_path / "index")
    (tmp_path / "index" / "index.json").write_text('{"kind": "flat"}')
    with pytest.raises(ArboError, match="index.json: index metadata lacks"):
        FaissIndex.from_disk(tmp_path / "index")
    with pytest.raises(ArboError, match="serialized FAISS index"):
        FaissIndex.from_bytes(b"\x00garbage")


def test_failed_write_leaves_nothing(small_indexes, tmp_path, monkeypatch):
    def broken_write(*_args):
        raise RuntimeError("disk full")

    index = small_indexes[1]["flat"]
    monkeypatch.setattr(index_module.faiss, "write_index", broken_write)
    with pytest.raises(RuntimeError, match="disk full"):
        index.to_disk(tmp_path / "index")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "vectors,message",
    [
        (np.ones(DIM), r"2-D matrix .* shape \(16,\)"),
        (np.full((3, DIM), np.nan), "row 0 has a NaN"),
        (np.vstack([np.ones((2, DIM)), np.full((1, DIM), np.inf)]), "row 2 has a NaN or infinite"),
        (np.full((2, DIM), 1e300), "row 0 .* too large for float32"),
        (np.zeros((0, DIM)), "empty vector matrix"),
        (np.zeros((3, 0)), r"dim > 0"),
        (np.array([["a", "b"]]), "must be numeric"),
        ([[1.0, 2.0], [3.0]], "2-D numeric matrix"),
    ],
)
def test_bad_vectors(vectors, message):
    with pytest.raises(ArboError, match=message):
        FaissIndex.build(vectors)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"kind": "annoy"}, "Unknown index kind 'annoy'"),
        ({"metric": "cosine"}, "Unknown metric 'cosine'"),
        ({"ids": np.arange(5)}, "Got 5 ids for 300 vectors"),
        ({"ids": np.arange(300) - 1}, "non-negative"),
        ({"ids": np.arange(300.0)}, "1-D integer array"),
        ({"kind": "hnsw", "hnsw_m": 0}, "hnsw_m must be a positive integer"),
        ({"kind": "ivfsq", "nlist": 301}, "nlist=301 .* got 300"),
        ({"kind": "ivfsq", "sq_type": "2bit"}, "Unknown sq_type"),
        ({"kind": "ivfpq", "pq_m": 5}, "pq_m=5 must divide .* 16"),
        ({"kind": "ivfpq", "pq_nbits": 9}, "at least 512 vectors .* got 300"),
    ],
)
def test_bad_build_options(kwargs, message):
    with pytest.raises(ArboError, match=message):
        FaissIndex.build(random_vectors(300), **kwargs)


def test_bad_queries(small_indexes):
    index = small_indexes[1]["flat"]
    with pytest.raises(ArboError, match="dimension 8 but the index has dimension 16"):
        index.search(np.ones((2, 8)), 3)
    with pytest.raises(ArboError, match="k must be a positive integer; got 0"):
        index.search(np.ones((2, DIM)), 0)
    with pytest.raises(ArboError, match="row 1 has a NaN"):
        index.search(np.vstack([np.ones(DIM), np.full(DIM, np.nan)]), 3)
    with pytest.raises(ArboError, match="2-D matrix"):
        index.search(np.ones(DIM), 3)


def test_ivfsq_trains_on_tiny_data():
    vectors = random_vectors(10)
    index = FaissIndex.build(vectors, "ivfsq")
    assert index.params["nlist"] == 1
    assert index.search(vectors[:1], 1)[1][0, 0] == 0


def test_auto_mode_stays_on_cpu_without_gpu():
    assert not gpu_available()
    assert not FaissIndex.build(random_vectors(5)).on_gpu
    with pytest.raises(ArboError, match="use_gpu=True but faiss sees no GPU"):
        FaissIndex.build(random_vectors(5), use_gpu=True)


class FakeGpu:
    """Stands in for faiss's GPU functions: records moves, keeps indexes on CPU."""

    def __init__(self, monkeypatch):
        self.moves = []
        monkeypatch.setattr(index_module, "gpu_available", lambda: True)
        monkeypatch.setattr(index_module, "_gpu_resources", lambda: "resources")
        monkeypatch.setattr(index_module.faiss, "index_cpu_to_gpu", self.to_gpu, raising=False)
        monkeypatch.setattr(index_module.faiss, "index_gpu_to_cpu", self.to_cpu, raising=False)

    def to_gpu(self, resources, device, index):
        self.moves.append(("gpu", resources, device))
        return index_module.faiss.clone_index(index)

    def to_cpu(self, index):
        self.moves.append(("cpu",))
        return index_module.faiss.clone_index(index)


def test_gpu_path_copies_to_cpu_before_writing(monkeypatch, tmp_path):
    gpu = FakeGpu(monkeypatch)
    vectors = random_vectors(40)
    index = FaissIndex.build(vectors)
    assert index.on_gpu and gpu.moves == [("gpu", "resources", 0)]
    index.to_disk(tmp_path / "index")
    index.to_bytes()
    assert gpu.moves[1:] == [("cpu",), ("cpu",)]
    assert not FaissIndex.from_disk(tmp_path / "index", use_gpu=False).on_gpu
    assert FaissIndex.from_disk(tmp_path / "index").search(vectors[:1], 1)[1][0, 0] == 0


def test_hnsw_stays_on_cpu_with_gpu(monkeypatch):
    gpu = FakeGpu(monkeypatch)
    assert not FaissIndex.build(random_vectors(40), "hnsw").on_gpu
    with pytest.warns(UserWarning, match="no GPU version of HNSW"):
        assert not FaissIndex.build(random_vectors(40), "hnsw", use_gpu=True).on_gpu
    assert gpu.moves == []


@pytest.mark.parametrize("kind", ["flat", "ivfsq", "ivfpq"])
def test_update_removes_and_adds_vectors(kind):
    vectors = clustered_vectors(2000, seed=9)
    ids = np.arange(2000) // 2
    index = FaissIndex.build(vectors, kind, ids=ids, fingerprint="kb1")
    moved = clustered_vectors(4, seed=10)
    index.update(np.array([5, 7, 5]), moved, np.array([5, 5, 1000, 1001]), fingerprint="kb2")
    assert index.ntotal == 2000 - 4 + 4 and index.fingerprint == "kb2"
    _, found = index.search(vectors[14:16], 10)  # the old vectors of id 7 are gone
    assert 7 not in found
    _, found = index.search(moved, 3)
    assert all(want in row for want, row in zip([5, 5, 1000, 1001], found))


def test_update_refuses_hnsw():
    index = FaissIndex.build(random_vectors(50), "hnsw")
    with pytest.raises(ArboError, match="hnsw index cannot drop vectors"):
        index.update(np.array([1]), random_vectors(1), np.array([1]), "x")


def test_tuning_queries_set_the_search_width_for_queries_like_them():
    """Queries unlike the indexed vectors (here: between two clusters) need another search
    width than the indexed vectors do; tuning on queries like them finds it."""
    vectors = clustered_vectors(4000, centres=40, seed=3)
    pairs = np.random.default_rng(6).integers(0, 4000, size=(400, 2))
    queries = vectors[pairs[:, 0]] + vectors[pairs[:, 1]]  # between two clusters
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    default = FaissIndex.build(vectors, "ivfsq", recall_target=0.9, recall_k=16)
    tuned = FaissIndex.build(vectors, "ivfsq", recall_target=0.9, recall_k=16, tuning_queries=queries[:200])
    held_out = queries[200:]
    assert tuned.params["nprobe"] > default.params["nprobe"]
    assert exact_recall(tuned, vectors, held_out, 16) >= 0.85 > exact_recall(default, vectors, held_out, 16)
    with pytest.raises(ArboError, match="tuning_queries have dimension 3"):
        FaissIndex.build(vectors, "ivfsq", tuning_queries=np.ones((4, 3), np.float32))


def test_exact_top_k_counts_a_tied_vector_as_found():
    """Which of two identical vectors exact search ranks k-th is arbitrary: either is found;
    a nearly tied one only within the tolerance asked for."""
    query = np.zeros((1, 4), dtype=np.float32)
    query[0, 0] = 1.0
    vectors = np.array([[1.0, 0, 0, 0], [0.9, 0.1, 0, 0], [0.9, 0.1, 0, 0], [0.8999, 0.2, 0, 0], [0, 1, 0, 0]],
                       dtype=np.float32)
    exact = ExactTopK(query, 2)
    exact.update(vectors, np.arange(5))
    first, second = exact.ids[0].tolist()
    assert first == 0 and second in (1, 2)
    assert exact.recall(np.array([[0, 3 - second]])) == 1.0
    assert exact.recall(np.array([[0, 3]])) == 0.5
    assert exact.recall(np.array([[0, 3]]), within=1e-3) == 1.0
    assert exact.recall(np.array([[0, 4]]), within=1e-3) == 0.5
