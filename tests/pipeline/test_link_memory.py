import pickle

import pytest
import spacy
from spacy.training import Example

from spacy_arbo.kb.entities import NIL
from spacy_arbo.pipeline.common.kb_versions import kb_version
from spacy_arbo.pipeline.link_memory import LinkMemory, fold_plurals, memory_key, unknown_ids
from spacy_arbo.tuning.memory_settings import tune_link_memory
from spacy_arbo.util import ArboError

from ..conftest import make_doc
from ..util import links, make_nlp, unlinked

FEVER, COUGH, DIABETES = "MESH:D005334", "MESH:D003371", "MESH:D003920"
# What a training corpus annotates: "sugar sickness" twice as diabetes, "spells" once each
# as fever and cough, "odd turn" as no KB entity, "fever and cough" as both.
TRAIN = [
    ("Sugar sickness and spells.", [("Sugar sickness", DIABETES), ("spells", FEVER)]),
    ("Her sugar-sickness, spells, an odd turn.", [("sugar-sickness", DIABETES), ("spells", COUGH),
                                                   ("odd turn", NIL)]),
    ("Then fever and cough.", [("fever and cough", f"{FEVER}|{COUGH}")]),
]
TEXT = "SUGAR SICKNESS, spells, an odd turn, fever and cough."
MENTIONS = [("SUGAR SICKNESS", ""), ("spells", ""), ("odd turn", ""), ("fever and cough", "")]


@pytest.fixture
def nlp():
    return spacy.blank("en")


def train_docs(nlp):
    return [make_doc(nlp, text, mentions) for text, mentions in TRAIN]


def memory_links(nlp, memory):
    doc = memory(make_doc(nlp, TEXT, MENTIONS))
    return [(e.text, e.kb_id_, e._.kb_ents) for e in doc.ents]


def test_keys_ignore_case_and_punctuation():
    assert memory_key("Sugar-Sickness ") == memory_key("sugar sickness") == "sugar sickness"


def test_plural_folding_drops_plural_endings_only():
    assert fold_plurals("hereditary ovarian cancers") == "hereditary ovarian cancer"
    assert fold_plurals("limb anomalies spinocerebellar ataxias abscesses") == \
        "limb anomaly spinocerebellar ataxia abscess"
    # Not plurals, or too short to tell: left alone.
    assert fold_plurals("aortic stenosis diffuse sclerosis hypertrophic pylorus aids ms") == \
        "aortic stenosis diffuse sclerosis hypertrophic pylorus aids ms"


def test_folded_plurals_pool_their_counts(nlp):
    docs = [make_doc(nlp, "Sugar sicknesses here.", [("Sugar sicknesses", DIABETES)]), *train_docs(nlp)]
    memory = LinkMemory(nlp.vocab, min_count=3)
    memory.add(docs)
    # Counted per text as written (memory.json keeps them apart), pooled only when folded.
    assert memory.counts["sugar sicknesses"] == {DIABETES: 1} and memory.counts["sugar sickness"] == {DIABETES: 2}
    assert [kb_id for _, kb_id, _ in memory_links(nlp, memory)] == ["", "", "", ""]
    folded = memory.with_settings(3, 0.8, True)
    assert folded.links["sugar sickness"] == (DIABETES, 1.0)
    assert [kb_id for _, kb_id, _ in memory_links(nlp, folded)] == [DIABETES, "", "", ""]
    with pytest.raises(ArboError, match="fold_plurals takes true or false"):
        LinkMemory(nlp.vocab, fold_plurals="yes")


def test_majority_ids_of_unambiguous_texts_are_written(nlp):
    memory = LinkMemory(nlp.vocab)
    assert memory.add(train_docs(nlp)) == 6
    assert memory.counts["spells"] == {FEVER: 1, COUGH: 1}
    assert memory_links(nlp, memory) == [
        ("SUGAR SICKNESS", DIABETES, [(DIABETES, 1.0)]),
        ("spells", "", None),  # half and half: below min_share, left to the linker
        ("odd turn", NIL, []),
        ("fever and cough", f"{FEVER}|{COUGH}", [(FEVER, 1.0), (COUGH, 1.0)]),
    ]
    # Annotated twice: only "sugar sickness" stays; the rest keep what they had.
    assert [kb_id for _, kb_id, _ in memory_links(nlp, memory.with_settings(2, 0.8, False))] == [DIABETES, "", "", ""]


