"""The roost (docs/model.md): a vertical spring toward the preferred altitude, and a return
toward the roost that turns the heading sideways, never a radial spring.

A radial spring toward the roost points against the heading of a flock flying away from
it: the birds brake, and in the prototype the flock dived and split. Here the return is
switched for the whole flock at once, from its centroid (one fixed-order mean), with
hysteresis: it starts when the centroid is farther than `radius` from the roost and stops
once it is back within radius·(1 − hysteresis); its strength and the side birds flying
away turn to are the flock's too. While it is on, each bird is steered perpendicular to
its own horizontal heading, toward the roost as the bird itself sees it, by
min(k·(d − inner), cap)·(1 − cos θ)/2, θ the angle between the heading and the roost's
direction from the bird: zero once the bird flies toward the roost, so the flock keeps
its speed. Each bird aiming from where it is (not from the centroid) bends the flock round
the roost: its far end turns before its near end, the turn runs through it as it does in
real flocks, and the flock stretches and folds instead of sliding round as a rigid plate
(polarisation 0.99 and a longest axis that barely changed, when every bird aimed from the
centroid).

The same turn, toward the flock's centroid instead of the roost, is `rules.gather`: a bird
farther than gather_radius from the centroid (horizontally) turns toward it by
min(gather·(e − gather_radius), gather_cap)·(1 − cos θ)/2, the shorter way. Topological
neighbours hold a flock together only as far as each bird's nearest reach: two parts that
a hawk has split have nothing else to bring them back, so a real murmuration's parts, each
seeing the other from afar, meet again where the model's flew apart. It rides this step's
tuple because it reads the centroid the return reads.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...scene import Scene
from ..flockstats3d import clusters
from ..jit import serial

# Seconds from no return to its cap: switched on at full strength, every bird of the flock
# banked at the same instant (a dark flash across it) and a clip's frame difference jumped.
RAMP_S = 2.0
# The flock is split while its largest part (its birds linked at under 5 m, as the
# one-flock measure links them) holds under SPLIT_BELOW of the birds flying; the parts are
# found every PART_EVERY_S (a step of 20,000 birds takes about 13 ms, the parts 20 ms).
SPLIT_BELOW = 0.9
PART_EVERY_S = 0.5


class Roost(NamedTuple):
    """The roost at (x, y) on the ground (m); the preferred altitude (m); the vertical
    spring (1/s²); the outer and inner radii (m) of the return; its gain (1/s²) and cap
    (m/s²). This step's return (`at_step`): homing, its strength (m/s²) and the side
    birds flying away turn to (+1 left). The gather's gain (1/s², 0: none), radius (m) and
    cap (m/s²), and this step's centroid (cx, cy)."""

    active: bool
    x: float
    y: float
    altitude: float
    k_vertical: float
    radius: float
    inner: float
    k_return: float
    cap: float
    homing: bool = False
    strength: float = 0.0
    side: float = 1.0
    gather: float = 0.0
    gather_radius: float = 0.0
    gather_cap: float = 0.0
    cx: float = 0.0
    cy: float = 0.0


def roost(scene: Scene) -> Roost:
    r, rules = scene.roost, scene.rules
    gather = dict(gather=rules.gather, gather_radius=rules.gather_radius,
                  gather_cap=rules.gather_cap)
    if r is None:
        return Roost(False, 0.0, 0.0, 0.0, 0.0, math.inf, math.inf, 0.0, 0.0, **gather)
    x, y = r.position if r.position is not None else (scene.world.width / 2,
                                                       scene.world.height / 2)
    return Roost(True, x, y, r.altitude, r.vertical_strength, r.radius,
                 r.radius * (1.0 - r.hysteresis), r.return_strength, r.return_cap, **gather)


def at_step(params: Roost, centroid: np.ndarray, heading: np.ndarray, homing: bool,
            side: float, strength: float, dt: float) -> Roost:
    """The return for a flock whose centroid is `centroid` and mean forward vector
    `heading` (3 floats each), which was `homing` last step turning to `side` (+1 left,
    −1 right) at `strength` (m/s²), after dt (s). A return that starts picks the side the
    flock's heading is nearer to the roost on and keeps it: birds flying away from the
    roost all turn the same way. Its strength moves toward min(k·(d − inner), cap) (0 once
    off) by at most cap·dt/RAMP_S a step."""
    params = params._replace(cx=float(centroid[0]), cy=float(centroid[1]))
    if not params.active:
        return params
    dx, dy = params.x - float(centroid[0]), params.y - float(centroid[1])
    d = math.hypot(dx, dy)
    on = d > params.radius or (homing and d > params.inner)
    if on and not homing:
        side = 1.0 if float(heading[0]) * dy - float(heading[1]) * dx >= 0.0 else -1.0
    target = min(params.k_return * (d - params.inner), params.cap) if on else 0.0
    most = params.cap * dt / RAMP_S
    strength += min(max(target - strength, -most), most)
    return params._replace(homing=on, strength=strength, side=side)


def largest_part(pos: np.ndarray, flying: np.ndarray | None = None) -> np.ndarray | None:
    """(n,) bool, the birds of the largest part of those `flying` ((n,) bool; None: all)
    while the flock is split (a tie: the part of the lowest-numbered bird), else None."""
    idx = np.arange(len(pos)) if flying is None else np.flatnonzero(flying)
    if len(idx) == 0:
        return None
    roots = clusters(pos[idx])
    sizes = np.bincount(roots)
    if sizes.max() >= SPLIT_BELOW * len(idx):
        return None
    part = np.zeros(len(pos), bool)
    part[idx[roots == int(np.argmax(sizes))]] = True
    return part


@serial
def accel(p, x, y, z, f0, f1):
    """The roost's acceleration and the gather's (m/s², 3 floats) on a bird at (x, y, z)
    whose forward vector's horizontal part is (f0, f1)."""
    az = -p.k_vertical * (z - p.altitude) if p.active else 0.0
    homing = p.active and p.strength > 0.0
    if not (homing or p.gather > 0.0):
        return 0.0, 0.0, az
    h = math.sqrt(f0 * f0 + f1 * f1)
    if h == 0.0:
        return 0.0, 0.0, az
    hx, hy = f0 / h, f1 / h
    push = 0.0
    if homing:
        push = _turn(p.x - x, p.y - y, hx, hy, p.strength, p.side)
    if p.gather > 0.0:
        ex, ey = p.cx - x, p.cy - y
        pull = min(p.gather * (math.sqrt(ex * ex + ey * ey) - p.gather_radius), p.gather_cap)
        if pull > 0.0:
            push += _turn(ex, ey, hx, hy, pull, 0.0)
    # The left of heading (hx, hy) is (−hy, hx).
    return -hy * push, hx * push, az


@serial
def _turn(dx, dy, hx, hy, strength, side):
    """Sideways steering (m/s², + to the left) of a bird heading (hx, hy) toward the point
    (dx, dy) away: strength·(1 − cos θ)/2. Heading away from it (cos θ < 0) it turns to
    `side` (0: its own), else the shorter way onto it, so no bird circles past it."""
    d = math.sqrt(dx * dx + dy * dy)
    if d == 0.0:
        return 0.0
    tx, ty = dx / d, dy / d
    toward = tx * hx + ty * hy
    cross = hx * ty - hy * tx
    if toward >= 0.0 or side == 0.0:
        side = 1.0 if cross >= 0.0 else -1.0
    return strength * 0.5 * (1.0 - toward) * side
