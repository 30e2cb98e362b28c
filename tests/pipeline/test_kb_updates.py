import numpy as np
import pytest
import spacy

from spacy_arbo.cli import main as cli_main
from spacy_arbo.kb.disk_store import DiskEntityStore
from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.readers import write_jsonl
from spacy_arbo.kb.store import EntityStore, open_store
from spacy_arbo.util import ArboError

from ..conftest import make_doc
from ..util import links, make_nlp, unlinked

MIGRAINE = Entity("MESH:D008881", "Migraine Disorders", ("migraine", "sick headache"), "Recurrent headaches.")
NEW_DOCS = [("A migraine and a fever.", [("migraine", "MESH:D008881"), ("fever", "MESH:D005334")]),
            ("Cough with sick headache.", [("Cough", "MESH:D003371"), ("sick headache", "MESH:D008881")])]


def new_docs(nlp):
    return unlinked(nlp, [make_doc(nlp, text, mentions) for text, mentions in NEW_DOCS])


def rebuilt_from_scratch(nlp, kb):
    """The same weights over `kb`, every entity encoded: what an update must equal."""
    linker = nlp.get_pipe("arbo_linker")
    linker.set_kb(kb)
    linker.refresh_index()
    return nlp


@pytest.mark.parametrize("cfg", [{}, {"index_aliases": True}, {"candidate_source": "hybrid"}])
def test_update_equals_a_rebuild_and_encodes_only_what_changed(tmp_path, toy_kb_dir, toy_kb, toy_docs, cfg):
    nlp = make_nlp(toy_kb_dir, **cfg)
    linker = nlp.get_pipe("arbo_linker")
    encoded = []
    encode = linker.encoder.encode_entities
    linker.encoder.encode_entities = lambda inputs, progress=False: encoded.append(len(inputs)) or encode(inputs)
    revised = Entity("MESH:D003371", "Cough", ("coughing", "tussis"))
    update = linker.update_kb([MIGRAINE, revised], remove=["MESH:D003920"])
    # Row 0 (removed) takes the last entity; Cough is replaced; Migraine is appended.
    assert linker.kb.ids == ["MESH:D006333", "MESH:D006527", "MESH:D015179", "MESH:D005334", "MESH:D003371",
                             "MESH:D008881"]
    assert update.encoded.tolist() == [0, 4, 5] and (update.added, update.replaced, update.removed) == (1, 1, 1)
    aliases = 2 + 2 + 2 if cfg.get("index_aliases") else 0  # heart failure, cough, migraine
    assert encoded == [3 + aliases]
    got = links(nlp.pipe(new_docs(nlp) + unlinked(nlp, toy_docs)))
    scratch = rebuilt_from_scratch(make_nlp(toy_kb_dir, **cfg), EntityStore(linker.kb))
    want = links(scratch.pipe(new_docs(scratch) + unlinked(scratch, toy_docs)))
    assert [[(t, i) for t, i, _ in doc] for doc in got] == [[(t, i) for t, i, _ in doc] for doc in want]
    for got_doc, want_doc in zip(got, want):
        for (_, _, got_cands), (_, _, want_cands) in zip(got_doc, want_doc):
            assert [c for c, _ in got_cands] == [c for c, _ in want_cands]
            np.testing.assert_allclose([s for _, s in got_cands], [s for _, s in want_cands], atol=1e-5)
    assert not any(c == "MESH:D003920" for doc in got for _, _, cands in doc for c, _ in cands)


def test_new_entities_are_linked_zero_shot_and_removed_ones_never(toy_kb_dir):
    nlp = make_nlp(toy_kb_dir, top_k=3, index_aliases=True)  # a mention equal to an alias scores 1
    assert [e.kb_id_ for d in nlp.pipe(new_docs(nlp)) for e in d.ents][0] != MIGRAINE.id
    nlp.get_pipe("arbo_linker").update_kb([MIGRAINE])
    assert [e.kb_id_ for d in nlp.pipe(new_docs(nlp)) for e in d.ents] == [i for _, m in NEW_DOCS for _, i in m]
    nlp.get_pipe("arbo_linker").update_kb(remove=[MIGRAINE.id])
    assert all(c != MIGRAINE.id for d in nlp.pipe(new_docs(nlp)) for e in d.ents for c, _ in e._.kb_candidates)


