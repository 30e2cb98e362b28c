"""Documents to link from .txt files (or a folder of them), JSONL, PubTator and BioC (XML or
JSON, through the `bioc` package): one `Record` each, read lazily so a corpus of any size streams.
The inputs are checked before any work (missing, unreadable, empty, a folder without documents);
a bad record inside one is passed to `bad` with its file:line and read past. `link` reads the text
only, so what else a record carries (its annotations, passages) is checked but never costs it the
record: a bad annotation is a warning. Every record whose text can be read is one, however short
(whitespace only included): output documents correspond one to one to input records."""
import gzip
import json
import os
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..corpora.pubtator import _TEXT_LINE, PubTatorDocument, _read_line
from ..util import ArboError, PathLike, read_json_objects
from .formats import INPUT_FORMATS  # noqa: F401 (importable from here, as before formats.py)
from .records import RESERVED, BadRecords, Record, StrictStop, check_mention, gold_mention

# What a folder's files are read as, by suffix (auto); other files in it are not inputs.
SUFFIX_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".xml": "bioc-xml", ".json": "bioc-json",
                  ".pubtator": "pubtator", ".txt": "auto"}
Warn = Callable[[ArboError], None]


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
    """A .txt file is PubTator when its first line that is not blank is a title line `PMID|t|...`
    (NCBI Disease's files start with a blank line), else one text."""
    with open(path, "rb") as handle:
        first = b""
        for _ in range(100):
            first = handle.readline(4096)
            if first.strip() or not first:
                break
    head = first.split(b"|")
    return "pubtator" if len(head) >= 3 and head[1] == b"t" and head[0].strip() else "text"


def read_records(files: Sequence[Tuple[Path, str]], bad: BadRecords) -> Iterator[Record]:
    """The records of `files` in order; an error that makes the rest of a file unreadable (a
    BioC file that does not parse) is one bad record and the next file is read."""
    for path, fmt in files:
        try:
            for record in READERS[fmt](path, bad):
                try:
                    yield unicode_checked(record)
                except ArboError as err:
                    bad(err)
        except StrictStop:
            raise
        except ArboError as err:
            bad(err)


def unicode_checked(record: Record) -> Record:
    """A JSON `\\ud800` escape reads as a lone surrogate, which no output (nor spaCy) can write:
    such a record is bad here rather than a crash mid-run."""
    for name, value in [("id", record.id), ("text", record.text), *record.fields.items(), ("mentions", record.gold)]:
        try:
            json.dumps(value, ensure_ascii=False).encode("utf8")
        except UnicodeEncodeError as err:
            raise ArboError(f"{record.where}: '{name}' is not Unicode text (a lone surrogate, "
                            f"{err.object[err.start]!r}).") from None
    return record


def read_text(path: Path, bad: BadRecords) -> Iterator[Record]:
    data = path.read_bytes()
    if b"\0" in data:
        bad(ArboError(f"{path}: a binary file, not text (a NUL byte at offset {data.index(0)})."))
        return
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        bad(ArboError(f"{path}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})."))
        return
    yield Record(path.stem, text, str(path))


def read_jsonl(path: Path, bad: BadRecords) -> Iterator[Record]:
    """One JSON object a line with a `text`; `id` (else FILE:LINE), `mentions` (read as gold, the
    shape `link` writes), `passages` and the other fields (kept) are optional."""
    for number, where, data in read_json_objects(path, bad):
        try:
            yield _json_record(data, where, f"{path.stem}:{number}", bad.warn)
        except ArboError as err:
            bad(err)


def _json_record(data: Dict[str, Any], where: str, default_id: str, warn: Warn) -> Record:
    if not isinstance(data.get("text"), str):
        raise ArboError(f"{where}: expected a JSON object with a string 'text'.")
    record = Record(str(data.get("id", default_id)), data["text"], where,
                    fields={k: v for k, v in data.items() if k not in RESERVED})
    record.passages = _passages(record, data.get("passages") or [], warn)
    mentions = data.get("mentions") or []
    if not isinstance(mentions, list):
        warn(ArboError(f"{where}: 'mentions' is not a list, not kept as gold ({mentions!r:.80}); the text is linked."))
        mentions = []
    _add_gold(record, [_json_mention(where, m) for m in mentions], warn)
    return record


