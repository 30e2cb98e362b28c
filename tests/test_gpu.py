"""The GPU path against the CPU: bf16 on CUDA, the entity index on the device, `spacy train
--gpu-id 0` with the workflow's recipe, the reranker's training step, and linking.

Tests marked `gpu` skip, with the reason printed by `-rs`, where torch sees no CUDA device
(tests/conftest.py); `python bench/gpu_check.py` runs them on a GPU machine. The helpers they
share run on the CPU in the unmarked tests here, so CI checks them.
"""
import subprocess
import sys
from pathlib import Path
from typing import Dict

import numpy as np
import pytest
import spacy
import srsly
import torch
from spacy.training import Example
from thinc.api import Adam

from spacy_arbo.corpora import convert_corpus, read_docbin, write_docbin
from spacy_arbo.encoders.precision import autocast_gradient_passes, resolve_precision
from spacy_arbo.encoders.templates import MentionInput
from spacy_arbo.encoders.transformer import TransformerTower
from spacy_arbo.kb.entities import split_ids
from spacy_arbo.kb.readers import read_kb
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.retrieval.faiss_index import FaissIndex
from spacy_arbo.retrieval.torch_search import TorchFlatSearch
from spacy_arbo.torch_model import get_module
from spacy_arbo.util import ArboError

from .conftest import TOY_TEXTS, make_doc, shared_data_dir
from .encoders.test_precision import ENTITIES, cosines
from .pipeline.test_training import OBJECTIVES, train_toy
from .reranker.test_component import rotating_candidates
from .retrieval.test_torch_search import faiss_flat, tied_vectors
from .util import make_reranker_nlp, unlinked

ROOT = Path(__file__).resolve().parents[1]
TRAIN_STEPS = 4


@pytest.fixture
def gpu():
    """spaCy (thinc and its torch models) on GPU 0 for one test, back on the CPU after it."""
    spacy.require_gpu(0)
    yield torch.device("cuda")
    spacy.require_cpu()


def assert_same_top_k(found, expected, atol: float = 1e-4) -> None:
    """Two searches' (scores, ids) agree: scores within `atol`, and ids in the same order,
    except that ids whose scores are within `atol` of each other (a tie to float precision)
    may swap, and a tied run reaching the last slot may end with different ids."""
    (scores, ids), (want_scores, want_ids) = found, expected
    np.testing.assert_allclose(scores, want_scores, atol=atol, rtol=0)
    for row, (got, want, values) in enumerate(zip(ids, want_ids, want_scores)):
        start = 0
        for end in range(1, len(values) + 1):
            if end < len(values) and values[end - 1] - values[end] <= atol:
                continue  # the run of near-equal scores goes on
            if end < len(values):
                assert set(got[start:end]) == set(want[start:end]), f"query {row}, slots {start}-{end - 1}"
            start = end


