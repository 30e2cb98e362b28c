"""Clustering-based linking and entity discovery (ArboEL, Agarwal et al. 2022, A.2-A.3).

Every mention is a node joined to its k nearest mentions and to its nearest entity.
The graph is partitioned so that each cluster holds at most one entity; mentions link
to their cluster's entity (eq. 8) and clusters without one are NIL, i.e. discovered
entities (cross-document coreference, section 3.5). A mention whose own nearest entity
is too far can so reach its entity through a chain of similar mentions, and
`Partition.path` shows that chain.

Similarities are "higher is more similar" (encoder inner products). The paper's edge
weight is the dissimilarity w = -similarity, and it first removes "all edges in graph G
with weight greater than threshold lambda". Here that threshold is `min_similarity`
= -lambda: an edge is kept when its similarity >= min_similarity (None: lambda = inf,
keep every edge, as in training).

Nodes are numbered mentions first (0..n-1), then the entities that occur as someone's
nearest or anchor entity; only the mention numbering is visible to callers.
"""
from collections import Counter
from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np

from ..util import ArboError
from .directed_pruning import directed_tree
from .graph_edges import graph_edges
from .graph_kinds import GRAPHS
from .single_linkage import undirected_parents


@dataclass(frozen=True, eq=False)
class Partition:
    """Clusters of mentions and what each mention links to, with the evidence.

    cluster: cluster id per mention, numbered 0, 1, ... in order of each cluster's
        first mention, so equal inputs give equal ids.
    entity: the cluster's entity row per mention, -1 for NIL (a discovered entity).
    parent: the mention this one hangs from in its cluster's tree of kept edges, -1
        when it hangs straight from the entity or is the root of a NIL cluster (the
        NIL cluster's smallest mention index).
    link_similarity: similarity of the edge to that parent (mention or entity);
        NaN at NIL roots, +inf for anchored mentions hanging from their gold entity.
    """

    cluster: np.ndarray
    entity: np.ndarray
    parent: np.ndarray
    link_similarity: np.ndarray

    def __len__(self) -> int:
        return len(self.cluster)

    @property
    def n_clusters(self) -> int:
        return int(self.cluster.max()) + 1 if len(self) else 0

    @property
    def nil_clusters(self) -> int:
        """How many clusters hold no entity (their ids: np.unique(cluster[entity < 0]))."""
        return len(np.unique(self.cluster[self.entity < 0]))

    def path(self, mention: int) -> List[Tuple[str, int]]:
        """The chain from the cluster's root to `mention` along kept edges.

        Starts with ("entity", row) when the cluster has an entity, else at the NIL
        cluster's root mention; then ("mention", index) steps ending at `mention`.
        """
        if isinstance(mention, bool) or not isinstance(mention, (int, np.integer)) \
                or not 0 <= mention < len(self):
            raise ArboError(f"No mention {mention!r}: the partition has {len(self)} mentions.")
        chain = [int(mention)]
        while self.parent[chain[-1]] >= 0:
            chain.append(int(self.parent[chain[-1]]))
        steps = [("mention", index) for index in reversed(chain)]
        if self.entity[mention] >= 0:
            steps.insert(0, ("entity", int(self.entity[mention])))
        return steps


