"""KB -> entity texts -> vectors -> index -> ranked candidates per mention.

One object owns what candidate generation needs (scispacy keeps it apart from the linker
too): the entity texts the entity tower reads, the FAISS index over their vectors (with a
fingerprint of the encoder and texts that made it), an optional TF-IDF alias index, and
the search that turns either, or both fused, into each mention's distinct top-k entities.
The caller brings the encoder (`EntityEncoder`). Each index is stamped with the fingerprint
of the weights and texts that made it and is current while that matches (`ensure_fresh`).
"""
import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Protocol, Sequence, Tuple

import numpy as np
import srsly

from ..component_settings import check_at_least
from ..encoders.templates import EntityInput, Triplet, entity_inputs
from ..kb.entities import Entity
from ..kb.store import BaseEntityStore
from ..kb.updates import KBUpdate, plan_update, updated_store
from ..util import ArboError, PathLike, atomic_path, read_json
from .candidates import Candidates, fuse_candidates, rows_to_candidates
from .faiss_index import FaissIndex
# CANDIDATE_SOURCES: importable from here, as before retrieval_settings.py.
from .retrieval_settings import CANDIDATE_SOURCES, ENTITY_TEXT_SETTINGS, RetrievalSettings  # noqa: F401
from .tfidf import TfidfAliasIndex

logger = logging.getLogger("spacy_arbo")

# The entity index a KB directory may hold, built by `python -m spacy_arbo index-kb`.
PREBUILT_INDEX_DIR = "index"
# With alias vectors an entity owns several index rows: search this many times deeper so
# that k distinct entities remain.
ALIAS_OVERSAMPLE = 4
DICTIONARY_FILE = "dictionary.json"

EncodeEntities = Callable[[List[EntityInput]], np.ndarray]


class EntityEncoder(Protocol):
    """What the retriever needs of an encoder to keep its indexes current."""

    def fingerprint(self, entities_only: bool = False) -> str: ...

    def encode_entities(self, entities: Sequence[EntityInput], progress: bool = False) -> np.ndarray: ...


def first_occurrences(vectors: Optional[np.ndarray], texts: Sequence[str]) -> List[int]:
    """For each query, the row where the same query (text and vector) first occurs."""
    seen: Dict[Tuple[str, bytes], int] = {}
    return [seen.setdefault((text, b"" if vectors is None else vectors[i].tobytes()), i) for i, text in enumerate(texts)]


