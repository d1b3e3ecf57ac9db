"""Where frames are drawn: threads of this process (`Threads`), or a Dask cluster
(`Cluster`). A render takes one of these values; nothing else decides it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def default_workers() -> int:
    """The cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)


def drawing_threads() -> int:
    """How many threads draw by default: a core each, less the main thread's (it
    simulates and hands frames to the writer, or to ffmpeg, which wants cores too), at
    least one. Every kernel lets go of the GIL, so they all run at once: a 3D export of
    20,000 birds at 1080p on two cores took 22.9 s with one drawing thread against 23.6 s
    with two (docs/performance.md)."""
    return max(default_workers() - 1, 1)


@dataclass(frozen=True)
class Threads:
    """`workers` threads of this process draw frames while its main thread simulates and
    hands finished frames, in order, to the writer."""

    workers: int = field(default_factory=drawing_threads)


@dataclass(frozen=True)
class Cluster:
    """A Dask cluster draws and encodes: `address` a scheduler's (e.g.
    tcp://10.0.0.5:8786), or "local" for a LocalCluster of `workers` single-threaded
    processes on this machine (None: the cores this process may use; a remote cluster's
    workers are set where they start). cache_dir: storage every worker reads, through
    which the states travel (None: inside each task)."""

    address: str = "local"
    workers: int | None = None
    cache_dir: str | Path | None = None


Executor = Threads | Cluster
