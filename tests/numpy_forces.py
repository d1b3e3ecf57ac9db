"""The forces beyond the flocking rules in numpy, operation for operation as their numba
implementations (render/sim/forces/) do them: an acceleration array (n, 2) in world
units/s² for positions (n, 2). The numba versions agree with these bit for bit
(tests/test_step.py): they do the same floating-point operations in the same order, and
only skip work whose result is an exact zero. So the fused step can be held to the plain
composition of these, bit for bit; tests/naive.py holds the independent references.
"""

from __future__ import annotations

import numpy as np

from render.sim.forces.field import SIN_TAYLOR as _SIN_TAYLOR
from render.sim.forces.walls import NEAREST as _WALL_NEAREST


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


def attractor(pos: np.ndarray, point, strength: float, radius: float) -> np.ndarray:
    """Pull of magnitude strength·d/(d + radius) toward `point`: nearly `strength` far away,
    fading to zero on the point, so the flock swarms around it instead of collapsing."""
    offset = np.asarray(point, dtype=np.float64) - pos
    dist = np.hypot(offset[:, 0], offset[:, 1])
    return offset * (strength / (dist + radius))[:, None]


def sin_turns(turns: np.ndarray) -> np.ndarray:
    """sin(2π·turns), elementwise: reduced to the nearest whole turn, folded onto a quarter
    turn (sin(π − a) = sin a), then the polynomial above. Finite float64 input."""
    q = turns - np.floor(turns + 0.5)
    q = np.minimum(q, 0.5 - q)  # beyond +1/4 turn: fold back
    q = np.maximum(q, -0.5 - q)  # beyond −1/4 turn: fold back
    a = (2 * np.pi) * q
    a2 = a * a
    poly = np.full_like(a, _SIN_TAYLOR[-1])
    for c in _SIN_TAYLOR[-2::-1]:
        poly = poly * a2 + c
    return a * poly


def field(pos: np.ndarray, time_s: float, wavelengths, drifts, phases) -> np.ndarray:
    """φ(x, y, t) ∈ [−1, 1]: the mean of three drifting sinusoids along x, y and the
    diagonal (x + y)/√2, sin(2π·(coord − drift·t)/wavelength + phase). wavelengths,
    drifts, phases: (3,) world units, world units/s, radians. (n,).

    Evaluated as sin_turns(c·scale + offset) with the per-step constants of
    forces.field.waves, the same operations."""
    two_pi, sqrt2 = 2 * np.pi, np.sqrt(2.0)
    sx = 1.0 / wavelengths[0]
    sy = 1.0 / wavelengths[1]
    sd = 1.0 / (wavelengths[2] * sqrt2)
    ox = phases[0] / two_pi - drifts[0] * time_s * sx
    oy = phases[1] / two_pi - drifts[1] * time_s * sy
    od = phases[2] / two_pi - drifts[2] * time_s / wavelengths[2]
    total = np.zeros(len(pos))
    total += sin_turns(pos[:, 0] * sx + ox)
    total += sin_turns(pos[:, 1] * sy + oy)
    total += sin_turns((pos[:, 0] + pos[:, 1]) * sd + od)
    return total / 3.0


def ellipse_outside(pos: np.ndarray, centre, semi_axes) -> tuple[np.ndarray, np.ndarray]:
    """Distance outside a centred ellipse, measured along the ray from its centre
    (0 inside), and the unit vector pointing back to the centre. (n,), (n, 2)."""
    offset = pos - np.asarray(centre)
    rho = np.hypot(offset[:, 0] / semi_axes[0], offset[:, 1] / semi_axes[1])
    dist = np.hypot(offset[:, 0], offset[:, 1])
    outside = np.where(rho > 1.0, dist * (1.0 - 1.0 / np.maximum(rho, 1.0)), 0.0)
    inward = -offset / np.maximum(dist, 1e-300)[:, None]
    return outside, inward


def containment(pos: np.ndarray, centre, semi_axes, strength: float) -> np.ndarray:
    """Exactly zero inside the ellipse; strength·d toward the centre at distance d outside.
    It never pulls toward the flock's centroid: orbits about one point phase-lock into a
    ring, while a fixed soft rim leaves the flock free to fold inside it."""
    outside, inward = ellipse_outside(pos, centre, semi_axes)
    return inward * (strength * outside)[:, None]


def hawk(pos: np.ndarray, where, radius: float, strength: float) -> np.ndarray:
    """Repulsion strength·(1 − d/radius)² away from the hawk within `radius`."""
    offset = pos - np.asarray(where)
    dist = np.hypot(offset[:, 0], offset[:, 1])
    push = strength * np.clip(1.0 - dist / radius, 0.0, None) ** 2
    return offset / np.maximum(dist, 1e-300)[:, None] * push[:, None]
