"""The entity-vector cache: a second initialize of the same KB and encoder reads what the first
encoded; a changed KB, encoder or setting never reads a stale entry; a damaged entry is encoded
again; processes writing one entry at once both succeed."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from spacy_arbo.confidence import label_free
from spacy_arbo.encoders import vector_cache
from spacy_arbo.encoders.templates import EntityInput
from spacy_arbo.encoders.vector_cache import VectorCache, cache_key, default_cache_dir
from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.util import ArboWarning

from ..conftest import TOY_ENTITIES, TOY_TEXTS, make_doc
from ..util import links, make_nlp, unlinked

TEXTS = [EntityInput(f"name {i}", f"description {i}") for i in range(5)]


class Encoder:
    """Counts the texts it encodes."""

    def __init__(self):
        self.calls = 0

    def __call__(self, texts):
        self.calls += 1
        return np.arange(len(texts) * 3, dtype=np.float32).reshape(len(texts), 3) + self.calls


def test_second_encode_reads_the_entry(tmp_path):
    cache, encode = VectorCache(tmp_path, min_texts=0), Encoder()
    first = cache.encode("enc", TEXTS, encode)
    second = cache.encode("enc", TEXTS, encode)
    assert encode.calls == 1 and np.array_equal(first, second)
    assert [p.name for p in tmp_path.iterdir()] == [f"{cache_key('enc', TEXTS)}.npy"]


@pytest.mark.parametrize("changed", ["encoder", "text", "description", "order", "one more"])
def test_anything_the_vectors_depend_on_changes_the_key(tmp_path, changed):
    cache, encode = VectorCache(tmp_path, min_texts=0), Encoder()
    cache.encode("enc", TEXTS, encode)
    key, texts = "enc", list(TEXTS)
    if changed == "encoder":
        key = "enc2"
    elif changed == "text":
        texts[2] = EntityInput("other name", texts[2].description)
    elif changed == "description":
        texts[2] = EntityInput(texts[2].title, "other")
    elif changed == "order":
        texts = texts[::-1]
    else:
        texts.append(EntityInput("new", ""))
    vectors = cache.encode(key, texts, encode)
    assert encode.calls == 2 and vectors[0, 0] == 2.0  # encoded anew, not read


def test_small_inputs_are_not_cached(tmp_path):
    cache, encode = VectorCache(tmp_path, min_texts=10), Encoder()
    cache.encode("enc", TEXTS, encode)
    cache.encode("enc", TEXTS, encode)
    assert encode.calls == 2 and not tmp_path.exists() or not any(tmp_path.iterdir())


@pytest.mark.parametrize("damage", [b"", b"not numpy at all", "wrong rows"])
def test_a_damaged_entry_is_encoded_again_and_replaced(tmp_path, damage):
    cache, encode = VectorCache(tmp_path, min_texts=0), Encoder()
    cache.encode("enc", TEXTS, encode)
    path = cache.path(cache_key("enc", TEXTS))
    if damage == "wrong rows":
        np.save(path, np.zeros((2, 3), dtype=np.float32))
    else:
        path.write_bytes(damage)
    with pytest.warns(ArboWarning, match="damaged entity-vector cache entry"):
        vectors = cache.encode("enc", TEXTS, encode)
    assert encode.calls == 2 and np.array_equal(np.load(path), vectors)


def test_least_recently_used_entries_are_removed(tmp_path):
    cache, encode = VectorCache(tmp_path, min_texts=0, max_entries=2), Encoder()
    for key in ("a", "b", "c"):
        cache.encode(key, TEXTS, encode)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{cache_key(k, TEXTS)}.npy" for k in ("b", "c"))


def test_cache_folder_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SPACY_ARBO_CACHE", str(tmp_path / "here"))
    assert default_cache_dir() == tmp_path / "here"
    monkeypatch.setenv("SPACY_ARBO_CACHE", "off")
    assert default_cache_dir() is None and vector_cache.default_cache() is None
    monkeypatch.delenv("SPACY_ARBO_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "spacy_arbo" / "vectors"


def test_two_processes_writing_one_entry_both_succeed(tmp_path):
    script = textwrap.dedent(f"""
        import time, numpy as np
        from spacy_arbo.encoders.templates import EntityInput
        from spacy_arbo.encoders.vector_cache import VectorCache
        texts = [EntityInput(f"name {{i}}", "") for i in range(2000)]
        def encode(batch):
            time.sleep(1.0)  # both processes find no entry, then both write one
            return np.ones((len(batch), 384), dtype=np.float32)
        vectors = VectorCache({str(tmp_path)!r}).encode("enc", texts, encode)
        assert vectors.shape == (2000, 384) and float(vectors.sum()) == 2000 * 384
        print("ok")
    """)
    processes = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(2)]
    results = [p.communicate(timeout=120) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], results
    assert [out.strip() for out, _ in results] == ["ok", "ok"]
    (entry,) = tmp_path.glob("*.npy")
    assert np.load(entry).shape == (2000, 384) and not list(tmp_path.glob("*.tmp"))


def test_a_second_initialize_reads_the_kb_vectors_and_links_the_same(tmp_path, monkeypatch):
    monkeypatch.setattr(vector_cache, "MIN_TEXTS", 0)
    monkeypatch.setenv("SPACY_ARBO_CACHE", str(tmp_path / "cache"))
    EntityStore([Entity(*e) for e in TOY_ENTITIES], source="toy").to_disk(tmp_path / "kb")
    import spacy

    blank = spacy.blank("en")
    docs = [make_doc(blank, text, mentions) for text, mentions in TOY_TEXTS]
    first = make_nlp(tmp_path / "kb")
    (entry,) = (tmp_path / "cache").glob("*.npy")

    encoded, fits = [], []
    original = vector_cache.VectorCache.write
    monkeypatch.setattr(vector_cache.VectorCache, "write", lambda self, key, v: (encoded.append(key),
                                                                                original(self, key, v)))
    fit = label_free.label_free_calibration
    monkeypatch.setattr(label_free, "label_free_calibration", lambda *a, **k: fits.append(1) or fit(*a, **k))
    second = make_nlp(tmp_path / "kb")
    assert encoded == [] and fits == []  # the vectors and the label-free confidence read, not made again
    assert links(second.pipe(unlinked(second, docs))) == links(first.pipe(unlinked(first, docs)))
    confidences = [[e._.kb_confidence for e in d.ents] for d in second.pipe(unlinked(second, docs))]
    assert confidences == [[e._.kb_confidence for e in d.ents] for d in first.pipe(unlinked(first, docs))]
    assert second.get_pipe("arbo_linker").confidence.fitted_for == first.get_pipe("arbo_linker").confidence.fitted_for

    # A damaged calibration entry is fitted again, with a warning.
    (entry_bin,) = (tmp_path / "cache").glob("*.bin")
    entry_bin.write_bytes(b"\x00garbage")
    with pytest.warns(ArboWarning, match="damaged cache entry"):
        make_nlp(tmp_path / "kb")
    assert fits == [1]

    # Another KB (one name changed) or other weights: encoded anew, never the stale entry.
    changed = [Entity(*e) for e in TOY_ENTITIES]
    changed[0] = Entity(changed[0].id, "Diabetes", changed[0].aliases, changed[0].definition)
    EntityStore(changed, source="toy").to_disk(tmp_path / "kb2")
    make_nlp(tmp_path / "kb2")
    make_nlp(tmp_path / "kb", seed=1)
    assert len(encoded) == 2 and entry.name[:-4] not in encoded and fits == [1, 1, 1]
