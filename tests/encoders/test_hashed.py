import torch

from spacy_arbo.encoders.hashed import HashedNgramTower, build_hashed_tower, hashed_ngrams
from spacy_arbo.encoders.templates import EntityInput, MentionInput


def test_hashed_ngrams_are_deterministic_and_windowed():
    uni, bi = hashed_ngrams("Wilson disease (WD)", 1000)
    assert len(uni) == 5 and len(bi) == 4
    assert (uni, bi) == hashed_ngrams("wilson DISEASE (wd)", 1000)
    last_two, _ = hashed_ngrams("a b c d", 1000, context_words=2, from_end=True)
    assert last_two == hashed_ngrams("c d", 1000)[0]
    assert hashed_ngrams("", 1000) == ([], [])


def test_shapes_empty_fields_and_seed():
    tower = build_hashed_tower(n_buckets=1000, embed_dim=8, out_dim=6, seed=3)()
    out = tower.encode_mentions([MentionInput("", "fever", ""), MentionInput("", "", "")])
    assert out.shape == (2, 6)
    # Both fields empty: every bag is zero, so only the bias remains (zero at init).
    assert torch.equal(out[1], torch.zeros(6))
    same = build_hashed_tower(n_buckets=1000, embed_dim=8, out_dim=6, seed=3)()
    torch.testing.assert_close(same.encode_entities([EntityInput("fever", "high")]),
                               tower.encode_entities([EntityInput("fever", "high")]))


def test_context_changes_the_mention_vector():
    tower = build_hashed_tower(n_buckets=1000, embed_dim=8, out_dim=6)()
    a, b = tower.encode_mentions([MentionInput("with", "fever", "today"), MentionInput("", "fever", "")])
    assert not torch.allclose(a, b)


def test_files_round_trip():
    tower = build_hashed_tower(n_buckets=1000, embed_dim=8, out_dim=6, seed=1)()
    with torch.no_grad():
        tower.embed.weight.add_(1.0)  # trained weights must survive, not the seed's
    again = HashedNgramTower.from_files(tower.to_files())
    entities = [EntityInput("wilson disease", "copper")]
    torch.testing.assert_close(again.encode_entities(entities), tower.encode_entities(entities))
