"""The linker learns: every objective overfits a toy KB, and `spacy train` runs end to end."""
import subprocess
import sys

import pytest
import spacy
import srsly
from spacy.training import Example
from thinc.api import Adam, fix_random_seed

from ..conftest import TOY_TEXTS, make_doc
from ..util import DENSE_LINKER, hashed_model, links, unlinked

OBJECTIVES = {
    "in_batch": {"@losses": "spacy_arbo.in_batch.v1"},
    "hard_negatives": {"@losses": "spacy_arbo.hard_negatives.v1", "k": 4},
    "arborescence_full": {"@losses": "spacy_arbo.arborescence.v1", "variant": "full", "k": 4},
    "arborescence_1nn": {"@losses": "spacy_arbo.arborescence.v1", "variant": "1nn", "k": 4},
    "arborescence_1rand": {"@losses": "spacy_arbo.arborescence.v1", "variant": "1rand", "k": 4},
    "arborescence_entity_weight": {"@losses": "spacy_arbo.arborescence.v1", "k": 4, "entity_weight": 1.0},
    "proxy_random": {"@losses": "spacy_arbo.proxy.v1", "negatives": "random", "k": 4},
    "proxy_mixed": {"@losses": "spacy_arbo.proxy.v1", "negatives": "mixed", "k": 4},
    "proxy_shared": {"@losses": "spacy_arbo.proxy.v1", "negatives": "mixed", "k": 4, "delta": 0.4,
                     "share_negatives": True},
    "proxy_mined": {"@losses": "spacy_arbo.proxy.v1", "negatives": "mined", "k": 4, "max_negatives": 4,
                    "delta": 0.4, "share_negatives": True},
    "fgsm_proxy": {"@losses": "spacy_arbo.fgsm.v1", "epsilon": 0.01,
                   "base": {"@losses": "spacy_arbo.proxy.v1", "negatives": "random", "k": 4}},
    "fgsm_in_batch": {"@losses": "spacy_arbo.fgsm.v1", "base": {"@losses": "spacy_arbo.in_batch.v1"}},
    "hard_negatives_cached": {"@losses": "spacy_arbo.hard_negatives.v1", "k": 4, "entity_cache": "negatives"},
    "hard_negatives_cached_all": {"@losses": "spacy_arbo.hard_negatives.v1", "k": 4, "entity_cache": "all"},
    "proxy_mixed_cached": {"@losses": "spacy_arbo.proxy.v1", "negatives": "mixed", "k": 4, "entity_cache": "negatives"},
    "kb_softmax": {"@losses": "spacy_arbo.kb_softmax.v1"},
}


def train_toy(kb_dir, objective, steps=60, optimizer=None, **cfg):
    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("arbo_linker", config={"model": hashed_model(), "objective": objective, "top_k": 6,
                                        "context_chars": 30, "refresh_every": 10, **DENSE_LINKER, **cfg})
    nlp.config["initialize"]["components"]["arbo_linker"] = {
        "kb_loader": {"@misc": "spacy_arbo.KBFromDir.v1", "path": str(kb_dir)}
    }
    gold = [make_doc(nlp, text, mentions) for text, mentions in TOY_TEXTS]
    examples = [Example(nlp.make_doc(d.text), d) for d in gold]
    nlp.initialize(lambda: examples)
    optimizer = optimizer or Adam(0.01)
    losses = []
    for _ in range(steps):
        step = {}
        nlp.update(examples, sgd=optimizer, losses=step)
        losses.append(step["arbo_linker"])
    return nlp, gold, losses


@pytest.mark.parametrize("name", list(OBJECTIVES))
def test_every_objective_overfits_the_toy_kb(toy_kb_dir, name):
    nlp, gold, losses = train_toy(toy_kb_dir, OBJECTIVES[name])
    assert losses[-1] < losses[0]
    predicted = [e.kb_id_ for d in nlp.pipe(unlinked(nlp, gold)) for e in d.ents]
    assert predicted == [e.kb_id_ for d in gold for e in d.ents]  # recall@1 = 1.0 on training mentions


def test_fgsm_needs_an_entity_edge_objective(toy_kb_dir):
    from spacy_arbo.util import ArboError

    with pytest.raises(ArboError, match="fgsm wraps an objective over"):
        train_toy(toy_kb_dir, {"@losses": "spacy_arbo.fgsm.v1", "base": OBJECTIVES["arborescence_full"]}, steps=1)


