"""The landing finale (`[roost] landing_at`, docs/model.md): birds peel off, nearest the roost
first, fly a funnel down into the reed bed and stay there.

From landing_at, over `landing_spread`, the birds peel off nearest the roost first
(`peel_nearest`): the flock drains from its side over the reeds. From its peel-off step a
bird is landing: the roost's altitude spring and return no longer act on it;
instead its heading is turned (by `strength`) toward the roost and down the funnel, whose
height is slope·max(h − radius, 0) (h its horizontal distance from the roost): a bird
above the funnel descends more steeply, one below it flies in level until it meets it
(never up: steered to climb back to the funnel, up to 27°, the birds far out rose as the
flock drained), so with a steep funnel the birds fly in and pour down over the reeds.
It is flight (banked, within the speed limits); a landing bird inside the reed bed below
LANDED_Z is landed: it stays where it is, at rest, from then on, and is nobody's
neighbour (step3d._topological). A landing bird keeps the rules (step3d._fly): the
birds that peel off together pour down together, one stream.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...ranking import stable_order
from ...scene import Scene
from ..jit import inline, prange, sized

FLYING, LANDING, LANDED = 0, 1, 2
LANDED_Z = 0.5   # m: a landing bird this low over the reeds has landed
FUNNEL_SCALE = 10.0  # m: each this far above the funnel steepens the descent by 1 (slope)
DESCENT_MOST = 1.5   # the steepest descent steered for (1.5: 56°); never a climb


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


# Every PEEL_EVERY steps of the landing the birds still flying nearest the roost begin to
# land, so the flock drains from its side over the reeds as one stream. Each bird's own
# seeded moment left birds leaving from everywhere at once, each on its own path down: a
# veil over the whole flock.
PEEL_EVERY = 10


def peel_schedule(scene: Scene) -> tuple[int, float]:
    """(the step the landing begins, landing_spread in steps (at least 1)); the step is
    never reached without a landing."""
    r = scene.roost
    if scene.dimensions != 3 or r is None or r.landing_at is None:
        return np.iinfo(np.int64).max, 1.0
    dt = scene.scene.dt
    return round(r.landing_at / dt), max(r.landing_spread / dt, 1.0)


def peel_nearest(p: Landing, first: int, spread: float, step: int, pos: np.ndarray,
                 state: np.ndarray, peel: np.ndarray) -> None:
    """At `first` and every PEEL_EVERY steps after: the birds still flying (state FLYING
    and no peel step yet, peel (n,) int64) nearest the roost horizontally, ties by bird
    index, are given this step as their peel step, as many as bring the share given one
    to (step − first + PEEL_EVERY) / spread, all of them by first + spread."""
    if step < first or (step - first) % PEEL_EVERY:
        return
    n = len(pos)
    elapsed = step - first + PEEL_EVERY
    quota = n if elapsed >= spread else math.ceil(n * elapsed / spread)
    flying = np.flatnonzero((state == FLYING) & (peel > step))
    need = quota - (n - len(flying))
    if need > 0:
        d = np.hypot(pos[flying, 0] - p.x, pos[flying, 1] - p.y)
        peel[flying[stable_order(d)[:need]]] = step


@sized("pos")
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
    [0, DESCENT_MOST]: level from FUNNEL_SCALE·slope under the funnel, 25 m at the
    default slope): the bird turns down the funnel without braking."""
    dx, dy = p.x - x, p.y - y
    h = math.sqrt(dx * dx + dy * dy)
    height = p.slope * max(h - p.radius, 0.0)
    down = (p.slope if h > p.radius else 0.0) + (z - height) / FUNNEL_SCALE
    down = max(0.0, min(DESCENT_MOST, down))
    if h > 0.0:
        d0, d1, d2 = dx / h, dy / h, -down
    else:
        d0, d1, d2 = 0.0, 0.0, -1.0
    norm = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    return (p.strength * (d0 / norm - f0), p.strength * (d1 / norm - f1),
            p.strength * (d2 / norm - f2))
