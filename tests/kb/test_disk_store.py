import itertools
import os
import pickle
import shutil
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import spacy
import srsly

from spacy_arbo.cli import main
from spacy_arbo.kb import disk_store
from spacy_arbo.kb.disk_store import DB_FILE, IDS_FILE, DiskEntityStore, IdView
from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.readers import build_kb, read_kb, write_jsonl
from spacy_arbo.kb.store import META_FILE, EntityStore, create_kb_loader, open_store
from spacy_arbo.retrieval.tfidf import TfidfAliasIndex
from spacy_arbo.util import ArboError

from ..test_reliability import KillServer, kill_at_every_step, write_kb_source
from ..util import links, make_nlp, unlinked

ENTITIES = [
    Entity("MESH:D1", "Fever", ("Pyrexia", "fever"), "High temperature.", ("T1",)),
    Entity("MESH:D2", "Cough", alt_ids=("OMIM:42", "mesh:D000009"), parents=("MESH:D1",)),
    # Claims OMIM:42 second (D2 keeps it) and the first entity's id as an alt id.
    Entity("MESH:D3", "Chest pain", ("angina-like pain",), types=("T2", "T3"), alt_ids=("OMIM:42", "MESH:D1")),
    Entity("UMLS:Ünï", "Ünïcode | name", ('quote " and \\ backslash', "tab\tseparated")),
    Entity("C0000005", ""),
]


@pytest.fixture
def stores(tmp_path):
    return EntityStore(ENTITIES, source="toy"), DiskEntityStore.write(iter(ENTITIES), tmp_path / "kb", source="toy")


def test_reader_methods_match_the_in_memory_store(stores, tmp_path):
    memory, disk = stores
    assert len(disk) == len(memory) and list(disk) == list(memory)
    assert list(disk.ids) == memory.ids and disk.ids[-1] == memory.ids[-1] and disk.ids[1:3] == memory.ids[1:3]
    assert [disk.ids[np.int64(row)] for row in range(len(disk))] == memory.ids
    for row, entity_id in enumerate(memory.ids):
        assert disk.row(entity_id) == row and disk[entity_id] == memory[entity_id]
        assert disk.entity_at(row) == memory.entity_at(row) and entity_id in disk
    assert disk.entity_at(-1) == memory.entity_at(-1)
    for missing in ("MESH:D9", "mesh:D1", "", 7, None):
        assert (missing in disk) is (missing in memory) is False
    raw_ids = ["MESH:D1", " D000009 ", "mesh:D000009", "OMIM:42", "omim:42", "MESH:D3", "UMLS:Ünï",
               "C0000005", "c0000005", "MESH:D9", ""]
    assert [disk.resolve(i) for i in raw_ids] == [memory.resolve(i) for i in raw_ids]
    assert disk.resolve("OMIM:42") == "MESH:D2"  # the first entity to claim an alt id keeps it
    assert disk.alias_pairs() == memory.alias_pairs()
    assert disk.stats() == memory.stats()
    assert disk.fingerprint() == memory.fingerprint()
    keep = lambda e: bool(e.aliases)  # noqa: E731
    assert list(disk.subset(keep)) == list(memory.subset(keep)) and disk.subset(keep).source == "toy"
    assert disk.source == "toy" and disk.path == tmp_path / "kb"
    with pytest.raises(KeyError, match="Unknown KB id 'X'"):
        disk["X"]
    with pytest.raises(KeyError):
        disk.row("X")
    with pytest.raises(IndexError, match="out of range"):
        disk.entity_at(len(disk))


def test_fingerprint_equals_the_in_memory_stores_so_indexes_validate(toy_kb, tmp_path):
    disk = DiskEntityStore.write(iter(toy_kb), tmp_path / "kb", source=toy_kb.source)
    assert disk.fingerprint() == toy_kb.fingerprint() and disk.stats() == toy_kb.stats()
    TfidfAliasIndex.build(toy_kb).to_disk(tmp_path / "tfidf")
    TfidfAliasIndex.from_disk(tmp_path / "tfidf", expected_fingerprint=disk.fingerprint())


