"""arbo_linker with GER's graph tower: it learns, round-trips, and gives each side its triplets."""
import pytest
import spacy

from spacy_arbo.torch_model import get_module
from spacy_arbo.util import ArboError

from ..util import links, make_nlp, unlinked
from .test_training import train_toy

KNOWLEDGE_UNITS = {"@misc": "spacy_arbo.knowledge_units.v1"}


def graph_model(tiny_bert_dir, sides="both"):
    # The toy runs use learning rate 0.01, already fast for the fresh graph: no extra scale.
    return {
        "@architectures": "spacy_arbo.DualEncoder.v1",
        "mention_tower": {
            "@architectures": "spacy_arbo.GraphTower.v1", "layers": 2, "heads": 2, "sides": sides,
            "learn_rate_scale": 1.0,
            "tower": {"@architectures": "spacy_arbo.TransformerTower.v1", "name": str(tiny_bert_dir),
                      "max_length": 32},
        },
    }


def test_graph_linker_overfits_the_toy_kb_and_round_trips(tmp_path, toy_kb_dir, tiny_bert_dir):
    nlp, gold, losses = train_toy(toy_kb_dir, {"@losses": "spacy_arbo.in_batch.v1"}, steps=40,
                                  model=graph_model(tiny_bert_dir), knowledge_units=KNOWLEDGE_UNITS)
    assert losses[-1] < losses[0] / 4
    predicted = list(nlp.pipe(unlinked(nlp, gold)))
    assert [e.kb_id_ for d in predicted for e in d.ents] == [e.kb_id_ for d in gold for e in d.ents]
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert get_module(loaded.get_pipe("arbo_linker").model).knowledge_sides == ("mentions", "entities")
    assert links(loaded.pipe(unlinked(loaded, gold))) == links(predicted)


@pytest.mark.parametrize("objective", [
    {"@losses": "spacy_arbo.hard_negatives.v1", "k": 4},
    {"@losses": "spacy_arbo.fgsm.v1", "base": {"@losses": "spacy_arbo.proxy.v1", "negatives": "random", "k": 4}},
    {"@losses": "spacy_arbo.arborescence.v1", "k": 4},
], ids=["hard_negatives", "fgsm_proxy", "arborescence"])
def test_graph_linker_learns_with_other_objectives(toy_kb_dir, tiny_bert_dir, objective):
    nlp, gold, losses = train_toy(toy_kb_dir, objective, steps=60, model=graph_model(tiny_bert_dir),
                                  knowledge_units=KNOWLEDGE_UNITS)
    assert losses[-1] < losses[0] / 2
    predicted = [e.kb_id_ for d in nlp.pipe(unlinked(nlp, gold)) for e in d.ents]
    assert predicted == [e.kb_id_ for d in gold for e in d.ents]


@pytest.mark.parametrize("sides", ["mentions", "entities"])
def test_each_side_gets_triplets_only_when_its_tower_reads_them(toy_kb_dir, toy_docs, tiny_bert_dir, sides):
    nlp = make_nlp(toy_kb_dir, model=graph_model(tiny_bert_dir, sides), knowledge_units=KNOWLEDGE_UNITS,
                   context_chars=30)
    linker = nlp.get_pipe("arbo_linker")
    mentions = linker.mention_inputs(list(toy_docs[0].ents))
    wilson = linker.retriever.entity_inputs()[linker.kb.row("MESH:D006527")]
    if sides == "mentions":
        assert mentions[0].triplets[0] == ("diabetes mellitus", "often develop", "heart failure")
        assert wilson.triplets == ()
    else:
        assert all(m.triplets == () for m in mentions)
        assert wilson.triplets[:2] == (("Hepatolenticular Degeneration", "is", "Copper accumulates in the liver"),
                                       ("Hepatolenticular Degeneration", "also called", "Wilson disease"))


def test_graph_tower_without_knowledge_units_is_an_error(toy_kb_dir, tiny_bert_dir):
    with pytest.raises(ArboError, match="knowledge_units"):
        make_nlp(toy_kb_dir, model=graph_model(tiny_bert_dir))