def _json_mention(where: str, mention: Any) -> Any:
    """A JSONL mention as gold, or the error that says why it is not one."""
    try:
        return gold_mention(mention["start"], mention["end"], mention["text"], mention.get("label", ""),
                            mention.get("kb_id", ""))
    except (KeyError, TypeError, AttributeError):
        return ArboError(f"{where}: a mention needs 'start', 'end' and 'text'; got {mention!r:.80}.")


def _passages(record: Record, passages: Any, warn: Warn) -> List[Tuple[int, int]]:
    """[start, end] pairs in order inside the text (what the PubTator and BioC outputs cut the
    text by); others are a warning and the text is one passage."""
    pairs = [tuple(p) for p in passages if isinstance(p, list) and len(p) == 2 and all(map(_is_int, p))] \
        if isinstance(passages, list) else []
    bounds = [0] + [i for pair in pairs for i in pair] + [len(record.text)]
    if isinstance(passages, list) and len(pairs) == len(passages) and bounds == sorted(bounds):
        return pairs
    warn(ArboError(f"{record.where}: 'passages' must be [start, end] pairs in order inside the text "
                   f"({len(record.text)} characters); got {passages!r:.80}; the text is linked as one passage."))
    return []


def _add_gold(record: Record, mentions: List[Any], warn: Warn) -> None:
    """The input's own mentions that fit the text become `record.gold`; `link` never reads them,
    so the others are one warning, not a lost record."""
    errors = []
    for mention in mentions:
        try:
            if isinstance(mention, ArboError):
                raise mention
            check_mention(record, mention)
            record.gold.append(mention)
        except ArboError as err:
            errors.append(err)
    if errors:
        first = str(errors[0]).removeprefix(f"{record.where}: ")
        warn(ArboError(f"{record.where}: {len(errors)} of {len(mentions)} mentions not kept as gold (the text "
                       f"is linked); the first: {first}"))


def read_pubtator_records(path: Path, bad: BadRecords) -> Iterator[Record]:
    """Title + " " + abstract; the annotation lines are gold (the pipeline reads the text only), so
    a bad one is a warning and its document is kept. A title or abstract line out of place (or not
    UTF-8) skips its own document, named, and only that one: the lines after it up to the next
    document are its lines."""
    doc: Optional[PubTatorDocument] = None
    has_abstract, skipped = False, None  # skipped: the PMID whose lines are passed over
    for number, line, error in _lines(path):
        if not line.strip():
            continue
        text_line = _TEXT_LINE.match(line)
        pmid, kind = text_line.groups()[:2] if text_line else (None, None)
        if skipped is not None and (kind is None or (kind == "a" and pmid == skipped)):
            continue
        skipped = None
        try:
            if error:
                raise error
            finished, doc, has_abstract = _read_line(path, number, line, doc, has_abstract)
        except ArboError as err:
            if doc is not None and kind is None:
                bad.warn(ArboError(f"{err} The annotation is not kept as gold; the document is linked."))
                continue
            if doc is not None and (kind == "t" or pmid != doc.pmid):
                yield _pubtator_record(path, doc)  # whole: the bad line belongs to another document
            doc, has_abstract, skipped = None, False, pmid or ""
            bad(err)
            continue
        if finished is not None:
            yield _pubtator_record(path, finished)
    if doc is not None:
        yield _pubtator_record(path, doc)


def _lines(path: Path) -> Iterator[Tuple[int, str, Optional[ArboError]]]:
    """(number, line, the error of a line that is not UTF-8): one bad byte costs its line, not the
    rest of the file."""
    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    yield number, raw.decode("utf-8-sig" if number == 1 else "utf8").rstrip("\r\n"), None
                except UnicodeDecodeError as err:
                    yield number, raw.decode("utf8", "replace").rstrip("\r\n"), ArboError(
                        f"{path}:{number}: not UTF-8 (byte 0x{raw[err.start]:02x}, the line's byte {err.start + 1}).")
    except (OSError, EOFError) as err:
        raise ArboError(f"{path}: cannot read ({err}).") from None


def _pubtator_record(path: Path, doc: PubTatorDocument) -> Record:
    return Record(doc.pmid, doc.text, f"{path} (PMID {doc.pmid})",
                  passages=[(0, doc.title_end), (doc.title_end + 1, len(doc.text))],
                  gold=[gold_mention(m.start, m.end, m.text, m.type, m.ids_raw) for m in doc.mentions])


