"""The only module that sees every stage of a clip: scene → simulate (states) → draw
(drawing, or a Dask cluster) → encode (a writer), and the diagnostics beside them.

`render(scene, target, executor, diagnostics)` takes what the CLI decided once: what to
write (`encode.Target`), where frames are drawn (`executor.Threads` or `executor.Cluster`)
and which diagnostics to keep (`Diagnostics`). Trajectory outputs (.npz, .usd) take the
states straight from the simulation (`encode.open_state_writer`): nothing is drawn for
them.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from . import budget
from .drawing import draw_range
from .encode import ANIMATED_SUFFIXES, StateWriter, Target, open_state_writer, open_writer
from .encode.files import place_or_refuse, refuse_existing
from .encode.images import Kept, SequenceWriter
from .encode.video import untimed
from .errors import UsageError, option
from .executor import Cluster, Executor, Threads, default_workers
from .loop import SeamMeter, crossfade_frames
from .progress import note, progress_bar
from .scene import Scene
from .sim import diagnostics as measures
from .sim.loop import search
from .states import FrameState, simulated


@dataclass(frozen=True)
class Diagnostics:
    """Per-frame diagnostics to keep: written to `stats` (.csv or .json) and drawn over
    time into `plot` (.png), each when given."""

    stats: str | Path | None = None
    plot: str | Path | None = None

    @property
    def wanted(self) -> bool:
        return self.stats is not None or self.plot is not None

    def refuse(self, target: Target) -> None:
        """UsageError, before any work, for a file these cannot be written to: a suffix
        that names no format they are written in, a folder's name, one of `target`'s
        files (a clip, or a frame of a sequence), or (overwrite off) a file that exists."""
        from .encode.files import resolved
        from .encode.images import frame_of, is_sequence
        from .plot import require

        overwrite = target.overwrite
        for path in (p for p in (self.stats, self.plot) if p is not None):
            for output in target.paths:
                k = frame_of(output, path) if is_sequence(output) else None
                if k is not None and target.first <= k < target.end:
                    raise UsageError(f"{path}: also frame {k} of {output}: give the "
                                     f"diagnostics another name")
                if resolved(output) == resolved(path):
                    raise UsageError(f"{path}: given twice as an output")

        if self.stats is not None:
            if Path(self.stats).suffix.lower() not in measures.SUFFIXES:
                raise UsageError(f"{self.stats}: {option('--stats')} writes "
                                 f"{' or '.join(measures.SUFFIXES)}, as the suffix says; got "
                                 f"{Path(self.stats).suffix or 'no suffix'}")
            refuse_existing(Path(self.stats), overwrite)
        if self.plot is not None:
            require(self.plot)
            refuse_existing(Path(self.plot), overwrite)


def render(scene: Scene, target: Target, executor: Executor | None = None,
           diagnostics: Diagnostics = Diagnostics(), *, quiet: bool = False) -> int:
    """Render `target`'s frames of `scene` (no paths: simulate only) on `executor` (None:
    `Threads()`), and keep the `diagnostics` asked for; `quiet`: no progress bar, and no
    note that a first run compiles the kernels. Returns the number of frames. A kept
    frame (see `Target`) is still simulated, not drawn."""
    refuse(scene, target, executor, diagnostics)
    if isinstance(executor, Cluster):
        from .cluster import reach

        reach(executor.address)
    crossfade = crossfade_frames(scene, target.first)
    if not crossfade and not quiet:
        for path in _played_in_a_loop(target):
            note(f"{path} plays in a loop, and its last frame jumps back to its first: add "
                 f"{option('--loop')} for a seamless one (docs/loops.md)")
    for message in () if quiet else filter(None, (untimed(path, scene.output.fps)
                                                  for path in target.frame_paths)):
        note(message)
    rows: list[dict] | None = [] if diagnostics.wanted else None
    label = Path(target.paths[0]).name if target.paths else "simulate"
    seam = kept_frames = None
    with contextlib.ExitStack() as session:
        client = None
        if isinstance(executor, Cluster) and executor.address != "local" and \
                target.frame_paths:
            from .cluster import connect

            # Before the flock settles (minutes, for a film): a scheduler without workers,
            # or a worker on other code, is said first. (A local cluster's are this code.)
            client = session.enter_context(connect(executor, quiet=quiet))
        # The flock is seeded and settled, and the first frame simulated, before the bar
        # starts: a first run compiles the kernels meanwhile (announced unless quiet), which
        # would otherwise count as the first frame's time and wreck the ETA.
        states = _primed(simulated(scene, target.first, target.count, rows, quiet=quiet))
        hunt = _Hunt(scene) if not crossfade and target.first == 0 else None
        if hunt:
            states = hunt.watch(states)
        framing = _Framing() if scene.dimensions == 3 and target.frame_paths else None
        if framing:
            states = framing.watch(states)
        with progress_bar(total=target.count, unit="frame", disable=quiet, desc=label) as bar, \
                contextlib.ExitStack() as kept:
            if target.state_paths:
                states = _written(states, kept.enter_context(open_state_writer(target, scene)))
            if not target.frame_paths:
                for _ in states:
                    bar.update()
            elif isinstance(executor, Cluster):
                from .cluster import draw_on_cluster

                seam = _meter(scene, target, crossfade, quiet)
                kept_frames = draw_on_cluster(scene, _metered(states, seam), target,
                                              executor, bar, client)
                if seam:
                    _read_back(scene, target, seam)
            else:
                seam = _meter(scene, target, crossfade, quiet)
                kept_frames = _draw_here(scene, _paced(_metered(states, seam)), target,
                                         executor or Threads(), bar, seam)
    if kept_frames and (kept_frames.mixed or not quiet):
        note(kept_frames.text)
    if hunt and hunt.missed() and not quiet:
        note(hunt.missed())
    if framing and framing.lost_often() and not quiet:
        note(f"{target.frame_paths[0]}: {framing.lost_often()}")
    if seam and seam.report():
        note(seam.report())
        if rows is not None:
            for row, loop in zip(rows, seam.rows()):
                row.update(loop)
    _keep(diagnostics, rows, scene, target.overwrite)
    return target.count


def refuse(scene: Scene, target: Target, executor: Executor | None = None,
           diagnostics: Diagnostics = Diagnostics()) -> None:
    """UsageError for anything `render` cannot do, raised before any work: what --check
    refuses too."""
    if target.state_paths and isinstance(executor, Cluster):
        raise UsageError(f"{target.state_paths[0]}: trajectories are written here, as the "
                         f"flock is simulated (sequential, and cheap next to drawing): drop "
                         f"{option('--scheduler')}")
    if target.web and isinstance(executor, Cluster):
        raise UsageError(f"{target.paths[0]}: {option('--quality web')} encodes on this "
                         f"machine (two encoders and a poster fed the same frames): drop "
                         f"{option('--scheduler')}")
    if isinstance(executor, Cluster):
        from .cluster import refuse as refuse_on_cluster

        refuse_on_cluster(target, executor.cache_dir)
    crossfade_frames(scene, target.first)  # a loop's range and camera
    # Before anything large is allocated: each output, then all of them at once.
    # A cluster's worker draws on one thread (segments.py): three canvases in flight.
    threads = executor.workers if isinstance(executor, Threads) else 1
    costs = [budget.check(scene, path, first=target.first, web=target.web,
                          on_disk=target.on_disk(path) if path else 0, threads=threads)
             for path in target.paths or (None,)]
    if isinstance(executor, Cluster) and executor.address == "local" and target.paths:
        budget.check_local_workers(scene, str(target.paths[0]), costs[0],
                                   executor.workers or default_workers())
    if len(costs) > 1:
        budget.check_together(scene, list(target.paths), costs)
    if target.frame_paths:
        open_writer(target, scene)  # refuses what cannot be written; opens nothing
    if target.state_paths:
        open_state_writer(target, scene)  # refuses as open_writer does
    diagnostics.refuse(target)


def _played_in_a_loop(target: Target) -> list[str]:
    """The outputs a viewer plays over and over: GIF, WebP and APNG loop forever, and a
    web page's video is `loop`."""
    return [path for path in target.paths
            if target.web or Path(path).suffix.lower() in ANIMATED_SUFFIXES]


