"""The only module that sees every stage: scene → simulate → draw → encode."""

from __future__ import annotations

import hashlib
import os
import queue
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
from tqdm import tqdm

from . import budget
from .draw.camera import View, view_at
from .draw.streaks import draw_exposure, draw_frame
from .draw.surface import Canvas
from .encode import open_writer
from .errors import UsageError
from .scene import Scene
from .sim import diagnostics
from .sim.simulate import Simulation, frames


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)


def render(scene: Scene, output: str | None, *, stats: str | Path | None = None,
           plot: str | Path | None = None, quiet: bool = False, resume: bool = False,
           overwrite: bool = True, workers: int | None = None, first: int = 0,
           scheduler: str | None = None, cache_dir: str | Path | None = None) -> int:
    """Render `scene` to `output` (None: simulate only); write per-frame diagnostics to
    `stats` and a picture of them to `plot` when given. Returns the number of frames.

    resume / overwrite=False: frames of a PNG sequence already on disk are kept, not drawn
    (see `open_writer`); the flock is still simulated through them.
    workers: threads drawing frames while the main thread simulates and hands finished
    frames, in order, to the encoder (default: the cores this process may use); with
    `scheduler`, the workers of the local Dask cluster.
    first: render only frames first .. frame_count−1 (the same frames a full render has).
    scheduler: draw and encode on a Dask cluster ("local" or a scheduler's address; see
    `cluster`), shipping states through `cache_dir` when given.
    """
    budget.check(scene, output)  # before anything large is allocated
    total = scene.frame_count - first
    crossfade = _crossfade_frames(scene, first)
    rows: list[dict] | None = [] if stats is not None or plot is not None else None
    label = Path(output).name if output else "simulate"
    # In a log file (a farm, CI) a bar redrawn ten times a second is noise: every 10 s.
    every_s = 0.1 if sys.stderr.isatty() else 10.0
    seam = None
    with tqdm(total=total, unit="frame", disable=quiet, desc=label,
              mininterval=every_s) as bar:
        states = simulated(scene, first, total, rows)
        if output is None:
            for _ in states:
                bar.update()
        elif scheduler is not None:
            from .cluster import draw_on_cluster

            draw_on_cluster(scene, states, output, scheduler=scheduler,
                            workers=workers or default_workers(), first=first, bar=bar,
                            resume=resume, overwrite=overwrite, cache_dir=cache_dir)
        else:
            seam = SeamMeter(scene, crossfade) if crossfade else None
            with open_writer(output, scene, resume=resume, overwrite=overwrite,
                             first=first) as writer:
                for _, pixels in draw_range(scene, states, writer,
                                            workers=workers or default_workers()):
                    if seam and pixels is not None:
                        seam.add(pixels)
                    bar.update()
    if seam and seam.report():
        print(f"boids-render: {seam.report()}", file=sys.stderr)
    if stats is not None:
        diagnostics.write(rows, stats)
    if plot is not None:
        from .sim.plot import plot as draw_plot

        draw_plot(rows, plot, title=f"{scene.scene.name}, seed {scene.scene.seed}")
    return total


@dataclass(frozen=True)
class FrameState:
    """What drawing frame `index` needs, detached from the simulator: plain arrays that can
    wait in a queue or travel to another machine. exposure: the sub-frame (positions,
    velocities) pairs of motion blur, else (); view: the camera's (None: the whole world)."""

    index: int
    positions: np.ndarray
    velocities: np.ndarray
    neighbours: np.ndarray
    accent: np.ndarray
    exposure: tuple = ()
    view: View | None = None

    @classmethod
    def of(cls, frame, accent: np.ndarray, scene: Scene) -> FrameState:
        """The state of a simulated `frame` (copies: the simulator reuses its arrays for the
        next step) with the scene's camera at its time."""
        return cls(frame.index, frame.positions.copy(), frame.velocities.copy(),
                   frame.snapshot.neighbours.copy(), accent, frame.exposure,
                   view_at(scene, float(frame.time), frame.followed))

    def draw(self, canvas: Canvas, scene: Scene) -> np.ndarray:
        if self.exposure:
            return draw_exposure(canvas, scene, self.exposure, self.neighbours, self.accent,
                                 view=self.view)
        return draw_frame(canvas, scene, self.positions, self.velocities, self.neighbours,
                          self.accent, view=self.view)


