"""`arbo_linker`: links `doc.ents` to the KB candidates its retriever finds for them."""
import logging
import re
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import srsly
from spacy import util
from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.training import Example, validate_examples
from spacy.util import SimpleFrozenList
from spacy.vocab import Vocab
from thinc.api import Config, Model, Optimizer

from ..encoders.batching import encode_by_length
from ..encoders.dual import DualEncoder
from ..encoders.precision import PRECISIONS, resolve_precision
from ..encoders.templates import EntityInput, MentionInput, Triplet, mention_input
from ..kb.entities import NIL, Entity
from ..kb.store import BaseEntityStore, EntityStore, open_store
from ..kb.updates import KBUpdate, plan_update, updated_store
from ..linking.clustering import GRAPHS
from ..linking.mention_graph import cluster_mentions
from ..retrieval.candidates import Candidates
from ..retrieval.retriever import EntityRetriever, RetrievalSettings
from ..settings import check_at_least, check_choice, setting_defaults, with_setting_parameters
from ..torch_model import get_module, is_built
from ..training.mentions import TrainingBatch, TrainingMentions, gold_row, mention_key
from ..training.objectives import Objective, TrainingState
from ..util import ArboError, PathLike, atomic_path, read_json
from .abbreviations import LongForms, SpelledOut, corpus_long_forms
from .composites import composite_parts
from .configured_pipe import ConfiguredPipe
from .gold_ents import with_gold_mentions
from .knowledge_units import KnowledgeUnits
from .links import best_above, kb_ents, write_link

logger = logging.getLogger("spacy_arbo")

LINKINGS = ("independent", "clustering")
SCOPES = ("batch", "doc")
# How a coordinated mention ("breast and ovarian cancer") is linked: as one mention, split
# into its parts whenever they name different entities, or split only when the parts'
# retrieval scores average at least the whole mention's.
COMPOSITES = ("whole", "split", "best")
# A mention without a single word character ("  ", "--") names nothing: it is not linked.
WORDLESS = re.compile(r"^\W*$")

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

for _attr in ("arbo_cluster", "arbo_path", "arbo_parts"):
    if not Span.has_extension(_attr):
        Span.set_extension(_attr, default=None)


@dataclass(frozen=True)
class LinkerSettings(RetrievalSettings):
    """Everything `arbo_linker` can be configured with besides its model, objective and
    scorer (the retrieval settings are inherited). spaCy's names where they mean the same:
    `threshold` (NIL below it), `labels_discard`, `overwrite`, `use_gold_ents`."""

    threshold: Optional[float] = None
    kb_ents_threshold: Optional[float] = None
    max_entities_per_mention: int = 5
    labels_discard: List[str] = field(default_factory=list)
    overwrite: bool = True
    use_gold_ents: bool = True
    context_chars: int = 0
    use_long_form: bool = True
    composites: str = "best"
    linking: str = "independent"
    graph: str = "directed"
    knn_mentions: int = 8
    min_similarity: Optional[float] = None
    clustering_scope: str = "batch"
    transductive: bool = False
    refresh_every: int = 200
    alias_pairs_per_batch: int = 0
    precision: str = "auto"
    seed: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("linking", self.linking, LINKINGS)
        check_choice("composites", self.composites, COMPOSITES)
        check_choice("graph", self.graph, GRAPHS)
        check_choice("clustering_scope", self.clustering_scope, SCOPES)
        check_choice("precision", self.precision, PRECISIONS)
        check_at_least(1, refresh_every=self.refresh_every, max_entities_per_mention=self.max_entities_per_mention)
        check_at_least(0, knn_mentions=self.knn_mentions, context_chars=self.context_chars,
                       alias_pairs_per_batch=self.alias_pairs_per_batch)
        if self.linking == "clustering" and not self.uses_dense:
            raise ArboError("linking = 'clustering' needs mention vectors: use candidate_source 'dense' or 'hybrid'.")
        object.__setattr__(self, "labels_discard", list(self.labels_discard))