class EntityRetriever:
    """Candidate generation over one KB."""

    def __init__(self, kb: BaseEntityStore, settings: RetrievalSettings,
                 entity_triplets: Optional[Callable[[Entity], Sequence[Triplet]]] = None) -> None:
        if not len(kb):
            raise ArboError("The KB is empty.")
        self.kb = kb
        # Each entity's knowledge units, for a graph entity tower (GER).
        self.entity_triplets = entity_triplets
        self.settings = settings
        self.dense: Optional[FaissIndex] = None
        self.tfidf: Optional[TfidfAliasIndex] = None
        # Every entity text's vector from the last refresh (names first, then with
        # `index_aliases` the aliases') and the entity row that owns it, for training
        # objectives that score entities without encoding them.
        self.text_vectors: Optional[np.ndarray] = None
        self.text_owners: Optional[np.ndarray] = None
        self._entity_inputs: Optional[List[EntityInput]] = None
        self._alias_pairs: Optional[List[Tuple[str, int]]] = None
        # Extra names of entities (corpus mentions: BioSyn's dictionary augmentation), in an
        # index of their own so that adding them encodes only them.
        self.dictionary: List[Tuple[str, int]] = []
        self.dictionary_index: Optional[FaissIndex] = None

    def configure(self, settings: RetrievalSettings) -> bool:
        """Take new settings; True when the entity texts changed, so the dense index must
        be re-encoded before its next use."""
        texts_changed = any(getattr(settings, k) != getattr(self.settings, k) for k in ENTITY_TEXT_SETTINGS)
        self.settings = settings
        if texts_changed:
            self._entity_inputs = None
            self.text_vectors = self.text_owners = None
        return texts_changed

    # Entity texts and vectors ---------------------------------------------------------

    @property
    def entity_vectors(self) -> Optional[np.ndarray]:
        """One vector per entity (its name text) from the last refresh."""
        return None if self.text_vectors is None else self.text_vectors[: len(self.kb)]

    def entity_inputs(self) -> List[EntityInput]:
        """One text per entity (row order): what training embeds for gold and negatives."""
        if self._entity_inputs is None:
            self._entity_inputs = entity_inputs(self.kb, self.settings.entity_fields, self.settings.max_aliases,
                                                self.entity_triplets)
        return self._entity_inputs

    def alias_pairs(self) -> List[Tuple[str, int]]:
        if self._alias_pairs is None:
            self._alias_pairs = self.kb.alias_pairs()
        return self._alias_pairs

    def entity_texts(self, rows: Optional[Sequence[int]] = None) -> Tuple[List[EntityInput], np.ndarray]:
        """What the index holds for `rows` (default: every entity), and which entity row each
        vector belongs to: one text per entity, then (with `index_aliases`) one per alias with
        its entity's description."""
        if rows is None:
            rows, entities, inputs = range(len(self.kb)), self.kb, list(self.entity_inputs())
        else:
            entities = [self.kb.entity_at(int(row)) for row in rows]
            inputs = entity_inputs(entities, self.settings.entity_fields, self.settings.max_aliases,
                                   self.entity_triplets)
        owners = [int(row) for row in rows]
        if self.settings.index_aliases:
            for i, entity in enumerate(entities):
                for alias in entity.aliases:
                    inputs.append(replace(inputs[i], title=alias))
                    owners.append(owners[i])
        return inputs, np.asarray(owners, dtype=np.int64)

    def fingerprint(self, encoder_fingerprint: str) -> str:
        """What the entity vectors depend on: encoder weights, KB content, entity texts."""
        return f"encoder={encoder_fingerprint} kb={self.kb.fingerprint()[:16]} texts={self.settings.texts_key()}"

    def refresh(self, encode: EncodeEntities, encoder_fingerprint: str,
                vectors: Optional[np.ndarray] = None) -> None:
        """Re-encode every entity text and rebuild the dense index. `vectors` of
        `entity_texts()` encoded elsewhere by the same encoder (on Ray workers:
        `sharded_encoding`) are indexed instead of encoding here."""
        started = time.perf_counter()
        inputs, owners = self.entity_texts()
        if vectors is None:
            vectors = encode(inputs)
        elif vectors.shape[0] != len(inputs):
            raise ArboError(f"Got {vectors.shape[0]:,} entity vectors for {len(inputs):,} entity texts.")
        self.text_vectors, self.text_owners = vectors, owners
        self.dense = FaissIndex.build(vectors, ids=owners, use_gpu=self.settings.use_gpu_index,
                                      fingerprint=self.fingerprint(encoder_fingerprint), **self.settings.index)
        logger.info("encoded %s entity texts in %.1fs", f"{len(inputs):,}", time.perf_counter() - started)
        self.encode_dictionary(encode, encoder_fingerprint)

    def update_kb(self, add: Iterable[Entity], remove: Iterable[str], store_dir: Optional[PathLike],
                  encoder: Optional[EntityEncoder]) -> KBUpdate:
        """Add entities (one whose id the KB has replaces it) and remove ids; an on-disk KB is
        written anew to `store_dir` (default: a temporary directory)."""
        add = list(add)
        update = plan_update(self.kb, add, remove)
        self.apply_update(updated_store(self.kb, update, add, store_dir), update, encoder)
        return update

    def apply_update(self, kb: BaseEntityStore, update: KBUpdate, encoder: Optional[EntityEncoder]) -> None:
        """Take `kb`, the KB after `update`: only its changed rows are encoded and replace their
        vectors in the dense index; dictionary names follow their entities' new rows (those of
        removed entities go); a TF-IDF index is rebuilt. `encoder` may be None when nothing
        is encoded (no dense index)."""
        if len(kb) != update.size:
            raise ArboError(f"The updated KB has {len(kb):,} entities; the update leaves {update.size:,}.")
        row_map = update.row_map
        names = [(text, int(row_map[row])) for text, row in self.dictionary if row_map[row] >= 0]
        dictionary_was_encoded = self.dictionary_index is not None
        encodes = self.dense is not None or dictionary_was_encoded
        if encodes and encoder is None:
            raise ArboError("Updating a KB with a dense index needs the encoder that made it.")
        old_kb, self.kb = self.kb, kb
        try:  # encoding is what fails or is interrupted: until it is done, nothing changes
            inputs, owners = self.entity_texts(update.encoded)
            vectors = encoder.encode_entities(inputs) if self.dense is not None and inputs else []
        except BaseException:
            self.kb = old_kb
            raise
        self._entity_inputs = self._alias_pairs = self.text_vectors = self.text_owners = None
        if self.tfidf is not None:
            self.tfidf = TfidfAliasIndex.build(kb)
        if self.dense is not None:
            self.dense.update(update.dropped, vectors, owners, self.fingerprint(encoder.fingerprint(True)))
        self.set_dictionary(names)
        if dictionary_was_encoded:
            self.encode_dictionary(encoder.encode_entities, encoder.fingerprint(True))

    # Dictionary of extra names ---------------------------------------------------------

    def set_dictionary(self, names: Sequence[Tuple[str, int]]) -> None:
        """Extra (name, entity row) pairs searched beside the KB's names; encoded on the
        next `encode_dictionary` or `refresh`."""
        for text, row in names:
            if not 0 <= row < len(self.kb):
                raise ArboError(f"Dictionary name '{text}' points to entity row {row}; the KB has {len(self.kb)}.")
        self.dictionary = list(dict.fromkeys((text, int(row)) for text, row in names if text.strip()))
        self.dictionary_index = None

    def encode_dictionary(self, encode: EncodeEntities, encoder_fingerprint: str) -> None:
        """Encode the dictionary names as the entity tower reads an alias: the name, with
        its entity's description."""
        if not self.dictionary:
            self.dictionary_index = None
            return
        entities = self.entity_inputs()
        inputs = [replace(entities[row], title=text) for text, row in self.dictionary]
        rows = np.asarray([row for _, row in self.dictionary], dtype=np.int64)
        self.dictionary_index = FaissIndex.build(encode(inputs), ids=rows, use_gpu=False,
                                                 fingerprint=self.fingerprint(encoder_fingerprint))

    # Freshness ------------------------------------------------------------------------------

    def is_current(self, encoder_fingerprint: str) -> bool:
        """Whether the dense index holds the vectors these entity-side weights give."""
        return self.dense is not None and self.dense.fingerprint == self.fingerprint(encoder_fingerprint)

    def ensure_fresh(self, encoder: EntityEncoder, progress: bool = True, force: bool = False) -> None:
        """Re-encode the index and the dictionary names where they lag `encoder` (with
        `force`, even where they do not: to have `entity_vectors` after a load)."""
        encoder_fingerprint = encoder.fingerprint(entities_only=True)
        if force or not self.is_current(encoder_fingerprint):
            self.refresh(lambda inputs: encoder.encode_entities(inputs, progress), encoder_fingerprint)
        elif self.dictionary and (self.dictionary_index is None or
                                  self.dictionary_index.fingerprint != self.fingerprint(encoder_fingerprint)):
            self.encode_dictionary(encoder.encode_entities, encoder_fingerprint)

    def ensure_tfidf(self) -> TfidfAliasIndex:
        if self.tfidf is None:
            # A second or two on CTD, e.g. after switching candidate_source to "hybrid".
            self.tfidf = TfidfAliasIndex.build(self.kb)
        return self.tfidf

    # Prebuilt index beside the KB -------------------------------------------------------

    def load_prebuilt(self, kb_dir: PathLike, encoder_fingerprint: str) -> bool:
        """Reuse an index stored in the KB directory; one made by another encoder (or from
        other entity texts) is an error rather than silently wrong candidates."""
        path = Path(kb_dir) / PREBUILT_INDEX_DIR
        if not path.is_dir():
            return False
        self.dense = FaissIndex.from_disk(path, expected_fingerprint=self.fingerprint(encoder_fingerprint),
                                          use_gpu=self.settings.use_gpu_index)
        return True

    def save_prebuilt(self, kb_dir: PathLike) -> None:
        if self.dense is None:
            raise ArboError("There is no entity index to save: encode the KB first.")
        self.dense.to_disk(Path(kb_dir) / PREBUILT_INDEX_DIR)

    # Search ------------------------------------------------------------------------------

    def candidates(
        self, mention_vectors: Optional[np.ndarray], mention_texts: Sequence[str], k: Optional[int] = None
    ) -> List[Candidates]:
        """Each mention's best `k` (default `top_k`) distinct entities, best first, from the
        dense index, the TF-IDF alias index, or both fused by reciprocal rank. A mention given
        twice (same text, same vector) is searched once."""
        k = self.settings.top_k if k is None else k
        firsts = first_occurrences(mention_vectors, mention_texts)
        rows = sorted(set(firsts))
        if len(rows) < len(firsts):
            found = dict(zip(rows, self.candidates(None if mention_vectors is None else mention_vectors[rows],
                                                   [mention_texts[row] for row in rows], k)))
            return [list(found[row]) for row in firsts]
        ranked: List[List[Candidates]] = []
        if self.settings.uses_dense:
            if self.dense is None or mention_vectors is None:
                raise ArboError("Dense candidates need an entity index and mention vectors: initialize first.")
            depth = k * (ALIAS_OVERSAMPLE if self.settings.index_aliases else 1)
            scores, rows = self.dense.search(mention_vectors, depth)
            if self.dictionary_index is not None:
                extra_scores, extra_rows = self.dictionary_index.search(mention_vectors, depth)
                scores = np.hstack([scores, extra_scores + self.settings.dictionary_offset])
                rows = np.hstack([rows, extra_rows])
                order = np.argsort(-scores, axis=1, kind="stable")
                scores, rows = np.take_along_axis(scores, order, 1), np.take_along_axis(rows, order, 1)
            ranked.append(rows_to_candidates(scores, rows, self.kb.ids, k))
        if self.settings.uses_tfidf:
            scores, rows = self.ensure_tfidf().search(list(mention_texts), k)
            ranked.append(rows_to_candidates(scores, rows, self.kb.ids, k))
        if len(ranked) == 1:
            return ranked[0]
        weights = None if self.settings.sparse_weight is None else (1.0, self.settings.sparse_weight)
        return fuse_candidates(ranked, k, weights)

    def nearest_entities(self, vectors: np.ndarray, k: int) -> np.ndarray:
        """(n, k) entity rows by decreasing score, distinct per row, -1 padded: negatives."""
        return self.nearest_entity_scores(vectors, k)[0]

    def nearest_entity_scores(self, vectors: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
        """(rows, scores), (n, k): each vector's `k` nearest distinct entities from the dense index,
        best first, -1 / -inf padded; an entity indexed once per name counts with its best."""
        if self.dense is None:
            raise ArboError("Nearest entities are searched in the entity index, which is not built.")
        oversample = ALIAS_OVERSAMPLE if len(self.dense) > len(self.kb) else 1
        found_scores, found = self.dense.search(vectors, k * oversample)
        rows = np.full((len(found), k), -1, dtype=np.int64)
        scores = np.full((len(found), k), -np.inf, dtype=np.float32)
        for i, row in enumerate(found):
            distinct: Dict[int, float] = {}
            for r, score in zip(row.tolist(), found_scores[i].tolist()):
                if r >= 0 and r not in distinct:
                    distinct[r] = score
                    if len(distinct) == k:
                        break
            rows[i, : len(distinct)] = list(distinct)
            scores[i, : len(distinct)] = list(distinct.values())
        return rows, scores

    # Serialization -----------------------------------------------------------------------

    def dictionary_records(self) -> List[List[str]]:
        return [[text, self.kb.ids[row]] for text, row in self.dictionary]

    def load_dictionary_records(self, records: Any, origin: str) -> None:
        """Read `dictionary_records` back: rows are stored as KB ids, so a KB rebuilt in
        another order still gets the right entities."""
        if not isinstance(records, list):
            raise ArboError(f"{origin}: expected a list of [name, kb_id] pairs.")
        names = []
        for i, record in enumerate(records):
            if not (isinstance(record, list) and len(record) == 2 and all(isinstance(v, str) for v in record)):
                raise ArboError(f"{origin}: entry {i} is not a [name, kb_id] pair of strings.")
            if record[1] not in self.kb:
                raise ArboError(f"{origin}: entry {i} ('{record[0]}') names kb_id '{record[1]}', which the KB lacks.")
            names.append((record[0], self.kb.row(record[1])))
        self.set_dictionary(names)

    def index_bytes(self, include_dense: bool = True) -> Dict[str, Any]:
        return {"dense": None if self.dense is None or not include_dense else self.dense.to_bytes(),
                "tfidf": None if self.tfidf is None else self.tfidf.to_bytes(),
                "dictionary": self.dictionary_records()}

    def load_index_bytes(self, data: Dict[str, Optional[bytes]]) -> None:
        """Indexes from `index_bytes`; a dense index from other weights or texts is kept
        (its fingerprint says it is stale, so the owner re-encodes it before use)."""
        use_gpu = self.settings.use_gpu_index
        self.dense = None if data.get("dense") is None else FaissIndex.from_bytes(data["dense"], use_gpu=use_gpu)
        self.tfidf = None if data.get("tfidf") is None else TfidfAliasIndex.from_bytes(
            data["tfidf"], expected_fingerprint=self.kb.fingerprint())
        self.load_dictionary_records(data.get("dictionary", []), "serialized dictionary")

    def to_disk(self, path: PathLike, include_dense: bool = True) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        if self.dense is not None and include_dense:
            self.dense.to_disk(path / "index")
        if self.tfidf is not None:
            self.tfidf.to_disk(path / "tfidf")
        if self.dictionary:
            with atomic_path(path / DICTIONARY_FILE) as tmp:
                srsly.write_json(tmp, self.dictionary_records())

    def from_disk(self, path: PathLike) -> None:
        path = Path(path)
        use_gpu = self.settings.use_gpu_index
        self.dense = FaissIndex.from_disk(path / "index", use_gpu=use_gpu) if (path / "index").exists() else None
        self.tfidf = TfidfAliasIndex.from_disk(path / "tfidf", expected_fingerprint=self.kb.fingerprint()) \
            if (path / "tfidf").exists() else None
        dictionary_file = path / DICTIONARY_FILE
        if dictionary_file.exists():
            self.load_dictionary_records(read_json(dictionary_file), str(dictionary_file))
        else:
            self.set_dictionary([])


def exact_search(
    queries: np.ndarray, keys: np.ndarray, k: int, *, exclude_self: bool = False
) -> Tuple[np.ndarray, np.ndarray]:
    """Exact top-k keys of every query by inner product: (indices, similarities), (n, k),
    best first; -1 and -inf pad slots beyond the available keys. With `exclude_self` the
    queries are the first rows of the keys and each is left out of its own list."""
    if exclude_self and len(queries) > len(keys):
        raise ArboError(f"exclude_self needs the queries to be the first rows of the keys; got "
                        f"{len(queries)} queries and {len(keys)} keys.")
    check_at_least(1, k=k)
    n = len(queries)
    indices = np.full((n, k), -1, dtype=np.int64)
    similarities = np.full((n, k), -np.inf, dtype=np.float32)
    if not len(keys) or not n:
        return indices, similarities
    index = FaissIndex.build(keys, kind="flat", use_gpu=False)
    extra = int(exclude_self)
    scores, found = index.search(queries, min(k + extra, len(keys)))
    if exclude_self:
        own = found == np.arange(n)[:, None]
        # Drop each query's own id (or, when ties pushed it out, the last slot).
        own[~own.any(axis=1), -1] = True
        keep = ~own
        width = found.shape[1] - 1
        found = found[keep].reshape(n, width)
        scores = scores[keep].reshape(n, width)
    width = min(k, found.shape[1])
    indices[:, :width] = found[:, :width]
    similarities[:, :width] = scores[:, :width]
    return indices, similarities
