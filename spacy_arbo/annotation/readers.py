"""Documents to link from .txt files (or a folder of them), JSONL, PubTator and BioC (XML or
JSON, through the `bioc` package): one `Record` each, read lazily so a corpus of any size streams.
The inputs are checked before any work (missing, unreadable, empty, a folder without documents);
a bad record inside one is passed to `bad` with its file:line and read past."""
import json
import os
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Sequence, Tuple

from ..corpora.pubtator import read_pubtator
from ..util import ArboError, PathLike
from .records import RESERVED, Record, StrictStop, check_mention, gold_mention

INPUT_FORMATS = ("auto", "text", "jsonl", "pubtator", "bioc-xml", "bioc-json")
# What a folder's files are read as, by suffix (auto); other files in it are not inputs.
SUFFIX_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".xml": "bioc-xml", ".json": "bioc-json",
                  ".pubtator": "pubtator", ".txt": "auto"}
BadRecord = Callable[[ArboError], None]


def input_files(paths: Sequence[PathLike], fmt: str = "auto") -> List[Tuple[Path, str]]:
    """Each input file with the format it is read as; a missing, unreadable or empty input, or a
    folder holding no file of a known suffix, is an error naming it."""
    files: List[Tuple[Path, str]] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")
                           and p.suffix.lower() in SUFFIX_FORMATS)
            if not found:
                raise ArboError(f"{path}: no documents in this folder (files ending in "
                                f"{', '.join(SUFFIX_FORMATS)}).")
            files += [(p, fmt if fmt != "auto" else SUFFIX_FORMATS[p.suffix.lower()]) for p in found]
        elif path.is_file():
            files.append((path, fmt if fmt != "auto" else SUFFIX_FORMATS.get(path.suffix.lower(), "auto")))
        else:
            raise ArboError(f"{path}: no such file or folder.")
    for path, _ in files:
        if not os.access(path, os.R_OK):
            raise ArboError(f"{path}: cannot read (permission denied).")
        if path.stat().st_size == 0:
            raise ArboError(f"{path}: empty file.")
    return [(path, _sniff(path) if kind == "auto" else kind) for path, kind in files]


def _sniff(path: Path) -> str:
    """A .txt file is PubTator when its first line is a title line `PMID|t|...`, else one text."""
    with open(path, "rb") as handle:
        first = handle.readline(4096)
    head = first.split(b"|")
    return "pubtator" if len(head) >= 3 and head[1] == b"t" and head[0].strip() else "text"


def read_records(files: Sequence[Tuple[Path, str]], bad: BadRecord) -> Iterator[Record]:
    """The records of `files` in order; an error that makes the rest of a file unreadable (a
    BioC file that does not parse) is one bad record and the next file is read."""
    for path, fmt in files:
        try:
            yield from READERS[fmt](path, bad)
        except StrictStop:
            raise
        except ArboError as err:
            bad(err)


def read_text(path: Path, bad: BadRecord) -> Iterator[Record]:
    data = path.read_bytes()
    if b"\0" in data:
        bad(ArboError(f"{path}: a binary file, not text (a NUL byte at offset {data.index(0)})."))
        return
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        bad(ArboError(f"{path}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})."))
        return
    if not text.strip():
        bad(ArboError(f"{path}: no text."))
        return
    yield Record(path.stem, text, str(path))