def test_disk_and_bytes_round_trips(stores, tmp_path):
    memory, disk = stores
    disk.to_disk(tmp_path / "copy")
    copy = DiskEntityStore.from_disk(tmp_path / "copy")
    assert list(copy) == list(memory) and copy.fingerprint() == memory.fingerprint() and copy.source == "toy"
    disk.to_disk(disk.path)  # onto itself: nothing to do
    assert list(DiskEntityStore.from_disk(disk.path)) == list(memory)
    # Bytes are the in-memory layout: they load as an EntityStore.
    for loaded in (EntityStore.from_bytes(disk.to_bytes()), DiskEntityStore.from_bytes(disk.to_bytes())):
        assert type(loaded) is EntityStore and list(loaded) == list(memory)
    unpickled = pickle.loads(pickle.dumps(disk))
    assert type(unpickled) is DiskEntityStore and list(unpickled) == list(memory)
    # Overwriting replaces the store and leaves no temporary folder.
    DiskEntityStore.write(ENTITIES[:1], tmp_path / "copy")
    assert list(open_store(tmp_path / "copy").ids) == ["MESH:D1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "kb"]


def test_open_store_opens_either_kind(stores, tmp_path):
    memory, disk = stores
    memory.to_disk(tmp_path / "memory")
    assert type(open_store(tmp_path / "memory")) is EntityStore
    assert type(open_store(disk.path)) is DiskEntityStore
    assert type(create_kb_loader(disk.path)()) is DiskEntityStore
    with pytest.raises(ArboError, match=r"No entity store at .*build one with `python -m spacy_arbo build-kb`"):
        open_store(tmp_path / "empty")


def break_meta(path, **changes):
    srsly.write_json(path / META_FILE, {**srsly.read_json(path / META_FILE), **changes})


@pytest.mark.parametrize("damage,file,message", [
    (lambda p: break_meta(p, format_version=2), META_FILE, "format version 2 is not supported"),
    (lambda p: (p / META_FILE).write_text("{not json"), META_FILE, "cannot read"),
    (lambda p: break_meta(p, fingerprint=None), META_FILE, "field 'fingerprint'"),
    (lambda p: (p / META_FILE).unlink(), META_FILE, "No entity store at"),
    (lambda p: (p / DB_FILE).write_bytes(b"garbage" * 1000), DB_FILE, "cannot read the entity store"),
    (lambda p: (p / DB_FILE).unlink(), DB_FILE, "missing"),
    (lambda p: (p / IDS_FILE).write_bytes(b"\x93NUMPY garbage"), IDS_FILE, "cannot read the entity ids"),
    (lambda p: (p / IDS_FILE).unlink(), IDS_FILE, "cannot read the entity ids"),
    (lambda p: break_meta(p, count=4), IDS_FILE, "holds 5 ids, but .* says 4 entities"),
    (lambda p: np.save(p / IDS_FILE, np.array([b"a"] * 4)) or break_meta(p, count=4), DB_FILE, "holds 5 rows"),
])
def test_damaged_stores_are_errors_naming_the_file(stores, damage, file, message):
    path = stores[1].path
    damage(path)
    with pytest.raises(ArboError, match=message) as err:
        open_store(path)
    assert str(path / file) in str(err.value) or (file == META_FILE and str(path) in str(err.value))


def failing_after(n):
    yield from ENTITIES[:n]
    raise RuntimeError("the reader failed")


@pytest.mark.parametrize("batch_size", [2, 1000])
def test_a_failed_write_leaves_the_previous_store(stores, tmp_path, monkeypatch, batch_size):
    monkeypatch.setattr(disk_store, "BATCH_SIZE", batch_size)
    memory, disk = stores
    with pytest.raises(RuntimeError, match="the reader failed"):
        DiskEntityStore.write(failing_after(4), disk.path)
    late_duplicate = [*ENTITIES, Entity("X1", "x"), Entity("MESH:D2", "again")]
    with pytest.raises(ArboError, match=r"Duplicate KB id 'MESH:D2' \(entity 'again'\)") as err:
        DiskEntityStore.write(late_duplicate, disk.path)
    assert (err.value.row, err.value.first_row) == (6, 1)
    with pytest.raises(ArboError, match="has an empty id"):
        DiskEntityStore.write([*ENTITIES[:3], Entity("", "nameless")], disk.path)
    loaded = open_store(disk.path)
    assert list(loaded) == list(memory) and loaded.fingerprint() == memory.fingerprint()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb"]


def test_build_kb_streams_into_a_disk_store_with_the_readers_checks(tmp_path, monkeypatch, capsys):
    write_jsonl(EntityStore(ENTITIES[:4]), tmp_path / "kb.jsonl")  # the readers require a name
    assert main(["build-kb", str(tmp_path / "kb.jsonl"), str(tmp_path / "disk"), "--store", "disk"]) == 0
    assert "4 entities" in capsys.readouterr().out
    disk, memory = open_store(tmp_path / "disk"), read_kb(tmp_path / "kb.jsonl")
    assert type(disk) is DiskEntityStore and list(disk) == list(memory) and disk.source == memory.source
    # A duplicate id names both lines, also when the writer meets it in a later batch.
    monkeypatch.setattr(disk_store, "BATCH_SIZE", 2)
    lines = (tmp_path / "kb.jsonl").read_text().splitlines()
    (tmp_path / "kb.jsonl").write_text("\n".join([*lines, lines[1]]) + "\n")
    for store in ("memory", "disk"):
        with pytest.raises(ArboError, match=r"kb.jsonl:5: duplicate id 'MESH:D2' \(first defined on line 2\)"):
            build_kb(tmp_path / "kb.jsonl", tmp_path / "disk", store=store)
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ArboError, match="empty.jsonl: no entities found"):
        build_kb(tmp_path / "empty.jsonl", tmp_path / "disk", store="disk")
    assert list(open_store(tmp_path / "disk")) == list(memory)


