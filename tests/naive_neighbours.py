"""All-pairs numpy reference of topological neighbours, written from the model as
docs/model.md gives it and not from the kernel: nothing is imported from `render`.

Bird j is visible to bird i (j ≠ i) unless the angle between i's backward direction
(−forward) and the offset p_j − p_i is smaller than half the blind angle (a coincident bird
has no direction and is visible); it is in range when its distance is below max_range. The
neighbours are the k visible, in-range birds nearest to i, by distance, then by index.
"""

from __future__ import annotations

import math

import numpy as np


def squared_distances(pos: np.ndarray) -> np.ndarray:
    """(n, n): |p_j − p_i|², summed axis by axis in order (x, then y, then z)."""
    offsets = pos[None, :, :] - pos[:, None, :]
    d2 = offsets[:, :, 0] * offsets[:, :, 0]
    for axis in range(1, pos.shape[1]):
        d2 = d2 + offsets[:, :, axis] * offsets[:, :, axis]
    return d2


def visible(pos: np.ndarray, fwd: np.ndarray, blind_angle: float) -> np.ndarray:
    """(n, n) bool: j is outside i's rear blind cone (j ≠ i)."""
    n = len(pos)
    seen = ~np.eye(n, dtype=bool)
    if blind_angle <= 0:
        return seen
    offsets = pos[None, :, :] - pos[:, None, :]
    length = np.linalg.norm(offsets, axis=2)
    backward = -fwd / np.linalg.norm(fwd, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        cosine = np.einsum("ijd,id->ij", offsets, backward) / length
    angle = np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))
    inside = (length > 0) & (angle < blind_angle / 2)
    return seen & ~inside


def k_nearest_visible(pos, fwd, k, *, blind_angle=0.0, max_range=math.inf):
    """(indices (n, k) int64 with −1 past the last, squared distances (n, k) with inf past
    the last, counts (n,)): each bird's k nearest visible birds within max_range."""
    n = len(pos)
    d2 = squared_distances(pos)
    ok = visible(pos, fwd, blind_angle) & (np.sqrt(d2) < max_range)
    out_j = np.full((n, k), -1, np.int64)
    out_d2 = np.full((n, k), np.inf)
    counts = np.zeros(n, np.int64)
    index = np.arange(n)
    for i in range(n):
        candidates = index[ok[i]]
        ranked = candidates[np.lexsort((candidates, d2[i, candidates]))][:k]
        counts[i] = len(ranked)
        out_j[i, :len(ranked)] = ranked
        out_d2[i, :len(ranked)] = d2[i, ranked]
    return out_j, out_d2, counts
