"""Temporary files beside their target, renamed into place only when complete."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ..errors import EncodeError, UsageError, option


# Every temporary this process has made, named before it is created: an interrupt that
# lands between its creation and the code that would remove it cannot leave it behind
# (`remove_temporaries`, as the command line ends).
_MADE: set[Path] = set()


def remove_temporaries() -> None:
    """Remove what is left of this process's temporaries: by the time the command line
    ends each has been renamed into place or removed, unless an interrupt came between."""
    while _MADE:
        _MADE.pop().unlink(missing_ok=True)


@contextlib.contextmanager
def folders_made_for(paths: Iterable[str | Path]) -> Iterator[None]:
    """Runs the body; if it fails or is interrupted, removes the folders `paths` (the
    files it writes) lacked before and that are left empty, so a render that is stopped
    leaves nothing of its own behind, not even folders. A folder holding anything (a
    sequence's finished frames, to resume) stays."""
    missing = set()
    for folder in {Path(resolved(path)).parent for path in paths}:
        while not folder.exists():
            missing.add(folder)
            folder = folder.parent
    try:
        yield
    except BaseException:
        for folder in sorted(missing, key=lambda f: len(f.parts), reverse=True):
            with contextlib.suppress(OSError):  # not empty, or not there after all
                folder.rmdir()
        raise


_PARTIAL = re.compile(r"\.(?P<stem>.+)\.[0-9a-f]{8}\.partial(?P<suffix>.*)")


def resolved(path: str | Path) -> str:
    """`path` absolute and normalised: two names of one file (a/b.mp4, ./a/b.mp4) alike."""
    return os.path.normpath(os.path.abspath(path))


def final_name(path: str | Path) -> str:
    """The output a temporary of `temp_beside` stands for (a message names what the user
    asked for, not a hidden file they never saw); any other path as it is."""
    path = Path(path)
    made = _PARTIAL.fullmatch(path.name)
    return str(path.with_name(made["stem"] + made["suffix"]) if made else path)


# The longest name of a file most file systems take, in bytes.
NAME_MAX = 255


def fitting(stem: str, rest: str) -> str:
    """`stem` cut short (at a character) so that it and `rest` make a name of at most
    NAME_MAX bytes: a temporary's name adds a few to the output's, which may be as long
    as a name can be."""
    room = NAME_MAX - len(rest.encode())
    return stem.encode()[:max(room, 1)].decode(errors="ignore") or "x"


def through_links(path: Path) -> Path:
    """The file `path` names once a symbolic link at it is followed: an output written at
    a link replaces the file it points to, not the link (`latest.mp4` pointing at a render
    on another disk goes on pointing there, at the new render)."""
    return Path(os.path.realpath(path)) if os.path.islink(path) else path


def temp_beside(path: Path, suffix: str) -> Path:
    """An empty temporary file in the folder of `path` (followed `through_links`, so the
    final rename is atomic), with the permissions a new file gets there (0666 less the
    umask, as the finished output should have)."""
    path = through_links(path)
    while True:
        rest = f".{secrets.token_hex(4)}.partial{suffix}"
        tmp = path.parent / f".{fitting(path.stem, '.' + rest)}{rest}"
        _MADE.add(tmp)
        try:
            # Created like any new file, so the kernel applies the umask: reading the
            # umask would mean changing it, for every thread of the process.
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            _MADE.discard(tmp)  # a name another temporary holds: draw again
            continue
        return tmp


def place(tmp: Path, path: Path, *, overwrite: bool = True) -> bool:
    """Move the finished `tmp` to `path` (followed `through_links`) in one atomic step;
    False (and `tmp` removed) when `overwrite` is off and `path` exists, e.g. another
    machine sharing the folder finished it first."""
    path = through_links(path)
    if overwrite:
        os.replace(tmp, path)
        _MADE.discard(tmp)
        return True
    try:
        # Unlike a rename, a hard link never replaces an existing file: the check and the
        # move are one step, so two machines cannot both "win".
        os.link(tmp, path)
    except FileExistsError:
        return False
    except OSError:  # a filesystem without hard links: check, then rename (racy, rare)
        if path.exists():
            return False
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
        _MADE.discard(tmp)
    return True


def write_atomically(path: Path, write: Callable[[Path], None], *,
                     overwrite: bool = True, make_folder: bool = True) -> bool:
    """`write(tmp)` into a temporary file beside `path`, then `place` it; its folder is
    made first when missing (unless not `make_folder`: a folder made before, to hold
    more files, must still be there). The temporary is removed whatever happens; a failed
    write (a full disk) is one EncodeError naming `path`. Returns False when `overwrite`
    is off and `path` exists."""
    if make_folder:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_beside(path, path.suffix)
    try:
        write(tmp)
        return place(tmp, path, overwrite=overwrite)
    except OSError as exc:
        raise EncodeError(f"cannot write {path}: {exc.strerror or _reason(exc, path)}") \
            from None
    finally:
        tmp.unlink(missing_ok=True)


def _reason(exc: OSError, path: Path) -> str:
    """Why a write failed that gives no errno: cairo reports only "error while writing
    to output stream", and a full disk is the likely cause."""
    try:
        full = shutil.disk_usage(path.parent).free < 1 << 20
    except OSError:
        full = False
    return f"{exc}: the disk is full" if full else str(exc)


def place_or_refuse(path: Path, write: Callable[[Path], None], *, overwrite: bool) -> None:
    """`write_atomically`; UsageError when `overwrite` is off and `path` appeared while
    rendering (it was checked by `refuse_existing` before)."""
    if not write_atomically(path, write, overwrite=overwrite):
        raise UsageError(f"{path}: appeared while rendering and {option('--no-overwrite')} "
                         f"keeps it; the new file was discarded")


def require_folder(path: Path, name: str | None = None) -> None:
    """UsageError (naming `name`, by default `path`) when a file stands where a folder of
    `path` is, or is to be created, or when that folder may not be written in."""
    for folder in path.parents:  # the nearest that exists must be a folder we may write in
        if folder.exists():
            if not folder.is_dir():
                raise UsageError(f"{name or path}: {folder} is a file, not a folder")
            if not os.access(folder, os.W_OK | os.X_OK):
                raise UsageError(f"{name or path}: cannot write in {folder} "
                                 f"({_why_not_writable(folder)})")
            # Permissions are not everything (/proc, a full quota, a root user on a
            # read-only mount): a file made there and gone says so before any work.
            try:
                tempfile.TemporaryFile(dir=folder).close()
            except OSError as exc:
                raise UsageError(f"{name or path}: cannot write in {folder} "
                                 f"({exc.strerror or exc})") from None
            break


def _why_not_writable(folder: Path) -> str:
    """Why `folder` refuses writes: its file system mounted read-only (a DVD, a snapshot,
    a container's image), or its permissions."""
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # no statvfs (Windows)
        read_only = False
    return "a read-only file system" if read_only else "permission denied"


def refuse_existing(path: Path, overwrite: bool) -> None:
    """UsageError when `path` is a folder or lies under a file (`require_folder`), or
    when `overwrite` is off and `path` exists: checked before any work."""
    require_folder(path)
    if path.is_dir():
        raise UsageError(f"{path}: is a folder; a file cannot take its name")
    if not overwrite and path.exists():
        keeps = option("--no-overwrite")
        raise UsageError(f"{path}: already exists and {keeps} keeps it; remove it or drop "
                         f"{keeps} to replace it")


def place_finished(tmp: Path, path: Path, *, overwrite: bool) -> None:
    """`place` a finished output; UsageError when another render put `path` there
    meanwhile and --no-overwrite keeps it."""
    if not place(tmp, path, overwrite=overwrite):
        raise UsageError(f"{path}: appeared while rendering and {option('--no-overwrite')} "
                         f"keeps it; the new render was discarded")


def _kept_aside(path: Path) -> Path | None:
    """A second name (a hard link, else a copy) for the file at `path`, to put back if the
    files placed with it fail; None when there is no file there."""
    if not path.is_file():
        return None
    while True:
        kept = path.parent / f".{path.stem}.{secrets.token_hex(4)}.kept{path.suffix}"
        try:
            os.link(path, kept)
        except FileExistsError:
            continue
        except OSError:  # a filesystem without hard links
            shutil.copy2(path, kept)
        return kept


def place_together(staged: list[tuple[Path, Path]], *, overwrite: bool = True) -> None:
    """`place` each finished (temporary, final) pair as one step: all of them, or (when one
    fails, or with `overwrite` off finds its final name taken) none, the ones already
    placed removed again (the files they replaced put back) and every temporary removed.
    Ctrl-C, SIGTERM and the other `stop_signals` wait until the renames are done, so an
    interruption cannot split them either: their handlers (run by the main thread,
    whichever thread the signal reached) only note them meanwhile, and the first is
    delivered again once the files are placed or put back."""
    import signal
    import threading

    from ..progress import stop_signals

    signals = stop_signals() if threading.current_thread() is threading.main_thread() else ()
    arrived: list[int] = []
    previous = [signal.signal(signum, lambda signum, _: arrived.append(signum))
                for signum in signals]
    placed: list[tuple[Path, Path | None]] = []  # each final name, its old file kept
    kept: list[Path] = []
    try:
        for tmp, named in staged:
            path = through_links(named)  # what is replaced, and put back on failure
            old = _kept_aside(path) if overwrite else None
            if old is not None:
                kept.append(old)
            if not place(tmp, path, overwrite=overwrite):
                raise UsageError(f"{named}: appeared while rendering and --no-overwrite "
                                 f"keeps it; the new render ({len(staged)} files) was "
                                 f"discarded")
            placed.append((path, old))
    except BaseException:
        for path, old in placed:
            if old is not None:
                os.replace(old, path)
            else:
                path.unlink(missing_ok=True)
        raise
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        for old in kept:
            old.unlink(missing_ok=True)
        for signum, handler in zip(signals, previous):
            signal.signal(signum, handler)
        if arrived:
            signal.raise_signal(arrived[0])