def test_initialize_reads_the_gold_of_the_training_examples(nlp):
    nlp.add_pipe("link_memory", config={"min_share": 0.9})
    docs = train_docs(nlp)
    nlp.initialize(lambda: [Example(nlp.make_doc(d.text), d) for d in docs])
    memory = nlp.get_pipe("link_memory")
    assert (memory.min_share, len(memory.links)) == (0.9, 3)
    assert nlp(make_doc(nlp, TEXT, MENTIONS)).ents[0].kb_id_ == DIABETES


def test_round_trip_after_a_linker_keeps_every_link(tmp_path, toy_kb_dir):
    nlp = make_nlp(toy_kb_dir)
    nlp.add_pipe("link_memory", config={"min_count": 2})
    nlp.get_pipe("link_memory").add(train_docs(nlp))
    gold = unlinked(nlp, [make_doc(nlp, TEXT, MENTIONS)])
    before = links([nlp(gold[0].copy())])
    # The memory overrides the linker for its one text; the linker links the rest.
    assert before[0][0][1] == DIABETES and before[0][1][1] != ""
    assert nlp.pipe_names == ["arbo_linker", "link_memory"]
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("link_memory").min_count == 2
    assert links([loaded(gold[0].copy())]) == before
    copied = make_nlp(toy_kb_dir)
    copied.add_pipe("link_memory", config={"min_count": 2})
    copied.from_bytes(nlp.to_bytes())
    assert links([copied(gold[0].copy())]) == before
    assert links([pickle.loads(pickle.dumps(nlp))(gold[0].copy())]) == before


@pytest.mark.parametrize("config, message", [
    ({"min_count": 0}, "min_count takes a positive integer; got 0"),
    ({"min_share": 0.5}, r"min_share takes a number in \(0.5, 1\]; got 0.5"),
])
def test_bad_settings_are_named(nlp, config, message):
    with pytest.raises(ArboError, match=message):
        nlp.add_pipe("link_memory", config=config)
    with pytest.raises(ArboError, match="min_share takes a number"):
        LinkMemory(nlp.vocab, min_share="most")


def test_bad_memory_files_are_named(tmp_path, nlp):
    nlp.add_pipe("link_memory").add(train_docs(nlp))
    nlp.to_disk(tmp_path / "pipeline")
    file = tmp_path / "pipeline" / "link_memory" / "memory.json"
    file.write_text('{"spells": {"MESH:D005334": -1}}')
    with pytest.raises(ArboError, match="memory.json: expected {mention text: {kb id: positive count}}"):
        spacy.load(tmp_path / "pipeline")
    file.write_text("{")
    with pytest.raises(ArboError, match="memory.json: not valid JSON"):
        spacy.load(tmp_path / "pipeline")
    file.unlink()
    with pytest.raises(ArboError, match="memory.json is missing"):
        spacy.load(tmp_path / "pipeline")


def test_unknown_ids_are_the_parts_a_kb_lacks(nlp):
    memory = LinkMemory(nlp.vocab)
    memory.add(train_docs(nlp))
    assert unknown_ids(memory, lambda kb_id: kb_id != COUGH) == [COUGH]


