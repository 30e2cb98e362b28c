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
import heapq
from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components, minimum_spanning_tree

from ..util import ArboError

GRAPHS = ("directed", "undirected")
# Spacing of the directed certificate's labels; re-hanging a path takes room between two
# labels, and when none is left all labels are spread out again.
LABEL_GAP = 1 << 32


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
    that is near-linear on kNN graphs (see `_directed_parents`). Equal inputs give
    equal outputs; edges of equal similarity are taken in order of their node numbers.
    """
    if graph not in GRAPHS:
        raise ArboError(f"Unknown linking graph '{graph}'; choose one of {', '.join(GRAPHS)}.")
    if min_similarity is not None and np.isnan(min_similarity):
        raise ArboError("min_similarity is NaN; pass a number, or None to keep every edge.")
    n, src, dst, similarity, rows = _graph_edges(
        knn_indices, knn_similarities, entity_rows, entity_similarities, anchor_entities
    )
    if min_similarity is not None:
        keep = similarity >= min_similarity
        src, dst, similarity = src[keep], dst[keep], similarity[keep]
    is_entity = np.arange(n + len(rows)) >= n
    if graph == "undirected":
        parent, parent_similarity = _undirected_parents(n, src, dst, similarity, is_entity)
    else:
        parent, parent_similarity = _directed_tree(n, src, dst, similarity, is_entity)
    return _collect(n, rows, parent, parent_similarity)


def adjusted_rand_index(gold_labels, predicted_clusters) -> float:
    """Adjusted Rand index of a clustering against gold labels (ArboEL Table 5).

    Labels may be any hashable values (entity ids, cluster ids); to score a subset
    (e.g. mentions of unseen entities, "ALL/UNSEEN"), cluster everything and pass
    only the subset's labels. Empty input scores 1.0, as sklearn scores other
    clusterings with nothing to disagree on.
    """
    gold, predicted = list(gold_labels), list(predicted_clusters)
    if len(gold) != len(predicted):
        raise ArboError(f"Cannot compare {len(gold)} gold labels with {len(predicted)} "
                        f"predicted clusters: one label per mention is needed.")
    if not gold:
        return 1.0
    from sklearn.metrics import adjusted_rand_score  # slow to import; only scoring needs it

    return float(adjusted_rand_score(gold, predicted))


# Building the graph --------------------------------------------------------------


def _graph_edges(knn_indices, knn_similarities, entity_rows, entity_similarities,
                 anchor_entities):
    """Validated directed edges (src, dst, similarity) and the entity row of each entity node."""
    indices = np.asarray(knn_indices)
    similarities = np.asarray(knn_similarities)
    if indices.ndim != 2:
        raise ArboError(f"knn_indices must be a (mentions, k) matrix; got shape {indices.shape}.")
    if similarities.shape != indices.shape:
        raise ArboError(f"knn_similarities has shape {similarities.shape} but knn_indices has "
                        f"shape {indices.shape}.")
    n = len(indices)
    if indices.size and not np.issubdtype(indices.dtype, np.integer):
        raise ArboError(f"knn_indices must hold integer mention indices (-1 for padding); got "
                        f"dtype {indices.dtype} (were indices and similarities swapped?).")
    indices = indices.astype(np.int64, copy=False)
    similarities = _as_float(similarities, "knn_similarities")
    _check_range(indices, n, "knn_indices", f"mention indices 0..{n - 1}")
    listed = indices >= 0
    _check_no_nan(similarities[listed], np.nonzero(listed)[0], "knn_similarities")
    owner = np.broadcast_to(np.arange(n)[:, None], indices.shape)
    # Edge u -> m for each neighbour u in m's list; self-matches add nothing.
    edge = listed & (indices != owner)
    src, dst, similarity = indices[edge], owner[edge], similarities[edge]

    if (entity_rows is None) != (entity_similarities is None):
        raise ArboError("Pass entity_rows and entity_similarities together (or neither).")
    if entity_rows is None:
        nearest = np.full(n, -1, dtype=np.int64)
        nearest_similarity = np.zeros(n)
    else:
        nearest = _as_rows(entity_rows, n, "entity_rows")
        nearest_similarity = _as_float(np.asarray(entity_similarities), "entity_similarities")
        if nearest_similarity.shape != (n,):
            raise ArboError(f"entity_similarities must have one value per mention ({n}); got "
                            f"shape {nearest_similarity.shape}.")
        has = nearest >= 0
        _check_no_nan(nearest_similarity[has], np.nonzero(has)[0], "entity_similarities")
    if anchor_entities is not None:
        gold = _as_rows(anchor_entities, n, "anchor_entities")
        anchored = gold >= 0
        nearest = np.where(anchored, gold, nearest)
        nearest_similarity = np.where(anchored, np.inf, nearest_similarity)

    linked = nearest >= 0
    rows = np.unique(nearest[linked])
    entity_src = n + np.searchsorted(rows, nearest[linked])
    src = np.concatenate([src, entity_src])
    dst = np.concatenate([dst, np.nonzero(linked)[0]])
    similarity = np.concatenate([similarity, nearest_similarity[linked]])
    return n, src.astype(np.int64), dst.astype(np.int64), similarity, rows


def _as_rows(values, n: int, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.shape != (n,):
        raise ArboError(f"{name} must have one value per mention ({n}); got shape {array.shape}.")
    if n and not np.issubdtype(array.dtype, np.integer):
        raise ArboError(f"{name} must hold integer entity rows (-1 for none); got dtype "
                        f"{array.dtype}.")
    array = array.astype(np.int64, copy=False)
    _check_range(array, None, name, "entity rows >= 0")
    return array


def _check_range(array: np.ndarray, end: Optional[int], name: str, expected: str) -> None:
    bad = array < -1
    if end is not None:
        bad |= array >= end
    if bad.any():
        position = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ArboError(f"{name}{list(position)} is {int(array[position])}; expected -1 or "
                        f"{expected}.")


def _as_float(array: np.ndarray, name: str) -> np.ndarray:
    if array.size and not (np.issubdtype(array.dtype, np.floating)
                           or np.issubdtype(array.dtype, np.integer)):
        raise ArboError(f"{name} must be numbers; got dtype {array.dtype}.")
    return array.astype(np.float64)


def _check_no_nan(values: np.ndarray, mentions: np.ndarray, name: str) -> None:
    if np.isnan(values).any():
        raise ArboError(f"{name} is NaN for mention {int(mentions[np.isnan(values)][0])}.")


# Partitioning ----------------------------------------------------------------------


def _most_similar_first(first: np.ndarray, second: np.ndarray, similarity: np.ndarray,
                        n_nodes: int) -> np.ndarray:
    """Order of the edges, most similar first, ties by node numbers; duplicate pairs keep
    their most similar copy."""
    order = np.lexsort((second, first, -similarity))
    _, unique = np.unique((first * n_nodes + second)[order], return_index=True)
    return order[np.sort(unique)]


def _directed_tree(n: int, src: np.ndarray, dst: np.ndarray, similarity: np.ndarray,
                   is_entity: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    n_nodes = len(is_entity)
    order = _most_similar_first(src, dst, similarity, n_nodes)
    src, dst, similarity = src[order], dst[order], similarity[order]
    parent_edge, reached = _directed_parents(src, dst, is_entity)
    parent = np.full(n_nodes, -1, dtype=np.int64)
    parent_similarity = np.full(n_nodes, np.nan)
    hung = parent_edge >= 0
    parent[hung] = src[parent_edge[hung]]
    parent_similarity[hung] = similarity[parent_edge[hung]]
    # Mentions no entity reaches keep all their edges (weakly connected NIL clusters);
    # a spanning tree of the most similar ones explains them.
    among = ~reached[src] & ~reached[dst]
    nil_parent, nil_similarity = _undirected_parents(n, src[among], dst[among],
                                                     similarity[among], is_entity)
    parent[~reached] = nil_parent[~reached]
    parent_similarity[~reached] = nil_similarity[~reached]
    return parent, parent_similarity


def _directed_parents(src: np.ndarray, dst: np.ndarray,
                      is_entity: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Run section 2.3's edge pruning on edges sorted most similar first.

    Returns each node's one kept incoming edge (-1 for entities and for mentions no
    entity reaches) and which nodes an entity reaches.

    Re-checking reachability with a graph search per edge, as written, is quadratic.
    Instead a spanning arborescence `parent` of the reached nodes serves as a
    certificate, with labels that grow along its edges, so every mention labelled
    below v hangs from an entity without passing through v. Dropping an edge outside
    the tree cuts no one off: O(1). When a tree edge (u, v) is due, a search backward
    from v over the remaining edges climbs the tree from each tail it meets: either a
    climb reaches a label below v's (v stays reachable: drop the edge and re-hang the
    path found, relabelled between its ends) or every climb ends below v (v is cut
    off: keep the edge). So the kept edges are exactly the paper's whatever the tree,
    and a tree of strong edges (the sweep below) leaves the early, weak edges almost
    all outside it. Not linear in the worst case; a few seconds for 100,000 mentions
    with k = 8 here (bench/clustering_bench.py), tens of seconds on adversarial graphs.
    """
    n_nodes = len(is_entity)
    tails, heads = src.tolist(), dst.tolist()
    reached = is_entity.tolist()
    parent = [-1] * n_nodes
    label = [0] * n_nodes  # entities 0, then mentions in the order the sweep reaches them
    next_label = LABEL_GAP
    # Minimax sweep: add edges most similar first (edge numbers are similarity ranks); an
    # edge out of a reached node reaches its head, and the edges waiting on the head
    # follow, most similar first (Prim), so the tree holds strong edges.
    waiting: List[List[int]] = [[] for _ in range(n_nodes)]
    for edge, head in enumerate(heads):
        if reached[head]:
            continue
        if not reached[tails[edge]]:
            waiting[tails[edge]].append(edge)
            continue
        frontier = [edge]
        while frontier:
            hop = heapq.heappop(frontier)
            node = heads[hop]
            if reached[node]:
                continue
            reached[node] = True
            parent[node] = hop
            label[node] = next_label
            next_label += LABEL_GAP
            for later in waiting[node]:
                heapq.heappush(frontier, later)
            waiting[node] = []
    del waiting

    mentions = np.flatnonzero(~is_entity).tolist()

    def relabel() -> None:
        """Spread the mention labels out again, keeping their order (entities stay 0),
        with room for any path between neighbours."""
        gap = max(LABEL_GAP, n_nodes + 1)
        for rank, node in enumerate(sorted(mentions, key=label.__getitem__), start=1):
            label[node] = rank * gap

    # Incoming edges of every node, most similar first.
    by_head = np.argsort(dst, kind="stable")
    bounds = np.searchsorted(dst[by_head], np.arange(n_nodes + 1)).tolist()
    incoming = by_head.tolist()
    # Edges out of unreached nodes never help anyone reach an entity.
    alive = [reached[tail] for tail in tails]

    def rehang(cut: int) -> bool:
        """Whether heads[cut] is reachable without edge `cut`; if so, re-hang the tree."""
        top = heads[cut]
        bound = label[top]
        below = {top: -1}  # nodes known to hang below `top` -> their edge toward `top`
        frontier = [(bound, top)]  # lowest labels first: they lead up the tree
        while frontier:
            node = heapq.heappop(frontier)[1]
            for edge in incoming[bounds[node]:bounds[node + 1]]:
                if edge == cut or not alive[edge] or tails[edge] in below:
                    continue
                # Climb the tree from the tail until it is known to hang below `top`, or
                # reaches a label under `bound` and so hangs from an entity without it.
                links = [edge]  # edges from each climbed node one step down
                climber = tails[edge]
                while label[climber] >= bound and climber not in below:
                    links.append(parent[climber])
                    climber = tails[parent[climber]]
                if climber in below:
                    for link in links:
                        if tails[link] not in below:
                            below[tails[link]] = link
                            heapq.heappush(frontier, (label[tails[link]], tails[link]))
                    continue
                path = links[::-1]  # climber -> ... -> node, then on down to `top`
                while node != top:
                    path.append(below[node])
                    node = heads[path[-1]]
                if bound - label[climber] <= len(path):
                    relabel()
                step = (label[top] - label[climber]) // (len(path) + 1)
                for position, link in enumerate(path, start=1):
                    parent[heads[link]] = link
                    label[heads[link]] = label[climber] + position * step
                return True
        return False

    for edge in range(len(heads) - 1, -1, -1):  # least similar first
        head = heads[edge]
        if parent[head] != edge or rehang(edge):
            alive[edge] = False
    return np.array(parent, dtype=np.int64), np.array(reached, dtype=bool)


