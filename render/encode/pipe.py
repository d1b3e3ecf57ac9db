"""Frames into ffmpeg's stdin pipe with as little copying as the system allows.

`grow_pipe` enlarges the pipe's kernel buffer from its default 64 KiB. `hand_over` then
moves most of a frame without copying it: on Linux, vmsplice(2) lends the frame's pages to
the pipe and ffmpeg's read copies straight out of them. A lent page must not change until
ffmpeg has read it, while the caller draws its next frame on the same canvas as soon as
the call returns; so the frame's last `capacity` bytes go in by an ordinary, copying
write. When that write returns they are all in the pipe, which never holds more than
`capacity` bytes, so every lent page before them has been read.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
from pathlib import Path

import numpy as np

# ffmpeg's stdin pipe, enlarged from the kernel's 64 KiB: see `grow_pipe`.
PIPE_BYTES = 1 << 20


def grow_pipe(pipe, size: int = PIPE_BYTES) -> int:
    """Enlarge a pipe's kernel buffer to `size` bytes, or as far as the system allows
    (/proc/sys/fs/pipe-max-size, 1 MiB by default for unprivileged processes); returns its
    size, 0 where it cannot be read (elsewhere than Linux the pipe stays as it is).

    Through the default 64 KiB a 1080p frame (8 MiB) takes 128 turns of writer and reader;
    with 1 MiB the writer spends half the CPU on it (benchmarks/export_bench.py)."""
    try:
        import fcntl

        fd = pipe.fileno()
        try:
            limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())
        except (OSError, ValueError):
            limit = size
        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, min(size, limit))
        except OSError:
            pass  # the pipe keeps its size, which is still worth knowing
        return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
    except (ImportError, AttributeError, OSError):
        return 0


class _IOVec(ctypes.Structure):
    """struct iovec."""

    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


@functools.cache
def _vmsplice():
    """libc's vmsplice, or None where there is none (looked up once)."""
    try:
        vmsplice = ctypes.CDLL(None, use_errno=True).vmsplice
    except (OSError, AttributeError):
        return None
    vmsplice.argtypes = [ctypes.c_int, ctypes.POINTER(_IOVec), ctypes.c_size_t,
                         ctypes.c_uint]
    vmsplice.restype = ctypes.c_ssize_t
    return vmsplice


# Where the call exists but is refused (a sandbox, a kernel without it): copy instead.
_REFUSED = (errno.ENOSYS, errno.EINVAL, errno.EPERM, errno.EBADF)


def hand_over(fd: int, frame: np.ndarray, capacity: int) -> None:
    """Write all of the C-contiguous `frame` into the pipe `fd`, whose kernel buffer holds
    `capacity` bytes (0: unknown, then every byte is copied). When it returns the pipe
    holds no reference to `frame`'s memory: the caller may change or free it."""
    vmsplice = _vmsplice()
    lent = frame.nbytes - capacity if vmsplice is not None and capacity > 0 else 0
    address = frame.ctypes.data
    done = 0
    while done < lent:
        iov = _IOVec(address + done, lent - done)
        n = vmsplice(fd, ctypes.byref(iov), 1, 0)
        if n >= 0:
            done += n
            continue
        code = ctypes.get_errno()
        if code == errno.EINTR:
            continue
        if code in _REFUSED and done == 0:
            break  # this frame is copied; the next tries again (one refused call)
        raise OSError(code, os.strerror(code))
    rest = memoryview(frame).cast("B")[done:]
    while rest:
        rest = rest[os.write(fd, rest):]
