"""Discovery over annotated files of any size (`discover FILES`, `link --discover`): the NIL
mentions `link` wrote, encoded by the linker of their label and clustered across the whole
corpus with that linker's KB entities (`propose_entities`)."""
import sys
from functools import reduce
from typing import Iterable, List, Optional, Sequence, Tuple

from spacy.language import Language

from ..annotation.records import Record
from ..kb.store import BaseEntityStore
from ..pipeline.arbo_linker import arbo_linkers
from ..util import ArboError
from .interchangeable_words import interchangeable_pairs, interchangeable_words
from .nil_mentions import NilMention, nil_mentions
from .proposals import (
    DEFAULT_MIN_ENTITY_SIMILARITY, DEFAULT_MIN_SIMILARITY, NEAREST, Discovery, next_new_number, propose_entities,
)
from .short_forms import short_form_definitions


def same_entity_pairs(mentions: Sequence[NilMention], kb: BaseEntityStore) -> List[Tuple[int, int]]:
    """The mentions discovery joins whatever their vectors say: short forms and the long forms their
    text defines them by, and texts written alike (but short forms defined as two things) or alike
    but for words the KB interchanges."""
    defined, ambiguous = short_form_definitions(mentions)
    return defined + interchangeable_pairs(mentions, interchangeable_words(kb), apart=ambiguous)


def discover_corpus(
    nlp: Language,
    records: Iterable[Record],
    *,
    min_size: int = 2,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    min_entity_similarity: Optional[float] = DEFAULT_MIN_ENTITY_SIMILARITY,
    id_prefix: str = "NEW:",
    progress: bool = True,
) -> Discovery:
    """Propose the entities the KBs lack from the NIL mentions of `records` (their `gold`, as the
    readers of `link` give them), each label's with the linker that links it."""
    if min_size < 1:
        raise ArboError(f"The smallest proposal (--min-size) must be at least 1 mention; got {min_size}.")
    read = nil_mentions(nlp, records, progress=progress)
    linkers = {linker.name: linker for linker in arbo_linkers(nlp)}
    number = max(next_new_number(linker.require_retriever().kb, id_prefix) for linker in linkers.values())
    found: List[Discovery] = []
    for name, (mentions, vectors) in read.encoded.items():
        linker = linkers[name]
        retriever = linker.require_retriever()
        if progress and len(mentions):
            print(f"{name}: clustering {len(mentions):,} NIL mentions (an exact kNN graph: its time grows with the "
                  "square of their number)", file=sys.stderr)
        nearest = retriever.nearest_entity_scores(vectors, NEAREST) if len(mentions) else (None, None)
        found.append(propose_entities(mentions, vectors, retriever.kb, nearest, min_similarity=min_similarity,
                                      min_entity_similarity=min_entity_similarity,
                                      knn_mentions=linker.settings.knn_mentions, min_size=min_size,
                                      id_prefix=id_prefix, first_number=number,
                                      same_entity=same_entity_pairs(mentions, retriever.kb)))
        number += len(found[-1].proposals)
    discovery = reduce(Discovery.merged, found)
    discovery.unlinked_labels = read.unlinked_labels
    discovery.foreign_ids = read.foreign_ids
    return discovery
