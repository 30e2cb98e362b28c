"""`link --mentions input|both`: the input's own mentions linked, off token boundaries and
overlapping ones included, none dropped."""
import json

import pytest
import spacy
from spacy.tokens import DocBin

from spacy_arbo.annotation.input_mentions import layers_of, mention_changers, place_mentions
from spacy_arbo.annotation.runner import link_corpus
from spacy_arbo.kb.entities import NIL
from spacy_arbo.util import ArboError

from .conftest import toy_nlp, toy_pipeline  # noqa: F401

TEXT = "Patients with diabetes mellitus often develop heart failure."


def mention(text, part, label="Disease", kb_id="", occurrence=0):
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(part, start + 1)
    return {"start": start, "end": start + len(part), "text": part, "label": label, "kb_id": kb_id}


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def run(pipeline, inputs, output, **options):
    return link_corpus(pipeline, inputs, output, report=lambda line: None, progress=False, **options)


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_mentions_off_token_boundaries_are_aligned_and_overlaps_layered():
    doc = spacy.blank("en").make_doc(TEXT)
    mentions = [mention(TEXT, "diabetes mellitus"), mention(TEXT, "iabetes"), mention(TEXT, "mellitus often"),
                mention(TEXT, "heart failure"), {"start": 8, "end": 9, "text": " ", "label": "", "kb_id": ""}]
    placement = place_mentions(doc, mentions)
    # "iabetes" (mid-token) aligns to the token "diabetes"; the whitespace-only mention is on no token.
    assert placement.unplaced == [4]
    by_index = {m.index: m for layer in placement.layers for m in layer}
    assert (by_index[1].start, by_index[1].end, by_index[1].aligned) == (2, 3, True)
    assert not by_index[0].aligned
    # Longest first: "diabetes mellitus" and "heart failure" stay in the doc, the overlapping ones go to
    # copies, each copy without overlaps ("iabetes" and "mellitus often" overlap "diabetes mellitus" only).
    assert [[m.index for m in layer] for layer in placement.layers] == [[0, 3], [2, 1]] or \
        [[m.index for m in layer] for layer in placement.layers] == [[0, 3], [1, 2]]
    assert all(not set(range(a.start, a.end)) & set(range(b.start, b.end))
               for layer in placement.layers for a in layer for b in layer if a is not b)
    same_span = [by_index[0], by_index[0].__class__(9, 2, 4, "Disease", False)]
    assert [len(layer) for layer in layers_of(same_span)] == [1, 1]


def test_input_mentions_are_linked_with_their_own_spans_and_labels(toy_pipeline, tmp_path):
    records = [{"id": "a", "text": TEXT, "mentions": [
        mention(TEXT, "diabetes mellitus", "Disease"), mention(TEXT, "iabetes", "Odd"),
        mention(TEXT, "heart failure", "")]},
        {"id": "b", "text": "No mentions given here, though fever is a KB name."}]
    summary = run(toy_pipeline, [write_jsonl(tmp_path / "in.jsonl", records)], tmp_path / "out.jsonl",
                  mentions="input")
    out = read_jsonl(tmp_path / "out.jsonl")
    given = out[0]["mentions"]
    assert [(m["start"], m["end"], m["text"], m["label"]) for m in given] == \
        [(m["start"], m["end"], m["text"], m["label"]) for m in records[0]["mentions"]]
    assert [m["kb_id"] for m in given] == ["MESH:D003920", "MESH:D003920", "MESH:D006333"]
    assert given[1]["linked_span"] == [14, 22] and "linked_span" not in given[0]
    assert all(m["candidates"] and m["name"] for m in given)
    # The KB finder of the pipeline is left out: "fever" in the second record is not a mention.
    assert out[1]["mentions"] == []
    counts = summary.input_mentions
    assert (counts["input"], counts["aligned"], counts["overlapping"], counts["on_no_token"]) == (3, 1, 2, 0)
    assert "3 of them the input's (1 aligned to token boundaries, 2 overlapping another (linked in copies" in \
        summary.line(tmp_path / "out.jsonl")


def test_a_linker_without_mention_finder_links_input_mentions(toy_kb_dir, tmp_path):
    from ..util import make_nlp

    make_nlp(toy_kb_dir, candidate_source="tfidf").to_disk(tmp_path / "linker_only")
    records = [{"id": "a", "text": TEXT, "mentions": [mention(TEXT, "heart failure")]}]
    inputs = [write_jsonl(tmp_path / "in.jsonl", records)]
    with pytest.raises(ArboError, match="or link the input's own mentions with --mentions input"):
        run(tmp_path / "linker_only", inputs, tmp_path / "out.jsonl")
    run(tmp_path / "linker_only", inputs, tmp_path / "out.jsonl", mentions="input")
    assert [m["kb_id"] for m in read_jsonl(tmp_path / "out.jsonl")[0]["mentions"]] == ["MESH:D006333"]


def test_links_in_a_copy_equal_links_in_the_document(toy_pipeline, tmp_path):
    """A mention linked in a copy (it overlaps a longer one) gets the link it gets alone."""
    alone = [{"id": "a", "text": TEXT, "mentions": [mention(TEXT, "heart failure")]}]
    overlapped = [{"id": "a", "text": TEXT, "mentions": [mention(TEXT, "heart failure"),
                                                         mention(TEXT, "develop heart failure")]}]
    run(toy_pipeline, [write_jsonl(tmp_path / "alone.jsonl", alone)], tmp_path / "alone_out.jsonl", mentions="input")
    run(toy_pipeline, [write_jsonl(tmp_path / "over.jsonl", overlapped)], tmp_path / "over_out.jsonl",
        mentions="input")
    by_itself = read_jsonl(tmp_path / "alone_out.jsonl")[0]["mentions"][0]
    in_copy = read_jsonl(tmp_path / "over_out.jsonl")[0]["mentions"][0]
    assert in_copy == by_itself


