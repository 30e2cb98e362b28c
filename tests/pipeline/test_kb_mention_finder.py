import pytest
import spacy
import srsly
from spacy.tokens import Span

from spacy_arbo.kb.entities import NIL
from spacy_arbo.pipeline.kb_mention_finder import (drop_unlinked_proposals, is_short_form, last_word_forms,
                                                    name_variants)
from spacy_arbo.pipeline.common.mention_finders import mention_finders
from spacy_arbo.util import ArboError

from ..conftest import TOY_TEXTS, make_doc


def finder_nlp(toy_kb, **config):
    nlp = spacy.blank("en")
    finder = nlp.add_pipe("kb_mention_finder", config=config)
    finder.initialize(nlp=nlp, kb_loader=lambda _vocab: toy_kb)
    return nlp


def mentions(doc):
    return [(e.text, e.label_) for e in doc.ents]


def test_variants_cover_number_hyphens_spelling_and_inverted_names():
    assert last_word_forms("colorectal cancer") == {"colorectal cancer", "colorectal cancers"}
    assert last_word_forms("Colorectal Neoplasms") == {"Colorectal Neoplasms", "Colorectal Neoplasm"}
    assert last_word_forms("anomaly") == {"anomaly", "anomalies"}
    assert last_word_forms("aortic stenosis") == {"aortic stenosis", "aortic stenoses"}
    assert last_word_forms("Diseases") == {"Diseases", "Disease"}
    assert last_word_forms("abscesses") == {"abscesses", "abscess"}
    assert "Hemolytic Congenital Anemia" not in name_variants("Anemia, Hemolytic, Congenital")
    assert "Congenital Hemolytic Anemia" in name_variants("Anemia, Hemolytic, Congenital")
    assert {"X linked disorder", "haemolytic anaemia", "Liver Failure"} <= (
        name_variants("X-linked disorder") | name_variants("Hemolytic anemia") | name_variants("Liver Failure (LF)"))
    # A one-letter last word has no plural ("Hemophilia As" is no way to write it).
    assert name_variants("Hemophilia A") == {"Hemophilia A", "haemophilia A"}
    assert {"G6PD-deficient", "G6PD deficient", "Complement C7-deficient"} <= (
        name_variants("G6PD Deficiency") | name_variants("Deficiency, Complement C7"))
    assert name_variants("Deficiency") == {"Deficiency", "Deficiencies"}  # no bearer, no adjective
    assert {"Hypertensive", "Convulsive", "Epileptic"} <= (
        name_variants("Hypertension") | name_variants("Convulsions") | name_variants("Epilepsy"))
    # Other endings, short words and names of several words keep their noun.
    assert not {"Ischemic", "Droptic", "Visive", "Pulmonary Hypertensive"} & (
        name_variants("Ischemia") | name_variants("Dropsy") | name_variants("Vision")
        | name_variants("Pulmonary Hypertension"))


def test_finds_a_name_written_as_its_adjective():
    nlp = spacy.blank("en")
    finder = nlp.add_pipe("kb_mention_finder", config={"mode": "replace"})
    finder.set_names(["G6PD deficiency", "hemolytic anemia", "Hypertension"])
    doc = nlp("G6PD-deficient patients and G6PD deficient mice had hemolytic anemia; deficient diets did not. "
              "Hypertensive rats were hypertensive.")
    assert mentions(doc) == [("G6PD-deficient", "Disease"), ("G6PD deficient", "Disease"),
                             ("hemolytic anemia", "Disease"), ("Hypertensive", "Disease"), ("hypertensive", "Disease")]


def test_finds_kb_names_as_written_in_text(toy_kb):
    nlp = finder_nlp(toy_kb, mode="replace")
    doc = nlp("Colorectal cancers and Failure, Cardiac, with DIABETES; a dm patient.")
    assert mentions(doc) == [("Colorectal cancers", "Disease"), ("DIABETES", "Disease")]
    assert mentions(nlp("Cardiac failures.")) == [("Cardiac failures", "Disease")]
    # "DM" is an abbreviation: matched in its own case only.
    assert mentions(nlp("The DM cohort.")) == [("DM", "Disease")]


