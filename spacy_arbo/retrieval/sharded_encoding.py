"""Encode a KB's entity texts on several Ray workers, for KBs too large for one process.

Each worker (a Ray actor) loads the saved pipeline once and rebuilds the entity texts
from it, so only shard ranges travel to the workers; each shard's vectors come back as a
.npy file in a folder the driver reads, so a large KB never travels as one object. Shards
are whole batches of the order one process encodes in (by length), so every batch, and
hence every vector, is the one a single process computes, bf16 rounding included. The
driver puts the shards' rows back in place and builds the index as `refresh_index` does.
"""
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple

import numpy as np
from tqdm import tqdm

from ..encoders.batching import length_order
from ..encoders.templates import EntityInput, entity_length
from ..kb.store import BaseEntityStore, open_store
from ..util import ArboError, PathLike

# Texts per shard: small enough for an even load and a live progress bar, large enough
# that the per-call overhead of Ray is noise.
SHARD_SIZE = 4096


def import_ray(purpose: str = "Encoding on several workers"):
    try:
        import ray
    except ImportError:
        raise ArboError(f"{purpose} needs Ray: pip install 'spacy-arbo[ray]'.") from None
    return ray


class Linker(Protocol):
    """What sharded encoding uses of an `arbo_linker`: this layer knows the component
    only by these names, and loads it by its factory name, never by importing it."""

    name: str
    cfg: Dict[str, Any]
    settings: Any
    retriever: Any

    def set_kb(self, kb: BaseEntityStore) -> None: ...

    def configure(self, **settings: Any) -> Any: ...

    def index_fingerprint(self) -> str: ...

    def encode_entities(self, entities: Sequence[EntityInput], progress: bool = False) -> np.ndarray: ...


def load_linker(pipeline: PathLike, component: str, kb_dir: Optional[PathLike]) -> Linker:
    """The pipeline's linker, over the KB in `kb_dir` when one is given (as `index-kb` does)."""
    import spacy

    nlp = spacy.load(pipeline)
    linker = nlp.get_pipe(component)
    if nlp.get_pipe_meta(component).factory != "arbo_linker":
        raise ArboError(f"'{component}' in {pipeline} is not an arbo_linker.")
    if kb_dir is not None:
        linker.set_kb(open_store(kb_dir))
    return linker


def encoding_order(inputs: Sequence[EntityInput]) -> List[int]:
    """The rows of `inputs` in the order `ArboLinker.encode_entities` batches them."""
    return length_order(inputs, entity_length)


class ShardEncoder:
    """A Ray actor: loads the pipeline once, with the driver's linker settings, then
    encodes shards (ranges of `encoding_order`)."""

    def __init__(self, pipeline: str, component: str, kb_dir: Optional[str], settings: Dict[str, Any],
                 threads: int) -> None:
        import torch

        torch.set_num_threads(threads)
        self.linker = load_linker(pipeline, component, kb_dir)
        self.linker.configure(**settings)
        inputs = self.linker.retriever.entity_texts()[0]
        self.inputs = [inputs[i] for i in encoding_order(inputs)]

    def fingerprint(self) -> str:
        return self.linker.index_fingerprint()

    def encode(self, start: int, end: int, path: str) -> None:
        np.save(path, self.linker.encode_entities(self.inputs[start:end]))


def shard_ranges(n: int, shard_size: int) -> List[Tuple[int, int]]:
    return [(start, min(start + shard_size, n)) for start in range(0, n, shard_size)]


def encode_entities_on_ray(
    linker: Linker,
    pipeline: PathLike,
    *,
    kb_dir: Optional[PathLike] = None,
    workers: int = 2,
    address: Optional[str] = None,
    shard_size: int = SHARD_SIZE,
    shard_dir: Optional[PathLike] = None,
    threads: Optional[int] = None,
    progress: bool = True,
) -> np.ndarray:
    """The vectors of `linker.retriever.entity_texts()`, in row order, encoded by `workers`
    Ray actors: what `linker.refresh_index(vectors=...)` indexes.

    linker: the arbo_linker of the pipeline saved at `pipeline` (with the KB of `kb_dir`
        set, if given), settings changed or not: the workers load the weights and KB from
        disk, take the linker's settings and must then encode the same texts with the same
        weights, which their fingerprints are checked for.
    address: a Ray cluster to join (`ray.init(address=...)`); by default a local runtime
        of `workers` CPUs is started and shut down after. A runtime already initialized in
        this process is used and left running. On a cluster, `pipeline`, `kb_dir` and
        `shard_dir` must be paths every node can read (and write, for `shard_dir`).
    shard_size: texts per shard, rounded up to whole batches (`batch_size`).
    shard_dir: where the workers write their vector shards (in a temporary folder that is
        removed after); default: the system's temporary folder.
    threads: torch threads per worker; default: this machine's cores / `workers`.
    """
    if workers < 1 or shard_size < 1:
        raise ArboError(f"Ray encoding needs workers >= 1 and shard_size >= 1; got {workers} and {shard_size}.")
    ray = import_ray()
    expected = linker.index_fingerprint()  # also: a TF-IDF-only linker has nothing to encode
    order = np.asarray(encoding_order(linker.retriever.entity_texts()[0]), dtype=np.int64)
    batch_size = linker.settings.batch_size
    ranges = shard_ranges(len(order), -(-shard_size // batch_size) * batch_size)
    threads = threads or max(1, (os.cpu_count() or 1) // workers)
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, num_cpus=None if address else workers, include_dashboard=False,
                 logging_level=logging.WARNING)
    try:
        actor = ray.remote(num_cpus=1)(ShardEncoder)
        args = (str(Path(pipeline).resolve()), linker.name, None if kb_dir is None else str(Path(kb_dir).resolve()),
                linker.cfg, threads)
        encoders = [actor.remote(*args) for _ in range(workers)]
        found = set(ray.get([encoder.fingerprint.remote() for encoder in encoders]))
        if found != {expected}:
            raise ArboError(f"The Ray workers loaded {pipeline} as {sorted(found)}, but the linker is {expected}: "
                            "pass the linker of that pipeline, with the KB of kb_dir, weights unchanged since saving.")
        with tempfile.TemporaryDirectory(prefix="arbo-vector-shards-", dir=shard_dir) as folder:
            paths = [str(Path(folder) / f"{i:06d}.npy") for i in range(len(ranges))]
            # Shard i goes to worker i % workers; each works through its queue in order.
            pending = [encoders[i % workers].encode.remote(start, end, path)
                       for i, ((start, end), path) in enumerate(zip(ranges, paths))]
            with tqdm(total=len(pending), desc=f"{linker.name}: encoding entities on {workers} Ray workers",
                      unit="shard", disable=not progress, leave=False) as bar:
                while pending:
                    done, pending = ray.wait(pending, num_returns=1)
                    ray.get(done)  # a worker's error, raised here
                    bar.update(len(done))
            return merge_shards(paths, ranges, order)
    finally:
        if started:
            ray.shutdown()


def merge_shards(paths: List[str], ranges: List[Tuple[int, int]], order: np.ndarray) -> np.ndarray:
    """The shards' rows put back in entity text order, one shard in memory at a time."""
    first = np.load(paths[0], mmap_mode="r")
    vectors = np.empty((len(order), first.shape[1]), dtype=first.dtype)
    for path, (start, end) in zip(paths, ranges):
        vectors[order[start:end]] = np.load(path)
    return vectors
