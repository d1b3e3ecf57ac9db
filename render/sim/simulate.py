"""The fixed-step simulator and the frames sampled from it.

`Simulation` validates and prepares arrays and calls the numba step (step.py, one call
per step); `frames` turns its steps into frame states at the output rate (docs/model.md: the
step never changes to suit the fps; a frame between two steps interpolates, the short way
across a wrapping edge).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..progress import progress_bar
from ..scene import Scene
from . import forces, motion, step
from .forces import containment, field
from .forces.flocking import steer
from .grid import GridShape, grid_shape
from .listed import listed_neighbours
from .neighbours import neighbour_sums
from .simulate3d import Simulation3D
from .snapshot import Snapshot, follow_start, follow_step
from .state import seed_flock


class Simulation:
    """The flock of one scene, advanced one fixed step at a time.

    After construction the settle steps have run: `step_index` is 0 and `positions` is the
    state frame 0 shows. `positions` and `velocities` ((n, d) float64, by bird identity)
    are the whole state: assigning them sets the state the next step reads. `forces`:
    every force's parameters, built once from the scene (see `forces_now` for a step's).
    """

    def __new__(cls, scene: Scene | None = None, **options):
        # (copy and pickle call this without a scene: they rebuild the object's dict.)
        if cls is Simulation and scene is not None and scene.dimensions == 3:
            return Simulation3D(scene, **options)  # not a Simulation: __init__ is skipped
        return super().__new__(cls)

    def __init__(self, scene: Scene, **options):
        """options: what only the 3D simulator takes (progress, cache)."""
        self.scene = scene
        init = seed_flock(scene)
        self.accent = init.accent
        self.positions = init.positions
        self.velocities = init.velocities
        self.dt = scene.scene.dt
        self.step_index = -scene.scene.settle_steps
        self.world = motion.world(scene)
        self.motion = motion.motion(scene)
        self.forces = forces.build(scene)
        self._work = step.workspace(len(self.positions))
        self._listed = listed_neighbours(scene)
        cam = scene.camera
        # The follow spring runs at the simulation's step, not the frame rate, so every
        # fps and every still sees the same camera path.
        self._follow = follow_start(scene, self.positions)
        while self.step_index < 0:
            self.advance()

    def _follow_step(self, pos: np.ndarray) -> tuple[float, ...] | None:
        """The followed point now (see snapshot.follow_step)."""
        self._follow, point = follow_step(self._follow, pos, self.dt)
        return point

    @property
    def time_s(self) -> float:
        return self.step_index * self.dt

    def forces_now(self) -> forces.Forces:
        """The forces of the current step: where the hawk and the attractor are, the
        field's time."""
        return forces.at_time(self.forces, self.scene, self.time_s)

    def advance(self) -> Snapshot:
        """Advance one step; returns the Snapshot of the state that was read."""
        pos = np.ascontiguousarray(self.positions, dtype=np.float64)
        vel = np.ascontiguousarray(self.velocities, dtype=np.float64)
        now = self.forces_now()
        if self._listed is None:
            new_pos, new_vel, neighbours, candidates, nearest, inside = step.advance_flock(
                pos, vel, self.grid(pos), self.world, self.motion, now, self._work_for(pos))
        else:
            new_pos, new_vel, neighbours, candidates, nearest, inside = step.advance_listed(
                pos, vel, self._listed.sums(pos, vel, now.flocking), self.world,
                self.motion, now)
        snap = Snapshot(self.step_index, pos, vel, neighbours, candidates, nearest,
                        inside if now.containment.active else None, _hawk(now.hawk),
                        self._follow_step(pos))
        self.positions, self.velocities = new_pos, new_vel
        self.step_index += 1
        return snap

    def measure(self) -> tuple[Snapshot, np.ndarray]:
        """Neighbourhood of the current state without advancing: its Snapshot and the
        flocking acceleration (n, 2), by bird. The separate kernels that `advance` fuses,
        composed in numpy: for inspection, and for tests to hold the fused step to."""
        pos = np.ascontiguousarray(self.positions, dtype=np.float64)
        vel = np.ascontiguousarray(self.velocities, dtype=np.float64)
        now = self.forces_now()
        sums = neighbour_sums(pos, vel, self.grid(pos), self.world, now.flocking)
        count = sums["count"]
        acc = steer(count, sums["sep"], sums["vsum"], sums["offsum"], vel, now.flocking)
        inside = containment.inside(pos, now.containment) if now.containment.active else None
        snap = Snapshot(self.step_index, pos, vel, count, sums["cand"], sums["nn"], inside,
                        _hawk(now.hawk))
        return snap, acc

    def hawk_position(self) -> tuple[float, float] | None:
        """Where the hawk is this step, or None while it is away."""
        return _hawk(self.forces_now().hawk)

    def turns(self) -> np.ndarray:
        """(n,) radians the steering field turns each bird's new velocity this step."""
        pos = np.ascontiguousarray(self.positions, dtype=np.float64)
        return field.turns(pos, self.forces_now().field)

    def _work_for(self, pos: np.ndarray) -> step.Workspace:
        """The scratch arrays, renewed when the flock's size changed (assigned positions)."""
        if len(self._work.birds) != len(pos):
            self._work = step.workspace(len(pos))
        return self._work

    def grid(self, pos: np.ndarray) -> GridShape:
        """The grid of cells the neighbour search of the birds at `pos` uses."""
        world = self.world
        return grid_shape(pos, self.forces.flocking.radius, world.width, world.height,
                          world.wrap)


def _hawk(h) -> tuple[float, float] | None:
    return (h.x, h.y) if h.out else None


