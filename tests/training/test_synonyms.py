import math
from functools import partial

import numpy as np
import pytest
import torch
from tqdm import tqdm

from spacy_arbo.encoders.transformer import TransformerTower
from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.training.synonyms import alignment_optimizer, batches, multi_positive_infonce, synonym_pairs, train_on_pairs


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
def test_training_on_synonym_pairs_lowers_their_loss(tiny_tower, toy_kb, device):
    tiny_tower.to(device)
    torch.manual_seed(0)
    pairs = synonym_pairs(toy_kb, np.random.default_rng(1))
    with tqdm(disable=True) as bar:
        losses = train_on_pairs(tiny_tower, alignment_optimizer(tiny_tower, 1e-3),
                                [batch for _ in range(40) for batch in batches(pairs, 8)],
                                partial(multi_positive_infonce, scale=20.0), bar)
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])
