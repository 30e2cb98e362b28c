"""`python -m spacy_arbo link` as a user runs it: kill -9 mid-run and the same command again
write the bytes of an uninterrupted run; bad input is one line and a nonzero exit."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from spacy_arbo.cli import main

import pytest

from .annotation.conftest import toy_jsonl_lines, toy_pipeline, toy_pipeline_without_confidence  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
N_DOCS, SHARD = 6000, 64


def command(pipeline, inputs, output, *options):
    return [sys.executable, "-m", "spacy_arbo", "link", str(pipeline), *map(str, inputs), "--output", str(output),
            "--shard-size", str(SHARD), "--batch-size", "32", *options]


def run(args):
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run(args, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path}, timeout=300)


def test_killed_run_resumed_writes_the_uninterrupted_output(toy_pipeline, tmp_path):
    (tmp_path / "in.jsonl").write_text(toy_jsonl_lines(N_DOCS))
    clean = run(command(toy_pipeline, [tmp_path / "in.jsonl"], tmp_path / "clean.jsonl"))
    assert clean.returncode == 0, clean.stderr
    assert f"linked {N_DOCS:,} documents: {2 * N_DOCS:,} mentions" in clean.stdout

    parts = tmp_path / "out.jsonl.parts"
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    process = subprocess.Popen(command(toy_pipeline, [tmp_path / "in.jsonl"], tmp_path / "out.jsonl"),
                               env={**os.environ, "PYTHONPATH": path}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(list(parts.glob("*.jsonl"))) < 3 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    written = len(list(parts.glob("*.jsonl")))
    assert 3 <= written < N_DOCS // SHARD and not (tmp_path / "out.jsonl").exists()

    resumed = run(command(toy_pipeline, [tmp_path / "in.jsonl"], tmp_path / "out.jsonl"))
    assert resumed.returncode == 0, resumed.stderr
    assert f"shards kept from an earlier run" in resumed.stdout and f"({written} of " in resumed.stdout
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "clean.jsonl").read_bytes()
    assert not parts.exists()


def test_bad_input_is_one_line(toy_pipeline, tmp_path):
    (tmp_path / "empty").mkdir()
    result = run(command(toy_pipeline, [tmp_path / "empty"], tmp_path / "out.jsonl"))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [f"error: {tmp_path / 'empty'}: no documents in this folder "
                                                  "(files ending in .jsonl, .ndjson, .xml, .json, .pubtator, .txt)."]


def test_bad_records_are_named_and_counted(toy_pipeline, tmp_path):
    (tmp_path / "in.jsonl").write_text('{"text": "Fever."}\n{"text": \n{"text": "Cough."}\n')
    result = run(command(toy_pipeline, [tmp_path / "in.jsonl"], tmp_path / "out.pubtator"))
    assert result.returncode == 0, result.stderr
    assert f"skipped: {tmp_path / 'in.jsonl'}:2: not a JSON object" in result.stderr
    assert result.stdout.startswith("linked 2 documents: 2 mentions (0 NIL), ")
    assert "; 1 bad records skipped; wrote " in result.stdout
    assert (tmp_path / "out.pubtator").read_text() == (
        "in:1|t|Fever.\nin:1|a|\nin:1\t0\t5\tFever\tDisease\tMESH:D005334\n\n"
        "in:3|t|Cough.\nin:3|a|\nin:3\t0\t5\tCough\tDisease\tMESH:D003371\n\n")


def test_gpu_id_is_refused_for_ray_workers(toy_pipeline, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("spacy_arbo.cli.use_gpu", lambda gpu_id: None)  # as if the GPU were there
    (tmp_path / "in.jsonl").write_text(toy_jsonl_lines(2))
    assert main(["link", str(toy_pipeline), str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"),
                 "--gpu-id", "0", "--ray"]) == 1
    assert capsys.readouterr().err.startswith("error: link: --gpu-id runs this process on a GPU, not Ray's workers")
    assert not (tmp_path / "out.jsonl.parts").exists()


def test_following_the_min_confidence_advice_works(toy_pipeline_without_confidence, tmp_path, capsys):
    (tmp_path / "in.jsonl").write_text(toy_jsonl_lines(4))
    args = ["link", str(toy_pipeline_without_confidence), str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl")]
    assert main([*args, "--min-confidence", "0.5"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --min-confidence 0.5: the pipeline set no span._.kb_confidence on the 8 mentions ")
    assert err.endswith("or leave --min-confidence out.\n") and len(err.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
    assert main(args) == 0
    assert capsys.readouterr().out.startswith("linked 4 documents: 8 mentions (0 NIL), ")


@pytest.mark.parametrize("value", ["1.5", "-0.5", "nan", "high"])
def test_min_confidence_outside_0_1_is_a_usage_error(toy_pipeline, tmp_path, capsys, value):
    (tmp_path / "in.jsonl").write_text(toy_jsonl_lines(2))
    with pytest.raises(SystemExit) as exit:
        main(["link", str(toy_pipeline), str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"),
              "--min-confidence", value])
    assert exit.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"python -m spacy_arbo link: error: argument --min-confidence: takes a number in [0, 1]; got '{value}'.")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