def test_defined_short_forms_are_proposed_wherever_they_occur(toy_kb):
    nlp = finder_nlp(toy_kb, mode="replace")
    text = "High fever (HF) came first; HF then passed."
    # "High fever" is no KB name, so its short form is not proposed; "Wilson disease (WLD)" is.
    assert [e.text for e in nlp(text).ents] == ["fever"]
    doc = nlp("Wilson disease (WLD) was found; WLD is rare.")
    assert [e.text for e in doc.ents] == ["Wilson disease", "WLD", "WLD"]


def test_a_name_inside_a_coordination_of_names_is_proposed_as_the_whole(toy_kb):
    nlp = finder_nlp(toy_kb, mode="replace")
    assert mentions(nlp("Colon and colorectal cancers run in families.")) == [
        ("Colon and colorectal cancers", "Disease")]
    assert mentions(nlp("Colon/colorectal cancer.")) == [("Colon/colorectal cancer", "Disease")]
    # Whole names listed stay several mentions; "lung cancer" is no KB name, so no growth.
    assert [e.text for e in nlp("Fever and coughing were reported.").ents] == ["Fever", "coughing"]
    assert [e.text for e in nlp("Lung and colorectal cancer.").ents] == ["colorectal cancer"]


def test_add_mode_keeps_the_recognizers_mentions(toy_kb):
    nlp = finder_nlp(toy_kb, mode="add")
    doc = make_doc(nlp, "Wilson disease and fever today.", [("Wilson disease and", "")], label="NER")
    doc = nlp.get_pipe("kb_mention_finder")(doc)
    assert mentions(doc) == [("Wilson disease and", "NER"), ("fever", "Disease")]
    assert [s.text for s in doc.spans["kb_mentions"]] == ["fever"]


def test_unlinked_proposals_are_dropped_and_the_recognizers_nil_kept(toy_kb):
    nlp = finder_nlp(toy_kb, mode="add")
    doc = make_doc(nlp, "An odd turn, fever and cough.", [("odd turn", "")], label="NER")
    doc = nlp.get_pipe("kb_mention_finder")(doc)
    assert [s.text for s in doc.spans["kb_mentions"]] == ["fever", "cough"]
    doc.ents = [Span(doc, e.start, e.end, label=e.label_, kb_id={"fever": NIL, "cough": "MESH:D003371"}.get(e.text, NIL))
                for e in doc.ents]
    doc = drop_unlinked_proposals(doc, "kb_mentions")
    assert [(e.text, e.kb_id_) for e in doc.ents] == [("odd turn", NIL), ("cough", "MESH:D003371")]
    assert [s.text for s in doc.spans["kb_mentions"]] == ["cough"]


def test_finds_the_toy_corpus_mentions(toy_kb):
    """Every gold mention of the toy texts is a KB name or its defined short form."""
    nlp = finder_nlp(toy_kb, mode="replace")
    for text, gold in TOY_TEXTS:
        assert [e.text for e in nlp(text).ents] == [surface for surface, _ in gold]


def test_round_trip(toy_kb, tmp_path):
    nlp = finder_nlp(toy_kb, mode="add", label="Condition")
    texts = [text for text, _ in TOY_TEXTS] + ["Colorectal Neoplasm and a DM patient."]
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    assert [mentions(d) for d in loaded.pipe(texts)] == [mentions(d) for d in nlp.pipe(texts)]
    assert loaded.get_pipe("kb_mention_finder").cfg == nlp.get_pipe("kb_mention_finder").cfg
    assert nlp.from_bytes(loaded.to_bytes()) is not None
    assert [mentions(d) for d in nlp.pipe(texts)] == [mentions(d) for d in loaded.pipe(texts)]


def test_a_loaded_finder_reads_its_matchers_and_an_older_one_remakes_them(toy_kb, tmp_path, monkeypatch):
    from spacy_arbo.pipeline.kb_mention_finder import MATCHERS_FILE, KBMentionFinder

    nlp = finder_nlp(toy_kb)
    texts = [text for text, _ in TOY_TEXTS] + ["Colorectal Neoplasm and a DM patient.", "Anemias, hemolytic."]
    expected = [mentions(d) for d in nlp.pipe(texts)]
    nlp.to_disk(tmp_path / "p")
    built = []
    original = KBMentionFinder._build
    monkeypatch.setattr(KBMentionFinder, "_build", lambda self: (built.append(1), original(self)))
    loaded = spacy.load(tmp_path / "p")
    assert built == [] and [mentions(d) for d in loaded.pipe(texts)] == expected
    (tmp_path / "p" / "kb_mention_finder" / MATCHERS_FILE).unlink()  # as saved before the matchers were
    older = spacy.load(tmp_path / "p")
    assert built == [1] and [mentions(d) for d in older.pipe(texts)] == expected
    (tmp_path / "p" / "kb_mention_finder" / MATCHERS_FILE).write_bytes(srsly.msgpack_dumps({"known": []}))
    with pytest.raises(ArboError, match=f"{MATCHERS_FILE}: kb_mention_finder's matchers are damaged"):
        spacy.load(tmp_path / "p")


