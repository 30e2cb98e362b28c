"""Bad input to the commands is one line naming the problem (the file, the option, the
component) and exit code 1, never a traceback from spaCy, numpy or torch, nor a pipeline
written that cannot load or silently does nothing."""
import codecs
import json
import shutil

import pytest
import spacy
from spacy.tokens import DocBin

from spacy_arbo import Entity, EntityStore
from spacy_arbo.cli import main
from spacy_arbo.corpora import convert_corpus, read_docbin
from spacy_arbo.gold_corpus import read_gold_links
from spacy_arbo.kb.store import open_store
from spacy_arbo.metrics_tables import read_run_clock
from spacy_arbo.util import ArboError, ArboWarning

from .test_cli import add_misleading_memory, link_files, write_files
from .util import CTD_HEADER, ctd_line


@pytest.fixture(scope="module")
def linked(tmp_path_factory):
    """test_cli's KB, corpus and hashed-tower pipeline, built once (the tests here write their
    outputs elsewhere), and `plain`: a pipeline without an arbo_linker."""
    tmp = link_files(write_files(tmp_path_factory.mktemp("linked")))
    plain = spacy.blank("en")
    plain.add_pipe("sentencizer")
    plain.to_disk(tmp / "plain")
    return tmp


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


@pytest.mark.parametrize("argv", [
    ["index-kb", "{pipeline}", "{kb}"],
    ["export-spacy-kb", "{pipeline}", "{out}"],
    ["export-encoder", "{pipeline}", "{out}"],
    ["kb", "add", "{pipeline}", "{ctd}", "--output", "{out}"],
    ["kb", "remove", "{pipeline}", "MESH:D005334", "--output", "{out}"],
])
def test_a_component_the_pipeline_lacks_is_named_with_those_it_has(linked, argv, tmp_path, capsys):
    paths = {"kb": linked / "kb", "ctd": linked / "ctd.tsv", "out": tmp_path / "out"}
    assert main([arg.format(pipeline=linked / "pipeline", **paths) for arg in argv] + ["--component", "nope"]) == 1
    err = error_line(capsys)
    assert f"{linked / 'pipeline'} has no component 'nope' (--component); its components: arbo_linker." in err
    assert not (tmp_path / "out").exists()
    assert main([arg.format(pipeline=linked / "plain", **paths) for arg in argv] + ["--component", "sentencizer"]) == 1
    assert "component 'sentencizer' (--component) is a sentencizer, not an arbo_linker" in error_line(capsys)


