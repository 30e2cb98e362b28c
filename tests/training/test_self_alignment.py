"""Self-alignment on a KB's own names (the KB-only recipe's encoder): its loss and mining,
its batches, model selection on held-out KB names that reads no corpus, and the recipe's
linker (configs/kb_only.cfg) on a name that neither training nor the KB holds."""
import json
import math
from pathlib import Path

import numpy as np
import pytest
import spacy
import torch

from spacy_arbo.cli import main
from spacy_arbo.encoders.transformer import TransformerTower
from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.training.alignment_batches import nearest_entities, neighbour_batches, neighbour_order
from spacy_arbo.training.alignment_holdout import (HeldOutNames, KBNames, encode_names, hold_out_names, hybrid_recall,
                                                   score_held_out)
from spacy_arbo.training.self_alignment import AlignmentSettings, self_align
from spacy_arbo.training.synonyms import SynonymPair, hard_pair_masks, multi_similarity_loss, synonym_pairs
from spacy_arbo.util import ArboError

from ..conftest import TOY_ENTITIES, make_doc


def held_out_score(tower, kb, held_out):
    """The held-out names scored with `tower`'s vectors of every name of `kb`."""
    names = KBNames(kb)
    return score_held_out(encode_names(tower, names.texts), names, held_out)

ROOT = Path(__file__).resolve().parents[2]
# The toy KB's 17 names pair up in two or three steps of 8.
TOY_SETTINGS = dict(epochs=6, batch_size=8, learning_rate=1e-3)


@pytest.fixture
def tiny_tower(tiny_bert_dir):
    return TransformerTower.from_pretrained(str(tiny_bert_dir), "mean", 16, use_markers=False)


def test_multi_similarity_loss_over_the_mined_pairs():
    # a and p name entity 0, n names entity 1 and sits on a: both of a's pairs and both of p's
    # are hard; n has no positive, so it anchors no triplet.
    a, p, n = [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]
    vectors, labels = torch.tensor([a, p, n]), torch.tensor([0, 0, 1])
    positive, negative = hard_pair_masks(vectors @ vectors.T, labels, margin=0.2)
    assert positive.tolist() == [[False, True, False], [True, False, False], [False, False, False]]
    assert negative.tolist() == [[False, False, True], [False, False, True], [False, False, False]]
    pull = math.log(1 + math.exp(0.5))  # alpha 1, positive cosine 0, base 0.5
    expected = (2 * pull + math.log(1 + math.exp(30)) / 60 + math.log(1 + math.exp(-30)) / 60) / 3
    assert float(multi_similarity_loss(vectors, labels)) == pytest.approx(expected, rel=1e-5)
    # Entities far apart and synonyms together: no hard pair, nothing to learn.
    easy = torch.tensor([[1.0, 0.0], [1.0, 0.01], [0.0, 1.0], [0.01, 1.0]])
    assert float(multi_similarity_loss(easy, torch.tensor([0, 0, 1, 1]))) == 0.0


def test_held_out_names_are_seeded_and_hidden_from_training(toy_kb):
    held = hold_out_names(toy_kb, 0.5, seed=0)
    assert held == hold_out_names(toy_kb, 0.5, seed=0) and len(held) == 3
    assert len({row for _, row in held.names}) == 3
    assert all((text, row) in toy_kb.alias_pairs() for text, row in held.names)
    trained = {(p.name, p.row) for p in synonym_pairs(toy_kb, np.random.default_rng(0), held.hidden)}
    trained |= {(p.synonym, p.row) for p in synonym_pairs(toy_kb, np.random.default_rng(0), held.hidden)}
    assert trained and not trained & held.hidden
    assert len(hold_out_names(toy_kb, 0.0, seed=0)) == 0
    with pytest.raises(ArboError, match=r"^held_out takes a number in \[0, 1\); got 1.0\.$"):
        hold_out_names(toy_kb, 1.0, seed=0)