def simulated(scene: Scene, first: int, count: int,
              rows: list[dict] | None = None) -> Iterator[FrameState]:
    """The states of frames first .. first+count−1, simulated from the start (a loop's
    head morphing from its tail); each frame's diagnostics are appended to `rows` when
    given."""
    sim = Simulation(scene)
    stream = frames(sim, scene.output.fps, count, first=first, **exposure(scene))
    crossfade = _crossfade_frames(scene, first)
    if crossfade:
        from .sim.loop import looped

        stream = looped(scene, stream, count, crossfade)
    for frame in stream:
        _require_finite(frame)
        if rows is not None:
            rows.append({"frame": frame.index, "time_s": float(frame.time),
                         **diagnostics.measure(frame.snapshot, scene)})
        yield FrameState.of(frame, sim.accent, scene)


def draw_range(scene: Scene, states: Iterable[FrameState], writer, *,
               workers: int) -> Iterator[tuple[int, np.ndarray | None]]:
    """Render this frame range from these states: each state `writer` wants is drawn (by
    `workers` threads) and written, in frame order. Yields (index, pixels) after each write,
    pixels None for a frame the writer keeps from disk; the pixels stay valid until the
    next one is asked for. The local pipeline and every cluster task run this."""
    with _Drawing(scene, workers) as drawing:
        for state in states:
            if writer.wants(state.index):
                drawing.submit(state)
            else:
                drawing.skip(state.index)
            for index, pixels in drawing.ready():
                if pixels is not None:
                    writer.write(index, pixels)
                yield index, pixels
        for index, pixels in drawing.ready(all_=True):
            if pixels is not None:
                writer.write(index, pixels)
            yield index, pixels


def _crossfade_frames(scene: Scene, first: int) -> int:
    """Frames of the loop's morph (0: not a loop)."""
    out = scene.output
    if not out.loop:
        return 0
    if first:
        raise UsageError("--frames A:B: a loop is rendered whole (its first frames depend on "
                         "its last)")
    return max(1, round(out.crossfade * out.fps))  # shorter than the clip: scene.py checks


class SeamMeter:
    """How well a loop closes: the mean absolute pixel difference from the last frame to
    the first against the consecutive frames' (median), and the ink coverage during the
    morph against the clip's median (a ghosted double flock would raise it)."""

    def __init__(self, scene: Scene, crossfade: int):
        self.crossfade = crossfade
        self.first = self.last = None
        self.steps: list[float] = []
        self.coverage: list[float] = []

    def add(self, pixels: np.ndarray) -> None:
        rgb = pixels[:, :, :3].astype(np.int16)
        if self.first is None:
            self.first = rgb
        else:
            self.steps.append(float(np.abs(rgb - self.last).mean()))
        self.last = rgb
        self.coverage.append(float((np.abs(rgb - self.first[0, 0]).max(axis=2) > 24).mean()))

    def measures(self) -> dict[str, float]:
        """The seam's figures; the coverage ones NaN where the median frame has no ink."""
        median = float(np.median(self.steps))
        cover = float(np.median(self.coverage))
        blend = self.coverage[:self.crossfade]
        low, high = (min(blend) / cover - 1, max(blend) / cover - 1) if cover else (np.nan,) * 2
        return {"seam": float(np.abs(self.first - self.last).mean()), "median_step": median,
                "max_step": max(self.steps), "coverage_low": low, "coverage_high": high}

    def report(self) -> str:
        if not self.steps:
            return ""
        m = self.measures()
        coverage = ("no ink in the median frame" if np.isnan(m["coverage_low"]) else
                    f"ink coverage during the morph {m['coverage_low']:+.0%} to "
                    f"{m['coverage_high']:+.0%} of the median")
        return (f"loop seam: last→first {m['seam']:.2f}, consecutive frames median "
                f"{m['median_step']:.2f} (×{m['seam'] / max(m['median_step'], 1e-9):.2f}), "
                f"max {m['max_step']:.2f}; {coverage}")