@pytest.mark.parametrize("argv,option", [
    (["convert", "corpus.txt", "out.spacy", "--limit", "-1"], "--limit"),
    (["workflow", "convert-corpus", "ncbi", "assets", "out", "--train-limit", "-1"], "--train-limit"),
    (["workflow", "convert-corpus", "ncbi", "assets", "out", "--eval-limit", "-2"], "--eval-limit"),
])
def test_a_negative_limit_is_a_usage_error_naming_the_option(argv, option, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert f"argument {option}: expected an integer >= 0 (0: all), got '-" in capsys.readouterr().err


def test_convert_corpus_refuses_a_negative_limit(linked):
    with pytest.raises(ArboError, match="limit takes an integer >= 0; got -1"):
        convert_corpus(linked / "corpus.txt", limit=-1)


def test_report_names_the_file_and_key_of_a_value_that_is_no_number(tmp_path, capsys):
    (tmp_path / "good.json").write_text(json.dumps({"recall@1": 0.5, "accuracy": None, "kb": "a path, unreported"}))
    for value in ("x", True, [0.5]):
        (tmp_path / "bad.json").write_text(json.dumps({"recall@1": 0.5, "recall@16": value}))
        assert main(["workflow", "report", str(tmp_path), "--output", str(tmp_path / "report.md")]) == 1
        assert f"{tmp_path / 'bad.json'}: 'recall@16' takes a number or null; got {value!r}." in error_line(capsys)
    assert not (tmp_path / "report.md").exists()


@pytest.mark.parametrize("text,message", [("{not json", "not valid JSON"),
                                          ('{"updates": true, "seconds": 1.0}', "expected a JSON object")])
def test_a_bad_training_clock_is_an_error_naming_it(tmp_path, text, message):
    (tmp_path / "clock.json").write_text(text)
    with pytest.raises(ArboError, match=message) as error:
        read_run_clock([tmp_path])
    assert str(error.value).startswith(f"{tmp_path / 'clock.json'}: ")


def test_kb_remove_refuses_to_remove_every_entity(linked, tmp_path, capsys):
    """A pipeline with an empty KB does not load: nothing is written."""
    assert main(["kb", "remove", str(linked / "pipeline"), "MESH:D005334", "MESH:D003371",
                 "--output", str(tmp_path / "out")]) == 1
    assert f"removing 2 entities would leave arbo_linker of {linked / 'pipeline'} with no entity" in error_line(capsys)
    assert not (tmp_path / "out").exists()


def test_kb_remove_leaves_no_link_memory_pointing_at_a_removed_id(linked, tmp_path, capsys):
    """The memory remembers "fever" and "cough" as fever: once fever leaves the KB, they read
    NIL (as the corpus converted against the new KB would), and "pyrexia" stays NIL."""
    add_misleading_memory(linked)
    capsys.readouterr()
    assert main(["kb", "remove", str(linked / "remembered"), "MESH:D005334", "--output", str(tmp_path / "out")]) == 0
    assert "link_memory: 2 remembered texts were linked to removed ids" in capsys.readouterr().out
    nlp = spacy.load(tmp_path / "out")
    assert nlp.get_pipe("link_memory").links == {"cough": ("NIL", 1.0), "fever": ("NIL", 1.0), "pyrexia": ("NIL", 1.0)}
    doc = nlp.make_doc("Fever and cough.")
    doc.ents = [doc.char_span(0, 5, label="Disease"), doc.char_span(10, 15, label="Disease")]
    assert [(e.text, e.kb_id_) for e in nlp(doc).ents] == [("Fever", "NIL"), ("cough", "NIL")]
    # Removing an id the memory does not hold changes none of its links.
    assert main(["kb", "remove", str(linked / "remembered"), "MESH:D003371", "--output", str(tmp_path / "kept")]) == 0
    assert "link_memory" not in capsys.readouterr().out
    kept = spacy.load(tmp_path / "kept").get_pipe("link_memory")
    assert kept.counts == spacy.load(linked / "remembered").get_pipe("link_memory").counts


@pytest.mark.parametrize("argv", [["configure", "{plain}", "{out}", "--set", "threshold=0.5"],
                                  ["configure", "{plain}", "{out}", "--anchors-from", "{data}"],
                                  ["evaluate", "{plain}", "{data}", "--set", "linking=clustering"]])
def test_linker_options_on_a_pipeline_without_a_linker_are_an_error(linked, argv, tmp_path, capsys):
    paths = {"plain": linked / "plain", "out": tmp_path / "out", "data": linked / "test.spacy"}
    assert main([arg.format(**paths) for arg in argv]) == 1
    assert f"{linked / 'plain'} has no arbo_linker for {argv[3]} to change (its components: sentencizer)" \
        in error_line(capsys)
    assert not (tmp_path / "out").exists()


def test_add_kb_finder_needs_a_linker(linked, tmp_path, capsys):
    """Its filter drops the mentions no linker links: without one it would find nothing."""
    assert main(["add-kb-finder", str(linked / "plain"), str(tmp_path / "out"), "--kb", str(linked / "kb")]) == 1
    assert f"{linked / 'plain'}: The pipeline has no arbo_linker" in error_line(capsys)
    assert not (tmp_path / "out").exists()


def _docs(kind):
    nlp = spacy.blank("en")
    doc = nlp.make_doc("Fever in children.")
    if kind == "no ids":
        doc.ents = [doc.char_span(0, 5, label="Disease")]
    return [] if kind == "empty" else [doc]


@pytest.mark.parametrize("kind,what", [("empty", "no documents"), ("no ents", "no gold mentions"),
                                       ("no ids", "no gold mention with a kb id")])
@pytest.mark.parametrize("end_to_end", [False, True])
def test_evaluate_refuses_a_corpus_without_gold_links(linked, tmp_path, kind, what, end_to_end, capsys):
    """All-zero scores would read as a result."""
    data = tmp_path / "data.spacy"
    DocBin(docs=_docs(kind)).to_disk(data)
    argv = ["evaluate", str(linked / "pipeline"), str(data), "--output", str(tmp_path / "metrics.json")]
    assert main(argv + (["--end-to-end"] if end_to_end else [])) == 1
    assert f"{data} has {what}: nothing to score links on" in error_line(capsys)
    assert not (tmp_path / "metrics.json").exists()


@pytest.mark.parametrize("command", ["tune-threshold", "tune-reranker"])
def test_tuning_refuses_a_dev_set_without_gold_links(linked, tmp_path, command, capsys):
    """Every setting would tie at zero, and the first would be stored as chosen."""
    data = tmp_path / "data.spacy"
    DocBin(docs=_docs("no ids")).to_disk(data)
    assert main([command, str(linked / "pipeline"), str(data), "--output", str(tmp_path / "out")]) == 1
    assert f"{data} has no gold mention with a kb id: nothing to score links on" in error_line(capsys)
    assert not (tmp_path / "out").exists()


def test_compare_runs_set_needs_a_linker(linked, tmp_path, capsys):
    (tmp_path / "run").mkdir()
    spacy.load(linked / "plain").to_disk(tmp_path / "run" / "model-best")
    (tmp_path / "run" / "clock.json").write_text(json.dumps({"updates": 1, "seconds": 1.0}))
    data = str(linked / "test.spacy")
    assert main(["workflow", "compare-runs", f"plain={tmp_path / 'run'}", "--dev", data, "--test", data, "--set", "top_k=2",
                 "--output", str(tmp_path / "runs.json")]) == 1
    assert f"{tmp_path / 'run' / 'model-best'} has no arbo_linker for --set to change" in error_line(capsys)
    assert not (tmp_path / "runs.json").exists()


@pytest.mark.parametrize("types", [["Disease,Nope"], ["Disease", "Nope"], ["Disease,", "Nope"]])
def test_convert_types_that_no_mention_has_is_an_error_listing_the_types(linked, tmp_path, types, capsys):
    """The docs once said --types Disease for NCBI Disease, whose types are others: 0 entities, exit 0.
    Comma- and space-separated types are one list, as in score-pubtator."""
    assert main(["convert", str(linked / "corpus.txt"), str(tmp_path / "out.spacy"), "--types", *types]) == 1
    assert f"{linked / 'corpus.txt'}: no mention has type Nope (--types); its mention types: Disease (4)." \
        in error_line(capsys)
    assert not (tmp_path / "out.spacy").exists()
    # With --limit only the documents read are known: the message says so.
    assert main(["convert", str(linked / "corpus.txt"), str(tmp_path / "out.spacy"), "--types", "Nope",
                 "--limit", "1"]) == 1
    assert "no mention in the first 1 documents (--limit) has type Nope (--types)" in error_line(capsys)


def test_convert_with_a_kb_per_type(linked, tmp_path, capsys):
    """--kb TYPE=DIR ...: each type resolved against its own KB, only those types kept."""
    corpus, kb, out = str(linked / "corpus.txt"), str(linked / "kb"), tmp_path / "out.spacy"
    capsys.readouterr()
    assert main(["convert", corpus, str(out), "--kb", f"Disease={kb}"]) == 0
    vocab = spacy.blank("en").vocab
    one_kb = [(e.label_, e.kb_id_) for doc in read_docbin(linked / "test.spacy", vocab) for e in doc.ents]
    assert [(e.label_, e.kb_id_) for doc in read_docbin(out, vocab) for e in doc.ents] == one_kb
    assert len(one_kb) == 4
    assert main(["convert", corpus, str(out), "--kb", f"Disease={kb}", f"Disease={kb}"]) == 1
    assert "--kb: two KBs for type Disease." in error_line(capsys)
    assert main(["convert", corpus, str(out), "--kb", f"Disease={kb}", kb]) == 1
    assert f"--kb {kb}: with several KBs, give each as TYPE=DIR" in error_line(capsys)


@pytest.mark.parametrize("name,text,message", [
    ("empty.jsonl", "", ": no documents to convert (an empty file?)."),
    ("empty.txt", "\n\n", ": no documents to convert (an empty file?)."),
    ("plain.txt", "This is just a plain text file.\n",
     ":1: not PubTator: a document starts with a title line 'PMID|t|TITLE'; got 'This is just a plain text file.'."),
])
def test_convert_of_a_file_without_documents_says_so(tmp_path, name, text, message, capsys):
    (tmp_path / name).write_text(text)
    assert main(["convert", str(tmp_path / name), str(tmp_path / "out.spacy")]) == 1
    assert error_line(capsys) == f"error: {tmp_path / name}{message}\n"
    assert not (tmp_path / "out.spacy").exists()


def test_build_kb_into_a_file_names_it(linked, tmp_path, capsys):
    (tmp_path / "a_file").write_text("keep me")
    assert main(["build-kb", str(linked / "ctd.tsv"), str(tmp_path / "a_file")]) == 1
    assert error_line(capsys) == (f"error: {tmp_path / 'a_file'} is a file: a KB is written as a directory; "
                                  "give a new path, or a KB directory to replace.\n")
    assert (tmp_path / "a_file").read_text() == "keep me"


def test_a_kb_that_is_not_utf8_is_an_error_naming_the_line(tmp_path, capsys):
    (tmp_path / "kb.jsonl").write_bytes(b'{"concept_id": "C1", "canonical_name": "Fever"}\n'
                                        b'{"concept_id": "C2", "canonical_name": "Caf\xe9"}\n')
    assert main(["build-kb", str(tmp_path / "kb.jsonl"), str(tmp_path / "kb")]) == 1
    assert error_line(capsys) == (f"error: {tmp_path / 'kb.jsonl'}:2: not UTF-8 (byte 0xe9, the line's byte 44); "
                                  "convert the file to UTF-8, e.g. `iconv -f latin1 -t utf-8`.\n")


@pytest.mark.parametrize("name,content", [
    ("kb.jsonl", '{"concept_id": "C1", "canonical_name": "Fever", "aliases": ["pyrexia"]}\n'),
    ("kb.tsv", CTD_HEADER + ctd_line("Fever", "C1", synonyms="pyrexia")),
])
def test_a_kb_with_a_utf8_byte_order_mark_is_read(tmp_path, name, content, capsys):
    """Windows editors write one; it is not part of the first field."""
    (tmp_path / name).write_bytes(codecs.BOM_UTF8 + content.encode("utf8"))
    assert main(["build-kb", str(tmp_path / name), str(tmp_path / "kb")]) == 0
    kb = open_store(tmp_path / "kb")
    assert kb.ids == ["C1"] and kb["C1"].aliases == ("pyrexia",)


def _corpus_with_ids(linked, tmp_path, ids):
    """test_cli's corpus, its three gold ids (fever, cough, an unknown one) spelt as `ids` say."""
    text = (linked / "corpus.txt").read_text()
    for old, new in zip(("D005334", "D003371", "D999999"), ids):
        text = text.replace(old, new)
    (tmp_path / "corpus.txt").write_text(text)
    assert main(["convert", str(tmp_path / "corpus.txt"), str(tmp_path / "data.spacy")]) == 0
    return tmp_path / "data.spacy"


@pytest.mark.parametrize("argv", [["evaluate", "{pipeline}", "{data}", "--output", "{out}"],
                                  ["tune-threshold", "{pipeline}", "{data}", "--output", "{out}"],
                                  ["workflow", "select-pipeline", "{pipeline}", "{pipeline2}", "--dev", "{data}", "--output", "{out}"]])
def test_a_corpus_of_another_kb_is_an_error_before_any_linking(linked, argv, tmp_path, capsys):
    """Every metric would be 0.0000, exit 0, nothing saying that the ids do not match."""
    data = _corpus_with_ids(linked, tmp_path, ("D111111", "D222222", "D999999"))
    capsys.readouterr()
    paths = {"pipeline": linked / "pipeline", "pipeline2": tmp_path / "pipeline2", "data": data, "out": tmp_path / "out"}
    spacy.load(linked / "pipeline").to_disk(tmp_path / "pipeline2")
    assert main([arg.format(**paths) for arg in argv]) == 1
    assert error_line(capsys) == (
        f"error: {data}: 0 of its 3 gold ids (0%) are in arbo_linker's KB; 3 missing (e.g. MESH:D111111, "
        "MESH:D222222, MESH:D999999), on 4 mentions: the corpus is of another KB; convert it against this one "
        "(convert --kb KB_DIR, which spells its ids as the KB does and the others NIL).\n")
    assert not (tmp_path / "out").exists()


def test_a_corpus_with_a_few_ids_the_kb_lacks_is_a_warning(linked, tmp_path, capsys):
    data = _corpus_with_ids(linked, tmp_path, ("D005334", "D003371", "D999999"))
    capsys.readouterr()
    assert main(["evaluate", str(linked / "pipeline"), str(data)]) == 0
    assert capsys.readouterr().err == (
        f"warning: {data}: 2 of its 3 gold ids (67%) are in arbo_linker's KB; 1 missing (e.g. MESH:D999999), "
        "on 1 mentions: those mentions cannot be linked right.\n")
    nlp = spacy.load(linked / "pipeline")
    with pytest.warns(ArboWarning, match="2 of its 3 gold ids"):
        assert len(read_gold_links(data, nlp)) == 1


def test_add_kb_finder_with_another_kb_is_an_error(linked, tmp_path, capsys):
    """Its names would be proposed and linked to whatever entity is nearest ("Acanthamoeba
    keratitis" -> Hepatitis B); without --kb the finder matches the linker's own KB."""
    EntityStore([Entity("X:1", "Acanthamoeba keratitis"), Entity("X:2", "gout")]).to_disk(tmp_path / "other")
    assert main(["add-kb-finder", str(linked / "pipeline"), str(tmp_path / "out"), "--kb", str(tmp_path / "other")]) == 1
    err = error_line(capsys)
    assert f"error: {linked / 'pipeline'}: --kb {tmp_path / 'other'} is another KB (version " in err
    assert "2 entities) than the one arbo_linker links to (version" in err and "leave --kb out to match" in err
    assert not (tmp_path / "out").exists()
    assert main(["add-kb-finder", str(linked / "pipeline"), str(tmp_path / "out")]) == 0
    nlp = spacy.load(tmp_path / "out")
    assert [(e.text, e.kb_id_) for e in nlp("Acanthamoeba keratitis and pyrexia.").ents] == [("pyrexia", "MESH:D005334")]


@pytest.mark.parametrize("action", ["add", "remove"])
def test_kb_add_and_remove_keep_the_kb_finder_in_step(linked, tmp_path, action, capsys):
    """The finder's names were left as they were: the linker knew "gout", the finder never found it."""
    assert main(["add-kb-finder", str(linked / "pipeline"), str(tmp_path / "e2e"), "--kb", str(linked / "kb")]) == 0
    (tmp_path / "gout.jsonl").write_text('{"concept_id": "MESH:D006073", "canonical_name": "gout"}\n')
    change = [str(tmp_path / "gout.jsonl")] if action == "add" else ["MESH:D003371"]
    assert main(["kb", action, str(tmp_path / "e2e"), *change, "--output", str(tmp_path / "out")]) == 0
    names = 4 if action == "add" else 2
    assert f"kb_mention_finder: matches the {names} names of the updated KB" in capsys.readouterr().out
    nlp = spacy.load(tmp_path / "out")
    found = [(e.text, e.kb_id_) for e in nlp("Gout and cough.").ents]
    assert [text for text, _ in found] == (["Gout", "cough"] if action == "add" else [])
    assert action == "remove" or found[0] == ("Gout", "MESH:D006073")


def test_a_component_made_from_another_kb_is_an_error_on_load(linked, tmp_path, capsys):
    assert main(["add-kb-finder", str(linked / "pipeline"), str(tmp_path / "e2e")]) == 0
    (tmp_path / "e2e" / "kb_mention_finder" / "kb_version.json").write_text('{"kb_version": "0123456789abcdef"}')
    assert main(["evaluate", str(tmp_path / "e2e"), str(linked / "test.spacy"), "--end-to-end"]) == 1
    err = error_line(capsys)
    assert err.startswith(f"error: {tmp_path / 'e2e'}: kb_mention_finder was made from another KB (version "
                          "0123456789abcdef) than the one arbo_linker links to (version ")
    assert "2 entities); remove it and add it again from that KB" in err
    nlp = spacy.load(tmp_path / "e2e")  # Python users: when it first reads a text
    with pytest.raises(ArboError, match="kb_mention_finder was made from another KB"):
        nlp("Fever.")


@pytest.mark.parametrize("line,message", [
    ('threshold = "abc"', "arbo_linker: threshold takes a number or null; got 'abc'."),
    ("top_kk = 3", "arbo_linker -> top_kk: unexpected argument: 'top_kk'"),
])
def test_a_bad_setting_in_a_saved_config_is_one_line_naming_the_file(linked, tmp_path, line, message, capsys):
    shutil.copytree(linked / "pipeline", tmp_path / "pipeline")
    config = tmp_path / "pipeline" / "config.cfg"
    config.write_text(config.read_text().replace("\nthreshold = null", "\n" + line))
    assert main(["evaluate", str(tmp_path / "pipeline"), str(linked / "test.spacy")]) == 1
    assert error_line(capsys) == f"error: {config}: {message}\n"


def test_kb_remove_says_what_it_removed_and_what_it_encoded(linked, tmp_path, capsys):
    """It said "1 entities encoded" of a removal; an id in another case was not found."""
    pipeline = str(linked / "pipeline")
    assert main(["kb", "remove", pipeline, "MESH:D003371", "--output", str(tmp_path / "last")]) == 0
    assert capsys.readouterr().out == (f"arbo_linker: 0 added, 0 replaced, 1 removed; none encoded; 1 entity in the "
                                       f"KB. Wrote {tmp_path / 'last'}\n")
    assert main(["kb", "remove", pipeline, "mesh:d005334", "--output", str(tmp_path / "first")]) == 0
    assert capsys.readouterr().out == (
        "arbo_linker: 0 added, 0 replaced, 1 removed; 1 entity encoded (1 moved into a removed entity's row); "
        f"1 entity in the KB. Wrote {tmp_path / 'first'}\n")
    assert open_store(tmp_path / "first" / "arbo_linker" / "kb").ids == ["MESH:D003371"]


def test_kb_add_of_an_id_in_another_case_replaces_it(linked, tmp_path, capsys):
    """`chem:0001` then `CHEM:0001` were two entities that tied, though duplicates are "compared normalised"."""
    (tmp_path / "a.jsonl").write_text('{"concept_id": "chem:0001", "canonical_name": "aspirin"}\n')
    (tmp_path / "b.jsonl").write_text('{"concept_id": "CHEM:0001", "canonical_name": "acetylsalicylic acid"}\n')
    assert main(["kb", "add", str(linked / "pipeline"), str(tmp_path / "a.jsonl"), "--output", str(tmp_path / "a")]) == 0
    assert capsys.readouterr().out == (f"arbo_linker: 1 added, 0 replaced, 0 removed; 1 entity encoded (1 new); "
                                       f"3 entities in the KB. Wrote {tmp_path / 'a'}\n")
    assert main(["kb", "add", str(tmp_path / "a"), str(tmp_path / "b.jsonl")]) == 0
    assert "0 added, 1 replaced, 0 removed; 1 entity encoded (1 replaced); 3 entities in the KB." in capsys.readouterr().out
    kb = open_store(tmp_path / "a" / "arbo_linker" / "kb")
    assert kb.ids == ["MESH:D005334", "MESH:D003371", "CHEM:0001"] and kb["CHEM:0001"].name == "acetylsalicylic acid"
    (tmp_path / "both.jsonl").write_text((tmp_path / "a.jsonl").read_text() + (tmp_path / "b.jsonl").read_text())
    assert main(["kb", "add", str(tmp_path / "a"), str(tmp_path / "both.jsonl"), "--output", str(tmp_path / "c")]) == 1
    assert error_line(capsys).startswith(f"error: {tmp_path / 'both.jsonl'}:2: duplicate id 'CHEM:0001' (first "
                                         "defined on line 1); ids are compared normalised")
    assert not (tmp_path / "c").exists()


def test_add_kb_finder_says_which_label_its_mentions_get(linked, tmp_path, capsys):
    """It labelled every KB's names Disease, a chemical KB's too; the label is the KB's type
    (tests/pipeline/test_kb_mention_finder.py), --label's, else the documented default."""
    assert main(["add-kb-finder", str(linked / "pipeline"), str(tmp_path / "default")]) == 0
    assert capsys.readouterr().out.endswith(
        "; its mentions are labelled 'Disease' (the default: the KB's entities list no one type; --label sets "
        "another)\n")
    assert main(["add-kb-finder", str(linked / "pipeline"), str(tmp_path / "symptom"), "--label", "Symptom"]) == 0
    assert capsys.readouterr().out.endswith("; its mentions are labelled 'Symptom' (--label)\n")
    assert [(e.text, e.label_) for e in spacy.load(tmp_path / "symptom")("Pyrexia.").ents] == [("Pyrexia", "Symptom")]
