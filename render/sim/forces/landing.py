"""The landing finale (`[roost] landing_at`, SPEC §11): birds peel off one by one, fly a
funnel down into the reed bed and stay there.

Each bird has a peel-off step, landing_at plus a seeded share of `landing_spread`. From
it the bird is landing: the roost's altitude spring and return no longer act on it;
instead its heading is turned (by `strength`) toward the roost and down the funnel, whose
height is slope·max(h − radius, 0) (h its horizontal distance from the roost): a bird
above the funnel descends more steeply, so the birds far out come down gently and those
over the reeds drop into them.
It is flight (banked, within the speed limits); a landing bird inside the reed bed below
LANDED_Z is landed: it stays where it is, at rest, from then on, and is nobody's
neighbour (step3d.neighbourhood). A landing bird keeps only the separation of the rules
(step3d.move3): cohesion and alignment would hold it in the flock overhead.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...scene import Scene
from ..jit import inline, parallel, prange

FLYING, LANDING, LANDED = 0, 1, 2
LANDED_Z = 0.5   # m: a landing bird this low over the reeds has landed
FUNNEL_SCALE = 10.0  # m: each this far above the funnel steepens the descent by 1 (slope)
DESCENT_MOST = 1.5   # the steepest descent steered for (1.5: 56°) ...
CLIMB_MOST = 0.5     # ... and the steepest climb, for a bird under the funnel


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
def accel(p, x, y, z, f0, f1, f2):
    """A landing bird's steering (m/s², 3 floats) at (x, y, z) flying along the unit
    forward vector f: strength·(d − f), d the unit direction toward the roost that
    descends at the funnel's slope plus (z − funnel height)/FUNNEL_SCALE (within
    [−CLIMB_MOST, DESCENT_MOST]): the bird turns down the funnel without braking."""
    dx, dy = p.x - x, p.y - y
    h = math.sqrt(dx * dx + dy * dy)
    height = p.slope * max(h - p.radius, 0.0)
    down = (p.slope if h > p.radius else 0.0) + (z - height) / FUNNEL_SCALE
    down = max(-CLIMB_MOST, min(DESCENT_MOST, down))
    if h > 0.0:
        d0, d1, d2 = dx / h, dy / h, -down
    else:
        d0, d1, d2 = 0.0, 0.0, -1.0
    norm = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    return (p.strength * (d0 / norm - f0), p.strength * (d1 / norm - f1),
            p.strength * (d2 / norm - f2))
