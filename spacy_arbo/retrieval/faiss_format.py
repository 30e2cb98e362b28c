"""How a FaissIndex is saved, and the checks a saved one passes before FAISS reads it.

A directory holds `index.faiss` (FAISS's own format) and `index.json`: kind, dimension,
count, metric, the fingerprint of the encoder that made the vectors and the sha256 of
the index file. FAISS turns a damaged file into a crash or an index of nonsense, so the
file must match its checksum before FAISS reads it, and the metadata must name this
pipeline's encoder, so that a pipeline refuses an index from another one.
`FaissIndex.to_bytes` keeps the same metadata beside the serialized index.
"""
import hashlib
import json
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import faiss
import numpy as np
import srsly

from ..util import ArboError, PathLike, atomic_path, check_sha256, file_sha256
from .faiss_checks import METRICS

INDEX_FILE = "index.faiss"
META_FILE = "index.json"
FORMAT_VERSION = 1
KINDS = ("flat", "hnsw", "ivfpq", "ivfsq")
# The metadata fields a saved index must have, and their types.
META_FIELDS = {"format_version": int, "kind": str, "dim": int, "count": int, "metric": str,
               "params": dict, "fingerprint": str, "sha256": str}
# What a FaissIndex knows of itself beyond FAISS's index: kind, metric, params, fingerprint.
Description = Dict[str, Any]


def write_index(index: "faiss.Index", description: Description, path: PathLike) -> None:
    """Write `path/index.faiss` and `path/index.json` atomically."""
    with atomic_path(path) as tmp:
        tmp.mkdir()
        faiss.write_index(index, str(tmp / INDEX_FILE))
        srsly.write_json(tmp / META_FILE, index_meta(index, description, file_sha256(tmp / INDEX_FILE)))


def read_index(
    path: PathLike, expected_fingerprint: Optional[str], expected_dim: Optional[int]
) -> Tuple["faiss.Index", Dict[str, Any]]:
    """The index in `path` and its metadata, checked (see `check_meta`)."""
    path = Path(path)
    meta_file, index_file = path / META_FILE, path / INDEX_FILE
    if not meta_file.exists():
        raise ArboError(f"No FAISS index at '{path}' (missing {META_FILE}).")
    try:
        # The standard library parses floats (recall figures) exactly; srsly's ujson does not.
        meta = json.loads(meta_file.read_text(encoding="utf8"))
    except (OSError, ValueError) as err:  # UnicodeDecodeError is a ValueError
        raise ArboError(f"{meta_file}: cannot read index metadata ({err}).") from None
    check_meta(meta, str(meta_file), f"index at '{path}'", expected_fingerprint, expected_dim)
    if not index_file.exists():
        raise ArboError(f"{index_file}: missing; the index at '{path}' is incomplete.")
    check_sha256(index_file, meta["sha256"], META_FILE)
    try:
        index = faiss.read_index(str(index_file))
    except RuntimeError as err:
        raise ArboError(f"{index_file}: cannot read FAISS index ({err}).") from None
    check_loaded(index, meta, str(index_file))
    return index, meta


def index_from_blob(
    blob: Any, meta: Any, origin: str, expected_fingerprint: Optional[str], expected_dim: Optional[int]
) -> "faiss.Index":
    """The index serialized in `blob`, which `meta` describes (as `FaissIndex.to_bytes` keeps them)."""
    check_meta(meta, origin, origin, expected_fingerprint, expected_dim)
    if not isinstance(blob, bytes) or hashlib.sha256(blob).hexdigest() != meta["sha256"]:
        raise ArboError(f"{origin}: index data do not match its metadata (corrupt data).")
    try:
        index = faiss.deserialize_index(np.frombuffer(blob, dtype=np.uint8))
    except RuntimeError as err:
        raise ArboError(f"{origin}: cannot read FAISS index ({err}).") from None
    check_loaded(index, meta, origin)
    return index


def index_meta(index: "faiss.Index", description: Description, sha256: str) -> Dict[str, Any]:
    return {
        "format_version": FORMAT_VERSION,
        "kind": description["kind"],
        "dim": index.d,
        "count": index.ntotal,
        "metric": description["metric"],
        "params": description["params"],
        "fingerprint": description["fingerprint"],
        "faiss_version": faiss.__version__,
        "sha256": sha256,
    }


def check_meta(
    meta: Any,
    origin: str,
    where: str,
    expected_fingerprint: Optional[str],
    expected_dim: Optional[int],
) -> None:
    """Check metadata fields, then that the index fits the pipeline's encoder."""
    if not isinstance(meta, dict):
        raise ArboError(f"{origin}: index metadata is not a mapping (corrupt metadata).")
    for field, type_ in META_FIELDS.items():
        if not isinstance(meta.get(field), type_):
            raise ArboError(f"{origin}: index metadata lacks a valid '{field}' "
                            "(corrupt metadata).")
    if meta["format_version"] != FORMAT_VERSION:
        raise ArboError(f"{origin}: index format version {meta['format_version']} is not "
                        f"supported (expected {FORMAT_VERSION}); rebuild the index.")
    if meta["kind"] not in KINDS or meta["metric"] not in METRICS:
        raise ArboError(f"{origin}: unknown index kind '{meta['kind']}' or metric "
                        f"'{meta['metric']}' (corrupt metadata).")
    if expected_fingerprint is not None and meta["fingerprint"] != expected_fingerprint:
        raise ArboError(
            f"The {where} was built by encoder {meta['fingerprint']!r} but the pipeline's "
            f"encoder is {expected_fingerprint!r}; rebuild the index."
        )
    if expected_dim is not None and meta["dim"] != expected_dim:
        raise ArboError(
            f"The {where} holds {meta['dim']}-dimensional vectors but the pipeline's "
            f"encoder makes {expected_dim}-dimensional ones; rebuild the index."
        )


def check_loaded(index: "faiss.Index", meta: Dict[str, Any], origin: str) -> None:
    if index.d != meta["dim"] or index.ntotal != meta["count"]:
        raise ArboError(
            f"{origin}: holds {index.ntotal} vectors of dimension {index.d} but its "
            f"metadata says {meta['count']} of dimension {meta['dim']} (corrupt index)."
        )
