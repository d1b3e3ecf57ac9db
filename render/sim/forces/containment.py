"""Elliptical containment (`[containment]`): exactly zero inside an ellipse centred in the
world, strength·d toward the centre at distance d outside it (measured along the ray from
the centre). It never pulls toward the flock's centroid: orbits about one point phase-lock
into a ring, while a fixed soft rim leaves the flock free to fold inside it."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...scene import Scene
from ..jit import parallel, prange, serial

# Semi-axes as a fraction of the world's sides when the scene has no containment section
# (docs/model.md); only the diagnostics' ellipse then.
DEFAULT_SEMI_AXES = 0.385


class Containment(NamedTuple):
    """Centre (cx, cy) and semi-axes (a, b) in world units."""

    active: bool
    cx: float
    cy: float
    a: float
    b: float
    strength: float


def containment(scene: Scene) -> Containment:
    world, cont = scene.world, scene.containment
    fraction = cont.semi_axes if cont else DEFAULT_SEMI_AXES
    return Containment(cont is not None, 0.5 * world.width, 0.5 * world.height,
                       fraction * world.width, fraction * world.height,
                       cont.strength if cont else 0.0)


@serial
def accel(c, x, y):
    """(ax, ay, inside) of a bird at (x, y): its acceleration (world units/s²), and whether
    it is inside the ellipse (on the rim counts as inside)."""
    ox = x - c.cx
    oy = y - c.cy
    u = ox / c.a
    v = oy / c.b
    # Well inside (ρ < 0.995) the exact test below says inside too; two hypot calls saved.
    if u * u + v * v < 0.99:
        return 0.0, 0.0, True
    rho = math.hypot(u, v)
    if not rho > 1.0:
        return 0.0, 0.0, True
    dist = math.hypot(ox, oy)
    outside = dist * (1.0 - 1.0 / max(rho, 1.0))
    scale = c.strength * outside
    reach = max(dist, 1e-300)
    return (-ox / reach) * scale, (-oy / reach) * scale, outside == 0.0


@parallel
def inside(positions, c):
    """(n,) bool: which of the birds at positions (n, 2) are inside the ellipse."""
    n = positions.shape[0]
    out = np.empty(n, np.bool_)
    for i in prange(n):
        out[i] = accel(c, positions[i, 0], positions[i, 1])[2]
    return out
