"""Entity vectors kept on disk by what made them, so a KB is encoded once per encoder (and the
small results fitted by linking with them, such as the label-free confidence, once per linker).

Initializing a linker on a large KB is mostly encoding its names, and every process that
initializes the same pipeline (a notebook restarted, `spacy assemble` run again, a Ray worker)
would encode them again. The key hashes everything the vectors depend on: the entity-side weights,
the precision and batch size they were encoded at, and every entity text in order; so a changed KB,
template or encoder never meets a stale entry. Entries are written to a temporary file and renamed,
so processes that encode the same KB at once each write a whole file and readers never see half of
one; a damaged entry is encoded again. `SPACY_ARBO_CACHE` names the folder (default
`~/.cache/spacy_arbo/vectors`, under `XDG_CACHE_HOME` where set); `off` turns the cache off."""
import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import BinaryIO, Callable, Optional, Sequence, TypeVar

import numpy as np

from ..util import ArboError, ArboWarning, atomic_path
from .templates import EntityInput

T = TypeVar("T")
ENV = "SPACY_ARBO_CACHE"
# Part of every key: bump it when the way entity texts are encoded changes (not their weights or texts).
FORMAT = "entity-vectors-v1"
# Fewer texts than this encode faster than a file is worth (toy KBs, tests, KB updates).
MIN_TEXTS = 1000
# Entries kept, the least recently used removed first (an entry of CTD's names is about 120 MB).
MAX_ENTRIES = 8


def default_cache_dir() -> Optional[Path]:
    """The cache folder `SPACY_ARBO_CACHE` names, or the user's cache folder; None when off."""
    value = os.environ.get(ENV)
    if value is not None:
        return None if value.strip().lower() in ("", "off", "0", "false", "no") else Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "spacy_arbo" / "vectors"


def cache_key(encoder_key: str, texts: Sequence[EntityInput]) -> str:
    digest = hashlib.sha256(f"{FORMAT}\0{encoder_key}\0{len(texts)}".encode("utf8"))
    for text in texts:
        digest.update(json.dumps([text.title, text.description, [list(t) for t in text.triplets]],
                                 ensure_ascii=False).encode("utf8"))
        digest.update(b"\0")
    return digest.hexdigest()


class VectorCache:
    """Vectors of entity texts in `root`, one .npy file per key."""

    def __init__(self, root: Path, min_texts: Optional[int] = None, max_entries: Optional[int] = None) -> None:
        self.root = Path(root)
        self.min_texts = MIN_TEXTS if min_texts is None else min_texts
        self.max_entries = MAX_ENTRIES if max_entries is None else max_entries

    def path(self, key: str) -> Path:
        return self.root / f"{key}.npy"

    def encode(self, encoder_key: str, texts: Sequence[EntityInput],
               encode: Callable[[Sequence[EntityInput]], np.ndarray]) -> np.ndarray:
        """The vectors of `texts`: read when an entry for them exists, else encoded and kept."""
        if len(texts) < self.min_texts:
            return encode(texts)
        key = cache_key(encoder_key, texts)
        vectors = self.read(key, len(texts))
        if vectors is None:
            vectors = encode(texts)
            self.write(key, vectors)
        return vectors

    def remember(self, what: str, make: Callable[[], bytes], load: Callable[[bytes], T]) -> T:
        """`load` of the bytes `make` gives for `what` (a string naming everything they depend
        on): read when made before, else made and kept. An entry `load` refuses (an ArboError)
        is damaged: made again."""
        path = self.root / f"{hashlib.sha256(f'{FORMAT}{what}'.encode('utf8')).hexdigest()}.bin"
        if path.exists():
            try:
                loaded = load(path.read_bytes())
                os.utime(path)
                return loaded
            except (OSError, ArboError) as err:
                warnings.warn(f"{path}: a damaged cache entry ({err}); made again.", ArboWarning)
        data = make()
        self._write_whole(path, lambda out: out.write(data))
        return load(data)

    def read(self, key: str, rows: int) -> Optional[np.ndarray]:
        path = self.path(key)
        if not path.exists():
            return None
        try:
            vectors = np.load(path, allow_pickle=False)
            if vectors.ndim != 2 or vectors.shape[0] != rows or vectors.dtype != np.float32:
                raise ValueError(f"shape {vectors.shape}, dtype {vectors.dtype}; expected {rows} rows of float32")
        except (OSError, ValueError, EOFError) as err:
            warnings.warn(f"{path}: a damaged entity-vector cache entry ({err}); encoding again.", ArboWarning)
            return None
        os.utime(path)  # recently used: the last to be removed
        return vectors

    def write(self, key: str, vectors: np.ndarray) -> None:
        self._write_whole(self.path(key), lambda out: np.save(
            out, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False))

    def _write_whole(self, path: Path, write: Callable[[BinaryIO], None]) -> None:
        """Write `path` whole or not at all (`atomic_path`: a temp folder per process, so processes
        writing one entry at once each rename a whole file in); a cache that cannot be written is
        only a warning. The least recently used entries past `max_entries` are removed."""
        try:
            with atomic_path(path) as tmp, open(tmp, "wb") as out:
                write(out)
        except OSError as err:
            warnings.warn(f"{self.root}: not cached ({err}).", ArboWarning)
            return
        self.prune()

    def prune(self) -> None:
        """Remove the least recently used entries past `max_entries` (of each kind)."""
        for pattern in ("*.npy", "*.bin"):
            entries = sorted(self.root.glob(pattern), key=_last_used, reverse=True)
            for path in entries[self.max_entries:]:
                path.unlink(missing_ok=True)


def _last_used(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed by another process meanwhile
        return 0.0


def default_cache() -> Optional[VectorCache]:
    root = default_cache_dir()
    return None if root is None else VectorCache(root)