def partition(
    knn_indices: np.ndarray,
    knn_similarities: np.ndarray,
    entity_rows: Optional[np.ndarray] = None,
    entity_similarities: Optional[np.ndarray] = None,
    *,
    anchor_entities: Optional[np.ndarray] = None,
    graph: str = "directed",
    min_similarity: Optional[float] = None,
) -> Partition:
    """Partition mentions into clusters with at most one entity each (ArboEL A.2-A.3).

    knn_indices, knn_similarities: (n, k) nearest mentions of each mention, e.g. from
        `retrieval.retriever.exact_search(m, m, k, exclude_self=True)`; -1 pads missing
        neighbours (their similarity is ignored) and a mention listed as its own
        neighbour is skipped. k may be 0 ("independent" linking).
    entity_rows, entity_similarities: (n,) each mention's nearest entity (any int id,
        e.g. an EntityStore row) and its similarity; row -1 means none. Leave both out
        to cluster mentions alone (discovery, section 3.5: every cluster is NIL).
    anchor_entities: (n,) gold entity row of mentions whose entity is known (ArboEL's
        transductive setting: append the training mentions to the node set and to the
        kNN search), -1 for the others. An anchor's entity edge is its gold entity with
        similarity +inf: never cut by the threshold and never outbid, so the anchor
        links to it and lends it to the mentions that reach the anchor.
    graph: "directed" or "undirected" (A.3), see below.
    min_similarity: drop every edge less similar than this (= -lambda); None keeps all.

    The graph (eq. 7) has, for each mention m, "edges from m's k-nearest neighbor
    mentions in M to m, and ... an edge from m's nearest entity to m".

    "directed" applies section 2.3's procedure: "evaluate each edge (u, v) in
    descending order of dissimilarity ... temporarily drop edge (u, v) and check
    whether v can still be reached by an entity node. If reachable, we permanently
    drop (u, v) ... If an entity cannot reach v, we retain edge (u, v)" (every edge is
    checked, as in the authors' release). Reachability follows edge directions: a
    mention is only reached through the mentions on its own neighbour list, and they
    through theirs. Every mention an entity reaches keeps exactly one incoming edge, so
    its cluster is an arborescence rooted at the entity; the others keep their edges
    and form NIL clusters (weakly connected components). This is the procedure's
    result, not each mention's best minimax path: an edge some mention cannot do
    without stays, and others may route through it to its entity even when another
    entity is reachable over stronger edges.

    "undirected" is the "hierarchical agglomerative clustering (HAC) procedure,
    following ... Angell et al. (2021) ... with no edge directionality": edges join
    clusters from the most similar down, except a join that would put two entities in
    one cluster (single linkage with entities that cannot link). This is the same
    partition as section 2.3's procedure with undirected reachability (an edge is
    dropped when both its ends still reach an entity without it).

    Cost: sorting the E = n (k + 1) edges, O(E log E), then for "undirected" a
    union-find pass over a spanning tree's edges, and for "directed" a pruning pass
    that is near-linear on kNN graphs (see `directed_pruning`). Equal inputs give
    equal outputs; edges of equal similarity are taken in order of their node numbers.
    """
    if graph not in GRAPHS:
        raise ArboError(f"Unknown linking graph '{graph}'; choose one of {', '.join(GRAPHS)}.")
    if min_similarity is not None and np.isnan(min_similarity):
        raise ArboError("min_similarity is NaN; pass a number, or None to keep every edge.")
    n, src, dst, similarity, rows = graph_edges(
        knn_indices, knn_similarities, entity_rows, entity_similarities, anchor_entities
    )
    if min_similarity is not None:
        keep = similarity >= min_similarity
        src, dst, similarity = src[keep], dst[keep], similarity[keep]
    is_entity = np.arange(n + len(rows)) >= n
    if graph == "undirected":
        parent, parent_similarity = undirected_parents(n, src, dst, similarity, is_entity)
    else:
        parent, parent_similarity = directed_tree(n, src, dst, similarity, is_entity)
    return _collect(n, rows, parent, parent_similarity)


def adjusted_rand_index(gold_labels, predicted_clusters) -> float:
    """Adjusted Rand index of a clustering against gold labels (ArboEL Table 5).

    Labels may be any hashable values (entity ids, cluster ids); to score a subset
    (e.g. mentions of unseen entities, "ALL/UNSEEN"), cluster everything and pass
    only the subset's labels. Empty input scores 1.0, as sklearn scores other
    clusterings with nothing to disagree on.
    """
    gold, predicted = _paired_labels(gold_labels, predicted_clusters)
    if not gold:
        return 1.0
    from sklearn.metrics import adjusted_rand_score  # slow to import; only scoring needs it

    return float(adjusted_rand_score(gold, predicted))


def b_cubed_f1(gold_labels, predicted_clusters) -> float:
    """B-cubed F1 (Bagga and Baldwin 1998): per mention, the precision and recall of its predicted
    cluster against its gold cluster, averaged over mentions; empty input scores 1.0 as ARI does."""
    gold, predicted = _paired_labels(gold_labels, predicted_clusters)
    if not gold:
        return 1.0
    pairs = Counter(zip(gold, predicted))
    gold_sizes, predicted_sizes = Counter(gold), Counter(predicted)
    precision = sum(n * n / predicted_sizes[p] for (_, p), n in pairs.items()) / len(gold)
    recall = sum(n * n / gold_sizes[g] for (g, _), n in pairs.items()) / len(gold)
    return 2 * precision * recall / (precision + recall)


def _paired_labels(gold_labels, predicted_clusters) -> Tuple[list, list]:
    gold, predicted = list(gold_labels), list(predicted_clusters)
    if len(gold) != len(predicted):
        raise ArboError(f"Cannot compare {len(gold)} gold labels with {len(predicted)} "
                        f"predicted clusters: one label per mention is needed.")
    return gold, predicted


def _collect(n: int, rows: np.ndarray, parent: np.ndarray,
             parent_similarity: np.ndarray) -> Partition:
    """Roots, clusters and entities from the parent forest over all nodes."""
    root = np.where(parent >= 0, parent, np.arange(len(parent)))
    while True:  # pointer jumping: log(depth) rounds
        jumped = root[root]
        if np.array_equal(jumped, root):
            break
        root = jumped
    mention_root = root[:n]
    entity = np.full(n, -1, dtype=np.int64)
    linked = mention_root >= n
    entity[linked] = rows[mention_root[linked] - n]
    _, first_mention, inverse = np.unique(mention_root, return_index=True, return_inverse=True)
    cluster = np.argsort(np.argsort(first_mention))[inverse].astype(np.int64)
    mention_parent = np.where(parent[:n] < n, parent[:n], -1)
    return Partition(cluster=cluster, entity=entity, parent=mention_parent,
                     link_similarity=parent_similarity[:n].copy())