def test_tuning_keeps_the_memory_only_when_it_helps_on_dev(toy_kb_dir):
    nlp = make_nlp(toy_kb_dir)
    memory = LinkMemory(nlp.vocab)
    memory.add(train_docs(nlp))
    dev = [make_doc(nlp, "Sugar sickness again.", [("Sugar sickness", DIABETES)])]
    linked = nlp(unlinked(nlp, dev)[0]).ents[0].kb_id_
    assert linked != DIABETES  # "sugar sickness" is no KB name: the toy linker misses it
    without, rows, best = tune_link_memory(nlp, memory, dev, grid=[(3, 1.0, False), (2, 1.0, False), (2, 1.0, True)])
    assert (without, rows, best) == (0.0, [(3, 1.0, False, 0.0), (2, 1.0, False, 1.0), (2, 1.0, True, 1.0)],
                                     (2, 1.0, False))
    # A dev set that the memory gets wrong: no setting is kept.
    dev = [make_doc(nlp, "Sugar sickness again.", [("Sugar sickness", linked)])]
    assert tune_link_memory(nlp, memory, dev, grid=[(1, 0.8, True)]) == (1.0, [(1, 0.8, True, 0.0)], None)
    with pytest.raises(ArboError, match="no linked gold mentions"):
        tune_link_memory(nlp, memory, [nlp.make_doc("No mentions here.")])


@pytest.mark.slow
def test_real_ncbi_memory_of_train_links_test_mentions(data_dir, tmp_path):
    """NCBI Disease test mentions whose text train annotates: train's majority id is nearly
    always right (what the dense retriever misses: docs/results.md, Link memory)."""
    from spacy_arbo.corpora import convert_named_corpus, read_docbin
    from spacy_arbo.kb.readers import read_kb

    kb = read_kb(data_dir / "ctd" / "CTD_diseases_2017-06-06.tsv.gz", "ctd")
    convert_named_corpus("ncbi", data_dir, tmp_path, kb=kb)
    nlp = spacy.blank("en")
    memory = LinkMemory(nlp.vocab, min_count=2, min_share=1.0)
    assert memory.add(read_docbin(tmp_path / "train.spacy", nlp.vocab)) == 5145
    gold = read_docbin(tmp_path / "test.spacy", nlp.vocab)
    linked = [(g.kb_id_, p.kb_id_) for doc in gold for g, p in zip(doc.ents, memory(unlinked(nlp, [doc])[0]).ents)
              if memory_key(g.text) in memory.links]
    assert len(memory.links) == 592
    assert (len(linked), sum(g == p for g, p in linked)) == (509, 508)


def test_the_memory_records_the_kb_it_was_added_to_and_keeps_it(tmp_path, toy_kb_dir, toy_kb):
    """`kb_versions`: a memory of another KB's ids links to entities the pipeline lacks."""
    nlp = make_nlp(toy_kb_dir)
    memory = LinkMemory(nlp.vocab)
    memory.add(train_docs(nlp))
    added = memory.add_to(nlp)
    assert added.kb_version == kb_version(toy_kb)
    nlp.to_disk(tmp_path / "pipeline")
    assert spacy.load(tmp_path / "pipeline").get_pipe("link_memory").kb_version == kb_version(toy_kb)
    copied = make_nlp(toy_kb_dir)
    copied.add_pipe("link_memory").from_bytes(added.to_bytes())
    assert copied.get_pipe("link_memory").kb_version == kb_version(toy_kb)
    copied.get_pipe("link_memory").kb_version = "0123456789abcdef"
    with pytest.raises(ArboError, match=r"link_memory was made from another KB \(version 0123456789abcdef\)"):
        copied(make_doc(copied, TEXT, MENTIONS))


def test_bytes_written_before_memories_recorded_their_kb_still_load(toy_kb_dir):
    import srsly

    nlp = make_nlp(toy_kb_dir)
    memory = LinkMemory(nlp.vocab)
    memory.add(train_docs(nlp))
    added = memory.add_to(nlp)
    old_bytes = srsly.msgpack_dumps(srsly.msgpack_loads(added.to_bytes())["counts"])
    copied = make_nlp(toy_kb_dir).add_pipe("link_memory").from_bytes(old_bytes)
    assert copied.counts == added.counts and copied.kb_version is None
    with pytest.raises(ArboError, match="expected"):
        make_nlp(toy_kb_dir).add_pipe("link_memory").from_bytes(srsly.msgpack_dumps([1, 2]))
