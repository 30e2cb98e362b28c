import pytest
import srsly

from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import META_FILE, STORE_FILE, EntityStore, Summary, create_kb_loader, open_store
from spacy_arbo.util import ArboError


def make_store():
    return EntityStore([
        Entity("MESH:D1", "Fever", ("Pyrexia", "fever"), "High temperature.", ("T1",)),
        Entity("MESH:D2", "Cough", alt_ids=("OMIM:42",), parents=("MESH:D1",)),
    ], source="toy")


def test_lookup_and_rows():
    store = make_store()
    assert len(store) == 2 and "MESH:D2" in store and "D2" not in store
    assert store.row("MESH:D2") == 1 and store.entity_at(0).name == "Fever"
    assert store.resolve("mesh:D2") == "MESH:D2" and store.resolve("OMIM:42") == "MESH:D2"
    with pytest.raises(KeyError, match="Unknown KB id 'X'"):
        store["X"]


def test_duplicate_and_empty_ids():
    with pytest.raises(ArboError, match="Duplicate KB id 'MESH:D1'"):
        EntityStore([Entity("MESH:D1", "a"), Entity("MESH:D1", "b")])
    with pytest.raises(ArboError, match="empty id"):
        EntityStore([Entity("", "a")])


def test_alias_pairs_dedupe_case_insensitively():
    assert make_store().alias_pairs() == [("Fever", 0), ("Pyrexia", 0), ("Cough", 1)]


def test_disk_and_bytes_round_trip(tmp_path):
    store = make_store()
    store.to_disk(tmp_path / "kb")
    loaded = EntityStore.from_disk(tmp_path / "kb")
    assert list(loaded) == list(store) and loaded.fingerprint() == store.fingerprint()
    assert loaded.resolve("OMIM:42") == "MESH:D2"
    assert list(EntityStore.from_bytes(store.to_bytes())) == list(store)
    assert list(create_kb_loader(tmp_path / "kb")()) == list(store)
    # Overwriting an existing store replaces it and leaves no temporary directory.
    store.subset(lambda e: e.id == "MESH:D1").to_disk(tmp_path / "kb")
    assert EntityStore.from_disk(tmp_path / "kb").ids == ["MESH:D1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb"]


def test_fingerprint_changes_with_content():
    store = make_store()
    assert store.fingerprint() != store.subset(lambda e: e.id == "MESH:D1").fingerprint()
    orphan = EntityStore([e if e.id == "MESH:D1" else Entity(e.id, e.name, alt_ids=e.alt_ids) for e in store])
    assert orphan.fingerprint() != store.fingerprint()


def test_stores_written_before_parents_load():
    data = make_store().to_dict()
    del data["parents"]
    assert [e.parents for e in EntityStore.from_dict(data)] == [(), ()]


def test_missing_and_corrupt_store(tmp_path):
    with pytest.raises(ArboError, match="No entity store at"):
        EntityStore.from_disk(tmp_path)
    (tmp_path / STORE_FILE).write_bytes(b"\xc1garbage")
    with pytest.raises(ArboError, match="cannot read entity store"):
        EntityStore.from_disk(tmp_path)


def test_a_store_file_that_parses_into_other_entities_is_named(tmp_path):
    make_store().to_disk(tmp_path / "kb")
    data = srsly.read_msgpack(tmp_path / "kb" / STORE_FILE)
    data["names"][1] = "Coughs"  # a damaged byte inside a name still parses
    srsly.write_msgpack(tmp_path / "kb" / STORE_FILE, data)
    with pytest.raises(ArboError, match=f"{STORE_FILE}: its entities do not match the fingerprint in .*{META_FILE}"):
        EntityStore.from_disk(tmp_path / "kb")


@pytest.mark.parametrize("content", [b"\xc5\x93 not utf-8", b"[1, 2]", b'{"fingerprint": 3}', b""])
def test_a_damaged_meta_file_is_named(tmp_path, content):
    make_store().to_disk(tmp_path / "kb")
    (tmp_path / "kb" / META_FILE).write_bytes(content)
    with pytest.raises(ArboError, match=f"kb/{META_FILE}: "):
        open_store(tmp_path / "kb")


def test_a_store_without_meta_file_loads(tmp_path):
    make_store().to_disk(tmp_path / "kb")
    (tmp_path / "kb" / META_FILE).unlink()
    assert EntityStore.from_disk(tmp_path / "kb").ids == ["MESH:D1", "MESH:D2"]


def test_fingerprint_and_stats_follow_added_entities():
    store = make_store()
    before = store.fingerprint(), store.stats()
    store.add(Entity("MESH:D3", "Pain"))
    assert store.fingerprint() != before[0] and store.stats()["entities"] == before[1]["entities"] + 1
    assert store.fingerprint() == Summary.of(store).fingerprint()
    store.stats()["entities"] = 0  # a copy: the store's own counts are kept
    assert store.stats()["entities"] == 3


def test_truncated_bytes_are_one_arbo_error():
    data = make_store().to_bytes()
    assert EntityStore.from_bytes(data).ids == ["MESH:D1", "MESH:D2"]
    with pytest.raises(ArboError, match="serialized entity store: cannot read it"):
        EntityStore.from_bytes(data[: len(data) // 2])
