"""Reliability (issue #15): no hang with worker processes, one-line errors for bad files and
settings, and outputs that a killed write leaves intact."""
import json
import os
import re
import select
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

from .conftest import TOY_ENTITIES, TOY_TEXTS, make_doc
from .util import links, make_nlp, unlinked

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


def test_missing_weights_file_is_one_arbo_error_not_the_untrained_encoder(saved_pipeline, tmp_path, toy_kb_dir):
    (saved_pipeline / "arbo_linker" / "model").unlink()
    with pytest.raises(ArboError, match=r"arbo_linker: the linker's weights file 'model' is missing"):
        spacy.load(saved_pipeline)
    # A TF-IDF linker never builds its encoder: it saves that as such, and loads without it too
    # (as earlier versions saved it).
    nlp = spacy.blank("en")
    nlp.add_pipe("arbo_linker", config={"candidate_source": "tfidf", "index_aliases": True})
    nlp.config["initialize"]["components"]["arbo_linker"] = {
        "kb_loader": {"@misc": "spacy_arbo.KBFromDir.v1", "path": str(toy_kb_dir)}}
    nlp.initialize()
    nlp.to_disk(tmp_path / "tfidf")
    docs = [make_doc(nlp, text, mentions, with_ids=False) for text, mentions in TOY_TEXTS]
    expected = links(nlp.pipe(docs))
    assert any(kb_id for doc in expected for _, kb_id, _ in doc)
    assert links(spacy.load(tmp_path / "tfidf").pipe(docs)) == expected
    (tmp_path / "tfidf" / "arbo_linker" / "model").unlink()
    assert links(spacy.load(tmp_path / "tfidf").pipe(docs)) == expected


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


# Kill points ----------------------------------------------------------------------------
# A command killed (os._exit, no cleanup) just before its N-th file-system step: a folder
# made, a file opened for writing, a faiss index written, a rename, a tree removed. Every
# point of the write is tried, not a sample. Commands run in forks of one interpreter that
# imported spacy_arbo once, so a kill costs the command, not the two seconds of imports.
KILL_SERVER = """
    import builtins, io, json, os, runpy, shutil, sys, textwrap, traceback

    import faiss

    import spacy_arbo.cli
    import spacy_arbo.pipeline.arbo_linker
    # What build-kb and configure import when they run (building the parser imports none of it).
    import spacy_arbo.cli._pipelines, spacy_arbo.encoders.recognizer_transformer, spacy_arbo.kb.readers

    def kill_at_step(kill_at, steps):
        def counted(owner, name, writes_only):
            real = getattr(owner, name)

            def step(*args, **kwargs):
                mode = args[1] if len(args) > 1 else kwargs.get("mode", "r")
                if not writes_only or set(str(mode)) & set("wax+"):
                    steps[0] += 1
                    if steps[0] == kill_at:
                        os._exit(70)
                return real(*args, **kwargs)

            setattr(owner, name, step)

        for owner, name in [(os, "mkdir"), (os, "replace"), (os, "rename"), (shutil, "rmtree"),
                            (faiss, "write_index")]:
            counted(owner, name, False)
        for owner in (io, builtins):
            counted(owner, "open", True)

    def run(command):
        kind, target, *args = command
        sys.argv = [target, *args]
        try:
            if kind == "-m":
                runpy.run_module(target, run_name="__main__", alter_sys=True)
            else:
                exec(textwrap.dedent(target), {"__name__": "__main__"})
        except SystemExit as exit:
            return exit.code or 0
        except BaseException:
            traceback.print_exc()
            return 1
        return 0

    for request in sys.stdin:
        kill_at, command = json.loads(request)
        report, reported = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            steps = [0]
            kill_at_step(kill_at, steps)
            code = run(command)
            sys.stderr.flush()
            os.write(reported, str(steps[0]).encode())
            os._exit(code)
        os.close(reported)
        _, status = os.waitpid(pid, 0)
        with os.fdopen(report) as steps:
            print(json.dumps([os.waitstatus_to_exitcode(status), int(steps.read() or 0)]), flush=True)
"""


class KillServer:
    """Runs `-m MODULE ARGS...` or `-c CODE ARGS...` killed at a chosen file-system step."""

    def __init__(self, log: Path, timeout: float = 120):
        self.log, self.timeout = log, timeout
        with log.open("w") as stderr:
            self.process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(KILL_SERVER)], cwd=ROOT,
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True)

    def run(self, kill_at: int, *command: str) -> tuple:
        """(exit code, steps taken): 70 when killed before step `kill_at` (0: never)."""
        self.process.stdin.write(json.dumps([kill_at, command]) + "\n")
        self.process.stdin.flush()
        if not select.select([self.process.stdout], [], [], self.timeout)[0]:
            self.process.kill()
            pytest.fail(f"{command[:3]} killed at step {kill_at} hung:\n{self.log.read_text()[-3000:]}")
        line = self.process.stdout.readline()
        assert line, f"the kill server died:\n{self.log.read_text()[-3000:]}"
        return tuple(json.loads(line))

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


@pytest.fixture
def kill_server(tmp_path):
    server = KillServer(tmp_path / "kill-server.log")
    yield server
    server.close()


