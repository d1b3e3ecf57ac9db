"""Walls (`[world] boundary = "walls"`): zero farther than the margin from every edge,
strength·(margin/d − 1) inward at distance d < margin, so birds fly straight until late and
then bank hard."""

from __future__ import annotations

from typing import NamedTuple

from ...scene import Scene
from ..jit import serial

# The hyperbolic push is capped where a bird reaches 1% of the margin from the edge (or
# beyond it): the push is then 99× the strength, enough to turn any bird back.
NEAREST = 0.01


class Walls(NamedTuple):
    active: bool
    width: float
    height: float
    margin: float
    strength: float


def walls(scene: Scene) -> Walls:
    world = scene.world
    return Walls(world.boundary == "walls", world.width, world.height, world.wall_margin,
                 world.wall_strength)


@serial
def _along(p, extent, margin, strength):
    """The push along one axis for the coordinate p in [0, extent]."""
    floor = NEAREST * margin
    near = max(p, floor)
    far = max(extent - p, floor)
    push = 0.0 + strength * max(margin / near - 1.0, 0.0)
    return push - strength * max(margin / far - 1.0, 0.0)


@serial
def accel(w, x, y):
    """Acceleration (world units/s²) of a bird at (x, y)."""
    return (_along(x, w.width, w.margin, w.strength),
            _along(y, w.height, w.margin, w.strength))
