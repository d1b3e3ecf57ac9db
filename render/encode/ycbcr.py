"""Opaque frames as BT.709 limited-range Y′CbCr 4:2:0 (ffmpeg's `yuv420p`), converted
here rather than by ffmpeg's scaler: the clip's encoder then reads 1.5 bytes a pixel
instead of 4 and converts nothing, which at 1080p saves it more CPU than the conversion
costs here (benchmarks/export_bench.py).

Each luma sample is the pixel's; each chroma sample is the mean of its 2x2 pixels (sited
at their centre, as ffmpeg's scaler sites them). Fixed point, 16 bits of fraction, so
the samples are the same on every machine.

Limited range has 219 luma steps for the frame's 255 codes, so rounding merges one code
pair in seven: a dusk sky, dithered in RGB, came out of a clip in contour bands, lossless
H.264 included. With `dither` each sample is floored after an ordered threshold instead
of a half (`THRESHOLDS`): a tile's mean is the exact value's within a 64th of a level,
and x264 at crf 18 kept the pattern on the film's frames (docs/optics.md, "The sky in a
clip"). Only a 3D sky has the gradient to keep: on the 2D plate's flat colours the
pattern is noise that x264 spent 18 ms of CPU a 1080p frame encoding.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..draw3d.colour import bayer
from ..sim.jit import serial

_KR, _KB = 0.2126, 0.0722  # ITU-R BT.709's luma weights of R and B
_KG = 1.0 - _KR - _KB
_ONE = 1 << 16


def _fixed(x: float) -> int:
    return int(round(x * _ONE))


# Limited range: luma 16…235 (219 steps), chroma 128 ± 112 (224 steps) from codes 0…255.
_YR, _YG, _YB = (_fixed(219 / 255 * k) for k in (_KR, _KG, _KB))
_UR, _UB = _fixed(-112 / 255 * _KR / (1 - _KB)), _fixed(112 / 255)
_VR, _VB = _fixed(112 / 255), _fixed(-112 / 255 * _KB / (1 - _KR))
# G's weight makes each chroma row sum to 0 exactly, so a grey has no colour at all.
_UG, _VG = -(_UR + _UB), -(_VR + _VB)
_Y_BIAS = 16 << 16
_C_BIAS = 128 << 18  # chroma sums 4 pixels: 2 more bits of fraction
# The rounding thresholds in (0, 1): Bayer's 8 x 8, transposed and moved by half a tile
# from the one the 3D sky is dithered with (colour.DITHER): the same pattern again
# quantised the sky's own errors a second time (measured: more residual banding). Exact
# multiples of 1/128, so integers at either scale.
THRESHOLDS = np.roll(bayer(3).T.astype(np.float64), (4, 4), axis=(0, 1))
_Y_T = np.round(THRESHOLDS * (1 << 16)).astype(np.int32)
_C_T = np.round(THRESHOLDS * (1 << 18)).astype(np.int32)


def to_ycbcr420(bgra: np.ndarray, out: np.ndarray | None = None, *,
                dither: bool = False) -> np.ndarray:
    """The opaque (h, w, 4) uint8 BGRA frame (h, w even) as one (h·w·3/2,) uint8 array:
    the Y plane, then Cb, then Cr, each row after row, as ffmpeg's rawvideo `yuv420p`
    reads it; into `out` if given. Each sample rounded, or with `dither` floored after
    its threshold."""
    h, w = bgra.shape[:2]
    if h % 2 or w % 2:
        raise ValueError(f"4:2:0 needs even sizes, got {w}x{h}")
    out = np.empty(h * w * 3 // 2, np.uint8) if out is None else out
    quarter = (h // 2) * (w // 2)
    words = np.ascontiguousarray(bgra).view(np.uint32).reshape(h, w)
    y_t, c_t = _rows_of_thresholds(w, dither)
    _convert(words, y_t, c_t, out[:h * w].reshape(h, w),
             out[h * w:h * w + quarter].reshape(h // 2, w // 2),
             out[h * w + quarter:].reshape(h // 2, w // 2))
    return out


@lru_cache(maxsize=8)
def _rows_of_thresholds(w: int, dither: bool) -> tuple[np.ndarray, np.ndarray]:
    """The thresholds' 8 rows repeated across a frame w px wide (luma) and its chroma
    planes (read in order, the luma loop stays vectorised: indexed modulo 8 it ran ten
    times slower); without `dither`, a half everywhere (rounding)."""
    if not dither:
        return np.full((8, w), 1 << 15, np.int32), np.full((8, w // 2), 1 << 17, np.int32)
    return (np.ascontiguousarray(np.tile(_Y_T, (1, -(-w // 8)))[:, :w]),
            np.ascontiguousarray(np.tile(_C_T, (1, -(-w // 16)))[:, :w // 2]))


@serial
def _convert(words, y_t, c_t, luma, cb, cr):
    """words (h, w) uint32 little-endian BGRA pixels → luma (h, w), cb and cr (h/2, w/2),
    each floored after its threshold of y_t (8, w) or c_t (8, w/2) int32 (row modulo 8,
    column); a pair of rows at a time: the pair's chroma reads rows still in the cache."""
    for j in range(cb.shape[0]):
        for y in (2 * j, 2 * j + 1):
            row, into, t = words[y], luma[y], y_t[y & 7]
            for x in range(row.shape[0]):  # one pass that the compiler vectorises
                p = np.int32(row[x] & np.uint32(0xFFFFFF))
                into[x] = np.uint8((_YR * (p >> 16) + _YG * ((p >> 8) & 255)
                                    + _YB * (p & 255) + _Y_BIAS + t[x]) >> 16)
        top, bottom, t = words[2 * j], words[2 * j + 1], c_t[j & 7]
        for i in range(cb.shape[1]):
            r = g = b = np.int32(0)
            for p in (top[2 * i], top[2 * i + 1], bottom[2 * i], bottom[2 * i + 1]):
                q = np.int32(p & np.uint32(0xFFFFFF))
                r += q >> 16
                g += (q >> 8) & 255
                b += q & 255
            cb[j, i] = np.uint8((_UR * r + _UG * g + _UB * b + _C_BIAS + t[i]) >> 18)
            cr[j, i] = np.uint8((_VR * r + _VG * g + _VB * b + _C_BIAS + t[i]) >> 18)
