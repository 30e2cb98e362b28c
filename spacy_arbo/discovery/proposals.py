"""Proposed entities: the clusters of NIL mentions that reach no KB entity, each a record `kb add`
reads (scispacy JSONL) with what a curator decides by: its mentions in context, the nearest KB
entities, and a parent where the KB has a hierarchy."""
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np

from ..kb.store import BaseEntityStore
from ..linking.clustering import Partition
from ..util import ArboError, PathLike, atomic_path
from .mention_clusters import cluster_mentions
from .nil_mentions import ForeignIds, NilMention

# The cuts between mentions and from a mention to a KB entity, chosen on the out-of-KB benchmark's dev
# sets (docs/discovery.md): mentions of one new entity join at 0.83; a cluster goes back to the KB only
# over an all but exact name.
DEFAULT_MIN_SIMILARITY = 0.83
DEFAULT_MIN_ENTITY_SIMILARITY = 0.95
# KB entities listed beside a proposal, nearest first; they also vote for its parent.
NEAREST = 5
# Mentions of a proposal shown in context (from different documents first).
CONTEXTS = 3
# How far up the hierarchy a nearest entity's ancestors stand for the new entity's parent.
PARENT_LEVELS = 3


@dataclass
class Proposal:
    """A new entity: named by its mentions' most frequent text, the others its aliases."""

    concept_id: str
    name: str
    aliases: List[str]
    label: str
    mentions: List[NilMention]
    cohesion: float
    nearest: List[Tuple[str, str, float]] = field(default_factory=list)
    parent: Optional[Tuple[str, str]] = None

    @property
    def n_documents(self) -> int:
        return len({m.doc for m in self.mentions})

    def contexts(self, count: int = CONTEXTS) -> List[NilMention]:
        """Up to `count` mentions, each document's first before any second, in reading order."""
        firsts: Dict[str, int] = {}
        for index, mention in enumerate(self.mentions):
            firsts.setdefault(mention.doc, index)
        chosen = set(firsts.values())
        order = sorted(chosen) + [i for i in range(len(self.mentions)) if i not in chosen]
        return [self.mentions[i] for i in order[:count]]

    def record(self) -> Dict[str, Any]:
        return {
            "concept_id": self.concept_id, "canonical_name": self.name, "aliases": self.aliases, "types": [],
            "definition": "", "parents": [self.parent[0]] if self.parent else [],
            "parent_name": self.parent[1] if self.parent else None, "label": self.label,
            "n_mentions": len(self.mentions), "n_documents": self.n_documents, "cohesion": round(self.cohesion, 4),
            "nearest_entities": [{"id": i, "name": n, "similarity": round(s, 4)} for i, n, s in self.nearest],
            "contexts": [{**m.location(), "left": m.left, "right": m.right} for m in self.contexts()],
            "mentions": [m.location() for m in self.mentions],
        }


@dataclass
class Discovery:
    """What clustering made of the NIL mentions: the proposals, the mentions that reached a KB
    entity over a chain of similar mentions (`joined`: entity id -> mentions), and where each
    mention went (`assigned`, aligned with `mentions`: a proposal's id, the KB id it reached, or
    "cluster:N" for a cluster smaller than `min_size`)."""

    proposals: List[Proposal]
    mentions: List[NilMention]
    assigned: List[str]
    n_clusters: int
    joined: Dict[str, int]
    min_similarity: float
    min_size: int
    unlinked_labels: Counter = field(default_factory=Counter)
    foreign_ids: ForeignIds = field(default_factory=ForeignIds)

    @property
    def n_mentions(self) -> int:
        return len(self.mentions)

    def merged(self, other: "Discovery") -> "Discovery":
        """Both linkers' proposals in one (a pipeline with a KB per label)."""
        return Discovery(self.proposals + other.proposals, self.mentions + other.mentions,
                         self.assigned + other.assigned, self.n_clusters + other.n_clusters,
                         dict(Counter(self.joined) + Counter(other.joined)), self.min_similarity, self.min_size)

    def line(self) -> str:
        proposed = sum(len(p.mentions) for p in self.proposals)
        joined = sum(self.joined.values())
        skipped = "".join(f"; {n:,} NIL mentions labelled {label}, which no linker links, left out"
                          for label, n in sorted(self.unlinked_labels.items())) + self.foreign_ids.line()
        return (f"{self.n_mentions:,} NIL mentions: {len(self.proposals):,} proposed entities of {self.min_size} or more "
                f"mentions ({proposed:,} mentions), {joined:,} mentions joined a KB entity after all, the rest in "
                f"{self.n_clusters - len(self.proposals) - len(self.joined):,} smaller clusters{skipped}")


