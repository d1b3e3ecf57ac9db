"""PNG sequences: one file per frame, each written whole or not at all."""

from __future__ import annotations

import os
import re
from pathlib import Path

import cairo
import numpy as np

from .files import temp_beside

_PATTERN = re.compile(r"%0?(\d*)d")



def is_sequence(output: str) -> bool:
    """An output that contains a %0Nd pattern or ends in "/" is a PNG sequence."""
    return bool(_PATTERN.search(output)) or output.endswith(("/", os.sep))


def sequence_pattern(output: str) -> str:
    return output if _PATTERN.search(output) else os.path.join(output, "frame_%05d.png")


def write_png(pixels: np.ndarray, path: str | Path) -> None:
    """Write (h, w, 4) BGRA pixels as a PNG, via a temporary file renamed into place."""
    path = Path(path)
    height, width, _ = pixels.shape
    data = np.ascontiguousarray(pixels)
    surface = cairo.ImageSurface.create_for_data(memoryview(data), cairo.FORMAT_ARGB32,
                                                 width, height, width * 4)
    tmp = temp_beside(path, ".png")
    try:
        surface.write_to_png(str(tmp))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class SequenceWriter:
    """Writes frame k to `pattern % k`. A context manager, like the video writer."""

    def __init__(self, output: str, *, first: int = 0):
        self.pattern = sequence_pattern(output)
        self.index = first
        self.written = 0

    def __enter__(self) -> SequenceWriter:
        Path(self.pattern % 0).parent.mkdir(parents=True, exist_ok=True)
        return self

    def write(self, pixels: np.ndarray) -> None:
        write_png(pixels, self.pattern % self.index)
        self.index += 1
        self.written += 1

    def __exit__(self, exc_type, exc, tb) -> None:
        return None
