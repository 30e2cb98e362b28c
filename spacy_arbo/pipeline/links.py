"""Writing a link decision onto a span, the same way in every component that decides links."""
from typing import Optional

from spacy.tokens import Span

from ..kb.entities import NIL
from ..retrieval.candidates import Candidates

for _attr in ("kb_candidates", "kb_ents"):
    if not Span.has_extension(_attr):
        Span.set_extension(_attr, default=None)


def best_above(ranked: Candidates, threshold: Optional[float]) -> str:
    """The best candidate's id, or NIL when there is none or it scores below `threshold`."""
    return ranked[0][0] if ranked and (threshold is None or ranked[0][1] >= threshold) else NIL


def write_link(span: Span, kb_id: str, ranked: Candidates) -> None:
    """`ent.kb_id_`, and the ranked candidates also in scispacy's `kb_ents` shape."""
    for token in span:
        token.ent_kb_id_ = kb_id
    span._.kb_candidates = ranked
    span._.kb_ents = ranked
