import argparse
import json
import subprocess
import sys

import pytest
from thinc.util import has_gpu

from spacy_arbo.cli import main, make_parser

from .util import CTD_HEADER, ctd_line

HASHED_CONFIG = """
[paths]
kb = null

[nlp]
lang = "en"
pipeline = ["arbo_linker"]

[components]

[components.arbo_linker]
factory = "arbo_linker"
top_k = 4
candidate_source = "dense"
index_aliases = false
sparse_weight = null
kb_names_first = false

[components.arbo_linker.model]
@architectures = "spacy_arbo.DualEncoder.v1"

[components.arbo_linker.model.mention_tower]
@architectures = "spacy_arbo.HashedNgramTower.v1"
n_buckets = 4096
embed_dim = 16
out_dim = 16

[initialize]

[initialize.components]

[initialize.components.arbo_linker]

[initialize.components.arbo_linker.kb_loader]
@misc = "spacy_arbo.KBFromDir.v1"
path = ${paths.kb}
"""

PUBTATOR = """1|t|Fever in children.
1|a|Fever and cough were common; pyrexia resolved.
1\t0\t5\tFever\tDisease\tD005334
1\t19\t24\tFever\tDisease\tD005334
1\t29\t34\tcough\tDisease\tD003371
1\t48\t55\tpyrexia\tDisease\tD999999

"""


@pytest.fixture
def files(tmp_path):
    return write_files(tmp_path)


def write_files(tmp_path):
    """A CTD KB source, a PubTator corpus and a hashed-tower config in `tmp_path`."""
    ctd = tmp_path / "ctd.tsv"
    ctd.write_text(CTD_HEADER + ctd_line("Fever", "MESH:D005334", synonyms="pyrexia")
                   + ctd_line("Cough", "MESH:D003371", definition="Expulsion of air."))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(PUBTATOR)
    config = tmp_path / "hashed.cfg"
    config.write_text(HASHED_CONFIG)
    return tmp_path, ctd, corpus, config


def assemble(config, output, kb_dir):
    """An initialized pipeline, as the workflow makes one: `python -m spacy assemble`."""
    subprocess.run([sys.executable, "-m", "spacy", "assemble", str(config), str(output), "--paths.kb", str(kb_dir)],
                   check=True, capture_output=True)


def test_build_convert_assemble_evaluate(files, capsys):
    tmp, ctd, corpus, config = files
    assert main(["build-kb", str(ctd), str(tmp / "kb"), "--format", "ctd"]) == 0
    assert "2 entities, 1 aliases, 1 entities with a definition" in capsys.readouterr().out
    assert main(["convert", str(corpus), str(tmp / "test.spacy"), "--kb", str(tmp / "kb")]) == 0
    out = capsys.readouterr().out
    assert "documents" in out and "NIL mentions (no id or not in KB)" in out
    assemble(config, tmp / "pipeline", tmp / "kb")
    assert (tmp / "pipeline" / "arbo_linker" / "indexes" / "index").is_dir()
    metrics_path = tmp / "metrics.json"
    assert main(["evaluate", str(tmp / "pipeline"), str(tmp / "test.spacy"),
                 "--seen-from", str(tmp / "test.spacy"), "--output", str(metrics_path)]) == 0
    metrics = json.loads(metrics_path.read_text())
    for key in ["recall@1", "recall@64", "accuracy", "accuracy_seen", "accuracy_unseen",
                "n_mentions", "mentions_per_second"]:
        assert key in metrics
    assert metrics["n_mentions"] == 4 and metrics["n_nil_gold"] == 1
    assert metrics["n_seen"] == 3 and metrics["n_unseen"] == 0 and metrics["accuracy_unseen"] is None
    # Recall counts the three linkable mentions; a 2-entity KB always holds the gold in the top 2.
    assert metrics["recall@2"] == 1.0
    assert metrics["nil_r"] == 0.0  # no threshold: the NIL mention is linked to something


def test_build_kb_format_auto_is_a_choice_that_guesses_from_the_name(files, capsys):
    tmp, ctd, _, _ = files
    assert main(["build-kb", str(ctd), str(tmp / "kb"), "--format", "auto"]) == 0
    assert "2 entities, 1 aliases" in capsys.readouterr().out


