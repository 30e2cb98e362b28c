"""A gold mention as a corpus file writes it, and the concept ids of its id field."""
import re
from typing import List, NamedTuple

# Gold ids that mean "this mention has no concept" in PubTator corpora.
NO_ID = "-1"

_COMPOSITE_SEPARATOR = re.compile(r"[|+]")


class Mention(NamedTuple):
    """A gold mention: character offsets into its document's text, and its ids as written."""

    start: int
    end: int
    text: str
    type: str
    ids_raw: str


def parse_gold_ids(ids_raw: str) -> List[str]:
    """The concept ids of a corpus file's gold id field: composite ids split on `|` or `+`, `-1` and
    blanks removed. (A Doc's `kb_id_` joins ids with `|` only: `kb.entities.split_ids`.)"""
    parts = (part.strip() for part in _COMPOSITE_SEPARATOR.split(ids_raw))
    return [part for part in parts if part and part != NO_ID]
