"""The landing finale (`[roost] landing_at`, SPEC §11): birds peel off one by one, fly a
funnel down into the reed bed and stay there.

Each bird has a peel-off step, landing_at plus a seeded share of `landing_spread`. From
it the bird is landing: the roost's altitude spring and return no longer act on it;
instead it is steered horizontally toward the roost by `strength` and vertically toward
the funnel's height slope·max(h − radius, 0) (h its horizontal distance from the roost),
damped, so the birds far out come down gently and those over the reeds drop into them.
It is flight (banked, within the speed limits); a landing bird inside the reed bed below
LANDED_Z is landed: it stays where it is, at rest, from then on.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...scene import Scene
from ..jit import inline, parallel, prange

FLYING, LANDING, LANDED = 0, 1, 2
LANDED_Z = 0.5   # m: a landing bird this low over the reeds has landed
DAMPING = 1.0    # 1/s on the vertical speed, so the funnel does not bounce
FUNNEL_SCALE = 10.0  # m off the funnel's height at which the vertical steering saturates


class Landing(NamedTuple):
    """The roost (x, y, m), the reed bed's radius (m), the funnel's slope, the steering's
    strength (m/s²)."""

    active: bool
    x: float
    y: float
    radius: float
    slope: float
    strength: float


def landing(scene: Scene, roost_xy: tuple[float, float]) -> Landing:
    r = scene.roost
    if scene.dimensions != 3 or r is None or r.landing_at is None:
        return Landing(False, 0.0, 0.0, 1.0, 1.0, 0.0)
    return Landing(True, roost_xy[0], roost_xy[1], r.landing_radius, r.landing_slope,
                   r.landing_strength)


def peel_steps(scene: Scene, n: int) -> np.ndarray:
    """(n,) int64: the step each bird starts landing (never, without a landing): a seeded
    uniform share of landing_spread after landing_at."""
    r = scene.roost
    if scene.dimensions != 3 or r is None or r.landing_at is None:
        return np.full(n, np.iinfo(np.int64).max, np.int64)
    share = np.random.default_rng([scene.scene.seed, 0x1A4D]).random(n)
    return np.round((r.landing_at + r.landing_spread * share) / scene.scene.dt).astype(
        np.int64)


@parallel
def advance_state(p, step, pos, peel, state, new_state):
    """Each bird's landing state after `step` (FLYING, LANDING, LANDED; int8 (n,)) into
    new_state: landing from its peel step on, landed once landing over the reeds below
    LANDED_Z; landed stays landed."""
    for i in prange(pos.shape[0]):
        s = state[i]
        if s == FLYING and step >= peel[i]:
            s = LANDING
        if s == LANDING and pos[i, 2] < LANDED_Z and \
                math.hypot(pos[i, 0] - p.x, pos[i, 1] - p.y) < p.radius:
            s = LANDED
        new_state[i] = s


@inline
def accel(p, x, y, z, vz):
    """A landing bird's steering (m/s², 3 floats): toward the roost horizontally, toward
    the funnel's height vertically, damped."""
    dx, dy = p.x - x, p.y - y
    h = math.sqrt(dx * dx + dy * dy)
    ax, ay = (p.strength * dx / h, p.strength * dy / h) if h > 0.0 else (0.0, 0.0)
    height = p.slope * max(h - p.radius, 0.0)
    err = max(-1.0, min(1.0, (height - z) / FUNNEL_SCALE))
    return ax, ay, p.strength * err - DAMPING * vz
