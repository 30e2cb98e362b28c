"""Torch threads that do not fight other processes for the cores.

torch starts one thread per core. When another process keeps some of those cores busy, the
threads of each matrix product wait on each other at every step and encoding slows many times
over; fewer threads, one per core left free, keep most of the speed. Large encodes check how busy
the machine is (a short sample of the cores' time, less this process's own) and use that many.
"""
import os
import time
from contextlib import contextmanager
from typing import Iterator, Optional, Set, Tuple

import psutil
import torch

SAMPLE_SECONDS = 0.1
# How long a sample's answer is kept: a pass over a corpus checks again now and then, not per batch.
RECHECK_SECONDS = 30.0
# The fields of psutil.cpu_times() that are work (guest time is already inside user time).
BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq")
_last: Optional[Tuple[float, float]] = None  # (when, cores busy elsewhere)


def _affinity() -> Optional[Set[int]]:
    """The cores this process may run on (containers and taskset narrow them); None where the
    platform does not say."""
    return os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None


def usable_cores() -> int:
    cores = _affinity()
    return len(cores) if cores is not None else (os.cpu_count() or 1)


def cores_busy_elsewhere(seconds: float = SAMPLE_SECONDS) -> float:
    """How many cores other processes kept busy during a sample of `seconds` (this process sleeps)."""
    own, started, before = psutil.Process(), time.perf_counter(), _busy_seconds()
    own_before = sum(own.cpu_times()[:2])
    time.sleep(seconds)
    after, own_after, elapsed = _busy_seconds(), sum(own.cpu_times()[:2]), time.perf_counter() - started
    return max(0.0, (after - before - (own_after - own_before)) / elapsed)


def _busy_seconds() -> float:
    """Work time so far of the cores this process may use (not of every core of the host)."""
    cores = _affinity()
    return sum(getattr(times, f, 0.0) for i, times in enumerate(psutil.cpu_times(percpu=True))
               if cores is None or i in cores for f in BUSY_FIELDS)


def free_threads(limit: int) -> int:
    """At most `limit` threads, one per core that other processes leave free (at least one)."""
    global _last
    now = time.monotonic()
    if _last is None or now - _last[0] > RECHECK_SECONDS:
        _last = (now, cores_busy_elsewhere())
    return max(1, min(limit, round(usable_cores() - _last[1])))


@contextmanager
def threads_beside_other_work() -> Iterator[int]:
    """Inside the block torch uses `free_threads` of its current number; restored after."""
    threads = torch.get_num_threads()
    chosen = free_threads(threads)
    if chosen != threads:
        torch.set_num_threads(chosen)
    try:
        yield chosen
    finally:
        if chosen != threads:
            torch.set_num_threads(threads)
