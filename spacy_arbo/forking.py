"""Make torch safe to use in forked worker processes (`nlp.pipe(docs, n_process=2)`).

A child forked from a process whose torch already ran its intra-op thread pool
(OpenMP) inherits that pool's state but not its threads, and its first parallel
operation waits for them forever. Each child therefore runs torch on one thread;
with n_process workers that is also what keeps them from oversubscribing the CPUs.
"""
import os
import sys


def _single_threaded_torch() -> None:
    # Only a torch the parent already imported can be in that state; a child that
    # imports torch itself gets a fresh pool.
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


_registered = False


def register_fork_handler() -> None:
    """Once per process: forked children run torch on one thread."""
    global _registered
    if not _registered:
        os.register_at_fork(after_in_child=_single_threaded_torch)
        _registered = True
