"""The fixed-step simulator and the frames sampled from it.

`Simulation` validates and prepares arrays and calls the numba step (step.py, one call
per step); `frames` turns its steps into frame states at the output rate (SPEC §2: the
step never changes to suit the fps; a frame between two steps interpolates, the short way
across a wrapping edge).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..scene import Scene
from . import forces, step
from .grid import GridShape, counting_sort, grid_shape
from .kernels import FALLOFF_POWER, neighbourhood, sort_birds, split_sums, steer
from .state import STREAM_FIELD, seed_flock, streams


@dataclass(frozen=True)
class Snapshot:
    """One simulated state and what its neighbourhoods measured, indexed by bird identity.

    step: steps after settling (0 is frame 0's state). positions, velocities: (n, 2).
    neighbours, candidates: (n,) int64; nearest: (n,) nearest-neighbour distance (inf
    when none within the perception radius). inside: (n,) bool, inside the containment ellipse
    (None without containment). hawk: the hawk's (x, y) while it is out, else None.
    followed: the flock's centroid smoothed by the camera's critically damped follow
    (None unless the camera follows it).
    """

    step: int
    positions: np.ndarray
    velocities: np.ndarray
    neighbours: np.ndarray
    candidates: np.ndarray
    nearest: np.ndarray
    inside: np.ndarray | None = None
    hawk: tuple[float, float] | None = None
    followed: tuple[float, float] | None = None


def unit_headings(vel: np.ndarray) -> np.ndarray:
    """v/|v| per row; zero for birds with zero speed."""
    speed = np.sqrt(vel[:, 0] * vel[:, 0] + vel[:, 1] * vel[:, 1])
    out = np.zeros_like(vel)
    moving = speed > 0
    out[moving] = vel[moving] / speed[moving, None]
    return out


def neighbour_sums(pos: np.ndarray, vel: np.ndarray, shape: GridShape, wrap: bool,
                   width: float, height: float, radius: float, sep_radius: float,
                   sep_power: int) -> dict[str, np.ndarray]:
    """The neighbourhood kernel's sums for the birds pos, vel (n, 2) on the grid `shape`,
    by bird identity, by name (see kernels.split_sums)."""
    order, cell_start, _ = counting_sort(pos, shape.x0, shape.y0, shape.cw, shape.ch,
                                         shape.nx, shape.ny)
    work = step.workspace(len(pos))
    sort_birds(pos, vel, order, work.birds)
    neighbourhood(work.birds, cell_start, shape.nx, shape.ny, wrap, width, height, radius,
                  sep_radius, sep_power, work.sums)
    work.mine[order] = work.sums
    return split_sums(work.mine)


def local_headings(snap: Snapshot, scene: Scene) -> np.ndarray:
    """(n, 2) mean unit heading over each bird's neighbours and itself, birds at rest
    skipped, by bird (its length is SPEC §7's local polarisation); zero where all of them
    are at rest. A neighbourhood pass of its own, over the unit headings in place of the
    velocities: only the diagnostics read it, so the step does not carry two more sums
    through its candidate loop."""
    world, rules = scene.world, scene.rules
    wrap = world.boundary == "wrap"
    pos = snap.positions
    unit = unit_headings(snap.velocities)
    shape = grid_shape(pos, rules.perception_radius, world.width, world.height, wrap)

    def summed(values):
        return neighbour_sums(pos, values, shape, wrap, world.width, world.height,
                              rules.perception_radius, rules.separation_radius,
                              FALLOFF_POWER[rules.falloff])

    sums = summed(unit)
    moving = np.any(unit != 0.0, axis=1)
    if moving.all():
        members = sums["count"] + 1.0
    else:
        # Birds at rest are rare (only with min_speed 0): the moving members are counted
        # by a second pass, over 1 for a moving bird in place of its heading's x.
        flags = np.column_stack([moving, np.zeros(len(pos))]).astype(np.float64)
        members = summed(flags)["vsum"][:, 0] + moving
    return (sums["vsum"] + unit) / np.maximum(members, 1.0)[:, None]


class Simulation:
    """The flock of one scene, advanced one fixed step at a time.

    After construction the settle steps have run: `step_index` is 0 and `positions` is the
    state frame 0 shows. `positions` and `velocities` ((n, 2) float64, by bird identity)
    are the whole state: assigning them sets the state the next step reads.
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
        world, rules, flock = scene.world, scene.rules, scene.flock
        max_force = rules.max_force if rules.max_force is not None else math.inf
        self._rule_args = (rules.separation_weight, rules.alignment_weight,
                           rules.cohesion_weight, rules.alignment == "difference", max_force)
        self.centre = (0.5 * world.width, 0.5 * world.height)
        fraction = scene.containment.semi_axes if scene.containment else 0.385
        self.semi_axes = (fraction * world.width, fraction * world.height)
        self._phases = forces.field_phases(streams(scene.scene.seed)[STREAM_FIELD])
        self._world = step.World(self._wrap, world.width, world.height)
        self._rules = step.Rules(rules.perception_radius, rules.separation_radius,
                                 FALLOFF_POWER[rules.falloff], *self._rule_args)
        self._motion = step.Motion(self.dt, flock.min_speed, flock.max_speed)
        self._extras = self._constant_extras()
        self._work = step.workspace(len(self.positions))
        cam = scene.camera
        # The follow spring runs at the simulation's step, not the frame rate, so every
        # fps and every still sees the same camera path.
        self._follow = None
        if cam is not None and cam.follow == "centroid":
            self._follow = (self.positions.mean(axis=0), np.zeros(2), 1.0 / cam.follow_time)
        while self.step_index < 0:
            self.advance()

    def _follow_step(self, pos: np.ndarray) -> tuple[float, float] | None:
        """The followed point now; then one semi-implicit step of a critically damped
        spring toward the centroid: x'' = ω²(c − x) − 2ω x'."""
        if self._follow is None:
            return None
        x, v, omega = self._follow
        centroid = pos.mean(axis=0)
        v = v + (omega * omega * (centroid - x) - 2.0 * omega * v) * self.dt
        self._follow = (x + v * self.dt, v, omega)
        return float(x[0]), float(x[1])

    @property
    def time_s(self) -> float:
        return self.step_index * self.dt

    def advance(self) -> Snapshot:
        """Advance one step; returns the Snapshot of the state that was read."""
        pos = np.ascontiguousarray(self.positions, dtype=np.float64)
        vel = np.ascontiguousarray(self.velocities, dtype=np.float64)
        shape = self._grid(pos)
        hawk = self.hawk_position()
        new_pos, new_vel, neighbours, candidates, nearest, inside = step.advance_flock(
            pos, vel, shape.x0, shape.y0, shape.cw, shape.ch, shape.nx, shape.ny,
            self._world, self._rules, self._motion, self._step_extras(hawk), self._work_for(pos))
        snap = Snapshot(self.step_index, pos, vel, neighbours, candidates, nearest,
                        inside if self.scene.containment is not None else None, hawk,
                        self._follow_step(pos))
        self.positions, self.velocities = new_pos, new_vel
        self.step_index += 1
        return snap

    def measure(self) -> tuple[Snapshot, np.ndarray]:
        """Neighbourhood of the current state without advancing: its Snapshot and the
        flocking acceleration (n, 2), by bird. The separate kernels that `advance` fuses,
        composed in numpy: for inspection, and for tests to hold the fused step to."""
        scene = self.scene
        pos = np.ascontiguousarray(self.positions, dtype=np.float64)
        vel = np.ascontiguousarray(self.velocities, dtype=np.float64)
        rules = self._rules
        sums = neighbour_sums(pos, vel, self._grid(pos), self._wrap, scene.world.width,
                              scene.world.height, rules.radius, rules.sep_radius,
                              rules.sep_power)
        count = sums["count"]
        acc = steer(count, sums["sep"], sums["vsum"], sums["offsum"], vel, *self._rule_args)
        inside = None
        if scene.containment is not None:
            inside = forces.ellipse_outside(pos, self.centre, self.semi_axes)[0] == 0.0
        snap = Snapshot(self.step_index, pos, vel, count, sums["cand"], sums["nn"], inside,
                        self.hawk_position())
        return snap, acc

    def hawk_position(self) -> tuple[float, float] | None:
        if self.scene.hawk is None:
            return None
        return forces.hawk_position(self.time_s, self.scene.hawk, self.centre)

    def attractor_point(self) -> tuple[float, float]:
        att, world = self.scene.attractor, self.scene.world
        default = (0.5 * world.width, 0.5 * world.height)
        return forces.attractor_point(self.time_s, att.position or default, att.path)

    def _turn(self) -> np.ndarray:
        """Radians to turn each bird's new velocity this step (the steering field)."""
        f = self.scene.field
        if f is None:
            return np.zeros(len(self.positions))
        phi = forces.field(self.positions, self.time_s,
                           (f.wavelength_x, f.wavelength_y, f.wavelength_diagonal),
                           (f.drift_x, f.drift_y, f.drift_diagonal), self._phases)
        return f.turn_rate * self.dt * phi

    def _work_for(self, pos: np.ndarray) -> step.Workspace:
        """The scratch arrays, renewed when the flock's size changed (assigned positions)."""
        if len(self._work.birds) != len(pos):
            self._work = step.workspace(len(pos))
        return self._work

    def _grid(self, pos: np.ndarray):
        world = self.scene.world
        return grid_shape(pos, self.scene.rules.perception_radius, world.width, world.height,
                          self._wrap)

    def _constant_extras(self) -> step.Extras:
        """The optional forces' settings that do not change from step to step.

        The forces act on top of the flocking rules in this order, each added onto 0.0:
        walls (boundary "walls"), attractor, containment, hawk (while it is out).
        """
        scene = self.scene
        world, att, cont, hawk, f = (scene.world, scene.attractor, scene.containment,
                                     scene.hawk, scene.field)
        return step.Extras(
            walls=world.boundary == "walls", wall_margin=world.wall_margin,
            wall_strength=world.wall_strength,
            attractor=att is not None, attractor_x=0.0, attractor_y=0.0,
            attractor_strength=att.strength if att else 0.0,
            attractor_radius=att.radius if att else 0.0,
            containment=cont is not None, centre_x=self.centre[0], centre_y=self.centre[1],
            semi_x=self.semi_axes[0], semi_y=self.semi_axes[1],
            containment_strength=cont.strength if cont else 0.0,
            hawk=False, hawk_x=0.0, hawk_y=0.0,
            hawk_radius=hawk.radius if hawk else 0.0,
            hawk_strength=hawk.strength if hawk else 0.0,
            field=f is not None, time_s=0.0,
            wavelength_x=f.wavelength_x if f else 1.0,
            wavelength_y=f.wavelength_y if f else 1.0,
            wavelength_diagonal=f.wavelength_diagonal if f else 1.0,
            drift_x=f.drift_x if f else 0.0, drift_y=f.drift_y if f else 0.0,
            drift_diagonal=f.drift_diagonal if f else 0.0,
            phase_x=float(self._phases[0]), phase_y=float(self._phases[1]),
            phase_diagonal=float(self._phases[2]),
            # As forces.field's callers compute it: (turn_rate·dt)·φ.
            field_turn=f.turn_rate * self.dt if f else 0.0)

    def _step_extras(self, hawk) -> step.Extras:
        """This step's forces: where the hawk and the attractor are, and the field's time."""
        changes = dict(time_s=self.time_s)
        if hawk is not None:
            changes.update(hawk=True, hawk_x=float(hawk[0]), hawk_y=float(hawk[1]))
        if self.scene.attractor is not None:
            x, y = self.attractor_point()
            changes.update(attractor_x=float(x), attractor_y=float(y))
        return self._extras._replace(**changes)


@dataclass(frozen=True)
class Frame:
    """The state a frame shows. positions, velocities: (n, 2), interpolated at `time`;
    snapshot: the simulated state at or just before `time` (its neighbour counts weight
    the drawing and its measures feed the diagnostics). exposure: with motion blur, the
    (positions, velocities) at each sub-frame time the shutter is open; else empty."""

    index: int
    time: Fraction
    positions: np.ndarray
    velocities: np.ndarray
    snapshot: Snapshot
    exposure: tuple[tuple[np.ndarray, np.ndarray], ...] = ()
    followed: tuple[float, float] | None = None


def step_fraction(dt: float) -> Fraction:
    """dt as an exact ratio (1/60 s stays 1/60), so frame times never drift."""
    return Fraction(dt).limit_denominator(1_000_000)


def frames(sim: Simulation, fps: Fraction, count: int, first: int = 0, *,
           subframes: int = 1, shutter: Fraction = Fraction(0)) -> Iterator[Frame]:
    """Yield frames first .. first+count−1 at `fps`, advancing `sim` as needed.

    subframes > 1: each frame also carries the states at `subframes` times spread evenly
    over the shutter's opening, from the frame's time to time + shutter/fps (`shutter` as a
    fraction of the frame interval: 180° is 1/2), for motion blur.
    """
    dt = step_fraction(sim.dt)
    scene = sim.scene
    wrap = scene.world.boundary == "wrap"
    extent = np.array([scene.world.width, scene.world.height])
    before: Snapshot | None = None
    after = sim.advance()

    def at(time: Fraction):
        nonlocal before, after
        where = time / dt
        s0 = math.floor(where)
        while after.step <= s0:
            before, after = after, sim.advance()
        if before is None or before.step != s0:
            raise RuntimeError("frames must be requested in increasing order")
        frac = float(where - s0)
        if frac == 0.0:
            return before.positions, before.velocities, before, before.followed
        delta = after.positions - before.positions
        if wrap:
            delta -= extent * np.round(delta / extent)
        pos = before.positions + frac * delta
        if wrap:
            pos = np.mod(pos, extent)
        vel = before.velocities + frac * (after.velocities - before.velocities)
        followed = None
        if before.followed is not None:
            followed = tuple(a + frac * (b - a) for a, b in zip(before.followed,
                                                                 after.followed))
        return pos, vel, before, followed

    for index in range(first, first + count):
        time = Fraction(index) / fps
        pos, vel, snap, followed = at(time)
        exposure = ()
        if subframes > 1:
            # Copies: the simulator may reuse its arrays as it steps through the shutter.
            exposure = tuple((p.copy(), v.copy()) for p, v, _, _ in (
                at(time + Fraction(2 * k + 1, 2 * subframes) * shutter / fps)
                for k in range(subframes)))
        yield Frame(index, time, pos, vel, snap, exposure, followed)
