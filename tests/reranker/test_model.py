import pytest
import srsly
import torch

from spacy_arbo.reranker.model import SETTINGS_FILE, SIMILARITY_FILE, CrossEncoder
from spacy_arbo.reranker.packing import Mention, Pair, Sentence, pack


def packed(module, mode):
    """Two sentences of different lengths, three and one mentions with two candidates each."""
    ids = module.tokenize

    def sentence(text, mentions, candidates):
        tokens = ids([text])[0]
        found, index = [], 100 * len(text)
        for mention in mentions:
            piece = ids([mention])[0]
            start = next(i for i in range(len(tokens)) if tokens[i:i + len(piece)] == piece)
            pairs = [Pair(index + k, piece, ids([c])[0]) for k, c in enumerate(candidates)]
            found.append(Mention(start, start + len(piece), pairs))
            index += len(candidates)
        return Sentence(tokens, found)

    sentences = [
        sentence("patients with diabetes mellitus often develop heart failure and fever .",
                 ["diabetes mellitus", "heart failure", "fever"], ["diabetes", "cardiac failure"]),
        sentence("a family history of colon cancer .", ["colon cancer"], ["colorectal cancer", "fever"]),
    ]
    return pack(sentences, mode, module.max_length, module.specials)


@pytest.fixture
def similarity_encoder(tiny_bert_dir):
    torch.manual_seed(0)
    module = CrossEncoder.from_pretrained(str(tiny_bert_dir), 128, "full", similarity_head=True).eval()
    with torch.no_grad():
        module.similarity_log_scale.fill_(1.5)
    return module


def margins(module, passes):
    with torch.no_grad():
        logits = module(passes)
    return logits[:, 1] - logits[:, 0]


def test_similarity_head_adds_the_scaled_cosine_of_the_pair_means(similarity_encoder):
    """With the [MASK] head at zero, a pair's margin is exp(log scale) times the cosine of
    its mention's and its candidate's mean hidden states, read here pass by pass."""
    module = similarity_encoder
    with torch.no_grad():
        module.head.weight.zero_()
        module.head.bias.zero_()
    passes = packed(module, "multi")
    assert len(passes) == 2 and [len(p.mask_positions) for p in passes] == [6, 2]
    expected = []
    for p in passes:
        with torch.no_grad():
            hidden = module.backbone.last_hidden_state(
                input_ids=torch.tensor([p.input_ids]), attention_mask=torch.ones(1, len(p), dtype=torch.long),
                token_type_ids=torch.tensor([[int(s != -1) for s in p.slots]]))[0]
        for start, mask, end in zip(p.mention_starts, p.mask_positions, p.candidate_ends):
            cosine = torch.cosine_similarity(hidden[start:mask].mean(0), hidden[mask + 1:end].mean(0), dim=0)
            expected.append(float(torch.exp(torch.tensor(1.5)) * cosine))
    # Both passes in one padded batch give what each gives alone.
    assert margins(module, passes).tolist() == pytest.approx(expected, abs=1e-5)
    assert len(set(round(e, 4) for e in expected)) == len(expected)


def test_without_the_similarity_head_the_margins_are_the_mask_heads(tiny_bert_dir, similarity_encoder):
    torch.manual_seed(0)
    plain = CrossEncoder.from_pretrained(str(tiny_bert_dir), 128, "full").eval()
    assert not plain.similarity_head and plain.similarity_log_scale is None
    plain.load_state_dict({k: v for k, v in similarity_encoder.state_dict().items() if k != "similarity_log_scale"})
    passes = packed(plain, "multi")
    difference = margins(similarity_encoder, passes) - margins(plain, passes)
    assert difference.abs().min() > 1e-3  # the similarity term is there, and only in one


def test_similarity_head_round_trip_and_files_from_before_it(tiny_bert_dir, similarity_encoder):
    files = similarity_encoder.to_files()
    assert srsly.json_loads(files[SETTINGS_FILE]) == {"pair_attention": "full", "similarity_head": True}
    copy = CrossEncoder.from_files(files).eval()
    assert copy.similarity_head and float(copy.similarity_log_scale.detach()) == 1.5
    passes = packed(copy, "parallel")
    assert torch.equal(margins(copy, passes), margins(similarity_encoder, passes))
    # A cross-encoder saved before the setting existed: no similarity file, no setting.
    torch.manual_seed(0)
    old = CrossEncoder.from_pretrained(str(tiny_bert_dir), 128, "isolated").to_files()
    old[SETTINGS_FILE] = srsly.json_dumps({"pair_attention": "isolated"}).encode("utf8")
    assert SIMILARITY_FILE not in old
    loaded = CrossEncoder.from_files(old)
    assert not loaded.similarity_head and loaded.pair_attention == "isolated"