@pytest.mark.parametrize("argv,message", [
    (["build-kb", "missing.tsv", "out"], "KB source 'missing.tsv' does not exist"),
    (["convert", "missing.txt", "out.spacy"], "missing.txt"),
    (["evaluate", "missing_pipeline", "data.spacy"], "missing_pipeline"),
])
def test_bad_input_is_one_line_and_nonzero(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err


# The commands that link or encode with a pipeline's (or an encoder's) torch models.
GPU_COMMANDS = {"evaluate", "discover", "link", "index-kb", "kb add", "kb remove", "export-spacy-kb", "add-memory",
                "configure", "workflow compare-runs", "tune-reranker", "tune-threshold", "calibrate",
                "workflow select-pipeline", "self-align", "learn-recognizer"}


def command_parsers(parser: argparse.ArgumentParser, name: str = ""):
    """(command name, its parser) for every runnable command, `kb add` included."""
    if parser.get_default("func") is not None:
        yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from command_parsers(sub, f"{name} {sub_name}".strip())


def gpu_commands():
    return {name for name, cmd in command_parsers(make_parser()) if "--gpu-id" in cmd._option_string_actions}


def test_the_commands_that_link_or_encode_take_spacys_gpu_id():
    assert gpu_commands() == GPU_COMMANDS


@pytest.mark.skipif(has_gpu, reason="this machine has a GPU: tests/test_gpu.py runs --gpu-id there")
def test_gpu_id_without_a_gpu_is_one_line_naming_it(linked, capsys):
    assert main(["evaluate", str(linked / "pipeline"), str(linked / "test.spacy"), "--gpu-id", "0"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --gpu-id 0: ") and "CuPy" in err and "--gpu-id -1" in err


def test_index_kb_refuses_gpu_id_for_ray_workers(linked, capsys, monkeypatch):
    """--gpu-id would put this process on the GPU while Ray's workers encode on their CPUs."""
    monkeypatch.setattr("spacy_arbo.cli.use_gpu", lambda gpu_id: None)  # as if the GPU were there
    assert main(["index-kb", str(linked / "pipeline"), str(linked / "kb"), "--workers", "2", "--gpu-id", "0"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: index-kb: --gpu-id") and "--workers 1" in err


@pytest.fixture
def linked(files):
    return link_files(files)


def link_files(files):
    """A KB, a converted corpus and an initialized hashed-tower pipeline, through the CLI."""
    tmp, ctd, corpus, config = files
    for argv in (["build-kb", str(ctd), str(tmp / "kb")],
                 ["convert", str(corpus), str(tmp / "test.spacy"), "--kb", str(tmp / "kb")]):
        assert main(argv) == 0
    assemble(config, tmp / "pipeline", tmp / "kb")
    return tmp


def test_evaluate_with_clustering_reports_ari(linked, capsys):
    tmp = linked
    out = tmp / "clustering.json"
    assert main(["evaluate", str(tmp / "pipeline"), str(tmp / "test.spacy"), "--output", str(out),
                 "--set", "linking=clustering", "--set", "graph=undirected", "--set", "knn_mentions=2"]) == 0
    metrics = json.loads(out.read_text())
    assert -1.0 <= metrics["ari"] <= 1.0 and metrics["n_mentions"] == 4
    assert main(["evaluate", str(tmp / "pipeline"), str(tmp / "test.spacy"), "--set", "graph=tree"]) == 1
    assert "Unknown graph 'tree'" in capsys.readouterr().err
    assert main(["evaluate", str(tmp / "pipeline"), str(tmp / "test.spacy"), "--set", "colour=red"]) == 1


def test_evaluate_transductive_anchors_decide_links(linked):
    tmp = linked
    # Anchors that say "cough" means fever: the identical test mention follows them.
    wrong = tmp / "anchors.txt"
    wrong.write_text(PUBTATOR.replace("cough\tDisease\tD003371", "cough\tDisease\tD005334"))
    assert main(["convert", str(wrong), str(tmp / "anchors.spacy"), "--kb", str(tmp / "kb")]) == 0
    out = tmp / "transductive.json"
    scores = []
    for anchors in (None, "anchors.spacy"):
        argv = ["evaluate", str(tmp / "pipeline"), str(tmp / "test.spacy"), "--output", str(out),
                "--set", "linking=clustering"]
        assert main(argv + (["--anchors-from", str(tmp / anchors)] if anchors else [])) == 0
        scores.append(json.loads(out.read_text())["accuracy"])
    # pyrexia's gold id is not in the KB (a NIL mention): 3 of 4 at best.
    assert scores == [0.75, 0.5]


def test_evaluate_dictionary_and_biosyn_protocol(linked, capsys):
    tmp = linked
    # A dictionary that says "cough" means fever: with a positive offset its name wins.
    wrong = tmp / "dictionary.txt"
    wrong.write_text(PUBTATOR.replace("cough\tDisease\tD003371", "cough\tDisease\tD005334"))
    assert main(["convert", str(wrong), str(tmp / "dictionary.spacy"), "--kb", str(tmp / "kb")]) == 0
    out = tmp / "dictionary.json"
    argv = ["evaluate", str(tmp / "pipeline"), str(tmp / "test.spacy"), "--output", str(out)]
    assert main(argv) == 0
    plain = json.loads(out.read_text())
    assert main(argv + ["--dictionary-from", str(tmp / "dictionary.spacy"), "--set", "dictionary_offset=0.5"]) == 0
    assert "arbo_linker: 2 dictionary names" in capsys.readouterr().out
    assert (plain["accuracy"], json.loads(out.read_text())["accuracy"]) == (0.75, 0.5)
    # BioSyn's pass leaves out the NIL mention (pyrexia's id is not in the KB): 3 of 3.
    assert main(argv + ["--protocol", "biosyn"]) == 1
    assert "--augment-from TRAIN.spacy" in capsys.readouterr().err
    assert main(argv + ["--protocol", "biosyn", "--augment-from", str(tmp / "dictionary.spacy")]) == 0
    metrics = json.loads(out.read_text())
    # The dictionary's document is the evaluated one (same PMID): it is left out.
    assert "left out 1 documents under evaluation" in capsys.readouterr().out
    assert (metrics["accuracy"], metrics["biosyn_accuracy"], metrics["biosyn_n_mentions"]) == (0.75, 1.0, 3)


def test_configure_stores_the_long_forms_of_a_corpus(linked, capsys):
    import spacy
    from spacy.tokens import DocBin

    tmp = linked
    nlp = spacy.blank("en")
    DocBin(docs=[nlp("Fever of unknown origin (FUO) is common."), nlp("Cough.")]).to_disk(tmp / "text.spacy")
    assert main(["configure", str(tmp / "pipeline"), str(tmp / "forms"), "--long-forms-from", str(tmp / "text.spacy")]) == 0
    assert "arbo_linker: long forms of 1 short forms from" in capsys.readouterr().out
    assert spacy.load(tmp / "forms").get_pipe("arbo_linker").corpus_long_forms == {"FUO": "Fever of unknown origin"}


def test_report_table_and_plot(tmp_path, capsys):
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    (metrics / "tfidf_test.json").write_text(json.dumps(
        {"recall@1": 0.719, "recall@8": 0.85, "recall@64": 0.894, "accuracy": 0.7, "accuracy_strict": 0.68,
         "mentions_per_second": 2000.0}))
    (metrics / "retriever_test.json").write_text(json.dumps({"recall@1": 0.8, "recall@64": 0.95, "ari": 0.6}))
    # compare-runs output (one object per run) is not a system.
    (metrics / "objectives.json").write_text(json.dumps({"proxy": {"updates": 28, "dev_recall@1": 0.6}}))
    (metrics / "e2e_test.json").write_text(json.dumps(
        {"ner_p": 0.8, "ner_r": 0.75, "ner_f": 0.774, "nel_micro_f": 0.9, "e2e_p": 0.7, "e2e_r": 0.65, "e2e_f": 0.674,
         "e2e_any_id_f": 0.68, "docs_per_second": 12.5}))
    assert main(["workflow", "report", str(metrics), "--output", str(tmp_path / "report.md")]) == 0
    text = (tmp_path / "report.md").read_text()
    assert "| e2e | 0.800 | 0.750 | 0.774 | 0.900 | 0.700 | 0.650 | 0.674 | 0.680 | 12.5 |" in text
    assert "| e2e | -" not in text  # raw-text systems get their own table
    assert "| objectives |" not in text
    assert "| retriever | 0.800 | - | 0.950 |" in text
    assert "| tfidf | 0.719 | 0.850 | 0.894 | 0.700 | 0.680 | - | - | - | - | 2000.0 |" in text
    assert (tmp_path / "report.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["workflow", "report", str(tmp_path / "empty")]) == 1


def test_discover_writes_nil_clusters_as_kb_records(linked, capsys):
    tmp = linked
    capsys.readouterr()
    out = tmp / "new.jsonl"
    # Every edge is cut: each mention becomes its own discovered entity.
    assert main(["discover", str(tmp / "pipeline"), str(tmp / "test.spacy"), "--output", str(out),
                 "--set", "min_similarity=2.0", "--min-size", "1"]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["canonical_name"] for r in records] == ["Fever", "Fever", "cough", "pyrexia"]
    assert records[0]["mentions"] == [{"doc": "1", "start": 0, "end": 5, "text": "Fever"}]
    assert "4 mentions, 4 in NIL clusters; 4 proposed entities" in capsys.readouterr().out
    # The proposals load as a KB.
    assert main(["build-kb", str(out), str(tmp / "new_kb"), "--format", "jsonl"]) == 0
    assert main(["discover", str(tmp / "pipeline"), str(tmp / "test.spacy"), "--output", str(out),
                 "--set", "min_similarity=2.0", "--min-size", "2"]) == 0
    assert out.read_text() == ""


def test_configure_stores_settings_that_evaluate_then_uses(linked, capsys):
    import spacy

    tmp = linked
    assert main(["configure", str(tmp / "pipeline"), str(tmp / "aliases"), "--set", "index_aliases=true",
                 "--set", "linking=clustering", "--anchors-from", str(tmp / "test.spacy")]) == 0
    linker = spacy.load(tmp / "aliases").get_pipe("arbo_linker")
    assert linker.cfg["index_aliases"] and linker.cfg["linking"] == "clustering" and linker.cfg["transductive"]
    assert linker.retriever.dense.ntotal == 3  # two names and the alias "pyrexia"
    assert len(linker.corpus) == 3  # the gold mentions whose id is in the KB
    assert main(["configure", str(tmp / "pipeline"), str(tmp / "x"), "--set", "graph=tree"]) == 1
    assert "Unknown graph 'tree'" in capsys.readouterr().err and not (tmp / "x").exists()
    # In place, as the workflow does after training.
    assert main(["configure", str(tmp / "aliases"), str(tmp / "aliases"), "--set", "index_aliases=false"]) == 0
    assert spacy.load(tmp / "aliases").get_pipe("arbo_linker").retriever.dense.ntotal == 2
    # A KB index built fast: int8 in batches of 128 (see docs/performance.md).
    assert main(["configure", str(tmp / "aliases"), str(tmp / "int8"), "--set", "precision=int8",
                 "--set", "batch_size=128"]) == 0
    settings = spacy.load(tmp / "int8").get_pipe("arbo_linker").settings
    assert settings.precision == "int8" and settings.batch_size == 128
    assert main(["configure", str(tmp / "aliases"), str(tmp / "x"), "--set", "precision=fp16"]) == 1
    assert "precision" in capsys.readouterr().err and not (tmp / "x").exists()


def _bc5cdr_document(pmid, title, abstract, mentions, relations):
    """A BC5CDR-style PubTator document: (surface, type, ids) mentions, then CID relation lines."""
    text = f"{title} {abstract}"
    lines = [f"{pmid}|t|{title}", f"{pmid}|a|{abstract}"]
    for surface, label, ids in mentions:
        start = text.index(surface)
        lines.append(f"{pmid}\t{start}\t{start + len(surface)}\t{surface}\t{label}\t{ids}")
    lines += [f"{pmid}\tCID\t{chemical}\t{disease}" for chemical, disease in relations]
    return "\n".join(lines) + "\n\n"


@pytest.fixture
def bc5cdr_assets(tmp_path):
    """An assets directory laid out like the data mirror, with tiny BC5CDR train and dev files."""
    assets = tmp_path / "assets"
    (assets / "bc5cdr").mkdir(parents=True)
    (assets / "bc5cdr" / "CDR_train.PubTator.txt").write_text(_bc5cdr_document(
        "11", "Naloxone and fever.", "Nalozone caused dyschromatopsy and cough.",
        [("Naloxone", "Chemical", "D009270"), ("fever", "Disease", "D005334"),
         ("Nalozone", "Chemical", "-1"), ("dyschromatopsy", "Disease", "-1"), ("cough", "Disease", "D003371")],
        [("D009270", "D005334")]))
    (assets / "bc5cdr" / "CDR_dev.PubTator.txt").write_text(_bc5cdr_document(
        "22", "Clonidine.", "Fever and cough followed clonidine.",
        [("Clonidine", "Chemical", "D003000"), ("Fever and cough", "Disease", "D005334|D003371")],
        [("D003000", "D005334")]))
    ctd = tmp_path / "ctd.tsv"
    ctd.write_text(CTD_HEADER + ctd_line("Fever", "MESH:D005334") + ctd_line("Cough", "MESH:D003371"))
    assert main(["build-kb", str(ctd), str(tmp_path / "kb"), "--format", "ctd"]) == 0
    return tmp_path


def test_convert_corpus_bc5cdr_keeps_disease_mentions(bc5cdr_assets, capsys):
    import spacy

    from spacy_arbo.corpora import read_docbin

    tmp = bc5cdr_assets
    capsys.readouterr()
    out = tmp / "corpus" / "bc5cdr"
    assert main(["workflow", "convert-corpus", "bc5cdr", str(tmp / "assets"), str(out), "--kb", str(tmp / "kb")]) == 0
    printed = capsys.readouterr().out
    assert "mention types kept: Disease" in printed
    assert "the evaluation split (test.spacy) is its dev set CDR_dev" in printed
    assert printed.count("Conversion of ") == 2  # train and dev; test is dev's copy
    assert "The same documents as dev (1 documents, 1 entities)" in printed
    assert all(f"Wrote {out / f'{split}.spacy'}" in printed for split in ("train", "dev", "test"))
    vocab = spacy.blank("en").vocab
    (train,) = read_docbin(out / "train.spacy", vocab)
    # Chemicals (with an id or -1) and the CID relation line are gone; -1 diseases are NIL.
    assert [(e.text, e.label_, e.kb_id_) for e in train.ents] == [
        ("fever", "Disease", "MESH:D005334"), ("dyschromatopsy", "Disease", "NIL"), ("cough", "Disease", "MESH:D003371")]
    assert train.user_data["doc_id"] == "11"
    (dev,) = read_docbin(out / "dev.spacy", vocab)
    # A composite mention keeps both ids.
    assert [(e.text, e.kb_id_) for e in dev.ents] == [("Fever and cough", "MESH:D005334|MESH:D003371")]
    assert (out / "test.spacy").read_bytes() == (out / "dev.spacy").read_bytes()


def test_convert_corpus_limits_and_missing_files(bc5cdr_assets, capsys):
    import spacy

    from spacy_arbo.corpora import read_docbin

    tmp = bc5cdr_assets
    # One of the two dev documents when the limit is 1.
    dev = tmp / "assets" / "bc5cdr" / "CDR_dev.PubTator.txt"
    dev.write_text(dev.read_text() + _bc5cdr_document("33", "Cough.", "Only cough.", [("Cough", "Disease", "D003371")], []))
    out = tmp / "quick"
    assert main(["workflow", "convert-corpus", "bc5cdr", str(tmp / "assets"), str(out), "--eval-limit", "1"]) == 0
    vocab = spacy.blank("en").vocab
    assert [d.user_data["doc_id"] for d in read_docbin(out / "test.spacy", vocab)] == ["22"]
    assert [d.user_data["doc_id"] for d in read_docbin(out / "train.spacy", vocab)] == ["11"]
    # Without --kb ids are only normalised.
    assert [e.kb_id_ for e in read_docbin(out / "train.spacy", vocab)[0].ents] == ["MESH:D005334", "NIL", "MESH:D003371"]
    capsys.readouterr()
    # NCBI's files are not there: an error naming the first missing one, and nothing written.
    assert main(["workflow", "convert-corpus", "ncbi", str(tmp / "assets"), str(tmp / "ncbi")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"error: Corpus 'ncbi': train file '{tmp / 'assets' / 'ncbi_disease' / 'NCBItrainset_corpus.txt'}' does not exist."
    assert not (tmp / "ncbi").exists()


def test_join_corpora_writes_one_training_set(bc5cdr_assets, capsys):
    import spacy

    from spacy_arbo.corpora import read_docbin

    tmp = bc5cdr_assets
    out = tmp / "corpus" / "bc5cdr"
    assert main(["workflow", "convert-corpus", "bc5cdr", str(tmp / "assets"), str(out)]) == 0
    capsys.readouterr()
    joined = tmp / "corpus" / "joined.spacy"
    assert main(["workflow", "join-corpora", str(joined), str(out / "train.spacy"), str(out / "dev.spacy")]) == 0
    assert capsys.readouterr().out == (
        f"Wrote {joined}: 2 documents from {out / 'train.spacy'} (1), {out / 'dev.spacy'} (1)\n")
    assert [d.user_data["doc_id"] for d in read_docbin(joined, spacy.blank("en").vocab)] == ["11", "22"]
    # dev and test are the same documents: joining them would count each twice.
    assert main(["workflow", "join-corpora", str(tmp / "leak.spacy"), str(out / "dev.spacy"), str(out / "test.spacy")]) == 1
    assert "is in both" in capsys.readouterr().err and not (tmp / "leak.spacy").exists()


def test_convert_corpus_unknown_name_lists_the_names(tmp_path, capsys):
    assert main(["workflow", "convert-corpus", "bc5", str(tmp_path), str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err == "error: Unknown corpus 'bc5'; known corpora: ncbi, bc5cdr.\n"
    assert not (tmp_path / "out").exists()


def test_export_spacy_kb_gives_spacys_linker_our_entities(linked, capsys):
    import spacy

    from spacy_arbo.retrieval.spacy_kb import create_spacy_kb_loader

    tmp = linked
    assert main(["export-spacy-kb", str(tmp / "pipeline"), str(tmp / "spacy_kb"), "--top-k", "3"]) == 0
    assert "for spaCy's entity_linker" in capsys.readouterr().out
    kb = create_spacy_kb_loader(tmp / "spacy_kb")(spacy.blank("en").vocab)
    pipeline = spacy.load(tmp / "pipeline")
    assert kb.store.ids == pipeline.get_pipe("arbo_linker").kb.ids and kb.top_k == 3


def save_ruler(path):
    """A recognizer that finds every "Fever" and a false "children" (and misses "cough" and "pyrexia")."""
    import spacy

    recognizer = spacy.blank("en")
    recognizer.add_pipe("entity_ruler", name="ner").add_patterns(
        [{"label": "Disease", "pattern": "Fever"}, {"label": "Disease", "pattern": "children"}])
    recognizer.to_disk(path)


def test_add_ner_then_evaluate_end_to_end(linked, capsys):
    """A recognizer that finds both "Fever"s and a false "children", and misses "cough" and
    "pyrexia": the figures below are counted by hand from the corpus above."""
    import spacy

    tmp = linked
    save_ruler(tmp / "ruler")
    assert main(["evaluate", str(tmp / "pipeline"), str(tmp / "test.spacy"), "--end-to-end"]) == 1
    err = capsys.readouterr().err
    assert f"--end-to-end: {tmp / 'pipeline'}: " in err and "no component that finds mentions" in err
    assert main(["add-ner", str(tmp / "pipeline"), str(tmp / "ruler"), str(tmp / "e2e")]) == 0
    nlp = spacy.load(tmp / "e2e")
    assert nlp.pipe_names == ["ner", "mention_consistency", "arbo_linker"]
    assert not nlp.get_pipe("arbo_linker").settings.use_gold_ents
    assert [(e.text, e.kb_id_) for e in nlp("Fever again.").ents] == [("Fever", "MESH:D005334")]
    out = tmp / "e2e.json"
    assert main(["evaluate", str(tmp / "e2e"), str(tmp / "test.spacy"), "--end-to-end", "--output", str(out)]) == 0
    metrics = json.loads(out.read_text())
    assert metrics["n_gold_mentions"] == 4 and metrics["n_predicted_mentions"] == 3
    assert (metrics["ner_p"], metrics["ner_r"]) == pytest.approx((2 / 3, 2 / 4))
    # Gold links leave out the NIL "pyrexia"; "children" is linked to something, so it is wrong.
    assert (metrics["e2e_p"], metrics["e2e_r"]) == pytest.approx((2 / 3, 2 / 3))
    assert (metrics["e2e_any_id_p"], metrics["e2e_any_id_r"]) == pytest.approx((2 / 3, 2 / 3))
    assert metrics["nel_micro_p"] == metrics["nel_micro_r"] == 1.0  # both aligned "Fever"s are right
    assert main(["add-ner", str(tmp / "e2e"), str(tmp / "ruler"), str(tmp / "e2e2")]) == 1
    assert main(["add-ner", str(tmp / "pipeline"), str(tmp / "ruler"), str(tmp / "plain"), "--no-consistency"]) == 0
    assert spacy.load(tmp / "plain").pipe_names == ["ner", "arbo_linker"]


def test_add_kb_finder_alone_or_beside_a_recognizer(linked, capsys):
    """The KB's names (Fever, pyrexia, Cough) as the only mentions: all four gold spans found,
    "pyrexia" (NIL in the corpus) linked and so wrong end to end. Beside the ruler's "Fever"s
    and false "children" it adds "cough" and "pyrexia"; dev's end-to-end F picks the KB alone."""
    import spacy

    from spacy_arbo.evaluation import recognizer_position

    tmp = linked
    save_ruler(tmp / "ruler")
    assert main(["add-ner", str(tmp / "pipeline"), str(tmp / "ruler"), str(tmp / "e2e")]) == 0
    assert main(["add-kb-finder", str(tmp / "pipeline"), str(tmp / "kb_only"), "--kb", str(tmp / "kb")]) == 0
    assert main(["add-kb-finder", str(tmp / "e2e"), str(tmp / "both"), "--kb", str(tmp / "kb")]) == 0
    assert main(["add-kb-finder", str(tmp / "pipeline"), str(tmp / "bad"), "--kb", str(tmp / "kb"), "--mode", "add"]) == 1
    assert "has no recognizer" in capsys.readouterr().err
    nlp = spacy.load(tmp / "kb_only")
    assert nlp.pipe_names == ["kb_mention_finder", "arbo_linker", "kb_mention_filter"]
    assert recognizer_position(nlp) == 0 and nlp.get_pipe("kb_mention_finder").cfg["mode"] == "replace"
    assert nlp.get_pipe("kb_mention_finder").cfg["short_forms"] == "all"
    assert main(["add-kb-finder", str(tmp / "pipeline"), str(tmp / "defined"), "--short-forms", "defined"]) == 0
    assert spacy.load(tmp / "defined").get_pipe("kb_mention_finder").cfg["short_forms"] == "defined"
    both = spacy.load(tmp / "both")
    assert both.pipe_names == ["ner", "kb_mention_finder", "mention_consistency", "arbo_linker", "kb_mention_filter"]
    assert [e.text for e in both("Fever in children; cough and pyrexia.").ents] == ["Fever", "children", "cough", "pyrexia"]
    for name in ("kb_only", "both"):
        assert main(["evaluate", str(tmp / name), str(tmp / "test.spacy"), "--end-to-end",
                     "--output", str(tmp / f"{name}.json")]) == 0
    metrics = json.loads((tmp / "kb_only.json").read_text())
    assert (metrics["ner_p"], metrics["ner_r"], metrics["e2e_p"], metrics["e2e_r"]) == pytest.approx((1, 1, 3 / 4, 1))
    metrics = json.loads((tmp / "both.json").read_text())
    assert (metrics["ner_p"], metrics["ner_r"], metrics["e2e_p"], metrics["e2e_r"]) == pytest.approx((4 / 5, 1, 3 / 5, 1))
    assert main(["tune-threshold", str(tmp / "kb_only"), str(tmp / "test.spacy"), "--end-to-end"]) == 0
    capsys.readouterr()
    assert main(["workflow", "select-pipeline", str(tmp / "e2e"), str(tmp / "both"), str(tmp / "kb_only"), "--dev",
                 str(tmp / "test.spacy"), "--metric", "e2e_f", "--output", str(tmp / "chosen")]) == 0
    printed = capsys.readouterr().out
    assert "| pipeline | ner_f | e2e_f | e2e_any_id_f | docs/s |" in printed
    assert f"| {tmp / 'e2e'} | 0.5714 | 0.6667 |" in printed and f"Wrote {tmp / 'chosen'}: {tmp / 'kb_only'}" in printed


def test_tune_threshold_end_to_end_sends_a_false_mention_to_nil(linked, capsys, monkeypatch):
    """The recognizer's false "children" gets a link from the toy KB; on gold mentions no
    threshold can see it, end to end the chosen one makes it NIL (e2e P 2/3 -> 1). The linker
    runs at every threshold but encodes each mention it reads once."""
    import spacy

    import spacy_arbo.encoders.linker_encoder as encoding_module

    encoded = []

    def counting(items, *args, **kwargs):
        if "mentions" in kwargs.get("desc", ""):
            encoded.extend(items)
        return encode_by_length(items, *args, **kwargs)

    encode_by_length = encoding_module.encode_by_length
    monkeypatch.setattr(encoding_module, "encode_by_length", counting)

    tmp = linked
    save_ruler(tmp / "ruler")
    assert main(["add-ner", str(tmp / "pipeline"), str(tmp / "ruler"), str(tmp / "e2e")]) == 0
    assert main(["tune-threshold", str(tmp / "pipeline"), str(tmp / "test.spacy"), "--end-to-end"]) == 1
    err = capsys.readouterr().err
    assert f"--end-to-end: {tmp / 'pipeline'}: " in err and "no component that finds mentions" in err
    assert main(["tune-threshold", str(tmp / "e2e"), str(tmp / "test.spacy"), "--end-to-end",
                 "--output", str(tmp / "tuned")]) == 0
    # Both "Fever"s read the same (no context characters): one vector serves them.
    assert sorted(m.mention for m in encoded) == ["Fever", "children"]
    out = capsys.readouterr().out
    assert "| threshold | e2e_f | e2e_r |" in out and "| none | 0.6667 | 0.6667 |" in out
    threshold = spacy.load(tmp / "tuned").get_pipe("arbo_linker").cfg["threshold"]
    assert threshold is not None and f"| {threshold:.6g} | 0.8000 | 0.6667 |" in out
    nlp = spacy.load(tmp / "tuned")
    assert [(e.text, e.kb_id_) for e in nlp("Fever in children.").ents] == [("Fever", "MESH:D005334"), ("children", "NIL")]
    assert main(["evaluate", str(tmp / "tuned"), str(tmp / "test.spacy"), "--end-to-end", "--output",
                 str(tmp / "tuned.json")]) == 0
    metrics = json.loads((tmp / "tuned.json").read_text())
    assert (metrics["e2e_p"], metrics["e2e_r"]) == pytest.approx((1.0, 2 / 3))


def test_compare_runs_sums_the_clocks_of_stages_and_scores_dev_and_test(linked, capsys):
    import shutil

    tmp = linked
    for stage, clock in (("first", {"updates": 10, "seconds": 12.5}), ("second", {"updates": 5, "seconds": 7.25})):
        shutil.copytree(tmp / "pipeline", tmp / stage / "model-best")
        (tmp / stage / "clock.json").write_text(json.dumps({**clock, "evaluations": 2}))
    data = str(tmp / "test.spacy")
    assert main(["evaluate", str(tmp / "pipeline"), data, "--seen-from", data, "--output", str(tmp / "eval.json")]) == 0
    expected = json.loads((tmp / "eval.json").read_text())
    out = tmp / "runs.json"
    assert main(["workflow", "compare-runs", f"one={tmp / 'second'}", f"two={tmp / 'first'}+{tmp / 'second'}", "--dev", data,
                 "--test", data, "--seen-from", data, "--output", str(out)]) == 0
    runs = json.loads(out.read_text())
    assert (runs["one"]["updates"], runs["one"]["seconds"]) == (5, 7.2)
    assert (runs["two"]["updates"], runs["two"]["seconds"]) == (15, 19.8)
    for split in ("dev", "test"):
        for key in ("recall@1", "recall@64", "accuracy", "accuracy_strict", "accuracy_unseen"):
            assert runs["two"][f"{split}_{key}"] == expected[key]
    assert "| two | 15 | 19.8 |" in capsys.readouterr().out
    # A run without a clock fails at once, naming the file to write.
    assert main(["workflow", "compare-runs", f"bad={tmp / 'pipeline'}", "--dev", data, "--test", data, "--output", str(out)]) == 1
    assert f"{tmp / 'pipeline' / 'clock.json'}: no training clock" in capsys.readouterr().err
    assert main(["workflow", "compare-runs", str(tmp / "first"), "--dev", data, "--test", data, "--output", str(out)]) == 1
    assert "NAME=DIR" in capsys.readouterr().err


def add_misleading_memory(tmp):
    """`pipeline` plus a link memory (`remembered`) of two abstracts that annotate "cough" as
    fever: on test.spacy it makes "cough" wrong and the NIL "pyrexia" right."""
    wrong = PUBTATOR.replace("1|", "2|").replace("1\t", "2\t").replace("cough\tDisease\tD003371", "cough\tDisease\tD005334")
    (tmp / "memory.txt").write_text(wrong + wrong.replace("2|", "3|").replace("2\t", "3\t"))
    assert main(["convert", str(tmp / "memory.txt"), str(tmp / "memory.spacy"), "--kb", str(tmp / "kb")]) == 0
    assert main(["add-memory", str(tmp / "pipeline"), str(tmp / "remembered"), "--from", str(tmp / "memory.spacy"),
                 "--min-count", "2"]) == 0


def test_add_memory_overrides_remembered_texts_and_tunes_on_dev(linked, capsys):
    import spacy

    tmp = linked
    add_misleading_memory(tmp)
    printed = capsys.readouterr().out
    assert "link_memory (min_count 2, min_share 0.8, fold_plurals false) links 3 texts of 8 mentions" in printed
    assert "arbo_linker -> link_memory" in printed
    nlp = spacy.load(tmp / "remembered")
    assert nlp.pipe_names == ["arbo_linker", "link_memory"]
    assert [(e.text, e.kb_id_) for e in nlp("Cough.").ents] == []  # no mentions without a recognizer
    out = tmp / "metrics.json"
    scores = []
    for pipeline in ("pipeline", "remembered"):
        assert main(["evaluate", str(tmp / pipeline), str(tmp / "test.spacy"), "--output", str(out)]) == 0
        metrics = json.loads(out.read_text())
        scores.append((metrics["accuracy_strict"], metrics["nil_r"]))
    # The memory makes "cough" wrong and the NIL "pyrexia" (NIL twice in it) right.
    assert scores == [(0.75, 0.0), (0.75, 1.0)]
    # Chosen on a dev set where it gains nothing: no setting is kept.
    assert main(["add-memory", str(tmp / "remembered"), str(tmp / "tuned"), "--from", str(tmp / "memory.spacy"),
                 "--dev", str(tmp / "test.spacy")]) == 0
    printed = capsys.readouterr().out
    assert "without the memory: 0.7500" in printed and "| 1 | 0.8 | false | 0.7500 |" in printed
    assert "none added" in printed and spacy.load(tmp / "tuned").pipe_names == ["arbo_linker"]
    # Ids that the pipeline's KB lacks (the corpus was not converted against it).
    assert main(["convert", str(tmp / "memory.txt"), str(tmp / "raw.spacy")]) == 0
    assert main(["add-memory", str(tmp / "pipeline"), str(tmp / "bad"), "--from", str(tmp / "raw.spacy")]) == 1
    assert "gold ids are not in arbo_linker's KB" in capsys.readouterr().err


def test_select_pipeline_copies_the_best_on_dev(linked, capsys):
    import spacy
    from spacy.tokens import DocBin

    tmp = linked
    add_misleading_memory(tmp)
    candidates, dev, out = [str(tmp / "remembered"), str(tmp / "pipeline")], str(tmp / "test.spacy"), tmp / "final"
    # Link F: 3 right of 4 links (F 6/7) without the memory, 2 right of 3 (F 2/3) with it.
    assert main(["workflow", "select-pipeline", *candidates, "--dev", dev, "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"| {tmp / 'pipeline'} | 0.8571 | 0.7500 |" in printed and f"| {tmp / 'remembered'} | 0.6667 | 0.7500 |" in printed
    assert spacy.load(out).pipe_names == ["arbo_linker"]
    # Strict accuracy ties at 3 of 4: the first listed wins, and replaces the earlier choice.
    assert main(["workflow", "select-pipeline", *candidates, "--dev", dev, "--output", str(out), "--metric", "accuracy_strict"]) == 0
    assert f"Wrote {out}: {tmp / 'remembered'} (accuracy_strict 0.7500" in capsys.readouterr().out
    assert spacy.load(out).pipe_names == ["arbo_linker", "link_memory"]
    # A later pipeline must beat the first by --min-gain: 0.19 of link F is not 0.2.
    assert main(["workflow", "select-pipeline", *candidates, "--dev", dev, "--output", str(out), "--min-gain", "0.2"]) == 0
    printed = capsys.readouterr().out
    assert f"{tmp / 'pipeline'} scores +0.1905 over {tmp / 'remembered'}, less than --min-gain 0.2" in printed
    assert spacy.load(out).pipe_names == ["arbo_linker", "link_memory"]
    assert main(["workflow", "select-pipeline", *candidates, "--dev", dev, "--output", str(out), "--min-gain", "1"]) == 1
    assert "--min-gain (a difference of nel_micro_f) takes a number in [0, 1); got 1.0" in capsys.readouterr().err
    assert main(["workflow", "select-pipeline", candidates[0], candidates[0], "--dev", dev, "--output", str(out)]) == 1
    assert "two or more distinct pipelines" in capsys.readouterr().err
    DocBin().to_disk(tmp / "empty.spacy")
    for metric in ("nel_micro_f", "accuracy_strict"):
        assert main(["workflow", "select-pipeline", *candidates, "--dev", str(tmp / "empty.spacy"), "--output", str(out),
                     "--metric", metric]) == 1
        assert f"{tmp / 'empty.spacy'} has no documents: nothing to score links on" in capsys.readouterr().err
    assert spacy.load(out).pipe_names == ["arbo_linker", "link_memory"]  # the earlier choice is kept
