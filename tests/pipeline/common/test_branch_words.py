"""Words that place a condition in one branch of the KB's hierarchy, and the finder's names grown over them."""
import spacy

from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.pipeline.common.branch_words import branch_words, top_branches


def hierarchy_kb(extra=()):
    """Two organ branches under one root: eight "renal ..." names under the kidney's, eight "acute ..."
    names spread over both."""
    entities = [Entity("ROOT", "Diseases"), Entity("K", "Kidney Diseases", parents=("ROOT",)),
                Entity("N", "Nervous System Diseases", parents=("ROOT",)),
                Entity("H", "Hamartoma", ("hamartomas",), parents=("K", "N")),
                Entity("KC", "Kidney Cysts", parents=("K",))]
    entities += [Entity(f"R{i}", f"Renal Disorder {i}", parents=("KC",) if i % 2 else ("K",)) for i in range(8)]
    entities += [Entity(f"A{i}", f"Acute Disorder {i}", parents=("K" if i % 2 else "N",)) for i in range(8)]
    return EntityStore([*entities, *extra], source="toy")


def test_top_branches_are_the_roots_children_reached_through_any_parent():
    branches = top_branches(hierarchy_kb())
    assert branches["R1"] == {"K"} and branches["R0"] == {"K"} and branches["H"] == {"K", "N"}
    assert branches["ROOT"] == frozenset() and branches["K"] == {"K"}  # a branch lies under itself


def test_a_word_is_a_branch_word_when_most_of_its_entities_lie_in_one_branch():
    kb = hierarchy_kb()
    assert branch_words(kb, set()) == {"renal"}
    assert branch_words(kb, set(), min_share=0.5) == {"renal", "acute"}
    assert branch_words(kb, set(), min_entities=9) == set()
    assert branch_words(kb, {"renal"}) == set()  # a stop word is none
    assert branch_words(hierarchy_kb([Entity("X", "renal")]), set()) == set()  # nor a name of its own


def test_a_kb_without_a_hierarchy_or_with_a_cycle_gives_what_it_can():
    flat = EntityStore([Entity(f"R{i}", f"Renal Disorder {i}") for i in range(10)], source="toy")
    assert branch_words(flat, set()) == set()
    cyclic = EntityStore([Entity("A", "a", parents=("B",)), Entity("B", "b", parents=("A",)),
                          Entity("C", "c", parents=("A",))], source="toy")
    assert top_branches(cyclic) == {"A": frozenset(), "B": frozenset(), "C": frozenset()}


def test_the_kb_finder_grows_its_names_over_branch_words_and_keeps_them_saved(tmp_path):
    import srsly

    from spacy_arbo.pipeline.kb_mention_finder import MATCHERS_FILE

    def finder_nlp(**config):
        nlp = spacy.blank("en")
        nlp.add_pipe("kb_mention_finder", config=config).initialize(nlp=nlp, kb_loader=lambda _vocab: hierarchy_kb())
        return nlp

    def mentions(nlp):
        return [e.text for e in nlp(text).ents]

    text = "Renal hamartomas, acute hamartomas and a renal disorder 3."
    nlp = finder_nlp()
    assert mentions(nlp) == ["Renal hamartomas", "hamartomas", "renal disorder 3"]
    assert mentions(finder_nlp(modifiers=False)) == ["hamartomas", "hamartomas", "renal disorder 3"]
    nlp.to_disk(tmp_path / "saved")
    assert mentions(spacy.load(tmp_path / "saved")) == mentions(nlp)
    assert mentions(nlp.from_bytes(nlp.to_bytes())) == ["Renal hamartomas", "hamartomas", "renal disorder 3"]
    # A finder saved before branch words were grows nothing.
    path = tmp_path / "saved" / "kb_mention_finder" / MATCHERS_FILE
    saved = srsly.read_msgpack(path)
    del saved["branch_words"]
    srsly.write_msgpack(path, saved)
    assert mentions(spacy.load(tmp_path / "saved")) == ["hamartomas", "hamartomas", "renal disorder 3"]
    # Names given by hand are of no KB, so no hierarchy; the words of a condition's origin still count.
    nlp.get_pipe("kb_mention_finder").set_names(["hamartomas"])
    assert mentions(nlp) == ["hamartomas", "hamartomas"]
    assert [e.text for e in nlp("Familial hamartomas.").ents] == ["Familial hamartomas"]
