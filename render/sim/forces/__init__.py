"""The forces of the model (docs/model.md), one module each: its parameters (a NamedTuple of
scalars, built once from the scene by the function of the same name) and its one numba
implementation, per bird (`accel(params, x, y)`, scalars in, scalars out), which the fused
step calls and which Python can call too. `tests/naive.py` holds their references.

The pushes act on top of the flocking rules in this order, each added onto the sum so far
from 0.0: walls, attractor, containment, hawk (while it is out); see `pushes`. The field
turns the new velocity instead (motion.integrate).
"""

from __future__ import annotations

from typing import NamedTuple

from ...scene import Scene
from ..jit import inline
from . import attractor, containment, field, flocking, hawk, walls
from .attractor import Attractor
from .containment import Containment
from .field import Field
from .flocking import Flocking
from .hawk import Hawk
from .walls import Walls

class Forces(NamedTuple):
    """Every force's parameters, as one step reads them (see `at_time`)."""

    flocking: Flocking
    field: Field
    walls: Walls
    attractor: Attractor
    containment: Containment
    hawk: Hawk


def build(scene: Scene) -> Forces:
    """The forces' parameters, built once from the scene."""
    return Forces(flocking.flocking(scene), field.field(scene), walls.walls(scene),
                  attractor.attractor(scene), containment.containment(scene),
                  hawk.hawk(scene))


def at_time(forces: Forces, scene: Scene, time_s: float) -> Forces:
    """`forces` for the step at `time_s`: where the hawk and the attractor are, the field's
    time."""
    return forces._replace(field=field.at_time(forces.field, scene, time_s),
                           attractor=attractor.at_time(forces.attractor, scene, time_s),
                           hawk=hawk.at_time(forces.hawk, scene, time_s))


@inline
def pushes(x, y, w, a, c, h):
    """The pushes on one bird at (x, y), given the parameters of walls, attractor,
    containment and hawk (in the order they add up): (ax, ay) summed, and whether it is
    inside the containment (True without it)."""
    ex = ey = 0.0
    if w.active:
        ex, ey = _plus(ex, ey, walls.accel(w, x, y))
    if a.active:
        ex, ey = _plus(ex, ey, attractor.accel(a, x, y))
    inside = True
    if c.active:
        px, py, inside = containment.accel(c, x, y)
        ex, ey = _plus(ex, ey, (px, py))
    if h.out:
        ex, ey = _plus(ex, ey, hawk.accel(h, x, y))
    return ex, ey, inside


@inline
def _plus(ex, ey, push):
    return ex + push[0], ey + push[1]