class _Drawing:
    """Frames drawn by a pool of threads (cairo and numpy release the GIL while they work),
    handed back in frame order. Each thread draws onto a Canvas borrowed from a small pool
    and returned once its pixels have been written, so memory stays bounded whatever the
    clip's length, and the pixels are the same whichever thread drew them."""

    def __init__(self, scene: Scene, workers: int):
        self.scene = scene
        self.window = 2 * workers  # frames in flight: enough to keep every thread busy
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="draw")
        self.canvases: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(self.window + 1):
            self.canvases.put(Canvas(scene.output.size))
        self.pending: deque = deque()  # (index, future or None for a skipped frame)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for _, future in self.pending:
            if future is not None:
                future.cancel()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, state: FrameState) -> None:
        self.pending.append((state.index, self.pool.submit(self._draw, state)))

    def skip(self, index: int) -> None:
        self.pending.append((index, None))

    def _draw(self, state: FrameState):
        canvas = self.canvases.get()
        return canvas, state.draw(canvas, self.scene)

    def ready(self, all_: bool = False):
        """Yield (index, pixels or None) in frame order: the oldest frames once more than a
        window's worth are in flight (all of them with all_). The pixels stay valid until
        the consumer asks for the next frame, when their canvas goes back to the pool."""
        while self.pending and (all_ or len(self.pending) > self.window):
            index, future = self.pending.popleft()
            if future is None:
                yield index, None
                continue
            canvas, pixels = future.result()
            yield index, pixels
            self.canvases.put(canvas)


def exposure(scene: Scene) -> dict:
    """How frames sample the simulation for motion blur (see `frames`)."""
    return dict(subframes=scene.render.motion_blur,
                shutter=Fraction(scene.render.shutter_angle).limit_denominator(3600) / 360)


def _require_finite(frame) -> None:
    """A NaN would draw nothing and poison every later step: stop at the first one."""
    if not (np.isfinite(frame.positions).all() and np.isfinite(frame.velocities).all()):
        raise FloatingPointError(f"the simulation produced a non-finite position or "
                                 f"velocity at frame {frame.index}")


# Pixels drawn around each tile and cropped (see _tiled_still).
TILE_APRON = 32
# Tiles of a PNG still too large to draw whole, when --tile-size does not say: few enough
# that the per-tile work is negligible, small enough that a band of them is cheap.
DEFAULT_TILE = 2048
# 16-bit stills are drawn this many times larger a side, then averaged down.
SUPERSAMPLE = 4


def render_still(scene: Scene, output: str | Path, time: Fraction, *, dpi: float,
                 overwrite: bool = True, bit_depth: int = 8,
                 tile_size: int | None = None) -> None:
    """One frame at `time` (seconds, exact) as a PNG still that embeds the resolved scene,
    or as a vector PDF/SVG page of the same picture.

    It is the frame a PNG sequence of the same scene and size shows at that time, pixel for
    pixel: the same sampling of the simulation and the same drawing. A PNG still larger
    than cairo can draw at once, or than memory holds, is drawn in tiles (the same pixels).
    """
    from . import __version__
    from .encode.files import write_atomically
    from .encode.images import write_png

    output = Path(output)
    vector = output.suffix.lower() in (".pdf", ".svg")
    # Everything that can refuse the still does so before the flock is simulated.
    tile_size = still_cost(scene, output, time, dpi=dpi, bit_depth=bit_depth,
                           tile_size=tile_size).tile
    if not overwrite and output.exists():
        raise UsageError(f"{output}: exists (--no-overwrite)")
    sim = Simulation(scene)
    # Frame 1 at 1/time frames per second is sampled at exactly `time`.
    fps, index = (1 / time, 1) if time > 0 else (Fraction(1), 0)
    # The shutter opens at `time` for the same span of the scene's frame interval.
    blur = exposure(scene)
    blur["shutter"] *= fps / scene.output.fps
    frame = next(frames(sim, fps, 1, first=index, **blur))
    _require_finite(frame)
    still = FrameState.of(frame, sim.accent, scene)
    state = (still.positions, still.velocities, still.neighbours, still.accent)
    toml = scene.to_toml()
    text = {
        "Software": f"boids-render {__version__}",
        "boids-render:scene": toml,
        "boids-render:scene-sha256": hashlib.sha256(toml.encode()).hexdigest(),
        "boids-render:seed": str(scene.scene.seed),
        "boids-render:time": str(time),
        "boids-render:version": __version__,
    }
    if vector:
        from .draw.vector import write_vector

        title = f"{scene.scene.name}, seed {scene.scene.seed}, t = {time} s"
        written = write_atomically(output, lambda tmp: write_vector(
            tmp, scene, scene.output.size, dpi, *state, view=still.view, title=title),
            overwrite=overwrite)
    elif tile_size is not None:
        written = write_atomically(output, lambda tmp: _tiled_still(
            scene, state, still.view, tile_size, tmp, dpi=dpi, text=text),
            overwrite=overwrite)
    else:
        pixels = _supersampled(scene, still) if bit_depth == 16 else \
            still.draw(Canvas(scene.output.size), scene)
        written = write_png(pixels, output, dpi=dpi, text=text, overwrite=overwrite)
    if not written:
        raise UsageError(f"{output}: exists (--no-overwrite)")


