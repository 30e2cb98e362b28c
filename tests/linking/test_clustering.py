import numpy as np
import pytest

from spacy_arbo.linking import directed_pruning
from spacy_arbo.linking.clustering import (
    GRAPHS,
    adjusted_rand_index,
    partition,
)
from spacy_arbo.util import ArboError

A, B, C = 0, 1, 5  # entity rows


def knn_lists(lists):
    """(indices, similarities) from {mention: [(neighbour, similarity), ...]}, -1 padded."""
    n = len(lists)
    k = max((len(row) for row in lists.values()), default=0)
    indices = np.full((n, k), -1, dtype=np.int64)
    similarities = np.full((n, k), -np.inf)
    for mention, row in lists.items():
        for slot, (neighbour, similarity) in enumerate(row):
            indices[mention, slot] = neighbour
            similarities[mention, slot] = similarity
    return indices, similarities


def link(lists, entities, graph, **kwargs):
    """Partition with nearest entities given as [(row, similarity) or None per mention]."""
    indices, similarities = knn_lists(lists)
    rows = np.array([-1 if e is None else e[0] for e in entities])
    entity_similarities = np.array([0.0 if e is None else e[1] for e in entities])
    return partition(indices, similarities, rows, entity_similarities, graph=graph, **kwargs)


def groups(result):
    return sorted(sorted(np.nonzero(result.cluster == c)[0].tolist())
                  for c in range(result.n_clusters))


@pytest.mark.parametrize("graph", GRAPHS)
def test_chain_links_through_mentions(graph):
    # Only m0 is close to entity A; m1 and m2 reach it through the chain m0 - m1 - m2.
    lists = {0: [(1, 0.8)], 1: [(0, 0.8), (2, 0.8)], 2: [(1, 0.8)]}
    result = link(lists, [(A, 0.9), (A, 0.1), (A, 0.05)], graph, min_similarity=0.5)
    assert result.entity.tolist() == [A, A, A]
    assert result.cluster.tolist() == [0, 0, 0]
    assert result.parent.tolist() == [-1, 0, 1]
    assert result.link_similarity.tolist() == pytest.approx([0.9, 0.8, 0.8])
    assert result.path(2) == [("entity", A), ("mention", 0), ("mention", 1), ("mention", 2)]
    assert result.path(0) == [("entity", A), ("mention", 0)]


@pytest.mark.parametrize("graph", GRAPHS)
def test_mention_between_two_entities_joins_the_closer_one(graph):
    # m2's own nearest entity is A, but its closest mention m1 belongs to B; A and B
    # must never share a cluster, so m2 goes with m1 only.
    lists = {0: [], 1: [], 2: [(0, 0.7), (1, 0.8)]}
    result = link(lists, [(A, 0.9), (B, 0.9), (A, 0.6)], graph)
    assert result.entity.tolist() == [A, B, B]
    assert groups(result) == [[0], [1, 2]]
    assert result.path(2) == [("entity", B), ("mention", 1), ("mention", 2)]


@pytest.mark.parametrize("graph", GRAPHS)
def test_two_entities_never_merge(graph):
    # m0 and m1 are each other's closest node; the more similar entity edge wins the
    # pair and B is left without mentions instead of joining A's cluster.
    lists = {0: [(1, 0.95)], 1: [(0, 0.95)]}
    result = link(lists, [(A, 0.9), (B, 0.85)], graph)
    assert result.entity.tolist() == [A, A]
    assert result.n_clusters == 1
    assert result.path(1) == [("entity", A), ("mention", 0), ("mention", 1)]


@pytest.mark.parametrize("graph", GRAPHS)
def test_threshold_cuts_weak_edges_into_nil(graph):
    lists = {0: [(1, 0.3)], 1: [(0, 0.3)]}
    entities = [(A, 0.9), (A, 0.2)]
    assert link(lists, entities, graph).entity.tolist() == [A, A]
    result = link(lists, entities, graph, min_similarity=0.5)
    assert result.entity.tolist() == [A, -1]
    assert result.cluster.tolist() == [0, 1]
    assert result.nil_clusters == 1
    assert result.path(1) == [("mention", 1)]
    assert np.isnan(result.link_similarity[1])
    # The threshold is inclusive: similarity >= min_similarity stays (weight <= lambda).
    assert link(lists, entities, graph, min_similarity=0.2).entity.tolist() == [A, A]


