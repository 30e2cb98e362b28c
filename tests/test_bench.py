"""Every maintained benchmark in bench/ at least starts, and says in its docstring what it
measures, why, and the command that runs it; the ones that are cheap on synthetic inputs run
end to end on tiny ones. Parametrized over the scripts found in bench/, so a new benchmark is
covered without touching this file."""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
SCRIPTS = sorted(BENCH.glob("*.py"))

# Benchmarks that need no data or trained pipeline: the arguments that make a run tiny, and a
# line their output must hold.
TINY_RUNS = {
    "attention_kernel.py": (["--batch", "1", "--heads", "2", "--tokens", "16", "--head-dim", "8", "--threads", "1"],
                            "bf16 / fp32 time"),
    "attention_dropout.py": (["--shapes", "1x8", "--repeats", "1", "--output", "attention_dropout.json"], "| 1x8 |"),
    "clustering_bench.py": (["--n", "500", "--k", "4", "--entities", "50", "--unseen", "5", "--dim", "16"],
                            "undirected"),
    "index_bench.py": (["--n", "2000", "--dim", "16", "--queries", "20", "--centres", "20", "--k", "5",
                        "--kinds", "flat", "ivfsq"], "recall@5"),
    "scale_bench.py": (["--n", "5000", "--dim", "16", "--queries", "50", "--json", "scale.json"], "recall@64 vs exact"),
}
KB_SCALE_TINY = ["--entities", "2000", "--mentions", "50", "--json", "kb_scale.json"]


def run(script: Path, args: List[str], cwd: Path) -> subprocess.CompletedProcess:
    # This checkout's package first, whatever is installed.
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, str(script), *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": path}, timeout=300)


def test_bench_holds_benchmarks():
    assert len(SCRIPTS) >= 10
    assert {*TINY_RUNS, "kb_scale_pipeline.py"} <= {script.name for script in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda script: script.name)
def test_benchmark_says_what_why_and_how(script):
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf8")))
    assert doc, f"{script.name} has no module docstring"
    assert "\nWhy: " in doc, f"{script.name}'s docstring does not say why it measures what it does"
    assert f"    python bench/{script.name}" in doc, f"{script.name}'s docstring does not give its command"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda script: script.name)
def test_benchmark_uses_only_public_names(script):
    """Private names of the package change without notice; a benchmark uses what users can."""
    tree = ast.parse(script.read_text(encoding="utf8"))
    private = [f"line {node.lineno}: .{node.attr}" for node in ast.walk(tree)
               if isinstance(node, ast.Attribute) and node.attr.startswith("_") and node.attr != "_"
               and not node.attr.startswith("__")]
    private += [f"line {node.lineno}: import {alias.name}" for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) for alias in node.names if alias.name.startswith("_")]
    assert not private, f"{script.name} uses private names: {private}"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda script: script.name)
def test_benchmark_starts(script, tmp_path):
    result = run(script, ["--help"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: ")
    assert f"python bench/{script.name}" in result.stdout  # the docstring is the help


@pytest.mark.parametrize("name", sorted(TINY_RUNS))
def test_cheap_benchmark_runs_on_tiny_input(name, tmp_path):
    args, expected = TINY_RUNS[name]
    result = run(BENCH / name, args, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert expected in result.stdout


def test_kb_scale_pipeline_links_with_both_stores(tmp_path):
    result = run(BENCH / "kb_scale_pipeline.py", KB_SCALE_TINY, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads((tmp_path / "kb_scale.json").read_text())
    assert figures["entities"] == 2000
    for store in ("disk", "memory"):
        assert figures[store]["mentions"] == 50
        assert 0.5 < figures[store]["accuracy"] <= 1.0
    assert figures["disk"]["accuracy"] == figures["memory"]["accuracy"]
