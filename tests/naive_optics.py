"""Plain-numpy reference of the 3D optics (docs/optics.md), written from docs/optics.md, not from
the kernels: nothing is imported from `render`.

Each streak's coverage of a pixel is the share of an S×S grid of sample points inside its
round-capped segment (exact geometry, box-filtered); the birds are composited far to near
in linear light, each keeping (1 − q) of what is behind it (q = alpha × coverage) and
adding q·contrast of its colour and q·(1 − contrast) of the sky.
"""

from __future__ import annotations

import numpy as np


def srgb_decode(code: np.ndarray) -> np.ndarray:
    c = np.asarray(code, np.float64) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def srgb_encode(linear: np.ndarray) -> np.ndarray:
    c = np.clip(linear, 0.0, 1.0)
    return np.round(255 * np.where(c <= 0.0031308, 12.92 * c,
                                   1.055 * c ** (1 / 2.4) - 0.055)).astype(np.uint8)


def coverage(size, a, b, width, samples=8) -> np.ndarray:
    """(h, w) share of each pixel inside the capsule from a to b (px), `width` px wide."""
    w, h = size
    offsets = (np.arange(samples) + 0.5) / samples
    sx = (np.arange(w)[:, None] + offsets).ravel()
    sy = (np.arange(h)[:, None] + offsets).ravel()
    px, py = np.meshgrid(sx, sy)
    d = np.subtract(b, a)
    ll = float(d @ d)
    t = np.zeros_like(px) if ll == 0 else np.clip(((px - a[0]) * d[0] + (py - a[1]) * d[1])
                                                 / ll, 0, 1)
    dist = np.hypot(px - a[0] - t * d[0], py - a[1] - t * d[1])
    inside = dist <= width / 2
    return inside.reshape(h, samples, w, samples).mean(axis=(1, 3))


def composite(size, streaks, sky_rgb, bird_rgb, transparent=False):
    """streaks: iterable of (x0, y0, x1, y1, width, alpha, contrast), far to near.
    Opaque: (h, w, 3) linear RGB over the flat sky `sky_rgb` (linear). Transparent:
    (h, w) alpha, 1 − what of the sky shows: each streak of opacity q = alpha·coverage
    hides q of it and gives back q·(1 − contrast), the haze in front of the bird."""
    w, h = size
    if transparent:
        sky = np.ones((h, w))
        for x0, y0, x1, y1, width, alpha, contrast in streaks:
            q = alpha * coverage(size, (x0, y0), (x1, y1), width)
            sky = sky * (1 - q) + q * (1 - contrast)
        return 1 - sky
    sky = np.asarray(sky_rgb, np.float64)
    out = np.broadcast_to(sky, (h, w, 3)).copy()
    for x0, y0, x1, y1, width, alpha, contrast in streaks:
        q = (alpha * coverage(size, (x0, y0), (x1, y1), width))[..., None]
        out = out * (1 - q) + q * (contrast * np.asarray(bird_rgb) + (1 - contrast) * sky)
    return out