def still_cost(scene: Scene, output: str | Path, time: Fraction, *, dpi: float,
               bit_depth: int = 8, tile_size: int | None = None) -> budget.Estimate:
    """What `render_still` will spend on this still, and how it will draw it: in tiles of
    `.tile` px, or whole when that is None. UsageError when the still cannot be drawn or
    does not fit the budget. Without `tile_size`, a PNG still too large for one cairo
    surface, or for memory whole, is drawn in DEFAULT_TILE tiles (the same pixels)."""
    where, time = str(output), float(time)
    if Path(output).suffix.lower() in (".pdf", ".svg"):
        budget.require_size(
            scene, where, budget.VECTOR_MAX_PT * dpi / 72,
            f"a PDF or SVG page at {dpi:g} dpi (cairo's vector coordinates reach "
            f"{budget.VECTOR_MAX_PT} pt)", "a higher --dpi makes the page smaller; a PNG "
            "still has no such limit")
        return budget.check(scene, where, budget.still_estimate(scene, time, vector=True))
    whole = []  # why the still is drawn whole: (largest side, what, what to do instead)
    if bit_depth == 16:
        whole.append((budget.IMAGE_MAX_SIDE // 2, "a 16-bit still (drawn 2 to 4 times "
                      "larger a side, whole)", "an 8-bit still is drawn in tiles at any size"))
    if scene.output.transparent:
        whole.append((budget.IMAGE_MAX_SIDE, "a transparent still (output.transparent: "
                      "drawn whole)", "an opaque still is drawn in tiles at any size"))
    if scene.render.motion_blur > 1:
        whole.append((budget.IMAGE_MAX_SIDE, "a still with motion blur (render.motion_blur "
                      "> 1: drawn whole)", "without it a still is drawn in tiles at any size"))
    if whole:
        if tile_size is not None:
            raise UsageError("--tile-size draws opaque 8-bit stills without motion blur")
        for limit, what, instead in whole:
            budget.require_size(scene, where, limit, what, instead)
        k = _supersample(scene.output.size) if bit_depth == 16 else 1
        return budget.check(scene, where, budget.still_estimate(scene, time, supersample=k))
    if tile_size is None:
        cost = budget.still_estimate(scene, time)
        if max(scene.output.size) <= budget.IMAGE_MAX_SIDE and budget.fits(cost):
            return budget.check(scene, where, cost)  # the time budget
        tile_size = DEFAULT_TILE
    largest = budget.IMAGE_MAX_SIDE - 2 * TILE_APRON
    if min(tile_size, max(scene.output.size)) > largest:
        raise UsageError(f"--tile-size {tile_size}: expected at most {largest} (each tile "
                         f"and its {TILE_APRON}-px apron are one cairo surface, at most "
                         f"{budget.IMAGE_MAX_SIDE} px a side)")
    return budget.check(scene, where, budget.still_estimate(scene, time, tile=tile_size))


def _tiled_still(scene: Scene, state, view, tile: int, path: Path, *, dpi: float,
                 text: dict[str, str]) -> None:
    """Draw the still tile by tile and stream it into the PNG at `path` a band of rows at a
    time: memory holds one band, whatever the poster's size. Tiles are whole-pixel windows
    onto the same outlines, so the result equals the untiled drawing (tested); each tile
    gets only the streaks that reach it, so a tile costs what it shows."""
    from .draw.streaks import crop_paths, fill_frame, frame_paths
    from .encode.still import PngStream

    width, height = scene.output.size
    paths = frame_paths(scene, (width, height), *state, view=view)
    png = PngStream(path, width, height, dpi=dpi, text=text)
    # cairo rasterises a streak cut by the surface's border a shade differently from one
    # that runs on: each tile gets an apron, cropped away.
    a = TILE_APRON
    for y0 in range(0, height, tile):
        rows = min(tile, height - y0)
        band = np.empty((rows, width, 3), np.uint8)
        in_band = crop_paths(paths, y=(y0 - a, y0 + rows + a))
        for x0 in range(0, width, tile):
            cols = min(tile, width - x0)
            in_tile = crop_paths(in_band, x=(x0 - a, x0 + cols + a))
            pixels = fill_frame(Canvas((cols + 2 * a, rows + 2 * a)), in_tile,
                                origin=(x0 - a, y0 - a))
            band[:, x0:x0 + cols] = pixels[a:a + rows, a:a + cols, 2::-1]
        png.write_rows(band)
    png.close()