@pytest.mark.parametrize("graph", GRAPHS)
def test_mentions_without_entity_edges_form_a_nil_cluster(graph):
    lists = {0: [], 1: [(2, 0.7), (3, 0.6)], 2: [(1, 0.7)], 3: [(2, 0.65)]}
    result = link(lists, [(A, 0.9), None, None, None], graph)
    assert result.entity.tolist() == [A, -1, -1, -1]
    assert result.cluster.tolist() == [0, 1, 1, 1]
    assert (result.n_clusters, result.nil_clusters) == (2, 1)
    # NIL paths start at the cluster's first mention and follow the most similar edges.
    assert result.path(1) == [("mention", 1)]
    assert result.path(3) == [("mention", 1), ("mention", 2), ("mention", 3)]


def test_directed_follows_neighbour_lists_undirected_does_not():
    # b lists m among its neighbours (edge m -> b), but m's own list holds only a
    # (edge a -> m). Undirected (A.3: HAC "with no edge directionality") joins m to b
    # and entity B through the stronger edge; in the directed graph of eq. 7 m can only
    # be reached through its own neighbour a, so it links to A (A.2: ignoring the
    # "directionality of nearest neighbor relationships" is what directed edges fix).
    lists = {0: [], 1: [(2, 0.85)], 2: [(0, 0.8)]}
    entities = [(A, 0.9), (B, 0.9), None]
    assert link(lists, entities, "undirected").entity.tolist() == [A, B, B]
    directed = link(lists, entities, "directed")
    assert directed.entity.tolist() == [A, B, A]
    assert directed.path(2) == [("entity", A), ("mention", 0), ("mention", 2)]


def test_directed_keeps_the_paper_pruning_not_per_mention_minimax():
    # y (0) is reached only by a weak edge from A; m (2) lists y (0.9) and z (0.8), and z
    # hangs from B (0.9). Section 2.3 drops edges least similar first while the head stays
    # reachable: A -> y is indispensable and stays, so z -> m is dropped and m links to
    # A through y, although its best bottleneck path (via z, 0.8) leads to B.
    lists = {0: [], 1: [], 2: [(0, 0.9), (1, 0.8)]}
    entities = [(A, 0.5), (B, 0.9), (B, 0.1)]
    directed = link(lists, entities, "directed")
    assert directed.entity.tolist() == [A, B, A]
    assert directed.path(2) == [("entity", A), ("mention", 0), ("mention", 2)]
    # Undirected single linkage joins y and m to z and B before the weak A edge.
    assert link(lists, entities, "undirected").entity.tolist() == [B, B, B]


@pytest.mark.parametrize("graph", GRAPHS)
def test_anchored_mentions_link_to_gold_and_lend_it(graph):
    # m0 is a training mention whose gold entity C differs from its nearest entity A;
    # m1 only reaches an entity through m0.
    indices, similarities = knn_lists({0: [(1, 0.8)], 1: [(0, 0.8)]})
    result = partition(indices, similarities, np.array([A, A]), np.array([0.99, 0.3]),
                       anchor_entities=np.array([C, -1]), graph=graph, min_similarity=0.5)
    assert result.entity.tolist() == [C, C]
    assert result.link_similarity[0] == np.inf
    assert result.path(1) == [("entity", C), ("mention", 0), ("mention", 1)]


@pytest.mark.parametrize("graph", GRAPHS)
def test_padding_and_self_matches_are_ignored(graph):
    plain = link({0: [(1, 0.8)], 1: [(0, 0.8)], 2: []}, [(A, 0.9), None, None], graph)
    indices = np.array([[1, 0, -1], [-1, 1, 0], [2, -1, -1]])
    similarities = np.array([[0.8, 1.0, np.nan], [np.nan, 1.0, 0.8], [1.0, -np.inf, 7.0]])
    padded = partition(indices, similarities, np.array([A, -1, -1]), np.array([0.9, 0, 0]),
                       graph=graph)
    for field in ("cluster", "entity", "parent"):
        assert getattr(padded, field).tolist() == getattr(plain, field).tolist()
    assert padded.entity.tolist() == [A, A, -1]
    assert padded.path(2) == [("mention", 2)]


