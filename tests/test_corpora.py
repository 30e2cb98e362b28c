import json

import pytest
import spacy
from spacy.tokens import DocBin, Span
from spacy.training import Example
from spacy.util import registry

from spacy_arbo.corpora import (
    ConversionReport, convert_corpus, guess_corpus_format, join_docbins, parse_gold_ids, read_blink_jsonl,
    read_pubtator, write_docbin,
)
from spacy_arbo.kb.entities import NIL, Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.util import ArboError

from .util import mention_line, pubtator

TITLE = "Wilson disease and copper overload in terriers"
ABSTRACT = (
    "Hepatic copper accumulation causes liver disease. "
    "Breast and ovarian cancer were rare. Nalozone toxicity had no id."
)
TEXT = f"{TITLE} {ABSTRACT}"


FIRST_DOC = pubtator("100", TITLE, ABSTRACT, [
    ("Wilson disease", "SpecificDisease", "D006527"),
    ("copper overload", "SpecificDisease", "OMIM:123"),
    ("Hepatic copper accumulation", "SpecificDisease", "D008107"),
    ("liver disease", "DiseaseClass", "D008107"),
    ("Breast and ovarian cancer", "CompositeMention", "D001943|D010051"),
    ("Nalozone toxicity", "Chemical", "-1"),
], extra=["100\tCID\tD009270\tD006527"])
SECOND_DOC = pubtator("200", "Cancer genes.", "No mentions of colon cancer here.", [
    ("colon cancer", "SpecificDisease", " D003110+D015179"),
])


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(FIRST_DOC + SECOND_DOC, encoding="utf8")
    return path


@pytest.fixture
def kb():
    return EntityStore([
        Entity("MESH:D008107", "Liver Diseases", alt_ids=("OMIM:123",)),
        Entity("MESH:D006527", "Hepatolenticular Degeneration"),
        Entity("MESH:D001943", "Breast Neoplasms"),
        Entity("MESH:D003110", "Colonic Neoplasms"),
    ])


def ents(doc):
    return [(e.start_char, e.end_char, e.text, e.label_, e.kb_id_) for e in doc.ents]


def test_read_pubtator_documents(corpus):
    first, second = read_pubtator(corpus)
    assert (first.pmid, first.title, first.abstract) == ("100", TITLE, ABSTRACT)
    assert first.text == TEXT
    assert len(first.mentions) == 6  # the CID relation line is skipped
    assert first.mentions[0] == (0, 14, "Wilson disease", "SpecificDisease", "D006527")
    assert first.mentions[5].ids_raw == "-1"
    assert second.pmid == "200" and second.mentions[0].text == "colon cancer"


