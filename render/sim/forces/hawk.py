"""The hawk (`[hawk]`): a repulsor of strength·(1 − d/radius)² within `radius`, that
crosses the flock on a straight chord through the world's centre once a period."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...scene import Scene
from ..jit import serial

GOLDEN_ANGLE = np.pi * (3.0 - np.sqrt(5.0))  # ≈ 137.5°


class Hawk(NamedTuple):
    """out: the hawk is flying this step, at (x, y) (see `at_time`); (cx, cy): the world's
    centre its chords cross."""

    out: bool
    radius: float
    strength: float
    cx: float
    cy: float
    x: float = 0.0
    y: float = 0.0


def hawk(scene: Scene) -> Hawk:
    h, world = scene.hawk, scene.world
    return Hawk(False, h.radius if h else 0.0, h.strength if h else 0.0,
                0.5 * world.width, 0.5 * world.height)


def position(time_s: float, hawk, centre) -> tuple[float, float] | None:
    """Where the hawk (its scene settings) is at `time_s`, or None while it is away.

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


def at_time(h: Hawk, scene: Scene, time_s: float) -> Hawk:
    """`h` out at its position at `time_s`, or not out."""
    where = None if scene.hawk is None else position(time_s, scene.hawk, (h.cx, h.cy))
    if where is None:
        return h._replace(out=False, x=0.0, y=0.0)
    return h._replace(out=True, x=float(where[0]), y=float(where[1]))


@serial
def accel(h, x, y):
    """Acceleration (world units/s²) of a bird at (x, y), away from the hawk."""
    ox = x - h.x
    oy = y - h.y
    # Clearly beyond the radius the push is exactly zero; hypot saved.
    if ox * ox + oy * oy >= 1.01 * h.radius * h.radius:
        return 0.0, 0.0
    dist = math.hypot(ox, oy)
    fade = max(1.0 - dist / h.radius, 0.0)
    push = h.strength * (fade * fade)
    reach = max(dist, 1e-300)
    return (ox / reach) * push, (oy / reach) * push
