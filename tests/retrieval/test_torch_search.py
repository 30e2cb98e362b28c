"""Torch's exact search gives what FAISS's flat index gives: the same ids (ties included) and
the same scores within float tolerance, here on CPU tensors; and `FaissIndex` searches a flat
index with it on a CPU, and places one on it where only torch sees a GPU, searching, updating
and saving it as a CPU index."""
import faiss
import numpy as np
import pytest

from spacy_arbo.retrieval import faiss_index as index_module
from spacy_arbo.retrieval import torch_search
from spacy_arbo.retrieval.faiss_index import FaissIndex
from spacy_arbo.retrieval.torch_search import TorchFlatSearch
from spacy_arbo.util import ArboError

from .test_faiss_index import FakeGpu, clustered_vectors, random_vectors

METRICS = {"ip": faiss.METRIC_INNER_PRODUCT, "l2": faiss.METRIC_L2}
# Default chunks (one chunk here), and chunks small enough that results merge across many.
CHUNKS = [{}, {"query_chunk": 3, "key_chunk": 97}, {"query_chunk": 1, "key_chunk": 7}]


def faiss_flat(vectors, metric):
    index = faiss.IndexFlat(vectors.shape[1], METRICS[metric])
    index.add(vectors)
    return index


def tied_vectors(n, seed=0):
    """Rows drawn from five small-integer prototypes: many exactly equal scores."""
    rng = np.random.default_rng(seed)
    prototypes = rng.integers(-2, 3, size=(5, 8)).astype(np.float32)
    return prototypes[rng.integers(0, 5, size=n)], rng.integers(-2, 3, size=(6, 8)).astype(np.float32)