def test_build_kb_disk_killed_at_any_point_leaves_a_loadable_kb(tmp_path):
    ids = {"old": write_kb_source(tmp_path / "old.jsonl", 3), "new": write_kb_source(tmp_path / "new.jsonl", 6)}
    kb = tmp_path / "out" / "kb"

    def version(path):
        store = open_store(path)
        assert type(store) is DiskEntityStore
        return {tuple(v): k for k, v in ids.items()}[tuple(store.ids)]

    def write_old():
        assert main(["build-kb", str(tmp_path / "old.jsonl"), str(kb), "--store", "disk"]) == 0

    server = KillServer(tmp_path / "kill-server.log")
    try:
        command = ("-m", "spacy_arbo", "build-kb", str(tmp_path / "new.jsonl"), str(kb), "--store", "disk")
        assert kill_at_every_step(server, command, kb, write_old, version) >= 6
    finally:
        server.close()


def test_a_linker_over_a_disk_store_saves_and_loads_it_without_materialising(tmp_path, toy_kb, toy_kb_dir, toy_docs):
    DiskEntityStore.write(iter(toy_kb), tmp_path / "disk_kb", source="toy")
    nlp = make_nlp(tmp_path / "disk_kb", candidate_source="hybrid")
    assert type(nlp.get_pipe("arbo_linker").kb) is DiskEntityStore
    before = links(nlp.pipe(unlinked(nlp, toy_docs)))
    in_memory = make_nlp(toy_kb_dir, candidate_source="hybrid")
    assert links(in_memory.pipe(unlinked(in_memory, toy_docs))) == before
    nlp.to_disk(tmp_path / "pipeline")
    shutil.rmtree(tmp_path / "disk_kb")  # the pipeline brings its own copy
    loaded = spacy.load(tmp_path / "pipeline")
    kb = loaded.get_pipe("arbo_linker").kb
    assert type(kb) is DiskEntityStore and kb.path == tmp_path / "pipeline" / "arbo_linker" / "kb"
    after = links(loaded.pipe(unlinked(loaded, toy_docs)))
    assert [[k for _, k, _ in doc] for doc in after] == [[k for _, k, _ in doc] for doc in before]
    assert after == before and all(cands for doc in before for _, _, cands in doc)


def test_ids_and_iteration_do_not_build_every_record(stores, monkeypatch):
    memory, disk = stores
    assert isinstance(disk.ids, IdView) and not isinstance(disk.ids, list) and disk.ids is disk.ids
    built = []
    monkeypatch.setattr(disk_store, "_entity", lambda record: built.append(record) or Entity(record[0], record[1]))
    assert list(disk.ids) == memory.ids and len(disk) == 5 and disk.fingerprint() and disk.stats()
    assert built == []
    assert [e.id for e in itertools.islice(disk, 2)] == memory.ids[:2] and len(built) == 2
    # The in-memory store keeps its id list too, until an entity is added.
    ids = memory.ids
    assert memory.ids is ids
    memory.add(Entity("NEW", "new"))
    assert memory.ids[-1] == "NEW" and ids[-1] != "NEW"


def test_reads_from_threads_and_forked_children(stores):
    memory, disk = stores
    assert disk.entity_at(0) == memory.entity_at(0)  # the parent's connection is open now
    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(disk.entity_at, range(len(disk)))) == list(memory)
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        ok = disk.resolve("omim:42") == "MESH:D2" and list(disk) == list(memory)
        os.write(writer, b"1" if ok and disk._connection is not None else b"0")
        os._exit(0)
    os.close(writer)
    os.waitpid(pid, 0)
    with os.fdopen(reader) as result:
        assert result.read() == "1"


@pytest.mark.parametrize("file,content", [(IDS_FILE, b""), (META_FILE, b"\xc5\x93 not utf-8"), (META_FILE, b"[1, 2]")])
def test_empty_or_undecodable_files_are_named(stores, file, content):
    path = stores[1].path
    (path / file).write_bytes(content)
    with pytest.raises(ArboError, match=f"{path / file}: "):
        open_store(path)
