"""Linked documents (the JSON objects `linked.LinkedDocuments` makes) written as JSONL,
PubTator or BioC (XML or JSON), one document at a time so the output streams. Nothing written
depends on when or where it was made (no dates, no hosts): the same documents give the same bytes."""
import json
from typing import Any, Dict, Iterable, List, TextIO, Tuple

from ..corpora.gold_mention import NO_ID
from ..kb.entities import NIL
from .readers import import_bioc

LinkedDocument = Dict[str, Any]
OUTPUT_FORMATS = ("jsonl", "pubtator", "bioc", "bioc-json", "spacy")
# The BioC collection's `source`; its `date` stays empty, so reruns write the same bytes.
BIOC_SOURCE = "spacy-arbo link"


def json_line(document: LinkedDocument) -> str:
    return json.dumps(document, ensure_ascii=False) + "\n"


def write_jsonl(documents: Iterable[LinkedDocument], handle: TextIO) -> None:
    for document in documents:
        handle.write(json_line(document))


def title_and_abstract(document: LinkedDocument) -> Tuple[str, str]:
    """PubTator's two lines: the first passage and the rest of the text (PubTator's offsets
    count title + " " + abstract); line breaks and tabs become spaces, which keeps every offset."""
    text = document["text"].replace("\r", " ").replace("\n", " ").replace("\t", " ")
    passages = document.get("passages") or []
    title_end = passages[0][1] if len(passages) > 1 else len(text)
    return text[:title_end], text[title_end + 1:]


def pubtator_id(kb_id: str) -> str:
    """PubTator spells "no id" -1 (so scorers of PubTator files skip it)."""
    return NO_ID if kb_id in ("", NIL) else kb_id


def write_pubtator(documents: Iterable[LinkedDocument], handle: TextIO) -> None:
    """Title and abstract lines, then a line per mention: PMID start end text label id."""
    for document in documents:
        title, abstract = title_and_abstract(document)
        doc_id = document["id"]
        handle.write(f"{doc_id}|t|{title}\n{doc_id}|a|{abstract}\n")
        for m in document["mentions"]:
            handle.write(f"{doc_id}\t{m['start']}\t{m['end']}\t{m['text']}\t{m['label']}\t{pubtator_id(m['kb_id'])}\n")
        handle.write("\n")


def bioc_document(document: LinkedDocument) -> Any:
    """A BioCDocument: the document's string fields as infons, a passage per passage, each
    mention as an annotation in the passage it starts in (infons type, identifier, name, score,
    confidence, review)."""
    bioc = import_bioc()
    out = bioc.BioCDocument()
    out.id = str(document["id"])
    out.infons = {key: value for key, value in document.items()
                  if isinstance(value, str) and key not in ("id", "text")}
    text = document["text"]
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
        annotation.text = m["text"]
        annotation.add_location(bioc.BioCLocation(m["start"], m["end"] - m["start"]))
        annotation.infons = {"type": m["label"], "identifier": m["kb_id"],
                             **{key: _infon(m[key]) for key in ("name", "score", "confidence", "review")
                                if m.get(key) is not None}}
        owner = next((p for p, (start, end) in zip(passages, ranges) if start <= m["start"] < end), passages[-1])
        owner.add_annotation(annotation)
    return out


def _infon(value: Any) -> str:
    return json.dumps(value) if isinstance(value, bool) else str(value)


def write_bioc_xml(documents: Iterable[LinkedDocument], handle: Any) -> None:
    """A BioC XML collection written document by document (`handle` opened in binary)."""
    bioc = import_bioc()
    writer = bioc.biocxml.BioCXMLDocumentWriter(handle)
    collection = bioc.BioCCollection()
    collection.source, collection.date, collection.key = BIOC_SOURCE, "", ""
    writer.write_collection_info(collection)
    for document in documents:
        writer.write_document(bioc_document(document))
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
