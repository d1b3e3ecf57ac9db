"""The plainly correct RGB → BT.709 limited-range Y′CbCr 4:2:0 the encoders' conversion
(render/encode/ycbcr.py) is held to, in float64 from the standard's formulas (ITU-R BT.709
part 2, 8-bit quantisation: Y′ = 16 + 219·E′Y, Cb = 128 + 224·E′Cb, Cr = 128 + 224·E′Cr),
each chroma sample from the mean of its 2x2 pixels. Nothing is imported from `render`."""

from __future__ import annotations

import numpy as np

KR, KB = 0.2126, 0.0722


def naive_ycbcr420(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(h, w, 3) uint8 R′G′B′ (h, w even) → Y (h, w), Cb and Cr (h/2, w/2), uint8, rounded
    half up."""
    e = rgb.astype(np.float64) / 255.0
    kg = 1.0 - KR - KB

    def luma(p):
        return KR * p[..., 0] + kg * p[..., 1] + KB * p[..., 2]

    h, w = rgb.shape[:2]
    mean = e.reshape(h // 2, 2, w // 2, 2, 3).mean(axis=(1, 3))
    ey = luma(mean)
    cb = (mean[..., 2] - ey) / (2 * (1 - KB))
    cr = (mean[..., 0] - ey) / (2 * (1 - KR))

    def code(x):
        return np.floor(x + 0.5).astype(np.uint8)

    return code(16 + 219 * luma(e)), code(128 + 224 * cb), code(128 + 224 * cr)
