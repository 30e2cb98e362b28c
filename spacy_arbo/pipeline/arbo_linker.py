"""`arbo_linker`: links `doc.ents` to the KB candidates its retriever finds for them.

The pipe keeps spaCy's API and hands the work on: `LinkerEncoder` runs the dual encoder and keeps
the weights version that says which vectors are current, `MentionReader` says what a mention reads
as, `EntityRetriever` turns entity texts into indexes and mentions into candidates, `link_decisions`
turns candidates into links, `RetrieverTraining` makes batches and paces the re-mining of negatives.
"""
from pathlib import Path
from typing import Any, Callable, ContextManager, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.training import Example, validate_examples
from spacy.util import SimpleFrozenList
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer

from ..component_settings import setting_defaults, with_setting_parameters
from ..confidence.label_free import LabelFreeConfidence, NameLinking
from ..encoders.knowledge_units import KnowledgeUnits
from ..encoders.linker_encoder import LinkerEncoder
from ..encoders.vector_cache import VectorCache, default_cache
from ..encoders.templates import EntityInput, MentionInput, Triplet
from ..kb.entities import Entity
from ..kb.store import BaseEntityStore
from ..kb.updates import KBUpdate
from ..retrieval.candidates import Candidates
from ..retrieval.retriever import EntityRetriever
from ..torch_model import get_module, is_built
from ..training.mentions import TrainingMentions
from ..training.objectives import Objective
from ..training.retriever_training import RetrieverTraining
from ..util import ArboError, PathLike
from .common.configured_pipe import ConfiguredPipe
from .common.gold_ents import with_gold_mentions
from .common.links import install_extensions
from .common.mention_finders import NoMentionFinderWarning
from .linker import linker_files
from .linker.exact_names import ExactNames, known_links
from .linker.induced_variants import InducedVariants
from .linker.link_decisions import Link, cluster_links, composite_mentions, nearest_links, split_composites, write_decision
from .linker.linker_settings import DEFAULT_MODEL, LinkerSettings
from .linker.mention_inputs import MentionReader


