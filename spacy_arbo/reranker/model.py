"""The cross-encoder: a transformer reads packed passes and a 2-way head classifies each
pair's [MASK] token (paper eq. 3, 6, 8); and the thinc architecture wrapping it."""
import math
from functools import partial
from typing import Callable, Dict, List, Optional, Tuple

import srsly
import torch
from spacy.util import registry
from thinc.api import ArgsKwargs, Model, torch2xp, xp2torch
from thinc.types import Floats2d
from torch import nn

from ..encoders.transformer import TransformerTower, check_attention_dropout
from ..torch_model import get_module, lazy_torch_model, torch_bytes, torch_from_bytes
from ..util import ArboError
from .packing import CONTEXT, GLOBAL, Pass, Specials

PAIR_ATTENTIONS = ("full", "isolated")
MASK_TOKEN = "[MASK]"
HEAD_FILE = "head.pt"
SIMILARITY_FILE = "similarity.pt"
SETTINGS_FILE = "cross_encoder.json"
# The block of padding tokens: they see [CLS] (so no attention row is empty) and no one sees them.
PADDING = -2


class CrossEncoder(nn.Module):
    """Scores every pair of a pass in one forward: p([MASK]_{m,c} = 1 | pass).

    `pair_attention = "full"` is the paper's model: every token attends to every token.
    `"isolated"` (not in the paper) lets a pair attend only to [CLS], its own sentence
    and itself, with positions restarting after the sentence, so that packing several
    pairs into a pass changes speed but not scores (BERT-style models only: it needs a
    3-d attention mask and explicit position ids). Models with token types give the
    sentence type 0 and the pairs type 1, as for a BERT sentence pair.

    `similarity_head` (not in the paper) adds to each pair's "right" logit a learned scale
    times the cosine between the mean hidden states of its mention's and its candidate's
    tokens. A [MASK] head starts from nothing, while a sentence encoder's mean-pooled
    states already compare phrases: the pair scores rank candidates from the first update.
    """

    def __init__(self, backbone: TransformerTower, pair_attention: str = "full", similarity_head: bool = False) -> None:
        super().__init__()
        if pair_attention not in PAIR_ATTENTIONS:
            raise ArboError(f"Unknown pair_attention '{pair_attention}'; expected one of {PAIR_ATTENTIONS}.")
        tokenizer = backbone.tokenizer
        if tokenizer.cls_token_id is None or tokenizer.sep_token_id is None:
            raise ArboError("The cross-encoder's tokenizer needs a [CLS] and a [SEP] token (a BERT-style encoder).")
        self.backbone = backbone
        self.pair_attention = pair_attention
        self.head = nn.Linear(backbone.dim, 2)
        # Shape (1,), not a scalar: thinc's optimizer takes the length of every gradient.
        self.similarity_log_scale = nn.Parameter(torch.tensor([math.log(10.0)])) if similarity_head else None

    @property
    def similarity_head(self) -> bool:
        return self.similarity_log_scale is not None

    @classmethod
    def from_pretrained(
        cls, name: str, max_length: int, pair_attention: str, attention_dropout: Optional[float] = None,
        similarity_head: bool = False,
    ) -> "CrossEncoder":
        backbone = TransformerTower.from_pretrained(name, pooling="cls", max_length=max_length, use_markers=False,
                                                    attention_dropout=attention_dropout)
        tokenizer, encoder = backbone.tokenizer, backbone.encoder
        if tokenizer.mask_token_id is None:
            n_old = len(tokenizer)
            tokenizer.add_special_tokens({"mask_token": MASK_TOKEN})
            embeddings = encoder.resize_token_embeddings(len(tokenizer), mean_resizing=False)
            with torch.no_grad():
                embeddings.weight[n_old:] = embeddings.weight[:n_old].mean(0)
        return cls(backbone, pair_attention, similarity_head)

    @property
    def tokenizer(self):
        return self.backbone.tokenizer

    @property
    def specials(self) -> Specials:
        t = self.tokenizer
        return Specials(t.cls_token_id, t.sep_token_id, t.mask_token_id)

    @property
    def max_length(self) -> int:
        """The context window: the configured length, at most what the model can position."""
        limit = getattr(self.backbone.encoder.config, "max_position_embeddings", None)
        return min(self.backbone.max_length, limit) if limit else self.backbone.max_length

    def tokenize(self, texts: List[str]) -> List[List[int]]:
        return self.tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []

    def forward(self, passes: List[Pass]) -> torch.Tensor:
        """(number of pairs, 2) logits, pairs in pass order then [MASK] order."""
        device = self.head.weight.device
        width = max(len(p) for p in passes)

        def padded(column: str, value: int) -> torch.Tensor:
            rows = [getattr(p, column) for p in passes]
            return torch.tensor([r + [value] * (width - len(r)) for r in rows], device=device)

        ids = padded("input_ids", self.tokenizer.pad_token_id or 0)
        slots = padded("slots", CONTEXT)
        inputs = {"input_ids": ids}
        if self.pair_attention == "full":
            inputs["attention_mask"] = (padded("blocks", PADDING) != PADDING).long()
        else:
            blocks = padded("blocks", PADDING)
            sees_cls = (blocks == GLOBAL).unsqueeze(1)
            same_sentence = (blocks.unsqueeze(2) == blocks.unsqueeze(1)) & (slots == CONTEXT).unsqueeze(1)
            same_pair = (slots.unsqueeze(2) == slots.unsqueeze(1)) & (slots != CONTEXT).unsqueeze(2)
            inputs["attention_mask"] = (sees_cls | same_sentence | same_pair).long()
            inputs["position_ids"] = padded("position_ids", 0)
        if getattr(self.backbone.encoder.config, "type_vocab_size", 0) > 1:
            inputs["token_type_ids"] = (slots != CONTEXT).long()
        hidden = self.backbone.last_hidden_state(**inputs)
        rows = torch.tensor([i for i, p in enumerate(passes) for _ in p.mask_positions], device=device)
        columns = torch.tensor([m for p in passes for m in p.mask_positions], device=device)
        logits = self.head(hidden[rows, columns])
        if self.similarity_log_scale is None:
            return logits
        mentions, candidates = pair_means(hidden, passes)
        right = self.similarity_log_scale.exp() * nn.functional.cosine_similarity(mentions, candidates, dim=-1)
        return logits.float() + nn.functional.pad(right.unsqueeze(1), (1, 0))

    def to_files(self) -> Dict[str, bytes]:
        files = self.backbone.to_files()
        files[HEAD_FILE] = torch_bytes(self.head.state_dict())
        if self.similarity_log_scale is not None:
            files[SIMILARITY_FILE] = torch_bytes(self.similarity_log_scale.detach().cpu())
        settings = {"pair_attention": self.pair_attention, "similarity_head": self.similarity_head}
        files[SETTINGS_FILE] = srsly.json_dumps(settings).encode("utf8")
        return files

    @classmethod
    def from_files(cls, files: Dict[str, bytes]) -> "CrossEncoder":
        own = (HEAD_FILE, SIMILARITY_FILE, SETTINGS_FILE)
        backbone_files = {k: v for k, v in files.items() if k not in own}
        # Files written before `similarity_head` existed have no such setting: no similarity head.
        module = cls(TransformerTower.from_files(backbone_files), **srsly.json_loads(files[SETTINGS_FILE]))
        module.head.load_state_dict(torch_from_bytes(files[HEAD_FILE]))
        if module.similarity_log_scale is not None:
            with torch.no_grad():
                module.similarity_log_scale.copy_(torch_from_bytes(files[SIMILARITY_FILE]))
        return module