def test_update_of_a_disk_store_round_trips(tmp_path, toy_kb, toy_docs):
    kb = DiskEntityStore.write(iter(toy_kb), tmp_path / "kb")
    nlp = make_nlp(tmp_path / "kb")
    before = (tmp_path / "kb" / "entities.sqlite").read_bytes()
    nlp.get_pipe("arbo_linker").update_kb([MIGRAINE], remove=["MESH:D005334"], store_dir=tmp_path / "kb2")
    assert isinstance(nlp.get_pipe("arbo_linker").kb, DiskEntityStore)
    assert (tmp_path / "kb" / "entities.sqlite").read_bytes() == before and len(kb) == 6
    want = links(nlp.pipe(new_docs(nlp)))
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert links(loaded.pipe(new_docs(loaded))) == want
    assert MIGRAINE.id in loaded.get_pipe("arbo_linker").kb and "MESH:D005334" not in loaded.get_pipe("arbo_linker").kb
    with pytest.raises(ArboError, match="somewhere other than the store it reads"):
        nlp.get_pipe("arbo_linker").update_kb(remove=[MIGRAINE.id], store_dir=tmp_path / "kb2")


def test_failed_update_changes_nothing(toy_kb_dir, toy_docs):
    nlp = make_nlp(toy_kb_dir)
    linker = nlp.get_pipe("arbo_linker")
    want = links(nlp.pipe(unlinked(nlp, toy_docs)))

    def interrupted(inputs, progress=False):
        raise KeyboardInterrupt

    linker.encoder.encode_entities = interrupted
    with pytest.raises(KeyboardInterrupt):
        linker.update_kb([MIGRAINE], remove=["MESH:D005334"])
    assert len(linker.kb) == 6 and links(nlp.pipe(unlinked(nlp, toy_docs))) == want
    with pytest.raises(ArboError, match="Cannot remove 'MESH:D000000'"):
        linker.update_kb(remove=["MESH:D000000"])


def test_kb_add_and_remove_commands(tmp_path, toy_kb_dir, capsys):
    make_nlp(toy_kb_dir, index_aliases=True).to_disk(tmp_path / "pipeline")
    write_jsonl(EntityStore([MIGRAINE]), tmp_path / "new.jsonl")
    assert cli_main(["kb", "add", str(tmp_path / "pipeline"), str(tmp_path / "new.jsonl"),
                     "--output", str(tmp_path / "added")]) == 0
    assert "1 added, 0 replaced, 0 removed; 1 entity encoded (1 new); 7 entities in the KB" in capsys.readouterr().out
    nlp = spacy.load(tmp_path / "added")
    assert [e.kb_id_ for d in nlp.pipe(new_docs(nlp)) for e in d.ents] == [i for _, m in NEW_DOCS for _, i in m]
    assert len(open_store(tmp_path / "pipeline" / "arbo_linker" / "kb")) == 6  # the input is untouched
    assert cli_main(["kb", "remove", str(tmp_path / "added"), MIGRAINE.id, "MESH:D005334"]) == 0
    assert "0 added, 0 replaced, 2 removed" in capsys.readouterr().out
    assert len(spacy.load(tmp_path / "added").get_pipe("arbo_linker").kb) == 5
    assert cli_main(["kb", "remove", str(tmp_path / "added"), "NOPE"]) == 1
    assert "Cannot remove 'NOPE'" in capsys.readouterr().err


@pytest.mark.parametrize("source", ["tfidf", "dense", "hybrid"])
def test_kb_add_and_remove_work_for_every_candidate_source(tmp_path, toy_kb_dir, source):
    make_nlp(toy_kb_dir, candidate_source=source, index_aliases=True).to_disk(tmp_path / "pipeline")
    write_jsonl(EntityStore([MIGRAINE]), tmp_path / "new.jsonl")
    assert cli_main(["kb", "add", str(tmp_path / "pipeline"), str(tmp_path / "new.jsonl")]) == 0
    nlp = spacy.load(tmp_path / "pipeline")
    assert len(nlp.get_pipe("arbo_linker").kb) == 7
    linked = [e.kb_id_ for d in nlp.pipe(new_docs(nlp)) for e in d.ents]
    assert MIGRAINE.id in linked
    assert cli_main(["kb", "remove", str(tmp_path / "pipeline"), MIGRAINE.id]) == 0
    nlp = spacy.load(tmp_path / "pipeline")
    assert MIGRAINE.id not in nlp.get_pipe("arbo_linker").kb
    assert MIGRAINE.id not in [e.kb_id_ for d in nlp.pipe(new_docs(nlp)) for e in d.ents]
