"""Every maintained benchmark in bench/ at least starts, and says in its docstring what it
measures, why, and the command that runs it; the ones that are cheap on synthetic inputs run
end to end on tiny ones. Parametrized over the scripts found in bench/, so a new benchmark is
covered without touching this file."""
import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from .annotation.conftest import toy_pipeline  # noqa: F401  (a fixture)

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
SCRIPTS = sorted(BENCH.glob("*.py"))

# Benchmarks that need no data or trained pipeline: the arguments that make a run tiny, and a
# line their output must hold.
TINY_RUNS = {
    "clustering_bench.py": (["--n", "500", "--k", "4", "--entities", "50", "--unseen", "5", "--dim", "16"],
                            "undirected"),
    "discovery_scale.py": (["--sizes", "300", "600", "--entities", "100", "--unseen", "20", "--dim", "32",
                            "--spread", "0.04", "--entity-spread", "0.04"], "600 vs 300 mentions (2x)"),
    "index_bench.py": (["--n", "2000", "--dim", "16", "--queries", "20", "--centres", "20", "--k", "5",
                        "--kinds", "flat", "ivfsq"], "recall@5"),
    "scale_bench.py": (["--n", "5000", "--dim", "16", "--queries", "50", "--json", "scale.json"], "recall@64 vs exact"),
}
KB_SCALE_TINY = ["--entities", "2000", "--mentions", "50", "--json", "kb_scale.json"]


def run(script: Path, args: List[str], cwd: Path) -> subprocess.CompletedProcess:
    # This checkout's package first, whatever is installed.
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    # A script that starts Ray starts its own runtime, not one the caller's RAY_ADDRESS names.
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    return subprocess.run([sys.executable, str(script), *args], cwd=cwd, capture_output=True, text=True,
                          env={**env, "PYTHONPATH": path}, timeout=300)


def bench_module(name: str):
    """bench/NAME.py imported, to call its functions (bench/ is no package)."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def save_toy_linker(tmp_path: Path, kb_dir: Path, **settings):
    """The toy linker saved as `linker`, and the toy texts' gold mentions as `gold.spacy`, in tmp_path."""
    from spacy.tokens import DocBin

    from .conftest import TOY_TEXTS, make_doc
    from .util import make_nlp

    nlp = make_nlp(kb_dir, **settings)
    nlp.to_disk(tmp_path / "linker")
    DocBin(docs=[make_doc(nlp, t, m) for t, m in TOY_TEXTS]).to_disk(tmp_path / "gold.spacy")
    return nlp


@pytest.fixture
def toy_linker(tmp_path, toy_kb_dir):
    """The toy dense linker and gold mentions (`save_toy_linker`)."""
    return save_toy_linker(tmp_path, toy_kb_dir)


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


