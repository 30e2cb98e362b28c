"""link --ray on a local Ray cluster (two CPUs): the bytes of a single process, and a worker
killed mid-run has its shard linked again, nothing lost or doubled."""
import os
import signal
import threading
import time

import pytest

from spacy_arbo.annotation import link_corpus

from .conftest import toy_jsonl_lines

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_cluster():
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield
    ray.shutdown()


def run(pipeline, corpus, output, **kwargs):
    return link_corpus(pipeline, [corpus], output, report=lambda line: None, progress=False, batch_size=16,
                       shard_size=32, **kwargs)


def worker_pids():
    import psutil

    return [p.pid for p in psutil.process_iter(["cmdline"]) if "ShardLinker" in " ".join(p.info["cmdline"] or [])]


def test_ray_workers_write_the_bytes_of_one_process(toy_pipeline, tmp_path, local_cluster):
    (tmp_path / "in.jsonl").write_text(toy_jsonl_lines(200))
    run(toy_pipeline, tmp_path / "in.jsonl", tmp_path / "one.jsonl")
    summary = run(toy_pipeline, tmp_path / "in.jsonl", tmp_path / "ray.jsonl", ray=True, n_process=2)
    assert (summary.documents, summary.mentions, summary.shards) == (200, 400, 7)
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()


def test_a_killed_worker_has_its_shard_linked_again(toy_pipeline, tmp_path, local_cluster):
    (tmp_path / "in.jsonl").write_text(toy_jsonl_lines(4000))
    run(toy_pipeline, tmp_path / "in.jsonl", tmp_path / "one.jsonl")
    parts, killed = tmp_path / "ray.jsonl.parts", []

    def kill_a_worker() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            pids = worker_pids()
            if pids and len(list(parts.glob("*.jsonl"))) >= 2:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            time.sleep(0.01)

    killer = threading.Thread(target=kill_a_worker)
    killer.start()
    summary = run(toy_pipeline, tmp_path / "in.jsonl", tmp_path / "ray.jsonl", ray=True, n_process=2)
    killer.join()
    assert killed and killed[0] not in worker_pids()
    assert (summary.documents, summary.mentions) == (4000, 8000)
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
