import shutil
import sys

import numpy as np
import pytest
import spacy

from spacy_arbo.cli import main
from spacy_arbo.retrieval.faiss_index import FaissIndex
from spacy_arbo.retrieval.retriever import PREBUILT_INDEX_DIR
from spacy_arbo.retrieval.sharded_encoding import encode_entities_on_ray, load_linker, shard_ranges
from spacy_arbo.util import ArboError

from ..util import make_nlp


@pytest.fixture(scope="module")
def ray_runtime():
    """One local runtime for the module: starting Ray costs seconds."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False)
    yield ray
    ray.shutdown()


def test_index_kb_on_two_workers_writes_the_index_of_one_process(tmp_path, toy_kb_dir):
    ray = pytest.importorskip("ray")
    make_nlp(toy_kb_dir).to_disk(tmp_path / "pipeline")
    shutil.copytree(toy_kb_dir, tmp_path / "kb_ray")
    ray_was_running = ray.is_initialized()
    assert main(["index-kb", str(tmp_path / "pipeline"), str(toy_kb_dir)]) == 0
    assert main(["index-kb", str(tmp_path / "pipeline"), str(tmp_path / "kb_ray"), "--workers", "2"]) == 0
    # A runtime it started is shut down; one running before is left running.
    assert ray.is_initialized() == ray_was_running
    one, two = (FaissIndex.from_disk(path / PREBUILT_INDEX_DIR) for path in (toy_kb_dir, tmp_path / "kb_ray"))
    assert one.fingerprint == two.fingerprint
    queries = np.random.default_rng(0).standard_normal((8, one.dim)).astype(np.float32)
    (one_scores, one_rows), (two_scores, two_rows) = one.search(queries, 6), two.search(queries, 6)
    assert (one_rows == two_rows).all()
    assert np.allclose(one_scores, two_scores, atol=1e-5)


def test_more_shards_than_workers_give_the_vectors_and_candidates_of_one_process(
        ray_runtime, tmp_path, toy_kb_dir, toy_docs, tiny_bert_dir):
    model = {"@architectures": "spacy_arbo.DualEncoder.v1", "mention_tower": {
        "@architectures": "spacy_arbo.TransformerTower.v1", "name": str(tiny_bert_dir), "max_length": 32}}
    make_nlp(toy_kb_dir, model=model).to_disk(tmp_path / "pipeline")
    linker = spacy.load(tmp_path / "pipeline").get_pipe("arbo_linker")
    linker.configure(index_aliases=True, batch_size=2)  # the workers take the settings of the linker
    inputs = linker.retriever.entity_texts()[0]
    # shard_size 3 is rounded up to 2 batches of 2: 17 texts (names, aliases) in 5 shards for 2 workers.
    assert len(shard_ranges(len(inputs), 4)) == 5
    spans = [ent for doc in toy_docs for ent in doc.ents]
    mentions = linker.mention_inputs(spans)
    mention_vectors = linker.encode_mentions(mentions)
    linker.refresh_index(progress=False)
    single_vectors = linker.encode_entities(inputs)
    single_candidates = linker.retriever.candidates(mention_vectors, [s.text for s in spans])

    vectors = encode_entities_on_ray(linker, tmp_path / "pipeline", workers=2, shard_size=3, progress=False)
    assert vectors.shape == single_vectors.shape
    # Row by row: the same order. Shards are whole batches of the single process's, so even
    # in bf16 (precision "auto" on a CPU with bf16 units), whose rounding depends on the
    # padding of a batch, the vectors are equal.
    assert np.allclose(vectors, single_vectors, atol=1e-5)
    linker.refresh_index(vectors=vectors)
    candidates = linker.retriever.candidates(mention_vectors, [s.text for s in spans])
    assert [[kb_id for kb_id, _ in c] for c in candidates] == [[kb_id for kb_id, _ in c] for c in single_candidates]
    assert ray_runtime.is_initialized()  # not started here, so not shut down


def test_workers_that_load_other_weights_are_an_error(ray_runtime, tmp_path, toy_kb_dir):
    make_nlp(toy_kb_dir).to_disk(tmp_path / "pipeline")
    linker = make_nlp(toy_kb_dir, seed=1).get_pipe("arbo_linker")
    with pytest.raises(ArboError, match="Ray workers loaded"):
        encode_entities_on_ray(linker, tmp_path / "pipeline", workers=1, progress=False)
    with pytest.raises(ArboError, match="Got 2 entity vectors for 6 entity texts"):
        linker.refresh_index(vectors=np.zeros((2, 16), dtype=np.float32))


def test_without_ray_the_error_says_what_to_install(monkeypatch, tmp_path, toy_kb_dir):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    linker = make_nlp(toy_kb_dir).get_pipe("arbo_linker")
    with pytest.raises(ArboError, match=r"pip install 'spacy-arbo\[ray\]'"):
        encode_entities_on_ray(linker, tmp_path, workers=2)
    with pytest.raises(ArboError, match="workers >= 1"):
        encode_entities_on_ray(linker, tmp_path, workers=0)


def test_load_linker_takes_only_an_arbo_linker(tmp_path, toy_kb_dir):
    nlp = make_nlp(toy_kb_dir)
    nlp.add_pipe("sentencizer")
    nlp.to_disk(tmp_path / "pipeline")
    assert load_linker(tmp_path / "pipeline", "arbo_linker", None).kb.ids == nlp.get_pipe("arbo_linker").kb.ids
    with pytest.raises(ArboError, match="'sentencizer' in .* is not an arbo_linker"):
        load_linker(tmp_path / "pipeline", "sentencizer", None)