def test_held_out_recall_is_the_nearest_other_name(toy_kb):
    names = KBNames(toy_kb)
    vectors = np.zeros((len(names), 2), dtype=np.float32)
    vectors[:, 0] = 1.0
    fever, pyrexia = names.position[("Fever", 3)], names.position[("pyrexia", 3)]
    cough = names.position[("Cough", 4)]
    vectors[[fever, pyrexia, cough]] = [[0.0, 1.0], [0.1, 1.0], [0.6, 0.8]]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    # Fever's nearest other name is pyrexia (its own entity); Cough's is pyrexia too (not its own).
    held = HeldOutNames((("Fever", 3), ("Cough", 4)))
    score = score_held_out(vectors, names, held)
    assert score.recall_at_1 == 0.5 and score.loss > 0
    # TF-IDF finds Cough's "coughing"; dense alone does not.
    recalls = hybrid_recall(vectors, names, held, toy_kb, [0.0, 1.0])
    assert recalls["0"] == 0.5 and recalls["tfidf"] >= 0.5


def test_self_alignment_lowers_the_held_out_synonym_loss(tiny_tower, toy_kb):
    # Names the tiny random encoder can only place through word pieces they share with their
    # entity's other names, which the alignment pulls together.
    held = HeldOutNames((("diabetes", 0), ("Cough", 4), ("Heart Failure", 5)))
    before = held_out_score(tiny_tower, toy_kb, held)
    torch.manual_seed(0)
    result = self_align(tiny_tower, toy_kb, AlignmentSettings(**TOY_SETTINGS), held_out=held, progress=False)
    after = held_out_score(tiny_tower, toy_kb, held)
    assert result.curve[0].held_out_loss == pytest.approx(before.loss, abs=1e-5)
    assert after.loss < before.loss - 0.1
    # The tower holds the weights of the pass the held-out names chose.
    best = result.curve[result.best_pass]
    assert after.recall_at_1 == pytest.approx(best.held_out_recall)
    assert best.held_out_recall == max(p.held_out_recall for p in result.curve)
    assert [p.pass_ for p in result.curve] == list(range(7)) and result.curve[0].loss is None
    # Every name once a pass: 17 names, less the 3 held out and "coughing", left without a synonym.
    assert all(p.pairs == 13 for p in result.curve[1:])


def test_self_alignment_is_seeded(tiny_bert_dir, toy_kb):
    curves = []
    for _ in range(2):
        tower = TransformerTower.from_pretrained(str(tiny_bert_dir), "mean", 16, use_markers=False)
        result = self_align(tower, toy_kb, AlignmentSettings(epochs=2, batch_size=4, learning_rate=1e-3, held_out=0.5),
                            progress=False)
        curves.append([(p.loss, p.held_out_recall) for p in result.curve])
    assert curves[0] == curves[1]


def test_neighbour_batches_hold_every_pair_once_beside_the_nearest_entities():
    # Entities 0 and 1 have near names, as have 2 and 3; each entity's names are one vector.
    owners = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    vectors = np.array([[1, 0], [1, 0], [0.99, 0.14], [0.99, 0.14], [0, 1], [0, 1], [0.14, 0.99], [0.14, 0.99]])
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    neighbours = nearest_entities(vectors, owners, {0: 0, 1: 2, 2: 4, 3: 6}, k=1)
    assert neighbours == {0: [1], 1: [0], 2: [3], 3: [2]}
    order = neighbour_order(neighbours, np.random.default_rng(0))
    assert sorted(order) == [0, 1, 2, 3] and {frozenset(order[:2]), frozenset(order[2:])} == {frozenset({0, 1}),
                                                                                             frozenset({2, 3})}
    pairs = [SynonymPair(f"n{row}.{i}", f"s{row}.{i}", row) for row in range(4) for i in range(3)]
    batches = neighbour_batches(pairs, order, batch_size=4, rng=np.random.default_rng(0))
    assert sorted((p for b in batches for p in b), key=str) == sorted(pairs, key=str)
    # With batches of 4, an entity gives 2 pairs to a run: neighbours share the first batches.
    assert {frozenset(p.row for p in b) for b in batches if len({p.row for p in b}) == 2} >= {
        frozenset({0, 1}), frozenset({2, 3})}


