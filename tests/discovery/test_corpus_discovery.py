"""Discovery over what `link` wrote: `link --discover`, `discover FILES`, the proposals' page in a
browser, and the curator's loop back through `kb add --new-only` to links to the new ids."""
import importlib
import json

import pytest
import spacy

from spacy_arbo.annotation.readers import input_files, read_records
from spacy_arbo.annotation.records import BadRecords
from spacy_arbo.cli import main
from spacy_arbo.discovery import discover_corpus, proposal_page
from spacy_arbo.discovery.nil_mentions import is_nil

from ..util import headless_chromium, launch, make_nlp

# The module (the package exports its function of the same name).
nil_mentions_module = importlib.import_module("spacy_arbo.discovery.nil_mentions")
FEVER = "MESH:D005334"
# Two drugs the toy KB lacks, mentioned in three documents, beside KB names.
DOCS = [
    ("d1", "Fever after ibuprofen.", [("Fever", FEVER), ("ibuprofen", None)]),
    ("d2", "Cough on metformin and ibuprofen.", [("metformin", None), ("ibuprofen", None)]),
    ("d3", "Fever, metformin <b>x</b>.", [("Fever", FEVER), ("metformin", None)]),
]


def jsonl(docs, with_ids=True):
    """Documents as `link` writes them: each mention with its id, NIL where the linker left it."""
    lines = []
    for doc_id, text, mentions in docs:
        found, start = [], 0
        for surface, kb_id, *label in mentions:
            begin = text.index(surface, start)
            start = begin + len(surface)
            found.append({"start": begin, "end": start, "text": surface, "label": label[0] if label else "Disease",
                          **({"kb_id": kb_id or "NIL"} if with_ids else {})})
        lines.append(json.dumps({"id": doc_id, "text": text, "mentions": found}))
    return "\n".join(lines) + "\n"


@pytest.fixture
def saved(tmp_path, toy_kb_dir):
    nlp = make_nlp(toy_kb_dir)
    nlp.to_disk(tmp_path / "pipeline")
    (tmp_path / "linked.jsonl").write_text(jsonl(DOCS), encoding="utf8")
    return tmp_path


def records(path):
    return read_records(input_files([path]), BadRecords(print))


def test_the_nil_mentions_of_a_link_output_become_proposals(saved):
    nlp = spacy.load(saved / "pipeline")
    found = discover_corpus(nlp, records(saved / "linked.jsonl"), progress=False)
    assert found.n_mentions == 4  # the NIL ones only
    names = [(p.concept_id, p.name, [(m.doc, m.start, m.end) for m in p.mentions]) for p in found.proposals]
    assert names == [("NEW:00001", "ibuprofen", [("d1", 12, 21), ("d2", 23, 32)]),
                     ("NEW:00002", "metformin", [("d2", 9, 18), ("d3", 7, 16)])]
    context = found.proposals[0].contexts()[0]
    assert (context.left, context.text, context.right) == ("Fever after", "ibuprofen", ".")
    assert [e[0] for e in found.proposals[0].nearest][:1] and found.proposals[0].parent is None  # toy KB: no tree


def test_a_short_form_the_text_defines_joins_its_long_form(saved):
    nlp = spacy.load(saved / "pipeline")
    defined = [("e1", "In myotonic dystrophy (DM) muscles fail.", [("myotonic dystrophy", None), ("DM", None)]),
               ("e2", "DM and myotonic dystrophy again.", [("DM", None), ("myotonic dystrophy", None)])]
    undefined = [("e1", "In myotonic dystrophy, DM muscles fail.", [("myotonic dystrophy", None), ("DM", None)]),
                 defined[1]]
    found = {}
    for name, docs in (("defined", defined), ("undefined", undefined)):
        (saved / f"{name}.jsonl").write_text(jsonl(docs), encoding="utf8")
        result = discover_corpus(nlp, records(saved / f"{name}.jsonl"), min_similarity=0.99, progress=False)
        found[name] = sorted(sorted(m.text for m in p.mentions) for p in result.proposals)
    assert found["defined"] == [["DM", "DM", "myotonic dystrophy", "myotonic dystrophy"]]
    assert found["undefined"] == [["DM", "DM"], ["myotonic dystrophy", "myotonic dystrophy"]]


def test_a_reading_is_encoded_once_to_one_vector_across_batches(saved, monkeypatch):
    monkeypatch.setattr(nil_mentions_module, "ENCODE_BATCH", 1)
    nlp = spacy.load(saved / "pipeline")
    encoder = nlp.get_pipe("arbo_linker").encoder
    encoded = []
    encode = encoder.encode_mentions
    monkeypatch.setattr(encoder, "encode_mentions", lambda mentions, *a: encoded.extend(mentions) or encode(mentions, *a))
    read = nil_mentions_module.nil_mentions(nlp, records(saved / "linked.jsonl"), progress=False)
    mentions, vectors = read.encoded["arbo_linker"]
    texts = [m.text for m in mentions]
    assert texts == ["ibuprofen", "metformin", "ibuprofen", "metformin"]
    assert vectors[0].tobytes() == vectors[2].tobytes() and vectors[1].tobytes() == vectors[3].tobytes()
    assert len(encoded) == 4 and encoder._mention_vectors is None  # asked 4 times, the block closed after


