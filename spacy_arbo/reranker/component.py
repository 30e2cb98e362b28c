"""`multi_cross_reranker`: rescores the candidates that a retriever put on
`span._.kb_candidates` with a cross-encoder that reads many (mention, candidate) pairs
per transformer pass (multi cross-encoder paper, 4.2), and makes the final link."""
from bisect import bisect_right
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import srsly
from scipy.special import expit
from spacy import util
from spacy.attrs import SENT_START
from spacy.language import Language
from spacy.pipeline import Sentencizer, TrainablePipe
from spacy.tokens import Doc, Span
from spacy.training import Example, validate_examples
from spacy.util import SimpleFrozenList, registry
from spacy.vocab import Vocab
from thinc.api import Config, Model, get_array_module

from ..kb.entities import Entity
from ..kb.store import EntityStore
from ..scoring import accuracy, gold_ids, link_prf, mention_outcomes
from ..pipeline.abbreviations import LongForms
from ..pipeline.candidates import best_above, write_link
from ..pipeline.gold_ents import with_gold_mentions
from ..torch_model import get_module
from ..util import ArboError
from .packing import MODES, Mention, Pair, Pass, Sentence, pack

CANDIDATES = "span._.kb_candidates"
Ranked = List[Tuple[str, float]]
# Per doc, per entity, per candidate.
PerCandidate = List[List[List[Any]]]

DEFAULT_MODEL = Config().from_str(
    """
[model]
@architectures = "spacy_arbo.CrossEncoder.v1"
max_length = 512
pair_attention = "full"

[model.name]
@misc = "spacy_arbo.default_encoder_path.v1"
"""
)["model"]

@Language.factory(
    "multi_cross_reranker",
    requires=["doc.ents", CANDIDATES],
    assigns=["token.ent_kb_id", CANDIDATES, "span._.kb_ents"],
    default_config={
        "model": DEFAULT_MODEL,
        "mode": "multi",
        "top_n": 5,
        "threshold": None,
        "insert_gold": True,
        "use_gold_ents": True,
        "max_mention_tokens": 16,
        "max_name_tokens": 24,
        "definition_tokens": 0,
        "alias_tokens": 0,
        "use_long_form": False,
        "retrieval_weight": 0.0,
        "batch_tokens": 4096,
        "scorer": {"@scorers": "spacy_arbo.multi_cross_reranker_scorer.v1"},
    },
    default_score_weights={"nel_micro_f": 1.0, "nel_micro_p": 0.0, "nel_micro_r": 0.0, "rerank_accuracy": 0.0},
)
def make_multi_cross_reranker(
    nlp: Language,
    name: str,
    model: Model,
    mode: str,
    top_n: int,
    threshold: Optional[float],
    insert_gold: bool,
    use_gold_ents: bool,
    max_mention_tokens: int,
    max_name_tokens: int,
    definition_tokens: int,
    alias_tokens: int,
    use_long_form: bool,
    retrieval_weight: float,
    batch_tokens: int,
    scorer: Optional[Callable],
) -> "MultiCrossReranker":
    return MultiCrossReranker(
        nlp.vocab, model, name, nlp=nlp, mode=mode, top_n=top_n, threshold=threshold,
        insert_gold=insert_gold, use_gold_ents=use_gold_ents, max_mention_tokens=max_mention_tokens,
        max_name_tokens=max_name_tokens, definition_tokens=definition_tokens, alias_tokens=alias_tokens,
        use_long_form=use_long_form,
        retrieval_weight=retrieval_weight, batch_tokens=batch_tokens, scorer=scorer,
    )


def with_gold(candidates: Sequence[str], gold: Sequence[str], top_n: int, kb: EntityStore) -> List[str]:
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


