import itertools

import numpy as np
import pytest

from spacy_arbo.training.arborescence import Node, arborescence_positives, batch_positives, hard_negatives
from spacy_arbo.util import ArboError

INF = np.inf


def path_to_root(parents, node, root):
    """Nodes from `node` up to `root`, or None when the parents loop or stop elsewhere."""
    path = [node]
    while path[-1] != root:
        if len(path) > len(parents) or parents[path[-1]] < 0:
            return None
        path.append(int(parents[path[-1]]))
    return path


def weight(dissimilarity, parents, root):
    return sum(dissimilarity[parents[v], v] for v in range(len(parents)) if v != root)


def all_arborescences(n, root):
    others = [v for v in range(n) if v != root]
    for choice in itertools.product(range(n), repeat=len(others)):
        parents = np.full(n, -1)
        parents[others] = choice
        if all(path_to_root(parents, v, root) is not None for v in others):
            yield parents


def minimax_from_root(dissimilarity, root, target):
    """Smallest bottleneck over every simple directed path root -> target (none enter the root)."""
    n = len(dissimilarity)
    middle = [v for v in range(n) if v not in (root, target)]
    best = INF
    for size in range(len(middle) + 1):
        for inner in itertools.permutations(middle, size):
            path = (root, *inner, target)
            best = min(best, max(dissimilarity[a, b] for a, b in zip(path, path[1:])))
    return best


def random_cluster(rng, n, root):
    weights = rng.random((n, n))
    weights = (weights + weights.T) / 2  # phi is symmetric
    weights[root] = rng.random(n)  # psi: entity -> mention only
    weights[:, root] = -100.0  # edges into the root would be the cheapest, must be ignored
    return np.round(weights, 1)  # ties included


@pytest.mark.parametrize("seed", range(12))
def test_full_is_the_minimum_arborescence_by_brute_force(seed):
    rng = np.random.default_rng(seed)
    for n in range(1, 6):
        root = int(rng.integers(n))
        weights = random_cluster(rng, n, root)
        parents = arborescence_positives(weights, root=root)
        assert parents[root] == -1
        others = [v for v in range(n) if v != root]
        assert all(parents[v] >= 0 and parents[v] != v for v in others)  # one incoming edge each
        assert all(path_to_root(parents, v, root) is not None for v in others)  # a tree rooted at the entity
        best = min(weight(weights, p, root) for p in all_arborescences(n, root))
        assert weight(weights, parents, root) == pytest.approx(best)
        for v in others:
            path = path_to_root(parents, v, root)[::-1]
            bottleneck = max(weights[a, b] for a, b in zip(path, path[1:]))
            assert bottleneck == pytest.approx(minimax_from_root(weights, root, v))


def test_chain_gives_the_far_mention_a_mention_parent():
    # entity 0 -> mentions 1, 2, 3 along a chain; 3 is far from the entity (9) but near 2
    weights = np.array([
        [0.0, 1.0, 5.0, 9.0],
        [INF, 0.0, 1.0, 2.0],
        [INF, 1.0, 0.0, 1.0],
        [INF, 2.0, 1.0, 0.0],
    ])
    assert arborescence_positives(weights).tolist() == [-1, 0, 1, 2]
    moved = [1, 2, 0, 3]  # the same graph with the entity at index 2
    assert arborescence_positives(weights[np.ix_(moved, moved)], root=2).tolist() == [2, 0, -1, 1]


def test_singleton_and_single_mention_clusters():
    for variant in ("full", "1nn", "1rand"):
        assert arborescence_positives(np.zeros((1, 1)), variant=variant).tolist() == [-1]
        assert arborescence_positives(np.array([[0.0, 3.0], [INF, 0.0]]), variant=variant).tolist() == [-1, 0]


# entity 0; mention 3's nearest mention is 4, but its arborescence path runs 0 -> 1 -> 2 -> 3
ONE_NN = np.array([
    [0.0, 1.0, 5.0, 9.0, 8.5],
    [INF, 0.0, 1.0, 10., 10.],
    [INF, 1.0, 0.0, 2.0, 10.],
    [INF, 10., 2.0, 0.0, 1.5],
    [INF, 10., 10., 1.5, 0.0],
])


def test_one_nn_prunes_entity_query_and_nearest_mention():
    assert arborescence_positives(ONE_NN).tolist() == [-1, 0, 1, 2, 3]
    # 1: nearest 2, graph {0,1,2} keeps 0->1.  2: nearest 1, graph {0,2,1}: 0->1->2.
    # 3: nearest 4, {0,3,4}: 0->4 (8.5) + 4->3 (1.5) = 10 beats 0->3 + 3->4 = 10.5.
    # 4: nearest 3, {0,4,3}: 0->4 (8.5) + 4->3 (1.5) is the minimum, so 4's parent is 0.
    assert arborescence_positives(ONE_NN, variant="1nn").tolist() == [-1, 0, 1, 4, 0]


def test_one_rand_draws_its_neighbour_from_the_cluster():
    # the entity is very far from mention 1 and close to all others: 1's parent is whichever is drawn
    weights = np.full((5, 5), 2.0)
    weights[0] = [0.0, 100.0, 1.0, 1.0, 1.0]
    weights[:, 0] = INF
    seen = set()
    for seed in range(30):
        parents = arborescence_positives(weights, variant="1rand", rng=np.random.default_rng(seed))
        again = arborescence_positives(weights, variant="1rand", rng=np.random.default_rng(seed))
        assert parents.tolist() == again.tolist()
        assert parents[0] == -1 and parents[1] in (2, 3, 4) and set(parents[2:]) == {0}
        seen.add(int(parents[1]))
    assert seen == {2, 3, 4}