def _supersample(size: tuple[int, int]) -> int:
    """How many times larger a side a 16-bit still is drawn: SUPERSAMPLE, or less where
    that would pass cairo's limit (1: not even twice)."""
    k = SUPERSAMPLE
    while k > 1 and max(size) * k > budget.IMAGE_MAX_SIDE:
        k -= 1
    return k


def _supersampled(scene: Scene, still: FrameState) -> np.ndarray:
    """The still drawn `_supersample` times larger (the same picture: widths are in world
    units) and averaged down in floating point: (h, w, 3) uint16 RGB, or RGBA with straight
    alpha for a transparent still, with levels between the 256 of one 8-bit drawing."""
    width, height = scene.output.size
    k = _supersample(scene.output.size)  # ≥ 2: still_cost checked the size
    big = Canvas((width * k, height * k))
    pixels = still.draw(big, scene)
    # cairo's colour is premultiplied by alpha: average it as it is, then divide.
    bgra = pixels.reshape(height, k, width, k, 4).mean(axis=(1, 3), dtype=np.float64)
    rgb = bgra[:, :, 2::-1]
    if scene.output.transparent:
        alpha = bgra[:, :, 3:]
        rgb = np.divide(rgb * 255.0, alpha, out=np.zeros_like(rgb), where=alpha > 0)
        rgb = np.concatenate([np.minimum(rgb, 255.0), alpha], axis=2)
    return np.rint(rgb * 257.0).astype(np.uint16)


def render_contact_sheet(scene: Scene, output: str | Path, *, columns: int = 4,
                         rows: int = 3, thumb_width: int = 480) -> None:
    """A grid of thumbnails spread evenly across the clip, each labelled with its time:
    the look of a clip without playing it. Thumbnails are the clip's own frames, drawn
    smaller (the same picture: widths are in world units)."""
    from .encode.images import write_png

    count = columns * rows
    total = scene.frame_count
    picks = sorted({round(i * (total - 1) / max(count - 1, 1)) for i in range(count)})
    width, height = scene.output.size
    thumb = (thumb_width, max(1, round(thumb_width * height / width)))
    gap, label = 8, 22
    sheet_size = (columns * (thumb[0] + gap) + gap, rows * (thumb[1] + gap + label) + gap)
    if max(sheet_size) > budget.IMAGE_MAX_SIDE:
        tallest = ((budget.IMAGE_MAX_SIDE - gap) // rows - gap - label) / thumb_width
        raise UsageError(f"{output}: output.size: expected a frame at most {tallest:.1f} "
                         f"times as tall as wide for a contact sheet (its {thumb_width}-px "
                         f"wide thumbnails are drawn on one cairo surface, at most "
                         f"{budget.IMAGE_MAX_SIDE} px a side), got {width}x{height}")
    sheet = Canvas(sheet_size)
    ctx = sheet.context()
    background = scene.colours()["background"]
    ctx.set_source_rgb(*background)
    ctx.paint()
    canvas = Canvas(thumb)
    sim = Simulation(scene)
    wanted = iter(picks)
    target = next(wanted)
    slot = 0
    for frame in frames(sim, scene.output.fps, picks[-1] + 1, **exposure(scene)):
        if frame.index != target:
            continue
        _require_finite(frame)
        pixels = FrameState.of(frame, sim.accent, scene).draw(canvas, scene)
        x = gap + (slot % columns) * (thumb[0] + gap)
        y = gap + (slot // columns) * (thumb[1] + gap + label)
        sheet.pixels[y:y + thumb[1], x:x + thumb[0]] = pixels
        sheet.surface.mark_dirty()
        ctx.set_source_rgb(*scene.colours()["ink"])
        ctx.select_font_face("sans-serif")
        ctx.set_font_size(14)
        ctx.move_to(x, y + thumb[1] + 16)
        ctx.show_text(f"{float(frame.time):.2f} s · frame {frame.index}")
        slot += 1
        target = next(wanted, None)
        if target is None:
            break
    if not write_png(sheet.flush(), output):
        raise UsageError(f"{output}: exists (--no-overwrite)")
