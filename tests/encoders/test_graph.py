"""GER's graph tower: the fusion, the graph's reach, sides, and serialization."""
import pytest
import torch

from spacy_arbo.encoders.graph import GraphTower, GraphAttentionLayer, _find
from spacy_arbo.encoders.hashed import HashedNgramTower
from spacy_arbo.encoders.templates import EntityInput, MentionInput
from spacy_arbo.encoders.transformer import TransformerTower
from spacy_arbo.util import ArboError

MENTIONS = [
    MentionInput("patients with", "fever", "and cough", (("fever", "and", "cough"),)),
    MentionInput("", "wilson disease", "", (("wilson disease", "is a", "metabolic disorder"),
                                           ("wilson disease", "also called", "wd"))),
    MentionInput("a", "cough", "", ()),
]
ENTITIES = [EntityInput("fever", "", (("fever", "is a", "high temperature"),)), EntityInput("cough", "", ())]


def graph_tower(tiny_bert_dir, **settings):
    torch.manual_seed(0)
    inner = TransformerTower.from_pretrained(str(tiny_bert_dir), "mean", 32, True)
    return GraphTower(inner, layers=2, heads=2, **settings).eval()


def test_zero_fusion_is_the_wrapped_tower(tiny_bert_dir):
    """GER eq. 10: BLINK is the special case lambda = 0."""
    tower = graph_tower(tiny_bert_dir, fusion=0.0)
    with torch.no_grad():
        torch.testing.assert_close(tower.encode_mentions(MENTIONS), tower.tower.encode_mentions(MENTIONS))
        torch.testing.assert_close(tower.encode_entities(ENTITIES), tower.tower.encode_entities(ENTITIES))


def test_triplets_change_the_vector_and_padding_does_not_leak(tiny_bert_dir):
    tower = graph_tower(tiny_bert_dir)
    bare = [MentionInput(m.left, m.mention, m.right) for m in MENTIONS]
    with torch.no_grad():
        with_units, without = tower.encode_mentions(MENTIONS), tower.encode_mentions(bare)
        alone = [tower.encode_mentions([m]) for m in MENTIONS]
    assert not torch.allclose(with_units[:2], without[:2])
    # The mention without triplets has the same graph (its central node only) either way.
    torch.testing.assert_close(with_units[2], without[2])
    # A text's vector does not depend on the other texts of its batch (more triplets, more padding).
    torch.testing.assert_close(torch.cat(alone), with_units, atol=1e-5, rtol=1e-5)


def test_phrases_outside_the_text_still_count(tiny_bert_dir):
    """'high temperature' is not in the entity's word pieces: it enters through the embedding layer."""
    tower = graph_tower(tiny_bert_dir)
    other = [EntityInput("fever", "", (("fever", "is a", "metabolic disorder"),))]
    with torch.no_grad():
        assert not torch.allclose(tower.encode_entities(ENTITIES[:1]), tower.encode_entities(other))


@pytest.mark.parametrize("sides,mentions_change,entities_change", [
    ("both", True, True), ("mentions", True, False), ("entities", False, True)])
def test_sides(tiny_bert_dir, sides, mentions_change, entities_change):
    tower = graph_tower(tiny_bert_dir, sides=sides)
    with torch.no_grad():
        m_changed = not torch.allclose(tower.encode_mentions(MENTIONS), tower.tower.encode_mentions(MENTIONS))
        e_changed = not torch.allclose(tower.encode_entities(ENTITIES), tower.tower.encode_entities(ENTITIES))
    assert (m_changed, e_changed) == (mentions_change, entities_change)


def test_attention_follows_edges_only():
    layer = GraphAttentionLayer(4, 2, 1.0, torch.Generator().manual_seed(0))
    nodes = torch.randn(1, 3, 4)
    adjacency = torch.eye(3, dtype=torch.bool)[None]
    adjacency[0, 0, 1] = adjacency[0, 1, 0] = True
    changed = nodes.clone()
    changed[0, 2] += 5.0  # node 2 is connected to nobody but itself
    out, out_changed = layer(nodes, adjacency, torch.relu), layer(changed, adjacency, torch.relu)
    torch.testing.assert_close(out[0, :2], out_changed[0, :2])
    assert not torch.allclose(out[0, 2], out_changed[0, 2])
    # Updating only the first nodes gives exactly their part of the full update.
    torch.testing.assert_close(layer(nodes, adjacency[:, :2], torch.relu, 2), out[:, :2])


def test_attention_matches_the_per_head_formula():
    """GER eq. 5-7 written out head by head, against the batched form."""
    layer = GraphAttentionLayer(4, 3, 2.0, torch.Generator().manual_seed(1))
    nodes, adjacency = torch.randn(1, 3, 4), torch.ones(1, 3, 3, dtype=torch.bool)
    adjacency[0, 0, 2] = adjacency[0, 2, 0] = False
    expected = torch.zeros(3, 4)
    for k in range(3):
        w, a_src, a_dst = (p[k] * 2.0 for p in (layer.weight, layer.source, layer.target))
        projected = nodes[0] @ w
        for i in range(3):
            neighbours = [j for j in range(3) if adjacency[0, i, j]]
            e = torch.stack([torch.nn.functional.leaky_relu(projected[i] @ a_src + projected[j] @ a_dst, 0.2)
                             for j in neighbours])
            expected[i] += (e.softmax(0)[:, None] * projected[neighbours]).sum(0) / 3
    torch.testing.assert_close(layer(nodes, adjacency, torch.relu)[0], torch.relu(expected))


def test_round_trip_gives_identical_vectors(tiny_bert_dir):
    tower = graph_tower(tiny_bert_dir, fusion=0.7, sides="mentions")
    with torch.no_grad():
        tower.layers[0].weight.add_(0.01)  # weights that differ from a fresh tower's
    loaded = GraphTower.from_files(tower.to_files()).eval()
    assert loaded.settings["sides"] == "mentions" and loaded.settings["layers"] == 2
    with torch.no_grad():
        torch.testing.assert_close(loaded.encode_mentions(MENTIONS), tower.encode_mentions(MENTIONS))
        torch.testing.assert_close(loaded.encode_entities(ENTITIES), tower.encode_entities(ENTITIES))


def test_needs_a_tower_with_word_pieces():
    with pytest.raises(ArboError, match="TransformerTower"):
        GraphTower(HashedNgramTower(64, 4, 4, 5, 0))


def test_find():
    assert _find([1, 2, 3, 2, 3], [2, 3]) == 1
    assert _find([1, 2, 3], [3, 4]) is None


@pytest.mark.parametrize("settings,message", [
    ({"sides": "left"}, "sides"), ({"layers": 0}, "layers"), ({"activation": "tanh"}, "activation"),
    ({"learn_rate_scale": 0.0}, r"^learn_rate_scale takes a number > 0; got 0.0\.$")])
def test_bad_settings_fail_when_the_config_is_resolved(settings, message):
    from spacy_arbo.encoders.graph import build_graph_tower

    with pytest.raises(ArboError, match=message):
        build_graph_tower(lambda: None, **settings)
