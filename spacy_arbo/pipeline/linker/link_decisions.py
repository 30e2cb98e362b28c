"""From ranked candidates to links: nearest entity (ArboEL's "independent"), coordinated
mentions split into their parts, or clusters of mentions and entities (ArboEL A.2-A.3).

Functions of candidates and vectors only, so each rule is tested without a pipeline.
"""
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Span

from ...encoders.templates import MentionInput
from ...kb.entities import NIL
from ...kb.store import BaseEntityStore
from ...linking.mention_graph import cluster_mentions
from ...retrieval.candidates import Candidates
from ...training.mentions import TrainingMentions
from ..common.composites import composite_parts
from ..common.links import best_above, kb_ents, write_link
from ..link_memory import LinkMemory, remembered_candidates


@dataclass
class Link:
    """One mention's decision: ranked candidates, the chosen id, and with clustering its
    cluster (stable within a batch) and path from the entity root: `[kb_id or NIL,
    (doc index, start_char, end_char, text), ...]`."""

    candidates: Candidates
    kb_id: str
    cluster: Optional[int] = None
    path: Optional[List[Any]] = None
    # A split composite mention: (part text, its kb_id, its ranked candidates) per part.
    parts: Optional[List[Tuple[str, str, Candidates]]] = None


def remembered_links(spans: Sequence[Span], memories: Sequence[LinkMemory]) -> List[Optional[Link]]:
    """The links that `memories` (components after the linker) will write over each span, the
    last one's winning; None for the others."""
    links: List[Optional[Link]] = []
    for span in spans:
        found = next((f for memory in reversed(memories) if (f := memory.lookup(span)) is not None), None)
        links.append(None if found is None else Link(remembered_candidates(*found), found[0]))
    return links


def nearest_links(ranked: Sequence[Candidates], threshold: Optional[float]) -> List[Link]:
    """Each mention links to its best candidate, NIL below `threshold`."""
    return [Link(c, best_above(c, threshold)) for c in ranked]


def composite_mentions(spans: Sequence[Span], mentions: Sequence[MentionInput],
                       mode: str) -> Tuple[List[List[str]], List[MentionInput]]:
    """Each span's coordinated parts (none with `composites = "whole"`), and the parts as mentions
    to retrieve candidates for, each read as its whole mention is."""
    parts = [composite_parts(span) if mode != "whole" else [] for span in spans]
    return parts, [replace(m, mention=text) for m, texts in zip(mentions, parts) for text in texts]


def split_composites(links: List[Link], parts: List[List[str]], part_candidates: List[Candidates],
                     mode: str, threshold: Optional[float]) -> None:
    """Link a coordinated mention to each part's entity when the parts name different ones;
    with `mode` "best" only when the parts' scores average at least the whole mention's."""
    remaining = iter(part_candidates)
    for link, texts in zip(links, parts):
        ranked = [next(remaining) for _ in texts]
        decided = [(text, best_above(c, threshold), c) for text, c in zip(texts, ranked)]
        found = [(text, kb_id, c) for text, kb_id, c in decided if kb_id != NIL]
        ids = list(dict.fromkeys(kb_id for _, kb_id, _ in found))
        if len(ids) < 2:
            continue
        if mode == "best" and link.kb_id != NIL:
            if np.mean([c[0][1] for _, _, c in found]) < link.candidates[0][1]:
                continue
        link.kb_id = "|".join(ids)
        link.parts = decided


def cluster_links(kb: BaseEntityStore, located: List[Tuple[int, Span]], vectors: np.ndarray,
                  candidates: List[Candidates], settings: Any, anchors: Optional[TrainingMentions]) -> List[Link]:
    """Each mention links to its cluster's entity; clusters without one are NIL (discovered
    entities). `located` is (doc index, span) per mention; `anchors`, with `transductive`,
    are training mentions that join the graph with their gold entities."""
    if settings.clustering_scope == "batch":
        groups = [list(range(len(located)))]
    else:
        by_doc: Dict[int, List[int]] = {}
        for i, (d, _) in enumerate(located):
            by_doc.setdefault(d, []).append(i)
        groups = list(by_doc.values())
    clustered = cluster_mentions(
        vectors, [(kb.row(c[0][0]), c[0][1]) if c else None for c in candidates], groups,
        knn=settings.knn_mentions, graph=settings.graph, min_similarity=settings.min_similarity,
        anchor_vectors=None if anchors is None else anchors.vectors,
        anchor_rows=None if anchors is None else anchors.gold_rows,
    )
    links = []
    for ranked, result in zip(candidates, clustered):
        path = [_describe_step(step, kb, located, anchors) for step in result.path]
        if path and not isinstance(path[0], str):
            path.insert(0, NIL)
        links.append(Link(ranked, kb.ids[result.entity] if result.entity >= 0 else NIL, result.cluster, path))
    return links


def _describe_step(step: Tuple[str, int], kb: BaseEntityStore, located: List[Tuple[int, Span]],
                   anchors: Optional[TrainingMentions]) -> Any:
    kind, index = step
    if kind == "entity":
        return kb.ids[index]
    if kind == "anchor" and anchors is not None:
        return (-1, -1, -1, anchors.mentions[index].mention)
    doc_index, span = located[index]
    return (doc_index, span.start_char, span.end_char, span.text)


def write_decision(span: Span, link: Link, ents_threshold: Optional[float], max_entities: int) -> None:
    """`ent.kb_id_`, the candidates, and with clustering or split parts `span._.arbo_*`; a split
    mention's `kb_ents` starts with each part's best candidate."""
    write_link(span, link.kb_id, link.candidates, ents_threshold, max_entities)
    span._.arbo_cluster = link.cluster
    span._.arbo_path = link.path
    span._.arbo_parts = link.parts
    if link.parts:
        firsts = {c[0][0]: c[0] for _, _, c in link.parts if c}
        ranked = [*firsts.values(), *(c for c in link.candidates if c[0] not in firsts)]
        span._.kb_ents = kb_ents(ranked, ents_threshold, max_entities)
