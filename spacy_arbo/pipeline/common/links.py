"""Writing a link decision onto a span, the same way in every component that decides links, and
the span extensions it is written into: installed here, at import and by every factory of a
component that writes them, so that code which imports this module may read them unguarded."""
from typing import Optional

from spacy.tokens import Span

from ...kb.entities import NIL
from ...retrieval.candidates import Candidates

# What a component that reads a linker's ranked candidates lists in its factory's `requires`.
CANDIDATES = "span._.kb_candidates"
# Every span extension a component writes: candidates, scispacy's `kb_ents`, the confidence, and
# with clustering or split composites the cluster, path and parts (`link_decisions.Link`).
SPAN_EXTENSIONS = ("kb_candidates", "kb_ents", "kb_confidence", "arbo_cluster", "arbo_path", "arbo_parts")


def install_extensions() -> None:
    """Install each of `SPAN_EXTENSIONS` (None until written) that is missing; one installed
    already (scispacy's `kb_ents`) keeps its default."""
    for name in SPAN_EXTENSIONS:
        if not Span.has_extension(name):
            Span.set_extension(name, default=None)


install_extensions()


def best_above(ranked: Candidates, threshold: Optional[float]) -> str:
    """The best candidate's id, or NIL when there is none or it scores below `threshold`."""
    return ranked[0][0] if ranked and (threshold is None or ranked[0][1] >= threshold) else NIL


def kb_ents(ranked: Candidates, threshold: Optional[float], max_entities: int) -> Candidates:
    """scispacy's view of the candidates: at most `max_entities`, none below `threshold`."""
    return [c for c in ranked if threshold is None or c[1] >= threshold][:max_entities]


def write_kb_id(span: Span, kb_id: str) -> None:
    """`ent.kb_id_`: spaCy keeps a span's id on its tokens."""
    for token in span:
        token.ent_kb_id_ = kb_id


def read_kb_id(span: Span) -> str:
    """The id `write_kb_id` wrote (a Span object keeps the id it was made with), NIL for none."""
    return (span[0].ent_kb_id_ if len(span) else span.kb_id_) or NIL


def write_link(span: Span, kb_id: str, ranked: Candidates, ents_threshold: Optional[float],
               max_entities: int) -> None:
    """`ent.kb_id_`, every ranked candidate (`kb_candidates`, what rerankers and scores
    read), and the best of them in scispacy's `kb_ents` shape (`[]` when none qualify)."""
    write_kb_id(span, kb_id)
    span._.kb_candidates = ranked
    span._.kb_ents = kb_ents(ranked, ents_threshold, max_entities)
