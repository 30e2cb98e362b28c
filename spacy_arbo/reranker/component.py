"""`multi_cross_reranker`: rescores the candidates that a retriever put on
`span._.kb_candidates` with a cross-encoder that reads many (mention, candidate) pairs
per transformer pass (multi cross-encoder paper, 4.2), and makes the final link."""
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import torch
from scipy.special import expit
from spacy import util
from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.training import Example, validate_examples
from spacy.util import SimpleFrozenList
from spacy.vocab import Vocab
from thinc.api import Config, Model, torch2xp, xp2torch

from ..component_settings import (CFG, check_at_least, check_choice, check_types, setting_defaults,
                                  with_setting_parameters, read_cfg, write_cfg)
from ..encoders.precision import PRECISIONS, resolve_precision
from ..kb.store import BaseEntityStore, EntityStore, open_store
from ..pipeline.common.configured_pipe import ConfiguredPipe
from ..pipeline.common.gold_ents import with_gold_mentions
from ..pipeline.common.links import CANDIDATES, best_above, install_extensions, write_link
from ..pipeline.common.neighbours import neighbours
from ..ranges import check_range
from ..scoring import gold_ids
from ..torch_model import get_module
from ..util import ArboError
from .loss import ranked_mentions, reranker_loss
from .model import CrossEncoder
from .packing import MODES, Pass
from .planning import Owners, PairPlanner, PairText, batches

Ranked = List[Tuple[str, float]]
# Per doc, per entity, per candidate.
PerCandidate = List[List[List[Any]]]

DEFAULT_MODEL = Config().from_str(
    """
[model]
@architectures = "spacy_arbo.CrossEncoder.v1"
max_length = 512
pair_attention = "full"
similarity_head = true

[model.name]
@misc = "spacy_arbo.default_encoder_path.v1"
"""
)["model"]


@dataclass(frozen=True)
class RerankerSettings(PairText):
    """`mode`: how many pairs share a pass: one (base), one mention's (parallel), one
    sentence's (multi) or one doc's (passage). `retrieval_weight` (not in the paper) adds
    the retriever's opinion to the cross-encoder's: see `fuse_scores`. `insert_gold`
    trains on the gold entity when retrieval missed it."""

    max_mention_tokens: int = 16
    max_name_tokens: int = 24
    definition_tokens: int = 0
    alias_tokens: int = 0
    use_long_form: bool = True
    parent_tokens: int = 0
    mode: str = "multi"
    top_n: int = 5
    threshold: Optional[float] = None
    insert_gold: bool = True
    use_gold_ents: bool = True
    retrieval_weight: float = 0.0
    listwise_weight: float = 0.0
    batch_tokens: int = 4096
    precision: str = "auto"
    kb_ents_threshold: Optional[float] = None
    max_entities_per_mention: int = 5

    def __post_init__(self) -> None:
        check_types(self)
        check_choice("mode", self.mode, MODES)
        check_choice("precision", self.precision, PRECISIONS)
        check_at_least(1, top_n=self.top_n, max_mention_tokens=self.max_mention_tokens,
                       max_entities_per_mention=self.max_entities_per_mention,
                       max_name_tokens=self.max_name_tokens, batch_tokens=self.batch_tokens)
        check_at_least(0, definition_tokens=self.definition_tokens, alias_tokens=self.alias_tokens,
                       parent_tokens=self.parent_tokens)
        check_range("listwise_weight", self.listwise_weight, 0)


@Language.factory(
    "multi_cross_reranker",
    requires=["doc.ents", CANDIDATES],
    assigns=["token.ent_kb_id", CANDIDATES, "span._.kb_ents"],
    default_config={
        "model": DEFAULT_MODEL,
        "scorer": {"@scorers": "spacy_arbo.multi_cross_reranker_scorer.v1"},
        **setting_defaults(RerankerSettings),
    },
    default_score_weights={"nel_micro_f": 1.0, "nel_micro_p": 0.0, "nel_micro_r": 0.0, "rerank_accuracy": 0.0},
)
@with_setting_parameters(RerankerSettings, [("nlp", Language), ("name", str), ("model", Model),
                                            ("scorer", Optional[Callable])])
def make_multi_cross_reranker(nlp: Language, name: str, model: Model, scorer: Optional[Callable],
                              **settings: Any) -> "MultiCrossReranker":
    install_extensions()
    return MultiCrossReranker(nlp.vocab, model, name, nlp=nlp, scorer=scorer, settings=RerankerSettings(**settings))


