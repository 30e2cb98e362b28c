"""Reliability (issue #15): no hang with worker processes, one-line errors for bad files and
settings, and outputs that a killed write leaves intact."""
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import spacy

from spacy_arbo.cli import apply_settings, main
from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.readers import write_jsonl
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.util import ArboError, atomic_path, clean_stale_temps

from .conftest import TOY_ENTITIES
from .util import make_nlp

ROOT = Path(__file__).resolve().parents[1]
HASHED_MODEL = {
    "@architectures": "spacy_arbo.DualEncoder.v1",
    "mention_tower": {"@architectures": "spacy_arbo.HashedNgramTower.v1", "n_buckets": 4096,
                      "embed_dim": 16, "out_dim": 16},
}


def run_python(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter at the repository root, without the caller's
    thread limits (OMP_NUM_THREADS=1 would hide the fork hang)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def hashed_pipeline(kb_dir: Path):
    nlp = spacy.blank("en")
    nlp.add_pipe("arbo_linker", config={"model": HASHED_MODEL})
    nlp.config["initialize"]["components"]["arbo_linker"] = {
        "kb_loader": {"@misc": "spacy_arbo.KBFromDir.v1", "path": str(kb_dir)}
    }
    nlp.initialize()
    return nlp


# 1. nlp.pipe(n_process=2) -------------------------------------------------------------

PIPE_SCRIPT = """
    import sys
    from pathlib import Path

    import torch

    from tests.conftest import TOY_TEXTS, make_doc
    from tests.test_reliability import hashed_pipeline

    # Two intra-op threads even on a one-CPU machine: the parent's pool is what hung children.
    torch.set_num_threads(2)
    nlp = hashed_pipeline(Path(sys.argv[1]))
    docs = [make_doc(nlp, text, mentions, with_ids=False) for text, mentions in TOY_TEXTS] * 16
    one = [[e.kb_id_ for e in doc.ents] for doc in nlp.pipe(docs)]
    two = [[e.kb_id_ for e in doc.ents] for doc in nlp.pipe(docs, n_process=2, batch_size=8)]
    assert all(one), one
    print("same" if one == two else f"differ: {one} != {two}")
"""


def test_pipe_with_two_processes_links_like_one(toy_kb_dir):
    try:
        result = run_python(PIPE_SCRIPT, str(toy_kb_dir), timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("nlp.pipe(n_process=2) hung (torch's thread pool in forked children)")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("same"), result.stdout


# 3a. damaged weights -------------------------------------------------------------------

@pytest.fixture
def saved_pipeline(tmp_path, toy_kb_dir) -> Path:
    hashed_pipeline(toy_kb_dir).to_disk(tmp_path / "pipeline")
    return tmp_path / "pipeline"


@pytest.mark.parametrize("damage", ["empty", "half", "last byte", "flipped"])
def test_damaged_weights_file_is_one_arbo_error(saved_pipeline, damage, capsys):
    weights = saved_pipeline / "arbo_linker" / "model"
    data = weights.read_bytes()
    damaged = {"empty": b"", "half": data[: len(data) // 2], "last byte": data[:-1],
               "flipped": data[:64] + bytes(b ^ 0xFF for b in data[64:])}[damage]
    weights.write_bytes(damaged)
    with pytest.raises(ArboError, match=r"arbo_linker/model: the dual encoder weights are corrupt, truncated"):
        spacy.load(saved_pipeline)
    assert main(["evaluate", str(saved_pipeline), str(saved_pipeline / "test.spacy")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "re-save the pipeline" in err


def test_truncated_weights_bytes_and_copies(saved_pipeline):
    model = spacy.load(saved_pipeline).get_pipe("arbo_linker").model
    data = model.to_bytes()
    copy = model.copy()
    with pytest.raises(ArboError, match=r"serialized dual encoder: the dual encoder weights are corrupt"):
        copy.from_bytes(data[: len(data) // 3])
    assert copy.from_bytes(data).to_bytes() == data


# 3b. evaluate --set and main() ---------------------------------------------------------

@pytest.mark.parametrize("setting,expected", [
    ("threshold=abc", "threshold takes a number or null; got 'abc'"),
    ("threshold=true", "threshold takes a number or null; got True"),
    ("min_similarity=[1]", "min_similarity takes a number or null; got [1]"),
    ("top_k=0", "top_k takes a positive integer; got 0"),
    ("top_k=2.5", "top_k takes an integer; got 2.5"),
    ("knn_mentions=true", "knn_mentions takes an integer; got True"),
    ("context_chars=-1", "context_chars takes an integer >= 0; got -1"),
    ("transductive=1", "transductive takes true or false; got 1"),
    ("index_aliases=yes", "index_aliases takes true or false; got 'yes'"),
    ("linking=3", "linking takes a string; got 3"),
])
def test_apply_settings_rejects_values_of_the_wrong_type(setting, expected, toy_kb_dir):
    linker = make_nlp(toy_kb_dir).get_pipe("arbo_linker")
    before = linker.settings
    with pytest.raises(ArboError, match="^" + re.escape(f"--set {setting}: {expected}")):
        apply_settings([linker], [setting])
    assert linker.settings == before


def test_apply_settings_passes_values_of_the_right_type(toy_kb_dir):
    nlp = make_nlp(toy_kb_dir)
    linker = nlp.get_pipe("arbo_linker")
    apply_settings([linker], ["threshold=0.5", "min_similarity=null", "top_k=3", "context_chars=0",
                              "transductive=true", "linking=clustering", "threshold=1"])
    expected = {"threshold": 1, "min_similarity": None, "top_k": 3, "context_chars": 0, "transductive": True,
                "linking": "clustering"}
    assert {k: linker.cfg[k] for k in expected} == expected
    # ...and into the pipeline's config, which a saved pipeline keeps.
    assert {k: nlp.config["components"]["arbo_linker"][k] for k in expected} == expected


def test_evaluate_with_a_bad_setting_is_one_line(saved_pipeline, capsys):
    assert main(["evaluate", str(saved_pipeline), str(saved_pipeline / "test.spacy"),
                 "--set", "threshold=abc"]) == 1
    err = capsys.readouterr().err
    assert err == "error: --set threshold=abc: threshold takes a number or null; got 'abc'.\n"


def test_main_reports_os_errors_in_one_line(tmp_path, capsys):
    source = tmp_path / "kb.jsonl"
    write_jsonl(EntityStore([Entity("MESH:D005334", "Fever")]), source)
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a directory")
    assert main(["build-kb", str(source), str(blocker / "kb")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {blocker}") and err.count("\n") == 1


# 4. atomic replace and stale temporary folders -------------------------------------------

def dead_pid() -> int:
    """The pid of a process that has exited."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_atomic_path_renames_the_old_directory_aside_before_deleting_it(tmp_path, monkeypatch):
    target = tmp_path / "kb"
    target.mkdir()
    (target / "old.txt").write_text("old")
    moves = []
    replace = os.replace

    def recording_replace(src, dst):
        moves.append((Path(src), Path(dst)))
        replace(src, dst)

    monkeypatch.setattr(os, "replace", recording_replace)
    with atomic_path(target) as tmp:
        tmp.mkdir()
        (tmp / "new.txt").write_text("new")
    (aside_src, aside_dst), (new_src, new_dst) = moves
    assert aside_src == target and aside_dst.name == "kb" and aside_dst.parent.name == "old"
    assert new_dst == target and new_src.parent.name == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb"]
    assert (target / "new.txt").read_text() == "new"


def test_atomic_path_keeps_the_old_directory_when_renaming_in_fails(tmp_path, monkeypatch):
    target = tmp_path / "kb"
    target.mkdir()
    (target / "old.txt").write_text("old")
    replace = os.replace

    def failing_replace(src, dst):
        if Path(dst) == target and Path(src).parent.name == "new":
            raise OSError("disk on fire")
        replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk on fire"):
        with atomic_path(target) as tmp:
            tmp.mkdir()
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb"]
    assert (target / "old.txt").read_text() == "old"


def test_atomic_path_removes_only_stale_temp_folders_of_its_own_path(tmp_path):
    target = tmp_path / "kb.json"
    pid = dead_pid()
    stale = tmp_path / f".kb.json.{pid}.abcd_123"
    (stale / "new" / "kb.json").mkdir(parents=True)
    legacy = tmp_path / ".kb.json.x1y2z3w4"  # written by versions before the pid in the name
    (legacy / "kb.json").mkdir(parents=True)
    kept = [
        tmp_path / f".kb.json.{os.getppid()}.abcd_123",  # its writer is alive
        tmp_path / ".kb.json.backup12",  # named like a legacy folder, but not laid out as one
        tmp_path / f".other.{pid}.abcd_123",  # another path's folder
        tmp_path / ".kb.json.bak",
    ]
    (kept[0] / "new").mkdir(parents=True)
    (kept[1] / "mine.txt").mkdir(parents=True)
    (kept[2] / "new").mkdir(parents=True)
    kept[3].mkdir()
    with atomic_path(target) as tmp:
        tmp.write_text("{}")
    assert not stale.exists() and not legacy.exists()
    assert all(path.exists() for path in kept)
    assert target.read_text() == "{}"


def test_clean_stale_temps_puts_back_an_output_left_aside(tmp_path):
    target = tmp_path / "kb"
    stale = tmp_path / f".kb.{dead_pid()}.abcdefgh"
    (stale / "old" / "kb").mkdir(parents=True)
    (stale / "old" / "kb" / "entities.msgpack").write_text("old")
    (stale / "new" / "kb").mkdir(parents=True)
    clean_stale_temps(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb"]
    assert (target / "entities.msgpack").read_text() == "old"


# A `python -m spacy_arbo build-kb` killed (os._exit, no cleanup) just before its N-th
# file-system step: every point of the write is tried, not a sample.
KILL_SCRIPT = """
    import atexit, os, runpy, shutil, sys

    import srsly

    kill_at, steps = int(sys.argv[1]), [0]

    def killing(owner, name):
        real = getattr(owner, name)

        def step(*args, **kwargs):
            steps[0] += 1
            if steps[0] == kill_at:
                os._exit(70)
            return real(*args, **kwargs)

        setattr(owner, name, step)

    for owner, name in [(os, "mkdir"), (os, "replace"), (shutil, "rmtree"),
                        (srsly, "write_msgpack"), (srsly, "write_json")]:
        killing(owner, name)
    atexit.register(lambda: print("steps", steps[0]))
    sys.argv = ["spacy_arbo", "build-kb", *sys.argv[2:]]
    runpy.run_module("spacy_arbo", run_name="__main__")
"""


def write_kb_source(path: Path, n: int) -> list:
    store = EntityStore([Entity(i, name, a, d) for i, name, a, d in TOY_ENTITIES[:n]])
    write_jsonl(store, path)
    return store.ids


def test_build_kb_killed_at_any_point_leaves_a_loadable_kb(tmp_path):
    old_ids = write_kb_source(tmp_path / "old.jsonl", 3)
    new_ids = write_kb_source(tmp_path / "new.jsonl", 6)
    kb = tmp_path / "out" / "kb"
    assert main(["build-kb", str(tmp_path / "old.jsonl"), str(kb)]) == 0
    finished = run_python(KILL_SCRIPT, "0", str(tmp_path / "new.jsonl"), str(kb))
    assert finished.returncode == 0, finished.stderr[-3000:]
    n_steps = int(finished.stdout.split("steps")[-1])
    assert n_steps >= 6 and EntityStore.from_disk(kb).ids == new_ids
    assert main(["build-kb", str(tmp_path / "old.jsonl"), str(kb)]) == 0
    outcomes = set()
    for kill_at in range(1, n_steps + 1):
        result = run_python(KILL_SCRIPT, str(kill_at), str(tmp_path / "new.jsonl"), str(kb))
        assert result.returncode == 70, (kill_at, result.stderr[-3000:])
        if not kb.exists():
            # Killed between moving the old KB aside and the new one in: the next
            # write puts the old one back.
            clean_stale_temps(kb)
        ids = EntityStore.from_disk(kb).ids
        assert ids in (old_ids, new_ids), kill_at
        outcomes.add("new" if ids == new_ids else "old")
        # The next run cleans what the killed one left and writes the KB again.
        assert main(["build-kb", str(tmp_path / "old.jsonl"), str(kb)]) == 0
        assert [p.name for p in kb.parent.iterdir()] == ["kb"], kill_at
        assert EntityStore.from_disk(kb).ids == old_ids
    assert outcomes == {"old", "new"}
