"""Per-frame diagnostics of a flock (docs/model.md, diagnostics), written as CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np

from ..scene import Scene
from . import motion
from .forces import flocking
from .grid import grid_shape
from .listed import unit_rows as unit_headings  # v/|v| per row; zero at rest
from .neighbours import neighbour_sums
from .snapshot import Snapshot

COLUMNS = ("frame", "time_s", "global_polarisation", "local_polarisation",
           "neighbours_mean", "neighbours_p10", "neighbours_p50", "neighbours_p90",
           "nearest_median_spacings", "candidates_mean", "inside_share", "hole_radius")

# Scanning outward from the hawk, the hole ends at the first disc that holds this share of
# the birds the flock's mean density (count / world area) would put there, and at least
# HOLE_STRAGGLERS + 1 birds: a few stragglers inside do not close it, a sheet of birds does.
HOLE_DENSITY = 0.25
HOLE_STRAGGLERS = 4


def spacing(scene: Scene) -> float:
    """sqrt(world area / count): the mean distance between birds, the diagnostics' unit."""
    return math.sqrt(scene.world.width * scene.world.height / scene.count)


def local_headings(snap: Snapshot, scene: Scene) -> np.ndarray:
    """(n, 2) mean unit heading over each bird's neighbours and itself, birds at rest
    skipped, by bird (its length is the diagnostics' local polarisation); zero where all of them
    are at rest. A neighbourhood pass of its own, over the unit headings in place of the
    velocities: only the diagnostics read it, so the step does not carry two more sums
    through its candidate loop."""
    world, rules = motion.world(scene), flocking.flocking(scene)
    pos = snap.positions
    unit = unit_headings(snap.velocities)
    grid = grid_shape(pos, rules.radius, world.width, world.height, world.wrap)
    sums = neighbour_sums(pos, unit, grid, world, rules)
    moving = np.any(unit != 0.0, axis=1)
    if moving.all():
        members = sums["count"] + 1.0
    else:
        # Birds at rest are rare (only with min_speed 0): the moving members are counted
        # by a second pass, over 1 for a moving bird in place of its heading's x.
        flags = np.column_stack([moving, np.zeros(len(pos))]).astype(np.float64)
        members = neighbour_sums(pos, flags, grid, world, rules)["vsum"][:, 0] + moving
    return (sums["vsum"] + unit) / np.maximum(members, 1.0)[:, None]


def measure(snap: Snapshot, scene: Scene, time: Fraction = Fraction(0)) -> dict[str, float]:
    """Diagnostics of one state of this scene's flock, the frame at `time` s (3D:
    diagnostics3d.measure3)."""
    if scene.dimensions == 3:
        from .diagnostics3d import measure3

        return measure3(snap, scene, time)
    s = spacing(scene)
    unit = unit_headings(snap.velocities)
    moving = np.any(unit != 0.0, axis=1)
    global_pol = float(np.hypot(*unit[moving].mean(axis=0))) if moving.any() else 0.0
    has = (snap.neighbours > 0) & moving
    heading = local_headings(snap, scene)
    local = np.hypot(heading[has, 0], heading[has, 1])
    local_pol = float(local.mean()) if has.any() else math.nan
    p10, p50, p90 = np.percentile(snap.neighbours, [10, 50, 90])
    nearest = snap.nearest[np.isfinite(snap.nearest)]
    nn = float(np.median(nearest)) / s if nearest.size else math.nan
    return {
        "global_polarisation": global_pol,
        "local_polarisation": local_pol,
        "neighbours_mean": float(snap.neighbours.mean()),
        "neighbours_p10": float(p10),
        "neighbours_p50": float(p50),
        "neighbours_p90": float(p90),
        "nearest_median_spacings": nn,
        "candidates_mean": float(snap.candidates.mean()),
        "inside_share": float(snap.inside.mean()) if snap.inside is not None else math.nan,
        "hole_radius": hole_radius(snap.positions, snap.hawk, s),
    }


def hole_radius(positions: np.ndarray, hawk, spacing: float) -> float:
    """Radius of the hole the hawk tears (NaN while it is away), world units: the distance
    to the nearest bird at which the disc around the hawk reaches HOLE_DENSITY of the mean
    density 1/spacing² (and holds more than HOLE_STRAGGLERS birds)."""
    if hawk is None or len(positions) <= HOLE_STRAGGLERS:
        return math.nan
    dist = np.sort(np.hypot(positions[:, 0] - hawk[0], positions[:, 1] - hawk[1]))
    held = np.arange(1, len(dist) + 1)  # birds within dist[k], inclusive
    closed = (held >= HOLE_DENSITY * np.pi * dist**2 / spacing**2) & (held > HOLE_STRAGGLERS)
    return float(dist[np.argmax(closed)]) if closed.any() else math.inf


# The formats `formatted` knows, by suffix.
SUFFIXES = (".csv", ".json")


def formatted(rows: list[dict], path: str | Path) -> str:
    """Rows as the text of a CSV (.csv) or a JSON list of objects (.json) file at
    `path`."""
    if Path(path).suffix.lower() == ".json":
        # JSON has no NaN: a measure that does not apply (no hawk out) is null.
        plain = [{k: None if isinstance(v, float) and not math.isfinite(v) else v
                  for k, v in row.items()} for row in rows]
        return json.dumps(plain, indent=1, allow_nan=False) + "\n"
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=list(rows[0]) if rows else COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
