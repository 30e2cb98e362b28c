import pytest
import spacy

from spacy_arbo.pipeline.common.abbreviations import LongForms, corpus_long_forms
from spacy_arbo.util import ArboError

from ..conftest import make_doc
from ..util import links, make_nlp, unlinked

DEFINES = "Wilson disease (WD) is rare."
USES = "WD causes copper build-up."


def test_the_most_frequent_long_form_of_a_corpus_wins():
    nlp = spacy.blank("en")
    docs = [nlp(text) for text in [
        "Wilson disease (WD) is rare; WD is treatable.",  # one vote per doc, however often it is used
        "Wolman disease (WD) is rarer.",
        "Wilson disease (WD) again.",
        "Cystic fibrosis (CF) and Wolman disease (WD).",
    ]]
    assert corpus_long_forms(docs, LongForms(nlp.vocab)) == {"CF": "Cystic fibrosis", "WD": "Wilson disease"}
    # A tie goes to the alphabetically first long form, whatever the order of the docs.
    tie = [nlp("Wolman disease (WD) first."), nlp("Wilson disease (WD) second.")]
    assert corpus_long_forms(tie, LongForms(nlp.vocab)) == corpus_long_forms(tie[::-1], LongForms(nlp.vocab)) \
        == {"WD": "Wilson disease"}


def test_an_undefined_short_form_is_read_as_the_corpus_long_form_and_survives_round_trips(tmp_path, toy_kb_dir):
    nlp = make_nlp(toy_kb_dir)
    linker = nlp.get_pipe("arbo_linker")
    user = make_doc(nlp, USES, [("WD", "MESH:D006527")])
    assert [m.mention for m in linker.mention_inputs(list(user.ents))] == ["WD"]
    before = links([nlp(unlinked(nlp, [user])[0])])
    assert linker.set_corpus_long_forms([nlp.make_doc(DEFINES)]) == 1
    assert [m.mention for m in linker.mention_inputs(list(user.ents))] == ["Wilson disease"]
    after = links([nlp(unlinked(nlp, [user])[0])])
    # Read as its long form, the short form gets the long form's candidates (no context here).
    definer = make_doc(nlp, DEFINES, [("Wilson disease", "MESH:D006527")])
    long_form = links([nlp(unlinked(nlp, [definer])[0])])
    assert [link[1:] for link in after[0]] == [link[1:] for link in long_form[0]] != [link[1:] for link in before[0]]
    # Not with use_long_form off; a doc's own definition still comes first.
    linker.configure(use_long_form=False)
    assert [m.mention for m in linker.mention_inputs(list(user.ents))] == ["WD"]
    linker.configure(use_long_form=True)
    linker.corpus_long_forms["WD"] = "Wolman disease"
    own = make_doc(nlp, "Wilson disease (WD) is rare; WD causes copper build-up.",
                   [("Wilson disease", "MESH:D006527"), ("WD", "MESH:D006527"), ("WD", "MESH:D006527")])
    assert [m.mention for m in linker.mention_inputs(list(own.ents))] == ["Wilson disease"] * 3
    linker.corpus_long_forms["WD"] = "Wilson disease"
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("arbo_linker").corpus_long_forms == {"WD": "Wilson disease"}
    assert links([loaded(unlinked(loaded, [user])[0])]) == after
    from_bytes = make_nlp(toy_kb_dir).from_bytes(nlp.to_bytes())
    assert links([from_bytes(unlinked(from_bytes, [user])[0])]) == after


def test_bad_long_form_files_are_named(tmp_path, toy_kb_dir):
    nlp = make_nlp(toy_kb_dir)
    nlp.get_pipe("arbo_linker").set_corpus_long_forms([nlp.make_doc(DEFINES)])
    nlp.to_disk(tmp_path / "pipeline")
    path = tmp_path / "pipeline" / "arbo_linker" / "long_forms"
    path.write_text('{"WD": 3}')
    with pytest.raises(ArboError, match="long_forms are not an object of short form -> long form strings"):
        spacy.load(tmp_path / "pipeline")
    path.write_text("{")
    with pytest.raises(ArboError, match="long_forms: not valid JSON"):
        spacy.load(tmp_path / "pipeline")
