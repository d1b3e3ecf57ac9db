"""The settled state of a 3D scene, kept on disk: a 3D flock settles for tens of seconds
of flight before frame 0, and a still after a render, a second still or a resume should
not pay for that again.

The file is <user cache>/boids-render/settled/<key>.npz, the key a sha256 over every
setting that decides the settled state (the seed, dt, settle_steps, the world, the flock,
the rules, flight and roost, the follow camera's spring, which settles with the flock,
and whether a hunt keeps the neighbours it reads) and the sources the simulation runs
(`sources`: an edit to the loop's morph or to the diagnostics keeps the states); written
atomically. The folder keeps the states used last, up to KEEP_BYTES (`prune`). Only
`load` and `save` import numpy: render.budget reads `path` to know whether a render will
settle.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..scene import Scene
from .cache import files_digest, user_cache_dir

if TYPE_CHECKING:
    import numpy as np

_PACKAGE = Path(__file__).resolve().parents[1]
_SECTIONS = ("world", "flock", "rules", "flight", "roost")
# render/sim's modules that only read the simulation's states, never feed them: the loop's
# morph and its pairing, the diagnostics (tests/test_step3d.py checks that a settling
# imports none of them, and nothing of the package outside `sources`).
READERS = ("loop.py", "pairing.py", "diagnostics.py", "diagnostics3d.py")
FIELDS = ("positions", "velocities", "bank", "radius", "homing", "follow", "lists_idx",
          "lists_kth", "lists_count")


def key(scene: Scene) -> str:
    """The hex sha256 naming this scene's settled state."""
    body = scene.to_dict()
    what = {name: body.get(name) for name in _SECTIONS}
    what["scene"] = {k: body["scene"][k] for k in ("seed", "dt", "settle_steps")}
    what["accent_every"] = scene.render.accent_every
    camera = body.get("camera") or {}
    following = camera.get("follow", "none") != "none"
    what["follow_time"] = camera.get("follow_time") if following else None
    # A hunt's settling steps keep each bird's neighbours for the hawk's first target and
    # the waves (the hunt itself starts at frame 0 or later: scene.checks3d).
    what["hunt"] = scene.hawk is not None and scene.hawk.mode == "hunt"
    text = json.dumps(what, sort_keys=True) + files_digest(sources(), _PACKAGE)
    return hashlib.sha256(text.encode()).hexdigest()


def sources(package: Path = _PACKAGE) -> list[Path]:
    """The source files a settled state follows, in the package at `package`: render/sim's
    but its READERS, and the ranking the landing orders its birds by."""
    sim = package / "sim"
    return [path for path in sim.rglob("*.py")
            if path.relative_to(sim).as_posix() not in READERS] + [package / "ranking.py"]


def path(scene: Scene) -> Path:
    return user_cache_dir() / "boids-render" / "settled" / f"{key(scene)}.npz"


def load(scene: Scene) -> dict[str, np.ndarray] | None:
    """The arrays FIELDS of this scene's settled state, or None when not kept (or the file
    is unreadable: then it is settled again and rewritten)."""
    import numpy as np

    kept = path(scene)
    try:
        with np.load(kept) as data:
            arrays = {name: data[name] for name in FIELDS}
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):
        return None  # missing, or damaged (cut short, emptied, overwritten)
    with contextlib.suppress(OSError):
        os.utime(kept)  # used now: the last to go (`prune`)
    return arrays


def save(scene: Scene, arrays: dict[str, np.ndarray]) -> None:
    """Keep the settled state; a folder that cannot be written is skipped silently (the
    cache only saves time)."""
    import numpy as np

    target = path(scene)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, target)
        prune(target.parent)
    except OSError:
        pass
    finally:
        # A full disk leaves no half-written state behind (sim/ does not import encode's
        # write_atomically: the simulator stays below the encoders).
        Path(tmp).unlink(missing_ok=True)


# The settled states kept, at most: a cache, not an archive. A state is about 140 bytes a
# bird (140 MB at 1,000,000 birds), and every scene, seed and flock size has its own.
KEEP_BYTES = 2 * 2 ** 30


def prune(folder: Path, keep_bytes: int = KEEP_BYTES) -> None:
    """Remove from `folder` the settled states used longest ago (read or written: their
    modification time) until the others fit in `keep_bytes`; the newest is always kept."""
    states = []
    for state in folder.glob("*.npz"):
        with contextlib.suppress(OSError):  # another process pruned it meanwhile
            stat = state.stat()
            states.append((stat.st_mtime, stat.st_size, state))
    states.sort(key=lambda entry: entry[0], reverse=True)
    total = 0
    for rank, (_, size, state) in enumerate(states):
        total += size
        if rank > 0 and total > keep_bytes:
            state.unlink(missing_ok=True)
