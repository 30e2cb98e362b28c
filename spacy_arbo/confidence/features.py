"""What a link decision shows about how likely it is to be right, read off the span as the
pipeline left it, so that any component (linker, reranker, link memory) may have decided it; and
the confidence a calibration makes of it, written on the span (`span._.kb_confidence`)."""
import math
import re
from collections import Counter
from typing import Callable, Dict, List, Mapping, Optional, Protocol, Sequence

import numpy as np
from spacy.language import Language
from spacy.tokens import Span

from ..kb.entities import NIL
from ..pipeline.common.links import read_kb_id
from ..pipeline.link_memory import LinkMemory, memory_key


# One column per feature, in this order; a saved calibration records the names it was fitted on.
FEATURES = ("top_score", "margin", "one_candidate", "link_is_top", "remembered", "kb_name", "log_chars",
            "words", "lowercase", "short_form", "composite", "log_same_id")
_SHORT_FORM = re.compile(r"^[A-Z0-9][A-Z0-9-]{0,7}s?$")


def link_features(span: Span, kb_id: str, remembered: bool, kb_name: bool, same_id: int) -> List[float]:
    """The features of `span`'s link to `kb_id` (`FEATURES`): its candidates' best score and margin to the
    second, whether it was answered by one candidate (a KB name or a remembered text), whether
    the id is the best candidate's, whether a link memory or an unambiguous KB name knows its
    text, its length in characters and words, whether it is written in lower case (generic words
    are, and a recognizer that reads KB names finds them where no annotator marks a mention), a
    short form or a split composite, and how many other mentions of its doc link to the same id
    (`same_id`)."""
    ranked = span._.kb_candidates or []
    top = float(ranked[0][1]) if ranked else 0.0
    second = float(ranked[1][1]) if len(ranked) > 1 else 0.0
    return [top, top - second, float(len(ranked) == 1), float(bool(ranked) and ranked[0][0] == kb_id),
            float(remembered), float(kb_name), math.log1p(len(span.text)), float(len(span)),
            float(span.text == span.text.lower()), float(bool(_SHORT_FORM.match(span.text))), float("|" in kb_id),
            math.log1p(same_id)]


def feature_matrix(rows: Sequence[Sequence[float]]) -> np.ndarray:
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(FEATURES))


class KBNames(Protocol):
    """What the features read of a linker: the names of its KB that name one entity only."""

    def kb_names(self) -> Mapping[str, str]:
        """Normalised KB name (`memory_key`) -> the one entity it names."""


class ConfidenceFeatures:
    """The features of links in a pipeline: which texts its link memories remember, and which
    name one entity of the KB its linker links to (`names`)."""

    def __init__(self, nlp: Optional[Language], names: KBNames) -> None:
        self.memories = [proc for _, proc in nlp.pipeline if isinstance(proc, LinkMemory)] if nlp else []
        self.kb_names = names.kb_names()

    def __call__(self, spans: Sequence[Span]) -> List[List[float]]:
        ids_per_doc: Dict[int, Counter] = {}
        for span in spans:
            if id(span.doc) not in ids_per_doc:
                ids_per_doc[id(span.doc)] = Counter(read_kb_id(ent) for ent in span.doc.ents)
        rows = []
        for span in spans:
            kb_id = read_kb_id(span)
            rows.append(link_features(span, kb_id, any(m.lookup(span) is not None for m in self.memories),
                                      memory_key(span.text) in self.kb_names, ids_per_doc[id(span.doc)][kb_id] - 1))
        return rows


def write_confidence(spans: Sequence[Span], calibration: Optional[Callable[[List[List[float]]], np.ndarray]],
                     features: Callable[[Sequence[Span]], List[List[float]]]) -> None:
    """`kb_confidence` of each linked span from `calibration` (a `Calibration`) of its features;
    None for NIL links and without a calibration."""
    if calibration is None or not spans:
        return
    for span, confidence in zip(spans, calibration(features(spans))):
        span._.kb_confidence = None if read_kb_id(span) == NIL else float(confidence)
