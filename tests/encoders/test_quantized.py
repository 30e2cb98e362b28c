"""int8 precision: ONNX Runtime copies close to fp32, following the weights, never saved."""
import copy
import pickle

import pytest
import torch

from spacy_arbo.encoders.precision import resolve_precision
from spacy_arbo.encoders.quantized import Int8Copy
from spacy_arbo.encoders.templates import EntityInput, MentionInput
from spacy_arbo.encoders.transformer import TransformerTower
from spacy_arbo.util import ArboError

from ..test_reliability import run_python
from ..util import hide_onnx_runtime

ENTITIES = [EntityInput("wilson disease", "copper accumulates in the liver"), EntityInput("fever", ""),
            EntityInput("colorectal cancer", ""), EntityInput("heart failure", "cardiac failure")]
MENTIONS = [MentionInput("patients with ", "fever", " and a cough"), MentionInput("", "WD", " runs in families")]


@pytest.fixture
def tower(tiny_bert_dir):
    return TransformerTower.from_pretrained(str(tiny_bert_dir), "mean", 16, True).eval()


def cosines(a, b):
    return torch.nn.functional.cosine_similarity(a, b, dim=-1)


def encode(tower, precision):
    tower.set_precision(precision)
    with torch.no_grad():
        return tower.encode_entities(ENTITIES), tower.encode_mentions(MENTIONS)


def test_int8_vectors_are_close_to_fp32_for_any_batch_and_length(tower):
    assert resolve_precision("int8", torch.device("cpu")) == "int8"
    entities, mentions = encode(tower, "fp32")
    quantized_entities, quantized_mentions = encode(tower, "int8")
    assert quantized_entities.dtype == torch.float32 and quantized_entities.shape == entities.shape
    assert not torch.equal(quantized_entities, entities)  # really computed by ONNX Runtime in int8
    assert cosines(quantized_entities, entities).min() > 0.98
    assert cosines(quantized_mentions, mentions).min() > 0.98
    # One exported graph serves every batch size and padded length, a single row included.
    with torch.no_grad():
        alone = tower.encode_entities(ENTITIES[1:2])
    assert cosines(alone, entities[1:2]).min() > 0.98
    assert len(tower._int8._sessions) == 1
    # Deterministic: the same inputs give the same vectors.
    assert torch.equal(encode(tower, "int8")[0], quantized_entities)


def test_int8_copy_follows_the_weights(tower):
    before, _ = encode(tower, "int8")
    with torch.no_grad():
        torch.manual_seed(0)
        for p in tower.encoder.encoder.layer[-1].parameters():
            p.add_(torch.randn_like(p))
    after, _ = encode(tower, "int8")  # set_precision again: what the pipeline does before each pass
    reference, _ = encode(tower, "fp32")
    assert cosines(after, before).min() < 0.99
    assert cosines(after, reference).min() > 0.98


def test_int8_training_pass_keeps_gradients(tower):
    tower.set_precision("int8")
    tower.train()
    vectors = tower.encode_mentions(MENTIONS)
    vectors.pow(2).sum().backward()
    grads = [p.grad for name, p in tower.encoder.named_parameters() if "pooler" not in name]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)


def test_int8_takes_a_three_dimensional_attention_mask(tower):
    """The reranker's multi mode passes a (batch, length, length) mask."""
    ids, mask = tower.padded(tower.entity_rows(ENTITIES)[0])
    square = mask.unsqueeze(1) * mask.unsqueeze(2)
    with torch.no_grad():
        reference = tower.encoder(input_ids=ids, attention_mask=square).last_hidden_state
        tower.set_precision("int8")
        quantized = tower.last_hidden_state(input_ids=ids, attention_mask=square)
    real = mask.bool()
    assert cosines(quantized[real], reference[real]).min() > 0.95


def test_the_int8_copy_is_neither_saved_nor_copied(tower):
    encode(tower, "int8")
    assert tower._int8._sessions
    assert set(tower.state_dict()) == set(copy.deepcopy(tower).state_dict())
    assert copy.deepcopy(tower)._int8._sessions == {}
    assert pickle.loads(pickle.dumps(tower._int8))._sessions == {}


def test_int8_without_onnx_runtime_says_what_to_install(tower, monkeypatch):
    hide_onnx_runtime(monkeypatch)
    with pytest.raises(ArboError, match=r"spacy-arbo\[onnx\]"):
        tower.set_precision("int8")


def test_int8_before_sync_is_a_clear_error():
    with pytest.raises(ArboError, match="sync"):
        Int8Copy()(input_ids=torch.zeros((1, 3), dtype=torch.long))


FORK_SCRIPT = """
    import multiprocessing

    import torch
    from transformers import BertConfig, BertModel

    from spacy_arbo.encoders.quantized import Int8Copy

    # Big enough that ONNX Runtime runs its intra-op pool, whose threads a forked child lacks.
    torch.set_num_threads(2)
    torch.manual_seed(0)
    encoder = BertModel(BertConfig(vocab_size=1000, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                                   intermediate_size=1024, max_position_embeddings=512)).eval()
    inputs = {"input_ids": torch.randint(5, 1000, (16, 256)), "attention_mask": torch.ones(16, 256, dtype=torch.long)}
    int8 = Int8Copy()
    int8.sync(encoder)
    parent = int8(**inputs)


    def child(queue):
        with torch.no_grad():
            encoder.pooler.dense.bias.add_(1.0)  # new weights, outside the last hidden state
        int8.sync(encoder)  # drops the parent's session: freeing it must not wait for its pool
        queue.put(torch.equal(int8(**inputs), parent))


    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    context.Process(target=child, args=(queue,), daemon=True).start()
    print("same" if queue.get(timeout=100) else "differ")
"""


def test_a_forked_child_makes_its_own_sessions():
    """`nlp.pipe(n_process=2)` forks: a child that freed or ran a session it inherited hung."""
    result = run_python(FORK_SCRIPT, timeout=150)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "same"