@pytest.mark.parametrize("graph", GRAPHS)
def test_deterministic_cluster_ids_numbered_by_first_mention(graph):
    rng = np.random.default_rng(3)
    indices = rng.integers(-1, 40, size=(40, 4))
    similarities = rng.choice([0.2, 0.5, 0.8], size=(40, 4))  # many ties
    rows, entity_similarities = rng.integers(-1, 4, size=40), rng.choice([0.3, 0.6], size=40)
    first = partition(indices, similarities, rows, entity_similarities, graph=graph,
                      min_similarity=0.4)
    again = partition(indices.copy(), similarities.copy(), rows.copy(),
                      entity_similarities.copy(), graph=graph, min_similarity=0.4)
    for field in ("cluster", "entity", "parent", "link_similarity"):
        np.testing.assert_array_equal(getattr(first, field), getattr(again, field))
    _, first_mentions = np.unique(first.cluster, return_index=True)
    assert first.cluster[0] == 0
    assert np.all(np.diff(first_mentions) > 0)


@pytest.mark.parametrize("graph", GRAPHS)
def test_mentions_only_and_independent_linking(graph):
    indices, similarities = knn_lists({0: [(1, 0.9)], 1: [(0, 0.9)], 2: [(1, 0.2)]})
    alone = partition(indices, similarities, graph=graph, min_similarity=0.5)
    assert alone.entity.tolist() == [-1, -1, -1]
    assert groups(alone) == [[0, 1], [2]]
    # k = 0: every mention links to its own nearest entity ("independent").
    independent = partition(np.empty((3, 0), dtype=np.int64), np.empty((3, 0)),
                            np.array([A, B, A]), np.array([0.9, 0.8, 0.1]), graph=graph,
                            min_similarity=0.5)
    assert independent.entity.tolist() == [A, B, -1]
    assert independent.n_clusters == 3


def test_empty_input():
    result = partition(np.empty((0, 3), dtype=np.int64), np.empty((0, 3)),
                       np.empty(0, dtype=np.int64), np.empty(0))
    assert len(result) == 0 and result.n_clusters == 0 and result.nil_clusters == 0


# The literal procedure of section 2.3, as a reference on small random graphs ------------


def reachable_entity(edges, start, directed):
    """Whether an entity node reaches `start` (directed) or shares its component."""
    neighbours = {}
    for tail, head, _ in edges:
        neighbours.setdefault(head, []).append(tail)
        if not directed:
            neighbours.setdefault(tail, []).append(head)
    seen, stack = {start}, [start]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            return True
        for other in neighbours.get(node, []):
            if other not in seen:
                seen.add(other)
                stack.append(other)
    return False


def literal_procedure(edges, directed):
    """Edges least similar first; drop one if its head (directed) or both ends
    (undirected, as in the authors' release) still reach an entity without it."""
    kept = list(edges)
    for edge in sorted(edges, key=lambda e: e[2]):
        rest = [e for e in kept if e is not edge]
        ends = [edge[1]] if directed else [edge[0], edge[1]]
        if all(reachable_entity(rest, end, directed) for end in ends):
            kept = rest
    return kept


