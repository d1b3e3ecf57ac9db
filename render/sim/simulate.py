"""The fixed-step simulator and the frames sampled from it.

`Simulation` validates and prepares arrays and calls the small numba kernels; `frames`
turns its steps into frame states at the output rate (SPEC §2: the step never changes to
suit the fps; a frame between two steps interpolates, the short way across a wrapping edge).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..scene import Scene
from . import forces
from .grid import counting_sort, grid_shape
from .kernels import FALLOFF_POWER, integrate, neighbourhood, steer
from .state import STREAM_FIELD, seed_flock, streams


@dataclass(frozen=True)
class Snapshot:
    """One simulated state and what its neighbourhoods measured, indexed by bird identity.

    step: steps after settling (0 is frame 0's state). positions, velocities: (n, 2).
    neighbours, candidates: (n,) int64; nearest: (n,) nearest-neighbour distance (inf
    when none within the perception radius); local_heading: (n, 2) mean unit heading over
    each bird's neighbours and itself. inside: (n,) bool, inside the containment ellipse
    (None without containment). hawk: the hawk's (x, y) while it is out, else None.
    """

    step: int
    positions: np.ndarray
    velocities: np.ndarray
    neighbours: np.ndarray
    candidates: np.ndarray
    nearest: np.ndarray
    local_heading: np.ndarray
    inside: np.ndarray | None = None
    hawk: tuple[float, float] | None = None


def unit_headings(vel: np.ndarray) -> np.ndarray:
    """v/|v| per row; zero for birds with zero speed."""
    speed = np.hypot(vel[:, 0], vel[:, 1])
    out = np.zeros_like(vel)
    moving = speed > 0
    out[moving] = vel[moving] / speed[moving, None]
    return out


class Simulation:
    """The flock of one scene, advanced one fixed step at a time.

    After construction the settle steps have run: `step_index` is 0 and `positions` is the
    state frame 0 shows.
    """

    def __init__(self, scene: Scene):
        self.scene = scene
        init = seed_flock(scene)
        self.accent = init.accent
        self.positions = init.positions
        self.velocities = init.velocities
        self.dt = scene.scene.dt
        self.step_index = -scene.scene.settle_steps
        self._wrap = scene.world.boundary == "wrap"
        rules = scene.rules
        self._rule_args = (rules.separation_weight, rules.alignment_weight,
                           rules.cohesion_weight, rules.alignment == "difference",
                           rules.max_force if rules.max_force is not None else math.inf)
        world = scene.world
        self.centre = (0.5 * world.width, 0.5 * world.height)
        fraction = scene.containment.semi_axes if scene.containment else 0.385
        self.semi_axes = (fraction * world.width, fraction * world.height)
        self._phases = forces.field_phases(streams(scene.scene.seed)[STREAM_FIELD])
        while self.step_index < 0:
            self.advance()

    @property
    def time_s(self) -> float:
        return self.step_index * self.dt

    def measure(self) -> tuple[Snapshot, np.ndarray]:
        """Neighbourhood of the current state: its Snapshot and the flocking acceleration."""
        scene, rules = self.scene, self.scene.rules
        pos, vel = self.positions, self.velocities
        w, h = scene.world.width, scene.world.height
        shape = grid_shape(pos, rules.perception_radius, w, h, self._wrap)
        order, cell_start, cell_x, cell_y = counting_sort(
            pos, shape.x0, shape.y0, shape.cw, shape.ch, shape.nx, shape.ny)
        pos_s = np.ascontiguousarray(pos[order])
        vel_s = np.ascontiguousarray(vel[order])
        unit_s = unit_headings(vel_s)
        count, cand, sep, vsum, offsum, usum, nn = neighbourhood(
            pos_s, vel_s, unit_s, cell_x, cell_y, cell_start, shape.nx, shape.ny,
            self._wrap, w, h, rules.perception_radius, rules.separation_radius,
            FALLOFF_POWER[rules.falloff])
        acc_s = steer(count, sep, vsum, offsum, vel_s, *self._rule_args)

        def by_bird(sorted_values):
            out = np.empty_like(sorted_values)
            out[order] = sorted_values
            return out

        local = (usum + unit_s) / (count + 1)[:, None]
        inside = None
        if scene.containment is not None:
            inside = forces.ellipse_outside(pos, self.centre, self.semi_axes)[0] == 0.0
        snap = Snapshot(self.step_index, pos, vel, by_bird(count), by_bird(cand), by_bird(nn),
                        by_bird(local), inside, self.hawk_position())
        return snap, by_bird(acc_s)

    def hawk_position(self) -> tuple[float, float] | None:
        if self.scene.hawk is None:
            return None
        return forces.hawk_position(self.time_s, self.scene.hawk, self.centre)

    def advance(self) -> Snapshot:
        """Advance one step; returns the Snapshot of the state that was read."""
        snap, acc = self.measure()
        acc = acc + self._extra_forces(snap)
        scene = self.scene
        self.positions, self.velocities = integrate(
            self.positions, self.velocities, acc, self._turn(), self.dt,
            scene.flock.min_speed, scene.flock.max_speed, self._wrap,
            scene.world.width, scene.world.height)
        self.step_index += 1
        return snap

    def _turn(self) -> np.ndarray:
        """Radians to turn each bird's new velocity this step (the steering field)."""
        f = self.scene.field
        if f is None:
            return np.zeros(len(self.positions))
        phi = forces.field(self.positions, self.time_s,
                           (f.wavelength_x, f.wavelength_y, f.wavelength_diagonal),
                           (f.drift_x, f.drift_y, f.drift_diagonal), self._phases)
        return f.turn_rate * self.dt * phi

    def _extra_forces(self, snap: Snapshot) -> np.ndarray:
        scene = self.scene
        pos = snap.positions
        acc = np.zeros_like(pos)
        world = scene.world
        if world.boundary == "walls":
            acc += forces.walls(pos, world.width, world.height, world.wall_margin,
                                world.wall_strength)
        att = scene.attractor
        if att is not None:
            default = (0.5 * world.width, 0.5 * world.height)
            point = forces.attractor_point(self.time_s, att.position or default, att.path)
            acc += forces.attractor(pos, point, att.strength, att.radius)
        if scene.containment is not None:
            acc += forces.containment(pos, self.centre, self.semi_axes,
                                      scene.containment.strength)
        if snap.hawk is not None:
            acc += forces.hawk(pos, snap.hawk, scene.hawk.radius, scene.hawk.strength)
        return acc


@dataclass(frozen=True)
class Frame:
    """The state a frame shows. positions, velocities: (n, 2), interpolated at `time`;
    snapshot: the simulated state at or just before `time` (its neighbour counts weight
    the drawing and its measures feed the diagnostics)."""

    index: int
    time: Fraction
    positions: np.ndarray
    velocities: np.ndarray
    snapshot: Snapshot


def step_fraction(dt: float) -> Fraction:
    """dt as an exact ratio (1/60 s stays 1/60), so frame times never drift."""
    return Fraction(dt).limit_denominator(1_000_000)


def frames(sim: Simulation, fps: Fraction, count: int, first: int = 0) -> Iterator[Frame]:
    """Yield frames first .. first+count−1 at `fps`, advancing `sim` as needed."""
    dt = step_fraction(sim.dt)
    scene = sim.scene
    wrap = scene.world.boundary == "wrap"
    extent = np.array([scene.world.width, scene.world.height])
    before: Snapshot | None = None
    after = sim.advance()
    for index in range(first, first + count):
        time = Fraction(index) / fps
        where = time / dt
        s0 = math.floor(where)
        while after.step <= s0:
            before, after = after, sim.advance()
        if before is None or before.step != s0:
            raise RuntimeError("frames must be requested in increasing order")
        frac = float(where - s0)
        if frac == 0.0:
            pos, vel = before.positions, before.velocities
        else:
            delta = after.positions - before.positions
            if wrap:
                delta -= extent * np.round(delta / extent)
            pos = before.positions + frac * delta
            if wrap:
                pos = np.mod(pos, extent)
            vel = before.velocities + frac * (after.velocities - before.velocities)
        yield Frame(index, time, pos, vel, before)