def test_clear_errors(toy_kb, tmp_path):
    nlp = spacy.blank("en")
    finder = nlp.add_pipe("kb_mention_finder")
    with pytest.raises(ArboError, match="no KB names"):
        nlp("fever")
    with pytest.raises(ArboError, match="kb_loader"):
        finder.initialize(nlp=nlp)
    with pytest.raises(ArboError, match="mode"):
        spacy.blank("en").add_pipe("kb_mention_finder", config={"mode": "merge"})
    (tmp_path / "names.json").write_text('{"names": []}')
    with pytest.raises(ArboError, match="names.json.*cfg"):
        finder.from_disk(tmp_path)
    with pytest.raises(ArboError, match="kb_mention_finder's bytes.*cfg"):
        finder.from_bytes(srsly.msgpack_dumps({"names": ["fever"]}))


@pytest.mark.parametrize("types,label,expected", [
    ([("Chemical",), ("Drug", "Chemical")], None, ("Chemical", "the type every entity of the KB lists")),
    ([("Chemical",), ("Drug",)], None, ("Disease", "the default: the KB's entities list no one type; --label sets another")),
    ([(), ()], None, ("Disease", "the default: the KB's entities list no one type; --label sets another")),
    ([("Chemical",), ("Chemical",)], "Drug", ("Drug", "--label")),
])
def test_add_kb_finder_labels_mentions_with_the_kbs_type(tmp_path, types, label, expected):
    """add-kb-finder labelled a chemical KB's mentions Disease: the label is --label's, else the
    one type every entity lists, else kb_mention_finder's documented default."""
    from spacy_arbo.cli.pipeline import add_kb_finder
    from spacy_arbo.kb.entities import Entity
    from spacy_arbo.kb.store import EntityStore
    from spacy_arbo.pipeline.kb_mention_finder import DEFAULT_LABEL

    from ..util import make_nlp

    EntityStore([Entity("MESH:D001241", "Aspirin", types=types[0]),
                 Entity("MESH:D000082", "Acetaminophen", ("paracetamol",), types=types[1])]).to_disk(tmp_path / "kb")
    nlp = make_nlp(tmp_path / "kb", candidate_source="tfidf")
    assert add_kb_finder(nlp, label=label) == f"its mentions are labelled '{expected[0]}' ({expected[1]})"
    assert mentions(nlp("Aspirin or paracetamol.")) == [("Aspirin", expected[0]), ("paracetamol", expected[0])]
    assert DEFAULT_LABEL == spacy.blank("en").add_pipe("kb_mention_finder").cfg["label"] == "Disease"


def test_a_category_word_that_ends_many_names_is_not_proposed_alone(monkeypatch, tmp_path):
    from spacy_arbo.kb.entities import Entity
    from spacy_arbo.kb.store import EntityStore
    from spacy_arbo.pipeline.common import name_categories as categories
    from spacy_arbo.pipeline.kb_mention_finder import MATCHERS_FILE

    names = ["Disease", "Wilson Disease", "Lyme Disease", "Crohn Disease", "Syndrome", "Down Syndrome", "Cancer"]
    assert categories.name_categories([n.lower() for n in names], min_names=3) == {"disease"}
    kb = EntityStore([Entity(f"D{i}", name, [], "") for i, name in enumerate(names)], source="toy")
    text = "The disease, Wilson disease, and Down syndrome; a syndrome; diseases."
    found = [("disease", "Disease"), ("Wilson disease", "Disease"), ("Down syndrome", "Disease"),
             ("syndrome", "Disease"), ("diseases", "Disease")]
    assert mentions(finder_nlp(kb)(text)) == found
    monkeypatch.setattr(categories, "MIN_NAMES", 3)
    nlp = finder_nlp(kb)
    without = [found[1], found[2], found[3]]  # the category's plural is a category too
    assert mentions(nlp(text)) == without
    # Saved and loaded, with the threshold back where it was: the finder keeps its categories; one
    # saved before categories were read them off its names.
    nlp.to_disk(tmp_path / "saved")
    monkeypatch.setattr(categories, "MIN_NAMES", 300)
    assert mentions(spacy.load(tmp_path / "saved")(text)) == without
    path = tmp_path / "saved" / "kb_mention_finder" / MATCHERS_FILE
    saved = srsly.read_msgpack(path)
    del saved["categories"]
    srsly.write_msgpack(path, saved)
    assert mentions(spacy.load(tmp_path / "saved")(text)) == found