def test_gold_ids_train_as_the_kb_resolves_them_and_unknown_ones_are_named(toy_kb_dir, caplog):
    """"D005334" trains towards "MESH:D005334" as it reaches it in the KB; ids the KB lacks
    train nothing, which is an error when no id is known and a warning when some are not."""
    from spacy_arbo.util import ArboError

    def initialized(ids):
        nlp = spacy.blank("en")
        nlp.add_pipe("arbo_linker", config={"model": hashed_model(), "objective": OBJECTIVES["in_batch"]})
        nlp.config["initialize"]["components"]["arbo_linker"] = {
            "kb_loader": {"@misc": "spacy_arbo.KBFromDir.v1", "path": str(toy_kb_dir)}}
        gold = make_doc(nlp, "Wilson disease and fever.", [("Wilson disease", ids[0]), ("fever", ids[1])])
        nlp.initialize(lambda: [Example(nlp.make_doc(gold.text), gold)])
        linker = nlp.get_pipe("arbo_linker")
        return [linker.kb.ids[row] for row in linker.training.corpus.gold_rows]

    assert initialized(["D006527", "D005334"]) == ["MESH:D006527", "MESH:D005334"]
    assert initialized(["MESH:D006527", "MESH:X9"]) == ["MESH:D006527"]
    assert "1 of 2 gold mentions of the training data have ids the KB lacks (e.g. 'MESH:X9')" in caplog.text
    with pytest.raises(ArboError, match=r"None of the 2 gold mentions .* \(e.g. 'X1', 'X2'\): was the corpus converted"):
        initialized(["X1", "X2"])


