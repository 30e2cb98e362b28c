"""Output that survives a kill: the documents go to numbered shards beside the output
(`OUT.parts/`), each written to a temporary path and renamed, so a shard is either whole or
absent; a rerun of the same command (`job.json` must match) skips the shards that exist, and
the output is put together from the shards in order only when all are there. Shard k always
holds the same documents (the k-th `shard_size` of the good records), so an interrupted and
resumed run writes the same bytes as an uninterrupted one, on one process, several or Ray.
`job.json` is written with the first shard, so a run that stops before it (a refusal, a bad first
record under --strict) leaves nothing that would refuse the next command."""
import json
import shutil
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Tuple, TypeVar

import srsly
from spacy.tokens import Doc, DocBin

from ..util import ArboError, PathLike, atomic_path, read_json
from .records import Record
from .writers import WRITERS, LinkedDocument, json_line

T = TypeVar("T")
# A shard: its index and its records.
Shard = Tuple[int, List[Record]]
JOB_FILE = "job.json"


class RunRefused(ArboError):
    """An error that the same command would meet again: its shards can never be finished, so
    they are removed and the command the error advises starts clean."""


def chunks(items: Iterable[T], size: int) -> Iterator[List[T]]:
    chunk: List[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def write_shard(path: PathLike, fmt: str, linked: List[LinkedDocument], docs: List[Doc]) -> None:
    """A shard, whole or not at all (temp path, then rename): the docs for `spacy`, else the
    linked documents."""
    with atomic_path(path) as tmp:
        if fmt == "spacy":
            DocBin(docs=docs, store_user_data=True).to_disk(tmp)
        else:
            tmp.write_text("".join(map(json_line, linked)), encoding="utf8")


class ShardedOutput:
    """The shards of `output` in format `fmt`: .spacy DocBins for `spacy`, else JSONL lines of
    linked documents, which `finish` writes out as `fmt`."""

    def __init__(self, output: PathLike, fmt: str, job: Dict[str, Any]) -> None:
        self.output, self.fmt, self.job = Path(output), fmt, job
        self.folder = self.output.with_name(self.output.name + ".parts")
        self.suffix = ".spacy" if fmt == "spacy" else ".jsonl"
        self.manifest = self.folder / JOB_FILE
        if self.manifest.exists():
            earlier = read_json(self.manifest)
            if earlier != job:
                changed = sorted(k for k in set(job) | set(earlier) if job.get(k) != earlier.get(k))
                raise ArboError(f"{self.folder} holds the shards of another command (it differs in "
                                f"{', '.join(changed)}): rerun that command to finish it, or remove the folder.")

    def path(self, index: int) -> Path:
        return self.folder / f"{index:08d}{self.suffix}"

    def path_to_write(self, index: int) -> Path:
        """Where shard `index` goes, `job.json` written first if it is not there yet."""
        if not self.manifest.exists():
            with atomic_path(self.manifest) as tmp:
                srsly.write_json(tmp, self.job)
        return self.path(index)

    def done(self, index: int) -> bool:
        return self.path(index).exists()

    def write(self, index: int, linked: List[LinkedDocument], docs: List[Doc]) -> None:
        write_shard(self.path_to_write(index), self.fmt, linked, docs)

    def finish(self, n_shards: int) -> None:
        """Write the output from the shards 0..n_shards-1, in order, then remove them."""
        missing = [i for i in range(n_shards) if not self.done(i)]
        if missing:
            raise ArboError(f"{self.folder}: shards {missing[:5]} are missing; rerun the command to link them.")
        with atomic_path(self.output) as tmp:
            if self.fmt == "spacy":
                merged = DocBin(store_user_data=True)
                for i in range(n_shards):
                    merged.merge(DocBin(store_user_data=True).from_disk(self.path(i)))
                merged.to_disk(tmp)
            else:
                writer, binary = WRITERS[self.fmt]
                with open(tmp, "wb" if binary else "w", **({} if binary else {"encoding": "utf8"})) as handle:
                    writer(self.linked_documents(n_shards), handle)
        shutil.rmtree(self.folder)

    def discard(self, unless_a_shard: bool = False) -> None:
        """Remove the shards folder of a run that read no document or was refused (`RunRefused`),
        or (`unless_a_shard`) of one that failed before any shard was written (a Ray run writes
        `job.json` as it sends out its first shard)."""
        if not (unless_a_shard and any(self.folder.glob(f"*{self.suffix}"))):
            shutil.rmtree(self.folder, ignore_errors=True)

    def linked_documents(self, n_shards: int) -> Iterator[LinkedDocument]:
        for i in range(n_shards):
            with open(self.path(i), encoding="utf8") as handle:
                yield from map(json.loads, handle)
