"""Forces beyond the three flocking rules, vectorised in numpy (they cost O(n) per step).

Each returns an acceleration array (n, 2) in world units/s² for positions (n, 2).
"""

from __future__ import annotations

import numpy as np

# The hyperbolic wall push is capped where a bird reaches 1% of the margin from the edge
# (or beyond it): the push is then 99× the strength, enough to turn any bird back.
_WALL_NEAREST = 0.01


def walls(pos: np.ndarray, width: float, height: float, margin: float,
          strength: float) -> np.ndarray:
    """Zero farther than `margin` from every edge; strength·(margin/d − 1) inward at
    distance d < margin, so birds fly straight until late and then bank hard."""
    acc = np.zeros_like(pos)
    for axis, extent in ((0, width), (1, height)):
        near = np.maximum(pos[:, axis], _WALL_NEAREST * margin)
        far = np.maximum(extent - pos[:, axis], _WALL_NEAREST * margin)
        acc[:, axis] += strength * np.maximum(margin / near - 1.0, 0.0)
        acc[:, axis] -= strength * np.maximum(margin / far - 1.0, 0.0)
    return acc


def attractor_point(time_s: float, position, path) -> tuple[float, float]:
    """Where the attractor is at `time_s`: a fixed point, or linear between keyframes
    (t, x, y), held before the first and after the last."""
    if path is None:
        return position
    times = np.array([k[0] for k in path])
    x = float(np.interp(time_s, times, [k[1] for k in path]))
    y = float(np.interp(time_s, times, [k[2] for k in path]))
    return x, y


def attractor(pos: np.ndarray, point, strength: float, radius: float) -> np.ndarray:
    """Pull of magnitude strength·d/(d + radius) toward `point`: nearly `strength` far away,
    fading to zero on the point, so the flock swarms around it instead of collapsing."""
    offset = np.asarray(point, dtype=np.float64) - pos
    dist = np.hypot(offset[:, 0], offset[:, 1])
    return offset * (strength / (dist + radius))[:, None]
