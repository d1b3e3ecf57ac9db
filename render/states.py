"""The sim→draw boundary: what drawing a frame needs (`FrameState`), detached from the
simulator, and the stream of them a render draws (`simulated`).

A state is plain arrays that can wait in a queue or travel to another machine, whatever
the world's dimension: positions and velocities are (n, d) with d = 2 or 3. A 3D scene's
state carries its camera's pose and is drawn through it (render.draw3d); any other is
drawn top-down orthographic, from the (x, y) columns (`FrameState.draw`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

import numpy as np

from .draw.camera import View, view_at
from .draw.streaks import draw_exposure, draw_frame
from .draw.surface import Canvas
from .draw3d.camera import pose_at
from .draw3d.frame import draw3d, hawk_drawn
from .draw3d.sky import behind_treeline, sky_for
from .draw3d.streaks import look_of, loop_wingbeat, wing_phases
from .draw3d.types import Pose
from .loop import crossfade_frames
from .scene import Scene
from . import sim as sim_package
from .sim import diagnostics
from .sim.loop import kept_frames, looped, search
from .sim.simulate import Simulation, frames


@dataclass(frozen=True)
class FrameState:
    """What drawing (or a trajectory file) needs of frame `index`. positions, velocities:
    (n, d) float64, world units, row i always bird i; neighbours: (n,); accent: the accent
    birds' mask (n,); exposure: the sub-frame (positions, velocities) pairs of motion blur,
    else (); view: the camera's (None: the whole world); time: the frame's time, s (index /
    fps); hawk: its position (d floats) at the frame's time, None while it is not out,
    and hawk_velocity its velocity (see `sim.simulate.Frame`);
    bank: (n,) radians, None in level flight (the 2D simulator has no bank);
    pose: a 3D scene's camera at the scene's output size (None: drawn from above);
    attack: whether a hunting hawk's attack is on; landed: (n,) bool, None without a
    landing; followed: the point a following camera follows (d floats), else None;
    flap: (n,) where each bird is in its wing beat when the shutter opens (cycles, NaN
    landed; None: wings level, as in 2D; see `draw3d.streaks.wing_phases`); hawk_bank:
    the hunting hawk's bank, radians; poses: a 3D scene's camera at each exposure of
    motion blur (a camera that moves while the shutter is open blurs what it sees),
    else ()."""

    index: int
    positions: np.ndarray
    velocities: np.ndarray
    neighbours: np.ndarray
    accent: np.ndarray
    exposure: tuple = ()
    view: View | None = None
    time: Fraction = Fraction(0)
    hawk: tuple[float, ...] | None = None
    bank: np.ndarray | None = None
    pose: Pose | None = None
    attack: bool = False
    landed: np.ndarray | None = None
    followed: tuple[float, ...] | None = None
    hawk_velocity: tuple[float, ...] | None = None
    flap: np.ndarray | None = None
    hawk_bank: float = 0.0
    poses: tuple[Pose, ...] = ()

    @classmethod
    def of(cls, frame, accent: np.ndarray, scene: Scene) -> FrameState:
        """The state of a simulated `frame` (copies: the simulator reuses its arrays for the
        next step) with the scene's camera at its time."""
        bank = frame.bank
        landed = getattr(frame.snapshot, "landed", None)
        time = float(frame.time)
        three = scene.dimensions == 3
        flap, poses = None, ()
        if three:
            poses = tuple(pose_at(scene, float(t), seen, *scene.output.size)
                          for t, seen in frame.exposure_views)
            look = look_of(scene)
            if scene.output.loop:
                seconds = scene.frame_count / float(scene.output.fps)
                look = look._replace(wingbeat=loop_wingbeat(look.wingbeat, seconds))
            flap = wing_phases(look, time, landed, len(frame.positions), frame.beats)
        return cls(frame.index, frame.positions.copy(), frame.velocities.copy(),
                   frame.snapshot.neighbours.copy(), accent, frame.exposure,
                   None if three else view_at(scene, time, frame.followed), frame.time,
                   frame.hawk, None if bank is None else bank.copy(),
                   pose_at(scene, time, frame.followed, *scene.output.size) if three else None,
                   getattr(frame.snapshot, "attack", False),
                   None if landed is None else landed.copy(), frame.followed,
                   frame.hawk_velocity,
                   flap, frame.hawk_bank, poses)

    def draw(self, canvas: Canvas, scene: Scene) -> np.ndarray:
        """The frame drawn onto `canvas`: its (h, w, 4) uint8 BGRA pixels."""
        state = self.visible(scene)
        if state.pose is not None:
            exposure = state.exposure or ((state.positions, state.velocities),)
            return draw3d(canvas, scene, state.pose, exposure, state.bank, state.accent,
                          hawk_drawn(scene, state), state.flap, state.poses)
        if state.exposure:
            exposure = tuple((top_down(p), top_down(v)) for p, v in state.exposure)
            return draw_exposure(canvas, scene, exposure, state.neighbours, state.accent,
                                 view=state.view)
        return draw_frame(canvas, scene, *state.drawn(), view=state.view)

    def visible(self, scene: Scene | None) -> FrameState:
        """The state of the birds drawn: this one, or one without the birds out of sight
        (rows still in bird order): those landed, with `[roost] landed = "hidden"`, and
        in 3D those behind the treeline (`draw3d.sky.behind_treeline`: a landing bird
        goes into the reeds before it is down), unless the frame leaves the treeline out
        (`--transparent`: a plate to composite over another view)."""
        r = scene.roost if scene is not None else None
        keep = np.ones(len(self.positions), bool)
        if self.landed is not None and r is not None and r.landed == "hidden":
            keep &= ~self.landed
        if scene is not None and self.pose is not None and not scene.output.transparent:
            keep &= ~behind_treeline(sky_for(scene, self.pose), self.positions)
        if keep.all():
            return self
        return replace(self, positions=self.positions[keep],
                       velocities=self.velocities[keep], neighbours=self.neighbours[keep],
                       accent=self.accent[keep],
                       exposure=tuple((p[keep], v[keep]) for p, v in self.exposure),
                       bank=None if self.bank is None else self.bank[keep],
                       landed=None if self.landed is None else self.landed[keep],
                       flap=None if self.flap is None else self.flap[keep])

    def drawn(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(positions, velocities, neighbours, accent) as the drawing takes them: the
        positions and velocities seen from above, (n, 2)."""
        return (top_down(self.positions), top_down(self.velocities), self.neighbours,
                self.accent)


def top_down(vectors: np.ndarray) -> np.ndarray:
    """(n, d) vectors seen from above: their (x, y) columns, (n, 2) C-contiguous (the
    same array when d = 2)."""
    return vectors if vectors.shape[1] == 2 else np.ascontiguousarray(vectors[:, :2])


def simulated(scene: Scene, first: int, count: int, rows: list[dict] | None = None, *,
              quiet: bool = True) -> Iterator[FrameState]:
    """The states of frames first .. first+count−1, simulated from the start (a loop's:
    frames t₀ … of the simulation, t₀ = `loop.loop_start`, its head morphing from its
    tail, re-indexed from 0; those its start's search flew through, where it kept them);
    each frame's diagnostics are appended to `rows` when given. The flock is seeded and
    settled by this call, not by the first `next`, so a first run compiles the kernels
    here (announced unless `quiet`, see `simulation`) rather than inside whatever times
    the frames."""
    crossfade = crossfade_frames(scene, first)
    start, kept = 0, None
    if crossfade:  # the search flies through the clip: its frames serve, if it kept them
        announce_compiling(quiet, scene.dimensions)  # the search's flock compiles them
        start = search(scene, count, crossfade, progress=not quiet, keep=True).start
        kept = kept_frames(scene, count, crossfade)
    if kept is not None:  # no flock of its own to seed and settle
        stream, accent = kept
    else:
        sim = simulation(scene, quiet=quiet)
        stream = frames(sim, scene.output.fps, count, first=first + start, **exposure(scene),
                        progress=not quiet)
        accent = np.asarray(sim.accent, bool)
    if crossfade:
        stream = looped(scene, stream, start, count, crossfade, accent)
        if scene.dimensions == 3:
            # A loop's window holds no attack, so its hunting hawk only pursues, startling
            # nobody, and its flight cannot close at the wrap: the loop leaves it out.
            stream = (replace(frame, hawk=None, hawk_velocity=None) for frame in stream)
    return detached(scene, stream, accent, rows)


COMPILING = "compiling the simulation kernels: first run only"


def simulation(scene: Scene, *, quiet: bool = True) -> Simulation:
    """The scene's flock, seeded and settled. On a cold kernel cache (`kernels_cached`)
    settling compiles the kernels first, for tens of seconds: unless `quiet`, one line on
    stderr says so."""
    announce_compiling(quiet, scene.dimensions)
    # A 3D flock settles for tens of seconds of flight: a bar meanwhile, unless quiet.
    options = {"progress": not quiet} if scene.dimensions == 3 else {}
    return Simulation(scene, **options)


def announce_compiling(quiet: bool, dimensions: int) -> None:
    """Unless `quiet`, one line on stderr when the kernels of a scene of `dimensions` are
    not compiled yet."""
    if not quiet and not kernels_cached(dimensions):
        print(f"boids-render: {COMPILING}", file=sys.stderr, flush=True)


# The step kernel of each dimension, as numba names its cache index: the one every scene
# of that dimension runs, compiled with (and so cached with) the kernels it calls.
_STEP_INDEX = {2: "step.advance_flock-*.nbi", 3: "step3d.*.nbi"}


def kernels_cached(dimensions: int = 2) -> bool:
    """Whether numba's cache holds the step kernel of a scene of `dimensions` where this
    process looks: under NUMBA_CACHE_DIR (the console script points it at a folder named
    after the package's sources, see `sim.cache`, so a missing one means a first run or an
    edited package), else beside the sources, in render/sim's __pycache__ folders. 2D
    kernels do not make a 3D scene's cached, nor the other way round. This only decides a
    note."""
    folder = os.environ.get("NUMBA_CACHE_DIR")
    root = Path(folder) if folder else Path(sim_package.__file__).parent
    return any(root.rglob(_STEP_INDEX[dimensions]))


def detached(scene: Scene, stream: Iterable, accent: np.ndarray,
             rows: list[dict] | None = None) -> Iterator[FrameState]:
    """The state of each frame of `stream` (see `frames`), checked finite; its
    diagnostics appended to `rows` when given."""
    for frame in stream:
        require_finite(frame)
        if rows is not None:
            rows.append({"frame": frame.index, "time_s": float(frame.time),
                         **diagnostics.measure(frame.snapshot, scene, frame.time)})
        yield FrameState.of(frame, accent, scene)


def exposure(scene: Scene) -> dict:
    """How frames sample the simulation for motion blur (see `frames`)."""
    return dict(subframes=scene.render.motion_blur,
                shutter=Fraction(scene.render.shutter_angle).limit_denominator(3600) / 360)


def require_finite(frame) -> None:
    """A NaN would draw nothing and poison every later step: stop at the first one."""
    if not (np.isfinite(frame.positions).all() and np.isfinite(frame.velocities).all()):
        raise FloatingPointError(f"the simulation produced a non-finite position or "
                                 f"velocity at frame {frame.index}")
