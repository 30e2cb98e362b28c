"""Small helpers shared across the package: atomic writes and user-facing errors."""
import contextlib
import gzip
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Tuple, Union

PathLike = Union[str, Path]


class ArboError(ValueError):
    """An error caused by user input (a file, a config value, a document).

    The CLI prints these as a one-line message instead of a traceback.
    """


@contextlib.contextmanager
def atomic_path(path: PathLike) -> Iterator[Path]:
    """Yield a temporary path next to `path`; rename it onto `path` only on success.

    Works for files and directories alike, so a crash never leaves a half-written
    store, index or pipeline behind.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent)) / path.name
    try:
        yield tmp
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp.parent, ignore_errors=True)


def read_lines(path: Path) -> Iterator[Tuple[int, str]]:
    """(1-based line number, line without its newline); `.gz` files are decompressed."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf8") as handle:
            for number, line in enumerate(handle, start=1):
                yield number, line.rstrip("\n").rstrip("\r")
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise ArboError(f"{path}: cannot read ({err}).") from None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