def pair_means(hidden: torch.Tensor, passes: List[Pass]) -> Tuple[torch.Tensor, torch.Tensor]:
    """(pairs, dim) mean hidden states of each pair's mention tokens and of its candidate
    tokens, pairs in pass order then [MASK] order (the order of the logits)."""
    width, most = hidden.shape[1], max(len(p.mask_positions) for p in passes)

    def bounds(column: str) -> torch.Tensor:
        rows = [getattr(p, column) for p in passes]
        return torch.tensor([r + [0] * (most - len(r)) for r in rows], device=hidden.device).unsqueeze(2)

    positions = torch.arange(width, device=hidden.device)
    masks = bounds("mask_positions")

    def means(start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
        inside = ((positions >= start) & (positions < end)).float()
        weights = inside / inside.sum(-1, keepdim=True).clamp(min=1)
        return torch.bmm(weights, hidden.float())

    pairs = torch.tensor([[j < len(p.mask_positions) for j in range(most)] for p in passes], device=hidden.device)
    mentions = means(bounds("mention_starts"), masks)[pairs]
    candidates = means(masks + 1, bounds("candidate_ends"))[pairs]
    return mentions, candidates


@registry.architectures("spacy_arbo.CrossEncoder.v1")
def build_cross_encoder(
    name: str, max_length: int = 512, pair_attention: str = "full", attention_dropout: Optional[float] = None,
    similarity_head: bool = False,
) -> Model[List[Pass], Floats2d]:
    """A cross-encoder over a local Hugging Face encoder directory (or hub name).

    `max_length` is the context window that passes are partitioned to (capped by the
    model's position embeddings). Weights load in `initialize`, or with the pipeline.
    `attention_dropout` replaces the checkpoint's dropout on attention probabilities
    while training (null keeps it). `similarity_head`: see `CrossEncoder`.
    """
    if pair_attention not in PAIR_ATTENTIONS:
        raise ArboError(f"Unknown pair_attention '{pair_attention}'; expected one of {PAIR_ATTENTIONS}.")
    if max_length < 8:
        raise ArboError(f"max_length {max_length} is too small for a cross-encoder input.")
    check_attention_dropout(attention_dropout)

    build = partial(CrossEncoder.from_pretrained, name, max_length, pair_attention, attention_dropout, similarity_head)
    return lazy_torch_model("cross-encoder", forward, build, CrossEncoder)


def forward(model: Model, passes: List[Pass], is_train: bool) -> Tuple[Floats2d, Callable]:
    """passes -> (pairs, 2) logits; the passes themselves get no gradient."""
    get_module(model)
    logits, torch_backprop = model.shims[0](ArgsKwargs(args=(passes,), kwargs={}), is_train)

    def backprop(d_logits: Floats2d) -> List[Pass]:
        grad = xp2torch(d_logits, device=logits.device)
        torch_backprop(ArgsKwargs(args=((logits,),), kwargs={"grad_tensors": (grad,)}))
        return passes

    return torch2xp(logits), backprop