def test_both_keeps_input_mentions_and_adds_the_pipelines_elsewhere(toy_pipeline, tmp_path):
    text = "Fever and coughing were reported with heart failure."
    records = [{"id": "a", "text": text, "mentions": [mention(text, "Fever and coughing", "Symptom"),
                                                      mention(text, "heart", "Organ")]}]
    run(toy_pipeline, [write_jsonl(tmp_path / "in.jsonl", records)], tmp_path / "out.jsonl", mentions="both")
    got = [(m["text"], m["label"], m["source"]) for m in read_jsonl(tmp_path / "out.jsonl")[0]["mentions"]]
    # The KB finder would propose "Fever", "coughing" and "heart failure": each overlaps an input mention.
    assert got == [("Fever and coughing", "Symptom", "input"), ("heart", "Organ", "input")]
    records[0]["mentions"] = [mention(text, "heart", "Organ")]
    run(toy_pipeline, [write_jsonl(tmp_path / "in2.jsonl", records)], tmp_path / "out2.jsonl", mentions="both")
    got = [(m["text"], m["source"], m["kb_id"]) for m in read_jsonl(tmp_path / "out2.jsonl")[0]["mentions"]]
    assert got[:2] == [("Fever", "pipeline", "MESH:D005334"), ("coughing", "pipeline", "MESH:D003371")]
    assert got[2][:2] == ("heart", "input")


def test_spacy_output_keeps_overlapping_links_in_a_span_group(toy_pipeline, tmp_path):
    records = [{"id": "a", "text": TEXT, "mentions": [mention(TEXT, "heart failure"),
                                                      mention(TEXT, "failure")]}]
    run(toy_pipeline, [write_jsonl(tmp_path / "in.jsonl", records)], tmp_path / "out.spacy", fmt="spacy",
        mentions="input")
    nlp = spacy.blank("en")
    (doc,) = DocBin().from_disk(tmp_path / "out.spacy").get_docs(nlp.vocab)
    assert [(e.text, e.kb_id_) for e in doc.ents] == [("heart failure", "MESH:D006333")]
    assert [(s.text, bool(s.kb_id_)) for s in doc.spans["overlapping_mentions"]] == [("failure", True)]


@pytest.mark.parametrize("fmt", ["pubtator", "bioc"])
def test_pubtator_and_bioc_mentions_are_linked(toy_pipeline, tmp_path, fmt):
    title, abstract = "Wilson disease (WD) is rare.", "WD causes copper build-up."
    text = f"{title} {abstract}"
    lines = [f"1|t|{title}", f"1|a|{abstract}", "1\t0\t14\tWilson disease\tDisease\tD006527",
             f"1\t{text.index('WD', 20)}\t{text.index('WD', 20) + 2}\tWD\tDisease\tD006527", ""]
    (tmp_path / "in.pubtator").write_text("\n".join(lines) + "\n")
    run(toy_pipeline, [tmp_path / "in.pubtator"], tmp_path / "first.xml", fmt="bioc", mentions="input")
    source = tmp_path / ("in.pubtator" if fmt == "pubtator" else "first.xml")
    run(toy_pipeline, [source], tmp_path / "out.jsonl", mentions="input")
    got = [(m["start"], m["text"], m["kb_id"]) for m in read_jsonl(tmp_path / "out.jsonl")[0]["mentions"]]
    assert got == [(0, "Wilson disease", "MESH:D006527"), (text.index("WD", 20), "WD", "MESH:D006527")]


def test_input_mode_leaves_out_what_sets_entities(toy_nlp):
    assert "kb_mention_finder" in mention_changers(toy_nlp)
    assert not {"arbo_linker"} & set(mention_changers(toy_nlp))


def test_a_mention_on_no_token_is_written_nil(toy_pipeline, tmp_path):
    text = "Fever  and cough."
    records = [{"id": "a", "text": text, "mentions": [{"start": 6, "end": 7, "text": " ", "label": "X"},
                                                      mention(text, "Fever")]}]
    summary = run(toy_pipeline, [write_jsonl(tmp_path / "in.jsonl", records)], tmp_path / "out.jsonl",
                  mentions="input")
    first, second = read_jsonl(tmp_path / "out.jsonl")[0]["mentions"]
    assert (first["kb_id"], first["candidates"], first["linked_span"]) == (NIL, [], None)
    assert second["kb_id"] == "MESH:D005334"
    assert summary.input_mentions["on_no_token"] == 1


def test_inputs_without_a_mention_are_an_error_under_input_and_a_warning_under_both(toy_pipeline, tmp_path):
    records = [{"id": "a", "text": "Fever and cough."}, {"id": "b", "text": "Nothing given."}]
    inputs = [write_jsonl(tmp_path / "in.jsonl", records)]
    with pytest.raises(ArboError, match="--mentions input: none of the 2 documents .* holds a mention"):
        run(toy_pipeline, inputs, tmp_path / "out.jsonl", mentions="input")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
    lines = []
    link_corpus(toy_pipeline, inputs, tmp_path / "both.jsonl", mentions="both", report=lines.append, progress=False)
    assert [line for line in lines if "--mentions both" in line] == [
        f"warning: --mentions both: none of the 2 documents of {inputs[0]} holds a mention (PubTator annotation "
        "lines, BioC annotations, a JSONL 'mentions' list); only the pipeline's mentions were linked."]
    assert [m["text"] for m in read_jsonl(tmp_path / "both.jsonl")[0]["mentions"]] == ["Fever", "cough"]
