"""The forces of the model (SPEC §3), one module each: its parameters (a NamedTuple of
scalars, built once from the scene by the function of the same name) and its one numba
implementation, per bird (`accel(params, x, y)`, scalars in, scalars out), which the fused
step calls and which Python can call too. `tests/naive.py` holds their references.

The pushes act on top of the flocking rules in the order of PUSHES, each added onto the
sum so far from 0.0: walls, attractor, containment, hawk (while it is out). The field
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

# The modules whose `accel` pushes the birds, in the order the pushes add up.
PUSHES = (walls, attractor, containment, hawk)


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
    """The pushes on one bird at (x, y), the forces' parameters in the order of PUSHES:
    (ax, ay) summed, and whether it is inside the containment (True without it)."""
    ex = ey = 0.0
    if w.active:
        px, py = walls.accel(w, x, y)
        ex += px
        ey += py
    if a.active:
        px, py = attractor.accel(a, x, y)
        ex += px
        ey += py
    inside = True
    if c.active:
        px, py, inside = containment.accel(c, x, y)
        ex += px
        ey += py
    if h.out:
        px, py = hawk.accel(h, x, y)
        ex += px
        ey += py
    return ex, ey, inside
