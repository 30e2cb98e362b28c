"""bf16 precision: close to fp32, follows the weights, trains fp32 master weights."""
import copy
import pickle

import pytest
import torch

from spacy_arbo.encoders.precision import Bf16Copy, autocast_gradient_passes, resolve_precision
from spacy_arbo.encoders.templates import EntityInput, MentionInput
from spacy_arbo.encoders.transformer import TransformerTower
from spacy_arbo.util import ArboError

ENTITIES = [EntityInput("wilson disease", "copper accumulates in the liver"), EntityInput("fever", ""),
            EntityInput("colorectal cancer", ""), EntityInput("heart failure", "cardiac failure")]


@pytest.fixture
def tower(tiny_bert_dir):
    return TransformerTower.from_pretrained(str(tiny_bert_dir), "mean", 16, True).eval()


def cosines(a, b):
    return torch.nn.functional.cosine_similarity(a, b, dim=-1)


def test_resolve_precision():
    cpu = torch.device("cpu")
    assert resolve_precision("fp32", cpu) == "fp32" and resolve_precision("bf16", cpu) == "bf16"
    native = torch.cpu._is_amx_tile_supported() or torch.cpu._is_avx512_bf16_supported()
    assert resolve_precision("auto", cpu) == ("bf16" if native else "fp32")
    assert resolve_precision("int8", cpu) == "int8"
    # int8 is for passes without gradient; those with gradient run in bf16 where it is native.
    assert autocast_gradient_passes("int8", cpu) == native and autocast_gradient_passes("bf16", cpu)
    assert not autocast_gradient_passes("fp32", cpu)
    with pytest.raises(ArboError, match="precision"):
        resolve_precision("fp16", cpu)


def test_bf16_vectors_are_close_to_fp32_and_float32(tower):
    with torch.no_grad():
        full = tower.encode_entities(ENTITIES)
        tower.set_precision("bf16")
        half = tower.encode_entities(ENTITIES)
    assert half.dtype == torch.float32 and half.shape == full.shape
    assert not torch.equal(half, full)  # really computed in bf16
    assert cosines(half, full).min() > 0.995


def test_bf16_snapshot_follows_the_weights(tower):
    tower.set_precision("bf16")
    with torch.no_grad():
        before = tower.encode_entities(ENTITIES)
        torch.manual_seed(0)
        for p in tower.encoder.encoder.layer[-1].parameters():
            p.add_(torch.randn_like(p))
        tower.set_precision("bf16")  # what the pipeline does before each encoding pass
        after = tower.encode_entities(ENTITIES)
        tower.set_precision("fp32")
        reference = tower.encode_entities(ENTITIES)
    assert cosines(after, before).min() < 0.99
    assert cosines(after, reference).min() > 0.995


def test_bf16_training_pass_gives_fp32_gradients_to_every_weight(tower):
    tower.set_precision("bf16")
    tower.train()
    vectors = tower.encode_mentions([MentionInput("patients with ", "fever", " and cough")])
    assert vectors.dtype == torch.float32
    vectors.pow(2).sum().backward()
    grads = {name: p.grad for name, p in tower.encoder.named_parameters() if "pooler" not in name}
    assert all(g is not None and g.dtype == torch.float32 for g in grads.values())
    assert all(torch.isfinite(g).all() for g in grads.values())


def test_the_bf16_copy_is_made_at_the_first_pass_without_gradient(tower):
    """An update sets the precision but runs no such pass: it must not pay for a copy."""
    tower.set_precision("bf16")
    tower.train()
    tower.encode_mentions([MentionInput("patients with ", "fever", " and cough")]).sum().backward()
    assert tower._bf16.module is None
    with torch.no_grad():
        tower.encode_entities(ENTITIES)
    assert tower._bf16.module is not None


def test_the_bf16_copy_is_neither_saved_nor_copied(tower):
    tower.set_precision("bf16")
    with torch.no_grad():
        tower.encode_entities(ENTITIES)
    assert tower._bf16.module is not None
    assert not any(p.dtype == torch.bfloat16 for p in tower.state_dict().values())
    assert copy.deepcopy(tower)._bf16.module is None
    assert pickle.loads(pickle.dumps(Bf16Copy())).module is None