def test_discover_writes_proposals_and_a_page_that_kb_add_and_a_browser_take(saved, capsys):
    out, page = saved / "new.jsonl", saved / "new.html"
    assert main(["discover", str(saved / "pipeline"), str(saved / "linked.jsonl"), "--output", str(out),
                 "--html", str(page)]) == 0
    printed = capsys.readouterr().out
    assert "4 NIL mentions: 2 proposed entities of 2 or more mentions" in printed
    records_written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["concept_id"], r["canonical_name"], r["n_mentions"]) for r in records_written] == [
        ("NEW:00001", "ibuprofen", 2), ("NEW:00002", "metformin", 2)]
    html = page.read_text(encoding="utf8")
    assert html.count('<section class="proposal"') == 2
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html.split('id="records">')[0]  # escaped
    assert main(["kb", "add", str(saved / "pipeline"), str(out), "--new-only", "--output", str(saved / "accepted")]) == 0
    accepted = spacy.load(saved / "accepted")
    # Linked again, the drugs' mentions take their new ids; a second discovery numbers after them.
    linked = {(e.text, e.kb_id_) for doc in accepted.pipe(_with_mentions(accepted, DOCS)) for e in doc.ents}
    assert {("ibuprofen", "NEW:00001"), ("metformin", "NEW:00002")} <= linked
    again = discover_corpus(accepted, records(saved / "linked.jsonl"), progress=False, min_size=1)
    assert all(int(p.concept_id[4:]) > 2 for p in again.proposals)


def _with_mentions(nlp, docs):
    made = []
    for _, text, mentions in docs:
        doc = nlp.make_doc(text)
        spans, start = [], 0
        for surface, _ in mentions:
            begin = text.index(surface, start)
            start = begin + len(surface)
            spans.append(doc.char_span(begin, start, label="Disease"))
        doc.ents = spans
        made.append(doc)
    return made


def test_link_discover_runs_the_loop_from_raw_input(saved, capsys):
    """`link --mentions input --discover`: the linker's threshold leaves the drugs NIL (an exact KB
    name scores 1.0), and the output's NIL mentions are proposed."""
    nlp = spacy.load(saved / "pipeline")
    nlp.get_pipe("arbo_linker").configure(threshold=0.99)
    nlp.to_disk(saved / "nil")
    (saved / "input.jsonl").write_text(jsonl(DOCS, with_ids=False), encoding="utf8")
    out = saved / "out.jsonl"
    assert main(["link", str(saved / "nil"), str(saved / "input.jsonl"), "--output", str(out), "--mentions", "input",
                 "--discover", str(saved / "new.jsonl"), "--discover-html", str(saved / "new.html")]) == 0
    written = [json.loads(line) for line in (saved / "new.jsonl").read_text().splitlines()]
    assert [r["canonical_name"] for r in written] == ["ibuprofen", "metformin"]
    assert (saved / "new.html").exists() and "Wrote 2 proposals" in capsys.readouterr().out


def test_link_discover_refuses_what_it_cannot_read_back(saved, capsys):
    link = ["link", str(saved / "pipeline"), str(saved / "linked.jsonl"), "--mentions", "input"]
    assert main([*link, "--output", str(saved / "o.spacy"), "--discover", str(saved / "new.jsonl")]) == 1
    assert "--discover reads the output back" in capsys.readouterr().err
    assert main([*link, "--output", str(saved / "o.jsonl"), "--discover-html", str(saved / "p.html")]) == 1
    assert "--discover-html pages the proposals of --discover" in capsys.readouterr().err
    assert not (saved / "o.spacy").exists() and not (saved / "o.jsonl").exists()


def test_nothing_to_discover_is_one_line_and_other_labels_are_left_out(saved, capsys):
    (saved / "none.jsonl").write_text(jsonl([("d1", "Fever.", [("Fever", FEVER)])]), encoding="utf8")
    assert main(["discover", str(saved / "pipeline"), str(saved / "none.jsonl"), "--output", str(saved / "n.jsonl")]) == 1
    assert "No NIL mention to cluster in" in capsys.readouterr().err and not (saved / "n.jsonl").exists()
    # A recognizer's other types are written NIL by link: left out and counted, not an error.
    (saved / "mixed.jsonl").write_text(jsonl(DOCS + [("d4", "Aspirin helps.", [("Aspirin", None, "Chemical")])]),
                                       encoding="utf8")
    nlp = spacy.load(saved / "pipeline")
    nlp.get_pipe("arbo_linker").configure(labels=["Disease"])
    nlp.to_disk(saved / "disease")
    assert main(["discover", str(saved / "disease"), str(saved / "mixed.jsonl"), "--output", str(saved / "m.jsonl")]) == 0
    assert "1 NIL mentions labelled Chemical, which no linker links, left out" in capsys.readouterr().out
    nlp.get_pipe("arbo_linker").configure(labels=["Chemical"])
    nlp.to_disk(saved / "chemical")
    assert main(["discover", str(saved / "chemical"), str(saved / "linked.jsonl")]) == 1
    assert "4 NIL mentions labelled Disease, which no linker of the pipeline links" in capsys.readouterr().err