@pytest.mark.parametrize("chunks", CHUNKS)
@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_random_data_gives_faiss_ids_and_scores(metric, chunks):
    vectors, queries = random_vectors(1000, seed=3), random_vectors(40, seed=4)
    expected = faiss_flat(vectors, metric)
    search = TorchFlatSearch.from_faiss(expected, "cpu", **chunks)
    for k in (1, 10, 64, 1000):
        scores, ids = search.search(queries, k)
        want_scores, want_ids = expected.search(queries, k)
        np.testing.assert_array_equal(ids, want_ids)
        np.testing.assert_allclose(scores, want_scores, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("chunks", CHUNKS)
@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_tied_scores_keep_and_order_the_rows_faiss_keeps(metric, chunks):
    """FAISS keeps the earliest of tied rows and lists them latest first (ip) or earliest
    first (l2). k up to a tenth of n, and k >= n: when k is a larger share of n, FAISS's flat
    index picks among tied rows differently, and no caller asks for that many."""
    vectors, queries = tied_vectors(1000)
    expected = faiss_flat(vectors, metric)
    search = TorchFlatSearch.from_faiss(expected, "cpu", **chunks)
    for k in (1, 2, 5, 20, 64, 100, 1000):
        scores, ids = search.search(queries, k)
        want_scores, want_ids = expected.search(queries, k)
        assert len(set(want_scores[0])) < k or k == 1  # the top k really holds ties
        np.testing.assert_array_equal(ids, want_ids)
        np.testing.assert_array_equal(scores, want_scores)  # small integers: exact


@pytest.mark.parametrize("metric,pad", [("ip", -np.inf), ("l2", np.inf)])
def test_more_slots_than_vectors_are_padded(metric, pad):
    vectors, queries = tied_vectors(7)
    expected = faiss_flat(vectors, metric)
    scores, ids = TorchFlatSearch.from_faiss(expected, "cpu", key_chunk=3).search(queries, 12)
    want_scores, want_ids = expected.search(queries, 12)
    np.testing.assert_array_equal(ids, want_ids)
    assert (ids[:, 7:] == -1).all() and (scores[:, 7:] == pad).all()
    np.testing.assert_array_equal(scores[:, :7], want_scores[:, :7])


def test_empty_queries_and_an_empty_index():
    vectors, queries = tied_vectors(20)
    search = TorchFlatSearch.from_faiss(faiss_flat(vectors, "ip"), "cpu")
    scores, ids = search.search(np.zeros((0, 8), dtype=np.float32), 5)
    assert scores.shape == ids.shape == (0, 5)
    empty = TorchFlatSearch.from_faiss(faiss_flat(np.zeros((0, 8), dtype=np.float32), "ip"), "cpu")
    scores, ids = empty.search(queries, 3)
    assert empty.ntotal == 0 and (ids == -1).all() and (scores == -np.inf).all()
    assert empty.to_faiss().ntotal == 0


def test_ids_of_an_id_map_and_the_same_index_back():
    vectors = clustered_vectors(300, seed=5)
    ids = np.arange(300, dtype=np.int64) // 3 + 1000  # several vectors per id, as with aliases
    index = faiss.IndexIDMap(faiss.IndexFlat(vectors.shape[1], faiss.METRIC_INNER_PRODUCT))
    index.add_with_ids(vectors, ids)
    search = TorchFlatSearch.from_faiss(index, "cpu")
    np.testing.assert_array_equal(search.search(vectors[:20], 9)[1], index.search(vectors[:20], 9)[1])
    # The file a CPU index writes, byte for byte.
    assert bytes(faiss.serialize_index(search.to_faiss())) == bytes(faiss.serialize_index(index))


def test_bad_inputs():
    vectors, queries = tied_vectors(10)
    with pytest.raises(ArboError, match="flat FAISS index"):
        TorchFlatSearch.from_faiss(faiss.IndexHNSWFlat(8, 4), "cpu")
    search = TorchFlatSearch.from_faiss(faiss_flat(vectors, "ip"), "cpu")
    with pytest.raises(ArboError, match="index has dimension 8"):
        search.search(queries[:, :4], 3)
    with pytest.raises(ArboError, match="Unknown metric 'cos'"):
        TorchFlatSearch(vectors, np.arange(10), "cos", device="cpu")


@pytest.fixture
def torch_gpu(monkeypatch):
    """Torch 'sees a GPU' whose device is the CPU; faiss sees none (faiss-cpu)."""
    monkeypatch.setattr(torch_search, "torch_device", lambda: "cpu")
    assert not index_module.gpu_available()


def test_a_flat_index_goes_to_torch_where_only_torch_sees_a_gpu(torch_gpu, tmp_path):
    vectors, queries = clustered_vectors(500, seed=6), clustered_vectors(30, seed=7)
    ids = np.arange(500) // 2
    cpu = FaissIndex.build(vectors, ids=ids, fingerprint="kb1", use_gpu=False)
    gpu = FaissIndex.build(vectors, ids=ids, fingerprint="kb1")
    assert gpu.on_gpu and not cpu.on_gpu and (gpu.dim, gpu.ntotal) == (cpu.dim, cpu.ntotal)
    for k in (1, 16, 600):
        np.testing.assert_array_equal(gpu.search(queries, k)[1], cpu.search(queries, k)[1])
        np.testing.assert_allclose(gpu.search(queries, k)[0], cpu.search(queries, k)[0], rtol=1e-5, atol=1e-5)
    moved = clustered_vectors(4, seed=8)
    for index in (cpu, gpu):
        index.update(np.array([3, 7]), moved, np.array([3, 7, 900, 901]), "kb2")
    assert gpu.on_gpu and gpu.ntotal == cpu.ntotal == 500
    np.testing.assert_array_equal(gpu.search(queries, 20)[1], cpu.search(queries, 20)[1])
    gpu.to_disk(tmp_path / "gpu")
    cpu.to_disk(tmp_path / "cpu")
    # A GPU index saves as the CPU index it holds: the same file.
    assert (tmp_path / "gpu" / "index.faiss").read_bytes() == (tmp_path / "cpu" / "index.faiss").read_bytes()
    loaded = FaissIndex.from_disk(tmp_path / "gpu", "kb2")
    assert loaded.on_gpu and not FaissIndex.from_disk(tmp_path / "gpu", use_gpu=False).on_gpu
    np.testing.assert_array_equal(loaded.search(queries, 20)[1], cpu.search(queries, 20)[1])
    assert FaissIndex.from_bytes(gpu.to_bytes()).search(queries, 5)[1].tolist() == cpu.search(queries, 5)[1].tolist()


def test_other_kinds_stay_on_cpu_where_only_torch_sees_a_gpu(torch_gpu):
    vectors = clustered_vectors(400, seed=6)
    assert not FaissIndex.build(vectors, "ivfsq").on_gpu
    for kind in ("hnsw", "ivfsq"):
        with pytest.raises(ArboError, match="faiss sees no GPU"):
            FaissIndex.build(vectors, kind, use_gpu=True)


def test_faiss_gpu_comes_before_torch(torch_gpu, monkeypatch):
    gpu = FakeGpu(monkeypatch)
    index = FaissIndex.build(random_vectors(40))
    assert index.on_gpu and gpu.moves == [("gpu", "resources", 0)]


def test_a_flat_index_on_a_cpu_is_searched_by_torch_with_faiss_results(tmp_path):
    vectors, queries = clustered_vectors(600, seed=1), random_vectors(30, seed=2)
    index = FaissIndex.build(vectors, "flat", use_gpu=False)
    assert isinstance(index._index, TorchFlatSearch) and not index.on_gpu
    expected = faiss_flat(vectors, "ip")
    for k in (1, 64, 256):
        scores, ids = index.search(queries, k)
        want_scores, want_ids = expected.search(queries, k)
        np.testing.assert_array_equal(ids, want_ids)
        np.testing.assert_allclose(scores, want_scores, rtol=1e-5, atol=1e-5)
    index.to_disk(tmp_path / "index")
    loaded = FaissIndex.from_disk(tmp_path / "index", use_gpu=False)
    assert isinstance(loaded._index, TorchFlatSearch)
    np.testing.assert_array_equal(loaded.search(queries, 64)[1], expected.search(queries, 64)[1])