class MultiCrossReranker(TrainablePipe):
    """Reranks the first `top_n` of `span._.kb_candidates`; writes `ent.kb_id_` (NIL below
    `threshold`, or without candidates) and the rescored `span._.kb_candidates` /
    `span._.kb_ents`, best first.

    `mode` says how many pairs share a pass: one (base), one mention's (parallel), one
    sentence's (multi) or one doc's (passage); passes longer than the context window are
    split (4.2.5). Sentences are `doc.sents` when set, else spaCy's rule-based
    sentencizer's, merged where they would cut a mention (paper 5.1). With
    `use_long_form`, a pair reads an abbreviation defined in its doc as its long form, which
    the sentence alone often lacks (as `arbo_linker`'s setting of the same name).
    `retrieval_weight` (not in the paper) adds the retriever's opinion to the cross-encoder's:
    see `fuse_scores`.
    """

    def __init__(
        self,
        vocab: Vocab,
        model: Model,
        name: str = "multi_cross_reranker",
        *,
        nlp: Optional[Language] = None,
        mode: str = "multi",
        top_n: int = 5,
        threshold: Optional[float] = None,
        insert_gold: bool = True,
        use_gold_ents: bool = True,
        max_mention_tokens: int = 16,
        max_name_tokens: int = 24,
        definition_tokens: int = 0,
        alias_tokens: int = 0,
        use_long_form: bool = False,
        retrieval_weight: float = 0.0,
        batch_tokens: int = 4096,
        scorer: Optional[Callable] = None,
    ) -> None:
        if mode not in MODES:
            raise ArboError(f"Unknown mode '{mode}'; expected one of {MODES}.")
        if top_n < 1 or max_mention_tokens < 1 or max_name_tokens < 1 or batch_tokens < 1 \
                or definition_tokens < 0 or alias_tokens < 0:
            raise ArboError("top_n, max_mention_tokens, max_name_tokens and batch_tokens must be positive, "
                            "definition_tokens and alias_tokens non-negative.")
        self.vocab = vocab
        self.model = model
        self.name = name
        # The pipeline it belongs to: where the KB and, with `use_gold_ents`, candidates come from.
        self.nlp = nlp
        self.cfg: Dict[str, Any] = {
            "mode": mode, "top_n": top_n, "threshold": threshold, "insert_gold": insert_gold,
            "max_mention_tokens": max_mention_tokens, "max_name_tokens": max_name_tokens,
            "definition_tokens": definition_tokens, "alias_tokens": alias_tokens, "use_long_form": use_long_form,
            "retrieval_weight": retrieval_weight, "batch_tokens": batch_tokens,
        }
        self.use_gold_ents = use_gold_ents
        self.kb: Optional[EntityStore] = None
        self._candidate_tokens: Dict[str, Tuple[List[int], List[int]]] = {}
        self._alias_tokens: Dict[str, List[int]] = {}
        self._sentencizer = Sentencizer()
        self._long_forms: Optional[LongForms] = None
        self._scorer = scorer
        self.scorer = self._score_with_gold_ents if scorer is not None else None

    # Knowledge base -------------------------------------------------------------------

    def set_kb(self, kb: EntityStore) -> None:
        if not len(kb):
            raise ArboError(f"{self.name}: the KB is empty.")
        self.kb = kb
        self._candidate_tokens, self._alias_tokens = {}, {}

    def _require_kb(self) -> EntityStore:
        if self.kb is None:
            raise ArboError(
                f"'{self.name}' has no KB: put an arbo_linker before it, set "
                f"[initialize.components.{self.name}.kb_loader], or load a saved pipeline."
            )
        return self.kb

    def _upstream(self, nlp: Optional[Language]) -> List[Tuple[str, Any]]:
        """The components before this one, disabled ones included."""
        before: List[Tuple[str, Any]] = []
        for name, proc in nlp.components if nlp is not None else []:
            if proc is self:
                return before
            before.append((name, proc))
        return []

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        kb_loader: Optional[Callable[[Vocab], EntityStore]] = None,
    ) -> None:
        self.nlp = nlp if nlp is not None else self.nlp
        if kb_loader is not None:
            self.set_kb(kb_loader(self.vocab))
        else:
            upstream = [p.kb for _, p in self._upstream(self.nlp) if isinstance(getattr(p, "kb", None), EntityStore)]
            if upstream:
                self.set_kb(upstream[-1])
        self._require_kb()
        examples = list(islice(get_examples(), 10)) if get_examples is not None else []
        if examples:
            validate_examples(examples, f"{self.name}.initialize")
        self.model.initialize()
        self._window()

    def _window(self) -> int:
        """The context window, checked to hold the longest possible pair."""
        window = get_module(self.model).max_length
        longest = sum(self.cfg[k] for k in ("max_mention_tokens", "max_name_tokens", "alias_tokens",
                                            "definition_tokens")) + 2
        if longest + 2 > window:
            raise ArboError(
                f"'{self.name}': a pair may take {longest} tokens, more than the context window of "
                f"{window} allows with [CLS] and [SEP]: lower max_mention_tokens, max_name_tokens, "
                "alias_tokens or definition_tokens."
            )
        return window

    # Inputs ----------------------------------------------------------------------------

    def _candidates(self, span: Span) -> List[str]:
        ranked = span._.kb_candidates
        return [kb_id for kb_id, _ in ranked[: self.cfg["top_n"]]] if ranked else []

    def _tokens_of(self, kb_ids: Iterable[str]) -> None:
        """Tokenize (once) each candidate's name and, with `definition_tokens`, the start
        of `: definition`."""
        kb = self._require_kb()
        missing = sorted({i for i in kb_ids if i not in self._candidate_tokens})
        if not missing:
            return
        unknown = [i for i in missing if i not in kb]
        if unknown:
            raise ArboError(f"'{self.name}': candidate ids {unknown[:5]} are not in the reranker's KB.")
        module = get_module(self.model)
        entities = [kb[i] for i in missing]
        n_def = self.cfg["definition_tokens"]
        with_definition = [e for e in entities if n_def and e.definition]
        definitions = dict(zip((e.id for e in with_definition),
                               module.tokenize([f": {e.definition}" for e in with_definition])))
        for entity, name in zip(entities, module.tokenize([e.name for e in entities])):
            self._candidate_tokens[entity.id] = (name[: self.cfg["max_name_tokens"]],
                                                 definitions.get(entity.id, [])[:n_def])

    def _alias_suffixes(self, wanted: Iterable[Tuple[str, str]]) -> Dict[Tuple[str, str], List[int]]:
        """For (mention text, kb id): the tokens of `; alias` for the candidate's alias most
        like the mention, with `alias_tokens` (none when the name is as close)."""
        n_alias = self.cfg["alias_tokens"]
        if not n_alias:
            return {}
        kb = self._require_kb()
        chosen = {key: closest_alias(key[0], kb[key[1]]) for key in wanted}
        new = sorted({alias for alias in chosen.values() if alias and alias not in self._alias_tokens})
        # Cached whole, cut at use: the cache stays valid when `alias_tokens` changes.
        self._alias_tokens.update(zip(new, get_module(self.model).tokenize([f"; {a}" for a in new])))
        return {key: self._alias_tokens[alias][:n_alias] if alias else [] for key, alias in chosen.items()}

    def _sentence_starts(self, doc: Doc) -> List[int]:
        if doc.has_annotation("SENT_START"):
            starts = doc.to_array(SENT_START) == 1
        else:
            starts = np.asarray(self._sentencizer.predict([doc])[0], dtype=bool)
        starts[0] = True
        for ent in doc.ents:
            starts[ent.start + 1: ent.end] = False
        return np.flatnonzero(starts).tolist()

    def _sentence_pieces(self, doc: Doc, wanted: Sequence[bool]) -> Iterator[Tuple[List[str], List[Tuple[int, int]]]]:
        """Each sentence holding a wanted entity, as text pieces alternating context and
        mentions, and (entity number, piece number) for its wanted entities; tokenizing
        the pieces apart tells where each mention's tokens are."""
        if not any(wanted):
            return
        starts = self._sentence_starts(doc)
        by_sentence: Dict[int, List[Tuple[int, Span]]] = {}
        for e, ent in enumerate(doc.ents):
            if wanted[e]:
                by_sentence.setdefault(bisect_right(starts, ent.start) - 1, []).append((e, ent))
        for s, ents in by_sentence.items():
            sentence = doc[starts[s]: starts[s + 1] if s + 1 < len(starts) else len(doc)]
            cursor, pieces, mentions = sentence.start_char, [], []
            for e, ent in ents:
                pieces.append(doc.text[cursor: ent.start_char])
                mentions.append((e, len(pieces)))
                pieces.append(ent.text)
                cursor = ent.end_char
            pieces.append(doc.text[cursor: sentence.end_char])
            yield pieces, mentions

    def _long_forms_of(self, doc: Doc) -> Dict[Tuple[int, int], str]:
        if not self.cfg["use_long_form"]:
            return {}
        if self._long_forms is None:
            self._long_forms = LongForms(self.vocab)
        return self._long_forms(doc)

    def plan(
        self, docs: Sequence[Doc], candidates: Sequence[Sequence[Sequence[str]]]
    ) -> Tuple[List[Pass], List[Tuple[int, int, int]]]:
        """The passes that score `candidates[d][e]` (ids for the e-th entity of doc d), and
        for each pair index, its (doc, entity, candidate) numbers."""
        module = get_module(self.model)
        self._tokens_of(kb_id for per_doc in candidates for ids in per_doc for kb_id in ids)
        records, texts, surfaces = [], [], {}
        for d, doc in enumerate(docs):
            long_forms = self._long_forms_of(doc)
            ents = doc.ents
            for pieces, mentions in self._sentence_pieces(doc, [bool(ids) for ids in candidates[d]]):
                first = len(texts)
                texts.extend(pieces)
                # Where each mention's own text is: its piece, or its long form after the pieces.
                mention_texts = []
                for e, piece in mentions:
                    long_form = long_forms.get((ents[e].start_char, ents[e].end_char))
                    surfaces[d, e] = long_form or ents[e].text
                    mention_texts.append(piece if long_form is None else len(texts) - first)
                    if long_form is not None:
                        texts.append(long_form)
                records.append((d, mentions, mention_texts, first, first + len(pieces), len(texts)))
        tokens = module.tokenize(texts)
        suffixes = self._alias_suffixes({(surfaces[d, e], kb_id) for (d, e) in surfaces for kb_id in candidates[d][e]})
        owners: List[Tuple[int, int, int]] = []
        sentences = []
        for d, mentions, mention_texts, first, last, end in records:
            pieces = tokens[first:last]
            own = tokens[first:end]
            offsets = np.cumsum([0] + [len(piece) for piece in pieces]).tolist()
            packed = []
            for (e, piece), text in zip(mentions, mention_texts):
                mention = own[text][: self.cfg["max_mention_tokens"]]
                pairs = []
                for c, kb_id in enumerate(candidates[d][e]):
                    name, definition = self._candidate_tokens[kb_id]
                    candidate = name + suffixes.get((surfaces[d, e], kb_id), []) + definition
                    pairs.append(Pair(len(owners), mention, candidate))
                    owners.append((d, e, c))
                packed.append(Mention(offsets[piece], offsets[piece + 1], pairs))
            sentences.append(Sentence([i for piece in pieces for i in piece], packed, passage=d))
        return pack(sentences, self.cfg["mode"], self._window(), module.specials), owners

    def _batches(self, passes: List[Pass]) -> Iterable[List[Pass]]:
        """Passes of similar length together, at most `batch_tokens` padded tokens a batch."""
        ordered = sorted(passes, key=len, reverse=True)
        batch: List[Pass] = []
        for p in ordered:
            if batch and (len(batch) + 1) * len(batch[0]) > self.cfg["batch_tokens"]:
                yield batch
                batch = []
            batch.append(p)
        if batch:
            yield batch

    # Prediction --------------------------------------------------------------------------

    def margins(self, docs: Sequence[Doc]) -> Tuple[PerCandidate, PerCandidate, PerCandidate]:
        """Per doc and entity: the candidates read, the cross-encoder's logit
        log p(right) - log p(wrong) for each, and the retriever's score for each."""
        candidates = [[self._candidates(ent) for ent in doc.ents] for doc in docs]
        retrieval = [[[s for _, s in (ent._.kb_candidates or [])[: self.cfg["top_n"]]] for ent in doc.ents]
                     for doc in docs]
        margins = [[[0.0] * len(ids) for ids in per_doc] for per_doc in candidates]
        if any(ids for per_doc in candidates for ids in per_doc):
            passes, owners = self.plan(docs, candidates)
            for batch in self._batches(passes):
                logits = self.model.ops.to_numpy(self.model.predict(batch))
                for index, (wrong, right) in zip((i for p in batch for i in p.pair_index), logits):
                    d, e, c = owners[index]
                    margins[d][e][c] = float(right - wrong)
        return candidates, margins, retrieval

    def rank(self, candidates: PerCandidate, margins: PerCandidate, retrieval: PerCandidate) -> List[List[Ranked]]:
        """`margins`' output as ranked (id, score) lists, with `retrieval_weight` applied."""
        weight = self.cfg["retrieval_weight"]
        return [
            [sorted(zip(ids, fuse_scores(m, r, weight)), key=lambda pair: -pair[1]) for ids, m, r in zip(*per_doc)]
            for per_doc in zip(candidates, margins, retrieval)
        ]

    def predict(self, docs: Iterable[Doc]) -> List[List[Ranked]]:
        return self.rank(*self.margins(list(docs)))

    def set_annotations(self, docs: Iterable[Doc], ranked_per_doc: List[List[Ranked]]) -> None:
        threshold = self.cfg["threshold"]
        for doc, ranked_per_ent in zip(docs, ranked_per_doc):
            for ent, ranked in zip(doc.ents, ranked_per_ent):
                write_link(ent, best_above(ranked, threshold), ranked)

    # Training and scoring -------------------------------------------------------------------

    def _with_gold_ents(self, examples: Iterable[Example]) -> List[Example]:
        """With `use_gold_ents`, copies of the examples whose predicted docs carry the gold
        mentions (without ids), and candidates from the retrievers before this component
        for mentions that have none yet: in a pipeline without NER, `spacy train` and
        `nlp.evaluate` give the components docs without entities."""
        if not self.use_gold_ents:
            return list(examples)
        result = with_gold_mentions(examples)
        missing = [eg for eg in result if any(e._.kb_candidates is None for e in eg.predicted.ents)]
        retrievers = [
            proc for name, proc in self._upstream(self.nlp)
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
        if self.use_gold_ents:
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
            chosen = with_gold(retrieved, ids, self.cfg["top_n"], kb) if self.cfg["insert_gold"] else retrieved
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
        """Per-pair binary cross-entropy on each pair's [MASK] (eq. 4), averaged over the pairs."""
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        examples = list(examples)
        validate_examples(examples, f"{self.name}.update")
        examples = self._with_gold_ents(examples)
        per_doc = [self.training_candidates(eg) for eg in examples]
        candidates = [[ids for ids, _ in ents] for ents in per_doc]
        if not any(ids for doc in candidates for ids in doc):
            return losses
        passes, owners = self.plan([eg.predicted for eg in examples], candidates)
        labels = np.asarray([per_doc[d][e][1][c] for d, e, c in owners], dtype="int64")
        for batch in self._batches(passes):
            logits, backprop = self.model.begin_update(batch)
            xp = get_array_module(logits)
            truth = xp.asarray(labels[[i for p in batch for i in p.pair_index]])
            log_probs = _log_softmax(logits)
            one_hot = xp.eye(2, dtype=logits.dtype)[truth]
            losses[self.name] += float(-(log_probs * one_hot).sum()) / len(owners)
            backprop((xp.exp(log_probs) - one_hot) / len(owners))
        if sgd is not None:
            self.finish_update(sgd)
        return losses

    def add_label(self, label: str) -> int:
        raise NotImplementedError

    # Serialization ------------------------------------------------------------------------

    def _settings(self) -> Dict[str, Any]:
        return {**self.cfg, "use_gold_ents": self.use_gold_ents}

    def _load_settings(self, settings: Dict[str, Any]) -> None:
        settings = dict(settings)
        self.use_gold_ents = settings.pop("use_gold_ents", self.use_gold_ents)
        self.cfg.update(settings)
        self._candidate_tokens, self._alias_tokens = {}, {}

    def to_bytes(self, *, exclude: Iterable[str] = SimpleFrozenList()) -> bytes:
        serializers = {
            "cfg": lambda: srsly.json_dumps(self._settings()),
            "model": self.model.to_bytes,
            "kb": lambda: self._require_kb().to_bytes(),
        }
        return util.to_bytes(serializers, exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = SimpleFrozenList()) -> "MultiCrossReranker":
        deserializers = {
            "cfg": lambda b: self._load_settings(srsly.json_loads(b)),
            "model": self.model.from_bytes,
            "kb": lambda b: self.set_kb(EntityStore.from_bytes(b)),
        }
        util.from_bytes(bytes_data, deserializers, exclude)
        return self

    def to_disk(self, path, *, exclude: Iterable[str] = SimpleFrozenList()) -> None:
        serializers = {
            "cfg": lambda p: srsly.write_json(p, self._settings()),
            "model": self.model.to_disk,
            "kb": lambda p: self._require_kb().to_disk(p),
        }
        util.to_disk(path, serializers, exclude)

    def from_disk(self, path, *, exclude: Iterable[str] = SimpleFrozenList()) -> "MultiCrossReranker":
        deserializers = {
            "cfg": lambda p: self._load_settings(srsly.read_json(p)),
            "model": self.model.from_disk,
            "kb": lambda p: self.set_kb(EntityStore.from_disk(p)),
        }
        util.from_disk(Path(path), deserializers, exclude)
        return self


def closest_alias(text: str, entity: Entity) -> Optional[str]:
    """The entity's alias with the most character trigrams in common with `text` (Jaccard,
    case-folded), or None when its name is at least as close or it has no aliases."""
    def trigrams(value: str) -> set:
        padded = f" {value.casefold()} "
        return {padded[i: i + 3] for i in range(len(padded) - 2)}

    target = trigrams(text)

    def similarity(value: str) -> float:
        grams = trigrams(value)
        return len(grams & target) / len(grams | target)

    best = max(entity.aliases, key=similarity, default=None)
    return best if best is not None and similarity(best) > similarity(entity.name) else None


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


def _log_softmax(logits):
    xp = get_array_module(logits)
    shifted = logits - logits.max(axis=1, keepdims=True)
    return shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))


@registry.scorers("spacy_arbo.multi_cross_reranker_scorer.v1")
def make_reranker_scorer() -> Callable[..., Dict[str, Any]]:
    """spaCy's `nel_micro_p/r/f` (with composite gold ids) and accuracy@1 over the mentions
    with a gold id; the reranker makes the final decision, so it owns these keys."""

    def score(examples: Iterable[Example], **_kwargs) -> Dict[str, Any]:
        outcomes = mention_outcomes(examples)
        return {**link_prf(outcomes), "rerank_accuracy": accuracy(outcomes)}

    return score


def multi_cross_rerankers(nlp: Language) -> List[MultiCrossReranker]:
    """The pipeline's multi_cross_reranker components, in pipeline order."""
    return [proc for _, proc in nlp.pipeline if isinstance(proc, MultiCrossReranker)]