def _meter(scene: Scene, target: Target, crossfade: int, quiet: bool) -> SeamMeter | None:
    """The loop's measures (None: not a loop), its start t₀ and the flock's turn carried
    across it the ones the states take."""
    if not crossfade:
        return None
    found = search(scene, target.count, crossfade, progress=not quiet)
    return SeamMeter(scene, crossfade, float(found.start / scene.output.fps), turn=found.turn,
                     shape=found.shape)


def _read_back(scene: Scene, target: Target, seam: SeamMeter) -> None:
    """Show `seam` the frames a cluster wrote (it drew them; this machine saw only the
    states): decoded by ffmpeg from the file or the sequence, at the frames' size."""
    import subprocess

    import numpy as np

    from .encode.images import is_sequence, sequence_pattern
    from .encode.video import ffmpeg_exe, file_arg

    path = target.paths[0]
    source = file_arg(sequence_pattern(str(path)) if is_sequence(str(path)) else path)
    width, height = scene.output.size
    with subprocess.Popen([ffmpeg_exe(), "-v", "error", "-i", source, "-f", "rawvideo",
                           "-pix_fmt", "bgra", "-s", f"{width}x{height}", "-"],
                          stdout=subprocess.PIPE) as ffmpeg:
        size = width * height * 4
        while len(frame := ffmpeg.stdout.read(size)) == size:
            seam.add(np.frombuffer(frame, np.uint8).reshape(height, width, 4))


