import pytest
import spacy

from spacy_arbo.util import ArboError

from ..conftest import make_doc
from ..util import links, make_nlp, unlinked

# "sugar sickness" is no name of the toy KB; a training mention makes it one.
TEXT = "Her sugar sickness worsened with fever."
MENTIONS = [("sugar sickness", "MESH:D003920"), ("fever", "MESH:D005334")]


def test_dictionary_names_link_and_survive_a_round_trip(tmp_path, toy_kb_dir):
    nlp = make_nlp(toy_kb_dir, dictionary_offset=0.1)
    linker = nlp.get_pipe("arbo_linker")
    gold = make_doc(nlp, TEXT, MENTIONS)
    assert linker.set_dictionary([gold]) == 2
    doc = nlp(unlinked(nlp, [gold])[0])
    first = doc.ents[0]
    assert first.kb_id_ == "MESH:D003920"
    # The same text encoded by the same tower: cosine 1, plus the offset.
    assert first._.kb_candidates[0][1] == pytest.approx(1.1, abs=1e-4)
    assert linker.retriever.dictionary_records() == [["sugar sickness", "MESH:D003920"], ["fever", "MESH:D005334"]]
    before = links([doc])
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert links([loaded(unlinked(loaded, [gold])[0])]) == before
    from_bytes = make_nlp(toy_kb_dir, dictionary_offset=0.1).from_bytes(nlp.to_bytes())
    assert links([from_bytes(unlinked(from_bytes, [gold])[0])]) == before


def test_without_dictionary_the_mention_is_not_linked_to_it(toy_kb_dir):
    nlp = make_nlp(toy_kb_dir, dictionary_offset=0.1)
    gold = make_doc(nlp, TEXT, MENTIONS)
    top = nlp(unlinked(nlp, [gold])[0]).ents[0]._.kb_candidates[0][1]
    assert top < 1.0


def test_bad_dictionary_files_are_named(tmp_path, toy_kb_dir):
    nlp = make_nlp(toy_kb_dir)
    nlp.get_pipe("arbo_linker").set_dictionary([make_doc(nlp, TEXT, MENTIONS)])
    nlp.to_disk(tmp_path / "pipeline")
    dictionary = tmp_path / "pipeline" / "arbo_linker" / "indexes" / "dictionary.json"
    dictionary.write_text('[["sugar sickness", "MESH:NOPE"]]')
    with pytest.raises(ArboError, match="dictionary.json: entry 0 .*'MESH:NOPE', which the KB lacks"):
        spacy.load(tmp_path / "pipeline")
    dictionary.write_text("[[")
    with pytest.raises(ArboError, match="dictionary.json: not valid JSON"):
        spacy.load(tmp_path / "pipeline")
