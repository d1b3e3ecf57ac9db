"""Integration: a bird's new velocity and position from its acceleration and turn."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..scene import Scene
from .jit import parallel, prange, serial


class World(NamedTuple):
    """wrap: the world is a torus of width x height (world units)."""

    wrap: bool
    width: float
    height: float

    @property
    def extent(self) -> tuple[float, ...]:
        """The world's side along each axis."""
        return (self.width, self.height)


class Motion(NamedTuple):
    """The fixed step dt (s) and the speed limits (world units/s)."""

    dt: float
    min_speed: float
    max_speed: float


def world(scene: Scene) -> World:
    w = scene.world
    return World(w.boundary == "wrap", w.width, w.height)


def motion(scene: Scene) -> Motion:
    return Motion(scene.scene.dt, scene.flock.min_speed, scene.flock.max_speed)


@serial
def integrate_bird(world, motion, x, y, vx, vy, ax, ay, turn):
    """One bird's step (see `integrate`); returns the new (x, y, vx, vy)."""
    dt, min_speed, max_speed = motion.dt, motion.min_speed, motion.max_speed
    width, height = world.width, world.height
    vx = vx + ax * dt
    vy = vy + ay * dt
    speed = math.sqrt(vx * vx + vy * vy)
    if speed == 0.0:
        vx = min_speed
        vy = 0.0
    else:
        # Selects, not branches (birds sit at either speed limit unpredictably); ×1.0
        # leaves a bird within the limits as it was.
        limit = max_speed if speed > max_speed else min_speed
        clamp = limit / speed
        s = clamp if (speed > max_speed) | (speed < min_speed) else 1.0
        vx *= s
        vy *= s
    if turn != 0.0:
        c, s = _cos_sin(turn)
        vx, vy = c * vx - s * vy, s * vx + c * vy
    x = x + vx * dt
    y = y + vy * dt
    if world.wrap:
        x -= width * math.floor(x / width)
        y -= height * math.floor(y / height)
        if x >= width:
            x = 0.0
        if y >= height:
            y = 0.0
    return x, y, vx, vy


# Below this angle (radians) `_cos_sin` uses Taylor polynomials: the first terms left out,
# t⁹/9! and t¹⁰/10!, are below 6e-18 there. (The plate turns at most 0.0092 rad a step.)
_SMALL_TURN = 0.05


@serial
def _cos_sin(t):
    """(cos t, sin t); polynomials for small |t| (a fifth of the cost of libm's pair)."""
    if abs(t) > _SMALL_TURN:
        return math.cos(t), math.sin(t)
    t2 = t * t
    c = 1.0 - t2 * (0.5 - t2 * (1.0 / 24 - t2 * (1.0 / 720 - t2 * (1.0 / 40320))))
    s = t * (1.0 - t2 * (1.0 / 6 - t2 * (1.0 / 120 - t2 * (1.0 / 5040))))
    return c, s


@parallel
def integrate(pos, vel, acc, turn, world, motion):
    """Semi-implicit Euler: v' = clamp_speed(v + a·dt) turned by `turn` radians,
    p' = p + v'·dt (wrapped onto the torus when the world wraps). pos, vel, acc (n, 2),
    turn (n,). Returns new (pos, vel), (n, 2).

    A bird with zero speed and min_speed > 0 takes heading +x: it has no direction of its
    own, and a fixed choice keeps the step deterministic and free of NaN.
    """
    n = pos.shape[0]
    new_pos = np.empty_like(pos)
    new_vel = np.empty_like(vel)
    for i in prange(n):
        new_pos[i, 0], new_pos[i, 1], new_vel[i, 0], new_vel[i, 1] = integrate_bird(
            world, motion, pos[i, 0], pos[i, 1], vel[i, 0], vel[i, 1], acc[i, 0], acc[i, 1],
            turn[i])
    return new_pos, new_vel
