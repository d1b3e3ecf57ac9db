"""Numba flags, and the process settings the kernels rely on, in one place.

No fastmath, except `vectorised`: the few loops that add up one bird's candidates may be
reassociated, so the compiler can keep partial sums in vector lanes. Which lane a candidate
lands in depends only on that bird's candidate list and the machine code, never on the
thread count or on other birds, so results stay bit-identical for any number of threads
(on one machine and one numba build). Nothing else may reassociate, and no flag that
assumes away NaN or inf (an empty neighbourhood's nearest distance is inf).
Cached, so a second run does not recompile. Parallel kernels use `prange` over birds
and write only their own row, so any thread count gives bit-identical results.
"""

import ctypes
import hashlib
import os
import platform
from pathlib import Path

# GNU OpenMP busy-waits between parallel regions: as soon as anything else wants the cores
# (ffmpeg encoding, a second render) every kernel launch costs tens of ms. This must be set
# before libgomp loads (numba loads it at the first parallel launch).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba  # noqa: E402


def _reuse_freed_memory() -> None:
    """Keep freed heap memory for the next step instead of handing it back to the OS.

    Every step allocates its results afresh (a Snapshot's arrays are never overwritten),
    megabytes for a large flock. glibc returns such blocks to the OS on free, so the next
    step takes a page fault per 4 KiB to get them back: measured at 100,000 birds, 1,240
    faults and 1.9 ms of system time per step (of about 30), none with this setting.
    Blocks up to 32 MiB come from the heap (larger ones, such as 4K frames, are still
    mapped and unmapped), and up to 256 MiB of free heap is kept.
    """
    if platform.libc_ver()[0] != "glibc":
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # pragma: no cover - depends on the C library
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 32 << 20)
    mallopt(m_trim_threshold, 256 << 20)


_reuse_freed_memory()

FLAGS = dict(fastmath=False, error_model="numpy")

# numba's cache is stale only when the file defining a function changes, but a kernel is
# compiled together with the kernels it calls from other files (step.py calls kernels.py,
# forces.py, grid.py): after an edit there, the old machine code would still run. So every
# cached kernel here is stamped with the sources of every module that defines kernels.
_SOURCES = [path.read_bytes() for path in sorted(Path(__file__).parent.glob("*.py"))]
_SOURCES_STAMP = hashlib.sha256(b"".join(
    text for text in _SOURCES if b"from .jit import" in text or b"def _njit(" in text
)).hexdigest()


try:  # numba's cache classes are not public API: without them, plain cache=True
    from numba.core.caching import CompileResultCacheImpl, FunctionCache

    def _stamped(locator_class):
        return type(locator_class.__name__, (locator_class,),
                    {"get_source_stamp": lambda self: _SOURCES_STAMP})

    class _CacheImpl(CompileResultCacheImpl):
        _locator_classes = [_stamped(c) for c in CompileResultCacheImpl._locator_classes]

    class _Cache(FunctionCache):
        _impl_class = _CacheImpl
except (ImportError, AttributeError):  # pragma: no cover - depends on the numba version
    _Cache = None


def _njit(**options):
    def decorate(func):
        flags = {**FLAGS, **options}
        if _Cache is None:
            return numba.njit(**flags, cache=True)(func)
        dispatcher = numba.njit(**flags)(func)
        dispatcher._cache = _Cache(dispatcher.py_func)  # as cache=True would, stamped
        return dispatcher
    return decorate


serial = _njit()
# Inlined into each caller in numba's IR: a caller that passes a constant (a flag) gets a
# copy with the other branch compiled away.
inline = _njit(inline="always")
parallel = _njit(parallel=True)
# Reassociation only ("reassoc"; "nsz": the sign of a zero sum may differ): a sum over a
# bird's candidates then vectorises. See the module docstring.
vectorised = _njit(fastmath={"reassoc", "nsz"})
prange = numba.prange
