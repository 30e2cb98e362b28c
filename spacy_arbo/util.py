"""Small helpers shared across the package: atomic writes and user-facing errors."""
import codecs
import contextlib
import glob
import gzip
import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional, Tuple, Union

import srsly

PathLike = Union[str, Path]


class ArboError(ValueError):
    """An error caused by user input (a file, a config value, a document).

    The CLI prints these as a one-line message instead of a traceback.
    """


class ArboWarning(UserWarning):
    """Input that can be used but will give worse results than it seems (a corpus some of
    whose gold ids the KB lacks); the CLI prints these as one line too."""


# Temporary folders are named `.NAME.PID.XXXXXXXX` (PID of the writer), so a later
# write can tell folders of killed writers from those of live ones. Earlier versions
# named them `.NAME.XXXXXXXX` and wrote NAME directly inside.
_TEMP_SUFFIX = re.compile(r"(?:(\d{1,7})\.)?[a-z0-9_]{8}")


@contextlib.contextmanager
def atomic_path(path: PathLike) -> Iterator[Path]:
    """Yield a temporary path next to `path`; move it onto `path` only on success.

    Works for files and directories alike, so a crash never leaves a half-written
    store, index or pipeline behind. An existing directory is renamed aside before
    the new one is renamed in and deleted only after, so at every moment either the
    old or the new output exists (or, after a kill between the two renames, the old
    one waits aside and the next write to `path` puts it back). Temporary folders
    of writers that were killed are removed by the next write to the same path.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_temps(path)
    work = Path(tempfile.mkdtemp(prefix=f".{path.name}.{os.getpid()}.", dir=path.parent))
    tmp, aside = work / "new" / path.name, work / "old" / path.name
    tmp.parent.mkdir()
    try:
        yield tmp
        move_aside = path.is_dir() and not path.is_symlink()
        if move_aside:
            aside.parent.mkdir()
            os.replace(path, aside)
        try:
            os.replace(tmp, path)
        except BaseException:
            if move_aside:
                os.replace(aside, path)
            raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def clean_stale_temps(path: PathLike) -> None:
    """Remove the temporary folders that killed writers of `path` left beside it.

    Only folders named and laid out by `atomic_path` for this very `path`, whose
    writer process is gone, are touched. If `path` itself is missing because its
    writer was killed between moving the old output aside and moving the new one
    in, the old output is put back first.
    """
    path = Path(path)
    prefix = f".{path.name}."
    for folder in path.parent.glob(glob.escape(prefix) + "*"):
        if not _is_stale_temp(folder, folder.name[len(prefix):], path.name):
            continue
        aside = folder / "old" / path.name
        if aside.exists() and not os.path.lexists(path):
            os.replace(aside, path)
        shutil.rmtree(folder, ignore_errors=True)


def _is_stale_temp(folder: Path, suffix: str, name: str) -> bool:
    match = _TEMP_SUFFIX.fullmatch(suffix)
    if not match or folder.is_symlink() or not folder.is_dir():
        return False
    pid = match.group(1)
    if not set(os.listdir(folder)) <= ({"new", "old"} if pid else {name}):
        return False  # not laid out as ours: somebody else's folder
    return pid is None or not _process_alive(int(pid))


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        # A killed writer that had our pid (pids repeat across containers); our own
        # writes remove their folders before returning.
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


def read_lines(path: Path) -> Iterator[Tuple[int, str]]:
    """(1-based line number, line without its newline); `.gz` files are decompressed, a UTF-8
    byte order mark is skipped, and bytes that are not UTF-8 are an error naming their line."""
    for number, raw in _raw_lines(path):
        yield number, _decode_line(raw, f"{path}:{number}")


def _raw_lines(path: Path) -> Iterator[Tuple[int, bytes]]:
    """`read_lines`' lines undecoded, so that a reader can skip a line that is not UTF-8 and go on."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                yield number, raw[len(codecs.BOM_UTF8):] if number == 1 and raw.startswith(codecs.BOM_UTF8) else raw
    except (OSError, EOFError) as err:
        raise ArboError(f"{path}: cannot read ({err}).") from None


def _decode_line(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf8").rstrip("\n").rstrip("\r")
    except UnicodeDecodeError as err:
        raise ArboError(f"{where}: not UTF-8 (byte 0x{raw[err.start]:02x}, the line's byte {err.start + 1}); "
                        "convert the file to UTF-8, e.g. `iconv -f latin1 -t utf-8`.") from None


def read_json(path: Path) -> Any:
    """A JSON file's content; a file that does not parse is an error naming it."""
    try:
        return srsly.read_json(path)
    except OSError as err:
        raise ArboError(f"{path}: cannot read ({err.strerror or err}).") from None
    except ValueError as err:  # UnicodeDecodeError is one
        raise ArboError(f"{path}: not valid JSON ({err}).") from None


def read_msgpack(path: Path, what: str) -> Any:
    """A msgpack file's content; a file that does not parse is an error naming it and
    `what` it should hold."""
    try:
        return srsly.read_msgpack(path)
    except OSError as err:
        raise ArboError(f"{path}: cannot read {what} ({err.strerror or err}).") from None
    except Exception as err:  # msgpack raises several unrelated types
        raise ArboError(f"{path}: cannot read {what} ({type(err).__name__}: {err}).") from None


def read_json_objects(path: Path, bad: Optional[Callable[[ArboError], None]] = None
                      ) -> Iterator[Tuple[int, str, Dict[str, Any]]]:
    """(line number, `path:line`, object) for each non-blank line of a JSONL file: every JSONL
    reader's lines, each reader checking its own fields. A line that is not UTF-8, not JSON or not
    a JSON object is an error naming `path:line`: raised, or, given `bad`, passed to it and the line
    skipped (a corpus job reads past a bad record)."""
    for number, raw in _raw_lines(path):
        where = f"{path}:{number}"
        try:
            record = _json_object(raw, where)
        except ArboError as err:
            if bad is None:
                raise
            bad(err)
            continue
        if record is not None:
            yield number, where, record


def _json_object(raw: bytes, where: str) -> Optional[Dict[str, Any]]:
    """The object a JSONL line holds; None for a blank line."""
    line = _decode_line(raw, where)
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise ArboError(f"{where}: not a JSON object (invalid JSON: {err.msg} at column {err.colno}).") from None
    if not isinstance(record, dict):
        raise ArboError(f"{where}: expected a JSON object.")
    return record


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_sha256(path: Path, sha256: str, recorded_in: str) -> None:
    """Refuse a file whose sha256 is not the one recorded (in `recorded_in`) when it was
    written: checked before a reader that crashes or misreads damaged bytes sees it."""
    try:
        found = file_sha256(path)
    except OSError as err:
        raise ArboError(f"{path}: cannot read ({err.strerror}).") from None
    if found != sha256:
        raise ArboError(f"{path}: contents do not match {recorded_in} (corrupt file).")