@Language.factory(
    "arbo_linker",
    requires=["doc.ents"],
    assigns=["token.ent_kb_id", "span._.kb_candidates", "span._.kb_ents", "span._.arbo_cluster", "span._.arbo_path",
             "span._.arbo_parts"],
    default_config={
        "model": DEFAULT_MODEL,
        "objective": {"@losses": "spacy_arbo.in_batch.v1"},
        "scorer": {"@scorers": "spacy_arbo.arbo_linker_scorer.v1"},
        "knowledge_units": None,
        **setting_defaults(LinkerSettings),
    },
    default_score_weights={"arbo_recall@1": 0.5, "arbo_recall@64": 0.5, "nel_micro_f": None,
                           "nel_micro_p": None, "nel_micro_r": None},
)
@with_setting_parameters(LinkerSettings, [("nlp", Language), ("name", str), ("model", Model),
                                          ("objective", Objective), ("scorer", Optional[Callable]),
                                          ("knowledge_units", Optional[KnowledgeUnits])])
def make_arbo_linker(nlp: Language, name: str, model: Model, objective: Objective, scorer: Optional[Callable],
                     knowledge_units: Optional[KnowledgeUnits], **settings: Any) -> "ArboLinker":
    """`knowledge_units` (e.g. `spacy_arbo.knowledge_units.v1`) gives a graph tower
    (`spacy_arbo.GraphTower.v1`, GER) the triplets of each mention and entity."""
    return ArboLinker(nlp.vocab, model, name, nlp=nlp, objective=objective, scorer=scorer,
                      knowledge_units=knowledge_units, settings=LinkerSettings(**settings))


@dataclass
class Link:
    """One mention's decision: ranked candidates, the chosen id, and with clustering its
    cluster (stable within a batch) and path from the entity root: `[kb_id or NIL,
    (doc index, start_char, end_char, text), ...]`."""

    candidates: Candidates
    kb_id: str
    cluster: Optional[int] = None
    path: Optional[List[Any]] = None
    # A split composite mention: (part text, its kb_id, its ranked candidates) per part.
    parts: Optional[List[Tuple[str, str, Candidates]]] = None