def test_a_file_linked_with_another_kb_is_refused_and_a_few_foreign_ids_are_counted(saved, capsys):
    """Its NIL mentions are another KB's: mostly foreign ids stop discover with the first one named;
    a few (a gold file's ids of another vocabulary) are counted beside the proposals."""
    other = [(f"o{i}", f"Fever and ibuprofen {i}.", [("Fever", f"OTHER:{i}"), ("ibuprofen", None)]) for i in range(12)]
    (saved / "other.jsonl").write_text(jsonl(other), encoding="utf8")
    assert main(["discover", str(saved / "pipeline"), str(saved / "other.jsonl"), "--output", str(saved / "o.jsonl")]) == 1
    err = capsys.readouterr().err
    assert "10 of the 10 linked mentions read carry ids the pipeline's KB lacks" in err
    assert "other.jsonl:1: 'Fever' -> OTHER:0" in err and not (saved / "o.jsonl").exists()
    few = DOCS + [(f"d{i}", "Fever again.", [("Fever", f"OTHER:{i}")]) for i in range(5, 8)]
    (saved / "few.jsonl").write_text(jsonl(few), encoding="utf8")
    assert main(["discover", str(saved / "pipeline"), str(saved / "few.jsonl"), "--output", str(saved / "f.jsonl")]) == 0
    assert "2 proposed entities" in (out := capsys.readouterr().out)
    # Three of five: a majority, but too few to tell another KB from a few ids of another vocabulary.
    assert "3 of 5 linked mentions carry ids the KB lacks (first: " in out and "few.jsonl:4: 'Fever' -> OTHER:5" in out


def test_link_discover_with_nothing_nil_writes_no_proposal(saved, capsys):
    out = saved / "new.jsonl"
    out.write_text("stale\n")
    (saved / "input.jsonl").write_text(jsonl([("d1", "Fever.", [("Fever", None)])], with_ids=False), encoding="utf8")
    assert main(["link", str(saved / "pipeline"), str(saved / "input.jsonl"), "--output", str(saved / "o.jsonl"),
                 "--mentions", "input", "--discover", str(out)]) == 0
    assert out.read_text() == "" and "0 NIL mentions: 0 proposed entities" in capsys.readouterr().out


@pytest.mark.parametrize("kb_id,nil", [("NIL", True), ("-1", True), ("-1|-1", True), (" NIL ", True),
                                       ("", False), ("MESH:D1", False), ("MESH:D1|NIL", False)])
def test_what_counts_as_nil(kb_id, nil):
    assert is_nil({"kb_id": kb_id}) is nil


def test_kb_add_new_only_refuses_a_parent_it_does_not_know(saved, capsys):
    assert main(["discover", str(saved / "pipeline"), str(saved / "linked.jsonl"), "--output", str(saved / "new.jsonl")]) == 0
    records = [json.loads(line) for line in (saved / "new.jsonl").read_text().splitlines()]
    records[1]["parents"] = ["MESH:D999999"]
    records[0]["parents"] = [FEVER.replace("MESH:", "")]  # the KB's entity in another spelling: fine
    (saved / "edited.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    capsys.readouterr()
    assert main(["kb", "add", str(saved / "pipeline"), str(saved / "edited.jsonl"), "--new-only"]) == 1
    err = capsys.readouterr().err
    assert "edited.jsonl:2: parent 'MESH:D999999' of 'NEW:00002' is neither in the KB nor among the new" in err


def test_the_page_works_in_headless_chromium(saved, tmp_path):
    sync_playwright, path = headless_chromium()
    nlp = spacy.load(saved / "pipeline")
    (tmp_path / "p.html").write_text(proposal_page("toy", discover_corpus(nlp, records(saved / "linked.jsonl"),
                                                                          progress=False)), encoding="utf8")
    with sync_playwright() as p:
        browser = launch(p, path)
        page = browser.new_page(accept_downloads=True)
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto((tmp_path / "p.html").as_uri())
        assert "2 of 2 proposals shown, 0 ticked" in page.inner_text("#shown")
        page.fill("#filter", "metf")
        assert "1 of 2 proposals shown" in page.inner_text("#shown")
        page.fill("#filter", "")
        page.check("section[data-id='NEW:00002'] input.accept")
        with page.expect_download() as download:
            page.click("#save")
        saved_lines = open(download.value.path(), encoding="utf8").read().splitlines()
        browser.close()
    assert errors == []
    assert [json.loads(line)["canonical_name"] for line in saved_lines] == ["metformin"]
