"""GER's graph tower (WSDM'23, sec. 3.3): each text's knowledge units form a hierarchical
graph (central node -> one node per triplet -> its subject, predicate and object nodes),
a Hierarchical Graph Attention Network aggregates it, and the central node's output is
fused with the wrapped tower's vector: v = v_sen + lambda * v_graph (eq. 10).

Deviations, each for a reason: the wrapped tower's pooled vector (mean by default) is
v_sen rather than [CLS]; a subject, predicate or object that is not among the text's word
pieces (an entity's parent name when only its title is encoded) starts from the tower's
non-contextual embedding of that phrase rather than being dropped; the attention weights
start at the identity so that the untrained graph vector is a smoothed mean of the nodes'
vectors rather than noise; and the graph's parameters can learn `learn_rate_scale` times
faster than the pretrained tower (a fast start for short runs; over longer ones it can stall).
"""
import math
from dataclasses import dataclass
from functools import partial
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import srsly
import torch
from spacy.util import registry
from torch import nn

from ..component_settings import check_at_least, check_choice
from ..ranges import check_range
from ..torch_model import torch_bytes, torch_from_bytes
from ..util import ArboError
from .templates import EntityInput, MentionInput, Triplet
from .tower import Tower
from .transformer import Span, TransformerTower

SIDES = ("both", "mentions", "entities")
ACTIVATIONS = {"elu": nn.functional.elu, "relu": nn.functional.relu}


class GraphAttentionLayer(nn.Module):
    """GER eq. 5-7: per head k, node i attends over its neighbours and itself with
    softmax_j LeakyReLU([h_i W_k || h_j W_k] a_k); heads are averaged, then activated.

    Computed as sum_k (alpha_k h) W_k / K, and only for the first `n_out` nodes: the
    central node's output after L layers needs every node only in the first L - 2.
    """

    def __init__(self, dim: int, heads: int, lr_scale: float, generator: torch.Generator) -> None:
        super().__init__()
        self.lr_scale = lr_scale
        noise = torch.randn(heads, dim, dim, generator=generator) / math.sqrt(dim) * 0.1
        self.weight = nn.Parameter((torch.eye(dim).expand(heads, dim, dim) + noise) / lr_scale)
        # a_k = [source_k; target_k] (eq. 7), split so the pairwise scores are a broadcast sum.
        self.source = nn.Parameter(torch.randn(heads, dim, generator=generator) * 0.01 / lr_scale)
        self.target = nn.Parameter(torch.randn(heads, dim, generator=generator) * 0.01 / lr_scale)

    def forward(self, nodes: torch.Tensor, adjacency: torch.Tensor, activation: Callable,
                n_out: Optional[int] = None) -> torch.Tensor:
        n_out = nodes.shape[1] if n_out is None else n_out
        s = self.lr_scale
        weight = self.weight * s
        # (h W_k) a = h (W_k a): the scores need no per-node projection.
        source = torch.einsum("bnd,kd->bkn", nodes[:, :n_out], torch.einsum("kde,ke->kd", weight, self.source * s))
        target = torch.einsum("bnd,kd->bkn", nodes, torch.einsum("kde,ke->kd", weight, self.target * s))
        scores = nn.functional.leaky_relu(source.unsqueeze(-1) + target.unsqueeze(-2), 0.2)
        scores = scores.masked_fill(~adjacency[:, None, :n_out], float("-inf"))
        gathered = scores.softmax(-1) @ nodes.unsqueeze(1)
        return activation(torch.einsum("bknd,kde->bne", gathered, weight) / weight.shape[0])


@dataclass
class GraphBatch:
    """What the graph part needs besides the token vectors: each row's word pieces,
    where its central span is, and its triplets (None: this side has no graph)."""

    mask: torch.Tensor
    rows: List[List[int]]
    centers: List[Span]
    triplets: Optional[List[Tuple[Triplet, ...]]]


