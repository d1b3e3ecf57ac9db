"""Dask's preload for the worker processes of `--scheduler local` (cluster.py):
`dask_setup` runs in each as it starts. A module of its own, so that it imports nothing
more (segments.py brings numba and cairo)."""

from __future__ import annotations

import signal


def dask_setup(worker) -> None:
    # A terminal's Ctrl-C signals its whole foreground process group, these workers too:
    # each would print its own traceback while the driver is shutting the cluster down.
    # The driver alone handles it, and closing the cluster stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