def test_settings_are_checked():
    with pytest.raises(ArboError, match="batch_size"):
        AlignmentSettings(batch_size=1)
    with pytest.raises(ArboError, match="batching"):
        AlignmentSettings(batching="clusters")
    with pytest.raises(ArboError, match="held_out"):
        AlignmentSettings(held_out=1.5)


@pytest.fixture
def no_corpus_read(monkeypatch):
    """Any corpus read (a .spacy DocBin, a PubTator or BLINK file) fails the test."""
    import spacy_arbo.corpora as corpora
    import spacy_arbo.corpora.conversion as conversion
    from spacy.tokens import DocBin

    def refuse(*_args, **_kwargs):
        raise AssertionError("a corpus was read")

    monkeypatch.setattr(DocBin, "from_bytes", refuse)
    monkeypatch.setattr(DocBin, "from_disk", refuse)
    for module in (corpora, conversion):
        for name in ("read_docbin", "convert_corpus", "iter_corpus"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, refuse)


def test_model_selection_reads_no_corpus(no_corpus_read, tmp_path, tiny_bert_dir, toy_kb_dir):
    """The whole command, model selection included, runs with every corpus reader refusing:
    a KB and an encoder are all it reads."""
    from spacy.tokens import DocBin

    with pytest.raises(AssertionError, match="corpus was read"):
        DocBin().from_bytes(b"")  # the guard is in place
    curve = tmp_path / "curve.json"
    assert main(["self-align", str(toy_kb_dir), str(tmp_path / "encoder"), "--encoder", str(tiny_bert_dir),
                 "--epochs", "2", "--batch-size", "4", "--max-length", "16", "--held-out", "0.5",
                 "--curve", str(curve)]) == 0
    written = json.loads(curve.read_text())
    assert [p["pass"] for p in written["passes"]] == [0, 1, 2] and len(written["held_out"]) == 3
    assert set(written["passes"][0]) == {"pass", "pairs", "seconds", "loss", "held_out_recall@1", "held_out_loss"}
    assert written["best_pass"] in (0, 1, 2) and set(written["held_out_recall@1_hybrid"]) >= {"tfidf", "0", "0.5"}


def test_selection_takes_a_kb_and_an_encoder_only(tiny_tower, toy_kb):
    import inspect

    for function in (hold_out_names, self_align, hybrid_recall, encode_names, score_held_out):
        parameters = set(inspect.signature(function).parameters)
        assert not parameters & {"docs", "corpus", "examples", "gold", "labels", "dev"}, function.__name__
    assert held_out_score(tiny_tower, toy_kb, hold_out_names(toy_kb, 0.5, seed=0)).recall_at_1 is not None


def without_name(kb, entity_id, hidden):
    """`kb` without one of `entity_id`'s names (its first remaining name becomes its name)."""
    entities = []
    for entity in kb:
        names = [n for n in (entity.name, *entity.aliases) if not (entity.id == entity_id and n == hidden)]
        entities.append(Entity(entity.id, names[0], tuple(names[1:]), entity.definition))
    return EntityStore(entities, source="toy")


def kb_only_linker(kb_dir, encoder):
    config = spacy.util.load_config(ROOT / "configs" / "kb_only.cfg",
                                    overrides={"paths.kb": str(kb_dir), "paths.encoder": str(encoder)})
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    nlp.initialize()
    return nlp


