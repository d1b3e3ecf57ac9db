"""The process's environment, changed for a while: what child processes and libraries
loaded meanwhile read."""

from __future__ import annotations

import os
from contextlib import contextmanager


@contextmanager
def setenv(**values: str):
    """os.environ with `values` set while inside, as it was after; yields a copy of it
    for the subprocesses run meanwhile."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield dict(os.environ)
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
