"""Where numba keeps the package's compiled kernels (the simulator's, the 3D drawing's and
the loop's). Imports no numba.

numba invalidates a cached kernel when the file defining it changes, but a kernel is
compiled together with the kernels it calls from other files (step.py inlines neighbours.py,
motion.py and every force) and with the constants it reads from them (the 3D streaks'
haze from sky.py, the sky's and the compositor's encoding steps from colour.py): after an
edit there, the old machine code would still load. So the cache folder is named after the
sources of the whole package (and its place), and any edit to any of them starts a fresh
folder. The settled states (settled.py) are named after the sources of the simulation alone.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import platform
import stat
import sys
import tempfile
import warnings
from pathlib import Path

_SIM = Path(__file__).resolve().parent


def sources_digest(root: Path = _SIM) -> str:
    """16 hex digits of the sha256 over every source file under `root` (names and bytes):
    by default render/sim's."""
    return files_digest(root.rglob("*.py"), root)


def files_digest(files, root: Path) -> str:
    """16 hex digits of the sha256 over `files` (their names relative to `root`, and their
    bytes), whatever their order."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def user_cache_dir() -> Path:
    """The platform's per-user cache folder (XDG on Linux, Library/Caches on macOS,
    LOCALAPPDATA on Windows)."""
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def kernels_digest(package: Path = _SIM.parent) -> str:
    """16 hex digits naming the kernels folder of the package at `package`: its sources'
    digest and its place. numba files a kernel under the path of its source, so another
    checkout of the same sources compiles its own: with the place left out, its kernels
    made this one's first run look like a warm start (no note, a minute of silence)."""
    key = f"{sources_digest(package)}\0{package.resolve()}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def use_numba_cache() -> None:
    """Point NUMBA_CACHE_DIR at <user cache>/boids-render/numba-<`kernels_digest`>,
    unless it is set already. numba reads it once, on its first import: call this
    before that. Imported already (a notebook that imported numba first), numba keeps
    its own folder and its own target processor: a warning says so, and the variable
    stays unset, so the check for a first run (`states.kernels_cached`) looks where
    numba does."""
    if "numba" in sys.modules and "NUMBA_CACHE_DIR" not in os.environ:
        warnings.warn("numba was imported before boids-render: it keeps the kernels in "
                      "its own cache and compiles them for this processor, so frames may "
                      "differ in their last bits from the command line's; import render "
                      "before numba", RuntimeWarning, stacklevel=2)
        return
    name = f"numba-{kernels_digest()}"
    folder = user_cache_dir() / "boids-render" / name
    if "NUMBA_CACHE_DIR" not in os.environ:
        if not folder.exists():
            drop_stale_kernels(folder.parent)  # a new version's first run: the old ones'
        if not writable(folder):
            # A read-only home (a container's, a locked-down account's): numba refused
            # every kernel ("no locator available"), or compiled them all on every run.
            folder = _own_temporary_folder() / name
    os.environ.setdefault("NUMBA_CACHE_DIR", str(folder))
    portable_target()


def writable(folder: Path) -> bool:
    """Whether `folder` is, or can be made, a folder this process can write files in."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


def _own_temporary_folder() -> Path:
    """This user's folder in the shared temporary folder, made private (0700) if new. One
    found there that another user owns, or that others may write in, is not used (numba's
    cache index is a pickle: a kernel planted there would run as this user): a new
    private folder is made instead, whose kernels last one run."""
    folder = Path(tempfile.gettempdir()) / f"boids-render-{_user()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        found = folder.lstat()
    except OSError:
        found = None
    if found is not None and stat.S_ISDIR(found.st_mode) and not found.st_mode & 0o022 \
            and (not hasattr(os, "getuid") or found.st_uid == os.getuid()):
        return folder
    return Path(tempfile.mkdtemp(prefix="boids-render-"))


def _user() -> str:
    """This user, as a folder's name tells users apart in a shared temporary folder."""
    return str(os.getuid()) if hasattr(os, "getuid") else getpass.getuser()


# Kernels of other sources (an older version, an edited checkout) unused this long go.
STALE_DAYS = 30


def drop_stale_kernels(root: Path, days: float = STALE_DAYS) -> None:
    """Remove each numba-* folder under `root` none of whose files was read or written in
    `days` days (by their access times, which Linux's default relatime keeps to the day,
    and modification times)."""
    import shutil
    import time

    def used(path: Path) -> float:
        stat = path.stat()
        return max(stat.st_atime, stat.st_mtime)

    cutoff = time.time() - days * 86400
    for folder in root.glob("numba-*"):
        try:
            newest = max((used(p) for p in folder.rglob("*") if p.is_file()),
                         default=used(folder))
        except OSError:  # another process removed it meanwhile
            continue
        if newest < cutoff:
            shutil.rmtree(folder, ignore_errors=True)


# What numba compiles for on an x86-64 machine that has it: Haswell's instruction set
# (x86-64-v3). Compiled for the host, the same 2D scene gave other bits with AVX-512 than
# without (likely the kernels that may add a bird's candidates in vector lanes,
# render.sim.jit.vectorised: eight at a time instead of four). numba adds the host's
# features to the name (AVX-512 where present), so the bits agree among AVX-512 machines
# and among AVX2 ones, not between the two (docs/model.md).
PORTABLE_CPU = "haswell"
_PORTABLE_FLAGS = {"avx", "avx2", "fma", "bmi1", "bmi2", "f16c", "movbe", "popcnt"}


def portable_target(cpuinfo: Path = Path("/proc/cpuinfo")) -> None:
    """Set NUMBA_CPU_NAME to PORTABLE_CPU (unless it is set already) on an x86-64 Linux
    machine whose processor has every instruction that needs, so a scene gives the same
    bits on any such machine; elsewhere numba compiles for the host."""
    if platform.machine() not in ("x86_64", "AMD64") or not cpuinfo.is_file():
        return
    for line in cpuinfo.read_text(errors="replace").splitlines():
        if line.startswith("flags"):
            if _PORTABLE_FLAGS <= set(line.partition(":")[2].split()):
                os.environ.setdefault("NUMBA_CPU_NAME", PORTABLE_CPU)
            return
