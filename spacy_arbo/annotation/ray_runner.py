"""Linking on Ray: an actor per worker loads the pipeline once and links whole shards, writing
each one itself (atomically, where the driver reads it: on a cluster, a folder every node
shares). A worker that dies is restarted and its shard linked again (`max_task_retries`): the
shard is rewritten whole or was never written, so nothing is lost or doubled. The driver keeps
only a few shards in flight, so memory stays flat whatever the corpus size."""
import logging
import os
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional

from ..pipeline_loading import load_pipeline
from ..retrieval.sharded_encoding import import_ray
from .linked import LinkedDocuments
from .records import Record
from .shards import Shard, ShardedOutput, write_shard
from .writers import LinkedDocument

# Shards queued per worker beyond the one it links: enough that none waits for the driver.
QUEUED_PER_WORKER = 2


class ShardLinker:
    """A Ray actor: the pipeline loaded once, then shards linked and written."""

    def __init__(self, pipeline: str, fmt: str, candidates: int, min_confidence: Optional[float],
                 batch_size: int, threads: int, mentions: str = "pipeline") -> None:
        import torch

        torch.set_num_threads(threads)
        self.documents = LinkedDocuments(load_pipeline(pipeline), candidates, min_confidence, mentions)
        self.fmt, self.batch_size = fmt, batch_size

    def link(self, records: List[Record], path: str) -> List[LinkedDocument]:
        """Link and write one shard; its linked documents go back for the driver's counts."""
        linked, docs = self.documents.link(records, self.batch_size)
        write_shard(path, self.fmt, linked, docs)
        kept = ("kb_id", "review", "start", "end", "source", "linked_span")  # what the driver's counts read
        return [{"mentions": [{k: m[k] for k in kept if k in m} for m in d["mentions"]]} for d in linked]

    def pid(self) -> int:
        return os.getpid()


def link_on_ray(pipeline: Any, shards: Iterable[Shard], output: ShardedOutput, documents: LinkedDocuments, *,
                workers: int, address: Optional[str], batch_size: int,
                on_shard: Callable[[List[LinkedDocument]], None]) -> None:
    """The shards linked by `workers` actors, on the cluster at `address` or a local runtime of
    `workers` CPUs (started and shut down here; one already running in this process is used)."""
    ray = import_ray("Linking on Ray")
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, num_cpus=None if address else workers, include_dashboard=False,
                 logging_level=logging.WARNING)
    try:
        actor = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=-1)(ShardLinker)
        threads = max(1, (os.cpu_count() or 1) // workers) if not address else 1
        args = (str(Path(pipeline).resolve()), output.fmt, documents.candidates, documents.min_confidence,
                batch_size, threads, documents.mentions)
        linkers = [actor.remote(*args) for _ in range(workers)]
        pending: Dict[Any, int] = {}
        for index, records in shards:
            if len(pending) >= workers * (1 + QUEUED_PER_WORKER):
                _collect(ray, pending, on_shard)
            pending[linkers[index % workers].link.remote(records, str(output.path_to_write(index)))] = index
        while pending:
            _collect(ray, pending, on_shard)
    finally:
        if started:
            ray.shutdown()


def _collect(ray: Any, pending: Dict[Any, int], on_shard: Callable[[List[LinkedDocument]], None]) -> None:
    (done,), _ = ray.wait(list(pending), num_returns=1)
    del pending[done]
    on_shard(ray.get(done))  # a worker's error is raised here
