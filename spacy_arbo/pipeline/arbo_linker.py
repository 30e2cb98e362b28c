"""`arbo_linker`: dense retrieval of KB candidates for every entity mention, and linking."""
import hashlib
from itertools import islice
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
from thinc.api import Config, Model
from tqdm import tqdm

from ..encoders.model import get_module
from ..encoders.templates import ENTITY_FIELDS, EntityInput, MentionInput, entity_inputs, mention_input
from ..kb.entities import NIL
from ..kb.index import FaissIndex
from ..kb.store import EntityStore
from ..kb.tfidf import TfidfAliasIndex
from ..util import ArboError
from .candidates import Candidates, fuse_candidates, rows_to_candidates

CANDIDATE_SOURCES = ("dense", "tfidf", "hybrid")
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
use_markers = true

[model.mention_tower.name]
@misc = "spacy_arbo.default_encoder_path.v1"
"""
)["model"]

for _attr in ("kb_candidates", "kb_ents"):
    if not Span.has_extension(_attr):
        Span.set_extension(_attr, default=None)


@Language.factory(
    "arbo_linker",
    requires=["doc.ents"],
    assigns=["token.ent_kb_id", "span._.kb_candidates", "span._.kb_ents"],
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
        "entity_fields": ["aliases"],
        "max_aliases": 8,
        "index": {"kind": "flat"},
        "index_aliases": False,
        "batch_size": 64,
        "use_gpu_index": None,
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
    scorer: Optional[Callable],
) -> "ArboLinker":
    return ArboLinker(
        nlp.vocab, model, name, candidate_source=candidate_source, top_k=top_k, threshold=threshold,
        labels_discard=labels_discard, overwrite=overwrite, use_gold_ents=use_gold_ents,
        context_chars=context_chars, use_long_form=use_long_form, entity_fields=entity_fields,
        max_aliases=max_aliases, index=index, index_aliases=index_aliases, batch_size=batch_size,
        use_gpu_index=use_gpu_index, scorer=scorer,
    )


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
        entity_fields: Sequence[str] = ("aliases",),
        max_aliases: int = 8,
        index: Optional[Dict[str, Any]] = None,
        index_aliases: bool = False,
        batch_size: int = 64,
        use_gpu_index: Optional[bool] = None,
        scorer: Optional[Callable] = None,
    ) -> None:
        if candidate_source not in CANDIDATE_SOURCES:
            raise ArboError(f"Unknown candidate_source '{candidate_source}'; expected one of {CANDIDATE_SOURCES}.")
        unknown = [f for f in entity_fields if f not in ENTITY_FIELDS]
        if unknown:
            raise ArboError(f"Unknown entity_fields {unknown}; expected a subset of {ENTITY_FIELDS}.")
        if top_k < 1 or batch_size < 1 or context_chars < 0:
            raise ArboError("top_k and batch_size must be positive and context_chars non-negative.")
        self.vocab = vocab
        self.model = model
        self.name = name
        self.cfg: Dict[str, Any] = {
            "candidate_source": candidate_source, "top_k": top_k, "threshold": threshold,
            "labels_discard": list(labels_discard), "overwrite": overwrite, "context_chars": context_chars,
            "use_long_form": use_long_form, "entity_fields": list(entity_fields), "max_aliases": max_aliases,
            "index": dict(index or {"kind": "flat"}), "index_aliases": index_aliases, "batch_size": batch_size,
            "use_gpu_index": use_gpu_index,
        }
        self.use_gold_ents = use_gold_ents
        self.kb: Optional[EntityStore] = None
        self.index: Optional[FaissIndex] = None
        self.tfidf: Optional[TfidfAliasIndex] = None
        self._scorer = scorer
        self.scorer = self._score_with_gold_ents if scorer is not None else None

    # Knowledge base and index -----------------------------------------------------

    def set_kb(self, kb: EntityStore) -> None:
        if not len(kb):
            raise ArboError(f"{self.name}: the KB is empty.")
        self.kb = kb

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
        texts = srsly.json_dumps([self.cfg[k] for k in ("entity_fields", "max_aliases", "index_aliases")])
        texts_hash = hashlib.sha1(texts.encode("utf8")).hexdigest()[:8]
        return f"encoder={get_module(self.model).fingerprint()} kb={self._require_kb().fingerprint()[:16]} texts={texts_hash}"

    def entity_texts(self) -> Tuple[List[EntityInput], np.ndarray]:
        """What the entity tower encodes, and which entity row each vector belongs to."""
        kb = self._require_kb()
        inputs = entity_inputs(kb, self.cfg["entity_fields"], self.cfg["max_aliases"])
        owners = list(range(len(kb)))
        if self.cfg["index_aliases"]:
            for row, entity in enumerate(kb):
                for alias in entity.aliases:
                    inputs.append(EntityInput(alias, inputs[row].description))
                    owners.append(row)
        return inputs, np.asarray(owners, dtype=np.int64)

    def refresh_index(self, progress: bool = True) -> None:
        """Re-encode every entity with the current weights and rebuild the index."""
        inputs, owners = self.entity_texts()
        batch_size = self.cfg["batch_size"]
        bar = tqdm(total=len(inputs), desc=f"{self.name}: encoding entities", unit="ent",
                   disable=not progress, leave=False)
        chunks = []
        for start in range(0, len(inputs), batch_size):
            batch = inputs[start: start + batch_size]
            chunks.append(self.model.ops.to_numpy(self.model.predict(([], batch))[1]))
            bar.update(len(batch))
        bar.close()
        # Index ids are entity rows, so an entity with several vectors appears once per vector.
        self.index = FaissIndex.build(
            np.concatenate(chunks).astype(np.float32), ids=owners, use_gpu=self.cfg["use_gpu_index"],
            fingerprint=self.index_fingerprint, **self.cfg["index"],
        )

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
        examples = list(islice(get_examples(), 10)) if get_examples is not None else []
        if examples:
            validate_examples(examples, f"{self.name}.initialize")
        self.model.initialize()
        kb_dir = getattr(kb, "path", None)
        if self.cfg["candidate_source"] != "tfidf":
            if not (kb_dir and self._load_prebuilt_index(Path(kb_dir))):
                self.refresh_index()
        if self.cfg["candidate_source"] != "dense":
            self.tfidf = TfidfAliasIndex.build(kb)

    # Prediction ---------------------------------------------------------------------

    def _spans_to_link(self, doc: Doc) -> List[Span]:
        discard = set(self.cfg["labels_discard"])
        return [
            ent for ent in doc.ents
            if ent.label_ not in discard and (self.cfg["overwrite"] or not ent.kb_id_)
        ]

    def mention_inputs(self, spans: Sequence[Span]) -> List[MentionInput]:
        return [mention_input(s, self.cfg["context_chars"], self.cfg["use_long_form"]) for s in spans]

    def encode_mentions(self, mentions: Sequence[MentionInput]) -> np.ndarray:
        if not mentions:
            return np.zeros((0, get_module(self.model).dim), dtype=np.float32)
        predict = self.model.predict
        batch_size = self.cfg["batch_size"]
        chunks = [predict((list(mentions[i: i + batch_size]), []))[0] for i in range(0, len(mentions), batch_size)]
        return np.concatenate([self.model.ops.to_numpy(c) for c in chunks]).astype(np.float32)

    def candidates_for(self, mentions: Sequence[MentionInput]) -> List[Candidates]:
        kb = self._require_kb()
        k, source = self.cfg["top_k"], self.cfg["candidate_source"]
        ranked: List[List[Candidates]] = []
        if source != "tfidf":
            if self.index is None:
                raise ArboError(f"'{self.name}' has no entity index: initialize the pipeline first.")
            # Oversample when entities own several vectors, so k distinct entities remain.
            n_search = k * (4 if self.cfg["index_aliases"] else 1)
            scores, rows = self.index.search(self.encode_mentions(mentions), n_search)
            ranked.append(rows_to_candidates(scores, rows, kb.ids, k))
        if source != "dense":
            if self.tfidf is None:
                raise ArboError(f"'{self.name}' has no TF-IDF index: initialize the pipeline first.")
            scores, rows = self.tfidf.search([m.mention for m in mentions], k)
            ranked.append(rows_to_candidates(scores, rows, kb.ids, k))
        return ranked[0] if len(ranked) == 1 else fuse_candidates(ranked, k)

    def predict(self, docs: Iterable[Doc]) -> List[List[Candidates]]:
        docs = list(docs)
        spans_per_doc = [self._spans_to_link(doc) for doc in docs]
        flat = [s for spans in spans_per_doc for s in spans]
        if not flat:
            return [[] for _ in docs]
        candidates = iter(self.candidates_for(self.mention_inputs(flat)))
        return [[next(candidates) for _ in spans] for spans in spans_per_doc]

    def set_annotations(self, docs: Iterable[Doc], candidates_per_doc: List[List[Candidates]]) -> None:
        threshold = self.cfg["threshold"]
        for doc, candidates in zip(docs, candidates_per_doc):
            for span, ranked in zip(self._spans_to_link(doc), candidates):
                best = ranked[0] if ranked else None
                kb_id = best[0] if best and (threshold is None or best[1] >= threshold) else NIL
                for token in span:
                    token.ent_kb_id_ = kb_id
                span._.kb_candidates = ranked
                span._.kb_ents = ranked

    # Training and scoring ------------------------------------------------------------

    def _ensure_ents(self, examples: Iterable[Example]) -> List[Example]:
        """With `use_gold_ents`, copy the gold entities (without their ids) onto the
        predicted docs, so a pipeline without NER can be trained and scored."""
        if not self.use_gold_ents:
            return list(examples)
        result = []
        for eg in examples:
            ents, _ = eg.get_aligned_ents_and_ner()
            copy = eg.copy()
            copy.predicted.ents = [Span(copy.predicted, e.start, e.end, label=e.label_) for e in ents]
            result.append(copy)
        return result

    def _score_with_gold_ents(self, examples: Iterable[Example], **kwargs) -> Dict[str, Any]:
        examples = self._ensure_ents(examples)
        if self.use_gold_ents:
            docs = list(self.pipe(eg.predicted for eg in examples))
            for eg, doc in zip(examples, docs):
                eg.predicted = doc
        return self._scorer(examples, **kwargs)

    def update(self, examples: Iterable[Example], *, drop: float = 0.0, sgd=None, losses=None):
        raise NotImplementedError(
            f"'{self.name}' cannot be trained yet; keep it frozen (training.frozen_components)."
        )

    def add_label(self, label: str) -> int:
        raise NotImplementedError

    # Serialization --------------------------------------------------------------------

    def to_disk(self, path, *, exclude: Iterable[str] = SimpleFrozenList()) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        srsly.write_json(path / "cfg", {**self.cfg, "use_gold_ents": self.use_gold_ents})
        self.model.to_disk(path / "model")
        self._require_kb().to_disk(path / "kb")
        if self.index is not None:
            self.index.to_disk(path / "index")
        if self.tfidf is not None:
            self.tfidf.to_disk(path / "tfidf")

    def from_disk(self, path, *, exclude: Iterable[str] = SimpleFrozenList()) -> "ArboLinker":
        path = Path(path)
        cfg = srsly.read_json(path / "cfg")
        self.use_gold_ents = cfg.pop("use_gold_ents", self.use_gold_ents)
        self.cfg.update(cfg)
        self.model.from_disk(path / "model")
        self.kb = EntityStore.from_disk(path / "kb")
        if (path / "index").exists():
            self.index = FaissIndex.from_disk(
                path / "index", expected_fingerprint=self.index_fingerprint, use_gpu=self.cfg["use_gpu_index"])
        if (path / "tfidf").exists():
            self.tfidf = TfidfAliasIndex.from_disk(path / "tfidf", expected_fingerprint=self.kb.fingerprint())
        return self
