import types

import pytest
import torch

from spacy_arbo.encoders.templates import END, MARKERS, START, TITLE, EntityInput, MentionInput
from spacy_arbo.encoders.transformer import (
    TransformerTower, build_transformer_tower, default_encoder_path, set_attention_dropout,
)
from spacy_arbo.util import ArboError


@pytest.fixture
def tower(tiny_bert_dir):
    return TransformerTower.from_pretrained(str(tiny_bert_dir), "mean", 16, True).eval()


def test_markers_are_single_special_tokens(tower, tiny_bert_dir):
    n_vocab = len((tiny_bert_dir / "vocab.txt").read_text().split())
    ids = [tower.tokenizer.convert_tokens_to_ids(m) for m in MARKERS]
    assert ids == [n_vocab, n_vocab + 1, n_vocab + 2]  # appended after the vocabulary
    assert tower.encoder.get_input_embeddings().weight.shape[0] == len(tower.tokenizer)
    assert tower.tokenizer.tokenize(f"a {START} b") == ["a", START, "b"]


def test_mention_packing_keeps_mention_and_markers(tower):
    left, right = "patients with " * 10, " and heart failure" * 10
    (row,), (center,) = tower.mention_rows([MentionInput(left, "diabetes mellitus", right)])
    tokens = tower.tokenizer.convert_ids_to_tokens(row)
    assert tokens[center[0]: center[1]] == ["diabetes", "mellitus"]
    assert len(row) == 16
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    start, end = tokens.index(START), tokens.index(END)
    assert tokens[start + 1: end] == ["diabetes", "mellitus"]
    # The context budget is shared: the left context ends right before [START].
    assert tokens[start - 2: start] == ["patients", "with"]
    assert tokens[end + 1: end + 4] == ["and", "heart", "failure"]


def test_huge_mention_is_truncated_not_an_error(tower):
    vectors = tower.encode_mentions([MentionInput("", "fever " * 2000, "")])
    assert vectors.shape == (1, 32) and torch.isfinite(vectors).all()


def test_entity_packing(tower):
    rows, centers = tower.entity_rows([EntityInput("wilson disease", "metabolic disorder"), EntityInput("fever", "")])
    assert tower.tokenizer.convert_ids_to_tokens(rows[0]) == \
        ["[CLS]", "wilson", "disease", TITLE, "metabolic", "disorder", "[SEP]"]
    # No description: no [TITLE] either.
    assert tower.tokenizer.convert_ids_to_tokens(rows[1]) == ["[CLS]", "fever", "[SEP]"]
    assert centers == [(1, 3), (1, 2)]


def test_pooling_differs_and_padding_does_not_leak(tiny_bert_dir):
    cls_tower = TransformerTower.from_pretrained(str(tiny_bert_dir), "cls", 16, True).eval()
    mean_tower = TransformerTower.from_pretrained(str(tiny_bert_dir), "mean", 16, True).eval()
    entities = [EntityInput("fever", ""), EntityInput("wilson disease", "metabolic disorder of the cough")]
    with torch.no_grad():
        assert not torch.allclose(cls_tower.encode_entities(entities), mean_tower.encode_entities(entities))
        # Encoding alone or in a padded batch gives the same vector.
        alone = mean_tower.encode_entities(entities[:1])
        batched = mean_tower.encode_entities(entities)[:1]
    torch.testing.assert_close(alone, batched, atol=1e-5, rtol=1e-5)


def test_files_round_trip(tower):
    mentions = [MentionInput("patients with", "fever", "and cough"), MentionInput("", "colorectal cancer", "")]
    again = TransformerTower.from_files(tower.to_files()).eval()
    with torch.no_grad():
        torch.testing.assert_close(tower.encode_mentions(mentions), again.encode_mentions(mentions))
    assert again.tokenizer.convert_tokens_to_ids(START) == tower.tokenizer.convert_tokens_to_ids(START)


def test_bad_settings(tmp_path):
    with pytest.raises(ArboError, match="Unknown pooling 'max'"):
        build_transformer_tower("x", pooling="max")
    with pytest.raises(ArboError, match="Cannot load a transformer from"):
        build_transformer_tower(str(tmp_path / "missing"))()


def test_default_encoder_is_the_offline_minilm():
    path = default_encoder_path()
    assert path.endswith("model")
    from pathlib import Path

    assert (Path(path) / "config.json").exists() and (Path(path) / "tokenizer.json").exists()


def attention_dropouts(tower):
    return {layer.attention.self.dropout_prob for layer in tower.encoder.encoder.layer}


def test_attention_dropout_replaces_the_checkpoints_and_is_saved(tiny_bert_dir):
    kept = build_transformer_tower(str(tiny_bert_dir), max_length=16)()
    assert attention_dropouts(kept) == {0.1}  # the checkpoint's value
    tower = build_transformer_tower(str(tiny_bert_dir), max_length=16, attention_dropout=0.0)()
    assert attention_dropouts(tower) == {0.0} and tower.encoder.config.hidden_dropout_prob == 0.1
    assert attention_dropouts(TransformerTower.from_files(tower.to_files())) == {0.0}
    # Without dropout on the attention the weights are the same: only training differs.
    assert all(torch.equal(a, b) for a, b in zip(kept.encoder.state_dict().values(), tower.encoder.state_dict().values()))


def test_bad_attention_dropout(tiny_bert_dir):
    with pytest.raises(ArboError, match=r"attention_dropout takes a number in \[0, 1\) or null; got 1.5"):
        build_transformer_tower(str(tiny_bert_dir), attention_dropout=1.5)
    with pytest.raises(ArboError, match=r"the config of 'odd' \(SimpleNamespace\) has none of"):
        set_attention_dropout(types.SimpleNamespace(), 0.0, "odd")
