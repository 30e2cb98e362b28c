import math
import re

import numpy as np
import pytest
import torch

from spacy_arbo.cli import main
from spacy_arbo.encoders.transformer import TransformerTower, encoder_path
from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore, open_store
from spacy_arbo.training.synonyms import multi_positive_infonce, name_alignment, pretrain_synonyms, synonym_pairs
from spacy_arbo.util import ArboError


def test_synonym_pairs_pair_each_name_with_another_of_its_entity(toy_kb):
    pairs = synonym_pairs(toy_kb, np.random.default_rng(0))
    names = {row: {text for text, r in toy_kb.alias_pairs() if r == row} for row in range(len(toy_kb))}
    # Every entity of the toy KB has at least two names but Cough ("coughing" is its second).
    assert sorted(p.name for p in pairs) == sorted(text for text, _ in toy_kb.alias_pairs())
    assert all(p.synonym in names[p.row] and p.synonym != p.name for p in pairs)
    assert pairs == synonym_pairs(toy_kb, np.random.default_rng(0))
    single = EntityStore([Entity("X:1", "alone"), Entity("X:2", "also alone")], source="toy")
    assert synonym_pairs(single, np.random.default_rng(0)) == []


def test_multi_positive_infonce_value():
    vectors = torch.tensor([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
    loss = multi_positive_infonce(vectors, torch.tensor([0, 0, 1, 1]), scale=1.0)
    # Each row: one positive at cosine 1, two negatives at cosine 0.
    assert float(loss) == pytest.approx(math.log(math.e + 2) - 1, rel=1e-6)


@pytest.fixture
def tiny_tower(tiny_bert_dir):
    torch.manual_seed(0)
    return TransformerTower.from_pretrained(str(tiny_bert_dir), "mean", 16, use_markers=False)


# On CUDA too (a `gpu` test): the KB-only recipe's step with the tower on the GPU.
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_pretraining_pulls_synonyms_together(tiny_tower, toy_kb, device):
    tiny_tower.to(device)
    pairs = synonym_pairs(toy_kb, np.random.default_rng(1))
    same_before, other_before = name_alignment(tiny_tower, pairs)
    losses = pretrain_synonyms(tiny_tower, toy_kb, epochs=40, batch_size=8, learning_rate=1e-3, progress=False)
    same_after, other_after = name_alignment(tiny_tower, pairs)
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])
    assert same_after - other_after > same_before - other_before + 0.3


def test_pretraining_rejects_bad_settings(tiny_tower, toy_kb):
    with pytest.raises(ArboError, match="batch_size >= 2"):
        pretrain_synonyms(tiny_tower, toy_kb, batch_size=1)
    single = EntityStore([Entity("X:1", "alone")], source="toy")
    with pytest.raises(ArboError, match="at least two names"):
        pretrain_synonyms(tiny_tower, single)


def test_cli_writes_an_encoder_a_retriever_can_start_from(tmp_path, tiny_bert_dir, toy_kb_dir, capsys):
    out = tmp_path / "synonyms"
    assert main(["pretrain-synonyms", str(toy_kb_dir), str(out), "--encoder", str(tiny_bert_dir),
                 "--max-steps", "2", "--batch-size", "4", "--max-length", "16"]) == 0
    assert "2 steps" in capsys.readouterr().out
    assert encoder_path(str(out)) == str(out)
    tower = TransformerTower.from_pretrained(encoder_path(str(out)), "mean", 16, use_markers=True)
    assert tower.dim == 32 and "[START]" in tower.tokenizer.get_vocab()


def test_cli_measures_bf16_pretraining_on_the_trained_weights(tmp_path, tiny_bert_dir, toy_kb_dir, capsys):
    """The alignment printed after bf16 training is the saved encoder's, not that of the bf16
    copy made for the measurement before training."""
    out = tmp_path / "synonyms"
    assert main(["pretrain-synonyms", str(toy_kb_dir), str(out), "--encoder", str(tiny_bert_dir), "--epochs", "40",
                 "--batch-size", "8", "--max-length", "16", "--learning-rate", "1e-3", "--precision", "bf16"]) == 0
    printed = capsys.readouterr().out
    same_before, same_after, other_before, other_after = (float(x) for x in re.search(
        r"synonyms ([\d.-]+) -> ([\d.-]+), of other names ([\d.-]+) -> ([\d.-]+)", printed).groups())
    sample = synonym_pairs(open_store(toy_kb_dir), np.random.default_rng(1))[:2000]
    saved = TransformerTower.from_pretrained(str(out), "mean", 16, use_markers=False)
    assert name_alignment(saved, sample) == pytest.approx((same_after, other_after), abs=0.02)
    assert same_after - other_after > same_before - other_before + 0.3
