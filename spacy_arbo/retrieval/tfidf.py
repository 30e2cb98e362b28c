"""Character n-gram TF-IDF nearest-alias candidates: scispacy's candidate generator.

Every name and synonym of every entity becomes an L2-normalised TF-IDF vector of its
character n-grams, and a mention's candidates are the entities whose best alias is most
cosine-similar to it. This is the first stage of the multi cross-encoder paper and the
baseline the learned retrievers are compared to.

Two backends share the entity selection and the reported scores:
- "exact" multiplies the sparse query vectors with the sparse alias matrix;
- "ann" (KBs with millions of aliases) shortlists aliases with HNSW over vectors reduced
  to a few hundred dense dimensions, then re-scores the shortlist with the exact sparse
  cosine, so the reported scores are true TF-IDF cosines either way.
"""
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import faiss
import numpy as np
import scipy.sparse as sp
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.preprocessing import normalize

from ..kb.store import BaseEntityStore
from ..util import ArboError, PathLike
from .tfidf_format import BACKENDS, FORMAT_VERSION, HNSW_FILE, INDEX_FILE, deserialize, read_index, serialize, write_index

__all__ = ["HNSW_FILE", "INDEX_FILE", "AliasMatches", "TfidfAliasIndex"]

REDUCTIONS = ("random", "svd")
HNSW_NEIGHBOURS = 32
# Wider than faiss's default 40: recall of the true best alias 0.94 -> 0.97 at 64 (CTD).
HNSW_EF_CONSTRUCTION = 100
# Upper bound on the (mention, alias) pairs one chunk of mentions may score ("exact":
# every alias, "ann": the shortlist), so memory stays bounded however large the KB is.
PAIR_BUDGET = 1 << 23
MAX_CHUNK = 1024


class AliasMatches(NamedTuple):
    """The k best entities per mention, best first; empty slots are row -1, score -inf."""

    scores: np.ndarray  # (n, k) float32 cosine of the entity's best alias
    entity_rows: np.ndarray  # (n, k) int64 rows of the EntityStore
    alias_ids: np.ndarray  # (n, k) int64 index into `TfidfAliasIndex.alias_texts`


