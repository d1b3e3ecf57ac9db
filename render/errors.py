"""The few errors the CLI turns into one-line messages and exit codes, and how they name
an option: as the command line's flag or as the Python API's keyword (`option`)."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager


class BoidsError(Exception):
    """Base of every error the CLI reports without a traceback."""

    exit_code = 1


class SceneError(BoidsError):
    """One or more problems in a scene file or its overrides.

    `problems` holds one line per problem, each already of the form
    ``FILE: section.key: expected …, got …``.
    """

    exit_code = 2

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class UsageError(BoidsError):
    """A command-line option that cannot be honoured."""

    exit_code = 2


class EncodeError(BoidsError):
    """ffmpeg failed or wrote something other than what was asked."""


# The checks the command line and the Python API share name an option as its caller gave
# it: a flag (the default), or, inside `api_names`, the keyword a function took.
API_NAMES = {"--dpi": "dpi", "--bit-depth": "bit_depth", "--tile-size": "tile_size",
             "--still": "still", "--scheduler": "scheduler", "--plot": "plot",
             "--stats": "stats", "--resume": "resume=True", "--cache-dir": "cache_dir",
             "--workers": "workers",
             "--no-overwrite": "overwrite=False", "--quality web": "web=True",
             "-o": "path", "-o NAME.mp4": "a path NAME.mp4", "--frames A:B": "frames=(a, b)",
             "--frames N or --duration S": "frames=n", "(--frames, --duration)": "(frames=)",
             "(--size)": "(output.size)", "--loop": "output.loop = true",
             "--fps 50 or 25": "output.fps 50 or 25",
             "a PNG still (--still TIME -o FILE.png)": "a PNG still (still=t, a path FILE.png)"}
_NAMES: contextvars.ContextVar[dict | None] = contextvars.ContextVar("names", default=None)


def option(flag: str, value=None) -> str:
    """`flag` (with its `value`) as the caller spells it: "--dpi 300" on the command line,
    "dpi=300" from the API."""
    name = (_NAMES.get() or {}).get(flag)
    if name is None:
        return flag if value is None else f"{flag} {value}"
    return name if value is None else f"{name}={value}"


@contextmanager
def api_names(**renamed: str) -> Iterator[None]:
    """Inside, options are named as the API's keywords (`renamed`: a function's own, such
    as frame()'s t for --still), unless the command line is the caller (`cli_names`)."""
    token = _NAMES.set({**API_NAMES, **renamed}) if _NAMES.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _NAMES.reset(token)


@contextmanager
def cli_names() -> Iterator[None]:
    """Inside, options are named as flags, even through the API's functions."""
    token = _NAMES.set({})
    try:
        yield
    finally:
        _NAMES.reset(token)


def caused_by_interrupt(exc: BaseException | None) -> bool:
    """Whether `exc` is Ctrl-C in disguise: a signal that lands while a numba kernel runs
    surfaces as SystemError ("… returned a result with an exception set") whose cause is
    the KeyboardInterrupt; an error raised while unwinding from one counts as well."""
    while exc is not None:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__cause__ or exc.__context__
    return False