@Language.factory(
    "arbo_linker",
    requires=["doc.ents"],
    assigns=["token.ent_kb_id", "span._.kb_candidates", "span._.kb_ents", "span._.kb_confidence", "span._.arbo_cluster",
             "span._.arbo_path", "span._.arbo_parts"],
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
    install_extensions()
    return ArboLinker(nlp.vocab, model, name, nlp=nlp, objective=objective, scorer=scorer,
                      knowledge_units=knowledge_units, settings=LinkerSettings(**settings))


class ArboLinker(ConfiguredPipe):
    """Links `doc.ents` to KB entities retrieved by a dual encoder over a FAISS index.

    Writes `ent.kb_id_` (NIL below `threshold`), `span._.kb_candidates`, `span._.kb_ents` (scispacy's
    shape: `[(kb_id, score), ...]`, best first, at most `max_entities_per_mention`, none below
    `kb_ents_threshold`) and `span._.kb_confidence`. A composite split into parts gets "ID1|ID2",
    `span._.arbo_parts` (per part: text, kb_id, ranked candidates), each part's best first in `kb_ents`."""

    def __init__(self, vocab: Vocab, model: Model, name: str = "arbo_linker", *, nlp: Optional[Language] = None,
                 objective: Optional[Objective] = None, scorer: Optional[Callable] = None,
                 knowledge_units: Optional[KnowledgeUnits] = None, settings: LinkerSettings = LinkerSettings()) -> None:
        super().__init__(vocab, model, name, nlp=nlp, scorer=scorer, settings=settings)
        # Bound methods, not lambdas, so that the pipe pickles.
        self.encoder = LinkerEncoder(model, name, self._current_settings)
        self.read_mentions = MentionReader(vocab, name, self._current_settings, knowledge_units, self._graph_sides)
        self.training = RetrieverTraining(objective, settings.seed)
        self.exact_names = ExactNames(self.require_retriever)
        self.kb_names = self.exact_names.kb_names  # what the features of its links read (`KBNames`)
        self.induced_variants = InducedVariants(self.require_retriever)
        self.retriever: Optional[EntityRetriever] = None
        self.no_mention_finder = NoMentionFinderWarning()
        self.confidence = LabelFreeConfidence(name, self._name_linking, self.confidence_key, self.index_is_current)

    def _current_settings(self) -> LinkerSettings:
        return self.settings

    def _graph_sides(self) -> Tuple[str, ...]:
        """The inputs the model's graph towers read (none before the model is built)."""
        return get_module(self.model).knowledge_sides if is_built(self.model) else ()

    def _settings_changed(self) -> None:
        if self.retriever is not None:
            self.retriever.configure(self.settings)
        self.confidence.refit()

    @property
    def kb(self) -> Optional[BaseEntityStore]:
        return None if self.retriever is None else self.retriever.kb

    @property
    def corpus(self) -> TrainingMentions:
        """The training mentions: the arborescence objective's graph nodes, transductive clustering's anchors."""
        return self.training.corpus

    @property
    def corpus_long_forms(self) -> Dict[str, str]:
        return self.read_mentions.corpus_long_forms
    # Knowledge base and index -----------------------------------------------------

    def set_kb(self, kb: BaseEntityStore) -> None:
        self.retriever = EntityRetriever(kb, self.settings, entity_triplets=self._entity_triplets)

    def _entity_triplets(self, entity: Entity) -> List[Triplet]:
        return self.read_mentions.entity_triplets(entity, self._require_kb())

    def _require_kb(self) -> BaseEntityStore:  # what ConfiguredPipe checks after initialize
        return self.require_retriever().kb

    def require_retriever(self) -> EntityRetriever:
        """The retriever, or an error that says how to give the pipe a KB."""
        if self.retriever is None:
            raise ArboError(f"'{self.name}' has no KB: call nlp.initialize() with "
                            "[initialize.components.<name>.kb_loader] set, or load a saved pipeline.")
        return self.retriever

    def index_fingerprint(self) -> str:
        """What the entity vectors depend on: entity-side weights, KB and entity texts."""
        return self.require_retriever().fingerprint(self.encoder.fingerprint(entities_only=True))

    def index_is_current(self) -> bool:
        """Whether the dense index (if any) holds the vectors of the current weights."""
        retriever = self.require_retriever()
        return retriever.dense is None or (is_built(self.model) and retriever.is_current(
            self.encoder.fingerprint(entities_only=True)))

    def refresh_index(self, progress: bool = True, vectors: Optional[np.ndarray] = None,
                      cache: Optional[VectorCache] = None) -> None:
        """Re-encode every entity (through `cache`), or index `vectors` of `retriever.entity_texts()`."""
        self.require_retriever().refresh(lambda inputs: self.encoder.encode_entities(inputs, progress, cache),
                                          self.encoder.fingerprint(entities_only=True), vectors=vectors)

    def ensure_fresh(self) -> None:
        """Re-encode the entity vectors that lag the weights before they are used."""
        if self.require_retriever() and self.settings.uses_dense:
            self.retriever.ensure_fresh(self.encoder)

    def update_kb(self, add: Iterable[Entity] = (), remove: Iterable[str] = (), *,
                  store_dir: Optional[PathLike] = None) -> KBUpdate:
        """Add entities (replacing those with the same id) and remove ids without retraining: only
        changed rows are encoded, and new entities are linked zero-shot at once. An on-disk KB is
        written anew to `store_dir` (default: a temporary directory that saving copies)."""
        self.ensure_fresh()  # an index behind the weights is rebuilt first, then updated
        update = self.require_retriever().update_kb(add, remove, store_dir,
                                                    self.encoder if self.settings.uses_dense else None)
        if len(self.corpus):
            self.training.corpus = self.corpus.remapped(update.row_map)
        return update

    def _initialize_model(self) -> None:
        # TF-IDF candidates need no dual encoder: such a pipeline neither loads nor ships one.
        if self.settings.uses_dense:
            self.model.initialize()
            self.encoder.weights_changed()

    def _initialize(self, examples: List[Example]) -> None:
        self.read_mentions.check_knowledge_units()
        self.training.warn_of_limits(self.name)
        self.set_training_mentions(eg.reference for eg in examples)
        retriever, cache = self.require_retriever(), default_cache()
        if self.settings.uses_dense and not (retriever.kb.path and retriever.load_prebuilt(
                retriever.kb.path, self.encoder.fingerprint(entities_only=True))):
            self.refresh_index(cache=cache)
        if self.settings.uses_tfidf:
            retriever.ensure_tfidf()
        self.confidence.refit(cache=cache)
        self.no_mention_finder.initialized(self.nlp, self, self.name, examples)

    def confidence_key(self) -> str:
        """What the confidence calibration depends on: the weights and the scoring settings."""
        weights = self.encoder.fingerprint() if self.settings.uses_dense and is_built(self.model) else ""
        return f"{weights}:{self.settings.scoring_key()}"

    def _name_linking(self) -> Optional[NameLinking]:
        """What the label-free confidence is fitted with (this pipe's links of its KB's names), while it is on."""
        on = self.settings.confidence and self.retriever is not None
        return NameLinking(self._require_kb(), self.nlp, self.pipe, self.exact_names, self.settings) if on else None

    def set_training_mentions(self, docs: Iterable[Doc]) -> None:
        """Keep the gold mentions of `docs`: ArboEL's graph nodes and transductive anchors."""
        self.training.collect_mentions(docs, self.require_retriever(), self.read_mentions)

    def set_dictionary(self, docs: Iterable[Doc]) -> int:
        """Add the gold mentions of `docs` as extra names of their entities (BioSyn's dictionary
        augmentation, weighted by `dictionary_offset`); returns how many distinct names there are."""
        retriever = self.require_retriever()
        retriever.set_dictionary(self.read_mentions.gold_names(docs, retriever.kb))
        return len(retriever.dictionary)

    def set_corpus_long_forms(self, docs: Iterable[Doc]) -> int:
        """Learn the long forms `docs` define, for short forms a doc uses undefined (with
        `use_long_form`); only text is read, so unlabelled docs serve as well."""
        return self.read_mentions.learn_corpus_long_forms(docs)

    # Encoding: `LinkerEncoder` and `MentionReader` do it ---------------------------------

    def mention_inputs(self, spans: Sequence[Span]) -> List[MentionInput]:
        return self.read_mentions(spans)

    def encode_mentions(self, mentions: Sequence[MentionInput], progress: bool = False) -> np.ndarray:
        return self.encoder.encode_mentions(mentions, progress)

    def encode_entities(self, entities: Sequence[EntityInput], progress: bool = False) -> np.ndarray:
        return self.encoder.encode_entities(entities, progress)

    def reusing_mention_vectors(self) -> ContextManager[None]:
        return self.encoder.reusing_mention_vectors()

    # Prediction ---------------------------------------------------------------------

    def _spans_to_link(self, doc: Doc) -> List[Span]:
        settings = self.settings
        return [ent for ent in doc.ents if settings.links_label(ent.label_) and (settings.overwrite or not ent.kb_id_)]

    def candidates_for(self, mentions: Sequence[MentionInput], vectors: Optional[np.ndarray] = None) -> List[Candidates]:
        retriever = self.require_retriever()
        if self.settings.uses_dense:
            self.ensure_fresh()
            vectors = self.encoder.encode_mentions(mentions) if vectors is None else vectors
        return retriever.candidates(vectors, [m.mention for m in mentions])

    def predict(self, docs: Iterable[Doc]) -> List[List[Link]]:
        settings = self.settings
        docs = self.no_mention_finder.check(self.name, docs)
        spans_per_doc = [self._spans_to_link(doc) for doc in docs]
        located = [(d, s) for d, spans in enumerate(spans_per_doc) for s in spans]
        links, linkable, mentions = known_links(self.nlp, self, [span for _, span in located], settings,
                                                self.read_mentions, self.exact_names)
        if linkable:
            spans = [located[i][1] for i in linkable]
            parts, part_mentions = composite_mentions(spans, mentions, settings.composites)
            if settings.linking == "independent":
                ranked = self.candidates_for(mentions + part_mentions)
                decided = nearest_links(ranked[:len(mentions)], settings.threshold)
                part_candidates = ranked[len(mentions):]
            else:
                vectors = self.encoder.encode_mentions(mentions)
                anchors = self.training.anchors(self.encoder, self.name) if settings.transductive else None
                decided = cluster_links(self._require_kb(), [located[i] for i in linkable], vectors,
                                        self.candidates_for(mentions, vectors), settings, anchors)
                part_candidates = self.candidates_for(part_mentions) if part_mentions else []
            split_composites(decided, parts, part_candidates, settings.composites, settings.threshold)
            for i, link in zip(linkable, decided):
                links[i] = link
        remaining = iter(links)
        per_doc = [[next(remaining) for _ in spans] for spans in spans_per_doc]
        return self.induced_variants.relinked(spans_per_doc, per_doc, self.nlp, self) if settings.induced_variants else per_doc

    def set_annotations(self, docs: Iterable[Doc], links_per_doc: List[List[Link]]) -> None:
        linked = []
        for doc, links in zip(docs, links_per_doc):
            for span, link in zip(self._spans_to_link(doc), links):
                write_decision(span, link, self.settings.kb_ents_threshold, self.settings.max_entities_per_mention)
                linked.append(span)
        self.confidence.write(linked)

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

    def update(self, examples: Iterable[Example], *, drop: float = 0.0, sgd: Optional[Optimizer] = None,
               losses: Optional[Dict[str, float]] = None) -> Dict[str, float]:
        losses = {} if losses is None else losses
        losses.setdefault(self.name, 0.0)
        if self.training.objective is None:
            raise ArboError(f"'{self.name}' has no training objective configured.")
        examples = self._ensure_ents(examples)
        validate_examples(examples, f"{self.name}.update")
        batch = self.training.batch(examples, self._spans_to_link, self.require_retriever(), self.read_mentions,
                                    self.settings.alias_pairs_per_batch)
        if not len(batch):
            return losses
        loss = self.training.loss(batch, self.encoder, self.require_retriever(), self.settings.refresh_every)
        loss.backward()
        self.encoder.weights_changed()
        if sgd not in (None, False):
            self.finish_update(sgd)
        losses[self.name] += float(loss.detach())
        return losses

    def finish_update(self, sgd: Optimizer) -> None:
        super().finish_update(sgd)
        self.encoder.weights_changed()

    def use_params(self, params: dict) -> Iterator[None]:
        """spaCy scores and saves under the optimizer's parameter averages (`use_averages = true`).
        A generator, not a context manager: `Language.use_params` steps it with next()."""
        with self.model.use_params(params):
            self.encoder.weights_changed()
            yield
        self.encoder.weights_changed()

    # Serialization: `linker_files` says what each file holds ------------------------------

    def to_bytes(self, *, exclude: Iterable[str] = SimpleFrozenList()) -> bytes:
        self.confidence.refit(saving=True)
        return linker_files.to_bytes(self, exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = SimpleFrozenList()) -> "ArboLinker":
        linker_files.from_bytes(self, bytes_data, exclude)
        self.no_mention_finder.loaded(self.nlp, self)
        return self

    def to_disk(self, path, *, exclude: Iterable[str] = SimpleFrozenList()) -> None:
        self.confidence.refit(saving=True)
        linker_files.to_disk(self, Path(path), exclude)

    def from_disk(self, path, *, exclude: Iterable[str] = SimpleFrozenList()) -> "ArboLinker":
        linker_files.from_disk(self, Path(path), exclude)
        self.no_mention_finder.loaded(self.nlp, self)
        return self


def arbo_linkers(nlp: Language) -> List[ArboLinker]:
    """The pipeline's arbo_linker components, in pipeline order."""
    return [proc for _, proc in nlp.pipeline if isinstance(proc, ArboLinker)]
