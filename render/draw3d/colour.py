"""sRGB ↔ linear light, as tables the kernels index (IEC 61966-2-1 transfer function).

Cameras record light linearly; frames are stored sRGB-encoded. The 3D drawing composites
in linear light and encodes once at the end: decoding an 8-bit code is one of 256 values,
and encoding goes through a table of `ENCODE_STEPS` + 1 linear levels, fine enough that
the darkest codes (where sRGB's slope is 12.92) land within half a code of the exact value.

A gradient as slow as a dusk sky's changes code every tens of pixels: rounded, it shows
bands. So the sky is dithered (`DITHER`): an ordered pattern fixed to the full frame's
pixel grid, the same in every tile, window and still.
"""

from __future__ import annotations

import numpy as np

ENCODE_STEPS = 65535


def to_linear(srgb) -> np.ndarray:
    """sRGB values in [0, 1] → linear light in [0, 1] (float64, same shape)."""
    c = np.asarray(srgb, dtype=np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def to_srgb(linear) -> np.ndarray:
    """Linear light in [0, 1] → sRGB values in [0, 1] (float64, same shape)."""
    c = np.clip(np.asarray(linear, dtype=np.float64), 0.0, 1.0)
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)


def hex_linear(code: str) -> np.ndarray:
    """"#RRGGBB" → (3,) linear RGB float64."""
    return to_linear([int(code[i:i + 2], 16) / 255 for i in (1, 3, 5)])


def bayer(order: int) -> np.ndarray:
    """(2^order, 2^order) the ordered-dither thresholds of Bayer's matrix, (i + ½)/n² over
    its ranks i: each value once, neighbours as far apart as can be. float32."""
    ranks = np.zeros((1, 1), np.int64)
    for _ in range(order):
        ranks = np.block([[4 * ranks, 4 * ranks + 2], [4 * ranks + 3, 4 * ranks + 1]])
    return ((ranks + 0.5) / ranks.size).astype(np.float32)


DECODE = to_linear(np.arange(256) / 255).astype(np.float32)  # code → linear
LEVELS = (to_srgb(np.arange(ENCODE_STEPS + 1) / ENCODE_STEPS) * 255).astype(np.float32)
ENCODE = np.round(LEVELS).astype(np.uint8)  # linear level → nearest code
DITHER = bayer(3)  # 8 x 8; a smooth gradient is coded as LEVELS + DITHER, floored
