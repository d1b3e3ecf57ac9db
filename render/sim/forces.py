"""Forces beyond the three flocking rules.

Each force is written twice: vectorised in numpy (an acceleration array (n, 2) in world
units/s² for positions (n, 2)), the plain statement of the formula; and per bird in numba
(`*_at`, scalars in, scalars out), which the fused step calls. The two agree bit for bit
(tests/test_step.py): the per-bird versions do the same floating-point operations in the
same order, and only skip work whose result is an exact zero.
"""

from __future__ import annotations

import math

import numpy as np

from .jit import serial

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


def field_phases(rng: np.random.Generator) -> np.ndarray:
    """The field's three phases (radians), drawn once from the scene's seed."""
    return rng.uniform(0.0, 2 * np.pi, 3)


# sin(2πq) for |q| ≤ 1/4 as a polynomial in a = 2πq: Taylor's odd terms through a¹⁹.
# The first term left out, (π/2)²¹/21! ≈ 2.6e-16, bounds the error; with round-off the
# result is within 1e-15 of the true sine (tests/test_forces.py). It costs a tenth of a
# libm call and vectorises, and numpy and numba evaluate it with the same operations.
_SIN_TAYLOR = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(10))


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

    Evaluated as sin_turns(c·scale + offset) with the per-step constants of `field_waves`,
    the same operations as `field_at`."""
    sx, ox, sy, oy, sd, od = field_waves(time_s, wavelengths[0], wavelengths[1],
                                         wavelengths[2], drifts[0], drifts[1], drifts[2],
                                         phases[0], phases[1], phases[2])
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


GOLDEN_ANGLE = np.pi * (3.0 - np.sqrt(5.0))  # ≈ 137.5°


def hawk_position(time_s: float, hawk, centre) -> tuple[float, float] | None:
    """Where the hawk is at `time_s`, or None while it is away.

    Pass k starts at start + k·period and lasts `duration`; it flies a straight chord of
    length speed·duration through the centre, its bearing advancing by the golden angle
    each pass so successive passes cut the flock along directions that never repeat.
    """
    since = time_s - hawk.start
    k = np.floor(since / hawk.period)
    tau = since - k * hawk.period
    if since < 0 or tau >= hawk.duration:
        return None
    bearing = np.radians(hawk.bearing) + k * GOLDEN_ANGLE
    along = (tau - 0.5 * hawk.duration) * hawk.speed
    return centre[0] + along * np.cos(bearing), centre[1] + along * np.sin(bearing)


def hawk(pos: np.ndarray, where, radius: float, strength: float) -> np.ndarray:
    """Repulsion strength·(1 − d/radius)² away from the hawk within `radius`."""
    offset = pos - np.asarray(where)
    dist = np.hypot(offset[:, 0], offset[:, 1])
    push = strength * np.clip(1.0 - dist / radius, 0.0, None) ** 2
    return offset / np.maximum(dist, 1e-300)[:, None] * push[:, None]


# ---------------------------------------------------------------------------------------
# Per bird, for the fused step. Same operations, same order as above.

_TWO_PI = 2 * np.pi
_SQRT2 = np.sqrt(2.0)


@serial
def wall_at(p, extent, margin, strength):
    """`walls` along one axis for the coordinate p."""
    floor = _WALL_NEAREST * margin
    near = max(p, floor)
    far = max(extent - p, floor)
    push = 0.0 + strength * max(margin / near - 1.0, 0.0)
    return push - strength * max(margin / far - 1.0, 0.0)


@serial
def attractor_at(x, y, px, py, strength, radius):
    """`attractor` for one bird at (x, y), toward (px, py)."""
    ox = px - x
    oy = py - y
    scale = strength / (math.hypot(ox, oy) + radius)
    return ox * scale, oy * scale


@serial
def containment_at(x, y, cx, cy, a, b, strength):
    """`containment` for one bird: (ax, ay, inside)."""
    ox = x - cx
    oy = y - cy
    u = ox / a
    v = oy / b
    # Well inside (ρ < 0.995) the exact test below says inside too; two hypot calls saved.
    if u * u + v * v < 0.99:
        return 0.0, 0.0, True
    rho = math.hypot(u, v)
    if not rho > 1.0:
        return 0.0, 0.0, True
    dist = math.hypot(ox, oy)
    outside = dist * (1.0 - 1.0 / max(rho, 1.0))
    scale = strength * outside
    reach = max(dist, 1e-300)
    return (-ox / reach) * scale, (-oy / reach) * scale, outside == 0.0


@serial
def hawk_at(x, y, hx, hy, radius, strength):
    """`hawk` for one bird."""
    ox = x - hx
    oy = y - hy
    # Clearly beyond the radius the push is exactly zero; hypot saved.
    if ox * ox + oy * oy >= 1.01 * radius * radius:
        return 0.0, 0.0
    dist = math.hypot(ox, oy)
    fade = max(1.0 - dist / radius, 0.0)
    push = strength * (fade * fade)
    reach = max(dist, 1e-300)
    return (ox / reach) * push, (oy / reach) * push


@serial
def sin_turns_at(turns):
    """`sin_turns` of one number."""
    q = turns - math.floor(turns + 0.5)
    # Selects, not branches: a loop over birds then vectorises.
    back = 0.5 - q
    q = q if q <= back else back
    back = -0.5 - q
    q = q if q >= back else back
    a = _TWO_PI * q
    a2 = a * a
    poly = _SIN_TAYLOR[9]
    poly = poly * a2 + _SIN_TAYLOR[8]
    poly = poly * a2 + _SIN_TAYLOR[7]
    poly = poly * a2 + _SIN_TAYLOR[6]
    poly = poly * a2 + _SIN_TAYLOR[5]
    poly = poly * a2 + _SIN_TAYLOR[4]
    poly = poly * a2 + _SIN_TAYLOR[3]
    poly = poly * a2 + _SIN_TAYLOR[2]
    poly = poly * a2 + _SIN_TAYLOR[1]
    poly = poly * a2 + _SIN_TAYLOR[0]
    return a * poly


@serial
def field_waves(time_s, wavelength_x, wavelength_y, wavelength_d, drift_x, drift_y, drift_d,
                phase_x, phase_y, phase_d):
    """The field's constants at `time_s`: (scale, offset) per wave, so that the wave along
    coordinate c is at sin_turns(c·scale + offset) — (c − drift·t)/wavelength + phase/2π
    turns; the diagonal's coordinate is x + y, its scale carries the 1/√2. One call per
    step, from numpy and numba alike, so both use the same numbers."""
    sx = 1.0 / wavelength_x
    sy = 1.0 / wavelength_y
    sd = 1.0 / (wavelength_d * _SQRT2)
    ox = phase_x / _TWO_PI - drift_x * time_s * sx
    oy = phase_y / _TWO_PI - drift_y * time_s * sy
    od = phase_d / _TWO_PI - drift_d * time_s / wavelength_d
    return sx, ox, sy, oy, sd, od


@serial
def field_from_waves(x, y, sx, ox, sy, oy, sd, od):
    """`field` φ at (x, y) from `field_waves`' constants. No branch: vectorises."""
    total = 0.0
    total += sin_turns_at(x * sx + ox)
    total += sin_turns_at(y * sy + oy)
    total += sin_turns_at((x + y) * sd + od)
    return total / 3.0


@serial
def field_at(x, y, time_s, wavelengths, drifts, phases):
    """`field` φ at (x, y); wavelengths, drifts, phases: 3-tuples along x, y, diagonal."""
    sx, ox, sy, oy, sd, od = field_waves(time_s, wavelengths[0], wavelengths[1],
                                         wavelengths[2], drifts[0], drifts[1], drifts[2],
                                         phases[0], phases[1], phases[2])
    return field_from_waves(x, y, sx, ox, sy, oy, sd, od)
