"""A cairo surface over a numpy array, and the one world→pixel transform.

The world rectangle is fitted inside the frame preserving its aspect ratio and centred:
a frame of another aspect shows more world around it (left/right or above/below), never a
stretched flock. World y points up; pixel y points down.
"""

from __future__ import annotations

import cairo
import numpy as np


def world_to_pixels(width: float, height: float, size: tuple[int, int]) -> cairo.Matrix:
    """Matrix taking world units to pixels for a frame of `size` (w, h) px."""
    px_w, px_h = size
    scale = min(px_w / width, px_h / height)
    x0 = 0.5 * (px_w - scale * width)
    y0 = 0.5 * (px_h - scale * height)
    return cairo.Matrix(xx=scale, yy=-scale, x0=x0, y0=px_h - y0)


class Canvas:
    """An ARGB32 cairo surface drawing straight into `pixels` (h, w, 4) uint8.

    On little-endian machines each pixel's bytes are B, G, R, A (cairo's native layout,
    which ffmpeg reads as `bgra`). The array is reused for every frame. With `linear`, a 3D
    frame also keeps there the float image its pixels encode (see `draw3d.frame.Pixels`),
    for an OpenEXR frame: `linear` (h, w, 4) float32, else None; with `straight`, its
    colours not multiplied by alpha: `straight` (h, w, 3) uint8 B, G, R, else None.
    """

    def __init__(self, size: tuple[int, int], *, linear: bool = False,
                 straight: bool = False):
        width, height = size
        self.linear = np.zeros((height, width, 4), np.float32) if linear else None
        self.straight = np.zeros((height, width, 3), np.uint8) if straight else None
        stride = cairo.ImageSurface.format_stride_for_width(cairo.FORMAT_ARGB32, width)
        self._buffer = np.zeros((height, stride), dtype=np.uint8)
        self.surface = cairo.ImageSurface.create_for_data(
            memoryview(self._buffer), cairo.FORMAT_ARGB32, width, height, stride)
        self.pixels = self._buffer[:, : width * 4].reshape(height, width, 4)
        self.size = size

    def context(self) -> cairo.Context:
        ctx = cairo.Context(self.surface)
        ctx.set_antialias(cairo.ANTIALIAS_DEFAULT)
        return ctx

    def flush(self) -> np.ndarray:
        self.surface.flush()
        return self.pixels

    def rgb(self) -> np.ndarray:
        """A copy as (h, w, 3) RGB, for tests and tools that want RGB."""
        return self.flush()[:, :, 2::-1].copy()