def training_inputs(tmp_path: Path, toy_kb_dir: Path, toy_docs, real: bool, docs: int = 40) -> Dict[str, Path]:
    """KB and train/dev DocBins for `spacy train`: the CTD KB with the first `docs` NCBI train
    documents (a quarter as many dev ones) where `real` and the data are found, else the toy KB
    and documents."""
    data = shared_data_dir()
    paths = {"kb": toy_kb_dir, "train": tmp_path / "train.spacy", "dev": tmp_path / "dev.spacy"}
    if real and (data / "ncbi_disease").is_dir():
        kb = read_kb(data / "ctd" / "CTD_diseases_2017-06-06.tsv.gz", "ctd")
        paths["kb"] = tmp_path / "kb"
        kb.to_disk(paths["kb"])
        for split, name, limit in (("train", "NCBItrainset_corpus.txt", docs),
                                   ("dev", "NCBIdevelopset_corpus.txt", max(1, docs // 4))):
            write_docbin(convert_corpus(data / "ncbi_disease" / name, kb=kb, limit=limit)[0], paths[split])
    else:
        write_docbin(toy_docs, paths["train"])
        write_docbin(toy_docs, paths["dev"])
    return paths


def spacy_train_command(paths: Dict[str, Path], encoder: Path, out: Path, gpu_id: int, tower: str):
    """configs/retriever_TOWER.cfg as project.yml's train-retriever runs it, for TRAIN_STEPS
    updates from a small `encoder` (whose two layers the frozen recipe's entity tower freezes)."""
    frozen = ["--components.arbo_linker.model.entity_tower.frozen_layers", "2"] if tower == "frozen" else []
    return [sys.executable, "-m", "spacy", "train", f"configs/retriever_{tower}.cfg", "--output", str(out),
            "--paths.train", str(paths["train"]), "--paths.dev", str(paths["dev"]), "--paths.kb", str(paths["kb"]),
            "--paths.encoder", str(encoder), "--paths.clock", str(out / "clock.json"), *frozen,
            "--training.max_steps", str(TRAIN_STEPS), "--training.eval_frequency", "2", "--gpu-id", str(gpu_id)]


def tiny_dual_encoder(tiny_bert_dir: Path) -> dict:
    return {"@architectures": "spacy_arbo.DualEncoder.v1", "mention_tower": {
        "@architectures": "spacy_arbo.TransformerTower.v1", "name": str(tiny_bert_dir), "max_length": 32}}


def candidates(span):
    """A span's candidates as one search result row: (scores, ids)."""
    return np.array([[s for _, s in span._.kb_candidates]]), [[k for k, _ in span._.kb_candidates]]


def linked_ids(nlp, gold):
    return [e.kb_id_ for d in nlp.pipe(unlinked(nlp, gold)) for e in d.ents]


# Run on the CPU: the helpers above ------------------------------------------------------


def test_same_top_k_allows_swaps_within_a_tie_only():
    scores = np.array([[0.9, 0.5, 0.5 + 1e-6, 0.1]], dtype=np.float32)
    ids = np.array([[1, 2, 3, 4]])
    assert_same_top_k((scores, ids), (scores, ids))
    assert_same_top_k((scores, ids[:, [0, 2, 1, 3]]), (scores, ids))
    with pytest.raises(AssertionError):
        assert_same_top_k((scores, ids[:, [1, 0, 2, 3]]), (scores, ids))
    with pytest.raises(AssertionError):
        assert_same_top_k((scores + 0.01, ids), (scores, ids))
    tied_end = np.array([[0.9, 0.5, 0.5]], dtype=np.float32)
    assert_same_top_k((tied_end, np.array([[1, 2, 7]])), (tied_end, np.array([[1, 2, 3]])))


@pytest.mark.parametrize("tower", ["frozen", "graph"])
@pytest.mark.parametrize("gpu_id", [-1, pytest.param(0, marks=pytest.mark.gpu)])
def test_a_retriever_recipe_runs_under_spacy_train(gpu_id, tower, tmp_path, toy_kb_dir, toy_docs, tiny_bert_dir):
    """The workflow's recipe (frozen) and GER's (graph: hard negatives, knowledge units). On
    the GPU, a slice of NCBI with the CTD KB where the data are found; on the CPU (the same
    command with --gpu-id -1), the toy KB and documents."""
    paths = training_inputs(tmp_path, toy_kb_dir, toy_docs, real=gpu_id >= 0)
    out = tmp_path / "out"
    result = subprocess.run(spacy_train_command(paths, tiny_bert_dir, out, gpu_id, tower), cwd=ROOT,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert ("Using GPU: 0" if gpu_id >= 0 else "Using CPU") in result.stdout
    # spaCy's steps 0..TRAIN_STEPS, evaluated at steps 0, 2 and 4.
    assert srsly.read_json(out / "clock.json")["updates"] == TRAIN_STEPS + 1
    best = spacy.load(out / "model-best")
    kb = EntityStore.from_disk(paths["kb"])
    dev = read_docbin(paths["dev"], best.vocab)
    # A composite mention links to several ids ("A|B"), each in the KB.
    assert all(part in kb for kb_id in linked_ids(best, dev) for part in split_ids(kb_id))


# Run on a GPU ------------------------------------------------------------------------------


@pytest.mark.gpu
def test_auto_precision_is_bf16_on_cuda_and_close_to_fp32(tiny_bert_dir):
    cuda = torch.device("cuda")
    assert resolve_precision("auto", cuda) == "bf16" and autocast_gradient_passes("bf16", cuda)
    tower = TransformerTower.from_pretrained(str(tiny_bert_dir), "mean", 16, True).eval()
    with torch.no_grad():
        on_cpu = tower.encode_entities(ENTITIES)
        tower.to(cuda)
        full = tower.encode_entities(ENTITIES)
        tower.set_precision("bf16")
        half = tower.encode_entities(ENTITIES)
    assert full.device.type == half.device.type == "cuda" and half.dtype == torch.float32
    torch.testing.assert_close(full.cpu(), on_cpu, rtol=1e-4, atol=1e-4)
    assert not torch.equal(half, full) and cosines(half, full).min() > 0.995
    # A pass with gradient runs under CUDA's bf16 autocast and leaves fp32 gradients.
    tower.train()
    tower.encode_mentions([MentionInput("patients with ", "fever", " and cough")]).pow(2).sum().backward()
    grads = [p.grad for name, p in tower.encoder.named_parameters() if "pooler" not in name]
    assert all(g is not None and g.dtype == torch.float32 and torch.isfinite(g).all() for g in grads)


@pytest.mark.gpu
@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_a_flat_index_on_the_gpu_gives_the_cpu_top_k(metric, tmp_path):
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(20000, 64)).astype(np.float32)
    queries = rng.normal(size=(300, 64)).astype(np.float32)
    ids = np.arange(20000) // 2  # two vectors an id, as an entity's names
    cpu = FaissIndex.build(vectors, ids=ids, metric=metric, fingerprint="kb1", use_gpu=False)
    gpu = FaissIndex.build(vectors, ids=ids, metric=metric, fingerprint="kb1")  # the GPU where there is one
    assert gpu.on_gpu
    for k in (1, 64, 2048):
        assert_same_top_k(gpu.search(queries, k), cpu.search(queries, k))
    try:  # FAISS's GPU kernels cap k; torch's search does not
        assert_same_top_k(gpu.search(queries[:5], 4096), cpu.search(queries[:5], 4096))
    except ArboError as err:
        assert "GPU search with k=4096" in str(err)
    moved = rng.normal(size=(6, 64)).astype(np.float32)
    for index in (cpu, gpu):
        index.update(np.array([5, 9, 11]), moved, np.array([5, 9, 11, 20000, 20001, 20002]), "kb2")
    assert gpu.on_gpu and gpu.ntotal == cpu.ntotal
    assert_same_top_k(gpu.search(queries, 64), cpu.search(queries, 64))
    gpu.to_disk(tmp_path / "index")
    for use_gpu in (False, None):
        loaded = FaissIndex.from_disk(tmp_path / "index", "kb2", use_gpu=use_gpu)
        assert loaded.on_gpu == (use_gpu is None)
        assert_same_top_k(loaded.search(queries, 64), cpu.search(queries, 64))


@pytest.mark.gpu
@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_torch_search_on_cuda_keeps_faiss_ties(metric):
    vectors, queries = tied_vectors(5000)
    expected = faiss_flat(vectors, metric)
    search = TorchFlatSearch.from_faiss(expected, "cuda", key_chunk=1024)
    for k in (1, 5, 64, 5000, 5003):
        found, want = search.search(queries, k), expected.search(queries, k)
        np.testing.assert_array_equal(found[1], want[1])
        np.testing.assert_array_equal(found[0][found[1] >= 0], want[0][want[1] >= 0])


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(OBJECTIVES))
def test_every_objective_trains_on_cuda(gpu, name, toy_kb_dir, tiny_bert_dir):
    """The row numbers, targets and negatives an objective builds in numpy follow the scores
    to the GPU."""
    nlp, _, losses = train_toy(toy_kb_dir, OBJECTIVES[name], steps=12, model=tiny_dual_encoder(tiny_bert_dir))
    assert next(get_module(nlp.get_pipe("arbo_linker").model).parameters()).device.type == "cuda"
    assert np.isfinite(losses).all() and min(losses[1:]) < losses[0]


@pytest.mark.gpu
def test_the_reranker_trains_on_cuda(gpu, tiny_bert_dir, toy_kb):
    """The toy overfitting of tests/reranker, on the GPU in "auto" precision (bf16 there)."""
    nlp = make_reranker_nlp(tiny_bert_dir, toy_kb, top_n=6, mode="multi", listwise_weight=1.0)
    reranker = nlp.get_pipe("multi_cross_reranker")
    assert next(get_module(reranker.model).parameters()).device.type == "cuda"
    gold = [make_doc(nlp, text, mentions) for text, mentions in TOY_TEXTS]
    examples = [Example(doc, g) for doc, g in zip(rotating_candidates(nlp, toy_kb, TOY_TEXTS), gold)]
    optimizer = Adam(0.003)
    losses = [nlp.update(examples, sgd=optimizer)["multi_cross_reranker"] for _ in range(20)]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0] / 2
    docs = nlp.pipe(rotating_candidates(nlp, toy_kb, TOY_TEXTS))
    assert [e.kb_id_ for d in docs for e in d.ents] == [e.kb_id_ for d in gold for e in d.ents]


@pytest.mark.gpu
def test_linking_on_the_gpu_gives_the_cpu_links(tmp_path, toy_kb_dir, tiny_bert_dir):
    """The same weights (trained on the CPU) link the same on the GPU: in fp32 with the
    same candidates and scores, and in "auto" (bf16) to the same ids; the KB vectors are
    encoded again on the GPU and searched there."""
    nlp, gold, _ = train_toy(toy_kb_dir, OBJECTIVES["hard_negatives"], steps=40, model=tiny_dual_encoder(tiny_bert_dir),
                             precision="fp32")
    nlp.to_disk(tmp_path / "pipeline")
    on_cpu = spacy.load(tmp_path / "pipeline", config={"components": {"arbo_linker": {"use_gpu_index": False}}})
    expected = list(on_cpu.pipe(unlinked(on_cpu, gold)))
    spacy.require_gpu(0)
    try:
        for precision in ("fp32", "auto"):
            on_gpu = spacy.load(tmp_path / "pipeline", config={"components": {"arbo_linker": {"precision": precision}}})
            linker = on_gpu.get_pipe("arbo_linker")
            linker.refresh_index(progress=False)
            assert next(get_module(linker.model).parameters()).device.type == "cuda"
            assert linker.retriever.dense.on_gpu
            found = list(on_gpu.pipe(unlinked(on_gpu, gold)))
            assert [e.kb_id_ for d in found for e in d.ents] == [e.kb_id_ for d in expected for e in d.ents]
            if precision == "fp32":
                for got, want in zip((e for d in found for e in d.ents), (e for d in expected for e in d.ents)):
                    assert_same_top_k(candidates(got), candidates(want))
    finally:
        spacy.require_cpu()


@pytest.mark.gpu
def test_commands_with_gpu_id_link_on_the_gpu_as_on_the_cpu(tmp_path, toy_kb_dir, tiny_bert_dir):
    """`evaluate --gpu-id 0` (as `weasel run all . --vars.gpu_id 0` runs it) puts the pipeline's
    encoder on the GPU and scores what the CPU scores."""
    from spacy_arbo.cli import main

    nlp, gold, _ = train_toy(toy_kb_dir, OBJECTIVES["hard_negatives"], steps=40, model=tiny_dual_encoder(tiny_bert_dir),
                             precision="fp32", use_gpu_index=False)
    nlp.to_disk(tmp_path / "pipeline")
    write_docbin(gold, tmp_path / "gold.spacy")
    metrics, allocated = {}, {}
    for gpu_id in (-1, 0):
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        try:
            assert main(["evaluate", str(tmp_path / "pipeline"), str(tmp_path / "gold.spacy"),
                         "--output", str(tmp_path / f"{gpu_id}.json"), "--gpu-id", str(gpu_id)]) == 0
        finally:
            spacy.require_cpu()
        allocated[gpu_id] = torch.cuda.max_memory_allocated() - before
        metrics[gpu_id] = srsly.read_json(tmp_path / f"{gpu_id}.json")
    assert allocated[-1] == 0 and allocated[0] > 0
    for key in ("accuracy", "recall@1", "n_mentions"):
        assert metrics[0][key] == metrics[-1][key]
