"""ArboEL's training edges (section 2.3): arborescence positives and k-NN negatives.

Each batch mention's graph holds its gold entity and its coreferent training mentions;
pruned to a minimum spanning arborescence rooted at the entity, it gives the mention
exactly one incoming edge, its positive, from the entity or from another mention. Only
numpy and scipy: the caller passes embeddings cached from the current model snapshot, and
neighbour lists from its own index search.
"""
from typing import List, Mapping, NamedTuple, Optional

import numpy as np
from scipy.sparse.csgraph import breadth_first_order, minimum_spanning_tree

from ..util import ArboError

VARIANTS = ("full", "1nn", "1rand")


class Node(NamedTuple):
    """A positive's source: ("entity", entity row) or ("mention", training-mention index)."""

    kind: str
    index: int


def _check_cluster(dissimilarity: np.ndarray, root: int) -> np.ndarray:
    weights = np.asarray(dissimilarity, dtype=np.float64)
    if weights.ndim != 2 or weights.shape[0] != weights.shape[1] or not len(weights):
        raise ArboError(f"dissimilarity must be a non-empty square matrix, got shape {weights.shape}.")
    n = len(weights)
    if not 0 <= root < n:
        raise ArboError(f"root {root} is not a node of a {n}-node cluster.")
    used = ~np.eye(n, dtype=bool)
    used[:, root] = False  # no edges into the entity
    if not np.isfinite(weights[used]).all():
        raise ArboError("dissimilarity has NaN or infinite edge weights.")
    mentions = np.delete(np.arange(n), root)
    block = weights[np.ix_(mentions, mentions)]
    np.fill_diagonal(block, 0.0)
    if not np.allclose(block, block.T, rtol=1e-5, atol=1e-6):
        raise ArboError("mention-mention dissimilarities must be symmetric (phi is an inner product).")
    return weights


def _min_arborescence(weights: np.ndarray, root: int) -> np.ndarray:
    """scipy's undirected minimum spanning tree, oriented away from the root: a minimum
    arborescence (see `arborescence_positives`)."""
    if len(weights) == 1:
        return np.array([-1], dtype=np.int64)
    undirected = weights.copy()
    undirected[:, root] = weights[root]  # the root's outgoing edges, read both ways
    np.fill_diagonal(undirected, np.inf)
    # scipy reads a zero as "no edge"; shifting every weight alike keeps the minimum tree.
    shifted = np.triu(undirected - undirected.min() + 1.0, 1)
    _, parents = breadth_first_order(minimum_spanning_tree(shifted), root, directed=False,
                                     return_predecessors=True)
    parents[root] = -1
    return parents.astype(np.int64)


def arborescence_positives(
    dissimilarity: np.ndarray,
    root: int = 0,
    variant: str = "full",
    rng: Optional[np.random.Generator] = None,
) -> np.ndarray:
    """Each node's parent (its positive's source) in one cluster; the root's is -1.

    `dissimilarity[i, j]` is the weight of the edge i -> j: -psi(e, m) out of the root
    (the gold entity), -phi(m, m') between mentions (ArboEL eq. 2-3; lower = closer).
    Edges into the root and the diagonal are ignored.

    "full" is the minimum spanning arborescence rooted at the entity. With lambda = inf
    and a single entity, the paper's constrained pruning keeps exactly that: every
    mention reachable from the entity, one incoming edge each, minimax paths (eq. 1).
    It equals the undirected minimum spanning tree oriented away from the root, because
    (a) phi is symmetric, so a mention-mention edge weighs the same both ways, and (b)
    the root has only outgoing edges, so orienting any spanning tree away from the root
    gives an arborescence of the same weight and forgetting the directions of an
    arborescence gives a spanning tree of the same weight: the two sets correspond one
    to one with equal weights, so their minima coincide. Tree paths of an MST are
    minimax paths, and every directed path from the root is an undirected path from it
    and conversely (the root, having no incoming edge, can only start a simple path), so
    the minimax property holds for the directed paths the paper's eq. 1 is about.

    "1nn" and "1rand" (ArboEL 3.2) prune, for each mention q on its own, the restricted
    graph of the entity, q and one other mention of the cluster: q's most similar one,
    or one drawn uniformly at random with `rng`. q's parent is then the entity or that
    mention; these parents need not form a tree. A cluster holding only the entity
    returns [-1]; a single mention's parent is the entity in every variant.
    """
    if variant not in VARIANTS:
        raise ArboError(f"Unknown arborescence variant '{variant}'; expected one of {VARIANTS}.")
    weights = _check_cluster(dissimilarity, root)
    if variant == "full":
        return _min_arborescence(weights, root)
    rng = np.random.default_rng() if rng is None else rng
    parents = np.full(len(weights), -1, dtype=np.int64)
    mentions = np.delete(np.arange(len(weights)), root)
    for query in mentions:
        others = mentions[mentions != query]
        if not len(others):
            parents[query] = root
            continue
        neighbour = others[np.argmin(weights[others, query])] if variant == "1nn" else rng.choice(others)
        nodes = np.array([root, query, neighbour])
        parents[query] = nodes[_min_arborescence(weights[np.ix_(nodes, nodes)], 0)[1]]
    return parents