def read_jsonl(path: Path, bad: BadRecord) -> Iterator[Record]:
    """One JSON object a line with a `text`; `id` (else FILE:LINE), `mentions` (read as gold, the
    shape `link` writes) and the other fields (kept) are optional."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}:{number}"
            if not raw.strip():
                continue
            try:
                yield _json_record(raw, where, f"{path.stem}:{number}")
            except ArboError as err:
                bad(err)


def _json_record(raw: bytes, where: str, default_id: str) -> Record:
    try:
        data = json.loads(raw)
    except ValueError as err:  # also a line that is not UTF-8
        raise ArboError(f"{where}: not a JSON object ({err}).") from None
    if not isinstance(data, dict) or not isinstance(data.get("text"), str):
        raise ArboError(f"{where}: expected a JSON object with a string 'text'.")
    passages = data.get("passages") or []
    if not all(isinstance(p, list) and len(p) == 2 and all(isinstance(i, int) for i in p) for p in passages):
        raise ArboError(f"{where}: 'passages' must be a list of [start, end] pairs; got {passages!r:.80}.")
    record = Record(str(data.get("id", default_id)), data["text"], where,
                    fields={k: v for k, v in data.items() if k not in RESERVED}, passages=[tuple(p) for p in passages])
    for mention in data.get("mentions") or []:
        try:
            mention = gold_mention(mention["start"], mention["end"], mention["text"], mention.get("label", ""),
                                   mention.get("kb_id", ""))
        except (KeyError, TypeError):
            raise ArboError(f"{where}: a mention needs 'start', 'end' and 'text'; got {mention!r:.80}.") from None
        check_mention(record, mention)
        record.gold.append(mention)
    return record


def read_pubtator_records(path: Path, bad: BadRecord) -> Iterator[Record]:
    """Title + " " + abstract; the annotation lines are gold (the pipeline reads the text only)."""
    for doc in read_pubtator(path, on_error=bad):
        yield Record(doc.pmid, doc.text, f"{path} (PMID {doc.pmid})",
                     passages=[(0, doc.title_end), (doc.title_end + 1, len(doc.text))],
                     gold=[gold_mention(m.start, m.end, m.text, m.type, m.ids_raw) for m in doc.mentions])


def read_bioc_xml(path: Path, bad: BadRecord) -> Iterator[Record]:
    bioc = import_bioc()
    from lxml import etree

    try:
        for document in bioc.biocxml.BioCXMLDocumentReader(str(path)):
            try:
                yield _bioc_record(document, f"{path} (document {document.id})")
            except ArboError as err:
                bad(err)
    except etree.Error as err:
        raise ArboError(f"{path}: not BioC XML ({err}).") from None


def read_bioc_json(path: Path, bad: BadRecord) -> Iterator[Record]:
    """A BioC JSON collection (read whole: JSON has no document-by-document reader)."""
    bioc = import_bioc()
    try:
        with open(path, encoding="utf8") as handle:
            collection = bioc.biocjson.load(handle)
    except (ValueError, KeyError, TypeError) as err:
        raise ArboError(f"{path}: not a BioC JSON collection ({type(err).__name__}: {err}).") from None
    for document in collection.documents:
        try:
            yield _bioc_record(document, f"{path} (document {document.id})")
        except ArboError as err:
            bad(err)


def _bioc_record(document: Any, where: str) -> Record:
    """Passages placed at their offsets (gaps filled with spaces); annotations as gold, their
    `type` and `identifier` infons as label and id."""
    text, passages = "", []
    for passage in sorted(document.passages, key=lambda p: p.offset):
        if passage.offset < len(text):
            raise ArboError(f"{where}: passage at offset {passage.offset} overlaps the one before it.")
        text += " " * (passage.offset - len(text)) + (passage.text or "")
        passages.append((passage.offset, len(text)))
    record = Record(str(document.id), text, where, fields=_infons(document.infons), passages=passages)
    for annotation in [a for p in document.passages for a in p.annotations] + list(document.annotations):
        if len(annotation.locations) != 1:
            raise ArboError(f"{where}: annotation {annotation.id} has {len(annotation.locations)} locations; "
                            "only contiguous mentions (one location) can be read.")
        location = annotation.locations[0]
        mention = gold_mention(location.offset, location.end, annotation.text or "",
                               annotation.infons.get("type", ""), annotation.infons.get("identifier", ""))
        check_mention(record, mention)
        record.gold.append(mention)
    return record


def _infons(infons: Dict[str, str]) -> Dict[str, str]:
    return {key: value for key, value in infons.items() if key not in RESERVED}


def import_bioc() -> Any:
    try:
        import bioc
        import bioc.biocjson
        import bioc.biocxml
    except ImportError:
        raise ArboError("Reading or writing BioC needs the bioc package: pip install 'spacy-arbo[bioc]'.") from None
    return bioc


READERS: Dict[str, Callable[[Path, BadRecord], Iterator[Record]]] = {
    "text": read_text, "jsonl": read_jsonl, "pubtator": read_pubtator_records,
    "bioc-xml": read_bioc_xml, "bioc-json": read_bioc_json,
}
