"""Plain-numpy reference of the loop's per-frame measures (docs/loops.md), written from the
docs, not from the kernels: the mean step between frames, the ink against a background,
and the structure-tensor coherence of the ink over square tiles (numpy.gradient)."""

from __future__ import annotations

import numpy as np


def mean_step(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a[..., :3].astype(float) - b[..., :3].astype(float)).mean())


def ink(pixels: np.ndarray, ground: np.ndarray) -> np.ndarray:
    """Each pixel's largest colour difference from the ground (a colour or an image)."""
    return np.abs(pixels[..., :3].astype(float) - ground[..., :3].astype(float)).max(axis=-1)


def coherence(image: np.ndarray, tile: int) -> float:
    gy, gx = np.gradient(image.astype(float))
    h, w = (image.shape[0] // tile) * tile, (image.shape[1] // tile) * tile
    weights, strengths = [], []
    for y in range(0, h, tile):
        for x in range(0, w, tile):
            part = (slice(y, y + tile), slice(x, x + tile))
            jxx, jyy = (gx[part] ** 2).sum(), (gy[part] ** 2).sum()
            jxy = (gx[part] * gy[part]).sum()
            weights.append(jxx + jyy)
            strengths.append(np.sqrt((jxx - jyy) ** 2 + 4 * jxy ** 2))
    return float(sum(strengths) / sum(weights)) if sum(weights) else 0.0