class ArboLinker(ConfiguredPipe):
    """Links `doc.ents` to KB entities retrieved by a dual encoder over a FAISS index.

    Writes `ent.kb_id_` (NIL below `threshold`), `span._.kb_candidates` and
    `span._.kb_ents` (scispacy's shape: `[(kb_id, score), ...]`, best first, at most
    `max_entities_per_mention`, none below `kb_ents_threshold`). A composite
    mention split into parts gets `ent.kb_id_` "ID1|ID2", `span._.arbo_parts` (per part: text,
    kb_id, ranked candidates) and in `kb_ents` each part's best candidate first.
    """

    def __init__(
        self,
        vocab: Vocab,
        model: Model,
        name: str = "arbo_linker",
        *,
        nlp: Optional[Language] = None,
        objective: Optional[Objective] = None,
        scorer: Optional[Callable] = None,
        knowledge_units: Optional[KnowledgeUnits] = None,
        settings: LinkerSettings = LinkerSettings(),
    ) -> None:
        super().__init__(vocab, model, name, nlp=nlp, scorer=scorer, settings=settings)
        self.objective = objective
        self.knowledge_units = knowledge_units
        self.retriever: Optional[EntityRetriever] = None
        self._long_forms: Optional[LongForms] = None
        # Short form -> long form, from other docs, for docs that use a short form undefined
        # (`set_corpus_long_forms`; stored with the pipeline).
        self.corpus_long_forms: Dict[str, str] = {}
        # Whether the entity index lags the weights (after an update, or new entity texts).
        self._stale = False
        # Training state: the corpus's gold mentions, and the update count their vectors
        # were encoded at (None: no current vectors).
        self.corpus = TrainingMentions()
        self._updates = 0
        self._corpus_encoded_at: Optional[int] = None
        self._rng = np.random.default_rng(settings.seed)
        # Mention vectors kept across passes, inside `reusing_mention_vectors` only.
        self._mention_vectors: Optional[Dict[MentionInput, np.ndarray]] = None

    def _settings_changed(self) -> None:
        if self.retriever is not None and self.retriever.configure(self.settings):
            self._stale = True

    # Knowledge base and index -----------------------------------------------------

    @property
    def kb(self) -> Optional[BaseEntityStore]:
        return None if self.retriever is None else self.retriever.kb

    def set_kb(self, kb: BaseEntityStore) -> None:
        self.retriever = EntityRetriever(kb, self.settings, entity_triplets=self._entity_triplets)
        self._stale = True

    def _require_retriever(self) -> EntityRetriever:
        if self.retriever is None:
            raise ArboError(
                f"'{self.name}' has no KB: call nlp.initialize() with "
                "[initialize.components.<name>.kb_loader] set, or load a saved pipeline."
            )
        return self.retriever

    def _initialize_model(self) -> None:
        # TF-IDF candidates need no dual encoder: such a pipeline neither loads nor ships one.
        if self.settings.uses_dense:
            self.model.initialize()

    def _encoder(self) -> DualEncoder:
        """The dual encoder, set to run at the configured `precision`. A TF-IDF pipeline
        switched to dense candidates builds the configured (untrained) encoder here."""
        if not is_built(self.model):
            if not self.settings.uses_dense:
                raise ArboError(
                    f"'{self.name}' takes its candidates from TF-IDF (candidate_source = 'tfidf') and "
                    "has no dual encoder to train or encode with: use candidate_source 'dense' or 'hybrid'.")
            self.model.initialize()
        module = get_module(self.model)
        module.set_precision(resolve_precision(self.settings.precision, module.device))
        return module

    def _encoder_fingerprint(self, entities_only: bool = False) -> str:
        return self._encoder().fingerprint(entities_only)

    def index_fingerprint(self) -> str:
        """What the entity vectors depend on (entity-side weights, KB, entity texts): equal
        for two linkers that encode the same vectors."""
        return self._require_retriever().fingerprint(self._encoder_fingerprint(entities_only=True))

    def refresh_index(self, progress: bool = True, vectors: Optional[np.ndarray] = None) -> None:
        """Re-encode every entity with the current weights and rebuild the index; or index
        `vectors` of `retriever.entity_texts()` encoded elsewhere (`encode_entities_on_ray`)."""
        retriever = self._require_retriever()
        retriever.refresh(lambda inputs: self.encode_entities(inputs, progress), self._encoder_fingerprint(True),
                          vectors=vectors)
        self._stale = False

    def update_kb(self, add: Iterable[Entity] = (), remove: Iterable[str] = (), *,
                  store_dir: Optional[PathLike] = None) -> KBUpdate:
        """Add entities (one whose id the KB has replaces it) and remove ids without retraining:
        only the changed rows are encoded and indexed, and new entities are linked zero-shot at
        once. An on-disk KB is written anew to `store_dir` (default: a temporary directory,
        which saving the pipeline copies)."""
        retriever = self._require_retriever()
        add = list(add)
        self.ensure_fresh()  # an index behind the weights is rebuilt first, then updated
        update = plan_update(retriever.kb, add, remove)
        kb = updated_store(retriever.kb, update, add, store_dir)
        retriever.apply_update(kb, update, self.encode_entities, self._encoder_fingerprint(True))
        if len(self.corpus):
            self.corpus = self.corpus.remapped(update.row_map)
        return update

    def _recheck_stale(self) -> None:
        """After updates, the index is still current when they left the entity-side weights
        alone (a frozen, separate entity tower): then nothing is re-encoded."""
        if (self._stale and self.retriever is not None and self.retriever.dense is not None and is_built(self.model)
                and self.retriever.is_current(self._encoder_fingerprint(True))):
            self._stale = False

    def ensure_fresh(self) -> None:
        """Entity vectors go stale with optimizer steps on the entity side: re-encode before they are used."""
        retriever = self._require_retriever()
        self._recheck_stale()
        if self.settings.uses_dense and (self._stale or retriever.dense is None):
            self.refresh_index()
        if self.settings.uses_dense and not retriever.dictionary_is_encoded:
            retriever.encode_dictionary(self.encode_entities)

    def _require_kb(self) -> BaseEntityStore:
        return self._require_retriever().kb

    def _initialize(self, examples: List[Example]) -> None:
        self._check_knowledge_units()
        limits = self.objective.measured_limits() if self.objective is not None else None
        if limits:
            logger.warning("%s: %s", self.name, limits)
        self.set_training_mentions(eg.reference for eg in examples)
        retriever = self._require_retriever()
        kb_dir = retriever.kb.path
        if self.settings.uses_dense:
            if kb_dir and retriever.load_prebuilt(kb_dir, self._encoder_fingerprint(True)):
                self._stale = False
            else:
                self.refresh_index()
        if self.settings.uses_tfidf:
            retriever.ensure_tfidf()

    def set_training_mentions(self, docs: Iterable[Doc]) -> None:
        """Keep the gold mentions of `docs`: the arborescence objective's graph nodes, and
        with `transductive` the clustering's anchors (stored with the pipeline)."""
        kb = self._require_retriever().kb
        linked = [(ent, row) for doc in docs for ent in doc.ents if (row := gold_row(kb, ent.kb_id_)) is not None]
        # One call, so each doc's abbreviations are found once rather than once per mention.
        inputs = self.mention_inputs([ent for ent, _ in linked])
        self.corpus = TrainingMentions.collect((ent, mention, row) for (ent, row), mention in zip(linked, inputs))
        self._corpus_encoded_at = None

    def set_dictionary(self, docs: Iterable[Doc]) -> int:
        """Add the gold mentions of `docs` as extra names of their entities, searched beside
        the KB's (BioSyn's dictionary augmentation, weighted by `dictionary_offset`), and
        return how many distinct names there are. Composite and NIL mentions are left out;
        with `use_long_form` an abbreviation is stored as its long form, as it is read."""
        retriever = self._require_retriever()
        linked = [(ent, retriever.kb.row(ent.kb_id_)) for doc in docs for ent in doc.ents
                  if ent.kb_id_ != NIL and ent.kb_id_ in retriever.kb]
        inputs = self.mention_inputs([ent for ent, _ in linked])
        retriever.set_dictionary([(m.mention, row) for m, (_, row) in zip(inputs, linked)])
        return len(retriever.dictionary)

    def set_corpus_long_forms(self, docs: Iterable[Doc]) -> int:
        """Learn the long forms that `docs` define, to read a short form that its own doc does
        not define (with `use_long_form`), and return how many short forms there are. Only
        text is read: unlabelled docs, the ones being linked included, serve as well."""
        self.corpus_long_forms = corpus_long_forms(docs, self._long_form_finder())
        return len(self.corpus_long_forms)

    def _long_form_finder(self) -> LongForms:
        if self._long_forms is None:
            self._long_forms = LongForms(self.vocab)
        return self._long_forms

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

    # Encoding -------------------------------------------------------------------------

    def _graph_sides(self) -> Tuple[str, ...]:
        """The inputs the model's graph towers read (none before the model is built)."""
        return get_module(self.model).knowledge_sides if is_built(self.model) else ()

    def _knowledge_sides(self) -> Tuple[str, ...]:
        """The inputs that get triplets: those the model's graph towers read."""
        return () if self.knowledge_units is None else self._graph_sides()

    def _check_knowledge_units(self) -> None:
        if self._graph_sides() and self.knowledge_units is None:
            raise ArboError(
                f"'{self.name}' has a graph tower but no knowledge units to build its graphs from: set "
                f'[components.{self.name}.knowledge_units] @misc = "spacy_arbo.knowledge_units.v1".')

    def _entity_triplets(self, entity: Entity) -> List[Triplet]:
        if self.knowledge_units is None or "entities" not in self._knowledge_sides():
            return []
        return self.knowledge_units.entities(entity, self._require_kb())

    def mention_inputs(self, spans: Sequence[Span]) -> List[MentionInput]:
        """What the mention tower reads; with `use_long_form`, an abbreviation defined in
        its doc (else in the corpus of `set_corpus_long_forms`) is read as its long form (in
        training and inference alike); with a graph tower on mentions, the knowledge units
        of its sentence."""
        context = self.settings.context_chars
        units = self.knowledge_units.mentions if "mentions" in self._knowledge_sides() else None
        # Per doc, read once: its text (`Doc.text` joins every token again) and its short forms.
        per_doc: Dict[int, Tuple[str, Optional[SpelledOut]]] = {}
        inputs = []
        for span in spans:
            cached = per_doc.get(id(span.doc))
            if cached is None:
                text = span.doc.text
                spelled = (SpelledOut(text, self._long_form_finder()(span.doc), self.corpus_long_forms)
                           if self.settings.use_long_form else None)
                cached = per_doc[id(span.doc)] = (text, spelled)
            text, spelled = cached
            long_form = spelled(span) if spelled is not None else None
            inputs.append(mention_input(span, context, long_form, units(span) if units else (), text))
        return inputs

    def encode_mentions(self, mentions: Sequence[MentionInput], progress: bool = False) -> np.ndarray:
        kept = self._mention_vectors
        unseen = list(mentions) if kept is None else [m for m in dict.fromkeys(mentions) if m not in kept]
        vectors = encode_by_length(
            unseen, lambda batch: self.model.ops.to_numpy(self.model.predict((batch, []))[0]),
            lambda m: len(m.left) + len(m.mention) + len(m.right), self._encoder().dim,
            self.settings.batch_size, progress=progress, desc=f"{self.name}: encoding mentions")
        if kept is None:
            return vectors
        kept.update(zip(unseen, vectors))
        return np.stack([kept[m] for m in mentions]) if mentions else vectors

    @contextmanager
    def reusing_mention_vectors(self) -> Iterator[None]:
        """Within the block a mention read again (the same text, context and long form) is not
        encoded again: for passes over the same docs that differ only after the encoder, such as
        each threshold of `tune-threshold --end-to-end`. The weights must not change inside."""
        self._mention_vectors = {}
        try:
            yield
        finally:
            self._mention_vectors = None

    def encode_entities(self, entities: Sequence[EntityInput], progress: bool = False) -> np.ndarray:
        return encode_by_length(
            entities, lambda batch: self.model.ops.to_numpy(self.model.predict(([], batch))[1]),
            entity_length, self._encoder().dim,
            self.settings.batch_size, progress=progress, desc=f"{self.name}: encoding entities")

    # Prediction ---------------------------------------------------------------------

    def _spans_to_link(self, doc: Doc) -> List[Span]:
        discard = set(self.settings.labels_discard)
        return [ent for ent in doc.ents if ent.label_ not in discard and (self.settings.overwrite or not ent.kb_id_)]

    def candidates_for(self, mentions: Sequence[MentionInput], vectors: Optional[np.ndarray] = None) -> List[Candidates]:
        retriever = self._require_retriever()
        if self.settings.uses_dense:
            self.ensure_fresh()
            vectors = self.encode_mentions(mentions) if vectors is None else vectors
        return retriever.candidates(vectors, [m.mention for m in mentions])

    def predict(self, docs: Iterable[Doc]) -> List[List[Link]]:
        docs = list(docs)
        spans_per_doc = [self._spans_to_link(doc) for doc in docs]
        located = [(d, s) for d, spans in enumerate(spans_per_doc) for s in spans]
        links: List[Link] = [Link([], NIL) for _ in located]
        linkable = [i for i, (_, span) in enumerate(located) if not WORDLESS.match(span.text)]
        if linkable:
            spans = [located[i][1] for i in linkable]
            mentions = self.mention_inputs(spans)
            parts = [composite_parts(s) if self.settings.composites != "whole" else [] for s in spans]
            part_mentions = [replace(m, mention=text) for m, texts in zip(mentions, parts) for text in texts]
            if self.settings.linking == "independent":
                ranked = self.candidates_for(mentions + part_mentions)
                decided = [Link(c, best_above(c, self.settings.threshold)) for c in ranked[:len(mentions)]]
                part_candidates = ranked[len(mentions):]
            else:
                decided = self._cluster([located[i] for i in linkable], mentions)
                part_candidates = self.candidates_for(part_mentions) if part_mentions else []
            self._split_composites(decided, parts, part_candidates)
            for i, link in zip(linkable, decided):
                links[i] = link
        remaining = iter(links)
        return [[next(remaining) for _ in spans] for spans in spans_per_doc]

    def _split_composites(self, links: List[Link], parts: List[List[str]], part_candidates: List[Candidates]) -> None:
        """Link a coordinated mention to each part's entity when they differ (`composites`)."""
        remaining = iter(part_candidates)
        for link, texts in zip(links, parts):
            ranked = [next(remaining) for _ in texts]
            decided = [(text, best_above(c, self.settings.threshold), c) for text, c in zip(texts, ranked)]
            found = [(text, kb_id, c) for text, kb_id, c in decided if kb_id != NIL]
            ids = list(dict.fromkeys(kb_id for _, kb_id, _ in found))
            if len(ids) < 2:
                continue
            if self.settings.composites == "best" and link.kb_id != NIL:
                if np.mean([c[0][1] for _, _, c in found]) < link.candidates[0][1]:
                    continue
            link.kb_id = "|".join(ids)
            link.parts = decided

    def _cluster(self, located: List[Tuple[int, Span]], mentions: List[MentionInput]) -> List[Link]:
        """Clustering-based linking (`linking.mention_graph`): each mention links to its
        cluster's entity, clusters without one are NIL (discovered entities)."""
        kb = self._require_retriever().kb
        vectors = self.encode_mentions(mentions)
        candidates = self.candidates_for(mentions, vectors)
        if self.settings.clustering_scope == "batch":
            groups = [list(range(len(located)))]
        else:
            by_doc: Dict[int, List[int]] = {}
            for i, (d, _) in enumerate(located):
                by_doc.setdefault(d, []).append(i)
            groups = list(by_doc.values())
        anchors = self._anchors() if self.settings.transductive else None
        clustered = cluster_mentions(
            vectors, [(kb.row(c[0][0]), c[0][1]) if c else None for c in candidates], groups,
            knn=self.settings.knn_mentions, graph=self.settings.graph, min_similarity=self.settings.min_similarity,
            anchor_vectors=None if anchors is None else anchors.vectors,
            anchor_rows=None if anchors is None else anchors.gold_rows,
        )
        links = []
        for ranked, result in zip(candidates, clustered):
            path = [self._describe_step(step, located, anchors) for step in result.path]
            if path and not isinstance(path[0], str):
                path.insert(0, NIL)
            links.append(Link(ranked, kb.ids[result.entity] if result.entity >= 0 else NIL, result.cluster, path))
        return links

    def _describe_step(self, step: Tuple[str, int], located: List[Tuple[int, Span]],
                       anchors: Optional[TrainingMentions]) -> Any:
        kind, index = step
        if kind == "entity":
            return self._require_retriever().kb.ids[index]
        if kind == "anchor" and anchors is not None:
            return (-1, -1, -1, anchors.mentions[index].mention)
        doc_index, span = located[index]
        return (doc_index, span.start_char, span.end_char, span.text)

    def set_annotations(self, docs: Iterable[Doc], links_per_doc: List[List[Link]]) -> None:
        view = (self.settings.kb_ents_threshold, self.settings.max_entities_per_mention)
        for doc, links in zip(docs, links_per_doc):
            for span, link in zip(self._spans_to_link(doc), links):
                write_link(span, link.kb_id, link.candidates, *view)
                span._.arbo_cluster = link.cluster
                span._.arbo_path = link.path
                span._.arbo_parts = link.parts
                if link.parts:
                    firsts = {c[0][0]: c[0] for _, _, c in link.parts if c}
                    ranked = [*firsts.values(), *(c for c in link.candidates if c[0] not in firsts)]
                    span._.kb_ents = kb_ents(ranked, *view)

    # Training and scoring ------------------------------------------------------------

    def _ensure_ents(self, examples: Iterable[Example]) -> List[Example]:
        """With `use_gold_ents`, copy the gold entities (without their ids) onto the
        predicted docs, so a pipeline without NER can be trained and scored."""
        return with_gold_mentions(examples) if self.settings.use_gold_ents else list(examples)

    def _score_with_gold_ents(self, examples: Iterable[Example], **kwargs) -> Dict[str, Any]:
        self.ensure_fresh()
        examples = self._ensure_ents(examples)
        if self.settings.use_gold_ents:
            docs = list(self.pipe(eg.predicted for eg in examples))
            for eg, doc in zip(examples, docs):
                eg.predicted = doc
        return self._scorer(examples, **kwargs)

    def training_batch(self, examples: Iterable[Example]) -> TrainingBatch:
        """Gold (mention, entity) pairs of the examples, plus sampled KB aliases."""
        retriever = self._require_retriever()
        spans, rows = [], []
        for eg in examples:
            gold_by_offset = {(e.start_char, e.end_char): e for e in eg.reference.ents}
            for span in self._spans_to_link(eg.predicted):
                gold = gold_by_offset.get((span.start_char, span.end_char))
                row = gold_row(retriever.kb, gold.kb_id_) if gold is not None else None
                if row is not None:
                    spans.append(span)
                    rows.append(row)
        mentions = self.mention_inputs(spans)
        corpus_ids = [self.corpus.keys.get(mention_key(s), -1) for s in spans]
        n_aliases = self.settings.alias_pairs_per_batch
        if n_aliases:
            pairs = retriever.alias_pairs()
            for i in self._rng.choice(len(pairs), size=min(n_aliases, len(pairs)), replace=False):
                mentions.append(MentionInput("", pairs[i][0], ""))
                rows.append(pairs[i][1])
                corpus_ids.append(-1)
        return TrainingBatch(mentions, np.asarray(rows, dtype=np.int64), np.asarray(corpus_ids, dtype=np.int64))

    def refresh_corpus_vectors(self) -> None:
        """Re-encode the cached training mentions (ArboEL's graph nodes) with current weights."""
        if len(self.corpus):
            self.corpus.vectors = self.encode_mentions(self.corpus.mentions, progress=True)
            self.corpus.vectors_fingerprint = self._encoder_fingerprint()
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
        if self._updates % self.settings.refresh_every == 0:
            # Negatives are mined from the current index and mention cache, re-made every N steps.
            if self.objective.uses_index:
                self.ensure_fresh()
            if self.objective.uses_corpus_vectors:
                self.refresh_corpus_vectors()
        if self.objective.entity_cache != "none" and self._require_retriever().entity_vectors is None:
            self.refresh_index()  # e.g. a prebuilt index: no vectors of its own yet
        state = TrainingState(self._encoder(), self._require_retriever(), self.corpus, self._rng)
        loss = self.objective(state, batch)
        loss.backward()
        self._updates += 1
        self._stale = True
        if sgd not in (None, False):
            self.finish_update(sgd)
        losses[self.name] += float(loss.detach())
        return losses

    def use_params(self, params: dict) -> Iterator[None]:
        """spaCy scores and saves under the optimizer's parameter averages (`use_averages = true`):
        vectors made before the swap, or inside it, belong to other weights. The index is then
        re-encoded only if the entity-side weights differ (never with a frozen entity tower).
        A generator, not a context manager: `Language.use_params` steps it with next()."""
        with self.model.use_params(params):
            self._weights_swapped()
            yield
        self._weights_swapped()

    def _weights_swapped(self) -> None:
        self._stale = True
        self._corpus_encoded_at = None

    # Serialization --------------------------------------------------------------------
    # Settings live in the pipeline's config; a component writes its weights, the KB, the
    # indexes (the dense one only while it matches the weights: never re-encoded here) and
    # the transductive anchors.

    def _index_is_current(self) -> bool:
        self._recheck_stale()
        if self._stale and self.retriever is not None and self.retriever.dense is not None:
            logger.warning("%s: the entity index lags the weights and is not saved; it is re-encoded "
                           "when the saved pipeline is first used.", self.name)
        return not self._stale

    def to_bytes(self, *, exclude: Iterable[str] = SimpleFrozenList()) -> bytes:
        retriever = self._require_retriever()
        serializers = {
            "model": lambda: self.model.to_bytes() if is_built(self.model) else b"",
            "kb": retriever.kb.to_bytes,
            "indexes": lambda: srsly.msgpack_dumps(retriever.index_bytes(include_dense=self._index_is_current())),
            "anchors": lambda: self._anchors().to_bytes(retriever.kb) if self._keeps_anchors() else b"",
            "long_forms": lambda: srsly.msgpack_dumps(self.corpus_long_forms),
        }
        return util.to_bytes(serializers, exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = SimpleFrozenList()) -> "ArboLinker":
        deserializers = {
            "model": lambda b: self.model.from_bytes(b) if b else None,
            "kb": lambda b: self.set_kb(EntityStore.from_bytes(b)),
            "indexes": lambda b: self._require_retriever().load_index_bytes(srsly.msgpack_loads(b)),
            "anchors": lambda b: self._load_anchors(TrainingMentions.from_bytes(b, self.kb) if b else None),
            "long_forms": lambda b: self._load_long_forms(srsly.msgpack_loads(b), "bytes"),
        }
        util.from_bytes(bytes_data, deserializers, exclude)
        self._after_load()
        return self

    def to_disk(self, path, *, exclude: Iterable[str] = SimpleFrozenList()) -> None:
        retriever = self._require_retriever()
        serializers = {
            "kb": retriever.kb.to_disk,
            "indexes": lambda p: retriever.to_disk(p, include_dense=self._index_is_current()),
        }
        if is_built(self.model):
            serializers["model"] = self.model.to_disk
        if self._keeps_anchors():
            serializers["anchors"] = lambda p: self._anchors().to_disk(p, retriever.kb)
        if self.corpus_long_forms:
            serializers["long_forms"] = self._write_long_forms
        util.to_disk(path, serializers, exclude)

    def from_disk(self, path, *, exclude: Iterable[str] = SimpleFrozenList()) -> "ArboLinker":
        path = Path(path)
        if self._load_legacy_settings(path):
            self._load_legacy(path)
            return self
        deserializers = {
            "model": lambda p: self.model.from_disk(p) if p.exists() else None,
            "kb": lambda p: self.set_kb(open_store(p)),
            "indexes": lambda p: self._require_retriever().from_disk(p),
            "anchors": lambda p: self._load_anchors(TrainingMentions.from_disk(p, self.kb) if p.exists() else None),
            "long_forms": self._read_long_forms,
        }
        util.from_disk(path, deserializers, exclude)
        self._after_load()
        return self

    def _keeps_anchors(self) -> bool:
        return self.settings.transductive and bool(len(self.corpus))

    def _write_long_forms(self, path: Path) -> None:
        with atomic_path(path) as tmp:
            srsly.write_json(tmp, self.corpus_long_forms)

    def _read_long_forms(self, path: Path) -> None:
        if not path.exists():
            self.corpus_long_forms = {}
            return
        self._load_long_forms(read_json(path), str(path))

    def _load_long_forms(self, forms: Any, origin: str) -> None:
        if not isinstance(forms, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in forms.items()):
            raise ArboError(f"{self.name}: the corpus long forms in {origin} are not an object of short form -> "
                            "long form strings.")
        self.corpus_long_forms = dict(forms)

    def _load_anchors(self, anchors: Optional[TrainingMentions]) -> None:
        if anchors is not None:
            self.corpus = anchors

    def _after_load(self) -> None:
        """A loaded dense index or anchor vectors that other weights (or, for the index, other
        entity texts) made are re-encoded on first use (e.g. after `spacy.load(path,
        config={... index_aliases: true})`)."""
        retriever = self.retriever
        if retriever is None:  # the KB was excluded
            return
        self._check_knowledge_units()
        if not (self.settings.uses_dense or is_built(self.model)):
            self._stale = False
            return
        if len(self.corpus):
            current = self.corpus.vectors_fingerprint == self._encoder_fingerprint()
            self._corpus_encoded_at = self._updates if current else None
        self._stale = self.settings.uses_dense and not retriever.is_current(self._encoder_fingerprint(True))
        if self._stale and retriever.dense is not None:
            logger.info("%s: the saved entity index does not match the settings or weights; it is "
                        "re-encoded on first use.", self.name)

    def _load_legacy(self, path: Path) -> None:
        """spacy-arbo 0.1 kept the indexes beside the model."""
        logger.warning("%s: '%s' was saved by spacy-arbo 0.1, whose settings file overrides the config; "
                       "re-save the pipeline to change settings at load time.", self.name, path)
        self.model.from_disk(path / "model")
        self.set_kb(open_store(path / "kb"))
        self._require_retriever().from_disk(path)
        if (path / "anchors").exists():
            self._load_anchors(TrainingMentions.from_disk(path / "anchors", self.kb))
        self._after_load()


def entity_length(entity: EntityInput) -> int:
    """What `encode_entities` groups texts into batches by."""
    return len(entity.title) + len(entity.description)


def arbo_linkers(nlp: Language) -> List[ArboLinker]:
    """The pipeline's arbo_linker components, in pipeline order."""
    return [proc for _, proc in nlp.pipeline if isinstance(proc, ArboLinker)]