def test_gpu_bundle_encoder_comes_back_as_its_bf16_weights(tmp_path, tiny_bert_dir):
    """gpu_check's bundle carries an encoder as two byte planes of its bf16 weights: unpacked,
    every float weight is its bf16 rounding in fp32, the rest unchanged, and it loads."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModel

    gpu_check = bench_module("gpu_check")
    gpu_check.pack_encoder(tiny_bert_dir, tmp_path / "packed")
    gpu_check.unpack_encoder(tmp_path / "packed", tmp_path / "encoder")
    original, unpacked = load_file(tiny_bert_dir / "model.safetensors"), load_file(tmp_path / "encoder" / "model.safetensors")
    assert unpacked.keys() == original.keys()
    for name, tensor in original.items():
        expected = tensor.to(torch.bfloat16).float() if tensor.is_floating_point() else tensor
        assert unpacked[name].dtype == expected.dtype and torch.equal(unpacked[name], expected), name
    assert (tmp_path / "encoder" / "vocab.txt").read_text() == (tiny_bert_dir / "vocab.txt").read_text()
    AutoModel.from_pretrained(tmp_path / "encoder")


def test_recognizers_score_mentions_with_and_without_consistency(tmp_path):
    """A ruler that finds "Wilson disease" but not its short form: 1 of 3 gold mentions, 3 of 3
    once mention_consistency labels the short forms (at any share)."""
    import spacy
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler", name="ner").add_patterns([{"label": "Disease", "pattern": "Wilson disease"}])
    nlp.to_disk(tmp_path / "ruler")
    text = "Wilson disease (WD) is rare. In WD, copper builds up."
    doc = nlp.make_doc(text)
    doc.ents = [doc.char_span(start, end, label="Disease") for start, end in ((0, 14), (16, 18), (32, 34))]
    DocBin(docs=[doc]).to_disk(tmp_path / "gold.spacy")
    result = run(BENCH / "recognizers.py", ["ruler", "--docs", "gold.spacy", "--repeats", "1",
                                            "--consistency-shares", "1", "0.35", "--output", "out.json"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    row = json.loads((tmp_path / "out.json").read_text())["rows"][0]
    assert (row["ner_p"], row["ner_r"]) == pytest.approx((1.0, 1 / 3))
    assert [(v["min_share"], v["ner_p"], v["ner_r"]) for v in row["consistency"]] == [(1.0, 1.0, 1.0), (0.35, 1.0, 1.0)]
    assert "| + mention_consistency, min_share 0.35 | 1.000 | 1.000 | 1.000 |" in result.stdout


def test_confidence_calibration_scores_each_draw_and_the_dev_fit(tmp_path, toy_linker):
    result = run(BENCH / "confidence_calibration.py", ["linker", "--dev", "gold.spacy", "--eval", "gold.spacy",
                                                       "--seeds", "0", "1", "--folds", "2", "--output", "out.json"],
                 tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads((tmp_path / "out.json").read_text())["rows"]
    assert [(r["calibration"], r["seed"]) for r in rows] == [
        ("label-free", 0), ("label-free", 1), ("dev (gold.spacy)", None),
        ("dev (gold.spacy), cross-fitted over 2 folds", None)]
    assert all(0 <= r["gold.spacy"]["confidence_ece"] <= 1 for r in rows)
    assert rows[0]["gold.spacy"] != rows[1]["gold.spacy"]  # another draw of names, another fit
    # Out of fold, each document is scored by a fit that never saw it: not the in-sample figure.
    assert rows[3]["gold.spacy"]["confidence_ece"] != rows[2]["gold.spacy"]["confidence_ece"]
    assert "| label-free | 1 |" in result.stdout


def test_link_speed_compares_processes_and_measures_memory(tmp_path, toy_pipeline):
    """On the toy pipeline: every run links all documents and writes the same bytes; the soak
    run samples memory against documents written."""
    from .conftest import TOY_TEXTS

    (tmp_path / "toy.pubtator").write_text("".join(f"{i}|t|{text}\n{i}|a|\n\n" for i, (text, _) in enumerate(TOY_TEXTS)))
    result = run(BENCH / "link_speed.py", [str(toy_pipeline), "--corpus", "toy.pubtator", "--docs", "40",
                                           "--soak-docs", "2100", "--compare", "1024", "--every", "0.05",
                                           "--output", "link.json"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads((tmp_path / "link.json").read_text())
    runs = figures["speed"]["runs"]
    assert sorted(runs) == ["1 process", "2 processes"] and figures["speed"]["identical_outputs"] is True
    assert [(row["documents"], row["mentions"]) for row in runs.values()] == [(40, 80), (40, 80)]
    assert runs["1 process"]["ratio_to_1_process"] == 1.0
    soak = figures["soak"]
    assert soak["documents"] == 2100 and soak["samples"] and soak["rss_mb_at_end"] > 100


def test_load_time_compares_a_load_with_a_bare_process_and_times_initialize(tmp_path, toy_pipeline):
    result = run(BENCH / "load_time.py", [str(toy_pipeline), "--repeats", "1", "--profile", "--initialize",
                                          str(ROOT / "configs" / "zero_shot.cfg"), "--kb", str(toy_pipeline.parent / "kb"),
                                          "--output", "load.json"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads((tmp_path / "load.json").read_text())
    loaded = figures["pipelines"][str(toy_pipeline)]
    assert loaded["links"] == ["MESH:D005334"]  # the toy KB's finder sees "fever" only
    assert loaded["beyond_bare_s"] == pytest.approx(loaded["wall"] - figures["bare"]["wall"])
    assert loaded["peak_rss_mb"] > figures["bare"]["peak_rss_mb"] > 50
    assert set(figures["initialize"]) == {"first", "second_from_cache"}
    assert "spacy.load" in result.stdout or "load" in (tmp_path / "load.profile.txt").read_text()


def test_pipeline_speed_puts_a_variant_beside_its_baseline(tmp_path, toy_kb_dir):
    """Gold mentions: each pipeline's figures, and how many links the variant changes; with
    `--end-to-end`, the same pipeline reads the raw texts through its mention finder."""
    from spacy_arbo.cli.pipeline import add_kb_finder

    nlp = save_toy_linker(tmp_path, toy_kb_dir, candidate_source="tfidf")
    result = run(BENCH / "pipeline_speed.py", ["linker", "linker:threshold=2.0", "--docs", "gold.spacy",
                                               "--repeats", "1", "--profile", "--output", "speed.json"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads((tmp_path / "speed.json").read_text())["rows"]
    assert [row["pipeline"] for row in rows] == ["linker", "linker:threshold=2.0"]
    # TF-IDF finds every toy name; above any score, the variant leaves all 8 mentions NIL.
    assert [(row["accuracy_strict"], row["kb_ids_differing_from_second"]) for row in rows] == [(1.0, 8), (0.0, 0)]
    assert rows[0]["profile"]["TF-IDF search"] > 0 and rows[0]["profile"]["encode mentions"] == 0

    add_kb_finder(nlp)
    nlp.to_disk(tmp_path / "raw")
    result = run(BENCH / "pipeline_speed.py", ["raw", "--docs", "gold.spacy", "--repeats", "1", "--end-to-end",
                                               "--output", "e2e.json"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    row = json.loads((tmp_path / "e2e.json").read_text())["rows"][0]
    # Every toy mention is written as a KB name: the finder finds each, the linker links each right.
    assert row["docs_per_second"] > 0 and (row["ner_f"], row["e2e_f"], row["e2e_any_id_f"]) == (1.0, 1.0, 1.0)


def test_plot_train_curves_draws_train_cost_results_and_refuses_other_json(tmp_path):
    pytest.importorskip("matplotlib", reason="the [plot] extra is not installed")
    dev = [{"minutes": m, "updates": int(10 * m), "recall@1": 0.3 + m / 100, "recall@64": 0.9} for m in (5, 2.5)]
    (tmp_path / "run.json").write_text(json.dumps([{"variant": "plain", "dev": dev}]))
    result = run(BENCH / "plot_train_curves.py", ["run.json", "--output", "curves.png"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"
    assert "plain: 2.5 min 0.325 (25 upd.), 5 min 0.350 (50 upd.)" in result.stdout  # sorted by minutes
    (tmp_path / "other.json").write_text(json.dumps({"rows": []}))
    result = run(BENCH / "plot_train_curves.py", ["other.json", "--output", "x.png"], tmp_path)
    assert result.returncode != 0 and "other.json: not a bench/train_cost.py result" in result.stderr


def test_ray_encoding_gives_the_vectors_of_one_process(tmp_path, toy_linker):
    pytest.importorskip("ray", reason="the [ray] extra is not installed")
    from .conftest import TOY_ENTITIES

    (tmp_path / "kb.jsonl").write_text("".join(
        json.dumps({"concept_id": i, "canonical_name": n, "aliases": list(a)}) + "\n" for i, n, a, _ in TOY_ENTITIES))
    result = run(BENCH / "ray_encoding.py", ["linker", "--kb", "kb.jsonl", "--workers", "1", "--limit", "4",
                                             "--output", "ray.json"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads((tmp_path / "ray.json").read_text())
    assert (figures["entities"], figures["texts"]) == (4, 12)  # 4 names and their 8 aliases
    assert figures["max_abs_difference"] < 1e-5


def test_soak_samples_memory_against_documents_in_one_and_two_processes(tmp_path, toy_linker):
    result = run(BENCH / "soak.py", ["linker", "--corpora", "gold.spacy", "--docs", "400", "--every", "100",
                                     "--compare", "200", "--n-process", "1", "2", "--output", "soak.json"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    runs = json.loads((tmp_path / "soak.json").read_text())["runs"]
    assert [(r["n_process"], r["docs"], r["mentions"], r["linked"]) for r in runs] == [(1, 400, 800, 800), (2, 400, 800, 800)]
    for r in runs:  # the toy docs cycle: 8 mentions in 4 docs, every one linked
        assert [s["docs"] for s in r["samples"]] == [0, 100, 200, 300, 400] and r["rss_end_over_compare"] > 0


def test_encode_cost_measures_each_setting_on_both_indexes(tmp_path, toy_linker):
    """The toy texts as a tiny NCBI test file: each setting encodes the KB's names, then names and
    aliases, and links every mention; a batch size changes the speed, not the links."""
    from .conftest import TOY_TEXTS
    from .util import pubtator

    documents = []
    for i, (text, mentions) in enumerate(TOY_TEXTS):
        # (surface, type, MeSH id, which occurrence of the surface in the text)
        located = [(surface, "SpecificDisease", kb_id.split(":")[1], [s for s, _ in mentions[:j]].count(surface))
                   for j, (surface, kb_id) in enumerate(mentions)]
        documents.append(pubtator(1000 + i, text, "", located))
    (tmp_path / "data" / "ncbi_disease").mkdir(parents=True)
    (tmp_path / "data" / "ncbi_disease" / "NCBItestset_corpus.txt").write_text("".join(documents))
    result = run(BENCH / "encode_cost.py", ["linker", "--data", "data", "--settings", "fp32:64", "fp32:2",
                                            "--output", "cost.json"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads((tmp_path / "cost.json").read_text())
    assert [(r["index_aliases"], r["batch_size"], r["kb_texts"]) for r in rows] == [
        (False, 64, 6), (False, 2, 6), (True, 64, 17), (True, 2, 17)]  # 6 names, then with their 11 aliases
    assert rows[0]["accuracy_strict"] == rows[1]["accuracy_strict"] < rows[2]["accuracy_strict"] == rows[3]["accuracy_strict"] == 1.0


def test_linker_speed_compares_candidate_sources_on_the_real_kb(tmp_path, data_dir):
    result = run(BENCH / "linker_speed.py", ["--data", str(data_dir), "--kb-limit", "300", "--repeats", "1",
                                             "--systems", "tfidf", "dense-hashed"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "KB: 300 entities; NCBI test: 100 docs, 960 mentions" in result.stdout
    table = {line.split()[0]: line.split() for line in result.stdout.splitlines()
             if line.startswith(("tfidf ", "dense-hashed "))}
    assert sorted(table) == ["dense-hashed", "tfidf"] and table["tfidf"][3] == "1.00"  # the baseline's ratio
    assert all(0 <= float(table[name][4]) <= float(table[name][5]) <= 1 for name in table)  # R@1 <= R@64


def test_train_cost_scores_a_variant_at_each_budget(tmp_path, data_dir, tiny_bert_dir):
    """A tiny BERT for two budgets of a few seconds on the real corpora: each evaluation comes later
    and after more updates than the one before."""
    result = run(BENCH / "train_cost.py", ["--data", str(data_dir), "--work", "work", "--eval-minutes", "0.05", "0.1",
                                           "--variants", "today", "--encoder", str(tiny_bert_dir),
                                           "--output", "cost.json"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    (row,) = json.loads((tmp_path / "cost.json").read_text())
    assert row["variant"] == "today" and row["seconds_per_update"] > 0
    assert [e["minutes"] for e in row["dev"]] == [0.05, 0.1]
    assert 0 < row["dev"][0]["updates"] < row["dev"][1]["updates"]
    assert all(0 <= e["recall@1"] <= e["recall@64"] <= 1 for e in row["dev"])


def test_out_of_kb_scores_nil_detection_on_each_draw(tmp_path, toy_linker):
    """Two sets that are one corpus: a seed draws the same entities for both, so each set's threshold,
    picked on the other, is the one its own best NIL F picks."""
    result = run(BENCH / "out_of_kb.py", ["linker", "kb", "a=gold.spacy", "b=gold.spacy", "--seeds", "0", "1",
                                          "--share", "0.5", "--work", "work", "--output", "out.json"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads((tmp_path / "out.json").read_text())
    rows = figures["rows"]
    assert [(r["set"], r["seed"]) for r in rows] == [("a", 0), ("b", 0), ("a", 1), ("b", 1)]
    for row in rows:
        held_out = json.loads((tmp_path / "work" / row["set"] / f"seed{row['seed']}" / "held_out.json").read_text())
        assert row["held_out"] == len(held_out["held_out"]) == 3
        assert row["n_nil_gold"] == held_out["eval_counts"]["turned_nil"] > 0 and row["n_mentions"] == 8
        assert 0 < row["nil_pr_auc"] <= 1
        assert row["other_sets"]["threshold"] == row["oracle"]["threshold"]
        assert row["other_sets"]["nil_f"] == row["oracle"]["nil_f"]
    assert rows[0]["nil_pr_auc"] == rows[1]["nil_pr_auc"] and rows[0]["counts"] != rows[2]["counts"]
    for name in ("a", "b"):
        auc = figures["summary"][name]["nil_pr_auc"]
        assert auc["min"] <= auc["mean"] <= auc["max"]
    assert "| a | mean (range) |" in result.stdout
    assert rows[0]["held_out_links"]["nearby"] == 0  # the toy KB has no hierarchy


def test_out_of_kb_decides_nil_on_a_dev_sets_own_draw(tmp_path, toy_linker):
    """A dev set that is the evaluation set: the same seed draws the same entities, so the threshold its
    draw picks is the one the evaluation set's own best NIL F picks, and a calibration fitted there is
    applied to the same links."""
    result = run(BENCH / "out_of_kb.py", ["linker", "kb", "a=gold.spacy", "--dev", "a=gold.spacy", "--seeds", "0",
                                          "--share", "0.5", "--work", "work", "--output", "out.json"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    (row,) = json.loads((tmp_path / "out.json").read_text())["rows"]
    assert row["dev_draw"]["threshold"] == row["oracle"]["threshold"]
    assert row["dev_draw"]["nil_f"] == row["oracle"]["nil_f"] > 0
    calibrated = row["dev_calibrated"]
    assert 0 < calibrated["nil_pr_auc"] <= 1 and 0 <= calibrated["nil_f"] <= 1
    assert 0 <= calibrated["full_kb_ece"] <= 1 and 0 <= calibrated["label_free_full_kb_ece"] <= 1
    assert "dev_calibrated.nil_f" in result.stdout
    refused = run(BENCH / "out_of_kb.py", ["linker", "kb", "a=gold.spacy", "--dev", "b=gold.spacy", "--work", "w"],
                  tmp_path)
    assert refused.returncode == 2 and "--dev names no evaluation set: b" in refused.stderr


def test_out_of_kb_gives_each_draw_a_link_memory_without_its_held_out_entities(tmp_path, toy_linker):
    """A memory of the evaluation set itself: it links every in-KB mention as gold does, and none of
    the held-out entities' mentions, which the draw's train holds as NIL and the memory never sees."""
    result = run(BENCH / "out_of_kb.py", ["linker", "kb", "a=gold.spacy", "--memory", "a=gold.spacy", "--seeds", "0",
                                          "--share", "0.5", "--work", "work", "--output", "out.json"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads((tmp_path / "out.json").read_text())
    (row,) = figures["rows"]
    assert figures["memory"] == {"a": "gold.spacy"}
    assert row["in_kb_strict_nil_off"] == row["in_kb_strict_full_kb"] == 1.0
    assert row["held_out_links"]["n"] == row["n_nil_gold"] > 0  # linked to KB entities, not remembered as NIL
    # Their held-out ids are not remembered either: the draw's memory never saw those mentions.
    out_of_kb = bench_module("out_of_kb")
    draw = tmp_path / "work" / "a" / "seed0"
    held_out = json.loads((draw / "held_out.json").read_text())["held_out"]
    links = out_of_kb.linked(str(tmp_path / "linker"), draw / "eval.spacy", held_out,
                             memory_from=(draw / "train.spacy", tmp_path / "gold.spacy"))
    predicted = {o.predicted for o in out_of_kb.flat(links.outcomes) if o.gold_is_nil}
    assert predicted and not predicted & {*held_out, "NIL"}
    refused = run(BENCH / "out_of_kb.py", ["linker", "kb", "a=gold.spacy", "--memory", "c=gold.spacy", "--work", "w"],
                  tmp_path)
    assert refused.returncode == 2 and "--memory names no evaluation set: c" in refused.stderr


def test_out_of_kb_places_a_link_in_the_kb_hierarchy():
    from spacy_arbo.kb.entities import Entity
    from spacy_arbo.kb.store import EntityStore

    out_of_kb = bench_module("out_of_kb")
    kb = EntityStore([Entity("A", "a"), Entity("B", "b", parents=("A",)), Entity("C", "c", parents=("A",)),
                      Entity("D", "d", parents=("B",))])
    assert [out_of_kb.relation(kb, entity, linked) for entity, linked in (
        ("B", "A"), ("A", "B"), ("B", "C"), ("D", "A"), ("A", "D"), ("D", "C"))] == [
        "parent", "child", "sibling", "farther", "farther", "other"]
