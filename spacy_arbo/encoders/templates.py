"""What each tower reads: a mention in its context, an entity as title plus description.

ArboEL/BLINK templates: mention `ctx_left [START] mention [END] ctx_right`, entity
`title [TITLE] description`. Towers decide how to tokenize and truncate; this module
only decides which text goes into which slot.
"""
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence

from spacy.tokens import Span

from ..kb.entities import Entity

START, END, TITLE = "[START]", "[END]", "[TITLE]"
MARKERS = (START, END, TITLE)
ENTITY_FIELDS = ("definition", "aliases")


@dataclass(frozen=True)
class MentionInput:
    left: str
    mention: str
    right: str


@dataclass(frozen=True)
class EntityInput:
    title: str
    description: str


def mention_input(span: Span, context_chars: int, long_form: Optional[str] = None) -> MentionInput:
    """The mention text (or the long form of an abbreviation, when given) with up to
    `context_chars` characters of context on each side."""
    text = span.doc.text
    left = text[max(0, span.start_char - context_chars): span.start_char] if context_chars else ""
    right = text[span.end_char: span.end_char + context_chars] if context_chars else ""
    return MentionInput(left.strip(), long_form or span.text, right.strip())


def entity_input(entity: Entity, fields: Sequence[str], max_aliases: int = 8) -> EntityInput:
    """Description = the chosen fields in order; CTD lacks definitions for 60% of entities,
    so aliases often carry the most signal."""
    parts: List[str] = []
    for field in fields:
        if field == "definition" and entity.definition:
            parts.append(entity.definition)
        elif field == "aliases" and entity.aliases:
            parts.append("; ".join(entity.aliases[:max_aliases]))
    return EntityInput(entity.name, " ".join(parts))


def entity_inputs(entities: Iterable[Entity], fields: Sequence[str], max_aliases: int = 8) -> List[EntityInput]:
    return [entity_input(e, fields, max_aliases) for e in entities]