@pytest.mark.parametrize("name", ["hard_negatives", "proxy_mixed"])
def test_cached_entities_give_the_same_loss_while_the_cache_is_current(toy_kb_dir, name):
    """Right after a refresh, negatives from the cache score as if they were encoded."""
    import numpy as np
    import torch
    from spacy.util import registry

    from spacy_arbo.torch_model import get_module
    from spacy_arbo.training.mentions import TrainingBatch
    from spacy_arbo.training.objectives import TrainingState

    nlp, gold, _ = train_toy(toy_kb_dir, OBJECTIVES["in_batch"], steps=2)
    linker = nlp.get_pipe("arbo_linker")
    linker.refresh_index(progress=False)
    module = get_module(linker.model).eval()
    spans = [e for d in gold for e in d.ents]
    batch = TrainingBatch(linker.mention_inputs(spans), np.array([linker.kb.row(e.kb_id_) for e in spans]),
                          np.full(len(spans), -1))
    losses = []
    for cache in ("none", "negatives", "all"):
        objective = registry.resolve({"o": {**OBJECTIVES[name], "entity_cache": cache}})["o"]
        state = TrainingState(module, linker.retriever, linker.corpus, np.random.default_rng(0))
        losses.append(objective(state, batch))
    torch.testing.assert_close(losses[0], losses[1], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(losses[0], losses[2], rtol=1e-4, atol=1e-5)


def test_arborescence_entity_weight_adds_a_weighted_entity_softmax(toy_kb_dir):
    import numpy as np
    from spacy.util import registry

    from spacy_arbo.torch_model import get_module
    from spacy_arbo.training.mentions import TrainingBatch
    from spacy_arbo.training.objectives import TrainingState
    from spacy_arbo.util import ArboError

    nlp, gold, _ = train_toy(toy_kb_dir, OBJECTIVES["arborescence_full"], steps=2)
    linker = nlp.get_pipe("arbo_linker")
    linker.refresh_index(progress=False)
    linker.training.encode_mentions(linker.encoder)
    module = get_module(linker.model).eval()
    spans = [e for d in gold for e in d.ents]
    batch = TrainingBatch(linker.mention_inputs(spans), np.array([linker.kb.row(e.kb_id_) for e in spans]),
                          np.arange(len(spans)))
    loss = {}
    for weight in (0.0, 1.0, 2.0):
        objective = registry.resolve({"o": {**OBJECTIVES["arborescence_full"], "entity_weight": weight}})["o"]
        loss[weight] = objective(TrainingState(module, linker.retriever, linker.corpus, np.random.default_rng(0)),
                                 batch).item()
    term = loss[1.0] - loss[0.0]
    assert term > 1e-4  # a cross-entropy over several entities: positive until it converges
    assert loss[2.0] - loss[0.0] == pytest.approx(2 * term, rel=1e-4)
    with pytest.raises(ArboError, match=r"^arborescence: entity_weight takes a number >= 0; got -1.0\.$"):
        registry.resolve({"o": {**OBJECTIVES["arborescence_full"], "entity_weight": -1.0}})


def test_shared_proxy_negatives_are_every_other_encoded_entity(toy_kb_dir):
    """PEL eq. 3 with, for each mention, every encoded entity but its gold one as negatives."""
    import numpy as np
    import torch
    from spacy.util import registry

    from spacy_arbo.torch_model import get_module
    from spacy_arbo.training.mentions import TrainingBatch
    from spacy_arbo.training.objectives import TrainingState

    nlp, gold, _ = train_toy(toy_kb_dir, OBJECTIVES["in_batch"], steps=2)
    linker = nlp.get_pipe("arbo_linker")
    linker.refresh_index(progress=False)
    module = get_module(linker.model).eval()
    spans = [e for d in gold for e in d.ents][:3]  # 3 of the toy KB's 6 entities: room for negatives
    batch = TrainingBatch(linker.mention_inputs(spans), np.array([linker.kb.row(e.kb_id_) for e in spans]),
                          np.full(len(spans), -1))
    objective = registry.resolve({"o": OBJECTIVES["proxy_shared"]})["o"]
    state = TrainingState(module, linker.retriever, linker.corpus, np.random.default_rng(0))
    with torch.no_grad():
        mentions, rows, gold_columns, negatives = objective.edges(state, batch)
        entities = state.embed_entities(rows)
        loss = objective.edge_loss(state, mentions, entities, gold_columns, negatives).item()
        similarity = (mentions @ entities.T).numpy().astype(np.float64)
    alpha, delta = objective.alpha, objective.delta
    expected = np.mean([
        np.log1p(np.exp(-alpha * (row[g] - delta))) + np.log1p(np.exp(alpha * (np.delete(row, g) + delta)).sum())
        for row, g in zip(similarity, gold_columns)])
    assert len(rows) > len(set(batch.gold_rows))  # sampled negatives were encoded besides the gold entities
    assert loss == pytest.approx(expected, rel=1e-4)


def test_mined_proxy_negatives_are_the_entities_ranked_above_gold_accumulated_per_mention(toy_kb_dir):
    """`negatives = "mined"`: DEER's negatives, as hard_negatives.v1 mines them, remembered
    per training mention across mining rounds."""
    import numpy as np
    from spacy.util import registry

    from spacy_arbo.torch_model import get_module
    from spacy_arbo.training.mentions import TrainingBatch
    from spacy_arbo.training.objectives import TrainingState

    nlp, gold, _ = train_toy(toy_kb_dir, OBJECTIVES["in_batch"], steps=2)
    linker = nlp.get_pipe("arbo_linker")
    linker.refresh_index(progress=False)
    state = TrainingState(get_module(linker.model).eval(), linker.retriever, linker.corpus, np.random.default_rng(0))
    span = [e for d in gold for e in d.ents][0]
    gold_row = linker.kb.row(span.kb_id_)
    batch = TrainingBatch(linker.mention_inputs([span]), np.array([gold_row]), np.array([7]))
    vectors = linker.retriever.entity_vectors
    wrong = [r for r in range(len(vectors)) if r != gold_row][:2]
    proxy = registry.resolve({"o": OBJECTIVES["proxy_mined"]})["o"]
    hard = registry.resolve({"o": {"@losses": "spacy_arbo.hard_negatives.v1", "k": 4, "max_negatives": 4}})["o"]
    assert proxy.uses_index
    remembered = set()
    for row in (wrong[0], wrong[1], gold_row):
        query = vectors[[row]]  # the nearest entity of an entity's own vector is that entity
        ranked = list(state.nearest_entities(query, 4)[0])
        above = ranked[: ranked.index(gold_row)] if gold_row in ranked else ranked
        assert (row in above) is (row != gold_row)
        remembered |= set(above)
        mined = proxy.negatives(state, batch, query)
        assert mined.tolist() == hard.negatives(state, batch, query).tolist()
        assert sorted(r for r in mined[0] if r >= 0) == sorted(remembered)
    assert set(wrong) <= remembered and gold_row not in remembered
    other = TrainingBatch(batch.mentions, batch.gold_rows, np.array([8]))  # another training mention: no memory
    assert [r for r in proxy.negatives(state, other, vectors[[gold_row]])[0] if r >= 0] == []


def test_fgsm_refuses_cached_entities(toy_kb_dir):
    from spacy_arbo.util import ArboError

    base = {**OBJECTIVES["proxy_random"], "entity_cache": "negatives"}
    with pytest.raises(ArboError, match="set entity_cache"):
        train_toy(toy_kb_dir, {"@losses": "spacy_arbo.fgsm.v1", "base": base}, steps=1)


def test_fgsm_attack_increases_the_base_loss(toy_kb_dir):
    """The perturbed entities score worse: the adversarial term exceeds the clean loss."""
    import numpy as np
    import torch

    from spacy_arbo.torch_model import get_module
    from spacy_arbo.training.mentions import TrainingBatch
    from spacy_arbo.training.objectives import Adversarial, InBatch, TrainingState

    nlp, gold, _ = train_toy(toy_kb_dir, OBJECTIVES["in_batch"], steps=1)
    linker = nlp.get_pipe("arbo_linker")
    module = get_module(linker.model).eval()
    spans = [e for d in gold for e in d.ents]
    batch = TrainingBatch(linker.mention_inputs(spans), np.array([linker.kb.row(e.kb_id_) for e in spans]),
                          np.full(len(spans), -1))
    state = TrainingState(module, linker.retriever, linker.corpus, np.random.default_rng(0))
    clean = InBatch()(state, batch)
    combined = Adversarial(InBatch(), epsilon=0.5, lam=1.0)(state, batch)
    assert (combined - clean).item() > clean.item()  # adversarial loss > clean loss
    none = Adversarial(InBatch(), epsilon=0.0, lam=1.0)(state, batch)
    torch.testing.assert_close(none, 2 * clean)


def test_kb_aliases_as_extra_training_pairs(toy_kb_dir):
    nlp, gold, _ = train_toy(toy_kb_dir, OBJECTIVES["in_batch"], alias_pairs_per_batch=6)
    doc = nlp(make_doc(nlp, "pyrexia", [("pyrexia", "")]))
    assert doc.ents[0].kb_id_ == "MESH:D005334"


def test_a_stale_index_is_not_saved_and_is_refreshed_before_use(tmp_path, toy_kb_dir):
    nlp, gold, _ = train_toy(toy_kb_dir, OBJECTIVES["in_batch"], steps=3)
    linker = nlp.get_pipe("arbo_linker")
    assert not linker.index_is_current()  # updated since the last refresh
    nlp.to_disk(tmp_path / "stale")
    # Saving never encodes the KB: the index that lags the weights is left out...
    assert not linker.index_is_current() and not (tmp_path / "stale" / "arbo_linker" / "indexes" / "index").exists()
    loaded = spacy.load(tmp_path / "stale")
    # ...and both pipelines encode it before their first prediction.
    assert links(loaded.pipe(unlinked(loaded, gold))) == links(nlp.pipe(unlinked(nlp, gold)))
    assert linker.index_is_current() and loaded.get_pipe("arbo_linker").index_is_current()
    nlp.to_disk(tmp_path / "fresh")
    assert (tmp_path / "fresh" / "arbo_linker" / "indexes" / "index").is_dir()


@pytest.mark.parametrize("frozen_entities", [False, True])
def test_parameter_averages_link_and_save_with_an_index_of_their_own(tmp_path, toy_kb_dir, tiny_bert_dir,
                                                                     frozen_entities, monkeypatch):
    """spaCy scores and saves under `nlp.use_params(optimizer.averages)`: the averaged weights
    must link with an index they encoded (a frozen entity tower's index serves both) and be
    what is saved, and the trained weights must come back with their own links after."""
    from spacy_arbo.retrieval.retriever import EntityRetriever
    from spacy_arbo.torch_model import get_module

    optimizer = Adam(0.01, use_averages=True)
    model = {"model": frozen_entity_tower_model(tiny_bert_dir)} if frozen_entities else {}
    objective = OBJECTIVES["kb_softmax" if frozen_entities else "in_batch"]
    nlp, gold, _ = train_toy(toy_kb_dir, objective, steps=20, optimizer=optimizer, **model)
    refreshes = []
    original = EntityRetriever.refresh
    monkeypatch.setattr(EntityRetriever, "refresh", lambda self, *a, **k: refreshes.append(1) or original(self, *a, **k))
    encoder = get_module(nlp.get_pipe("arbo_linker").model)
    trained = encoder.fingerprint()
    trained_links = links(nlp.pipe(unlinked(nlp, gold)))
    with nlp.use_params(optimizer.averages):
        averaged = encoder.fingerprint()
        averaged_links = links(nlp.pipe(unlinked(nlp, gold)))
        nlp.to_disk(tmp_path / "averaged")
    assert averaged != trained and averaged_links != trained_links
    assert encoder.fingerprint() == trained and links(nlp.pipe(unlinked(nlp, gold))) == trained_links
    assert len(refreshes) == (0 if frozen_entities else 3)  # trained, averaged, trained again
    loaded = spacy.load(tmp_path / "averaged")
    assert get_module(loaded.get_pipe("arbo_linker").model).fingerprint() == averaged
    assert links(loaded.pipe(unlinked(loaded, gold))) == averaged_links
    assert (tmp_path / "averaged" / "arbo_linker" / "indexes" / "index").is_dir()


TRAIN_CONFIG = """
[paths]
train = null
dev = null
kb = null
clock = null

[system]
seed = 0
gpu_allocator = null

[nlp]
lang = "en"
pipeline = ["arbo_linker"]
batch_size = 8

[components]

[components.arbo_linker]
factory = "arbo_linker"
top_k = 6
context_chars = 30
refresh_every = 10

[components.arbo_linker.model]
@architectures = "spacy_arbo.DualEncoder.v1"

[components.arbo_linker.model.mention_tower]
@architectures = "spacy_arbo.HashedNgramTower.v1"
n_buckets = 4096
embed_dim = 16
out_dim = 16

[components.arbo_linker.objective]
@losses = "spacy_arbo.in_batch.v1"

[corpora]

[corpora.train]
@readers = "spacy.Corpus.v1"
path = ${paths.train}

[corpora.dev]
@readers = "spacy.Corpus.v1"
path = ${paths.dev}

[training]
seed = ${system.seed}
gpu_allocator = ${system.gpu_allocator}
max_steps = 30
eval_frequency = 10
dev_corpus = "corpora.dev"
train_corpus = "corpora.train"

[training.logger]
@loggers = "spacy.ChainLogger.v1"

[training.logger.logger1]
@loggers = "spacy.ConsoleLogger.v1"

[training.logger.logger2]
@loggers = "spacy_arbo.TrainingClock.v1"
path = ${paths.clock}

[training.optimizer]
@optimizers = "Adam.v1"
learn_rate = 0.01

[training.batcher]
@batchers = "spacy.batch_by_sequence.v1"
size = 4

[training.score_weights]
arbo_recall@1 = 1.0

[initialize]

[initialize.components]

[initialize.components.arbo_linker]

[initialize.components.arbo_linker.kb_loader]
@misc = "spacy_arbo.KBFromDir.v1"
path = ${paths.kb}
"""


def test_spacy_train_end_to_end(tmp_path, toy_kb_dir):
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    DocBin(docs=[make_doc(nlp, t, m) for t, m in TOY_TEXTS]).to_disk(tmp_path / "train.spacy")
    (tmp_path / "train.cfg").write_text(TRAIN_CONFIG)
    result = subprocess.run(
        [sys.executable, "-m", "spacy", "train", str(tmp_path / "train.cfg"), "--output", str(tmp_path / "out"),
         "--paths.train", str(tmp_path / "train.spacy"), "--paths.dev", str(tmp_path / "train.spacy"),
         "--paths.kb", str(toy_kb_dir), "--paths.clock", str(tmp_path / "out" / "clock.json")],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # spaCy's steps 0..30 are 31 updates, evaluated at steps 0, 10, 20 and 30.
    clock = srsly.read_json(tmp_path / "out" / "clock.json")
    assert (clock["updates"], clock["evaluations"]) == (31, 4) and clock["seconds"] > 0
    best = spacy.load(tmp_path / "out" / "model-best")
    gold = [make_doc(best, t, m) for t, m in TOY_TEXTS]
    predicted = [e.kb_id_ for d in best.pipe(unlinked(best, gold)) for e in d.ents]
    assert predicted == [e.kb_id_ for d in gold for e in d.ents]


def test_fgsm_without_base_wraps_the_proxy_loss():
    from spacy.util import registry

    from spacy_arbo.training.objectives import Adversarial, Proxy

    objective = registry.resolve({"o": {"@losses": "spacy_arbo.fgsm.v1", "epsilon": 0.02}})["o"]
    assert isinstance(objective, Adversarial) and isinstance(objective.base, Proxy)
    assert objective.epsilon == 0.02


def test_bf16_training_learns_as_fp32_round_trips_and_links_as_fp32(tmp_path, toy_kb_dir, tiny_bert_dir):
    model = {"@architectures": "spacy_arbo.DualEncoder.v1", "mention_tower": {
        "@architectures": "spacy_arbo.TransformerTower.v1", "name": str(tiny_bert_dir), "max_length": 32}}
    runs = {p: train_toy(toy_kb_dir, OBJECTIVES["hard_negatives"], steps=40, model=model, precision=p)
            for p in ("fp32", "bf16")}
    nlp, gold, losses = runs["bf16"]
    assert losses[-1] < losses[0] / 10
    assert losses[-1] == pytest.approx(runs["fp32"][2][-1], rel=0.05)
    predicted = list(nlp.pipe(unlinked(nlp, gold)))
    ids = [e.kb_id_ for d in predicted for e in d.ents]
    fp32_nlp = runs["fp32"][0]
    assert ids == [e.kb_id_ for d in fp32_nlp.pipe(unlinked(fp32_nlp, gold)) for e in d.ents]
    # At 40 steps both precisions still link "coughing" (in "Fever and coughing") to Fever.
    assert sum(a == e.kb_id_ for a, e in zip(ids, [e for d in gold for e in d.ents])) == 7
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("arbo_linker").settings.precision == "bf16"
    assert links(loaded.pipe(unlinked(loaded, gold))) == links(predicted)
    full = spacy.load(tmp_path / "pipeline", config={"components": {"arbo_linker": {"precision": "fp32"}}})
    assert [e.kb_id_ for d in full.pipe(unlinked(full, gold)) for e in d.ents] == ids


def test_bf16_training_is_deterministic_with_a_seed(toy_kb_dir, tiny_bert_dir):
    model = {"@architectures": "spacy_arbo.DualEncoder.v1", "mention_tower": {
        "@architectures": "spacy_arbo.TransformerTower.v1", "name": str(tiny_bert_dir), "max_length": 32}}
    runs = [train_toy(toy_kb_dir, OBJECTIVES["hard_negatives"], steps=12, model=model, precision="bf16")
            for _ in range(2)]
    assert runs[0][2] == runs[1][2]
    vectors = [run[0].get_pipe("arbo_linker").retriever.entity_vectors for run in runs]
    assert (vectors[0] == vectors[1]).all()


def test_int8_training_links_as_fp32_round_trips_and_is_deterministic(tmp_path, toy_kb_dir, tiny_bert_dir):
    """int8 precision: refreshes and linking on ONNX Runtime, gradient passes as `auto`."""
    model = {"@architectures": "spacy_arbo.DualEncoder.v1", "mention_tower": {
        "@architectures": "spacy_arbo.TransformerTower.v1", "name": str(tiny_bert_dir), "max_length": 32}}
    runs = [train_toy(toy_kb_dir, OBJECTIVES["hard_negatives"], steps=30, model=model, precision=p)
            for p in ("int8", "int8", "auto")]
    nlp, gold, losses = runs[0]
    assert losses == runs[1][2] and losses[-1] < losses[0] / 5
    # Gradient passes are those of `auto`; only the refreshes' hard negatives may differ.
    assert losses[0] == pytest.approx(runs[2][2][0], rel=1e-4)
    vectors = [run[0].get_pipe("arbo_linker").retriever.entity_vectors for run in runs[:2]]
    assert (vectors[0] == vectors[1]).all()
    predicted = links(nlp.pipe(unlinked(nlp, gold)))
    ids = [kb_id for doc in predicted for _, kb_id, _ in doc]
    # As in fp32 and bf16 at this budget, all but "coughing" (in "Fever and coughing") are right.
    assert sum(a == e.kb_id_ for a, e in zip(ids, [e for d in gold for e in d.ents])) == len(ids) - 1
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("arbo_linker").settings.precision == "int8"
    assert links(loaded.pipe(unlinked(loaded, gold))) == predicted
    full = spacy.load(tmp_path / "pipeline", config={"components": {"arbo_linker": {"precision": "fp32"}}})
    assert [e.kb_id_ for d in full.pipe(unlinked(full, gold)) for e in d.ents] == ids


def test_unknown_precision_is_a_config_error(toy_kb_dir):
    from spacy_arbo.util import ArboError

    with pytest.raises(ArboError, match="precision"):
        spacy.blank("en").add_pipe("arbo_linker", config={"model": hashed_model(), "precision": "fp16"})


@pytest.mark.parametrize("objective", ["hard_negatives", "fgsm_proxy"])
def test_frozen_layers_train_only_the_layers_above(tmp_path, toy_kb_dir, tiny_bert_dir, objective):
    import torch

    from spacy_arbo.torch_model import get_module

    def weights(nlp):
        encoder = get_module(nlp.get_pipe("arbo_linker").model).mention_tower.encoder
        return {name: p.detach().clone() for name, p in encoder.named_parameters()}

    model = {"@architectures": "spacy_arbo.DualEncoder.v1", "mention_tower": {
        "@architectures": "spacy_arbo.TransformerTower.v1", "name": str(tiny_bert_dir), "max_length": 32,
        "frozen_layers": 1}}
    start, _, _ = train_toy(toy_kb_dir, OBJECTIVES[objective], steps=0, model=model)
    nlp, gold, losses = train_toy(toy_kb_dir, OBJECTIVES[objective], steps=15, model=model)
    before, after = weights(start), weights(nlp)
    changed = {name for name in before if not torch.equal(before[name], after[name])}
    frozen = {name for name in before if name.startswith(("embeddings.", "encoder.layer.0."))}
    assert frozen and not frozen & changed
    assert {name for name in before if name.startswith("encoder.layer.1.")} <= changed
    assert losses[-1] < losses[0]
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    tower = get_module(loaded.get_pipe("arbo_linker").model).mention_tower
    assert tower.frozen_layers == 1 and not tower.encoder.embeddings.word_embeddings.weight.requires_grad
    assert links(loaded.pipe(unlinked(loaded, gold))) == links(nlp.pipe(unlinked(nlp, gold)))


def test_frozen_layers_beyond_the_encoder_are_an_error(toy_kb_dir, tiny_bert_dir):
    from spacy_arbo.util import ArboError

    model = {"@architectures": "spacy_arbo.DualEncoder.v1", "mention_tower": {
        "@architectures": "spacy_arbo.TransformerTower.v1", "name": str(tiny_bert_dir), "frozen_layers": 3}}
    with pytest.raises(ArboError, match=r"frozen_layers must be in \[0, 2\]"):
        train_toy(toy_kb_dir, OBJECTIVES["in_batch"], steps=0, model=model)


def frozen_entity_tower_model(tiny_bert_dir):
    """A trainable tiny-BERT mention tower beside a separate one with both layers frozen."""
    tower = {"@architectures": "spacy_arbo.TransformerTower.v1", "name": str(tiny_bert_dir), "max_length": 32}
    return {"@architectures": "spacy_arbo.DualEncoder.v1", "mention_tower": tower,
            "entity_tower": {**tower, "use_markers": False, "frozen_layers": 2}}


def test_a_frozen_entity_tower_keeps_its_index_through_training(tmp_path, toy_kb_dir, tiny_bert_dir, monkeypatch):
    """Only the mention side learns, so the index of initialization stays current: no
    refresh re-encodes the KB, the index is saved, and the loaded pipeline links alike."""
    from spacy_arbo.retrieval.retriever import EntityRetriever
    from spacy_arbo.torch_model import get_module

    model = frozen_entity_tower_model(tiny_bert_dir)
    start, _, _ = train_toy(toy_kb_dir, OBJECTIVES["kb_softmax"], steps=0, model=model, refresh_every=5)
    encoder = get_module(start.get_pipe("arbo_linker").model)
    before = (encoder.fingerprint(), encoder.fingerprint(entities_only=True))
    refreshes = []
    original = EntityRetriever.refresh
    monkeypatch.setattr(EntityRetriever, "refresh", lambda self, *a, **k: refreshes.append(1) or original(self, *a, **k))
    nlp, gold, losses = train_toy(toy_kb_dir, OBJECTIVES["kb_softmax"], steps=20, model=model, refresh_every=5)
    assert len(refreshes) == 1  # the index of initialization, never re-encoded
    encoder = get_module(nlp.get_pipe("arbo_linker").model)
    assert encoder.fingerprint() != before[0] and encoder.fingerprint(entities_only=True) == before[1]
    assert losses[-1] < losses[0] / 2
    nlp.to_disk(tmp_path / "pipeline")
    assert (tmp_path / "pipeline" / "arbo_linker" / "indexes" / "index").is_dir()
    loaded = spacy.load(tmp_path / "pipeline")
    assert links(loaded.pipe(unlinked(loaded, gold))) == links(nlp.pipe(unlinked(nlp, gold)))
    assert len(refreshes) == 1  # the loaded index matched the loaded entity tower


def test_with_shared_towers_the_entity_fingerprint_covers_every_weight(toy_kb_dir):
    from spacy_arbo.torch_model import get_module

    nlp, _, _ = train_toy(toy_kb_dir, OBJECTIVES["in_batch"], steps=0)
    encoder = get_module(nlp.get_pipe("arbo_linker").model)
    assert encoder.shared and encoder.fingerprint(entities_only=True) == encoder.fingerprint()


@pytest.mark.parametrize("index_aliases", [False, True])
def test_kb_softmax_is_a_softmax_over_every_entity_vector(toy_kb_dir, tiny_bert_dir, index_aliases):
    """Over names, a cross-entropy; with alias vectors, the gold entity's texts share its probability."""
    import numpy as np
    import torch

    from spacy_arbo.torch_model import get_module
    from spacy_arbo.training.mentions import TrainingBatch
    from spacy_arbo.training.objectives import KBSoftmax, TrainingState

    # fp32: the loss is compared with the formula to 1e-4, and where bf16 is native ("auto") the
    # pass with gradient (autocast) and the one without (a bf16 copy) differ by about 5e-4.
    nlp, gold, _ = train_toy(toy_kb_dir, OBJECTIVES["kb_softmax"], steps=0, model=frozen_entity_tower_model(tiny_bert_dir),
                             index_aliases=index_aliases, precision="fp32")
    linker = nlp.get_pipe("arbo_linker")
    module = get_module(linker.model).eval()
    spans = [e for d in gold for e in d.ents]
    rows = np.array([linker.kb.row(e.kb_id_) for e in spans])
    batch = TrainingBatch(linker.mention_inputs(spans), rows, np.full(len(spans), -1))
    loss = KBSoftmax()(TrainingState(module, linker.retriever, linker.corpus, np.random.default_rng(0)), batch)
    texts, owners = linker.retriever.entity_texts()
    with torch.no_grad():
        mentions = module.embed_mentions(batch.mentions)
        log_p = torch.log_softmax(module.scale * mentions @ module.embed_entities(texts).T, dim=1)
        expected = -torch.stack([log_p[i, owners == row].logsumexp(0) for i, row in enumerate(rows)]).mean()
    n_aliases = sum(len(linker.kb.entity_at(row).aliases) for row in range(len(linker.kb)))
    assert len(texts) == len(linker.retriever.text_vectors) == 6 + (n_aliases if index_aliases else 0)
    assert (n_aliases > 0 and len(set(rows)) > 1) or not index_aliases
    if not index_aliases:
        expected_ce = torch.nn.functional.cross_entropy(log_p, torch.as_tensor(rows))
        torch.testing.assert_close(expected, expected_ce, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(loss, expected, rtol=1e-4, atol=1e-5)
    loss.backward()
    assert all(p.grad is None for p in module.entity_tower.parameters())


def test_export_encoder_warm_starts_a_tower_that_encodes_alike(tmp_path, toy_kb_dir, tiny_bert_dir, capsys):
    import torch

    from spacy_arbo.cli import main
    from spacy_arbo.encoders.templates import MentionInput
    from spacy_arbo.encoders.transformer import TransformerTower
    from spacy_arbo.torch_model import get_module

    from transformers import BertConfig, BertModel, BertTokenizerFast

    from ..conftest import TINY_VOCAB

    # The shared toy vocabulary lists two word pieces twice, leaving holes in the ids that
    # save_pretrained renumbers; a BERT whose vocabulary has each word piece once.
    bert = tmp_path / "bert"
    bert.mkdir()
    (bert / "vocab.txt").write_text("\n".join(dict.fromkeys(TINY_VOCAB)) + "\n")
    BertTokenizerFast(vocab_file=str(bert / "vocab.txt")).save_pretrained(bert)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(set(TINY_VOCAB)), hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=2, intermediate_size=37)).save_pretrained(bert)
    model = {"@architectures": "spacy_arbo.DualEncoder.v1", "mention_tower": {
        "@architectures": "spacy_arbo.TransformerTower.v1", "name": str(bert), "max_length": 32}}
    nlp, _, _ = train_toy(toy_kb_dir, OBJECTIVES["hard_negatives"], steps=5, model=model)
    nlp.to_disk(tmp_path / "pipeline")
    assert main(["export-encoder", str(tmp_path / "pipeline"), str(tmp_path / "encoder")]) == 0
    assert "--paths.encoder" in capsys.readouterr().out
    trained = get_module(nlp.get_pipe("arbo_linker").model).mention_tower.eval()
    trained.set_precision("fp32")
    warm = TransformerTower.from_pretrained(str(tmp_path / "encoder"), "mean", 32, trained.use_markers).eval()
    assert len(warm.tokenizer) == len(trained.tokenizer)
    mentions = [MentionInput("patients with", "fever", "and cough"), MentionInput("", "influenza", "")]
    with torch.no_grad():
        torch.testing.assert_close(warm.encode_mentions(mentions), trained.encode_mentions(mentions))
    hashed = tmp_path / "hashed"
    train_toy(toy_kb_dir, OBJECTIVES["in_batch"], steps=0)[0].to_disk(hashed)
    assert main(["export-encoder", str(hashed), str(tmp_path / "none")]) == 1
    assert "not a transformer" in capsys.readouterr().err


def test_arborescence_refreshes_the_mention_cache_and_uses_mention_edges(toy_kb_dir, monkeypatch):
    from spacy_arbo.training import objectives

    kinds = []
    original = objectives.batch_positives

    def recording(*args, **kwargs):
        positives = original(*args, **kwargs)
        kinds.extend(p.kind for p in positives)
        return positives

    monkeypatch.setattr(objectives, "batch_positives", recording)
    nlp, _, _ = train_toy(toy_kb_dir, OBJECTIVES["arborescence_full"], steps=12)
    linker = nlp.get_pipe("arbo_linker")
    # Re-encoded at updates 0 and 10 (refresh_every 10), not only when an entity cache is set.
    assert linker.corpus.vectors is not None and linker.training.corpus_encoded_at == 10
    assert "mention" in kinds and "entity" in kinds


@pytest.mark.parametrize("objective,expected", [
    ({"@losses": "spacy_arbo.proxy.v1"}, "use delta 0.6"),
    ({"@losses": "spacy_arbo.proxy.v1", "delta": 0.4, "entity_cache": "negatives"}, "collapsed"),
    ({"@losses": "spacy_arbo.proxy.v1", "delta": 0.4}, "share_negatives = true with mined negatives"),
    ({"@losses": "spacy_arbo.proxy.v1", "delta": 0.4, "share_negatives": True}, "even shared across the batch"),
    ({"@losses": "spacy_arbo.proxy.v1", "delta": 0.4, "share_negatives": True, "negatives": "mined"},
     "with delta 0.4 trailed"),
    ({"@losses": "spacy_arbo.proxy.v1", "delta": 0.6, "share_negatives": True, "negatives": "mined"}, None),
    ({"@losses": "spacy_arbo.arborescence.v1"}, "entity_weight 1 reached"),
    ({"@losses": "spacy_arbo.arborescence.v1", "entity_weight": 1.0}, None),
    ({"@losses": "spacy_arbo.fgsm.v1"}, "Base it on hard_negatives.v1"),
    ({"@losses": "spacy_arbo.fgsm.v1", "base": {"@losses": "spacy_arbo.hard_negatives.v1"}}, "1.7x"),
    ({"@losses": "spacy_arbo.hard_negatives.v1"}, None),
])
def test_training_warns_of_an_objectives_measured_limits(objective, expected, toy_kb_dir, caplog):
    # The warning comes when training starts (initialize), not when a trained pipeline loads.
    nlp = spacy.blank("en")
    nlp.add_pipe("arbo_linker", config={"model": hashed_model(0), "top_k": 4, "objective": objective})
    nlp.config["initialize"]["components"]["arbo_linker"] = {
        "kb_loader": {"@misc": "spacy_arbo.KBFromDir.v1", "path": str(toy_kb_dir)}}
    with caplog.at_level("WARNING", logger="spacy_arbo"):
        nlp.initialize()
    warnings = [r.getMessage() for r in caplog.records if r.name == "spacy_arbo"]
    if expected is None:
        assert warnings == []
    else:
        assert len(warnings) == 1 and warnings[0].startswith("arbo_linker: ") and expected in warnings[0]


def test_training_clock_without_a_path_records_nothing(tmp_path, monkeypatch):
    from spacy_arbo.training.clock import make_training_clock

    monkeypatch.chdir(tmp_path)
    log_step, finalize = make_training_clock(None)(spacy.blank("en"), sys.stdout, sys.stderr)
    log_step({"step": 0})
    log_step(None)
    finalize()
    assert list(tmp_path.iterdir()) == []