class TfidfAliasIndex:
    """Nearest-alias search over the KB; build it with `TfidfAliasIndex.build`."""

    def __init__(
        self,
        vectorizer: TfidfVectorizer,
        alias_matrix: sp.csr_matrix,
        alias_rows: np.ndarray,
        alias_texts: List[str],
        n_entities: int,
        fingerprint: str,
        settings: Dict[str, Any],
        projection: Optional[np.ndarray] = None,
        hnsw: Optional[faiss.Index] = None,
    ) -> None:
        self.vectorizer = vectorizer
        self.alias_matrix = alias_matrix
        self.alias_rows = alias_rows
        self.alias_texts = alias_texts
        self.n_entities = n_entities
        self.fingerprint = fingerprint
        self.settings = settings
        self.projection = projection
        self.hnsw = hnsw
        # The transposed matrix, in the layout sparse products want; built on first use.
        self._alias_columns: Optional[sp.csr_matrix] = None

    @property
    def backend(self) -> str:
        return self.settings["backend"]

    def __len__(self) -> int:
        return len(self.alias_texts)

    @classmethod
    def build(
        cls,
        store: BaseEntityStore,
        *,
        analyzer: str = "char_wb",
        ngram_range: Tuple[int, int] = (3, 3),
        min_df: int = 1,
        lowercase: bool = True,
        sublinear_tf: bool = False,
        backend: str = "exact",
        ann_dim: int = 256,
        reduction: str = "random",
        shortlist: int = 256,
        seed: int = 0,
    ) -> "TfidfAliasIndex":
        """Fit the vectorizer on the store's aliases and index them.

        `shortlist` is how many aliases a search first fetches per mention before reducing
        them to distinct entities; it grows when they cover fewer than k entities.
        """
        if backend not in BACKENDS:
            raise ArboError(f"Unknown TF-IDF backend '{backend}'; choose one of {BACKENDS}.")
        if reduction not in REDUCTIONS:
            raise ArboError(f"Unknown ANN reduction '{reduction}'; choose one of {REDUCTIONS}.")
        if shortlist < 1 or ann_dim < 1:
            raise ArboError(f"shortlist and ann_dim must be positive (got {shortlist}, {ann_dim}).")
        pairs = store.alias_pairs()
        if not pairs:
            raise ArboError("Cannot build a TF-IDF alias index: the KB has no entity names.")
        texts = [text for text, _ in pairs]
        vectorizer = TfidfVectorizer(
            analyzer=analyzer,
            ngram_range=tuple(ngram_range),
            min_df=min_df,
            lowercase=lowercase,
            sublinear_tf=sublinear_tf,
            dtype=np.float32,
        )
        try:
            alias_matrix = vectorizer.fit_transform(texts).tocsr()
        except ValueError as err:  # invalid settings, or pruning left no n-grams
            raise ArboError(f"Cannot build a TF-IDF alias index: {err}") from None
        alias_matrix.sort_indices()
        settings = {
            "analyzer": analyzer,
            "ngram_range": [int(n) for n in ngram_range],
            "min_df": min_df,
            "lowercase": lowercase,
            "sublinear_tf": sublinear_tf,
            "backend": backend,
            "ann_dim": ann_dim,
            "reduction": reduction,
            "shortlist": shortlist,
            "seed": seed,
        }
        projection = hnsw = None
        if backend == "ann":
            projection, hnsw = _build_hnsw(alias_matrix, reduction, ann_dim, seed)
        alias_rows = np.asarray([row for _, row in pairs], dtype=np.int64)
        return cls(vectorizer, alias_matrix, alias_rows, texts, len(store),
                   store.fingerprint(), settings, projection, hnsw)

    # Search --------------------------------------------------------------------

    def search(self, mention_texts: Sequence[str], k: int) -> Tuple[np.ndarray, np.ndarray]:
        """(scores, entity_rows), each (n, k): the k best distinct entities per mention."""
        matches = self.match(mention_texts, k)
        return matches.scores, matches.entity_rows

    def match(self, mention_texts: Sequence[str], k: int) -> AliasMatches:
        """Like `search`, plus which alias of each entity matched best.

        Each entity scores the cosine of its best alias (scispacy's rule); ties go to
        the lower alias index. Fewer than k entities are found only when fewer share a
        character n-gram with the mention (or, for "ann", when the HNSW shortlist runs
        into aliases sharing none); the rest of the row is padding, as is the whole row
        of an empty or white-space mention.
        """
        if isinstance(mention_texts, str):
            raise ArboError("search() takes a sequence of mention texts, not a single string.")
        if k < 1:
            raise ArboError(f"k must be at least 1 (got {k}).")
        texts = []
        for i, text in enumerate(mention_texts):
            if not isinstance(text, str):
                raise ArboError(f"Mention {i} is a {type(text).__name__}, not a string.")
            texts.append(text if text.strip() else "")
        if not texts:
            return _padding(0, k)
        queries = self.vectorizer.transform(texts).tocsr()
        per_query = len(self) if self.hnsw is None else max(self.settings["shortlist"], k)
        chunk = int(np.clip(PAIR_BUDGET // per_query, 1, MAX_CHUNK))
        parts = [self._match_chunk(queries[start : start + chunk], k)
                 for start in range(0, len(texts), chunk)]
        return AliasMatches(*(np.concatenate(arrays) for arrays in zip(*parts)))

    def _match_chunk(self, queries: sp.csr_matrix, k: int) -> AliasMatches:
        matches = _padding(queries.shape[0], k)
        pending = np.flatnonzero(np.diff(queries.indptr))  # mentions with known n-grams
        fetch = max(self.settings["shortlist"], k)
        while pending.size:
            fetch = min(fetch, len(self))
            cand_ids, cand_scores = self._alias_candidates(queries[pending], fetch)
            found, count = self._best_entities(cand_ids, cand_scores, k)
            for target, source in zip(matches, found):
                target[pending] = source
            # Fetch more aliases where they were all used up by fewer than k entities.
            more = (count < k) & (cand_ids[:, -1] >= 0) & (fetch < len(self))
            pending = pending[more]
            fetch *= 2
        return matches

    def _alias_candidates(self, queries: sp.csr_matrix, fetch: int) -> Tuple[np.ndarray, np.ndarray]:
        """(alias ids, cosines), each (n, fetch), best first; a row ends in -1 / -inf
        once no further alias is worth fetching."""
        if self.hnsw is None:
            return self._exact_candidates(queries, fetch)
        return self._ann_candidates(queries, fetch)

    def _exact_candidates(self, queries: sp.csr_matrix, fetch: int) -> Tuple[np.ndarray, np.ndarray]:
        if self._alias_columns is None:
            self._alias_columns = self.alias_matrix.T.tocsr()
        product = (queries @ self._alias_columns).tocsr()
        ids = np.full((queries.shape[0], fetch), -1, dtype=np.int64)
        scores = np.full((queries.shape[0], fetch), -np.inf, dtype=np.float32)
        for i in range(queries.shape[0]):
            lo, hi = product.indptr[i], product.indptr[i + 1]
            cosines, aliases = product.data[lo:hi], product.indices[lo:hi]
            if hi - lo > fetch:
                # Keep everything tied with the fetch-th best, so the cut does not depend
                # on the order of the product's entries.
                cut = np.partition(cosines, hi - lo - fetch)[hi - lo - fetch]
                keep = cosines >= cut
                cosines, aliases = cosines[keep], aliases[keep]
            order = np.lexsort((aliases, -cosines))[:fetch]
            ids[i, : order.size] = aliases[order]
            scores[i, : order.size] = cosines[order]
        return ids, scores

    def _ann_candidates(self, queries: sp.csr_matrix, fetch: int) -> Tuple[np.ndarray, np.ndarray]:
        reduced = _project(queries, self.projection)
        # The search beam must be at least as wide as the number of results wanted,
        # or HNSW stops early and pads with -1.
        params = faiss.SearchParametersHNSW(efSearch=fetch)
        _, ids = self.hnsw.search(reduced, fetch, params=params)
        ids = ids.astype(np.int64)
        cosines = self._exact_cosines(queries, ids)
        # An alias sharing no n-gram is no candidate, as with the exact backend. Once the
        # shortlist reaches such aliases it is not grown further: growing it anyway finds
        # few more entities (CTD: recall@64 +0.004) at a seventh of the speed.
        ids = np.where(cosines > 0, ids, -1)
        cosines = np.where(ids >= 0, cosines, -np.inf).astype(np.float32)
        order = np.lexsort((ids, -cosines), axis=1)
        return np.take_along_axis(ids, order, 1), np.take_along_axis(cosines, order, 1)

    def _exact_cosines(self, queries: sp.csr_matrix, ids: np.ndarray) -> np.ndarray:
        n, fetch = ids.shape
        flat = ids.ravel()
        gathered = self.alias_matrix[np.maximum(flat, 0)]
        repeated = queries[np.repeat(np.arange(n), fetch)]
        cosines = np.asarray(gathered.multiply(repeated).sum(axis=1)).ravel()
        cosines[flat < 0] = 0.0
        return cosines.reshape(n, fetch)

    def _best_entities(
        self, cand_ids: np.ndarray, cand_scores: np.ndarray, k: int
    ) -> Tuple[AliasMatches, np.ndarray]:
        """Reduce best-first alias candidates to the first k distinct entities per row."""
        n, fetch = cand_ids.shape
        entities = np.where(cand_ids >= 0, self.alias_rows[np.maximum(cand_ids, 0)], -1)
        # A stable sort by entity keeps each entity's best (earliest) alias first.
        order = np.argsort(entities, axis=1, kind="stable")
        by_entity = np.take_along_axis(entities, order, 1)
        first_sorted = np.ones_like(by_entity, dtype=bool)
        first_sorted[:, 1:] = by_entity[:, 1:] != by_entity[:, :-1]
        first = np.zeros_like(first_sorted)
        np.put_along_axis(first, order, first_sorted, 1)
        first &= entities >= 0
        rank = np.cumsum(first, axis=1) - 1
        r, c = np.nonzero(first & (rank < k))
        matches = _padding(n, k)
        matches.scores[r, rank[r, c]] = cand_scores[r, c]
        matches.entity_rows[r, rank[r, c]] = entities[r, c]
        matches.alias_ids[r, rank[r, c]] = cand_ids[r, c]
        return matches, first.sum(axis=1)

    # Serialization: the format and its checks are in tfidf_format.py ---------------

    def _to_dict(self) -> Dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "fingerprint": self.fingerprint,
            "n_entities": self.n_entities,
            "settings": self.settings,
            "vocabulary": self.vectorizer.get_feature_names_out().tolist(),
            "idf": self.vectorizer.idf_,
            "alias_texts": self.alias_texts,
            "alias_rows": self.alias_rows,
            "alias_matrix": {
                "data": self.alias_matrix.data,
                "indices": self.alias_matrix.indices,
                "indptr": self.alias_matrix.indptr,
                "shape": list(self.alias_matrix.shape),
            },
            "projection": self.projection,
        }

    def to_bytes(self) -> bytes:
        return serialize(self._to_dict(), self.hnsw)

    @classmethod
    def from_bytes(cls, data: bytes, expected_fingerprint: Optional[str] = None) -> "TfidfAliasIndex":
        return cls(**deserialize(data, expected_fingerprint))

    def to_disk(self, path: PathLike) -> None:
        """Write a directory: the arrays as msgpack, plus the HNSW graph for "ann"."""
        write_index(self._to_dict(), self.hnsw, path)

    @classmethod
    def from_disk(cls, path: PathLike, expected_fingerprint: Optional[str] = None) -> "TfidfAliasIndex":
        return cls(**read_index(path, expected_fingerprint))


def _padding(n: int, k: int) -> AliasMatches:
    return AliasMatches(
        np.full((n, k), -np.inf, dtype=np.float32),
        np.full((n, k), -1, dtype=np.int64),
        np.full((n, k), -1, dtype=np.int64),
    )


def _build_hnsw(
    alias_matrix: sp.csr_matrix, reduction: str, ann_dim: int, seed: int
) -> Tuple[np.ndarray, faiss.Index]:
    """Project aliases to `ann_dim` dense dimensions and index them by inner product.

    A seeded Gaussian random projection keeps every n-gram's contribution to the
    cosine in expectation, rare ones included; SVD keeps the directions of most
    variance and so drops the rare n-grams that decide many matches.
    """
    n_features = alias_matrix.shape[1]
    dim = min(ann_dim, n_features)
    if reduction == "svd":
        projection = TruncatedSVD(n_components=dim, random_state=seed).fit(alias_matrix).components_
    else:
        projection = np.random.default_rng(seed).standard_normal((dim, n_features))
    projection = projection.astype(np.float32)
    reduced = _project(alias_matrix, projection)
    hnsw = faiss.IndexHNSWFlat(dim, HNSW_NEIGHBOURS, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    # HNSW insertion order depends on thread scheduling; one thread keeps builds reproducible.
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        hnsw.add(reduced)
    finally:
        faiss.omp_set_num_threads(threads)
    return projection, hnsw


def _project(vectors: sp.csr_matrix, projection: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(normalize(vectors @ projection.T), dtype=np.float32)

