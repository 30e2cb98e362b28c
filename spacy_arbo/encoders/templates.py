"""What each tower reads: a mention in its context, an entity as title plus description.

ArboEL/BLINK templates: mention `ctx_left [START] mention [END] ctx_right`, entity
`title [TITLE] description`. Towers decide how to tokenize and truncate; this module
only decides which text goes into which slot.
"""
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, List, Optional, Sequence, Tuple

from ..kb.entities import Entity

if TYPE_CHECKING:  # the retriever's settings read ENTITY_FIELDS without importing spaCy
    from spacy.tokens import Span

START, END, TITLE = "[START]", "[END]", "[TITLE]"
MARKERS = (START, END, TITLE)
ENTITY_FIELDS = ("definition", "aliases")

# A knowledge unit (GER): subject, predicate and object, each a short text.
Triplet = Tuple[str, str, str]


@dataclass(frozen=True)
class MentionInput:
    left: str
    mention: str
    right: str
    # Read only by graph towers (`spacy_arbo.GraphTower.v1`); empty for the others.
    triplets: Tuple[Triplet, ...] = ()


@dataclass(frozen=True)
class EntityInput:
    title: str
    description: str
    triplets: Tuple[Triplet, ...] = ()


def mention_input(span: "Span", context_chars: int, long_form: Optional[str] = None,
                  triplets: Sequence[Triplet] = (), doc_text: Optional[str] = None) -> MentionInput:
    """The mention text (or the long form of an abbreviation, when given) with up to
    `context_chars` characters of context on each side. Pass `doc_text` for many mentions
    of one doc: `Doc.text` joins every token again on each call."""
    text = span.doc.text if doc_text is None else doc_text
    left = text[max(0, span.start_char - context_chars): span.start_char] if context_chars else ""
    right = text[span.end_char: span.end_char + context_chars] if context_chars else ""
    return MentionInput(left.strip(), long_form or span.text, right.strip(), tuple(triplets))


def entity_input(entity: Entity, fields: Sequence[str], max_aliases: int = 8,
                 triplets: Sequence[Triplet] = ()) -> EntityInput:
    """Description = the chosen fields in order; CTD lacks definitions for 60% of entities,
    so aliases often carry the most signal."""
    parts: List[str] = []
    for field in fields:
        if field == "definition" and entity.definition:
            parts.append(entity.definition)
        elif field == "aliases" and entity.aliases:
            parts.append("; ".join(entity.aliases[:max_aliases]))
    return EntityInput(entity.name, " ".join(parts), tuple(triplets))


def entity_length(entity: EntityInput) -> int:
    """What entity texts are grouped into batches by (`encode_entities`, sharded encoding):
    both must group alike for their vectors to be the same."""
    return len(entity.title) + len(entity.description)


def entity_inputs(entities: Iterable[Entity], fields: Sequence[str], max_aliases: int = 8,
                  triplets: Optional[Callable[[Entity], Sequence[Triplet]]] = None) -> List[EntityInput]:
    return [entity_input(e, fields, max_aliases, triplets(e) if triplets else ()) for e in entities]