class _Hunt:
    """What a hunting hawk did in the frames rendered from frame 0: whether it was out,
    whether it attacked, and the last frame's state (`end`). A clip that ends before the
    first attack (the hawk sets out well behind the flock and takes seconds to reach it)
    shows a hawk that never dives, with nothing to say why."""

    def __init__(self, scene: Scene):
        hawk = scene.hawk
        hunts = hawk is not None and hawk.enabled and hawk.mode == "hunt"
        self.start = hawk.start if hunts else None
        self.landing = scene.roost.landing_at if scene.roost is not None else None
        self.out = self.attacked = False
        self.end = None

    def __bool__(self) -> bool:
        return self.start is not None

    def watch(self, states: Iterable[FrameState]) -> Iterator[FrameState]:
        for state in states:
            self.out |= state.hawk is not None
            self.attacked |= state.attack
            self.end = state
            yield state

    def missed(self) -> str | None:
        """A note when the frames hold no attack, else None."""
        if self.attacked or self.end is None:
            return None
        if self.landing is not None and self.landing <= self.end.time:
            return None  # no attack begins once the landing has: rendering on adds none
        end = f"the last frame ({self.end.index}, at {float(self.end.time):.2f} s)"
        if not self.out:
            return (f"no attack in these frames: the hunting hawk sets out at hawk.start "
                    f"({self.start:g} s), after {end}")
        return (f"no attack in these frames: the hunting hawk set out at hawk.start "
                f"({self.start:g} s) behind the flock and had not dived by {end}: render "
                f"further, or set hawk.start earlier")


class _Framing:
    """How often a 3D clip's camera lost the flock: the frames with under LOST of the birds
    still flying in view. A fixed camera loses a flock that circles wider than its view
    (a narrow fov, a camera moved close, a look_at away from the roost), with nothing to
    say why."""

    SAMPLE = 16   # every 16th bird: the share in view, cheaply
    LOST = 0.5
    OFTEN = 0.25  # said once this share of the frames lost the flock

    def __init__(self):
        self.frames = self.lost = 0
        self.pose = None

    def watch(self, states: Iterable[FrameState]) -> Iterator[FrameState]:
        from .draw3d.camera import in_frame

        for state in states:
            points = state.positions[::self.SAMPLE]
            if state.landed is not None:
                points = points[~state.landed[::self.SAMPLE]]
            if len(points):
                self.frames += 1
                self.lost += float(in_frame(state.pose, points).mean()) < self.LOST
                self.pose = state.pose
            yield state

    def lost_often(self) -> str | None:
        """A note when the camera lost the flock in OFTEN of the frames or more."""
        if not self.frames or self.lost < self.OFTEN * self.frames:
            return None
        from .draw3d.camera import across_deg

        p = self.pose
        return (f"the flock is mostly out of the frame in {self.lost} of its {self.frames} "
                f"frames ({p.width}x{p.height} px see {across_deg(p):.0f}° across); follow it "
                f"({option('--set camera.follow=centroid')}) or widen camera.fov "
                f"(docs/model.md, the 3D camera)")


