"""What a link decision shows about how likely it is to be right, read off the span as the
pipeline left it, so that any component (linker, reranker, link memory) may have decided it."""
import math
import re
from typing import List, Sequence

import numpy as np
from spacy.tokens import Span


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
    ranked = (span._.kb_candidates if span.has_extension("kb_candidates") else None) or []
    top = float(ranked[0][1]) if ranked else 0.0
    second = float(ranked[1][1]) if len(ranked) > 1 else 0.0
    return [top, top - second, float(len(ranked) == 1), float(bool(ranked) and ranked[0][0] == kb_id),
            float(remembered), float(kb_name), math.log1p(len(span.text)), float(len(span)),
            float(span.text == span.text.lower()), float(bool(_SHORT_FORM.match(span.text))), float("|" in kb_id),
            math.log1p(same_id)]


def feature_matrix(rows: Sequence[Sequence[float]]) -> np.ndarray:
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(FEATURES))