def test_kb_only_recipe_links_a_synonym_no_name_of_the_kb_holds(tmp_path, tiny_tower, tiny_bert_dir):
    """configs/kb_only.cfg over a KB without "Heart Failure": after self-alignment on that KB,
    the mention "Heart Failure" links to its entity by a wider margin than before."""
    kb = without_name(EntityStore([Entity(i, n, a, d) for i, n, a, d in TOY_ENTITIES], source="toy"),
                      "MESH:D006333", "Heart Failure")
    kb.to_disk(tmp_path / "kb")
    torch.manual_seed(0)
    self_align(tiny_tower, kb, AlignmentSettings(**TOY_SETTINGS, held_out=0.0), progress=False)
    tiny_tower.save_pretrained(tmp_path / "aligned")

    def margin(encoder):
        nlp = kb_only_linker(tmp_path / "kb", encoder)
        doc = make_doc(nlp, "Reported: Heart Failure.", [("Heart Failure", "MESH:D006333")])
        ent = nlp(doc).ents[0]
        scores = dict(ent._.kb_candidates)
        return ent.kb_id_, scores["MESH:D006333"] - max(s for i, s in scores.items() if i != "MESH:D006333")

    before, after = margin(tiny_bert_dir), margin(tmp_path / "aligned")
    assert after[0] == "MESH:D006333"
    assert after[1] > before[1] + 0.05


def test_kb_only_config_is_the_recipe():
    config = spacy.util.load_config(ROOT / "configs" / "kb_only.cfg")
    linker = config["components"]["arbo_linker"]
    assert (linker["candidate_source"], linker["index_aliases"], linker["use_long_form"], linker["composites"],
            linker["kb_names_first"]) == ("hybrid", True, True, "best", True)
    assert linker["threshold"] is None and isinstance(linker["sparse_weight"], float)
    assert "entity_tower" not in linker["model"]  # one tower: mentions and names read by the aligned encoder


def test_the_frozen_recipes_entity_tower_reads_the_aligned_encoder_too():
    config = spacy.util.load_config(ROOT / "configs" / "retriever_frozen.cfg", interpolate=False)
    model = config["components"]["arbo_linker"]["model"]
    assert model["mention_tower"]["name"]["path"] == model["entity_tower"]["name"]["path"] == "${paths.encoder}"


def test_corpus_long_forms_read_text_only(toy_docs):
    """The recipe learns corpus long forms (`evaluate --long-forms-from`) from the corpora's
    raw text: what their labels say changes nothing."""
    from spacy_arbo.pipeline.common.abbreviations import LongForms, corpus_long_forms

    nlp = spacy.blank("en")
    unlabelled = [nlp.make_doc(doc.text) for doc in toy_docs]
    forms = corpus_long_forms(toy_docs, LongForms(nlp.vocab))
    assert forms == corpus_long_forms(unlabelled, LongForms(nlp.vocab)) == {"WD": "Wilson disease"}


def test_held_out_names_that_tie_on_every_pass_say_the_untrained_encoder_is_kept(tiny_tower):
    """On a small KB the few held-out names tie on every pass, and pass 0 was kept in silence."""
    kb = EntityStore([Entity("D1", "fever", ("fevers",)), Entity("D2", "cough", ("coughs",))])
    held = HeldOutNames((("fevers", 0),))
    result = self_align(tiny_tower, kb, AlignmentSettings(epochs=2, batch_size=2), held_out=held, progress=False)
    assert [p.held_out_recall for p in result.curve] == [0.0, 0.0, 0.0] and result.best_pass == 0
    assert result.note == ("No pass found more of the 1 held-out names than the untrained encoder (recall@1 0.0000 "
                           "on every pass): the untrained encoder is kept. Too few names to choose by: hold out more "
                           "(--held-out) on a larger KB, or none (--held-out 0) to keep the last pass.")
    assert self_align(tiny_tower, kb, AlignmentSettings(epochs=1, batch_size=2, held_out=0.0), progress=False).note == ""