def _metered(states: Iterable[FrameState], seam: SeamMeter | None) -> Iterator[FrameState]:
    """`states`, each shown to `seam` (when given) on its way past."""
    for state in states:
        if seam:
            seam.add_state(state)
        yield state


# The simulation steps on one thread once the main thread waits downstream (for a drawing,
# or for the encoder to take a frame) longer than this share of the time it simulates,
# both smoothed over frames. Handing a frame to an encoder that is ready for it waits
# too, while ffmpeg reads it out of the pipe: about 5% of a 20,000-bird frame's step.
WAITED = 0.25


def _paced(states: Iterable[FrameState]) -> Iterator[FrameState]:
    """`states`, each simulated on every numba thread while the drawing and the encoder
    keep up, and on one while this thread waits for them: the simulation then does not
    set the pace, and a second thread of it only takes a core from those it waits for
    (docs/performance.md, Pipeline). The thread count leaves the bits as they are."""
    import numba

    most = numba.get_num_threads()
    simulating = waited = 0.0
    try:
        start = time.perf_counter()
        for state in states:
            handed, cpu = time.perf_counter(), time.thread_time()
            yield state
            idle = (time.perf_counter() - handed) - (time.thread_time() - cpu)
            took = handed - start
            simulating = 0.5 * simulating + 0.5 * took
            # Capped: the first frames wait for kernels to load, not for the encoder.
            waited = 0.5 * waited + 0.5 * min(idle, 4.0 * took)
            numba.set_num_threads(1 if waited > WAITED * simulating else most)
            start = time.perf_counter()
    finally:
        numba.set_num_threads(most)


def _primed(states: Iterator[FrameState]) -> Iterator[FrameState]:
    """`states` with the first one computed now."""
    first = next(states, None)
    return states if first is None else itertools.chain([first], states)


def _written(states: Iterable[FrameState], writer: StateWriter) -> Iterator[FrameState]:
    """`states`, each handed to `writer` on its way past."""
    for state in states:
        writer.write_state(state)
        yield state


def _draw_here(scene: Scene, states: Iterable[FrameState], target: Target,
               threads: Threads, bar, seam: SeamMeter | None) -> Kept | None:
    """Draw `states` on this machine's threads into `target`'s writer; returns what a
    sequence kept of the frames on disk (`SequenceWriter.kept_account`), if anything."""
    with open_writer(target, scene) as writer:
        for _, pixels in draw_range(scene, states, writer, workers=threads.workers):
            if seam and pixels is not None:
                seam.add(pixels)
            bar.update()
        # The encoders still hold frames (x264's look-ahead, an AV1 encoder's far more:
        # most of a minute for a 4K web clip): a full bar would sit there looking stuck.
        bar.set_postfix_str("encoding the last frames")
    bar.set_postfix_str("", refresh=False)
    return writer.kept_account() if isinstance(writer, SequenceWriter) else None


def _keep(diagnostics: Diagnostics, rows: list[dict] | None, scene: Scene,
          overwrite: bool) -> None:
    if diagnostics.stats is not None:
        text = measures.formatted(rows, diagnostics.stats)
        # Whole or not at all, creating the folder (newline="": the CSV's own line ends).
        place_or_refuse(Path(diagnostics.stats), lambda tmp: tmp.write_text(text, newline=""),
                        overwrite=overwrite)
    if diagnostics.plot is not None:
        from .plot import plot

        plot(rows, diagnostics.plot, title=f"{scene.scene.name}, seed {scene.scene.seed}",
             overwrite=overwrite)
