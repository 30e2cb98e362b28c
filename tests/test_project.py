"""project.yml: the `corpus` variable, the assets, and the Weasel `quick` workflow end to end on
the real data, so the main job cannot rot."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import srsly

from spacy_arbo.assets import fetch_assets
from spacy_arbo.corpora import NAMED_CORPORA

ROOT = Path(__file__).resolve().parents[1]
# Pipelines that depend on the KB alone, shared by both corpora.
KB_ONLY_PIPELINES = ("training/tfidf", "training/zero_shot", "training/kb_only")
# Commands scored on one corpus whatever the corpus variable: the KB-only recipe on MeSH names
# links BC5CDR's chemical mentions, which NCBI Disease does not annotate.
SCORED_ON = {"kb-only-mesh": "bc5cdr"}
# What the workflow's retriever trains on, whichever the corpus (in the order it read them when measured).
TRAIN_SETS = ("corpus/bc5cdr/train.spacy", "corpus/ncbi/train.spacy")


def project_config(tmp_path, **overrides):
    """project.yml with its variables substituted, as `weasel run` sees it."""
    from weasel.util import load_project_config

    shutil.copy(ROOT / "project.yml", tmp_path / "project.yml")
    config = load_project_config(tmp_path, overrides={f"vars.{k}": v for k, v in overrides.items()})
    return {command["name"]: command for command in config["commands"]}


def test_corpus_variable_selects_every_path(tmp_path):
    assert srsly.read_yaml(ROOT / "project.yml")["vars"]["corpus"] == "ncbi"
    for corpus in ("ncbi", "bc5cdr"):
        commands = project_config(tmp_path, corpus=corpus)
        assert commands["convert"]["script"] == [
            f"python -m spacy_arbo workflow convert-corpus {name} assets corpus/{name} --kb kb" for name in ("ncbi", "bc5cdr")]
        assert commands["convert"]["outputs"] == [
            f"corpus/{name}/{s}.spacy" for name in ("ncbi", "bc5cdr") for s in ("train", "dev", "test")]
        # The retriever learns from both corpora's training sets and selects on the corpus's own dev set.
        assert commands["train-retriever"]["script"][0] == (
            f"python -m spacy_arbo workflow join-corpora corpus/{corpus}/retriever_train.spacy "
            f"{' '.join(TRAIN_SETS)}")
        assert commands["train-retriever"]["script"][1].startswith(
            f"python -m spacy train configs/retriever_frozen.cfg --output training/{corpus}/retriever "
            f"--paths.train corpus/{corpus}/retriever_train.spacy --paths.dev corpus/{corpus}/dev.spacy --paths.kb kb ")
        assert commands["evaluate-reranker"]["script"] == [
            f"python -m spacy_arbo evaluate training/{corpus}/reranker/model-best corpus/{corpus}/test.spacy "
            f"--seen-from corpus/{corpus}/train.spacy --output metrics/{corpus}/reranker_test.json "
            f"--protocol biosyn --augment-from corpus/{corpus}/train.spacy corpus/{corpus}/dev.spacy --gpu-id -1"]
        assert commands["report"]["script"] == [
            f"python -m spacy_arbo workflow report metrics/{corpus} --output metrics/{corpus}/report.md"]
        assert commands["convert-quick"]["outputs"] == [
            f"corpus/{corpus}/quick/{s}.spacy" for s in ("train", "dev", "test")]
        assert commands["evaluate-quick"]["outputs"] == [
            f"metrics/{corpus}/quick/{name}_test.json" for name in ("tfidf", "retriever", "clustering", "retriever_memory")]
        # Every corpus file, trained pipeline and metrics file of every command is the corpus's own,
        # but for the conversion of both corpora and the other corpus's training set, which only the
        # retriever reads: no command reads another corpus's dev or test set, but to score this
        # corpus's finished raw-text package on it (evaluate-e2e-other: no choice is made there).
        for command in commands.values():
            words = [w for line in command.get("script", []) for w in line.split()]
            for path in words + command.get("deps", []) + command.get("outputs", []):
                if path.startswith(("corpus/", "training/", "metrics/")) and not path.startswith(KB_ONLY_PIPELINES):
                    own = path.split("/")[1] == SCORED_ON.get(command["name"], corpus)
                    shared_train = command["name"] == "train-retriever" and path in TRAIN_SETS
                    scored_only = command["name"] == "evaluate-e2e-other" and path == "corpus/bc5cdr/test.spacy"
                    assert own or shared_train or scored_only or command["name"] == "convert", (command["name"], path)


def test_retriever_train_variable_picks_the_training_sets(tmp_path):
    command = project_config(tmp_path, retriever_train="corpus/ncbi/train.spacy")["train-retriever"]
    assert command["script"][0] == (
        "python -m spacy_arbo workflow join-corpora corpus/ncbi/retriever_train.spacy corpus/ncbi/train.spacy")


def test_tower_variable_selects_the_retriever_config(tmp_path):
    for tower in ("frozen", "plain", "graph"):
        command = project_config(tmp_path, tower=tower)["train-retriever"]
        assert command["script"][1].startswith(f"python -m spacy train configs/retriever_{tower}.cfg ")
        assert f"configs/retriever_{tower}.cfg" in command["deps"] and (ROOT / command["deps"][0]).exists()


def test_named_corpora_are_fetched_and_converted_from_the_assets():
    project = srsly.read_yaml(ROOT / "project.yml")
    dests = {asset["dest"] for asset in project["assets"]}
    convert_deps = {c["name"]: set(c.get("deps", [])) for c in project["commands"]}
    files = {f"assets/{path}" for corpus in NAMED_CORPORA.values() for path in corpus.splits.values()}
    assert len(files) == 5  # BC5CDR has no test file: its dev file is the evaluation split
    assert NAMED_CORPORA["bc5cdr"].test == NAMED_CORPORA["bc5cdr"].dev == "bc5cdr/CDR_dev.PubTator.txt"
    assert NAMED_CORPORA["bc5cdr"].types == ("Disease",) and NAMED_CORPORA["ncbi"].types is None
    assert files <= dests
    assert files <= convert_deps["convert"] and files <= convert_deps["convert-quick"]


def test_fetch_assets_copies_both_corpora_from_the_mirror(tmp_path, data_dir):
    shutil.copy(ROOT / "project.yml", tmp_path / "project.yml")
    lines = fetch_assets(tmp_path / "project.yml", data_dir)
    assert lines == [
        f"assets/{path}: copied from {data_dir / path}"
        for path in ("ncbi_disease/NCBItrainset_corpus.txt", "ncbi_disease/NCBIdevelopset_corpus.txt",
                     "ncbi_disease/NCBItestset_corpus.txt", "bc5cdr/CDR_train.PubTator.txt",
                     "bc5cdr/CDR_dev.PubTator.txt", "ctd/CTD_diseases_2017-06-06.tsv.gz")
    ]
    assert (tmp_path / "assets" / "bc5cdr" / "CDR_dev.PubTator.txt").read_bytes() == (
        data_dir / "bc5cdr" / "CDR_dev.PubTator.txt").read_bytes()
    assert all(line.endswith(": present") for line in fetch_assets(tmp_path / "project.yml", data_dir))


@pytest.mark.slow
def test_quick_workflow(tmp_path, data_dir):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "project.yml", project / "project.yml")
    shutil.copytree(ROOT / "configs", project / "configs")
    env = {**os.environ, "SPACY_ARBO_DATA": str(data_dir)}
    result = subprocess.run([sys.executable, "-m", "weasel", "run", "quick"], cwd=project, env=env,
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    metrics = {name: json.loads((project / "metrics" / "ncbi" / "quick" / f"{name}_test.json").read_text())
               for name in ("tfidf", "retriever", "clustering", "retriever_memory")}
    assert all(m["n_mentions"] > 200 for m in metrics.values())
    # The trained hashed retriever retrieves most gold entities; TF-IDF stays the baseline.
    assert metrics["retriever"]["recall@64"] > 0.6 and metrics["tfidf"]["recall@1"] > 0.6
    assert -1.0 <= metrics["clustering"]["ari"] <= 1.0
    # The memory of the training mentions, kept because it wins on dev, wins on test too.
    assert metrics["retriever_memory"]["accuracy_strict"] > metrics["retriever"]["accuracy_strict"]
    # A second run skips every finished step.
    again = subprocess.run([sys.executable, "-m", "weasel", "run", "quick"], cwd=project, env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "Skipping 'train-retriever-quick'" in again.stdout


def test_objectives_workflow_trains_each_recipe_with_its_clock_and_compares_them(tmp_path):
    config = srsly.read_yaml(ROOT / "project.yml")
    commands = project_config(tmp_path)
    trains = [name for name in config["workflows"]["objectives"] if name.startswith("train-objective-")]
    assert trains == [f"train-objective-{n}" for n in ("hard-negatives", "arborescence", "proxy", "fgsm", "combined")]
    runs = {}
    for name in trains:
        for line in commands[name]["script"]:
            words = line.split()
            if words[:4] != ["python", "-m", "spacy", "train"]:
                continue
            option = dict(zip(words[5::2], words[6::2]))
            assert (ROOT / words[4]).is_file()
            # Every stage records its clock in its own output directory, evaluated only at the end.
            assert option["--paths.clock"] == option["--output"] + "/clock.json"
            assert option["--training.eval_frequency"] == option["--training.max_steps"]
            runs[option["--output"]] = words[4]
    assert runs == {f"training/ncbi/objectives/{run}": f"configs/retriever_{cfg}.cfg" for run, cfg in [
        ("hard_negatives", "plain"), ("arborescence", "arborescence"), ("proxy", "proxy"), ("fgsm", "fgsm"),
        ("combined_first", "plain"), ("combined", "arborescence")]}
    compare = commands["compare-objectives"]["script"][0].split()
    assert compare[:5] == ["python", "-m", "spacy_arbo", "workflow", "compare-runs"]
    compared = [stage for spec in compare[5:compare.index("--dev")] for stage in spec.split("=")[1].split("+")]
    assert sorted(compared) == sorted(runs)
    assert "metrics/ncbi/objectives.json" in commands["compare-objectives"]["outputs"]


def test_every_workflow_runs_commands_that_exist(tmp_path):
    config = srsly.read_yaml(ROOT / "project.yml")
    names = {command["name"] for command in config["commands"]}
    for workflow, steps in config["workflows"].items():
        assert set(steps) <= names, (workflow, set(steps) - names)
    in_a_workflow = {step for steps in config["workflows"].values() for step in steps}
    assert names <= in_a_workflow, f"commands in no workflow: {sorted(names - in_a_workflow)}"
    assert config["workflows"]["kb-only"] == [
        "fetch-data", "build-kb", "convert", "kb-only-kb", "kb-only-align", "kb-only-assemble", "kb-only-evaluate"]
    assert config["workflows"]["kb-only-linker"] == ["kb-only-kb", "kb-only-align", "kb-only-assemble"]


def test_every_command_that_links_or_encodes_runs_on_the_gpu_id_variable(tmp_path):
    """`--vars.gpu_id 0` trains and links on GPU 0: every `spacy train` and every spacy_arbo
    command that takes --gpu-id passes the variable, and every line parses."""
    from spacy_arbo.cli import make_parser

    from .test_cli import GPU_COMMANDS

    parser = make_parser()
    lines = [line.split() for command in project_config(tmp_path, gpu_id=3).values() for line in command["script"]]
    spacy_arbo_lines = [words[3:] for words in lines if words[:3] == ["python", "-m", "spacy_arbo"]]
    on_gpu = [words for words in spacy_arbo_lines if words[0] in GPU_COMMANDS or " ".join(words[:2]) in GPU_COMMANDS]
    train = [words for words in lines if words[:4] == ["python", "-m", "spacy", "train"]]
    assert len(on_gpu) > 40 and len(train) > 5
    for words in on_gpu + train:
        assert words[-2:] == ["--gpu-id", "3"], " ".join(words)
    for words in spacy_arbo_lines:
        parser.parse_args(words)


def kb_only_commands(tmp_path, **overrides):
    return {name: c for name, c in project_config(tmp_path, **overrides).items() if name.startswith("kb-only")}


def test_kb_only_commands_parse_and_read_no_labelled_mention(tmp_path):
    """Every `python -m spacy_arbo` line of the KB-only commands parses with the CLI; none hands a
    corpus's mentions to the linker (dictionary, anchors, memory, BioSyn's augmented dictionary)
    or trains on a corpus; self-alignment and assembly read no corpus path at all."""
    from spacy_arbo.cli import make_parser

    parser = make_parser()
    for corpus in ("ncbi", "bc5cdr"):
        commands = kb_only_commands(tmp_path, corpus=corpus)
        assert set(commands) == {"kb-only-kb", "kb-only-align", "kb-only-assemble", "kb-only-evaluate",
                                 "kb-only-unaligned", "kb-only-medic", "kb-only-mesh"}
        for command in commands.values():
            for line in command["script"]:
                words = line.split()
                assert words[:3] in (["python", "-m", "spacy_arbo"], ["python", "-m", "spacy"]), line
                assert not {"--augment-from", "--dictionary-from", "--anchors-from", "--from", "--dev"} & set(words)
                assert words[3] not in ("train", "add-memory", "tune-threshold", "tune-reranker"), line
                if words[2] == "spacy_arbo":
                    parser.parse_args(words[3:])
                if words[3] in ("self-align", "assemble"):
                    assert not [w for w in words if w.startswith(("corpus/", "assets/"))], line


def test_annotations_no_training_gives_the_kb_only_pipeline_train_mentions_only(tmp_path):
    """The KB-only pipeline gets the train split's mentions as names and as a memory, chosen on dev;
    nothing trains, and no evaluation mention is handed to the linker."""
    from spacy_arbo.cli import make_parser

    parser = make_parser()
    for corpus in ("ncbi", "bc5cdr"):
        command = project_config(tmp_path, corpus=corpus)["annotations-no-training"]
        lines = [line.split() for line in command["script"]]
        for words in lines:
            assert words[:3] == ["python", "-m", "spacy_arbo"]
            parser.parse_args(words[3:])
        assert [words[3] for words in lines] == ["configure", "add-memory", "evaluate"]
        assert lines[0][4] == "training/kb_only/pipeline" in command["deps"]
        out = f"training/{corpus}/annotations_no_training"
        assert lines[0][5] == lines[1][4] == lines[1][5] == lines[2][4] == out
        train, dev = f"corpus/{corpus}/train.spacy", f"corpus/{corpus}/dev.spacy"
        given = [words[words.index(flag) + 1] for words in lines for flag in ("--dictionary-from", "--from")
                 if flag in words]
        assert given == [train, train]
        assert lines[1][lines[1].index("--dev") + 1] == dev
        assert lines[2][5] == f"corpus/{corpus}/test.spacy"
        assert command["outputs"] == [out, f"metrics/{corpus}/annotations_no_training_test.json"]


def test_kb_only_assembles_the_recipe_config_and_scores_like_the_other_rows(tmp_path):
    import spacy

    commands = kb_only_commands(tmp_path, corpus="bc5cdr")
    assemble = commands["kb-only-assemble"]["script"][0].split()
    assert assemble[3:6] == ["assemble", "configs/kb_only.cfg", "training/kb_only/pipeline"]
    options = dict(zip(assemble[6::2], assemble[7::2]))
    assert options["--paths.encoder"] == "training/kb_only/encoder" in commands["kb-only-align"]["outputs"]
    linker = spacy.util.load_config(ROOT / "configs" / "kb_only.cfg")["components"]["arbo_linker"]
    assert float(options["--components.arbo_linker.sparse_weight"]) == linker["sparse_weight"]
    evaluate = commands["kb-only-evaluate"]
    assert evaluate["outputs"] == ["metrics/bc5cdr/kb_only_test.json", "metrics/bc5cdr/kb_only_tfidf_test.json"]
    assert evaluate["script"][0].split()[3:6] == ["evaluate", "training/kb_only/pipeline", "corpus/bc5cdr/test.spacy"]
    # The second KBs: MEDIC on the corpus converted against it, MeSH names on BC5CDR's chemicals.
    assert commands["kb-only-medic"]["script"][0].endswith("build-kb ../shared/data/ctd/medic_06Jul2012.txt.gz "
                                                           "kb_medic --format medic")
    assert "metrics/bc5cdr/kb_only_medic_test.json" in commands["kb-only-medic"]["outputs"]
    mesh = commands["kb-only-mesh"]["script"]
    assert mesh[0] == "python -m spacy_arbo build-kb ../shared/data/bc5cdr/mesh_entities_id_name.tsv kb_mesh"
    assert all("--types Chemical" in line for line in mesh if " convert " in line)


def test_kb_only_linker_builds_any_kb_source(tmp_path):
    commands = kb_only_commands(tmp_path, kb_only_source="my_kb.jsonl")
    command = commands["kb-only-kb"]
    assert command["script"] == ["python -m spacy_arbo build-kb my_kb.jsonl training/kb_only/kb --format auto"]
    named = kb_only_commands(tmp_path, kb_only_source="catalogue.txt", kb_only_format="names")["kb-only-kb"]
    assert named["script"] == ["python -m spacy_arbo build-kb catalogue.txt training/kb_only/kb --format names"]
    assert command["deps"] == ["my_kb.jsonl"] and command["outputs"] == ["training/kb_only/kb/entities.msgpack"]
    # The user's KB never lands in kb/, the main workflow's CTD store: every step reads and writes its own.
    steps = srsly.read_yaml(ROOT / "project.yml")["workflows"]["kb-only-linker"]
    for name in steps:
        assert not any(path.startswith("kb/") for path in commands[name]["outputs"] + commands[name]["deps"]), name
        assert all(" kb " not in f"{line} " for line in commands[name]["script"]), name
    assert "--paths.kb training/kb_only/kb" in commands["kb-only-assemble"]["script"][0]
