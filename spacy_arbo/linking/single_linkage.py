"""Single linkage that never joins two entities (ArboEL A.3's "undirected" graph, after
Angell et al. 2021), and the ordering of edges it shares with the directed pruning."""
from typing import Tuple

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components, minimum_spanning_tree


def most_similar_first(first: np.ndarray, second: np.ndarray, similarity: np.ndarray,
                       n_nodes: int) -> np.ndarray:
    """Order of the edges, most similar first, ties by node numbers; duplicate pairs keep
    their most similar copy."""
    order = np.lexsort((second, first, -similarity))
    _, unique = np.unique((first * n_nodes + second)[order], return_index=True)
    return order[np.sort(unique)]


def undirected_parents(n: int, src: np.ndarray, dst: np.ndarray, similarity: np.ndarray,
                       is_entity: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Single linkage that never joins two entities, as a forest hung from its roots."""
    n_nodes = len(is_entity)
    first, second = np.minimum(src, dst), np.maximum(src, dst)
    order = most_similar_first(first, second, similarity, n_nodes)
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