def read_bioc_xml(path: Path, bad: BadRecords) -> Iterator[Record]:
    """BioC XML document by document, each decoded by `bioc` (whose own reader decodes the next
    document before it returns one, so a bad document would cost the one before it too): a document
    `bioc` cannot decode costs only itself; XML that does not parse ends the file, named with the
    last document read."""
    bioc = import_bioc()
    from lxml import etree

    last = None
    try:
        for element in _xml_elements(path, "document"):
            last = element.findtext("id")
            xml = etree.tostring(element, encoding="unicode", with_tail=False)
            try:
                document = bioc.biocxml.loads(f"<collection>{xml}</collection>").documents[0]
            except (ValueError, TypeError) as err:
                bad(ArboError(f"{path} (document {last}): not a BioC document ({type(err).__name__}: {err})."))
            else:
                yield from _bioc_records(document, path, bad)
            element.clear()
            while element.getprevious() is not None:
                del element.getparent()[0]
    except etree.Error as err:
        after = f" after document {last}" if last is not None else ""
        raise ArboError(f"{path}: not BioC XML{after} ({err}); the rest of it is not read.") from None


def _xml_elements(path: Path, tag: str) -> Iterator[Any]:
    """The `tag` elements of an XML file as each ends, the file fed a line (at most 64 KiB) at a
    time: an error in the XML costs the elements after it, not (as iterparse's chunks do) those
    before it in the same chunk. The elements the failing feed closed (a truncated file's) are not
    given: they are not whole."""
    from lxml import etree

    parser = etree.XMLPullParser(events=("end",), tag=tag)
    with open(path, "rb") as handle:
        for line in iter(lambda: handle.readline(1 << 16), b""):
            parser.feed(line)
            yield from (element for _, element in parser.read_events())
    parser.close()
    yield from (element for _, element in parser.read_events())


def read_bioc_json(path: Path, bad: BadRecords) -> Iterator[Record]:
    """A BioC JSON collection (read whole: JSON has no document-by-document reader)."""
    bioc = import_bioc()
    try:
        with open(path, encoding="utf8") as handle:
            collection = bioc.biocjson.load(handle)
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ArboError(f"{path}: not a BioC JSON collection ({type(err).__name__}: {err}).") from None
    for document in collection.documents:
        yield from _bioc_records(document, path, bad)


def _bioc_records(document: Any, path: Path, bad: BadRecords) -> Iterator[Record]:
    try:
        yield _bioc_record(document, f"{path} (document {document.id})", bad.warn)
    except ArboError as err:
        bad(err)


def _bioc_record(document: Any, where: str, warn: Warn) -> Record:
    """Passages placed at their offsets (gaps filled with spaces); annotations as gold, their
    `type` and `identifier` infons as label and id."""
    text, passages = "", []
    for passage in document.passages:
        if not _is_int(passage.offset) or not isinstance(passage.text or "", str):
            raise ArboError(f"{where}: a passage needs an integer offset and a string text; "
                            f"got offset {passage.offset!r:.40}, text {passage.text!r:.40}.")
    for passage in sorted(document.passages, key=lambda p: p.offset):
        if passage.offset < len(text):
            raise ArboError(f"{where}: passage at offset {passage.offset} overlaps the one before it.")
        text += " " * (passage.offset - len(text)) + (passage.text or "")
        passages.append((passage.offset, len(text)))
    infons = document.infons if isinstance(document.infons, dict) else {}
    record = Record(str(document.id), text, where, fields=_infons(infons), passages=passages)
    _add_gold(record, [_bioc_mention(where, a) for a in [a for p in document.passages for a in p.annotations]
                       + list(document.annotations)], warn)
    return record


def _bioc_mention(where: str, annotation: Any) -> Any:
    """A BioC annotation as gold, or the error that says why it is not one."""
    locations = annotation.locations
    if len(locations) != 1:
        return ArboError(f"{where}: annotation {annotation.id} has {len(locations)} locations; "
                         "only contiguous mentions (one location) can be read.")
    location, infons = locations[0], annotation.infons if isinstance(annotation.infons, dict) else {}
    if not (_is_int(location.offset) and _is_int(location.length)):
        return ArboError(f"{where}: annotation {annotation.id} needs an integer offset and length; "
                         f"got {location.offset!r:.40} and {location.length!r:.40}.")
    return gold_mention(location.offset, location.end, annotation.text or "", infons.get("type", ""),
                        infons.get("identifier", ""))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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


READERS: Dict[str, Callable[[Path, BadRecords], Iterator[Record]]] = {
    "text": read_text, "jsonl": read_jsonl, "pubtator": read_pubtator_records,
    "bioc-xml": read_bioc_xml, "bioc-json": read_bioc_json,
}
