"""PubTator files: a title line and an abstract line per document, then one line per mention."""
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from ..util import ArboError, PathLike, read_lines
from .gold_mention import Mention

_TEXT_LINE = re.compile(r"^([^|\t]+)\|([ta])\|(.*)$")


@dataclass
class PubTatorDocument:
    pmid: str
    title: str
    abstract: str
    mentions: List[Mention] = field(default_factory=list)

    @property
    def text(self) -> str:
        return f"{self.title} {self.abstract}"

    @property
    def title_end(self) -> int:
        return len(self.title)

    @property
    def user_data(self) -> Dict[str, str]:
        return {"doc_id": self.pmid}


def _read_mention(doc: PubTatorDocument, fields: List[str], where: str) -> Mention:
    if len(fields) not in (6, 7):
        raise ArboError(
            f"{where}: expected 6 tab-separated fields (PMID, start, end, text, type, ids), "
            f"found {len(fields)}."
        )
    try:
        start, end = int(fields[1]), int(fields[2])
    except ValueError:
        raise ArboError(
            f"{where}: offsets must be integers, found '{fields[1]}' and '{fields[2]}'."
        ) from None
    text = doc.text
    if not 0 <= start < end <= len(text):
        raise ArboError(
            f"{where}: offsets {start}-{end} lie outside the text ({len(text)} characters)."
        )
    # Offsets are authoritative; the annotated string sometimes carries stray white
    # space (NCBI Disease train has one such line).
    if fields[3].strip() != text[start:end]:
        raise ArboError(
            f"{where}: mention text '{fields[3]}' does not match the text at {start}-{end}: "
            f"'{text[start:end]}'."
        )
    # A seventh field (BC5CDR) spells out the parts of a composite mention; ids carry them.
    return Mention(start, end, text[start:end], fields[4], fields[5])


def read_pubtator(path: PathLike, on_error: Optional[Callable[[ArboError], None]] = None) -> Iterator[PubTatorDocument]:
    """Read PubTator documents; relation lines (`PMID CID chem disease`) are skipped.

    A bad line ends the read with its error, or, given `on_error`, is passed to it and its
    document skipped up to the next title line: a large export keeps its good documents.
    """
    path = Path(path)
    doc: Optional[PubTatorDocument] = None
    has_abstract = skipping = False
    for number, line in read_lines(path):
        if not line.strip():
            continue
        match = _TEXT_LINE.match(line)
        skipping = skipping and not (match and match.group(2) == "t")
        if skipping:
            continue
        try:
            finished, doc, has_abstract = _read_line(path, number, line, doc, has_abstract)
        except ArboError as err:
            if on_error is None:
                raise
            on_error(err)
            doc, skipping = None, True
            continue
        if finished is not None:
            yield finished
    if doc is not None:
        yield doc


def _read_line(path: Path, number: int, line: str, doc: Optional[PubTatorDocument],
               has_abstract: bool) -> Tuple[Optional[PubTatorDocument], Optional[PubTatorDocument], bool]:
    """(the document a title line finishes, the document read now, whether it has its abstract)."""
    where = f"{path}:{number}"
    match = _TEXT_LINE.match(line)
    if match:
        pmid, kind, text = match.groups()
        if kind == "t":
            return doc, PubTatorDocument(pmid, text, ""), False
        if doc is None or doc.pmid != pmid or has_abstract:
            raise ArboError(f"{where}: abstract line of {pmid} does not follow its title line.")
        doc.abstract = text
        return None, doc, True
    fields = line.split("\t")
    if doc is None:
        raise ArboError(f"{where}: not PubTator: a document starts with a title line 'PMID|t|TITLE'; "
                        f"got '{line[:60]}'.")
    if fields[0] != doc.pmid:
        raise ArboError(f"{where}: annotation for PMID '{fields[0]}' outside that document.")
    if len(fields) == 4 and not fields[1].isdigit():
        return None, doc, has_abstract
    if not has_abstract:
        raise ArboError(f"{where}: mention before the abstract line of {doc.pmid}.")
    doc.mentions.append(_read_mention(doc, fields, where))
    return None, doc, has_abstract
