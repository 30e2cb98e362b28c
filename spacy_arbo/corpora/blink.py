"""BLINK/arboEL mention JSONL: one mention and the context window around it per line."""
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence

from ..util import ArboError, PathLike, read_json_objects
from .gold_mention import Mention

# The label of BLINK mentions that carry no `type`.
DEFAULT_LABEL = "ENTITY"


@dataclass
class BlinkMention:
    """One JSONL line: a mention inside a context window cut from some source document."""

    doc_id: str
    context_left: str
    mention: str
    context_right: str
    label_id: str
    type: str = DEFAULT_LABEL
    context_doc_id: Optional[str] = None

    @property
    def text(self) -> str:
        return self.context_left + self.mention + self.context_right

    @property
    def title_end(self) -> int:
        return 0

    @property
    def mentions(self) -> List[Mention]:
        start = len(self.context_left)
        return [Mention(start, start + len(self.mention), self.mention, self.type, self.label_id)]

    @property
    def user_data(self) -> Dict[str, str]:
        data = {"doc_id": self.doc_id}
        if self.context_doc_id is not None:
            data["context_doc_id"] = self.context_doc_id
        return data


def _optional_id(record: Dict, keys: Sequence[str], where: str) -> Optional[str]:
    for key in keys:
        value = record.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ArboError(f"{where}: field '{key}' must be a string or an integer.")
        return str(value)
    return None


def read_blink_jsonl(path: PathLike) -> Iterator[BlinkMention]:
    """Read BLINK/arboEL mention JSONL: one mention and its context window per line."""
    path = Path(path)
    for number, where, record in read_json_objects(path):
        for key in ("context_left", "mention", "context_right"):
            if not isinstance(record.get(key), str):
                raise ArboError(f"{where}: missing or non-string field '{key}'.")
        if not record["mention"].strip():
            raise ArboError(f"{where}: field 'mention' is empty.")
        label_id = _optional_id(record, ("label_id",), where)
        if label_id is None:
            raise ArboError(f"{where}: missing field 'label_id'.")
        label = record.get("type") or DEFAULT_LABEL
        if not isinstance(label, str):
            raise ArboError(f"{where}: field 'type' must be a string.")
        yield BlinkMention(
            doc_id=_optional_id(record, ("mention_id",), where) or f"{path.name}:{number}",
            context_left=record["context_left"],
            mention=record["mention"],
            context_right=record["context_right"],
            label_id=label_id,
            type=label,
            context_doc_id=_optional_id(record, ("context_doc_id", "doc_id"), where),
        )