def test_read_pubtator_keeps_composite_part_field_and_stray_space(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text(
        "1|t|Breast and ovarian cancer.\n1|a|x\n"
        "1\t0\t25\tBreast and ovarian cancer  \tDisease\tD001943|D010051"
        "\tbreast cancer|ovarian cancer\n",
        encoding="utf8",
    )
    (doc,) = read_pubtator(path)
    assert doc.mentions == [(0, 25, "Breast and ovarian cancer", "Disease", "D001943|D010051")]


@pytest.mark.parametrize("bad_line, message", [
    ("1\t0\t5\tTitle\tDisease", "expected 6 tab-separated fields"),
    ("1\t0\t5\tTitle\tDisease\tD1\tparts\textra", "found 8"),
    ("1\t0\tfive\tTitle\tDisease\tD1", "offsets must be integers"),
    ("1\t0\t5\tTitel\tDisease\tD1", "'Titel' does not match the text at 0-5: 'Title'"),
    ("1\t0\t50\tTitle\tDisease\tD1", "outside the text"),
    ("2\t0\t5\tTitle\tDisease\tD1", "PMID '2' outside that document"),
    ("1\t0\t5\tTitle", "expected 6 tab-separated fields"),
])
def test_read_pubtator_malformed(tmp_path, bad_line, message):
    path = tmp_path / "bad.txt"
    path.write_text(f"1|t|Title here\n1|a|Abstract.\n{bad_line}\n", encoding="utf8")
    with pytest.raises(ArboError, match=rf"bad.txt:3: .*{message}"):
        list(read_pubtator(path))


def test_read_pubtator_mention_before_abstract(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("1|t|Title here\n1\t0\t5\tTitle\tDisease\tD1\n", encoding="utf8")
    with pytest.raises(ArboError, match="bad.txt:2: mention before the abstract"):
        list(read_pubtator(path))


def test_split_ids():
    assert parse_gold_ids("D001|D002") == ["D001", "D002"]
    assert parse_gold_ids(" D001+OMIM:2 ") == ["D001", "OMIM:2"]
    assert parse_gold_ids("-1") == []


def test_convert_without_kb_normalises_ids(corpus):
    docs, report = convert_corpus(corpus)
    assert len(docs) == 2
    assert ents(docs[0]) == [
        (0, 14, "Wilson disease", "SpecificDisease", "MESH:D006527"),
        (19, 34, "copper overload", "SpecificDisease", "OMIM:123"),
        (47, 74, "Hepatic copper accumulation", "SpecificDisease", "MESH:D008107"),
        (82, 95, "liver disease", "DiseaseClass", "MESH:D008107"),
        (97, 122, "Breast and ovarian cancer", "CompositeMention", "MESH:D001943|MESH:D010051"),
        (134, 151, "Nalozone toxicity", "Chemical", NIL),
    ]
    assert ents(docs[1])[0][2:] == ("colon cancer", "SpecificDisease", "MESH:D003110|MESH:D015179")
    assert docs[0].user_data["doc_id"] == "100"
    assert docs[0].user_data["raw_ids"][4] == [97, 122, "D001943|D010051"]
    assert (report.docs, report.mentions, report.entities) == (2, 7, 7)
    assert (report.nil_mentions, report.no_id, report.not_in_kb) == (1, 1, 0)
    assert report.composite_mentions == 2
    assert report.entities_by_type == {"SpecificDisease": 4, "DiseaseClass": 1,
                                       "CompositeMention": 1, "Chemical": 1}


def test_convert_with_kb_resolves_ids(corpus, kb):
    docs, report = convert_corpus(corpus, kb=kb)
    assert [e.kb_id_ for e in docs[0].ents] == [
        "MESH:D006527", "MESH:D008107", "MESH:D008107", "MESH:D008107", "MESH:D001943", NIL,
    ]
    assert docs[1].ents[0].kb_id_ == "MESH:D003110"
    assert (report.nil_mentions, report.no_id, report.not_in_kb) == (1, 1, 0)
    assert report.composite_parts_dropped == 2


def test_convert_ids_missing_from_kb_are_nil(tmp_path, kb):
    path = tmp_path / "c.txt"
    path.write_text(pubtator("1", "Gout and lupus.", "x", [
        ("Gout", "Disease", "D006073"), ("lupus", "Disease", "D008180|D008181"),
    ]), encoding="utf8")
    (doc,), report = convert_corpus(path, kb=kb)
    assert [e.kb_id_ for e in doc.ents] == [NIL, NIL]
    assert (report.nil_mentions, report.not_in_kb, report.composite_parts_dropped) == (2, 2, 2)


def test_convert_with_a_kb_per_type_resolves_each_type_against_its_own(tmp_path, kb):
    chemicals = EntityStore([Entity("MESH:D009270", "Naloxone")])
    path = tmp_path / "c.txt"
    path.write_text(pubtator("1", "Naloxone for liver disease, not D009270 poisoning.", "x", [
        ("Naloxone", "Chemical", "D009270"), ("liver disease", "Disease", "D008107"),
        ("D009270 poisoning", "Disease", "D009270"), ("x", "Gene", "1"),
    ]), encoding="utf8")
    (doc,), report = convert_corpus(path, kb={"Disease": kb, "Chemical": chemicals})
    # A disease spelt with a chemical's id is not in the disease KB: NIL. The Gene has no KB: not kept.
    assert [(e.label_, e.kb_id_) for e in doc.ents] == [
        ("Chemical", "MESH:D009270"), ("Disease", "MESH:D008107"), ("Disease", NIL)]
    assert (report.skipped_by_type, report.not_in_kb) == (1, 1)
    with pytest.raises(ArboError, match=r"--types Gene: no KB given for that type; the KBs are given for "
                                        r"Disease, Chemical \(--kb TYPE=DIR ...\)."):
        convert_corpus(path, kb={"Disease": kb, "Chemical": chemicals}, types=["Gene"])


def test_type_filter(corpus):
    docs, report = convert_corpus(corpus, types=["DiseaseClass", "Chemical"])
    assert len(docs) == 2
    assert [e.text for e in docs[0].ents] == ["liver disease", "Nalozone toxicity"]
    assert list(docs[1].ents) == []
    assert (report.mentions, report.entities, report.skipped_by_type) == (7, 2, 5)


def test_title_is_one_sentence(tmp_path):
    title = "Suxamethonium infusion rate and fasciculations. A dose-response study"
    path = tmp_path / "c.txt"
    path.write_text(pubtator("1", title, "Fasciculations were seen. They stopped.", [
        ("fasciculations", "Disease", "D005207"),
    ]), encoding="utf8")
    (doc,), _ = convert_corpus(path)
    assert [s.text for s in doc.sents] == [title, "Fasciculations were seen.", "They stopped."]


def test_mentions_are_never_split_across_sentences(tmp_path):
    abstract = "We isolated Bacillus sp. nov. strain K12 infection in cattle. It spread."
    path = tmp_path / "c.txt"
    path.write_text(pubtator("1", "A new infection", abstract, [
        ("Bacillus sp. nov. strain K12 infection", "Disease", "D001424"),
    ]), encoding="utf8")
    (doc,), report = convert_corpus(path)
    (ent,) = doc.ents
    assert ent.sent.start <= ent.start and ent.end <= ent.sent.end
    assert [s.text for s in doc.sents] == [
        "A new infection",
        "We isolated Bacillus sp. nov. strain K12 infection in cattle.",
        "It spread.",
    ]
    assert report.sentence_breaks_removed == 2


def test_overlapping_mentions_keep_the_longer(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text(pubtator("1", "Breast cancer risk.", "x", [
        ("cancer", "Disease", "D009369"), ("Breast cancer", "Disease", "D001943"),
    ]), encoding="utf8")
    (doc,), report = convert_corpus(path)
    assert ents(doc) == [(0, 13, "Breast cancer", "Disease", "MESH:D001943")]
    assert report.overlapping_dropped == 1


def test_expanded_spans_are_counted(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text(pubtator("1", "Autosomal disorders.", "x", [
        ("disorde", "Disease", "D030342"),
    ]), encoding="utf8")
    (doc,), report = convert_corpus(path)
    assert [e.text for e in doc.ents] == ["disorders"]
    assert report.expanded_spans == 1


def test_docbin_round_trip(corpus, tmp_path):
    docs, _ = convert_corpus(corpus)
    out = tmp_path / "out" / "train.spacy"
    write_docbin(docs, out)
    nlp = spacy.blank("en")
    loaded = list(DocBin().from_disk(out).get_docs(nlp.vocab))
    assert [d.text for d in loaded] == [d.text for d in docs]
    assert [ents(d) for d in loaded] == [ents(d) for d in docs]
    assert [[s.text for s in d.sents] for d in loaded] == [[s.text for s in d.sents] for d in docs]
    assert [d.user_data["doc_id"] for d in loaded] == ["100", "200"]
    assert not list(out.parent.glob(".*"))  # no temporary left behind


def test_join_docbins_keeps_every_document_in_order(corpus, tmp_path):
    docs, _ = convert_corpus(corpus)
    write_docbin(docs[:1], tmp_path / "a.spacy")
    write_docbin(docs[1:], tmp_path / "b.spacy")
    counts = join_docbins([tmp_path / "b.spacy", tmp_path / "a.spacy"], tmp_path / "ab.spacy", spacy.blank("en").vocab)
    assert counts == [(tmp_path / "b.spacy", 1), (tmp_path / "a.spacy", 1)]
    joined = list(DocBin().from_disk(tmp_path / "ab.spacy").get_docs(spacy.blank("en").vocab))
    assert [d.user_data["doc_id"] for d in joined] == ["200", "100"]
    assert [ents(d) for d in joined] == [ents(docs[1]), ents(docs[0])]


def test_join_docbins_refuses_a_document_twice_and_its_own_output(corpus, tmp_path):
    docs, _ = convert_corpus(corpus)
    write_docbin(docs, tmp_path / "a.spacy")
    write_docbin(docs[1:], tmp_path / "b.spacy")
    vocab = spacy.blank("en").vocab
    with pytest.raises(ArboError, match="'Cancer genes. No mentions.*' is in both '.*a.spacy' and '.*b.spacy'"):
        join_docbins([tmp_path / "a.spacy", tmp_path / "b.spacy"], tmp_path / "ab.spacy", vocab)
    assert not (tmp_path / "ab.spacy").exists()
    with pytest.raises(ArboError, match="is also an input"):
        join_docbins([tmp_path / "a.spacy"], tmp_path / "a.spacy", vocab)
    with pytest.raises(ArboError, match="missing.spacy' does not exist"):
        join_docbins([tmp_path / "a.spacy", tmp_path / "missing.spacy"], tmp_path / "c.spacy", vocab)


def test_pubtator_reader_yields_examples(corpus, kb, tmp_path):
    kb.to_disk(tmp_path / "kb")
    create_reader = registry.readers.get("spacy_arbo.PubTatorCorpus.v1")
    nlp = spacy.blank("en")
    examples = list(create_reader(corpus, kb_path=tmp_path / "kb")(nlp))
    assert len(examples) == 2 and all(isinstance(eg, Example) for eg in examples)
    assert examples[0].predicted.text == TEXT and not examples[0].predicted.ents
    assert [e.kb_id_ for e in examples[0].reference.ents][:2] == ["MESH:D006527", "MESH:D008107"]
    limited = list(create_reader(corpus, types=["Chemical"], limit=1)(nlp))
    assert [[e.text for e in eg.reference.ents] for eg in limited] == [["Nalozone toxicity"]]


def blink_line(**fields):
    record = {"context_left": "Patients with ", "mention": "liver disease",
              "context_right": " improved.", "label_id": "D008107"}
    record.update(fields)
    return json.dumps({k: v for k, v in record.items() if v is not None})


def test_read_blink_jsonl(tmp_path):
    path = tmp_path / "mentions.jsonl"
    path.write_text("\n".join([
        blink_line(mention_id="m1", context_doc_id="7", type="Disease"),
        "",
        blink_line(context_left="Severe ", label_id=42, doc_id="7"),
    ]) + "\n", encoding="utf8")
    first, second = read_blink_jsonl(path)
    assert first.text == "Patients with liver disease improved."
    assert first.mentions == [(14, 27, "liver disease", "Disease", "D008107")]
    assert (first.doc_id, first.context_doc_id) == ("m1", "7")
    assert (second.doc_id, second.label_id, second.type) == ("mentions.jsonl:3", "42", "ENTITY")


def test_convert_blink_keeps_mentions_of_one_document_apart(tmp_path, kb):
    path = tmp_path / "mentions.jsonl"
    path.write_text("\n".join([
        blink_line(mention_id="m1", context_doc_id="7"),
        blink_line(mention_id="m2", context_doc_id="7", mention="liver failure",
                   label_id="OMIM:123"),
        blink_line(mention_id="m3", context_doc_id="8", label_id="C000000"),
    ]), encoding="utf8")
    docs, report = convert_corpus(path, kb=kb)
    assert len(docs) == 3
    assert ents(docs[0]) == [(14, 27, "liver disease", "ENTITY", "MESH:D008107")]
    assert ents(docs[1]) == [(14, 27, "liver failure", "ENTITY", "MESH:D008107")]
    assert docs[2].ents[0].kb_id_ == NIL
    assert [(d.user_data["doc_id"], d.user_data["context_doc_id"]) for d in docs] == [
        ("m1", "7"), ("m2", "7"), ("m3", "8")]
    assert (report.docs, report.mentions, report.not_in_kb) == (3, 3, 1)


@pytest.mark.parametrize("line, message", [
    (blink_line(mention=None), "missing or non-string field 'mention'"),
    (blink_line(context_left=None), "missing or non-string field 'context_left'"),
    (blink_line(label_id=None), "missing field 'label_id'"),
    (blink_line(mention=" "), "field 'mention' is empty"),
    (blink_line(type=3), "field 'type' must be a string"),
    ('{"mention": "x",', r"not a JSON object \(invalid JSON"),
    ("[1, 2]", "expected a JSON object"),
])
def test_read_blink_jsonl_malformed(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(blink_line() + "\n" + line + "\n", encoding="utf8")
    with pytest.raises(ArboError, match=f"bad.jsonl:2: {message}"):
        list(read_blink_jsonl(path))


def test_format_detection(tmp_path, corpus):
    jsonl_in_txt = tmp_path / "mentions.txt"
    jsonl_in_txt.write_text("\n" + blink_line() + "\n", encoding="utf8")
    assert guess_corpus_format(corpus) == "pubtator"
    assert guess_corpus_format(jsonl_in_txt) == "blink"
    assert guess_corpus_format(tmp_path / "x.jsonl") == "blink"
    assert len(convert_corpus(jsonl_in_txt)[0]) == 1
    with pytest.raises(ArboError, match="Unknown corpus format 'conll'"):
        convert_corpus(corpus, fmt="conll")
    with pytest.raises(ArboError, match="does not exist"):
        convert_corpus(tmp_path / "missing.txt")


def test_report_table():
    report = ConversionReport(source="x.txt", docs=2, mentions=1234)
    report.entities_by_type["Disease"] = 5
    table = str(report)
    assert table.startswith("Conversion of x.txt")
    assert "gold mentions read" in table and "1,234" in table
    assert "entities labelled Disease" in table


@pytest.mark.slow
def test_real_ncbi_disease(data_dir):
    from spacy_arbo.kb.readers import read_kb

    corpus = data_dir / "ncbi_disease" / "NCBItestset_corpus.txt"
    docs, report = convert_corpus(corpus)
    assert (len(docs), report.mentions, report.entities) == (100, 960, 960)
    assert report.nil_mentions == 0
    assert all(e.sent.start <= e.start and e.end <= e.sent.end for d in docs for e in d.ents)
    kb = read_kb(data_dir / "ctd" / "CTD_diseases_2017-06-06.tsv.gz", "ctd")
    docs, report = convert_corpus(corpus, kb=kb)
    # 198 of the 201 test ids are in CTD 2017; the other 3 cover 6 mentions.
    assert (report.entities, report.not_in_kb, report.nil_mentions) == (960, 6, 6)


@pytest.mark.slow
def test_real_bc5cdr(data_dir):
    corpus = data_dir / "bc5cdr" / "CDR_train.PubTator.txt"
    docs, report = convert_corpus(corpus)
    assert (len(docs), report.mentions) == (500, 9385)  # CID relation lines are not mentions
    assert report.no_id == report.nil_mentions == 76
    assert report.entities_by_type == {"Chemical": 5199, "Disease": 4182}
    assert sum(e.kb_id_ == NIL for d in docs for e in d.ents) == 76
    docs, report = convert_corpus(corpus, types=["Disease"])
    assert (report.entities, report.skipped_by_type) == (4182, 5203)
    assert {e.label_ for d in docs for e in d.ents} == {"Disease"}


@pytest.mark.slow
def test_real_bc5cdr_named_conversion(data_dir, tmp_path):
    from spacy_arbo.corpora import convert_named_corpus, read_docbin
    from spacy_arbo.kb.readers import read_kb

    kb = read_kb(data_dir / "ctd" / "CTD_diseases_2017-06-06.tsv.gz", "ctd")
    results = convert_named_corpus("bc5cdr", data_dir, tmp_path, kb=kb)
    assert [(r.split, r.source.name, r.same_as) for r in results] == [
        ("train", "CDR_train.PubTator.txt", ""), ("dev", "CDR_dev.PubTator.txt", ""), ("test", "CDR_dev.PubTator.txt", "dev")]
    figures = {r.split: (r.report.docs, r.report.entities, r.report.skipped_by_type, r.report.nil_mentions,
                         r.report.no_id, r.report.not_in_kb, r.report.composite_mentions) for r in results}
    # Every BC5CDR disease id is in CTD: the only NIL mentions are the -1 ones.
    assert figures == {"train": (500, 4182, 5203, 32, 32, 0, 95),
                       "dev": (500, 4244, 5347, 16, 16, 0, 97),
                       "test": (500, 4244, 5347, 16, 16, 0, 97)}
    ents = [e for d in read_docbin(tmp_path / "train.spacy", spacy.blank("en").vocab) for e in d.ents]
    assert {e.label_ for e in ents} == {"Disease"}
    assert sum(e.kb_id_ == "MESH:D008107" for e in ents) == 14  # liver disease, hepatic impairment, ...
    assert sum(e.kb_id_ == NIL for e in ents) == 32
    assert sum("|" in e.kb_id_ for e in ents) == 94  # one composite, D020258|D020258|D020258, is one id
    assert (tmp_path / "test.spacy").read_bytes() == (tmp_path / "dev.spacy").read_bytes()


def test_one_label_augmenter_keeps_spans_and_ids():
    nlp = spacy.blank("en")
    doc = nlp("Fever and breast cancer.")
    doc.ents = [Span(doc, 0, 1, label="SpecificDisease", kb_id="D1"), Span(doc, 2, 4, label="DiseaseClass", kb_id="D2")]
    augment = registry.augmenters.get("spacy_arbo.one_label.v1")(label="Disease")
    (example,) = augment(nlp, Example(nlp.make_doc(doc.text), doc))
    assert [(e.text, e.label_, e.kb_id_) for e in example.reference.ents] == [
        ("Fever", "Disease", "D1"), ("breast cancer", "Disease", "D2")]
    assert [e.label_ for e in doc.ents] == ["SpecificDisease", "DiseaseClass"]  # the corpus is left as it is
    # label = null keeps the corpus's types (a recognizer of chemicals and diseases for two KBs).
    (kept,) = registry.augmenters.get("spacy_arbo.one_label.v1")(label=None)(nlp, Example(nlp.make_doc(doc.text), doc))
    assert [(e.text, e.label_, e.kb_id_) for e in kept.reference.ents] == [
        ("Fever", "SpecificDisease", "D1"), ("breast cancer", "DiseaseClass", "D2")]


def test_one_label_augmenter_keeps_missing_annotation_missing():
    from spacy.tokens import Span
    from spacy.training import Example
    from spacy.util import registry

    nlp = spacy.blank("en")
    reference = nlp.make_doc("Lung cancer and some words here .")
    reference.set_ents([Span(reference, 0, 2, label="SpecificDisease", kb_id="D1")],
                       outside=[reference[3:5]], default="missing")
    augment = registry.augmenters.get("spacy_arbo.one_label.v1")(label="Disease")
    (example,) = augment(nlp, Example(nlp.make_doc(reference.text), reference))
    assert [(t.ent_iob_, t.ent_type_) for t in example.reference] == [
        ("B", "Disease"), ("I", "Disease"), ("", ""), ("O", ""), ("O", ""), ("", ""), ("", "")]
    assert example.reference.ents[0].kb_id_ == "D1"
