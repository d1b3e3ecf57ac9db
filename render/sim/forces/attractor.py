"""The attractor (`[attractor]`): a pull of magnitude strength·d/(d + radius) toward a point,
nearly `strength` far away and fading to zero on the point, so the flock swarms around it
instead of collapsing. The point is fixed or moves linearly between keyframes."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...scene import Scene
from ..jit import serial


class Attractor(NamedTuple):
    """x, y: where the point is this step (see `at_time`)."""

    active: bool
    strength: float
    radius: float
    x: float = 0.0
    y: float = 0.0


def attractor(scene: Scene) -> Attractor:
    att = scene.attractor
    if att is None:
        return Attractor(False, 0.0, 0.0)
    return Attractor(True, att.strength, att.radius)


def point(time_s: float, position, path) -> tuple[float, float]:
    """Where the attractor is at `time_s`: a fixed point, or linear between keyframes
    (t, x, y), held before the first and after the last."""
    if path is None:
        return position
    times = np.array([k[0] for k in path])
    x = float(np.interp(time_s, times, [k[1] for k in path]))
    y = float(np.interp(time_s, times, [k[2] for k in path]))
    return x, y


def at_time(a: Attractor, scene: Scene, time_s: float) -> Attractor:
    """`a` with the point where it is at `time_s` (the world's centre by default)."""
    if not a.active:
        return a
    att, world = scene.attractor, scene.world
    default = (0.5 * world.width, 0.5 * world.height)
    x, y = point(time_s, att.position or default, att.path)
    return a._replace(x=float(x), y=float(y))


@serial
def accel(a, x, y):
    """Acceleration (world units/s²) of a bird at (x, y)."""
    ox = a.x - x
    oy = a.y - y
    scale = a.strength / (math.hypot(ox, oy) + a.radius)
    return ox * scale, oy * scale
