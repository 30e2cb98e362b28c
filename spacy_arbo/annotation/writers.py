"""Linked documents (the JSON objects `linked.LinkedDocuments` makes) written as JSONL,
PubTator or BioC (XML or JSON), one document at a time so the output streams. Nothing written
depends on when or where it was made (no dates, no hosts): the same documents give the same bytes."""
import json
import re
from typing import Any, Callable, Dict, Iterable, List, TextIO, Tuple

from ..corpora.gold_mention import NO_ID
from ..kb.entities import NIL
from .formats import OUTPUT_FORMATS  # noqa: F401 (importable from here, as before formats.py)
from .readers import import_bioc

LinkedDocument = Dict[str, Any]
# The BioC collection's `source`; its `date` stays empty, so reruns write the same bytes.
BIOC_SOURCE = "spacy-arbo link"
# A mention's own keys; every other key it has (name, score, candidates, confidence, review, the
# proposal a review holds back) is a BioC infon, so BioC says what JSONL says.
SPAN_KEYS = ("start", "end", "text", "label", "kb_id")
# Characters a PubTator line cannot hold (each becomes a space, which keeps every offset): tabs, and
# every character Python's `str.splitlines` (and so many readers of the format) ends a line at.
LINE_BREAKS = re.compile("[\t\n\x0b\x0c\r\x1c\x1d\x1e\x85\u2028\u2029]")
# Characters XML 1.0 cannot hold (form feeds of PDF extractions, other controls, lone surrogates).
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


# Characters JSON may hold raw that `str.splitlines` (and so many readers of JSONL) ends a line at.
JSON_LINE_BREAKS = re.compile("[\x85\u2028\u2029]")


def json_line(document: LinkedDocument) -> str:
    """One document, on one line for every reader of lines (those three escaped, as JSON allows)."""
    text = json.dumps(document, ensure_ascii=False)
    return JSON_LINE_BREAKS.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def write_jsonl(documents: Iterable[LinkedDocument], handle: TextIO) -> None:
    for document in documents:
        handle.write(json_line(document))


def title_and_abstract(document: LinkedDocument) -> Tuple[str, str]:
    """PubTator's two lines: the first passage and the rest of the text (PubTator's offsets
    count title + " " + abstract); line breaks and tabs become spaces, which keeps every offset."""
    text = one_line(document["text"])
    passages = document.get("passages") or []
    title_end = passages[0][1] if len(passages) > 1 else len(text)
    return text[:title_end], text[title_end + 1:]


def one_line(value: Any) -> str:
    return LINE_BREAKS.sub(" ", str(value))


def pubtator_id(kb_id: str) -> str:
    """PubTator spells "no id" -1 (so scorers of PubTator files skip it)."""
    return NO_ID if kb_id in ("", NIL) else one_line(kb_id)


def pubtator_doc_id(doc_id: Any) -> str:
    """A document id as a PubTator line can start with it: `|` (which ends the id there), tabs
    and line breaks become `_`, and an empty id is `_`."""
    return re.sub(r"[|\r\n\t]", "_", str(doc_id)) or "_"


def write_pubtator(documents: Iterable[LinkedDocument], handle: TextIO) -> None:
    """Title and abstract lines, then a line per mention: PMID start end text label id; a
    mention's text that crosses a line break is written as the text lines show it."""
    for document in documents:
        title, abstract = title_and_abstract(document)
        doc_id = pubtator_doc_id(document["id"])
        handle.write(f"{doc_id}|t|{title}\n{doc_id}|a|{abstract}\n")
        for m in document["mentions"]:
            handle.write(f"{doc_id}\t{m['start']}\t{m['end']}\t{one_line(m['text'])}\t{one_line(m['label'])}\t"
                         f"{pubtator_id(m['kb_id'])}\n")
        handle.write("\n")


def bioc_document(document: LinkedDocument, clean: Callable[[str], str] = str) -> Any:
    """A BioCDocument: the document's string fields as infons, a passage per passage, each
    mention as an annotation in the passage it starts in (infons type, identifier and every other
    key of the mention, JSON where not a string); `clean` is applied to every string."""
    bioc = import_bioc()
    out = bioc.BioCDocument()
    out.id = clean(str(document["id"]))
    out.infons = {clean(key): clean(value) for key, value in document.items()
                  if isinstance(value, str) and key not in ("id", "text")}
    text = clean(document["text"])
    ranges: List[Tuple[int, int]] = [tuple(p) for p in document.get("passages") or [(0, len(text))]]
    passages = []
    for start, end in ranges:
        passage = bioc.BioCPassage()
        passage.offset, passage.text = start, text[start:end]
        passages.append(passage)
        out.add_passage(passage)
    for number, m in enumerate(document["mentions"]):
        annotation = bioc.BioCAnnotation()
        annotation.id = f"T{number}"
        annotation.text = clean(m["text"])
        annotation.add_location(bioc.BioCLocation(m["start"], m["end"] - m["start"]))
        annotation.infons = {"type": clean(m["label"]), "identifier": clean(m["kb_id"]),
                             **{key: clean(_infon(value)) for key, value in m.items()
                                if key not in SPAN_KEYS and value is not None}}
        owner = next((p for p, (start, end) in zip(passages, ranges) if start <= m["start"] < end), passages[-1])
        owner.add_annotation(annotation)
    return out


def _infon(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def xml_text(value: str) -> str:
    """`value` with the characters XML cannot hold as spaces (one for one: offsets hold)."""
    return NOT_XML.sub(" ", value)


def write_bioc_xml(documents: Iterable[LinkedDocument], handle: Any) -> None:
    """A BioC XML collection written document by document (`handle` opened in binary)."""
    bioc = import_bioc()
    writer = bioc.biocxml.BioCXMLDocumentWriter(handle)
    collection = bioc.BioCCollection()
    collection.source, collection.date, collection.key = BIOC_SOURCE, "", ""
    writer.write_collection_info(collection)
    for document in documents:
        writer.write_document(bioc_document(document, xml_text))
    writer.close()


def write_bioc_json(documents: Iterable[LinkedDocument], handle: TextIO) -> None:
    """A BioC JSON collection, written document by document."""
    bioc = import_bioc()
    handle.write(json.dumps({"source": BIOC_SOURCE, "date": "", "key": "", "infons": {}})[:-1] + ', "documents": [')
    for number, document in enumerate(documents):
        handle.write(("," if number else "") + "\n" + json.dumps(bioc.biocjson.toJSON(bioc_document(document)),
                                                                 ensure_ascii=False))
    handle.write("\n]}\n")


# Format -> (writer, whether it writes bytes).
WRITERS = {"jsonl": (write_jsonl, False), "pubtator": (write_pubtator, False),
           "bioc": (write_bioc_xml, True), "bioc-json": (write_bioc_json, False)}