def kill_at_every_step(server: KillServer, command: tuple, output: Path, write_old, version) -> int:
    """Kill `command`, which writes the new version of `output` over the old one that
    `write_old()` writes, at each of its steps. After every kill `output` is the old or the
    new version (`version(output)` says which, and fails on anything else), and the next
    write leaves nothing else beside it. Returns the number of steps."""
    write_old()
    code, n_steps = server.run(0, *command)
    assert code == 0, server.log.read_text()[-3000:]
    assert version(output) == "new"
    write_old()
    outcomes = set()
    for kill_at in range(1, n_steps + 1):
        code, _ = server.run(kill_at, *command)
        assert code == 70, (kill_at, server.log.read_text()[-3000:])
        if not output.exists():
            # Killed between moving the old output aside and the new one in: the next
            # write puts the old one back.
            clean_stale_temps(output)
        outcomes.add(version(output))
        write_old()
        assert [p.name for p in output.parent.iterdir()] == [output.name], kill_at
    assert version(output) == "old"
    assert outcomes == {"old", "new"}
    return n_steps


def write_kb_source(path: Path, n: int) -> list:
    store = EntityStore([Entity(i, name, a, d) for i, name, a, d in TOY_ENTITIES[:n]])
    write_jsonl(store, path)
    return store.ids


def test_build_kb_killed_at_any_point_leaves_a_loadable_kb(tmp_path, kill_server):
    ids = {"old": write_kb_source(tmp_path / "old.jsonl", 3), "new": write_kb_source(tmp_path / "new.jsonl", 6)}
    kb = tmp_path / "out" / "kb"

    def version(path: Path) -> str:
        return {tuple(v): k for k, v in ids.items()}[tuple(EntityStore.from_disk(path).ids)]

    def write_old() -> None:
        assert main(["build-kb", str(tmp_path / "old.jsonl"), str(kb)]) == 0

    n_steps = kill_at_every_step(kill_server, ("-m", "spacy_arbo", "build-kb", str(tmp_path / "new.jsonl"), str(kb)),
                                 kb, write_old, version)
    assert n_steps >= 6


# A saved pipeline written over by `configure` or by `nlp.to_disk` through atomic_path.

TO_DISK_SCRIPT = """
    import sys

    import spacy

    from spacy_arbo.util import atomic_path

    nlp = spacy.load(sys.argv[1])
    linker = nlp.get_pipe("arbo_linker")
    linker.configure(threshold=0.5, index_aliases=True)
    linker.ensure_fresh()
    with atomic_path(sys.argv[2]) as tmp:
        nlp.to_disk(tmp)
"""


@pytest.fixture
def pipeline_versions(tmp_path, toy_kb_dir, toy_docs):
    """A saved source pipeline, and `version(path)`: whether a saved pipeline is the source
    ("old": no threshold, names-only index) or the source with threshold 0.5 ("new", with
    `index_aliases` when `aliases`), judged by its config, its component, its index and its
    links, which must all agree."""
    nlp = make_nlp(toy_kb_dir, candidate_source="hybrid")
    nlp.to_disk(tmp_path / "source")
    docs = unlinked(nlp, toy_docs)
    expected = {}
    for name, changes in [("old", {}), ("new", {"threshold": 0.5}), ("new", {"threshold": 0.5, "index_aliases": True})]:
        nlp.get_pipe("arbo_linker").configure(**changes)
        expected[tuple(sorted(changes.items()))] = (name, links(nlp.pipe(docs)))

    def version(path: Path) -> str:
        loaded = spacy.load(path)
        linker = loaded.get_pipe("arbo_linker")
        settings = {"threshold": linker.settings.threshold, "index_aliases": linker.settings.index_aliases}
        assert {k: loaded.config["components"]["arbo_linker"][k] for k in settings} == settings
        assert linker.index_is_current() and len(linker.retriever.dense) == (17 if settings["index_aliases"] else 6)
        changes = tuple(sorted((k, v) for k, v in settings.items() if v not in (None, False)))
        name, want = expected[changes]
        assert links(loaded.pipe(unlinked(loaded, toy_docs))) == want
        return name

    return tmp_path / "source", version


def test_configure_killed_at_any_point_leaves_a_loadable_pipeline(tmp_path, kill_server, pipeline_versions):
    source, version = pipeline_versions
    out = tmp_path / "out" / "pipeline"

    def write_old() -> None:
        assert main(["configure", str(source), str(out)]) == 0

    command = ("-m", "spacy_arbo", "configure", str(source), str(out), "--set", "threshold=0.5")
    assert kill_at_every_step(kill_server, command, out, write_old, version) >= 20


def test_to_disk_killed_at_any_point_leaves_a_loadable_pipeline(tmp_path, kill_server, pipeline_versions):
    source, version = pipeline_versions
    out = tmp_path / "out" / "pipeline"

    def write_old() -> None:
        nlp = spacy.load(source)
        with atomic_path(out) as tmp:
            nlp.to_disk(tmp)

    command = ("-c", TO_DISK_SCRIPT, str(source), str(out))
    assert kill_at_every_step(kill_server, command, out, write_old, version) >= 20
