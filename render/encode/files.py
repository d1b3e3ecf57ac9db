"""Temporary files beside their target, renamed into place only when complete."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# mkstemp's files are private (0600); a finished output gets the usual permissions.
_UMASK = os.umask(0)
os.umask(_UMASK)


def temp_beside(path: Path, suffix: str) -> Path:
    """An empty temporary file in `path`'s folder (so the final rename is atomic)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.",
                               suffix=".partial" + suffix)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_UMASK)
    return Path(tmp)
