"""`arbo_linker`: dense retrieval of KB candidates for every entity mention, and linking."""
import hashlib
import sys
from dataclasses import dataclass
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import srsly
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc, Span
from spacy.training import Example, validate_examples
from spacy.util import SimpleFrozenList
from spacy.vocab import Vocab
from thinc.api import Config, Model, Optimizer
from tqdm import tqdm

from ..torch_model import get_module
from ..encoders.templates import ENTITY_FIELDS, EntityInput, MentionInput, entity_inputs, mention_input
from ..kb.entities import NIL
from ..kb.index import FaissIndex
from ..kb.store import EntityStore
from ..kb.tfidf import TfidfAliasIndex
from ..linking.clustering import GRAPHS, nearest_neighbours, partition
from ..training.mentions import TrainingBatch, TrainingMentions, gold_row, mention_key
from ..training.objectives import Objective, TrainingState
from ..util import ArboError
from .abbreviations import LongForms
from .gold_ents import with_gold_mentions
from .candidates import Candidates, best_above, fuse_candidates, rows_to_candidates, write_link

CANDIDATE_SOURCES = ("dense", "tfidf", "hybrid")
LINKINGS = ("independent", "clustering")
SCOPES = ("batch", "doc")
# Settings that change what the entity tower encodes, hence the index.
ENTITY_TEXT_SETTINGS = ("entity_fields", "max_aliases", "index_aliases")
KB_INDEX_DIR = "index"

DEFAULT_MODEL = Config().from_str(
    """
[model]
@architectures = "spacy_arbo.DualEncoder.v1"
similarity = "cosine"
scale = 20.0
learn_scale = true

[model.mention_tower]
@architectures = "spacy_arbo.TransformerTower.v1"
pooling = "mean"
max_length = 64
use_markers = false

[model.mention_tower.name]
@misc = "spacy_arbo.default_encoder_path.v1"
"""
)["model"]

for _attr in ("arbo_cluster", "arbo_path"):
    if not Span.has_extension(_attr):
        Span.set_extension(_attr, default=None)


@Language.factory(
    "arbo_linker",
    requires=["doc.ents"],
    assigns=["token.ent_kb_id", "span._.kb_candidates", "span._.kb_ents", "span._.arbo_cluster", "span._.arbo_path"],
    default_config={
        "model": DEFAULT_MODEL,
        "candidate_source": "dense",
        "top_k": 64,
        "threshold": None,
        "labels_discard": [],
        "overwrite": True,
        "use_gold_ents": True,
        "context_chars": 0,
        "use_long_form": False,
        "entity_fields": [],
        "max_aliases": 8,
        "index": {"kind": "flat"},
        "index_aliases": False,
        "batch_size": 64,
        "use_gpu_index": None,
        "linking": "independent",
        "graph": "directed",
        "knn_mentions": 8,
        "min_similarity": None,
        "clustering_scope": "batch",
        "transductive": False,
        "objective": {"@losses": "spacy_arbo.in_batch.v1"},
        "refresh_every": 200,
        "alias_pairs_per_batch": 0,
        "seed": 0,
        "scorer": {"@scorers": "spacy_arbo.arbo_linker_scorer.v1"},
    },
    default_score_weights={"arbo_recall@1": 0.5, "arbo_recall@64": 0.5, "nel_micro_f": None,
                           "nel_micro_p": None, "nel_micro_r": None},
)
def make_arbo_linker(
    nlp: Language,
    name: str,
    model: Model,
    candidate_source: str,
    top_k: int,
    threshold: Optional[float],
    labels_discard: Iterable[str],
    overwrite: bool,
    use_gold_ents: bool,
    context_chars: int,
    use_long_form: bool,
    entity_fields: List[str],
    max_aliases: int,
    index: Dict[str, Any],
    index_aliases: bool,
    batch_size: int,
    use_gpu_index: Optional[bool],
    linking: str,
    graph: str,
    knn_mentions: int,
    min_similarity: Optional[float],
    clustering_scope: str,
    transductive: bool,
    objective: Objective,
    refresh_every: int,
    alias_pairs_per_batch: int,
    seed: int,
    scorer: Optional[Callable],
) -> "ArboLinker":
    return ArboLinker(
        nlp.vocab, model, name, candidate_source=candidate_source, top_k=top_k, threshold=threshold,
        labels_discard=labels_discard, overwrite=overwrite, use_gold_ents=use_gold_ents,
        context_chars=context_chars, use_long_form=use_long_form, entity_fields=entity_fields,
        max_aliases=max_aliases, index=index, index_aliases=index_aliases, batch_size=batch_size,
        use_gpu_index=use_gpu_index, linking=linking, graph=graph, knn_mentions=knn_mentions,
        min_similarity=min_similarity, clustering_scope=clustering_scope, transductive=transductive,
        objective=objective, refresh_every=refresh_every,
        alias_pairs_per_batch=alias_pairs_per_batch, seed=seed, scorer=scorer,
    )


