"""Gold mentions on predicted docs, for pipelines without an entity recognizer."""
from typing import Iterable, List

from spacy.tokens import Doc, Span
from spacy.training import Example


def with_gold_mentions(examples: Iterable[Example]) -> List[Example]:
    """Copies of the examples whose predicted docs carry the gold entities, without their
    ids: `spacy train` and `nlp.evaluate` make predicted docs from raw text, so a linker
    after no NER would otherwise see no mentions (spaCy's `use_gold_ents`)."""
    result = []
    for eg in examples:
        ents, _ = eg.get_aligned_ents_and_ner()
        copy = eg.copy()
        copy.predicted.ents = [Span(copy.predicted, e.start, e.end, label=e.label_) for e in ents]
        result.append(copy)
    return result


def strip_links(doc: Doc) -> Doc:
    """A copy of `doc` with the gold mentions but without their ids: the linker's input."""
    copy = doc.copy()
    copy.ents = [Span(copy, ent.start, ent.end, label=ent.label) for ent in doc.ents]
    return copy
