"""ArboEL section 2.3's edge pruning on the directed mention graph: every mention an entity
reaches keeps one incoming edge, so its cluster is an arborescence rooted at that entity."""
import heapq
from typing import List, Tuple

import numpy as np

from .single_linkage import most_similar_first, undirected_parents

# Spacing of the directed certificate's labels; re-hanging a path takes room between two
# labels, and when none is left all labels are spread out again.
LABEL_GAP = 1 << 32


def directed_tree(n: int, src: np.ndarray, dst: np.ndarray, similarity: np.ndarray,
                  is_entity: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Each node's parent and the similarity of the edge to it: the arborescence of the
    kept edges for the mentions an entity reaches, a single-linkage forest for the others."""
    n_nodes = len(is_entity)
    order = most_similar_first(src, dst, similarity, n_nodes)
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
    nil_parent, nil_similarity = undirected_parents(n, src[among], dst[among],
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
    all outside it. Not linear in the worst case (bench/clustering_bench.py times it).
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