@dataclass(frozen=True)
class Frame:
    """The state a frame shows. positions, velocities: (n, d), interpolated at `time`;
    snapshot: the simulated state at or just before `time` (its neighbour counts weight
    the drawing and its measures feed the diagnostics). exposure: with motion blur, the
    (positions, velocities) at each sub-frame time the shutter is open; else empty.
    followed, bank ((n,) radians; None in 2D) and hawk (d floats; None while it is not
    out): interpolated at `time` like the positions (the hawk from the step before alone
    when it is out at only one of the two); hawk_velocity (d floats, world units/s): its
    flight over that step, None unless it is out at both; hawk_bank: its bank (radians),
    interpolated like its position; beats: each row's place in its wing beat at time 0
    (cycles), None for bird i's own (a loop's morph carries a row's toward its partner's,
    see `draw3d.streaks.wing_phases`); exposure_views: each exposure's time and the
    followed point then (None unless the camera follows), for the camera to move over the
    shutter as the birds do."""

    index: int
    time: Fraction
    positions: np.ndarray
    velocities: np.ndarray
    snapshot: Snapshot
    exposure: tuple[tuple[np.ndarray, np.ndarray], ...] = ()
    followed: tuple[float, ...] | None = None
    bank: np.ndarray | None = None
    hawk: tuple[float, ...] | None = None
    hawk_velocity: tuple[float, ...] | None = None
    hawk_bank: float = 0.0
    beats: np.ndarray | None = None
    exposure_views: tuple[tuple[Fraction, tuple[float, ...] | None], ...] = ()


# Bird i begins its wing beat at time 0 this far into it (cycles): i times the golden
# ratio's fraction spreads any run of birds evenly over the beat, so neighbours never beat
# in step, and a bird beats alike in every render of the scene.
GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def own_beats(count: int) -> np.ndarray:
    """Where each of `count` birds is in its wing beat at time 0, cycles: i·GOLDEN."""
    return np.arange(count) * GOLDEN


def step_fraction(dt: float) -> Fraction:
    """dt as an exact ratio (1/60 s stays 1/60), so frame times never drift."""
    return Fraction(dt).limit_denominator(1_000_000)


def frames(sim: Simulation, fps: Fraction, count: int, first: int = 0, *,
           subframes: int = 1, shutter: Fraction = Fraction(0),
           progress: bool = False) -> Iterator[Frame]:
    """Yield frames first .. first+count−1 at `fps`, advancing `sim` as needed.

    subframes > 1: each frame also carries the states at `subframes` times spread evenly
    over the shutter's opening, from the frame's time to time + shutter/fps (`shutter` as a
    fraction of the frame interval: 180° is 1/2), for motion blur. progress: a bar on
    stderr while the flock flies to the first frame (a still late in a clip, a farm's
    range of frames), which can take minutes before anything else shows.
    """
    dt = step_fraction(sim.dt)
    scene = sim.scene
    wrap = scene.world.boundary == "wrap"
    extent = np.array(sim.world.extent)
    before: Snapshot | None = None
    after = sim.advance()

    def reach(s0: int, bar=None) -> None:
        nonlocal before, after
        while after.step <= s0:
            before, after = after, sim.advance()
            if bar is not None:
                bar.update()

    def at(time: Fraction):
        where = time / dt
        s0 = math.floor(where)
        reach(s0)
        if before is None or before.step != s0:
            raise RuntimeError("frames must be requested in increasing order")
        frac = float(where - s0)
        flown = None if before.hawk is None or after.hawk is None else \
            tuple((b - a) / float(dt) for a, b in zip(before.hawk, after.hawk))
        if frac == 0.0:
            return before.positions, before.velocities, before, before.followed, \
                before.bank, before.hawk, flown, before.hawk_bank
        delta = after.positions - before.positions
        if wrap:
            delta -= extent * np.round(delta / extent)
        pos = before.positions + frac * delta
        if wrap:
            pos = np.mod(pos, extent)
        vel = before.velocities + frac * (after.velocities - before.velocities)
        bank = None if before.bank is None else before.bank + frac * (after.bank -
                                                                     before.bank)
        return pos, vel, before, between(before.followed, after.followed, frac), bank, \
            between(before.hawk, after.hawk, frac), flown, \
            before.hawk_bank + frac * (after.hawk_bank - before.hawk_bank)

    if progress and count > 0 and first > 0:
        s0 = math.floor(Fraction(first) / fps / dt)
        with progress_bar(total=s0 + 1 - after.step, unit="step", leave=False,
                          desc=f"flying to {float(Fraction(first) / fps):g} s") as bar:
            reach(s0, bar)
    for index in range(first, first + count):
        time = Fraction(index) / fps
        pos, vel, snap, followed, bank, hawk, hawk_velocity, hawk_bank = at(time)
        exposure, views = (), ()
        if subframes > 1:
            times = [time + Fraction(2 * k + 1, 2 * subframes) * shutter / fps
                     for k in range(subframes)]
            # Copies: the simulator may reuse its arrays as it steps through the shutter.
            sampled = [(p.copy(), v.copy(), seen) for p, v, _, seen, *_ in map(at, times)]
            exposure = tuple((p, v) for p, v, _ in sampled)
            views = tuple((t, seen) for t, (_, _, seen) in zip(times, sampled))
        yield Frame(index, time, pos, vel, snap, exposure, followed, bank, hawk, hawk_velocity,
                    hawk_bank, exposure_views=views)


def between(a, b, frac: float):
    """The point (a tuple) a share frac of the way from a to b; a when either is None."""
    if a is None or b is None:
        return a
    return tuple(x + frac * (y - x) for x, y in zip(a, b))