def random_case(rng, sizes=(2, 9), k=3, weak_entities=False):
    """Distinct similarities, so the reference's order of edges is the implementation's."""
    n = int(rng.integers(*sizes))
    indices = np.full((n, k), -1)
    for mention in range(n):
        picked = rng.choice(n, size=int(rng.integers(0, min(k, n) + 1)), replace=False)
        indices[mention, :len(picked)] = picked  # may include the mention itself
    values = rng.permutation(n * k + n) / (n * k + n)
    if weak_entities:  # entity edges take n of the weakest values
        values = np.sort(values)
        weak = rng.choice(n * k // 2, size=n, replace=False)
        values = np.concatenate([rng.permutation(np.delete(values, weak)), values[weak]])
    rows = rng.integers(-1, 3, size=n)
    anchors = np.where(rng.random(n) < 0.15, rng.integers(0, 3, size=n), -1)
    threshold = [None, 0.1][int(rng.integers(2))]
    return indices, values[:n * k].reshape(n, k), rows, values[n * k:], anchors, threshold


def reference_edges(indices, similarities, rows, entity_similarities, anchors, threshold):
    edges = [(int(j), m, s) for m in range(len(indices))
             for j, s in zip(indices[m], similarities[m]) if j >= 0 and j != m]
    for m, (row, s, gold) in enumerate(zip(rows, entity_similarities, anchors)):
        if gold >= 0:
            edges.append((("entity", int(gold)), m, np.inf))
        elif row >= 0:
            edges.append((("entity", int(row)), m, s))
    return [e for e in edges if threshold is None or e[2] >= threshold]


def assert_matches_literal_procedure(case, graph):
    directed = graph == "directed"
    indices, similarities, rows, entity_similarities, anchors, threshold = case
    result = partition(indices, similarities, rows, entity_similarities,
                       anchor_entities=anchors, graph=graph, min_similarity=threshold)
    kept = literal_procedure(reference_edges(*case), directed)
    n = len(indices)
    # Clusters: (weakly) connected components of the kept edges, read off per mention.
    component = {m: {m} for m in range(n)}
    for tail, head, _ in kept:
        for end in (tail, head):
            component.setdefault(end, {end})
        merged = component[tail] | component[head]
        for node in merged:
            component[node] = merged
    expected_groups = sorted({tuple(sorted(x for x in component[m] if not isinstance(x, tuple)))
                              for m in range(n)})
    assert [tuple(g) for g in groups(result)] == expected_groups
    for m in range(n):
        entities = [x[1] for x in component[m] if isinstance(x, tuple)]
        assert len(entities) <= 1
        assert result.entity[m] == (entities[0] if entities else -1)
        if directed and entities:
            # Each linked mention keeps exactly one incoming edge: its parent.
            (tail,) = [t for t, h, _ in kept if h == m]
            assert result.parent[m] == (-1 if isinstance(tail, tuple) else tail)


@pytest.mark.parametrize("graph", GRAPHS)
def test_matches_the_literal_procedure_on_random_graphs(graph):
    rng = np.random.default_rng(0)
    for _ in range(300):
        assert_matches_literal_procedure(random_case(rng), graph)


def test_directed_matches_the_literal_procedure_when_labels_run_out(monkeypatch):
    # Weak entity edges make the directed pruning re-hang its certificate tree often;
    # with labels 1 apart there is no room for the first re-hung path, and later ones
    # soon fill the room left after spreading the labels out.
    monkeypatch.setattr(directed_pruning, "LABEL_GAP", 1)
    rng = np.random.default_rng(5)
    for _ in range(40):
        case = random_case(rng, sizes=(15, 35), k=4, weak_entities=True)
        assert_matches_literal_procedure(case, "directed")


# Validation, neighbours, ARI -------------------------------------------------------


def test_bad_input_raises_arbo_error():
    indices, similarities = knn_lists({0: [(1, 0.5)], 1: [(0, 0.5)]})
    with pytest.raises(ArboError, match="integer mention indices"):
        partition(similarities, indices)  # swapped
    with pytest.raises(ArboError, match=r"knn_indices\[0, 0\] is 2"):
        partition(np.array([[2], [0]]), similarities)
    with pytest.raises(ArboError, match="shape"):
        partition(indices, similarities[:1])
    with pytest.raises(ArboError, match="NaN for mention 1"):
        partition(indices, np.array([[0.5], [np.nan]]))
    with pytest.raises(ArboError, match="Unknown linking graph"):
        partition(indices, similarities, graph="mst")
    with pytest.raises(ArboError, match="together"):
        partition(indices, similarities, np.array([0, 1]))
    with pytest.raises(ArboError, match="one value per mention"):
        partition(indices, similarities, np.array([0]), np.array([0.5]))
    with pytest.raises(ArboError, match="No mention 2"):
        partition(indices, similarities).path(2)


def test_adjusted_rand_index():
    assert adjusted_rand_index(["D1", "D1", "D2", "NIL-x"], [7, 7, 3, 0]) == 1.0
    assert adjusted_rand_index([0, 0, 1, 1], [0, 0, 1, 2]) == pytest.approx(0.5714285714)
    assert adjusted_rand_index([], []) == 1.0
    with pytest.raises(ArboError, match="one label per mention"):
        adjusted_rand_index([1, 2], [1])
