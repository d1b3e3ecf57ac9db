"""Several writers fed the same frames (or states), whose files appear together."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from .files import place_together

if TYPE_CHECKING:
    import numpy as np


class Together:
    """Writers fed the same frames (or states): a frame is drawn when any of them wants it.

    A writer with a `hold` attribute (VideoWriter, the web page's poster) is asked to keep
    its finished file in a temporary (its `staged` pairs); once every writer has closed
    cleanly, all of those are placed in one step (`files.place_together`), so a failure or
    an interruption anywhere leaves none of them under their final names. Writers without
    it (sequences of frames, trajectories) commit as they close. Closed last-opened first;
    a failure while one closes reaches the ones still open, which then discard their work.
    """

    def __init__(self, writers: list, *, overwrite: bool = True):
        self.writers = writers
        self.overwrite = overwrite
        self.held = [w for w in writers if hasattr(w, "hold")]
        for writer in self.held:
            writer.hold = True
        self.own: list[tuple[Path, Path]] = []  # files of its own (a subclass's)
        self.linear = any(getattr(w, "linear", False) for w in writers)  # see draw_range
        self.stack = contextlib.ExitStack()

    def __enter__(self) -> Together:
        with self.stack:  # a writer that fails to open closes those already open
            for writer in self.writers:
                self.stack.enter_context(writer)
            self.stack = self.stack.pop_all()
        return self

    def wants(self, index: int) -> bool:
        return any(writer.wants(index) for writer in self.writers)

    def write(self, index: int, pixels: np.ndarray) -> None:
        for writer in self.writers:
            if writer.wants(index):
                writer.write(index, pixels)

    def write_state(self, state) -> None:
        for writer in self.writers:
            writer.write_state(state)

    @property
    def staged(self) -> list[tuple[Path, Path]]:
        """The finished (temporary, final) files of the held writers, and its own."""
        return [pair for writer in self.held for pair in writer.staged] + self.own

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.stack.__exit__(exc_type, exc, tb)
            if exc_type is None:
                self._commit()
        finally:
            for tmp, _ in self.staged:  # placed by now, or to be discarded
                tmp.unlink(missing_ok=True)

    def _commit(self) -> None:
        """Place the held writers' files (see the class docstring)."""
        place_together(self.staged, overwrite=self.overwrite)
