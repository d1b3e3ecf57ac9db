"""PNG sequences: one file per frame, each written whole or not at all."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import cairo
import numpy as np

from .files import write_atomically

_PATTERN = re.compile(r"%0?(\d*)d")



def is_sequence(output: str) -> bool:
    """An output that contains a %0Nd pattern or ends in "/" is a PNG sequence."""
    return bool(_PATTERN.search(output)) or output.endswith(("/", os.sep))


def sequence_pattern(output: str) -> str:
    return output if _PATTERN.search(output) else os.path.join(output, "frame_%05d.png")


def write_png(pixels: np.ndarray, path: str | Path, *, overwrite: bool = True,
              dpi: float | None = None, text: dict[str, str] | None = None) -> bool:
    """Write (h, w, 4) BGRA uint8 pixels (or (h, w, 3|4) uint16 RGB[A], a 16-bit still) as a PNG,
    via a temporary file renamed into place; with `dpi`, also its resolution, sRGB and
    `text` chunks (a print still, see `still`). Returns False when `overwrite` is off and
    `path` exists (nothing written)."""
    data = encode_png(pixels, dpi=dpi, text=text)
    return write_atomically(Path(path), lambda tmp: tmp.write_bytes(data),
                            overwrite=overwrite)


def encode_png(pixels: np.ndarray, *, dpi: float | None = None,
               text: dict[str, str] | None = None) -> bytes:
    """The PNG file `write_png` writes, in memory."""
    if pixels.dtype == np.uint16:
        from .still import png16

        data = png16(pixels)
    else:
        height, width, _ = pixels.shape
        buffer = np.ascontiguousarray(pixels)
        surface = cairo.ImageSurface.create_for_data(memoryview(buffer), cairo.FORMAT_ARGB32,
                                                     width, height, width * 4)
        # Encode in memory, then write with Python: a full disk then raises an OSError that
        # says so, where cairo would only report "error while writing to output stream".
        png = io.BytesIO()
        surface.write_to_png(png)
        data = png.getvalue()
    if dpi is not None:
        from .still import add_chunks

        data = add_chunks(data, dpi, text or {})
    return data


def is_complete_png(path: str | Path, size: tuple[int, int]) -> bool:
    """Whether `path` holds a PNG that decodes whole at `size` (w, h) px."""
    try:
        surface = cairo.ImageSurface.create_from_png(str(path))
    except (cairo.Error, OSError, MemoryError):  # missing, truncated or corrupt
        return False
    return (surface.get_width(), surface.get_height()) == tuple(size)


class SequenceWriter:
    """Writes frame k to `pattern % k`. A context manager, like the video writer.

    Frames already on disk are kept instead of drawn again: with `resume`, those that
    read back whole at `size` (an interrupted run's); without `overwrite`, any file at a
    frame's name (so several machines can render into one folder, each skipping the frames
    another has finished).
    """

    def __init__(self, output: str, *, size: tuple[int, int], resume: bool = False,
                 overwrite: bool = True):
        self.pattern = sequence_pattern(output)
        self.size = size
        self.resume = resume
        self.overwrite = overwrite
        self.written = 0

    def __enter__(self) -> SequenceWriter:
        Path(self.pattern % 0).parent.mkdir(parents=True, exist_ok=True)
        return self

    def wants(self, index: int) -> bool:
        """Whether frame `index` needs drawing; False for a frame on disk to keep."""
        path = self.pattern % index
        if not self.overwrite and os.path.exists(path):
            return False
        return not (self.resume and is_complete_png(path, self.size))

    def write(self, index: int, pixels: np.ndarray) -> None:
        self.write_encoded(index, encode_png(pixels))

    def write_encoded(self, index: int, png: bytes) -> None:
        """Frame `index` as the PNG file's bytes (drawn and encoded elsewhere)."""
        # Not written (False) when, without overwrite, another machine sharing the folder
        # finished this frame meanwhile: theirs is kept.
        self.written += write_atomically(Path(self.pattern % index),
                                         lambda tmp: tmp.write_bytes(png),
                                         overwrite=self.overwrite)

    def __exit__(self, exc_type, exc, tb) -> None:
        return None