class GraphTower(Tower):
    kind = "graph"

    def __init__(self, tower: Tower, layers: int = 3, heads: int = 8, fusion: float = 0.5, sides: str = "both",
                 activation: str = "elu", learn_rate_scale: float = 20.0, seed: int = 0) -> None:
        super().__init__()
        if not isinstance(tower, TransformerTower):
            raise ArboError(f"GraphTower needs a tower with word-piece vectors (TransformerTower.v1); "
                            f"got a '{tower.kind}' tower.")
        check_graph_settings(layers, heads, sides, activation, learn_rate_scale)
        self.tower = tower
        self.settings = {"layers": layers, "heads": heads, "fusion": fusion, "sides": sides,
                         "activation": activation, "learn_rate_scale": learn_rate_scale, "seed": seed}
        generator = torch.Generator().manual_seed(seed)
        d, s = tower.dim, learn_rate_scale
        self.lr_scale = s
        # Eq. 4: the triplet node starts as [h_s || h_p || h_o] W_triple, here from their mean.
        self.triple = nn.Parameter(torch.cat([torch.eye(d) / 3] * 3) / s)
        self.layers = nn.ModuleList(GraphAttentionLayer(d, heads, s, generator) for _ in range(layers))
        self.fusion = nn.Parameter(torch.tensor([float(fusion)]) / s)  # 1-d: thinc optimizers need sizes

    @property
    def dim(self) -> int:
        return self.tower.dim

    @property
    def knowledge_sides(self) -> Tuple[str, ...]:
        """Which inputs' triplets this tower reads: ("mentions", "entities") or one of them."""
        return ("mentions", "entities") if self.settings["sides"] == "both" else (self.settings["sides"],)

    # Tower interface -------------------------------------------------------------

    @property
    def precision(self) -> str:
        return self.tower.precision

    def set_precision(self, precision: str) -> None:
        self.tower.set_precision(precision)

    def encode_mentions(self, mentions: List[MentionInput]) -> torch.Tensor:
        rows, centers = self.tower.mention_rows(mentions)
        embeddings, mask = self.tower.input_embeddings(rows)
        triplets = [m.triplets for m in mentions] if "mentions" in self.knowledge_sides else None
        return self.encode_input_embeddings(embeddings, GraphBatch(mask, rows, centers, triplets))

    def entity_input_embeddings(self, entities: List[EntityInput]) -> Tuple[torch.Tensor, GraphBatch]:
        rows, centers = self.tower.entity_rows(entities)
        embeddings, mask = self.tower.input_embeddings(rows)
        triplets = [e.triplets for e in entities] if "entities" in self.knowledge_sides else None
        return embeddings, GraphBatch(mask, rows, centers, triplets)

    def encode_input_embeddings(self, embeddings: torch.Tensor, batch: GraphBatch) -> torch.Tensor:
        hidden = self.tower.hidden_states(embeddings, batch.mask)
        sentence = self.tower.pool(hidden, batch.mask)
        if batch.triplets is None:
            return sentence
        return sentence + self.fusion * self.lr_scale * self.graph_vectors(hidden, batch)

    # The graph -------------------------------------------------------------------

    def graph_vectors(self, hidden: torch.Tensor, batch: GraphBatch) -> torch.Tensor:
        """h^L of each text's central node (eq. 9)."""
        n_rows, width, dim = hidden.shape
        n_triplets = max((len(t) for t in batch.triplets), default=0)
        n_nodes = 1 + 4 * n_triplets
        # Node vectors as weighted sums: of the row's token vectors (`gather`) or of the
        # non-contextual vectors of phrases the row does not contain (`lookup`).
        gather = np.zeros((n_rows, n_nodes, width), dtype=np.float32)
        adjacency = np.zeros((n_rows, n_nodes, n_nodes), dtype=bool)
        adjacency[:, np.arange(n_nodes), np.arange(n_nodes)] = True
        missing: Dict[str, int] = {}
        lookups: List[Tuple[int, int, int]] = []
        phrase_ids = self._phrase_ids(batch.triplets)
        for r, (row, (start, end), triplets) in enumerate(zip(batch.rows, batch.centers, batch.triplets)):
            gather[r, 0, start:end] = 1.0 / max(1, end - start)
            for t, triplet in enumerate(triplets):
                triplet_node = 1 + t
                parts = [(1 + n_triplets + 3 * t + p, text) for p, text in enumerate(triplet) if text.strip()]
                _connect(adjacency[r], 0, triplet_node)
                for i, (node, text) in enumerate(parts):
                    _connect(adjacency[r], triplet_node, node)
                    for other, _ in parts[i + 1:]:
                        _connect(adjacency[r], node, other)
                    ids = phrase_ids.get(text)
                    if not ids:
                        continue
                    found = _find(row, ids)
                    if found is not None:
                        gather[r, node, found: found + len(ids)] = 1.0 / len(ids)
                    else:
                        lookups.append((r, node, missing.setdefault(text, len(missing))))
        device = hidden.device
        nodes = torch.from_numpy(gather).to(device, hidden.dtype) @ hidden
        if lookups:
            static = self._phrase_vectors([phrase_ids[text] for text in missing])
            row_ids, node_ids, phrases = (torch.tensor(column, device=device) for column in zip(*lookups))
            nodes = nodes.index_put((row_ids, node_ids), static[phrases], accumulate=True)
        if n_triplets:
            spo = nodes[:, 1 + n_triplets:].reshape(n_rows, n_triplets, 3 * dim)
            nodes = torch.cat([nodes[:, :1], spo @ (self.triple * self.lr_scale), nodes[:, 1 + n_triplets:]], dim=1)
        adjacency_t = torch.from_numpy(adjacency).to(device)
        activation = ACTIVATIONS[self.settings["activation"]]
        # The last layer updates the central node only, the one before it the central and
        # triplet nodes (its neighbours): the same output, a fraction of the work.
        n_out = [n_nodes] * len(self.layers)
        n_out[-1] = 1
        if len(n_out) > 1:
            n_out[-2] = 1 + n_triplets
        for layer, n in zip(self.layers, n_out):
            nodes = layer(nodes, adjacency_t[:, :n, :nodes.shape[1]], activation, n)
        return nodes[:, 0]

    def _phrase_ids(self, triplets: Sequence[Tuple[Triplet, ...]]) -> Dict[str, List[int]]:
        texts = list(dict.fromkeys(text for per_row in triplets for triplet in per_row
                                   for text in triplet if text.strip()))
        budget = self.tower.max_length - 2
        return {text: ids[:budget] for text, ids in zip(texts, self.tower.phrase_ids(texts))}

    def _phrase_vectors(self, rows: List[List[int]]) -> torch.Tensor:
        """The tower's embedding layer (word + position, normalised) averaged per phrase:
        no transformer pass, so phrases outside the text cost next to nothing."""
        ids, mask = self.tower.padded(rows)
        encoder = self.tower.encoder
        embeddings = getattr(encoder, "embeddings", None)
        vectors = embeddings(input_ids=ids) if embeddings is not None else encoder.get_input_embeddings()(ids)
        weights = mask.unsqueeze(-1).to(vectors.dtype)
        return (vectors * weights).sum(1) / weights.sum(1).clamp(min=1.0)

    # Serialization ---------------------------------------------------------------

    def to_files(self) -> Dict[str, bytes]:
        own = torch_bytes({k: v for k, v in self.state_dict().items() if not k.startswith("tower.")})
        files = {f"inner/{name}": data for name, data in self.tower.to_files().items()}
        files.update({"graph.json": srsly.json_dumps(self.settings).encode("utf8"), "graph.pt": own})
        return files

    @classmethod
    def from_files(cls, files: Dict[str, bytes]) -> "GraphTower":
        inner = TransformerTower.from_files({k[len("inner/"):]: v for k, v in files.items() if k.startswith("inner/")})
        tower = cls(inner, **srsly.json_loads(files["graph.json"]))
        own = torch_from_bytes(files["graph.pt"])
        missing, unexpected = tower.load_state_dict(own, strict=False)
        if unexpected or any(not k.startswith("tower.") for k in missing):
            raise ArboError(f"Corrupt graph tower weights: missing {missing}, unexpected {unexpected}.")
        return tower


