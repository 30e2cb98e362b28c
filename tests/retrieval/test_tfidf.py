import random
import time

import numpy as np
import pytest
import srsly

from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.retrieval.tfidf import HNSW_FILE, INDEX_FILE, TfidfAliasIndex
from spacy_arbo.retrieval.tfidf_format import CHECKSUM_FILE
from spacy_arbo.util import ArboError


@pytest.fixture(scope="module")
def toy_kb():
    return EntityStore([
        Entity("MESH:D003920", "Diabetes Mellitus", ("DM", "diabetes", "Diabetes Mellitus, Type 2")),
        Entity("MESH:D006527", "Wilson disease", ("Hepatolenticular Degeneration", "Wilson's disease")),
        Entity("MESH:D001943", "Breast Neoplasms", ("breast cancer", "Breast Tumors")),
        Entity("MESH:D006331", "Heart Diseases", ("cardiac disease", "heart disorder")),
    ])


@pytest.fixture(scope="module")
def toy_index(toy_kb):
    return TfidfAliasIndex.build(toy_kb)


def synthetic_kb(n_entities=120, seed=0):
    """A few hundred made-up aliases: 2-3 per entity, spelled from random syllables."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sta", "pho", "gen", "tri", "osis", "itis", "blast"]

    def word():
        return "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))

    return EntityStore([
        Entity(f"E{i}", f"{word()} {word()}", tuple(f"{word()} {word()}" for _ in range(rng.randint(1, 2))))
        for i in range(n_entities)
    ])


def typo(text, rng):
    i = rng.randrange(len(text))
    return text[:i] + text[i + 1:]


def test_exact_alias_ranks_its_entity_first(toy_kb, toy_index):
    scores, rows = toy_index.search(["Wilson disease", "BREAST CANCER"], k=2)
    assert rows[:, 0].tolist() == [toy_kb.row("MESH:D006527"), toy_kb.row("MESH:D001943")]
    assert scores[:, 0] == pytest.approx([1.0, 1.0], abs=1e-5)
    assert scores.dtype == np.float32 and rows.dtype == np.int64
    assert np.all(scores[:, 0] >= scores[:, 1])


def test_near_miss_spelling_finds_the_entity(toy_kb, toy_index):
    matches = toy_index.match(["hepatolenticular degenration", "diabetis melitus"], k=1)
    assert matches.entity_rows[:, 0].tolist() == [toy_kb.row("MESH:D006527"), toy_kb.row("MESH:D003920")]
    assert np.all((matches.scores > 0.4) & (matches.scores < 1.0))
    matched = [toy_index.alias_texts[i] for i in matches.alias_ids[:, 0]]
    assert matched == ["Hepatolenticular Degeneration", "Diabetes Mellitus"]


def test_each_entity_appears_once_scored_by_its_best_alias(toy_kb, toy_index):
    # "diabetes mellitus" matches three aliases of one entity.
    matches = toy_index.match(["diabetes mellitus type 2"], k=4)
    rows = matches.entity_rows[0][matches.entity_rows[0] >= 0]
    assert len(set(rows.tolist())) == len(rows)
    assert rows[0] == toy_kb.row("MESH:D003920")
    assert toy_index.alias_texts[matches.alias_ids[0, 0]] == "Diabetes Mellitus, Type 2"


def test_entities_are_found_when_one_entity_fills_the_shortlist():
    store = EntityStore([
        Entity("A", "heart disease", tuple(f"heart disease {i}" for i in range(10))),
        Entity("B", "heart failure"),
        Entity("C", "heart attack"),
    ])
    for backend in ("exact", "ann"):
        index = TfidfAliasIndex.build(store, backend=backend, shortlist=2)
        _, rows = index.search(["heart disease"], k=3)
        assert sorted(rows[0].tolist()) == [0, 1, 2], backend


def test_k_above_entity_count_pads(toy_index):
    scores, rows = toy_index.search(["heart disease"], k=10)
    found = rows[0] >= 0
    assert found.sum() == 4  # every toy entity shares some n-gram (" di"/"ase"...)
    assert np.all(found[:4]) and np.all(rows[0, 4:] == -1)
    assert np.all(np.isneginf(scores[0, 4:])) and np.all(np.isfinite(scores[0, :4]))


def test_empty_and_unknown_mentions_give_padding(toy_index):
    scores, rows = toy_index.search(["", "   ", "zzqx", "heart disease"], k=3)
    assert np.all(rows[:3] == -1) and np.all(np.isneginf(scores[:3]))
    assert rows[3, 0] >= 0
    scores, rows = toy_index.search([], k=3)
    assert scores.shape == rows.shape == (0, 3)


def test_bad_input_is_an_arbo_error(toy_index):
    with pytest.raises(ArboError, match="single string"):
        toy_index.search("heart disease", k=1)
    with pytest.raises(ArboError, match="k must be"):
        toy_index.search(["heart disease"], k=0)
    with pytest.raises(ArboError, match="Mention 1"):
        toy_index.search(["heart", None], k=1)
    with pytest.raises(ArboError, match="backend"):
        TfidfAliasIndex.build(EntityStore([Entity("A", "a b c")]), backend="nmslib")


def test_empty_kb_is_an_arbo_error():
    with pytest.raises(ArboError, match="no entity names"):
        TfidfAliasIndex.build(EntityStore())
    with pytest.raises(ArboError, match="TF-IDF"):
        TfidfAliasIndex.build(EntityStore([Entity("A", "x")]), min_df=2)


def test_exact_and_ann_agree_on_top1():
    store = synthetic_kb()
    rng = random.Random(1)
    mentions = [typo(text, rng) for text, _ in store.alias_pairs()]
    assert len(mentions) > 200
    exact = TfidfAliasIndex.build(store).match(mentions, k=5)
    ann = TfidfAliasIndex.build(store, backend="ann", ann_dim=64, shortlist=32).match(mentions, k=5)
    assert np.array_equal(ann.entity_rows[:, 0], exact.entity_rows[:, 0])
    np.testing.assert_allclose(ann.scores[:, 0], exact.scores[:, 0], atol=1e-5)
    # The typo'd alias still finds its own entity almost always.
    own = np.asarray([row for _, row in store.alias_pairs()])
    assert np.mean(exact.entity_rows[:, 0] == own) > 0.9


@pytest.mark.parametrize("backend", ["exact", "ann"])
def test_build_is_deterministic(backend):
    store = synthetic_kb(40)
    first = TfidfAliasIndex.build(store, backend=backend, ann_dim=32)
    second = TfidfAliasIndex.build(store, backend=backend, ann_dim=32)
    assert first.to_bytes() == second.to_bytes()


@pytest.mark.parametrize("backend", ["exact", "ann"])
def test_round_trips_give_identical_results(tmp_path, backend):
    store = synthetic_kb(60)
    index = TfidfAliasIndex.build(store, backend=backend, ann_dim=32, shortlist=8)
    mentions = [typo(text, random.Random(i)) for i, (text, _) in enumerate(store.alias_pairs())]
    mentions += ["", "zzzz"]
    expected = index.match(mentions, k=7)
    index.to_disk(tmp_path / "tfidf")
    assert (tmp_path / "tfidf" / INDEX_FILE).exists()
    assert (tmp_path / "tfidf" / HNSW_FILE).exists() == (backend == "ann")
    loaded = [
        TfidfAliasIndex.from_bytes(index.to_bytes(), expected_fingerprint=store.fingerprint()),
        TfidfAliasIndex.from_disk(tmp_path / "tfidf", expected_fingerprint=store.fingerprint()),
    ]
    for copy in loaded:
        assert copy.backend == backend and copy.alias_texts == index.alias_texts
        for got, want in zip(copy.match(mentions, k=7), expected):
            assert np.array_equal(got, want)


def test_fingerprint_mismatch_is_an_arbo_error(tmp_path, toy_index):
    other = EntityStore([Entity("X", "something else")])
    with pytest.raises(ArboError, match="different KB"):
        TfidfAliasIndex.from_bytes(toy_index.to_bytes(), expected_fingerprint=other.fingerprint())
    toy_index.to_disk(tmp_path / "tfidf")
    with pytest.raises(ArboError, match="different KB"):
        TfidfAliasIndex.from_disk(tmp_path / "tfidf", expected_fingerprint=other.fingerprint())


def test_missing_or_corrupt_files_name_the_file(tmp_path, toy_kb):
    with pytest.raises(ArboError, match=INDEX_FILE):
        TfidfAliasIndex.from_disk(tmp_path / "nowhere")
    path = tmp_path / "tfidf"
    TfidfAliasIndex.build(toy_kb, backend="ann", ann_dim=16).to_disk(path)
    (path / HNSW_FILE).write_bytes(b"not a faiss index")
    with pytest.raises(ArboError, match=HNSW_FILE):
        TfidfAliasIndex.from_disk(path)
    (path / INDEX_FILE).write_bytes(b"\x93garbage")
    with pytest.raises(ArboError, match=INDEX_FILE):
        TfidfAliasIndex.from_disk(path)
    with pytest.raises(ArboError, match="TF-IDF index"):
        TfidfAliasIndex.from_bytes(b"garbage")
    with pytest.raises(ArboError, match="format 99"):
        TfidfAliasIndex.from_bytes(srsly.msgpack_dumps({"format_version": 99}))
    with pytest.raises(ArboError, match="corrupt"):
        TfidfAliasIndex.from_bytes(srsly.msgpack_dumps({"format_version": 1, "hnsw": None}))


@pytest.mark.slow
def test_real_ncbi_disease_recall(data_dir):
    """The TF-IDF baseline on NCBI Disease test against CTD (DESIGN.md: R@1 0.719, R@64 0.894)."""
    from spacy_arbo.corpora import read_pubtator, parse_gold_ids
    from spacy_arbo.kb.readers import read_kb

    kb = read_kb(data_dir / "ctd" / "CTD_diseases_2017-06-06.tsv.gz", "ctd")
    mentions = [m for doc in read_pubtator(data_dir / "ncbi_disease" / "NCBItestset_corpus.txt")
                for m in doc.mentions]
    gold = [{kb.row(i) for i in map(kb.resolve, parse_gold_ids(m.ids_raw)) if i} for m in mentions]
    texts = [m.text for m in mentions]
    recalls = {}
    for backend in ("exact", "ann"):
        start = time.perf_counter()
        index = TfidfAliasIndex.build(kb, backend=backend)
        built = time.perf_counter()
        _, rows = index.search(texts, k=64)
        per_second = len(texts) / (time.perf_counter() - built)
        recalls[backend] = [np.mean([bool(g & set(r[:k].tolist())) for g, r in zip(gold, rows)])
                            for k in (1, 64)]
        print(f"{backend}: build {built - start:.1f}s, {per_second:.0f} mentions/s, "
              f"R@1 {recalls[backend][0]:.3f}, R@64 {recalls[backend][1]:.3f}")
    assert len(texts) == 960
    assert recalls["exact"][0] == pytest.approx(0.719, abs=0.01)
    assert recalls["exact"][1] == pytest.approx(0.894, abs=0.01)
    assert recalls["ann"][0] == pytest.approx(0.719, abs=0.015)
    assert recalls["ann"][1] > 0.84


def test_a_changed_byte_is_caught_by_the_checksum(tmp_path, toy_index):
    toy_index.to_disk(tmp_path / "tfidf")
    index_file = tmp_path / "tfidf" / INDEX_FILE
    data = index_file.read_bytes()
    assert data.count(b"Breast Tumors") == 1
    index_file.write_bytes(data.replace(b"Breast Tumors", b"Breast Tumorz"))  # still parses, into another alias
    with pytest.raises(ArboError, match=f"{INDEX_FILE}: contents do not match {CHECKSUM_FILE}"):
        TfidfAliasIndex.from_disk(tmp_path / "tfidf")
    (tmp_path / "tfidf" / CHECKSUM_FILE).write_text("[1, 2]")
    with pytest.raises(ArboError, match=f"{CHECKSUM_FILE}: expected an object"):
        TfidfAliasIndex.from_disk(tmp_path / "tfidf")


def test_indexes_saved_before_checksums_load_and_have_their_settings_checked(tmp_path, toy_kb, toy_index):
    toy_index.to_disk(tmp_path / "tfidf")
    (tmp_path / "tfidf" / CHECKSUM_FILE).unlink()
    loaded = TfidfAliasIndex.from_disk(tmp_path / "tfidf", expected_fingerprint=toy_kb.fingerprint())
    for got, want in zip(loaded.match(["breast tumor", "DM"], 3), toy_index.match(["breast tumor", "DM"], 3)):
        assert np.array_equal(got, want)
    data = srsly.read_msgpack(tmp_path / "tfidf" / INDEX_FILE)
    for broken in ({"shortlist": None}, {"analyzer": "char_wX"}, {"backend": "ann"}, {"ngram_range": [3]}):
        srsly.write_msgpack(tmp_path / "tfidf" / INDEX_FILE, {**data, "settings": {**data["settings"], **broken}})
        with pytest.raises(ArboError, match=f"{INDEX_FILE}: corrupt TF-IDF index|No TF-IDF index file"):
            TfidfAliasIndex.from_disk(tmp_path / "tfidf")
    srsly.write_msgpack(tmp_path / "tfidf" / INDEX_FILE, {**data, "settings": "exact"})
    with pytest.raises(ArboError, match=f"{INDEX_FILE}: corrupt TF-IDF index"):
        TfidfAliasIndex.from_disk(tmp_path / "tfidf")