def propose_entities(
    mentions: Sequence[NilMention],
    vectors: np.ndarray,
    kb: BaseEntityStore,
    nearest: Tuple[np.ndarray, np.ndarray],
    *,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    min_entity_similarity: Optional[float] = DEFAULT_MIN_ENTITY_SIMILARITY,
    knn_mentions: int = 8,
    min_size: int = 2,
    id_prefix: str = "NEW:",
    first_number: Optional[int] = None,
    same_entity: Sequence[Tuple[int, int]] = (),
) -> Discovery:
    """Cluster `mentions` (their unit `vectors`) with their nearest KB entities (`nearest`: rows and
    similarities, (n, k) best first, as `EntityRetriever.nearest_entity_scores` gives), and propose
    every cluster of `min_size` mentions or more that reaches no entity (`cluster_mentions`), the
    largest first, numbered from `first_number` (default: after the KB's own `id_prefix` ids);
    `same_entity`: pairs of mentions known to be one entity (`corpus_discovery.same_entity_pairs`)."""
    if len(mentions) != len(vectors):
        raise ArboError(f"{len(mentions)} mentions but {len(vectors)} vectors: one vector each is needed.")
    rows, similarities = nearest
    if not len(mentions):
        return Discovery([], [], [], 0, {}, min_similarity, min_size)
    found = cluster_mentions(vectors, rows[:, 0], similarities[:, 0], knn_mentions=knn_mentions,
                             min_similarity=min_similarity, min_entity_similarity=min_entity_similarity,
                             same_entity=same_entity)
    joined = Counter(kb.ids[row] for row in found.entity[found.entity >= 0])
    members = _nil_clusters(found)
    kept = sorted((m for m in members if len(m) >= min_size), key=lambda m: (-len(m), m[0]))
    first = next_new_number(kb, id_prefix) if first_number is None else first_number
    proposals = [_proposal(f"{id_prefix}{number:05d}", [mentions[i] for i in cluster], vectors[cluster], kb,
                           (rows[cluster], similarities[cluster]))
                 for number, cluster in enumerate(kept, start=first)]
    assigned = [kb.ids[row] if row >= 0 else f"cluster:{c}"
                for row, c in zip(found.entity.tolist(), found.cluster.tolist())]
    for proposal, cluster in zip(proposals, kept):
        for index in cluster:
            assigned[index] = proposal.concept_id
    return Discovery(proposals, list(mentions), assigned, found.n_clusters, dict(joined), min_similarity, min_size)


def next_new_number(kb: BaseEntityStore, prefix: str) -> int:
    """The first number after the proposals a curator already added (`kb add`): ids stay new."""
    pattern = re.compile(re.escape(prefix.upper()) + r"(\d+)$")
    taken = [int(m.group(1)) for m in map(pattern.match, (i.upper() for i in kb.ids)) if m]
    return max(taken, default=0) + 1


def _nil_clusters(found: Partition) -> List[List[int]]:
    """The mention indexes of each cluster without an entity, in order of first mention."""
    clusters: Dict[int, List[int]] = {}
    for index in np.flatnonzero(found.entity < 0):
        clusters.setdefault(int(found.cluster[index]), []).append(int(index))
    return list(clusters.values())


def named_by_texts(texts: Iterable[str]) -> Tuple[str, List[str]]:
    """A new entity's name, its mentions' most frequent text (of equals, the first in order), and
    its aliases, the other texts in order."""
    counts = Counter(texts)
    name = min(counts, key=lambda text: (-counts[text], text))
    return name, sorted(t for t in counts if t != name)


def _proposal(concept_id: str, mentions: List[NilMention], vectors: np.ndarray, kb: BaseEntityStore,
              nearest: Tuple[np.ndarray, np.ndarray]) -> Proposal:
    name, aliases = named_by_texts(m.text for m in mentions)
    labels = Counter(m.label for m in mentions)
    centroid = vectors.mean(axis=0)
    norm = float(np.linalg.norm(centroid))
    cohesion = float(np.mean(vectors @ (centroid / norm))) if norm else 0.0
    ranked = _ranked_entities(*nearest)
    return Proposal(concept_id, name, aliases, labels.most_common(1)[0][0], mentions,
                    cohesion, [(kb.ids[row], kb.entity_at(row).name, score) for row, score in ranked],
                    suggested_parent(kb, ranked))


def _ranked_entities(rows: np.ndarray, similarities: np.ndarray) -> List[Tuple[int, float]]:
    """The entities nearest the cluster's mentions, each with its best similarity to any of them."""
    best: Dict[int, float] = {}
    for row, score in zip(rows.ravel().tolist(), similarities.ravel().tolist()):
        if row >= 0:
            best[row] = max(best.get(row, -np.inf), score)
    return sorted(best.items(), key=lambda item: (-item[1], item[0]))[:NEAREST]


def suggested_parent(kb: BaseEntityStore, ranked: Sequence[Tuple[int, float]]) -> Optional[Tuple[str, str]]:
    """The most specific KB entity that is, or is an ancestor (up to `PARENT_LEVELS` up) of, the
    nearest entities holding more than half their similarity: where the new entity sits among them.
    None for a KB without a hierarchy."""
    votes: Counter = Counter()
    for row, score in ranked:
        for ancestor in _ancestors(kb, kb.ids[row]):
            votes[ancestor] += max(score, 0.0)
    total = sum(max(score, 0.0) for _, score in ranked)
    if not total or not any(kb.entity_at(row).parents for row, _ in ranked):
        return None
    held = {a for a, vote in votes.items() if vote > total / 2}
    # The most specific: held, and above none of the others held (then the most votes, the id).
    above_others = {a for h in held for a in _ancestors(kb, h) if a != h}
    specific = held - above_others
    if not specific:
        return None
    chosen = min(specific, key=lambda a: (-votes[a], a))
    return chosen, kb.entity_at(kb.row(chosen)).name


def _ancestors(kb: BaseEntityStore, entity_id: str) -> Set[str]:
    """The entity and its ancestors the KB holds, up to `PARENT_LEVELS` levels up."""
    found = {entity_id}
    frontier = [entity_id]
    for _ in range(PARENT_LEVELS):
        parents = (kb.resolve(p) for e in frontier for p in kb.entity_at(kb.row(e)).parents)
        frontier = [p for p in dict.fromkeys(parents) if p is not None and p not in found]
        found.update(frontier)
    return found


def write_proposals(discovery: Discovery, path: PathLike) -> None:
    """The proposals as JSONL that `kb add --new-only` reads, written whole or not at all."""
    with atomic_path(path) as tmp:
        tmp.write_text("".join(json.dumps(p.record(), ensure_ascii=False) + "\n" for p in discovery.proposals),
                       encoding="utf8")