def test_an_abbreviation_the_doc_defines_as_something_else_is_not_proposed(toy_kb):
    """"DM" is a KB alias (diabetes); a doc that defines it as a chemical means the chemical."""
    nlp = finder_nlp(toy_kb, mode="replace")
    assert [e.text for e in nlp("Dimethyl malonate (DM) was given; DM levels rose.").ents] == []
    # A long form with a KB name in it keeps the alias; one that reads as a name proposes it everywhere.
    assert [e.text for e in nlp("Type 2 diabetes (DM) is common; DM rises.").ents] == ["Type 2 diabetes", "DM", "DM"]
    assert [e.text for e in nlp("Diabetes mellitus (DM) is common; DM rises.").ents] == [
        "Diabetes mellitus", "DM", "DM"]
    # Undefined, as clinical notes write it: proposed, unless short_forms is "defined".
    assert [e.text for e in nlp("The DM cohort.").ents] == ["DM"]
    defined_only = finder_nlp(toy_kb, mode="replace", short_forms="defined")
    assert [e.text for e in defined_only("The DM cohort.").ents] == []
    assert [e.text for e in defined_only("Diabetes mellitus (DM) is common; DM rises.").ents] == [
        "Diabetes mellitus", "DM", "DM"]
    with pytest.raises(ArboError, match="short_forms"):
        finder_nlp(toy_kb, short_forms="some")
    # A short name in mixed case is a name, not an abbreviation to define first.
    assert [is_short_form(text) for text in ("DM", "NF1", "SCA-1", "DiGeorge", "HbA1c")] == [True, True, True, False, False]


def test_an_abbreviation_ending_in_a_digit_is_proposed_only_where_defined():
    """"RB1" and "WT1" name genes far more often than the diseases a KB lists them for."""
    from spacy_arbo.kb.entities import Entity
    from spacy_arbo.kb.store import EntityStore

    kb = EntityStore([Entity("D1", "Retinoblastoma", ("RB1",)), Entity("D2", "Spinocerebellar Ataxia 3", ("SCA3",)),
                      Entity("D3", "Myotonic Dystrophy", ("DM",))], source="toy")
    nlp = finder_nlp(kb, mode="replace")
    assert [e.text for e in nlp("Mutations of RB1 in DM and SCA3.").ents] == ["DM"]
    assert [e.text for e in nlp("Spinocerebellar ataxia 3 (SCA3) is rare; SCA3 and RB1.").ents] == [
        "Spinocerebellar ataxia 3", "SCA3", "SCA3"]


def test_a_long_form_that_is_a_name_but_its_category_word_defines_a_short_form(monkeypatch):
    """"von Hippel-Lindau (VHL)" defines VHL as von Hippel-Lindau disease."""
    from spacy_arbo.kb.entities import Entity
    from spacy_arbo.kb.store import EntityStore
    from spacy_arbo.pipeline.common import name_categories as categories

    names = ["Disease", "Von Hippel-Lindau Disease", "Lyme Disease", "Crohn Disease"]
    kb = EntityStore([Entity(f"D{i}", name, [], "") for i, name in enumerate(names)], source="toy")
    monkeypatch.setattr(categories, "MIN_NAMES", 3)
    text = "Families with von Hippel-Lindau (VHL) were seen; VHL is rare."
    assert [e.text for e in finder_nlp(kb, mode="replace")(text).ents] == ["VHL", "VHL"]
