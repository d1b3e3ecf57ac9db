"""Where a keyframed camera (2D or 3D) is between its keys: the keyframe rows eased as the
scene's `easing` says (docs/model.md)."""

from __future__ import annotations

import numpy as np


def ease(u: float, easing: str) -> float:
    """Keyframe progress u ∈ [0, 1] eased: linear, or smoothstep (ease-in-out)."""
    return u if easing == "linear" else u * u * (3.0 - 2.0 * u)  # smoothstep


def keyed(keys: np.ndarray, time_s: float, easing: str) -> np.ndarray:
    """The keyframe row (time first, then the values) at `time_s`, held before the first
    key and after the last. Between two keys: linear, or eased together (ease-in-out:
    the move stops at every key), or `smooth`: each value a cubic through every key with
    a velocity continuous at the keys in between and zero at the first and last, so a
    camera eases out of its first key and into its last and flies through the others.
    Each value's velocity at a middle key is the monotone one (Fritsch–Carlson, as
    PCHIP): 0 where that value turns there, so it never overshoots its keys (a camera
    keyed above the ground stays above it, a field of view stays between its keys')."""
    i = int(np.searchsorted(keys[:, 0], time_s, side="right"))
    if i == 0 or i == len(keys):
        return keys[max(i - 1, 0)]
    a, b = keys[i - 1], keys[i]
    h = b[0] - a[0]
    u = (time_s - a[0]) / h
    if easing != "smooth":
        return a + ease(u, easing) * (b - a)
    u2, u3 = u * u, u * u * u
    row = (2 * u3 - 3 * u2 + 1) * a + (-2 * u3 + 3 * u2) * b + \
        h * ((u3 - 2 * u2 + u) * _slope(keys, i - 1) + (u3 - u2) * _slope(keys, i))
    row[0] = time_s
    return row


def _slope(keys: np.ndarray, j: int) -> np.ndarray:
    """Each value's velocity at key j of a `smooth` path: 0 at the first and last key and
    where the value turns; else the weighted harmonic mean of the two secants
    (Fritsch & Butland 1984, the interior slopes of scipy's PchipInterpolator)."""
    if j == 0 or j == len(keys) - 1:
        return np.zeros(keys.shape[1])
    h0, h1 = keys[j, 0] - keys[j - 1, 0], keys[j + 1, 0] - keys[j, 0]
    d0, d1 = (keys[j] - keys[j - 1]) / h0, (keys[j + 1] - keys[j]) / h1
    w0, w1 = 2 * h1 + h0, h1 + 2 * h0
    same = d0 * d1 > 0
    out = np.zeros(keys.shape[1])
    out[same] = (w0 + w1) / (w0 / d0[same] + w1 / d1[same])
    return out