def batch_positives(
    mentions: np.ndarray,
    gold_entities: np.ndarray,
    clusters: Mapping[int, np.ndarray],
    mention_vectors: np.ndarray,
    entity_vectors: np.ndarray,
    variant: str = "full",
    max_cluster_size: int = 64,
    rng: Optional[np.random.Generator] = None,
) -> List[Node]:
    """The one positive of each batch mention: its parent in its cluster's arborescence.

    mentions: (B,) indices into `mention_vectors`, the cached training-mention vectors;
        -1 for a mention outside the cache (its positive is then its gold entity).
    gold_entities: (B,) rows of `entity_vectors`.
    clusters: entity row -> indices of its training mentions (`TrainingMentions.by_entity()`);
        the batch mention itself may or may not be among them.
    Affinities are inner products of the given vectors (ArboEL eq. 4): pass normalised
    vectors for cosine. "full" keeps the query and its `max_cluster_size - 1` most
    similar coreferent mentions; "1nn" and "1rand" pick the one neighbour among the
    whole cluster, as the paper defines them.
    """
    if variant not in VARIANTS:
        raise ArboError(f"Unknown arborescence variant '{variant}'; expected one of {VARIANTS}.")
    if max_cluster_size < 1:
        raise ArboError(f"max_cluster_size must be >= 1, got {max_cluster_size}.")
    mentions = np.asarray(mentions, dtype=np.int64)
    gold_entities = np.asarray(gold_entities, dtype=np.int64)
    mention_vectors = np.asarray(mention_vectors)
    entity_vectors = np.asarray(entity_vectors)
    if mentions.ndim != 1 or gold_entities.shape != mentions.shape:
        raise ArboError(
            f"mentions {mentions.shape} and gold_entities {gold_entities.shape} must be equal-length 1-d arrays."
        )
    if mention_vectors.ndim != 2 or entity_vectors.ndim != 2 or mention_vectors.shape[1] != entity_vectors.shape[1]:
        raise ArboError(
            f"mention_vectors {mention_vectors.shape} and entity_vectors {entity_vectors.shape} must be "
            "2-d with the same width."
        )
    if len(mentions) and not (-1 <= mentions.min() and mentions.max() < len(mention_vectors)):
        raise ArboError(f"mentions must be -1 or rows of mention_vectors, in [0, {len(mention_vectors)}).")
    if len(mentions) and not (0 <= gold_entities.min() and gold_entities.max() < len(entity_vectors)):
        raise ArboError(f"gold_entities must be rows of entity_vectors, in [0, {len(entity_vectors)}).")
    rng = np.random.default_rng() if rng is None else rng
    wanted = {"full": max_cluster_size - 1, "1nn": 1, "1rand": 1}[variant]
    positives = []
    for query, entity in zip(mentions.tolist(), gold_entities.tolist()):
        if query < 0:
            positives.append(Node("entity", entity))
            continue
        members = np.asarray(clusters.get(entity, ()), dtype=np.int64)
        members = members[members != query]
        if variant == "1rand":
            members = rng.choice(members, size=min(1, len(members)), replace=False)
        else:
            affinity = mention_vectors[members] @ mention_vectors[query]
            members = members[np.argsort(-affinity, kind="stable")[:wanted]]
        nodes = np.concatenate([[query], members])
        vectors = mention_vectors[nodes]
        weights = np.zeros((len(nodes) + 1, len(nodes) + 1))
        weights[0, 1:] = -(vectors @ entity_vectors[entity])
        weights[1:, 1:] = -(vectors @ vectors.T)
        parent = int(arborescence_positives(weights, root=0)[1])
        positives.append(Node("entity", entity) if parent == 0 else Node("mention", int(nodes[parent - 1])))
    return positives


def hard_negatives(
    neighbours: np.ndarray,
    gold: np.ndarray,
    k: int,
    labels: Optional[np.ndarray] = None,
    stop_at_gold: bool = False,
) -> np.ndarray:
    """The first k neighbours of each query that are not coreferent with it, -1 padded.

    neighbours: (B, K') ids by decreasing similarity, as an index search returns them
        (-1 for missing); this filters a search, it does not run one.
    gold: (B,) each query's gold entity row.
    labels: the gold entity row of every searchable id; None when the ids are entity
        rows themselves. With entity ids this gives ArboEL's nearest wrong entities,
        with training-mention ids and their gold rows its nearest non-coreferent
        mentions (the query itself included in the exclusion); k/2 of each in the paper.
    stop_at_gold: keep only the neighbours ranked above the first coreferent one (DEER
        4.3: "entities that are ranked above the correct one").
    """
    ids = np.asarray(neighbours)
    gold = np.asarray(gold, dtype=np.int64)
    if ids.ndim != 2 or gold.shape != (len(ids),):
        raise ArboError(f"neighbours must be (B, K) and gold (B,), got {ids.shape} and {gold.shape}.")
    if not np.issubdtype(ids.dtype, np.integer):
        raise ArboError(f"neighbours must hold integer ids, got {ids.dtype}.")
    if k < 0:
        raise ArboError(f"k must be >= 0, got {k}.")
    present = ids >= 0
    if labels is None:
        label = ids
    else:
        labels = np.asarray(labels, dtype=np.int64)
        if ids.size and ids.max() >= len(labels):
            raise ArboError(f"neighbour id {ids.max()} has no label (only {len(labels)} labels).")
        label = labels[np.where(present, ids, 0)]
    coreferent = present & (label == gold[:, None])
    keep = present & ~coreferent
    if stop_at_gold:
        keep &= np.cumsum(coreferent, axis=1) == 0
    order = np.argsort(~keep, axis=1, kind="stable")[:, :k]
    chosen = np.where(np.take_along_axis(keep, order, axis=1), np.take_along_axis(ids, order, axis=1), -1)
    return np.pad(chosen.astype(np.int64), ((0, 0), (0, k - chosen.shape[1])), constant_values=-1)
