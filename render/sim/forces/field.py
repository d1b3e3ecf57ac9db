"""The steering field (`[field]`): a smooth φ(x, y, t) ∈ [−1, 1], the mean of three
drifting sinusoids along x, y and the diagonal (x + y)/√2, sin(2π·(coord − drift·t)/
wavelength + phase). It is a turn, not a push: each step rotates a bird's new velocity by
turn_rate·dt·φ radians (see motion.integrate)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...scene import Scene
from ..jit import parallel, prange, serial
from ..state import STREAM_FIELD, streams

_TWO_PI = 2 * np.pi
_SQRT2 = np.sqrt(2.0)

# sin(2πq) for |q| ≤ 1/4 as a polynomial in a = 2πq: Taylor's odd terms through a¹⁹.
# The first term left out, (π/2)²¹/21! ≈ 2.6e-16, bounds the error; with round-off the
# result is within 1e-15 of the true sine (tests/test_forces.py). It costs a tenth of a
# libm call and vectorises.
SIN_TAYLOR = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(10))


class Field(NamedTuple):
    """Wavelengths (world units), drifts (world units/s) and phases (radians) along x, y
    and the diagonal; turn: turn_rate·dt, radians a step per unit of φ; time_s: this
    step's time (see `at_time`). Scalars only: numba cannot hand a tuple to a parallel
    loop."""

    active: bool
    wavelength_x: float
    wavelength_y: float
    wavelength_diagonal: float
    drift_x: float
    drift_y: float
    drift_diagonal: float
    phase_x: float
    phase_y: float
    phase_diagonal: float
    turn: float
    time_s: float = 0.0


def phases(rng: np.random.Generator) -> np.ndarray:
    """The field's three phases (radians), drawn once from the scene's seed."""
    return rng.uniform(0.0, 2 * np.pi, 3)


def field(scene: Scene) -> Field:
    f = scene.field
    px, py, pd = (float(p) for p in phases(streams(scene.scene.seed)[STREAM_FIELD]))
    if f is None:
        return Field(False, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, px, py, pd, 0.0)
    return Field(True, f.wavelength_x, f.wavelength_y, f.wavelength_diagonal, f.drift_x,
                 f.drift_y, f.drift_diagonal, px, py, pd, f.turn_rate * scene.scene.dt)


def at_time(f: Field, scene: Scene, time_s: float) -> Field:
    return f._replace(time_s=time_s)


@serial
def sin_turns(turns):
    """sin(2π·turns) of one finite number: reduced to the nearest whole turn, folded onto
    a quarter turn (sin(π − a) = sin a), then the polynomial above."""
    q = turns - math.floor(turns + 0.5)
    # Selects, not branches: a loop over birds then vectorises.
    back = 0.5 - q
    q = q if q <= back else back
    back = -0.5 - q
    q = q if q >= back else back
    a = _TWO_PI * q
    a2 = a * a
    poly = SIN_TAYLOR[9]
    poly = poly * a2 + SIN_TAYLOR[8]
    poly = poly * a2 + SIN_TAYLOR[7]
    poly = poly * a2 + SIN_TAYLOR[6]
    poly = poly * a2 + SIN_TAYLOR[5]
    poly = poly * a2 + SIN_TAYLOR[4]
    poly = poly * a2 + SIN_TAYLOR[3]
    poly = poly * a2 + SIN_TAYLOR[2]
    poly = poly * a2 + SIN_TAYLOR[1]
    poly = poly * a2 + SIN_TAYLOR[0]
    return a * poly


@serial
def waves(f):
    """The field's constants at f.time_s: (scale, offset) per wave, so that the wave along
    coordinate c is at sin_turns(c·scale + offset) — (c − drift·t)/wavelength + phase/2π
    turns; the diagonal's coordinate is x + y, its scale carries the 1/√2. Once a step."""
    t = f.time_s
    sx = 1.0 / f.wavelength_x
    sy = 1.0 / f.wavelength_y
    sd = 1.0 / (f.wavelength_diagonal * _SQRT2)
    ox = f.phase_x / _TWO_PI - f.drift_x * t * sx
    oy = f.phase_y / _TWO_PI - f.drift_y * t * sy
    od = f.phase_diagonal / _TWO_PI - f.drift_diagonal * t / f.wavelength_diagonal
    return sx, ox, sy, oy, sd, od


@serial
def _phi(x, y, sx, ox, sy, oy, sd, od):
    """φ at (x, y) from `waves`' constants. No branch: vectorises."""
    total = 0.0
    total += sin_turns(x * sx + ox)
    total += sin_turns(y * sy + oy)
    total += sin_turns((x + y) * sd + od)
    return total / 3.0


@parallel
def turns(positions, f):
    """(n,) radians to turn each bird at positions (n, 2) this step: f.turn·φ (φ itself
    with turn = 1); zeros without the field."""
    n = positions.shape[0]
    out = np.zeros(n)
    if f.active:
        sx, ox, sy, oy, sd, od = waves(f)
        # Contiguous coordinates: the loop then vectorises across birds.
        xs = positions[:, 0].copy()
        ys = positions[:, 1].copy()
        for b in prange(n):
            out[b] = f.turn * _phi(xs[b], ys[b], sx, ox, sy, oy, sd, od)
    return out

