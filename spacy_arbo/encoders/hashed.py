"""DEER's cheap tower: averaged hashed unigram and bigram embeddings, then a feed-forward layer.

No pretrained weights and no tokenizer files, so it trains and runs fast on a CPU; the
tests use it to overfit toy KBs in seconds. Each input has two text fields (mention and
context, or title and description), each embedded as [mean unigrams; mean bigrams].
"""
from functools import partial
import re
from typing import Callable, Dict, List, Sequence, Tuple

import srsly
import torch
from murmurhash.mrmr import hash as murmur
from spacy.util import registry
from torch import nn

from ..torch_model import torch_bytes, torch_from_bytes
from ..util import ArboError
from .templates import EntityInput, MentionInput
from .tower import Tower

_WORD = re.compile(r"\w+|[^\w\s]")


def hashed_ngrams(text: str, n_buckets: int, context_words: int = 0, from_end: bool = False) -> Tuple[List[int], List[int]]:
    """Bucket ids of the lower-cased unigrams and bigrams of `text`.

    `context_words` keeps only that many words (the last ones with `from_end`), as DEER
    reads five words on each side of a mention.
    """
    words = _WORD.findall(text.lower())
    if context_words:
        words = words[-context_words:] if from_end else words[:context_words]
    unigrams = [murmur(w, 1) % n_buckets for w in words]
    bigrams = [murmur(f"{a} {b}", 2) % n_buckets for a, b in zip(words, words[1:])]
    return unigrams, bigrams


class HashedNgramTower(Tower):
    kind = "hashed"

    def __init__(self, n_buckets: int, embed_dim: int, out_dim: int, context_words: int, seed: int) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.n_buckets = n_buckets
        self.context_words = context_words
        self.settings = {"n_buckets": n_buckets, "embed_dim": embed_dim, "out_dim": out_dim,
                         "context_words": context_words, "seed": seed}
        self.embed = nn.EmbeddingBag(n_buckets, embed_dim, mode="mean")
        with torch.no_grad():
            self.embed.weight.copy_(torch.randn(n_buckets, embed_dim, generator=generator) * 0.1)
        # Four bags: unigrams and bigrams of each of the two fields.
        self.project = nn.Linear(4 * embed_dim, out_dim)
        with torch.no_grad():
            bound = (6.0 / (4 * embed_dim + out_dim)) ** 0.5
            self.project.weight.copy_(torch.rand(out_dim, 4 * embed_dim, generator=generator) * 2 * bound - bound)
            self.project.bias.zero_()

    @property
    def dim(self) -> int:
        return self.settings["out_dim"]

    def _bag(self, id_lists: Sequence[List[int]]) -> torch.Tensor:
        """Mean embedding per list; an empty list embeds as zeros (EmbeddingBag's rule)."""
        weight = self.embed.weight
        flat = [i for ids in id_lists for i in ids]
        if not flat:
            return weight.new_zeros((len(id_lists), weight.shape[1]))
        offsets = torch.tensor([0, *[len(ids) for ids in id_lists[:-1]]], device=weight.device).cumsum(0)
        return self.embed(torch.tensor(flat, device=weight.device), offsets)

    def _bags(self, fields: Sequence[Sequence[Tuple[List[int], List[int]]]]) -> torch.Tensor:
        return torch.cat([self._bag([grams[order] for grams in field]) for field in fields for order in (0, 1)], dim=1)

    def encode_input_embeddings(self, embeddings: torch.Tensor, extra: None = None) -> torch.Tensor:
        return self.project(embeddings)

    def encode_mentions(self, mentions: List[MentionInput]) -> torch.Tensor:
        n, c = self.n_buckets, self.context_words
        spans = [hashed_ngrams(m.mention, n) for m in mentions]
        contexts = [
            (left[0] + right[0], left[1] + right[1])
            for left, right in (
                (hashed_ngrams(m.left, n, c, from_end=True), hashed_ngrams(m.right, n, c)) for m in mentions
            )
        ]
        return self.project(self._bags([spans, contexts]))

    def entity_input_embeddings(self, entities: List[EntityInput]) -> Tuple[torch.Tensor, None]:
        """The averaged n-gram bags are this tower's input embeddings."""
        n = self.n_buckets
        return self._bags([[hashed_ngrams(e.title, n) for e in entities],
                           [hashed_ngrams(e.description, n) for e in entities]]), None

    def to_files(self) -> Dict[str, bytes]:
        return {"tower.json": srsly.json_dumps(self.settings).encode("utf8"), "weights.pt": torch_bytes(self.state_dict())}

    @classmethod
    def from_files(cls, files: Dict[str, bytes]) -> "HashedNgramTower":
        tower = cls(**srsly.json_loads(files["tower.json"]))
        tower.load_state_dict(torch_from_bytes(files["weights.pt"]))
        return tower


@registry.architectures("spacy_arbo.HashedNgramTower.v1")
def build_hashed_tower(
    n_buckets: int = 2**18, embed_dim: int = 128, out_dim: int = 128, context_words: int = 5, seed: int = 0
) -> Callable[[], HashedNgramTower]:
    if n_buckets < 1 or embed_dim < 1 or out_dim < 1:
        raise ArboError("HashedNgramTower: n_buckets, embed_dim and out_dim must be positive.")

    return partial(HashedNgramTower, n_buckets, embed_dim, out_dim, context_words, seed)