@dataclass
class Link:
    """One mention's decision: ranked candidates, the chosen id, and with clustering its
    cluster (stable within a batch) and path from the entity root: `[kb_id or NIL,
    (doc index, start_char, end_char, text), ...]`."""

    candidates: Candidates
    kb_id: str
    cluster: Optional[int] = None
    path: Optional[List[Any]] = None


class ArboLinker(TrainablePipe):
    """Links `doc.ents` to KB entities retrieved by a dual encoder over a FAISS index.

    Writes `ent.kb_id_` (NIL below `threshold`), `span._.kb_candidates` and
    `span._.kb_ents` (scispacy's shape): `[(kb_id, score), ...]`, best first.
    """

    def __init__(
        self,
        vocab: Vocab,
        model: Model,
        name: str = "arbo_linker",
        *,
        candidate_source: str = "dense",
        top_k: int = 64,
        threshold: Optional[float] = None,
        labels_discard: Iterable[str] = SimpleFrozenList(),
        overwrite: bool = True,
        use_gold_ents: bool = True,
        context_chars: int = 0,
        use_long_form: bool = False,
        entity_fields: Sequence[str] = (),
        max_aliases: int = 8,
        index: Optional[Dict[str, Any]] = None,
        index_aliases: bool = False,
        batch_size: int = 64,
        use_gpu_index: Optional[bool] = None,
        linking: str = "independent",
        graph: str = "directed",
        knn_mentions: int = 8,
        min_similarity: Optional[float] = None,
        clustering_scope: str = "batch",
        transductive: bool = False,
        objective: Optional[Objective] = None,
        refresh_every: int = 200,
        alias_pairs_per_batch: int = 0,
        seed: int = 0,
        scorer: Optional[Callable] = None,
    ) -> None:
        unknown = [f for f in entity_fields if f not in ENTITY_FIELDS]
        if unknown:
            raise ArboError(f"Unknown entity_fields {unknown}; expected a subset of {ENTITY_FIELDS}.")
        if top_k < 1 or batch_size < 1 or refresh_every < 1 or context_chars < 0 or alias_pairs_per_batch < 0:
            raise ArboError(
                "top_k, batch_size and refresh_every must be positive; context_chars and "
                "alias_pairs_per_batch non-negative."
            )
        self.vocab = vocab
        self.model = model
        self.name = name
        self.cfg: Dict[str, Any] = {
            "candidate_source": candidate_source, "top_k": top_k, "threshold": threshold,
            "labels_discard": list(labels_discard), "overwrite": overwrite, "context_chars": context_chars,
            "use_long_form": use_long_form, "entity_fields": list(entity_fields), "max_aliases": max_aliases,
            "index": dict(index or {"kind": "flat"}), "index_aliases": index_aliases, "batch_size": batch_size,
            "use_gpu_index": use_gpu_index, "refresh_every": refresh_every,
            "alias_pairs_per_batch": alias_pairs_per_batch, "seed": seed, "linking": linking, "graph": graph,
            "knn_mentions": knn_mentions, "min_similarity": min_similarity, "clustering_scope": clustering_scope,
            "transductive": transductive,
        }
        self.use_gold_ents = use_gold_ents
        self.kb: Optional[EntityStore] = None
        self._alias_pair_cache: Optional[List[Tuple[str, int]]] = None
        self._long_forms: Optional[LongForms] = None
        self._entity_inputs: Optional[List[EntityInput]] = None
        self.index: Optional[FaissIndex] = None
        self.tfidf: Optional[TfidfAliasIndex] = None
        self.objective = objective
        # Training state: the corpus's gold mentions, and whether vectors lag the weights.
        self.corpus = TrainingMentions()
        self._updates = 0
        # The update count the corpus vectors were encoded at (None: no current vectors).
        self._corpus_encoded_at: Optional[int] = None
        self._stale = False
        self._rng = np.random.default_rng(seed)
        self._scorer = scorer
        self.scorer = self._score_with_gold_ents if scorer is not None else None
        self.configure()

    def configure(self, **settings: Any) -> None:
        """Change inference settings (linking mode, graph, thresholds) and check them."""
        unknown = set(settings) - set(self.cfg)
        if unknown:
            raise ArboError(f"Unknown arbo_linker settings {sorted(unknown)}.")
        cfg = {**self.cfg, **settings}
        for setting, allowed in (("linking", LINKINGS), ("graph", GRAPHS), ("clustering_scope", SCOPES),
                                 ("candidate_source", CANDIDATE_SOURCES)):
            if cfg[setting] not in allowed:
                raise ArboError(f"Unknown {setting} '{cfg[setting]}'; expected one of {allowed}.")
        if cfg["linking"] == "clustering" and cfg["candidate_source"] == "tfidf":
            raise ArboError("linking = 'clustering' needs mention vectors: use candidate_source 'dense' or 'hybrid'.")
        if any(cfg[k] != self.cfg.get(k) for k in ENTITY_TEXT_SETTINGS if k in settings):
            # Other entity texts: the index must be re-encoded before its next use.
            self._entity_inputs = None
            self._stale = True
        self.cfg = cfg

    # Knowledge base and index -----------------------------------------------------

    def set_kb(self, kb: EntityStore) -> None:
        if not len(kb):
            raise ArboError(f"{self.name}: the KB is empty.")
        self.kb = kb
        self._alias_pair_cache = None
        self._entity_inputs = None

    def _require_kb(self) -> EntityStore:
        if self.kb is None:
            raise ArboError(
                f"'{self.name}' has no KB: call nlp.initialize() with "
                "[initialize.components.<name>.kb_loader] set, or load a saved pipeline."
            )
        return self.kb

    @property
    def index_fingerprint(self) -> str:
        """What the entity vectors depend on: encoder weights, KB content, entity texts."""
        texts = srsly.json_dumps([self.cfg[k] for k in ENTITY_TEXT_SETTINGS])
        texts_hash = hashlib.sha1(texts.encode("utf8")).hexdigest()[:8]
        return f"encoder={get_module(self.model).fingerprint()} kb={self._require_kb().fingerprint()[:16]} texts={texts_hash}"

    def entity_texts(self) -> Tuple[List[EntityInput], np.ndarray]:
        """What the entity tower encodes, and which entity row each vector belongs to."""
        kb = self._require_kb()
        inputs = list(self._entity_input_cache())
        owners = list(range(len(kb)))
        if self.cfg["index_aliases"]:
            for row, entity in enumerate(kb):
                for alias in entity.aliases:
                    inputs.append(EntityInput(alias, inputs[row].description))
                    owners.append(row)
        return inputs, np.asarray(owners, dtype=np.int64)

    def refresh_index(self, progress: bool = True) -> None:
        """Re-encode every entity with the current weights and rebuild the index."""
        started = time.perf_counter()
        inputs, owners = self.entity_texts()
        vectors = self._encode(inputs, lambda batch: self.model.predict(([], batch))[1],
                               lambda e: len(e.title) + len(e.description), progress, "encoding entities")
        # Index ids are entity rows, so an entity with several vectors appears once per vector.
        self.index = FaissIndex.build(
            vectors, ids=owners, use_gpu=self.cfg["use_gpu_index"],
            fingerprint=self.index_fingerprint, **self.cfg["index"],
        )
        self._stale = False
        if self._updates:
            print(f"{self.name}: re-encoded {len(inputs):,} entity texts in "
                  f"{time.perf_counter() - started:.1f}s after {self._updates} updates", file=sys.stderr)

    def ensure_fresh(self) -> None:
        """Entity vectors go stale with every optimizer step: re-encode before they are used."""
        if self._stale and self.cfg["candidate_source"] != "tfidf":
            self.refresh_index()

    def save_index(self, kb_dir: Path) -> None:
        """Store the entity index beside the KB, so pipelines with the same encoder and
        entity texts skip encoding the KB in `initialize`."""
        if self.index is None:
            raise ArboError(f"'{self.name}' has no entity index to save.")
        self.index.to_disk(Path(kb_dir) / KB_INDEX_DIR)

    def _load_prebuilt_index(self, kb_dir: Path) -> bool:
        """Reuse an index stored in the KB directory; one made by another encoder (or
        from other entity texts) is an error rather than silently wrong candidates."""
        if not (kb_dir / KB_INDEX_DIR).is_dir():
            return False
        self.index = FaissIndex.from_disk(
            kb_dir / KB_INDEX_DIR, expected_fingerprint=self.index_fingerprint, use_gpu=self.cfg["use_gpu_index"])
        return True

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        kb_loader: Optional[Callable[[Vocab], EntityStore]] = None,
    ) -> None:
        if kb_loader is not None:
            self.set_kb(kb_loader(self.vocab))
        kb = self._require_kb()
        examples = list(get_examples()) if get_examples is not None else []
        if examples:
            validate_examples(examples, f"{self.name}.initialize")
        self.set_training_mentions(eg.reference for eg in examples)
        self.model.initialize()
        kb_dir = getattr(kb, "path", None)
        if self.cfg["candidate_source"] != "tfidf":
            if not (kb_dir and self._load_prebuilt_index(Path(kb_dir))):
                self.refresh_index()
        if self.cfg["candidate_source"] != "dense":
            self.tfidf = TfidfAliasIndex.build(kb)

    def set_training_mentions(self, docs: Iterable[Doc]) -> None:
        """Keep the gold mentions of `docs`: the arborescence objective's graph nodes, and
        with `transductive` the clustering's anchors (stored with the pipeline)."""
        kb = self._require_kb()
        linked = [(ent, row) for doc in docs for ent in doc.ents if (row := gold_row(kb, ent.kb_id_)) is not None]
        # One call, so each doc's abbreviations are found once rather than once per mention.
        inputs = self.mention_inputs([ent for ent, _ in linked])
        self.corpus = TrainingMentions.collect((ent, mention, row) for (ent, row), mention in zip(linked, inputs))
        self._corpus_encoded_at = None

    def _anchors(self) -> TrainingMentions:
        """The training mentions with vectors from the current weights."""
        if not len(self.corpus):
            raise ArboError(
                f"'{self.name}': transductive clustering needs the training mentions. Train or initialize "
                "the pipeline with transductive = true, or call set_training_mentions(docs) "
                "(CLI: evaluate --anchors-from TRAIN.spacy)."
            )
        if self._corpus_encoded_at != self._updates:
            self.refresh_corpus_vectors()
        return self.corpus

    # Prediction ---------------------------------------------------------------------

    def _spans_to_link(self, doc: Doc) -> List[Span]:
        discard = set(self.cfg["labels_discard"])
        return [
            ent for ent in doc.ents
            if ent.label_ not in discard and (self.cfg["overwrite"] or not ent.kb_id_)
        ]

    def mention_inputs(self, spans: Sequence[Span]) -> List[MentionInput]:
        """What the mention tower reads; with `use_long_form`, an abbreviation defined in
        its doc is read as its long form (in training and inference alike)."""
        context = self.cfg["context_chars"]
        if not self.cfg["use_long_form"]:
            return [mention_input(s, context) for s in spans]
        if self._long_forms is None:
            self._long_forms = LongForms(self.vocab)
        per_doc: Dict[int, Dict[Tuple[int, int], str]] = {}
        inputs = []
        for span in spans:
            forms = per_doc.get(id(span.doc))
            if forms is None:
                forms = per_doc[id(span.doc)] = self._long_forms(span.doc)
            inputs.append(mention_input(span, context, forms.get((span.start_char, span.end_char))))
        return inputs

    def encode_mentions(self, mentions: Sequence[MentionInput], progress: bool = False) -> np.ndarray:
        return self._encode(list(mentions), lambda batch: self.model.predict((batch, []))[0],
                            lambda m: len(m.left) + len(m.mention) + len(m.right), progress, "encoding mentions")

    def _encode(self, items: List, encode: Callable, length: Callable, progress: bool, what: str) -> np.ndarray:
        """Encode in batches of similar length (little padding), returning rows in input order."""
        dim = get_module(self.model).dim
        if not items:
            return np.zeros((0, dim), dtype=np.float32)
        order = sorted(range(len(items)), key=lambda i: length(items[i]))
        vectors = np.zeros((len(items), dim), dtype=np.float32)
        batch_size = self.cfg["batch_size"]
        with tqdm(total=len(items), desc=f"{self.name}: {what}", unit="text", disable=not progress,
                  leave=False, mininterval=2.0) as bar:
            for start in range(0, len(order), batch_size):
                rows = order[start: start + batch_size]
                vectors[rows] = self.model.ops.to_numpy(encode([items[i] for i in rows]))
                bar.update(len(rows))
        return vectors

    def candidates_for(self, mentions: Sequence[MentionInput], vectors: Optional[np.ndarray] = None) -> List[Candidates]:
        kb = self._require_kb()
        self.ensure_fresh()
        k, source = self.cfg["top_k"], self.cfg["candidate_source"]
        ranked: List[List[Candidates]] = []
        if source != "tfidf":
            if self.index is None:
                raise ArboError(f"'{self.name}' has no entity index: initialize the pipeline first.")
            # Oversample when entities own several vectors, so k distinct entities remain.
            n_search = k * (4 if self.cfg["index_aliases"] else 1)
            vectors = self.encode_mentions(mentions) if vectors is None else vectors
            scores, rows = self.index.search(vectors, n_search)
            ranked.append(rows_to_candidates(scores, rows, kb.ids, k))
        if source != "dense":
            if self.tfidf is None:
                # Built on demand (a second or two), e.g. after `configure(candidate_source="hybrid")`.
                self.tfidf = TfidfAliasIndex.build(kb)
            scores, rows = self.tfidf.search([m.mention for m in mentions], k)
            ranked.append(rows_to_candidates(scores, rows, kb.ids, k))
        return ranked[0] if len(ranked) == 1 else fuse_candidates(ranked, k)

    def predict(self, docs: Iterable[Doc]) -> List[List[Link]]:
        docs = list(docs)
        spans_per_doc = [self._spans_to_link(doc) for doc in docs]
        flat = [s for spans in spans_per_doc for s in spans]
        if not flat:
            return [[] for _ in docs]
        mentions = self.mention_inputs(flat)
        if self.cfg["linking"] == "independent":
            links = [Link(c, best_above(c, self.cfg["threshold"])) for c in self.candidates_for(mentions)]
        else:
            links = self._cluster(docs, spans_per_doc, mentions)
        remaining = iter(links)
        return [[next(remaining) for _ in spans] for spans in spans_per_doc]

    def _cluster(self, docs: List[Doc], spans_per_doc: List[List[Span]], mentions: List[MentionInput]) -> List[Link]:
        """ArboEL A.2-A.3: partition a graph of each mention's k nearest mentions and its
        nearest entity; a mention links to its cluster's entity, a cluster without one is
        NIL (a discovered entity). Scope: all docs of the batch, or each doc alone.
        `transductive` adds the training mentions as nodes anchored to their gold entity
        (ArboEL's transductive setting): they join every group's kNN search."""
        kb = self._require_kb()
        ids = kb.ids
        vectors = self.encode_mentions(mentions)
        candidates = self.candidates_for(mentions, vectors)
        anchors = self._anchors() if self.cfg["transductive"] else TrainingMentions()
        anchor_vectors = anchors.vectors if len(anchors) else vectors[:0]
        located = [(d, s) for d, spans in enumerate(spans_per_doc) for s in spans]
        groups = ([list(range(len(located)))] if self.cfg["clustering_scope"] == "batch" else
                  [[i for i, (d, _) in enumerate(located) if d == doc_index] for doc_index in range(len(docs))])
        links: List[Optional[Link]] = [None] * len(located)
        next_cluster = 0
        for group in filter(None, groups):
            members = np.asarray(group)
            # Nodes: the group's mentions, then the anchors (which only lend their entity,
            # so they need no neighbour lists of their own).
            nodes = np.concatenate([vectors[members], anchor_vectors])
            n_anchors = len(anchor_vectors)
            k = min(self.cfg["knn_mentions"], len(nodes) - 1)
            if k > 0:
                knn, similarity = nearest_neighbours(vectors[members], nodes, k, exclude_self=True)
            else:
                knn, similarity = np.zeros((len(members), 0), np.int64), np.zeros((len(members), 0), np.float32)
            knn = np.concatenate([knn, np.full((n_anchors, knn.shape[1]), -1, np.int64)])
            similarity = np.concatenate([similarity, np.zeros((n_anchors, knn.shape[1]), np.float32)])
            top = [candidates[i][0] if candidates[i] else None for i in members]
            entity_rows = np.asarray([kb.row(t[0]) if t else -1 for t in top] + [-1] * n_anchors, dtype=np.int64)
            entity_scores = np.asarray([t[1] if t else -np.inf for t in top] + [-np.inf] * n_anchors,
                                       dtype=np.float32)
            anchor_entities = np.concatenate([np.full(len(members), -1, np.int64), anchors.gold_rows]) \
                if n_anchors else None
            result = partition(knn, similarity, entity_rows, entity_scores, anchor_entities=anchor_entities,
                               graph=self.cfg["graph"], min_similarity=self.cfg["min_similarity"])
            for local, i in enumerate(members):
                entity = int(result.entity[local])
                path = [ids[idx] if kind == "entity" else
                        self._describe(located[members[idx]]) if idx < len(members) else
                        (-1, -1, -1, anchors.mentions[idx - len(members)].mention)
                        for kind, idx in result.path(local)]
                if path and not isinstance(path[0], str):
                    path.insert(0, NIL)
                links[i] = Link(candidates[i], ids[entity] if entity >= 0 else NIL,
                                next_cluster + int(result.cluster[local]), path)
            next_cluster += result.n_clusters
        return links

    @staticmethod
    def _describe(located: Tuple[int, Span]) -> Tuple[int, int, int, str]:
        doc_index, span = located
        return (doc_index, span.start_char, span.end_char, span.text)

    def set_annotations(self, docs: Iterable[Doc], links_per_doc: List[List[Link]]) -> None:
        for doc, links in zip(docs, links_per_doc):
            for span, link in zip(self._spans_to_link(doc), links):
                write_link(span, link.kb_id, link.candidates)
                span._.arbo_cluster = link.cluster
                span._.arbo_path = link.path

    # Training and scoring ------------------------------------------------------------

    def _ensure_ents(self, examples: Iterable[Example]) -> List[Example]:
        """With `use_gold_ents`, copy the gold entities (without their ids) onto the
        predicted docs, so a pipeline without NER can be trained and scored."""
        return with_gold_mentions(examples) if self.use_gold_ents else list(examples)

    def _score_with_gold_ents(self, examples: Iterable[Example], **kwargs) -> Dict[str, Any]:
        self.ensure_fresh()
        examples = self._ensure_ents(examples)
        if self.use_gold_ents:
            docs = list(self.pipe(eg.predicted for eg in examples))
            for eg, doc in zip(examples, docs):
                eg.predicted = doc
        return self._scorer(examples, **kwargs)

    def training_batch(self, examples: Iterable[Example]) -> TrainingBatch:
        """Gold (mention, entity) pairs of the examples, plus sampled KB aliases."""
        kb = self._require_kb()
        spans, rows = [], []
        for eg in examples:
            gold_by_offset = {(e.start_char, e.end_char): e for e in eg.reference.ents}
            for span in self._spans_to_link(eg.predicted):
                gold = gold_by_offset.get((span.start_char, span.end_char))
                row = gold_row(kb, gold.kb_id_) if gold is not None else None
                if row is not None:
                    spans.append(span)
                    rows.append(row)
        mentions = self.mention_inputs(spans)
        corpus_ids = [self.corpus.keys.get(mention_key(s), -1) for s in spans]
        n_aliases = self.cfg["alias_pairs_per_batch"]
        if n_aliases:
            pairs = self._alias_pairs()
            for i in self._rng.choice(len(pairs), size=min(n_aliases, len(pairs)), replace=False):
                mentions.append(MentionInput("", pairs[i][0], ""))
                rows.append(pairs[i][1])
                corpus_ids.append(-1)
        return TrainingBatch(mentions, np.asarray(rows, dtype=np.int64), np.asarray(corpus_ids, dtype=np.int64))

    def _alias_pairs(self) -> List[Tuple[str, int]]:
        if self._alias_pair_cache is None:
            self._alias_pair_cache = self._require_kb().alias_pairs()
        return self._alias_pair_cache

    def refresh_corpus_vectors(self) -> None:
        """Re-encode the cached training mentions (ArboEL's graph nodes) with current weights."""
        if len(self.corpus):
            self.corpus.vectors = self.encode_mentions(self.corpus.mentions, progress=True)
            self.corpus.vectors_fingerprint = get_module(self.model).fingerprint()
            self._corpus_encoded_at = self._updates

    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        losses = {} if losses is None else losses
        losses.setdefault(self.name, 0.0)
        if self.objective is None:
            raise ArboError(f"'{self.name}' has no training objective configured.")
        examples = self._ensure_ents(examples)
        validate_examples(examples, f"{self.name}.update")
        batch = self.training_batch(examples)
        if not len(batch):
            return losses
        if self._updates % self.cfg["refresh_every"] == 0:
            # Negatives are mined from the current index and mention cache, re-made every N steps.
            if self.objective.uses_index:
                self.ensure_fresh()
            if self.objective.uses_corpus_vectors:
                self.refresh_corpus_vectors()
        state = TrainingState(get_module(self.model), self.index, self.corpus, self._entity_input_cache(), self._rng)
        loss = self.objective(state, batch)
        loss.backward()
        self._updates += 1
        self._stale = True
        if sgd not in (None, False):
            self.finish_update(sgd)
        losses[self.name] += float(loss.detach())
        return losses

    def _entity_input_cache(self) -> List[EntityInput]:
        if self._entity_inputs is None:
            self._entity_inputs = entity_inputs(self._require_kb(), self.cfg["entity_fields"], self.cfg["max_aliases"])
        return self._entity_inputs

    def add_label(self, label: str) -> int:
        raise NotImplementedError

    # Serialization --------------------------------------------------------------------

    def to_disk(self, path, *, exclude: Iterable[str] = SimpleFrozenList()) -> None:
        path = Path(path)
        # Saved vectors and index must match the saved weights (model-best stays consistent).
        self.ensure_fresh()
        path.mkdir(parents=True, exist_ok=True)
        srsly.write_json(path / "cfg", {**self.cfg, "use_gold_ents": self.use_gold_ents})
        self.model.to_disk(path / "model")
        self._require_kb().to_disk(path / "kb")
        if self.index is not None:
            self.index.to_disk(path / "index")
        if self.tfidf is not None:
            self.tfidf.to_disk(path / "tfidf")
        if self.cfg["transductive"] and len(self.corpus):
            self._anchors().to_disk(path / "anchors", self.kb)

    def from_disk(self, path, *, exclude: Iterable[str] = SimpleFrozenList()) -> "ArboLinker":
        path = Path(path)
        cfg = srsly.read_json(path / "cfg")
        self.use_gold_ents = cfg.pop("use_gold_ents", self.use_gold_ents)
        self.cfg.update(cfg)
        self.model.from_disk(path / "model")
        self.set_kb(EntityStore.from_disk(path / "kb"))
        if (path / "index").exists():
            self.index = FaissIndex.from_disk(
                path / "index", expected_fingerprint=self.index_fingerprint, use_gpu=self.cfg["use_gpu_index"])
        if (path / "tfidf").exists():
            self.tfidf = TfidfAliasIndex.from_disk(path / "tfidf", expected_fingerprint=self.kb.fingerprint())
        if (path / "anchors").exists():
            self.corpus = TrainingMentions.from_disk(path / "anchors", self.kb)
            # Vectors from other weights are re-encoded (from the stored texts) on first use.
            current = self.corpus.vectors_fingerprint == get_module(self.model).fingerprint()
            self._corpus_encoded_at = self._updates if current else None
        return self


def arbo_linkers(nlp: Language) -> List[ArboLinker]:
    """The pipeline's arbo_linker components, in pipeline order."""
    return [proc for _, proc in nlp.pipeline if isinstance(proc, ArboLinker)]