def check_graph_settings(layers: int, heads: int, sides: str, activation: str, learn_rate_scale: float) -> None:
    check_at_least(1, layers=layers, heads=heads)
    check_choice("sides", sides, SIDES)
    check_choice("activation", activation, ACTIVATIONS)
    check_range("learn_rate_scale", learn_rate_scale, 0, low_open=True)


def _connect(adjacency: np.ndarray, a: int, b: int) -> None:
    adjacency[a, b] = adjacency[b, a] = True


def _find(row: List[int], ids: List[int]) -> Optional[int]:
    """Where `ids` first occurs in `row` as a contiguous run, or None."""
    first, n = ids[0], len(ids)
    for i in range(len(row) - n + 1):
        if row[i] == first and row[i: i + n] == ids:
            return i
    return None


@registry.architectures("spacy_arbo.GraphTower.v1")
def build_graph_tower(
    tower: Callable[[], Tower],
    layers: int = 3,
    heads: int = 8,
    fusion: float = 0.5,
    sides: str = "both",
    activation: str = "elu",
    learn_rate_scale: float = 20.0,
    seed: int = 0,
) -> Callable[[], GraphTower]:
    """GER: `tower` plus a HGAN over knowledge units (3 layers, 8 heads and lambda = 0.5 at
    the start, as in the paper). `sides` puts the graph on mentions, entities or both (with
    one shared tower). The linker needs `knowledge_units` set to give the triplets."""
    check_graph_settings(layers, heads, sides, activation, learn_rate_scale)
    return partial(_build, tower, layers, heads, fusion, sides, activation, learn_rate_scale, seed)


def _build(tower: Callable[[], Tower], *args) -> GraphTower:
    return GraphTower(tower(), *args)
