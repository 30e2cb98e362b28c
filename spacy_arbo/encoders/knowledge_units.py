"""Knowledge units for GER's graph towers: (subject, predicate, object) triplets from a
mention's sentence or an entity's KB record.

GER extracts them with an SRL/OpenIE model, which cannot be downloaded here. The defaults
work offline: a mention's sentence is read through its dependency parse when the doc has
one, and through the words between it and the other mentions of its sentence otherwise;
an entity's triplets come from its KB record (parents, definition, synonyms). A user with
a better extractor registers a function of the same signature and names it in the config.
"""
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

from spacy.tokens import Doc, Span, Token
from spacy.util import registry

from ..component_settings import check_at_least, check_choice
from ..kb.entities import Entity
from ..kb.store import BaseEntityStore
from .templates import Triplet

MentionUnits = Callable[[Span], List[Triplet]]
EntityUnits = Callable[[Entity, BaseEntityStore], List[Triplet]]

SUBJECTS = {"nsubj", "nsubjpass", "csubj", "csubjpass"}
OBJECTS = {"dobj", "obj", "attr", "oprd", "dative", "acomp", "xcomp"}
PREPOSITIONS = {"prep", "agent"}
SENTENCE_ENDS = {".", "!", "?", ";"}
RELATIONS = {"is_a": "is a", "defined_as": "is", "also_called": "also called"}


@dataclass(frozen=True)
class KnowledgeUnits:
    """The two extractors a linker with a graph tower uses: one per side."""

    mentions: MentionUnits
    entities: EntityUnits


@registry.misc("spacy_arbo.knowledge_units.v1")
def make_knowledge_units(
    mentions: Optional[MentionUnits] = None, entities: Optional[EntityUnits] = None
) -> KnowledgeUnits:
    """Both extractors; left out, the defaults `context_triplets.v1` and `kb_triplets.v1`."""
    return KnowledgeUnits(mentions or make_context_triplets(), entities or make_kb_triplets())


@registry.misc("spacy_arbo.context_triplets.v1")
def make_context_triplets(max_triplets: int = 6, max_words: int = 8, window: int = 4) -> MentionUnits:
    """Triplets of the mention's sentence, those that contain the mention first.

    With a dependency parse: (subject phrase, verb [+ preposition], object phrase) of every
    verb with a subject and an object. Without one: (mention, the words between, other
    mention) for each other mention of the sentence at most `max_words` words away, then
    (`window` words before, mention, `window` words after).
    """
    check_at_least(1, max_triplets=max_triplets, max_words=max_words)
    check_at_least(0, window=window)

    def extract(span: Span) -> List[Triplet]:
        if span.doc.has_annotation("DEP"):
            found = parsed_triplets(span, max_words)
        else:
            found = cooccurrence_triplets(span, max_words, window)
        return _first_unique(found, max_triplets)

    return extract


@registry.misc("spacy_arbo.kb_triplets.v1")
def make_kb_triplets(
    max_triplets: int = 6, relations: Sequence[str] = ("is_a", "defined_as", "also_called"), max_words: int = 12
) -> EntityUnits:
    """(name, is a, parent name), (name, is, first clause of the definition) and (name,
    also called, synonym), in the order of `relations`, up to `max_triplets`."""
    check_at_least(1, max_triplets=max_triplets, max_words=max_words)
    for relation in relations:
        check_choice("relation", relation, RELATIONS)

    def extract(entity: Entity, kb: BaseEntityStore) -> List[Triplet]:
        found: List[Triplet] = []
        for relation in relations:
            predicate = RELATIONS[relation]
            if relation == "is_a":
                found += [(entity.name, predicate, kb[p].name) for p in entity.parents if p in kb]
            elif relation == "defined_as" and entity.definition:
                found.append((entity.name, predicate, first_clause(entity.definition, max_words)))
            elif relation == "also_called":
                found += [(entity.name, predicate, alias) for alias in entity.aliases]
        return _first_unique(found, max_triplets)

    return extract


def first_clause(text: str, max_words: int) -> str:
    """The definition up to its first comma, semicolon or full stop, at most `max_words`."""
    for stop in (".", ";", ","):
        text = text.split(stop + " ")[0]
    return " ".join(text.rstrip(".;,").split()[:max_words])


def parsed_triplets(span: Span, max_words: int) -> List[Triplet]:
    sentence = span.sent
    found: List[Tuple[bool, Triplet]] = []
    for verb in sentence:
        subjects = [c for c in verb.children if c.dep_ in SUBJECTS]
        if not subjects:
            continue
        objects = [(verb.text, c) for c in verb.children if c.dep_ in OBJECTS]
        objects += [(f"{verb.text} {prep.text}", o) for prep in verb.children if prep.dep_ in PREPOSITIONS
                    for o in prep.children if o.dep_ == "pobj"]
        for subject in subjects:
            for predicate, obj in objects:
                s, o = _phrase(subject, max_words), _phrase(obj, max_words)
                found.append((_overlaps(span, s) or _overlaps(span, o), (s.text, predicate, o.text)))
    # Stable sort: the mention's own triplets first, in sentence order.
    return [t for _, t in sorted(found, key=lambda pair: not pair[0])]


def cooccurrence_triplets(span: Span, max_words: int, window: int) -> List[Triplet]:
    doc = span.doc
    start, end = sentence_bounds(doc, span)
    others = [e for e in doc.ents if start <= e.start and e.end <= end and not _overlaps(span, e)]
    found = []
    for other in sorted(others, key=lambda e: min(abs(e.start - span.end), abs(span.start - e.end))):
        first, second = (span, other) if span.start < other.start else (other, span)
        between = doc[first.end: second.start]
        if 0 < len(between) <= max_words:
            found.append((first.text, between.text, second.text))
    if window:
        left, right = doc[max(start, span.start - window): span.start], doc[span.end: min(end, span.end + window)]
        if len(left) or len(right):
            found.append((left.text, span.text, right.text))
    return found


def sentence_bounds(doc: Doc, span: Span) -> Tuple[int, int]:
    """The token range of the span's sentence: the doc's own sentences when it has them,
    else the nearest sentence-ending punctuation on each side."""
    if doc.has_annotation("SENT_START"):
        return span.sent.start, span.sent.end
    start = span.start
    while start > 0 and doc[start - 1].text not in SENTENCE_ENDS:
        start -= 1
    end = span.end
    while end < len(doc) and doc[end - 1].text not in SENTENCE_ENDS:
        end += 1
    return start, end


def _phrase(token: Token, max_words: int) -> Span:
    """The token's subtree, cut to `max_words` ending at the token when it is longer."""
    doc = token.doc
    start, end = token.left_edge.i, token.right_edge.i + 1
    if end - start > max_words:
        start, end = max(start, token.i + 1 - max_words), token.i + 1
    return doc[start:end]


def _overlaps(a: Span, b: Span) -> bool:
    return a.start < b.end and b.start < a.end


def _first_unique(triplets: List[Triplet], limit: int) -> List[Triplet]:
    """Triplets with at least two non-empty parts, duplicates dropped, at most `limit`."""
    kept = [t for t in dict.fromkeys(triplets) if sum(1 for part in t if part.strip()) >= 2]
    return kept[:limit]