def _undirected_parents(n: int, src: np.ndarray, dst: np.ndarray, similarity: np.ndarray,
                        is_entity: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Single linkage that never joins two entities, as a forest hung from its roots."""
    n_nodes = len(is_entity)
    first, second = np.minimum(src, dst), np.maximum(src, dst)
    order = _most_similar_first(first, second, similarity, n_nodes)
    first, second, similarity = first[order], second[order], similarity[order]
    kept = _constrained_forest(first, second, is_entity)
    return _hang(n, first[kept], second[kept], similarity[kept], n_nodes)


def _constrained_forest(first: np.ndarray, second: np.ndarray,
                        is_entity: np.ndarray) -> np.ndarray:
    """Edges (unique pairs, most similar first) that single linkage joins, skipping any
    join of two clusters that both hold an entity.

    Only minimum-spanning-tree edges can matter: a non-tree edge closes a cycle of more
    similar edges, and if some of those were skipped, both its ends already sit in
    clusters with an entity. So scipy's MST (C, O(E log E)) comes first and the Python
    union-find (path halving, union by size) sees at most n_nodes - 1 edges.
    """
    n_nodes = len(is_entity)
    if not len(first):
        return np.empty(0, dtype=np.int64)
    rank = np.arange(1, len(first) + 1, dtype=np.float64)
    tree = minimum_spanning_tree(csr_matrix((rank, (first, second)), shape=(n_nodes, n_nodes)))
    candidates = np.sort(tree.tocoo().data.astype(np.int64) - 1).tolist()
    ends_a, ends_b = first.tolist(), second.tolist()
    root = list(range(n_nodes))
    size = [1] * n_nodes
    has_entity = is_entity.tolist()

    def find(node: int) -> int:
        while root[node] != node:
            root[node] = root[root[node]]
            node = root[node]
        return node

    kept = []
    for edge in candidates:
        a, b = find(ends_a[edge]), find(ends_b[edge])
        if a == b or (has_entity[a] and has_entity[b]):
            continue
        if size[a] < size[b]:
            a, b = b, a
        root[b] = a
        size[a] += size[b]
        has_entity[a] = has_entity[a] or has_entity[b]
        kept.append(edge)
    return np.array(kept, dtype=np.int64)


def _hang(n: int, first: np.ndarray, second: np.ndarray, similarity: np.ndarray,
          n_nodes: int) -> Tuple[np.ndarray, np.ndarray]:
    """Parent node and parent-edge similarity in a forest rooted at each tree's entity
    (the only node numbered >= n), or else at its smallest mention."""
    forest = csr_matrix((np.ones(len(first)), (first, second)), shape=(n_nodes, n_nodes))
    count, label = connected_components(forest, directed=False)
    nodes = np.arange(n_nodes)
    lowest = np.full(count, n_nodes)
    highest = np.full(count, -1)
    np.minimum.at(lowest, label, nodes)
    np.maximum.at(highest, label, nodes)
    roots = np.where(highest >= n, highest, lowest)
    # One search from a virtual node joined to every root orients all trees at once.
    virtual = n_nodes
    tails = np.concatenate([first, np.full(count, virtual)])
    heads = np.concatenate([second, roots])
    with_virtual = csr_matrix((np.ones(len(tails)), (tails, heads)),
                              shape=(n_nodes + 1, n_nodes + 1))
    _, predecessor = breadth_first_order(with_virtual, virtual, directed=False,
                                         return_predecessors=True)
    parent = predecessor[:n_nodes].astype(np.int64)
    parent[parent == virtual] = -1
    parent_similarity = np.full(n_nodes, np.nan)
    hung = np.nonzero(parent >= 0)[0]
    keys = first * n_nodes + second
    by_key = np.argsort(keys)
    wanted = np.minimum(parent[hung], hung) * n_nodes + np.maximum(parent[hung], hung)
    parent_similarity[hung] = similarity[by_key[np.searchsorted(keys[by_key], wanted)]]
    return parent, parent_similarity


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
