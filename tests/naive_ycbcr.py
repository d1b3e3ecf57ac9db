"""The plainly correct RGB → BT.709 limited-range Y′CbCr 4:2:0 the encoders' conversion
(render/encode/ycbcr.py) is held to, in float64 from the standard's formulas (ITU-R BT.709
part 2, 8-bit quantisation: Y′ = 16 + 219·E′Y, Cb = 128 + 224·E′Cb, Cr = 128 + 224·E′Cr),
each chroma sample from the mean of its 2x2 pixels, each rounded or floored after its
threshold of the ordered pattern below. Nothing is imported from `render`."""

from __future__ import annotations

import numpy as np

KR, KB = 0.2126, 0.0722


def thresholds() -> np.ndarray:
    """(8, 8) the rounding thresholds: Bayer's ordered-dither matrix (each 2x2 step
    [[4M, 4M + 2], [4M + 3, 4M + 1]]) as (rank + ½)/64, transposed, then moved 4 rows down
    and 4 columns right, wrapping."""
    m = np.zeros((1, 1))
    while m.shape[0] < 8:
        m = np.vstack([np.hstack([4 * m, 4 * m + 2]), np.hstack([4 * m + 3, 4 * m + 1])])
    t = ((m + 0.5) / 64).T
    return np.vstack([t[4:], t[:4]])[:, [4, 5, 6, 7, 0, 1, 2, 3]]


def naive_ycbcr420(rgb: np.ndarray, dither: bool = False
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(h, w, 3) uint8 R′G′B′ (h, w even) → Y (h, w), Cb and Cr (h/2, w/2), uint8: each
    sample rounded half up, or with `dither` floored after the threshold at its (row,
    column) modulo 8 in its own plane."""
    t = thresholds()

    def code(x):
        rows, cols = np.indices(x.shape)
        return np.floor(x + (t[rows % 8, cols % 8] if dither else 0.5)).astype(np.uint8)

    return tuple(code(x) for x in exact_ycbcr420(rgb))


def exact_ycbcr420(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The same planes unquantised: float64 values in codes."""
    e = rgb.astype(np.float64) / 255.0
    kg = 1.0 - KR - KB

    def luma(p):
        return KR * p[..., 0] + kg * p[..., 1] + KB * p[..., 2]

    h, w = rgb.shape[:2]
    mean = e.reshape(h // 2, 2, w // 2, 2, 3).mean(axis=(1, 3))
    ey = luma(mean)
    cb = (mean[..., 2] - ey) / (2 * (1 - KB))
    cr = (mean[..., 0] - ey) / (2 * (1 - KR))

    return 16 + 219 * luma(e), 128 + 224 * cb, 128 + 224 * cr
