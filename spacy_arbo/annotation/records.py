"""A document to link as a reader gives it, and what becomes of a bad one: named (file:line and
what is wrong), skipped and counted, or with `strict` the error that ends the run. What `link`
does not read (an input's own annotations) is never a bad record: a fault there is a warning."""
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Tuple

from ..util import ArboError

# Keys of a linked document that its input fields may not take (the JSONL output writes them).
RESERVED = ("id", "text", "passages", "gold", "mentions")


@dataclass
class Record:
    """id: the document's id as its input spells it (PMID, BioC id, JSONL `id`, file name).
    fields: the input's other fields, kept in the JSONL output.
    passages: (start, end) of each passage (title, abstract) in `text`, for the PubTator and
        BioC outputs; empty when the text is one passage.
    gold: the mentions the input already had (PubTator annotation lines, BioC annotations,
        a JSONL `mentions` list): never read by the pipeline, kept as `gold` in the JSONL output.
    where: file and line (or BioC document) it was read from, for messages."""

    id: str
    text: str
    where: str
    fields: Dict[str, Any] = field(default_factory=dict)
    passages: List[Tuple[int, int]] = field(default_factory=list)
    gold: List[Dict[str, Any]] = field(default_factory=list)


def gold_mention(start: int, end: int, text: str, label: str, kb_id: str) -> Dict[str, Any]:
    return {"start": start, "end": end, "text": text, "label": label, "kb_id": kb_id}


def check_mention(record: Record, mention: Dict[str, Any]) -> None:
    """A mention's offsets lie inside its text and its text is the text there."""
    start, end, text = mention["start"], mention["end"], record.text
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
        raise ArboError(f"{record.where}: mention offsets {start}-{end} lie outside the text "
                        f"({len(text)} characters).")
    if mention["text"] != text[start:end]:
        raise ArboError(f"{record.where}: mention text '{mention['text']}' is not the text at {start}-{end}: "
                        f"'{text[start:end]}'.")


class StrictStop(ArboError):
    """The first bad record under `strict`: it ends the run, readers do not skip it."""


class BadRecords:
    """Called with each bad record's error: `report`s it and counts it, or raises it when strict;
    `warn` reports and counts what is lost of a record that is kept (even when strict)."""

    def __init__(self, report: Callable[[str], None], strict: bool = False) -> None:
        self.report, self.strict, self.count, self.warnings = report, strict, 0, 0

    def warn(self, err: ArboError) -> None:
        self.warnings += 1
        self.report(f"warning: {err}")

    def __call__(self, err: ArboError) -> None:
        if self.strict:
            raise StrictStop(f"{err} (--strict: the first bad record ends the run)")
        self.count += 1
        self.report(f"skipped: {err}")


def within_max_length(records: Iterable[Record], max_length: int, bad: BadRecords) -> Iterator[Record]:
    """The records spaCy takes: a text longer than the pipeline's `nlp.max_length` would end the
    run with spaCy's E088 (and nothing written), so it is a bad record, named, and the others link."""
    for record in records:
        if len(record.text) > max_length:
            bad(ArboError(f"{record.where}: a text of {len(record.text):,} characters, longer than the pipeline's "
                          f"nlp.max_length ({max_length:,}); split it into documents, or load the pipeline with a "
                          "larger max_length if its components can take it."))
        else:
            yield record
