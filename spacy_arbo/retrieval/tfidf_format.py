"""How a TfidfAliasIndex is saved, and the checks a saved one passes before it is used.

A directory holds `tfidf.msgpack` (settings, vocabulary, idf, the sparse alias matrix,
the alias texts and rows, the KB fingerprint), for the "ann" backend `hnsw.faiss`, and
`checksums.json` with the sha256 of both. A damaged file can still parse, into an index
that finds the wrong entities or fails at its first search, and FAISS can crash on a
damaged graph, so the checksums are checked before either file is read; directories
saved before checksums existed are checked field by field only.
"""
from pathlib import Path
from typing import Any, Dict, Optional

import faiss
import numpy as np
import scipy.sparse as sp
import srsly
from sklearn.feature_extraction.text import TfidfVectorizer

from ..util import ArboError, PathLike, atomic_path, check_sha256, file_sha256, read_json, read_msgpack

FORMAT_VERSION = 1
INDEX_FILE = "tfidf.msgpack"
HNSW_FILE = "hnsw.faiss"
CHECKSUM_FILE = "checksums.json"
BACKENDS = ("exact", "ann")
ANALYZERS = ("word", "char", "char_wb")
# Settings a search reads, and their types: a saved index must have them.
SEARCH_SETTINGS = {"analyzer": str, "ngram_range": list, "lowercase": bool, "sublinear_tf": bool,
                   "backend": str, "shortlist": int}


def write_index(state: Dict[str, Any], hnsw: Optional["faiss.Index"], path: PathLike) -> None:
    """Write a directory: the arrays as msgpack, the HNSW graph for "ann", their checksums."""
    with atomic_path(path) as tmp:
        tmp.mkdir()
        srsly.write_msgpack(tmp / INDEX_FILE, state)
        files = [INDEX_FILE]
        if hnsw is not None:
            faiss.write_index(hnsw, str(tmp / HNSW_FILE))
            files.append(HNSW_FILE)
        srsly.write_json(tmp / CHECKSUM_FILE, {name: file_sha256(tmp / name) for name in files})


def read_index(path: PathLike, expected_fingerprint: Optional[str]) -> Dict[str, Any]:
    """The arguments of `TfidfAliasIndex` saved in `path`, checked."""
    path = Path(path)
    index_file, hnsw_file = path / INDEX_FILE, path / HNSW_FILE
    if not index_file.exists():
        raise ArboError(f"No TF-IDF index file at '{index_file}'; build the index first.")
    checksums = _read_checksums(path / CHECKSUM_FILE)
    if checksums is not None:
        check_sha256(index_file, checksums.get(INDEX_FILE, ""), CHECKSUM_FILE)
    state = read_msgpack(index_file, "TF-IDF index")
    hnsw = None
    if isinstance(state, dict) and isinstance(state.get("settings"), dict) and state["settings"].get("backend") == "ann":
        if not hnsw_file.exists():
            raise ArboError(f"No TF-IDF index file at '{hnsw_file}'; build the index first.")
        if checksums is not None:
            check_sha256(hnsw_file, checksums.get(HNSW_FILE, ""), CHECKSUM_FILE)
        try:
            hnsw = faiss.read_index(str(hnsw_file))
        except RuntimeError as err:
            raise ArboError(f"{hnsw_file}: cannot read TF-IDF index ({err}).") from None
    return index_arguments(state, str(index_file), hnsw, expected_fingerprint)


def serialize(state: Dict[str, Any], hnsw: Optional["faiss.Index"]) -> bytes:
    graph = None if hnsw is None else faiss.serialize_index(hnsw).tobytes()
    return srsly.msgpack_dumps({**state, "hnsw": graph})


def deserialize(data: bytes, expected_fingerprint: Optional[str]) -> Dict[str, Any]:
    """The arguments of `TfidfAliasIndex` serialized in `data`, checked."""
    origin = "TF-IDF index bytes"
    try:
        state = srsly.msgpack_loads(data)
        hnsw = state.get("hnsw")
        if hnsw is not None:
            hnsw = faiss.deserialize_index(np.frombuffer(hnsw, dtype=np.uint8))
    except Exception as err:  # msgpack and faiss raise several unrelated types
        raise ArboError(f"{origin}: cannot read TF-IDF index ({err!r}).") from None
    return index_arguments(state, origin, hnsw, expected_fingerprint)