def with_gold(candidates: Sequence[str], gold: Sequence[str], top_n: int, kb: BaseEntityStore) -> List[str]:
    """The candidates to train on: the retrieved ones, the gold entity replacing the last
    when retrieval missed it (appended when there are fewer than `top_n`). A NIL gold, or
    one the KB lacks, leaves the candidates as they are: all negatives."""
    candidates = list(candidates[:top_n])
    known = [g for g in gold if g in kb]
    if not known or any(g in candidates for g in gold):
        return candidates
    if len(candidates) >= top_n:
        candidates[-1] = known[0]
    else:
        candidates.append(known[0])
    return candidates


class MultiCrossReranker(ConfiguredPipe):
    """Reranks the first `top_n` of `span._.kb_candidates`; writes `ent.kb_id_` (NIL below
    `threshold`, or without candidates) and the rescored `span._.kb_candidates` /
    `span._.kb_ents`, best first.

    The KB is the one of the retriever before it in the pipeline (a saved pipeline holds
    it once), unless `initialize` is given a `kb_loader`.
    """

    def __init__(
        self,
        vocab: Vocab,
        model: Model,
        name: str = "multi_cross_reranker",
        *,
        nlp: Optional[Language] = None,
        scorer: Optional[Callable] = None,
        settings: RerankerSettings = RerankerSettings(),
    ) -> None:
        # `nlp` is also where the KB and, with `use_gold_ents`, candidates come from.
        super().__init__(vocab, model, name, nlp=nlp, scorer=scorer, settings=settings)
        self._own_kb: Optional[BaseEntityStore] = None
        self._planner: Optional[PairPlanner] = None

    def _settings_changed(self) -> None:
        self._check_window()

    # Knowledge base -------------------------------------------------------------------

    @property
    def kb(self) -> Optional[BaseEntityStore]:
        """Its own KB (from a `kb_loader`), else the nearest upstream retriever's."""
        if self._own_kb is not None:
            return self._own_kb
        upstream = [p.kb for _, p in self._upstream() if isinstance(getattr(p, "kb", None), BaseEntityStore)]
        return upstream[-1] if upstream else None

    def _require_kb(self) -> BaseEntityStore:
        kb = self.kb
        if kb is None:
            raise ArboError(
                f"'{self.name}' has no KB: put an arbo_linker before it, set "
                f"[initialize.components.{self.name}.kb_loader], or load a saved pipeline."
            )
        return kb

    def _upstream(self) -> List[Tuple[str, Any]]:
        """The components before this one, disabled ones included."""
        return neighbours(self.nlp, self, disabled=True)[0]

    def set_kb(self, kb: BaseEntityStore) -> None:
        """Give the reranker a KB of its own (saved with it) instead of the retriever's."""
        self._own_kb = kb
        self._planner = None

    def _initialize(self, examples: List[Example]) -> None:
        self._check_window()

    def _cross_encoder(self) -> CrossEncoder:
        """The cross-encoder, set to run at the configured `precision`."""
        module = get_module(self.model)
        module.backbone.set_precision(resolve_precision(self.settings.precision, module.head.weight.device))
        return module

    def _check_window(self) -> None:
        """The context window must hold the longest possible pair with [CLS] and [SEP]."""
        if self.model.shims[0]._model is None:
            return
        window = get_module(self.model).max_length
        if self.settings.longest_pair + 2 > window:
            raise ArboError(
                f"'{self.name}': a pair may take {self.settings.longest_pair} tokens, more than the context window "
                f"of {window} allows with [CLS] and [SEP]: lower max_mention_tokens, max_name_tokens, "
                "alias_tokens, parent_tokens or definition_tokens."
            )

    # Inputs ----------------------------------------------------------------------------

    def plan(self, docs: Sequence[Doc], candidates: Sequence[Sequence[Sequence[str]]]) -> Tuple[List[Pass], Owners]:
        """The passes that score `candidates[d][e]`, and each pair's (doc, entity, candidate)."""
        if self._planner is None:
            module = get_module(self.model)
            self._check_window()
            self._planner = PairPlanner(self.vocab, module.tokenize, module.specials, module.max_length)
        return self._planner.plan(docs, candidates, self._require_kb(), self.settings, self.settings.mode)

    def _candidates(self, span: Span) -> List[str]:
        ranked = span._.kb_candidates
        return [kb_id for kb_id, _ in ranked[: self.settings.top_n]] if ranked else []

    # Prediction --------------------------------------------------------------------------

    def margins(self, docs: Sequence[Doc]) -> Tuple[PerCandidate, PerCandidate, PerCandidate]:
        """Per doc and entity: the candidates read, the cross-encoder's logit
        log p(right) - log p(wrong) for each, and the retriever's score for each."""
        top_n = self.settings.top_n
        candidates = [[self._candidates(ent) for ent in doc.ents] for doc in docs]
        retrieval = [[[s for _, s in (ent._.kb_candidates or [])[:top_n]] for ent in doc.ents] for doc in docs]
        margins = [[[0.0] * len(ids) for ids in per_doc] for per_doc in candidates]
        if any(ids for per_doc in candidates for ids in per_doc):
            passes, owners = self.plan(docs, candidates)
            self._cross_encoder()
            for batch in batches(passes, self.settings.batch_tokens):
                logits = self.model.ops.to_numpy(self.model.predict(batch))
                for index, (wrong, right) in zip((i for p in batch for i in p.pair_index), logits):
                    d, e, c = owners[index]
                    margins[d][e][c] = float(right - wrong)
        return candidates, margins, retrieval

    def rank(self, candidates: PerCandidate, margins: PerCandidate, retrieval: PerCandidate) -> List[List[Ranked]]:
        """`margins`' output as ranked (id, score) lists, with `retrieval_weight` applied."""
        weight = self.settings.retrieval_weight
        return [
            [sorted(zip(ids, fuse_scores(m, r, weight)), key=lambda pair: -pair[1]) for ids, m, r in zip(*per_doc)]
            for per_doc in zip(candidates, margins, retrieval)
        ]

    def predict(self, docs: Iterable[Doc]) -> List[List[Ranked]]:
        return self.rank(*self.margins(list(docs)))

    def set_annotations(self, docs: Iterable[Doc], ranked_per_doc: List[List[Ranked]]) -> None:
        for doc, ranked_per_ent in zip(docs, ranked_per_doc):
            for ent, ranked in zip(doc.ents, ranked_per_ent):
                if ent._.arbo_parts:
                    # A composite mention the linker split keeps its per-part ids.
                    ent._.kb_candidates = ranked
                else:
                    write_link(ent, best_above(ranked, self.settings.threshold), ranked,
                               self.settings.kb_ents_threshold, self.settings.max_entities_per_mention)

    # Training and scoring -------------------------------------------------------------------

    def _with_gold_ents(self, examples: Iterable[Example]) -> List[Example]:
        """With `use_gold_ents`, copies of the examples whose predicted docs carry the gold
        mentions (without ids), and candidates from the retrievers before this component
        for mentions that have none yet: in a pipeline without NER, `spacy train` and
        `nlp.evaluate` give the components docs without entities."""
        if not self.settings.use_gold_ents:
            return list(examples)
        result = with_gold_mentions(examples)
        missing = [eg for eg in result if any(e._.kb_candidates is None for e in eg.predicted.ents)]
        retrievers = [
            proc for name, proc in self._upstream()
            if name in self.nlp.pipe_names and CANDIDATES in self.nlp.get_pipe_meta(name).assigns
        ]
        if missing and retrievers:
            docs: Iterable[Doc] = [eg.predicted for eg in missing]
            for proc in retrievers:
                docs = proc.pipe(docs)
            for eg, doc in zip(missing, docs):
                eg.predicted = doc
        return result

    def _score_with_gold_ents(self, examples: Iterable[Example], **kwargs) -> Dict[str, Any]:
        examples = self._with_gold_ents(examples)
        if self.settings.use_gold_ents:
            for eg, doc in zip(examples, self.pipe(eg.predicted for eg in examples)):
                eg.predicted = doc
        return self._scorer(examples, **kwargs)

    def training_candidates(self, example: Example) -> List[Tuple[List[str], List[bool]]]:
        """For each predicted entity: the candidates to train on and which are right.
        Entities without a gold id at the same offsets, or never given candidates, get none."""
        gold = {(e.start_char, e.end_char): gold_ids(e.kb_id_) for e in example.reference.ents if e.kb_id_}
        kb = self._require_kb()
        result = []
        for ent in example.predicted.ents:
            ids = gold.get((ent.start_char, ent.end_char))
            if ids is None or ent._.kb_candidates is None:
                result.append(([], []))
                continue
            retrieved = self._candidates(ent)
            chosen = with_gold(retrieved, ids, self.settings.top_n, kb) if self.settings.insert_gold else retrieved
            result.append((chosen, [c in ids for c in chosen]))
        return result

    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd=None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Per-pair binary cross-entropy on each pair's [MASK] (eq. 4), averaged over the pairs,
        plus `listwise_weight` times a ranking term over each mention's candidates
        (`loss.reranker_loss`); a mention's pairs share a batch, so the loss is exact."""
        losses = {} if losses is None else losses
        losses.setdefault(self.name, 0.0)
        examples = list(examples)
        validate_examples(examples, f"{self.name}.update")
        examples = self._with_gold_ents(examples)
        per_doc = [self.training_candidates(eg) for eg in examples]
        candidates = [[ids for ids, _ in ents] for ents in per_doc]
        if not any(ids for doc in candidates for ids in doc):
            return losses
        passes, owners = self.plan([eg.predicted for eg in examples], candidates)
        numbers = {de: n for n, de in enumerate(dict.fromkeys((d, e) for d, e, _ in owners))}
        labels = torch.as_tensor([per_doc[d][e][1][c] for d, e, c in owners], dtype=torch.int64)
        mentions = torch.as_tensor([numbers[d, e] for d, e, _ in owners], dtype=torch.int64)
        slots = torch.as_tensor([c for _, _, c in owners], dtype=torch.int64)
        ranked_total = len(ranked_mentions(labels, mentions))
        self._cross_encoder()
        for batch in batches(passes, self.settings.batch_tokens, together=lambda i: owners[i][:2]):
            logits, backprop = self.model.begin_update(batch)
            scores = xp2torch(logits, requires_grad=True)
            index = torch.as_tensor([i for p in batch for i in p.pair_index], dtype=torch.int64)
            loss = reranker_loss(scores, *(t[index].to(scores.device) for t in (labels, mentions, slots)),
                                 self.settings.listwise_weight, len(owners), ranked_total)
            loss.backward()
            backprop(torch2xp(scores.grad))
            losses[self.name] += float(loss.detach())
        if sgd is not None:
            self.finish_update(sgd)
        return losses

    # Serialization ------------------------------------------------------------------------
    # Settings in the `cfg` (`ConfiguredPipe` says when they are read back); the KB is written only
    # when this component owns it (from a `kb_loader`), else the retriever before it holds the one copy.

    def to_bytes(self, *, exclude: Iterable[str] = SimpleFrozenList()) -> bytes:
        serializers: Dict[str, Callable[[], bytes]] = {CFG: self.cfg_bytes, "model": self.model.to_bytes}
        if self._own_kb is not None:
            serializers["kb"] = self._own_kb.to_bytes
        return util.to_bytes(serializers, exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = SimpleFrozenList()) -> "MultiCrossReranker":
        deserializers: Dict[str, Callable[[bytes], Any]] = {
            CFG: self.load_cfg_bytes,
            "model": lambda b: self.model.from_bytes(b),
            "kb": lambda b: self._load_kb(EntityStore.from_bytes(b)),
        }
        util.from_bytes(bytes_data, deserializers, exclude)
        self._planner = None
        return self

    def to_disk(self, path, *, exclude: Iterable[str] = SimpleFrozenList()) -> None:
        serializers: Dict[str, Callable[[Path], None]] = {CFG: lambda p: write_cfg(p, self.cfg),
                                                          "model": self.model.to_disk}
        if self._own_kb is not None:
            serializers["kb"] = self._own_kb.to_disk
        util.to_disk(path, serializers, exclude)

    def from_disk(self, path, *, exclude: Iterable[str] = SimpleFrozenList()) -> "MultiCrossReranker":
        path = Path(path)
        deserializers = {
            CFG: read_cfg,  # checked, not applied: spacy.load made the reranker from its config.cfg
            "model": lambda p: self.model.from_disk(p),
            "kb": lambda p: self._load_kb(open_store(p)) if p.exists() else None,
        }
        util.from_disk(path, deserializers, exclude)
        self._planner = None
        return self

    def _load_kb(self, kb: BaseEntityStore) -> None:
        self._own_kb = None
        upstream = self.kb
        # A copy of the retriever's KB is not kept twice.
        if upstream is None or upstream.fingerprint() != kb.fingerprint():
            self._own_kb = kb
        self._planner = None


def fuse_scores(margins: Sequence[float], retrieval: Sequence[float], weight: float) -> List[float]:
    """sigmoid(cross-encoder logit + weight * z), z the retrieval score standardised over the
    mention's candidates: scale-free, so one weight serves cosine, TF-IDF or fused scores.
    With weight 0 it is the paper's p([MASK] = 1)."""
    margins = np.asarray(margins, dtype="float64")
    if weight and len(margins) > 1:
        retrieval = np.asarray(retrieval, dtype="float64")
        spread = retrieval.std()
        if spread > 0:
            margins = margins + weight * (retrieval - retrieval.mean()) / spread
    return expit(margins).tolist()


def multi_cross_rerankers(nlp: Language) -> List[MultiCrossReranker]:
    """The pipeline's multi_cross_reranker components, in pipeline order."""
    return [proc for _, proc in nlp.pipeline if isinstance(proc, MultiCrossReranker)]


def last_reranker(nlp: Language, what: str = "The pipeline") -> MultiCrossReranker:
    """The last multi_cross_reranker, the one that decides; `what` names the pipeline in the error."""
    rerankers = multi_cross_rerankers(nlp)
    if not rerankers:
        raise ArboError(f"{what} has no multi_cross_reranker.")
    return rerankers[-1]