def test_bad_clusters_are_rejected():
    with pytest.raises(ArboError, match="square"):
        arborescence_positives(np.zeros((2, 3)))
    with pytest.raises(ArboError, match="root"):
        arborescence_positives(np.zeros((2, 2)), root=2)
    with pytest.raises(ArboError, match="NaN"):
        arborescence_positives(np.array([[0.0, np.nan], [0.0, 0.0]]))
    with pytest.raises(ArboError, match="symmetric"):
        arborescence_positives(np.array([[0.0, 1.0, 1.0], [INF, 0.0, 1.0], [INF, 2.0, 0.0]]))
    with pytest.raises(ArboError, match="variant"):
        arborescence_positives(np.zeros((2, 2)), variant="2nn")
    # the root's column (edges into the entity) and the diagonal are never read
    assert arborescence_positives(np.array([[np.nan, 1.0], [np.nan, np.nan]])).tolist() == [-1, 0]


def unit(degrees):
    radians = np.radians(degrees)
    return np.stack([np.cos(radians), np.sin(radians)], axis=1).astype(np.float32)


# entity 0 at 0 degrees; its mentions 0-3 at 10, 40, 70, 100 degrees (a chain, 30 apart);
# mention 4 belongs to entity 1 alone
MENTIONS = unit([10, 40, 70, 100, -90])
ENTITIES = unit([0, -80, 180])
CLUSTERS = {0: np.array([0, 1, 2, 3]), 1: np.array([4])}


def test_batch_positives_follow_the_chain():
    positives = batch_positives(np.array([3, 0, 1, 4, -1]), np.array([0, 0, 0, 1, 2]), CLUSTERS, MENTIONS, ENTITIES)
    assert positives == [
        Node("mention", 2), Node("entity", 0), Node("mention", 0), Node("entity", 1), Node("entity", 2)
    ]


def test_batch_positives_cap_keeps_the_nearest_mentions():
    def parent(size, variant="full"):
        return batch_positives([3], [0], CLUSTERS, MENTIONS, ENTITIES, variant, max_cluster_size=size)[0]

    assert parent(2) == ("mention", 2)  # keeps 70 degrees, the nearest to 100
    assert parent(1) == ("entity", 0)  # the query alone
    assert parent(64, "1nn") == ("mention", 2)
    with pytest.raises(ArboError, match="max_cluster_size"):
        parent(0)


def test_batch_positives_one_rand_is_seeded_and_covers_the_cluster():
    # with any one neighbour, mention 3 (100 degrees) is closer to it than to the entity
    drawn = set()
    for seed in range(30):
        runs = [batch_positives([3], [0], CLUSTERS, MENTIONS, ENTITIES, "1rand", rng=np.random.default_rng(seed))
                for _ in range(2)]
        assert runs[0] == runs[1] and runs[0][0].kind == "mention"
        drawn.add(runs[0][0].index)
    assert drawn == {0, 1, 2}


def test_batch_positives_validation():
    with pytest.raises(ArboError, match="equal-length"):
        batch_positives([0, 1], [0], CLUSTERS, MENTIONS, ENTITIES)
    with pytest.raises(ArboError, match="mentions must be"):
        batch_positives([5], [0], CLUSTERS, MENTIONS, ENTITIES)
    with pytest.raises(ArboError, match="gold_entities must be"):
        batch_positives([0], [3], CLUSTERS, MENTIONS, ENTITIES)
    with pytest.raises(ArboError, match="same width"):
        batch_positives([0], [0], CLUSTERS, MENTIONS, np.zeros((3, 4)))
    assert batch_positives([], [], CLUSTERS, MENTIONS, ENTITIES) == []


def test_hard_negatives_skip_gold_and_padding():
    neighbours = np.array([[4, 1, 7, -1, 2], [5, 6, 0, 2, 9]])
    gold = np.array([1, 5])
    assert hard_negatives(neighbours, gold, 3).tolist() == [[4, 7, 2], [6, 0, 2]]
    assert hard_negatives(neighbours, gold, 6).tolist() == [[4, 7, 2, -1, -1, -1], [6, 0, 2, 9, -1, -1]]
    # DEER 4.3: only what the index ranks above the gold entity
    assert hard_negatives(neighbours, gold, 3, stop_at_gold=True).tolist() == [[4, -1, -1], [-1, -1, -1]]
    assert hard_negatives(neighbours, gold, 0).shape == (2, 0)


def test_hard_negatives_over_mentions_exclude_the_whole_cluster():
    labels = np.array([0, 0, 1, 1, 2])  # gold entity of training mentions 0..4
    # query mention 0 (gold 0): itself and mention 1 are coreferent
    assert hard_negatives(np.array([[0, 2, 1, 4, 3]]), np.array([0]), 2, labels=labels).tolist() == [[2, 4]]
    with pytest.raises(ArboError, match="no label"):
        hard_negatives(np.array([[5]]), np.array([0]), 1, labels=labels)
    with pytest.raises(ArboError, match="integer"):
        hard_negatives(np.array([[1.0]]), np.array([0]), 1)
    with pytest.raises(ArboError, match="k must"):
        hard_negatives(np.array([[1]]), np.array([0]), -1)
