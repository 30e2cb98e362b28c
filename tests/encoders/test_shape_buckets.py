import torch

from spacy_arbo.encoders.shape_buckets import bucket_shape, pad_to_bucket
from spacy_arbo.encoders.templates import MentionInput
from spacy_arbo.encoders.transformer import TransformerTower


def test_bucket_shape():
    assert bucket_shape(1, 1) == (1, 16)
    assert bucket_shape(3, 17) == (4, 32)
    assert bucket_shape(64, 64) == (64, 64)
    assert bucket_shape(65, 5) == (128, 16)


def test_padding_is_masked_and_extra_rows_repeat_the_first():
    embeddings, mask = torch.randn(3, 5, 4), torch.tensor([[1] * 5, [1] * 3 + [0] * 2, [1] * 4 + [0]])
    padded, padded_mask = pad_to_bucket(embeddings, mask)
    assert padded.shape == (4, 16, 4) and padded_mask.shape == (4, 16)
    assert torch.equal(padded[:3, :5], embeddings) and torch.equal(padded_mask[:3, :5], mask)
    assert not padded_mask[:, 5:].any() and torch.equal(padded[3], padded[0])


def test_bf16_passes_on_a_cpu_see_few_shapes_and_keep_their_vectors(tiny_bert_dir):
    """A stream of batches of every size and length reaches the bf16 copy in a few shapes
    (oneDNN compiles a kernel per shape), and each text's vector is the one it gets alone."""
    tower = TransformerTower.from_pretrained(str(tiny_bert_dir), "mean", 64, True).eval()
    tower.set_precision("bf16")
    words = "patients with wilson disease and fever after colorectal cancer".split()
    mentions = [MentionInput(" ".join(words[: i % 7]) + " ", words[i % 9], " " + " ".join(words[: i % 5]))
                for i in range(40)]
    shapes = set()
    with torch.no_grad():
        alone = torch.cat([tower.encode_mentions([m]) for m in mentions[:6]])
        module = tower._low_precision_copy().module
        hook = module.register_forward_pre_hook(lambda _, args, kwargs: shapes.add(tuple(kwargs["inputs_embeds"].shape[:2])),
                                                with_kwargs=True)
        batched = [tower.encode_mentions(mentions[:size]) for size in range(1, 41)]
        hook.remove()
    assert all(b.shape == (size, tower.dim) for size, b in enumerate(batched, 1))
    assert len(shapes) <= 7 * 2 and all(rows & (rows - 1) == 0 and width % 16 == 0 for rows, width in shapes)
    torch.testing.assert_close(batched[5], alone, rtol=0, atol=2e-2)