def index_arguments(
    data: Any, origin: str, hnsw: Optional["faiss.Index"], expected_fingerprint: Optional[str]
) -> Dict[str, Any]:
    """The arguments of `TfidfAliasIndex` from its saved state, with every array checked
    against the others, so that a damaged state fails here rather than at a search."""
    if not isinstance(data, dict):
        raise ArboError(f"{origin}: corrupt TF-IDF index (not a mapping).")
    if data.get("format_version") != FORMAT_VERSION:
        raise ArboError(
            f"{origin}: TF-IDF index format {data.get('format_version')} is not supported "
            f"(expected {FORMAT_VERSION}); rebuild it."
        )
    try:
        settings = data["settings"]
        _check_settings(settings)
        vocabulary = data["vocabulary"]
        vectorizer = TfidfVectorizer(
            analyzer=settings["analyzer"],
            ngram_range=tuple(settings["ngram_range"]),
            lowercase=settings["lowercase"],
            sublinear_tf=settings["sublinear_tf"],
            dtype=np.float32,
            vocabulary=vocabulary,
        )
        vectorizer.idf_ = np.asarray(data["idf"])
        matrix = data["alias_matrix"]
        alias_matrix = sp.csr_matrix(
            (np.asarray(matrix["data"]), np.asarray(matrix["indices"]), np.asarray(matrix["indptr"])),
            shape=tuple(matrix["shape"]),
        )
        alias_matrix.check_format(full_check=True)
        alias_texts = list(data["alias_texts"])
        alias_rows = np.asarray(data["alias_rows"], dtype=np.int64)
        n_entities = int(data["n_entities"])
        projection = data["projection"]
        consistent = (
            all(isinstance(term, str) for term in vocabulary)
            and vectorizer.idf_.shape == (len(vocabulary),)
            and alias_matrix.shape == (len(alias_texts), len(vocabulary))
            and alias_rows.shape == (len(alias_texts),)
            and np.all((alias_rows >= 0) & (alias_rows < n_entities))
            and (settings["backend"] == "ann") == (hnsw is not None)
            and (hnsw is None or (
                projection.shape == (hnsw.d, len(vocabulary)) and hnsw.ntotal == len(alias_texts)
            ))
        )
        if not consistent:
            raise ValueError("array shapes disagree")
        fingerprint = data["fingerprint"]
        if not isinstance(fingerprint, str):
            raise TypeError("the KB fingerprint is not a string")
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise ArboError(f"{origin}: corrupt TF-IDF index ({err!r}).") from None
    if expected_fingerprint is not None and fingerprint != expected_fingerprint:
        raise ArboError(
            f"{origin}: TF-IDF index was built for a different KB (fingerprint "
            f"{fingerprint[:12]}, expected {expected_fingerprint[:12]}); rebuild it."
        )
    return {"vectorizer": vectorizer, "alias_matrix": alias_matrix, "alias_rows": alias_rows,
            "alias_texts": alias_texts, "n_entities": n_entities, "fingerprint": fingerprint,
            "settings": settings, "projection": projection, "hnsw": hnsw}


def _check_settings(settings: Any) -> None:
    if not isinstance(settings, dict):
        raise TypeError("settings are not a mapping")
    for name, kind in SEARCH_SETTINGS.items():
        if not isinstance(settings.get(name), kind):
            raise TypeError(f"setting '{name}' is missing or not {kind.__name__}")
    ngrams = settings["ngram_range"]
    if (settings["analyzer"] not in ANALYZERS or settings["backend"] not in BACKENDS or settings["shortlist"] < 1
            or len(ngrams) != 2 or not all(isinstance(n, int) and n >= 1 for n in ngrams)):
        raise ValueError(f"settings out of range: {settings}")


def _read_checksums(file: Path) -> Optional[Dict[str, str]]:
    if not file.exists():  # saved before checksums were written
        return None
    checksums = read_json(file)
    if not isinstance(checksums, dict) or not all(isinstance(v, str) for v in checksums.values()):
        raise ArboError(f"{file}: expected an object of file name -> sha256 (corrupt file).")
    return checksums
