"""Our KB as a `spacy.kb.KnowledgeBase`, so that spaCy's own `entity_linker` can train and
link against it.

spaCy's linker asks its KB for candidates per mention and compares a context vector with
each candidate's entity vector. Here candidates come from the TF-IDF alias index (prior =
the cosine of the entity's best alias, as scispacy scores it) and entity vectors from any
(n_entities, width) array, usually the entity vectors of a trained `arbo_linker`
(`spacy_arbo.pipeline.linker.spacy_kb_export.spacy_kb_from_linker`).
"""
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Sequence

import numpy as np
import srsly
from spacy.kb import Candidate, KnowledgeBase
from spacy.tokens import Span
from spacy.util import SimpleFrozenList, registry
from spacy.vocab import Vocab

from ..kb.store import BaseEntityStore, EntityStore, open_store
from ..util import ArboError, PathLike, atomic_path, read_json
from .tfidf import TfidfAliasIndex

CFG_FILE = "cfg.json"
VECTORS_FILE = "vectors.npy"


class ArboKnowledgeBase(KnowledgeBase):
    """An entity store, one vector per entity, and TF-IDF candidate generation."""

    def __init__(self, vocab: Vocab, entity_vector_length: int, top_k: int = 10) -> None:
        super().__init__(vocab, entity_vector_length)
        if top_k < 1:
            raise ArboError(f"ArboKnowledgeBase: top_k must be at least 1 (got {top_k}).")
        self.top_k = top_k
        self.store: Optional[BaseEntityStore] = None
        self.vectors = np.zeros((0, entity_vector_length), dtype=np.float32)
        self.tfidf: Optional[TfidfAliasIndex] = None

    def set_entities(self, store: BaseEntityStore, vectors: np.ndarray) -> None:
        """Hold `store`, with `vectors[i]` the vector of the store's i-th entity."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape != (len(store), self.entity_vector_length):
            raise ArboError(
                f"ArboKnowledgeBase: expected one vector of width {self.entity_vector_length} per entity "
                f"({len(store)}), got an array of shape {vectors.shape}.")
        self._hold(store, vectors, TfidfAliasIndex.build(store))

    def __len__(self) -> int:
        return 0 if self.store is None else len(self.store)

    def is_empty(self) -> bool:
        return not len(self)

    @property
    def supports_prior_probs(self) -> bool:
        return True

    # Candidates and vectors -------------------------------------------------------

    def get_candidates(self, mention: Span) -> List[Candidate]:
        return self.get_candidates_batch([mention])[0]

    def get_candidates_batch(self, mentions: Iterable[Span]) -> List[List[Candidate]]:
        texts = [span.text for span in mentions]
        if not texts:
            return []
        if self.tfidf is None:
            raise ArboError("ArboKnowledgeBase holds no entities: call set_entities or load one from disk.")
        matches = self.tfidf.match(texts, min(self.top_k, len(self)))
        return [self._candidates(scores, rows, aliases)
                for scores, rows, aliases in zip(matches.scores, matches.entity_rows, matches.alias_ids)]

    def _candidates(self, scores: np.ndarray, rows: np.ndarray, aliases: np.ndarray) -> List[Candidate]:
        strings = self.vocab.strings
        return [
            Candidate(self, strings.add(self.store.ids[row]), 0, self.vectors[row],
                      strings.add(self.tfidf.alias_texts[alias]), float(score))
            for score, row, alias in zip(scores, rows, aliases) if row >= 0
        ]

    def get_vector(self, entity: str) -> Sequence[float]:
        if self.store is None or entity not in self.store:
            raise ArboError(f"ArboKnowledgeBase: unknown entity id '{entity}'.")
        return self.vectors[self.store.row(entity)]

    # Serialization ----------------------------------------------------------------

    def to_bytes(self, **_kwargs) -> bytes:
        return srsly.msgpack_dumps({
            "cfg": self._cfg(), "store": self._require_store().to_bytes(),
            "vectors": self.vectors.tobytes(), "tfidf": self.tfidf.to_bytes(),
        })

    def from_bytes(self, bytes_data: bytes, *, exclude: Sequence[str] = tuple()) -> "ArboKnowledgeBase":
        try:
            data = srsly.msgpack_loads(bytes_data)
            vectors = np.frombuffer(data["vectors"], dtype=np.float32).reshape(-1, data["cfg"]["width"])
            store = EntityStore.from_bytes(data["store"])
        except ArboError:
            raise
        except Exception as err:  # msgpack and numpy raise several unrelated types
            raise ArboError(f"serialized ArboKnowledgeBase: corrupt or truncated ({err}).") from None
        self._load(data["cfg"], store, vectors, TfidfAliasIndex.from_bytes(data["tfidf"], store.fingerprint()))
        return self

    def to_disk(self, path: PathLike, exclude: Iterable[str] = SimpleFrozenList()) -> None:
        store = self._require_store()
        with atomic_path(path) as tmp:
            tmp.mkdir()
            srsly.write_json(tmp / CFG_FILE, self._cfg())
            np.save(tmp / VECTORS_FILE, self.vectors)
            store.to_disk(tmp / "entities")
            self.tfidf.to_disk(tmp / "tfidf")

    def from_disk(self, path: PathLike, exclude: Iterable[str] = SimpleFrozenList()) -> "ArboKnowledgeBase":
        path = Path(path)
        cfg = read_cfg(path)
        store = open_store(path / "entities")
        vectors_file = path / VECTORS_FILE
        try:
            vectors = np.load(vectors_file, allow_pickle=False)
        except (OSError, ValueError, EOFError) as err:  # an empty file is an EOFError
            raise ArboError(f"{vectors_file}: cannot read the entity vectors ({err}).") from None
        if vectors.shape != (len(store), cfg["width"]) or vectors.dtype.kind != "f":
            raise ArboError(f"{vectors_file}: expected {len(store)} vectors of width {cfg['width']}, one per entity; "
                            f"found a {vectors.dtype} array of shape {vectors.shape}.")
        self._load(cfg, store, vectors,
                   TfidfAliasIndex.from_disk(path / "tfidf", store.fingerprint()))
        return self

    def _cfg(self) -> dict:
        return {"top_k": self.top_k, "width": self.entity_vector_length}

    def _require_store(self) -> BaseEntityStore:
        if self.store is None or self.tfidf is None:
            raise ArboError("ArboKnowledgeBase holds no entities: nothing to save.")
        return self.store

    def _load(self, cfg: dict, store: BaseEntityStore, vectors: np.ndarray, tfidf: TfidfAliasIndex) -> None:
        if cfg["width"] != self.entity_vector_length:
            raise ArboError(f"ArboKnowledgeBase: saved vectors have width {cfg['width']}, the entity_linker "
                            f"expects {self.entity_vector_length} (entity_vector_length).")
        if vectors.shape != (len(store), self.entity_vector_length):
            raise ArboError(f"ArboKnowledgeBase: {vectors.shape[0]} vectors for {len(store)} entities.")
        self.top_k = cfg["top_k"]
        self._hold(store, vectors.astype(np.float32, copy=False), tfidf)

    def _hold(self, store: BaseEntityStore, vectors: np.ndarray, tfidf: TfidfAliasIndex) -> None:
        self.store, self.vectors, self.tfidf = store, vectors, tfidf
        for entity_id in store.ids:
            self.vocab.strings.add(entity_id)


def read_cfg(path: Path) -> dict:
    """The settings of a saved ArboKnowledgeBase: its top_k and vector width."""
    cfg_file = path / CFG_FILE
    if not cfg_file.exists():
        raise ArboError(f"{path}: not an ArboKnowledgeBase directory (no {CFG_FILE}).")
    cfg = read_json(cfg_file)
    if not isinstance(cfg, dict) or not all(type(cfg.get(key)) is int and cfg[key] > 0 for key in ("top_k", "width")):
        raise ArboError(f"{cfg_file}: expected an object with positive integers 'top_k' and 'width' (corrupt file).")
    return cfg


@registry.misc("spacy_arbo.EmptyArboKB.v1")
def create_empty_kb(top_k: int = 10) -> Callable[[Vocab, int], ArboKnowledgeBase]:
    """For spaCy's `[components.entity_linker.generate_empty_kb]`."""

    def empty_kb(vocab: Vocab, entity_vector_length: int) -> ArboKnowledgeBase:
        return ArboKnowledgeBase(vocab, entity_vector_length, top_k=top_k)

    return empty_kb


@registry.misc("spacy_arbo.ArboKBFromDir.v1")
def create_spacy_kb_loader(path: PathLike) -> Callable[[Vocab], ArboKnowledgeBase]:
    """For `[initialize.components.entity_linker.kb_loader]`: a KB saved by
    `ArboKnowledgeBase.to_disk` (or `python -m spacy_arbo export-spacy-kb`)."""

    def load(vocab: Vocab) -> ArboKnowledgeBase:
        cfg = read_cfg(Path(path))
        return ArboKnowledgeBase(vocab, cfg["width"], top_k=cfg["top_k"]).from_disk(path)

    return load
