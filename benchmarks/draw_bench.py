"""Drawing figures: a settled plate's 3,600 streaks, from simulated state to a buffer
ready for the encoder, against the stroked drawing it replaced and against matplotlib.

Contenders draw the same frame at the same size, one core each, timed in interleaved rounds
(one call of each per round) so that load on this shared machine falls on all of them
alike; figures are medians over the rounds. `run(quick)` returns the result dicts
{figure, value, unit, reference, ratio, target} that benchmarks/run prints; each ratio is
a speed-up: the other drawing's time ÷ ours. Nothing runs on import.
"""

from __future__ import annotations

import importlib.util
import statistics
import time
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

from figures import result

ROOT = Path(__file__).resolve().parents[1]
SCENE = ROOT / "scenes" / "plate.toml"
# By 2 s after settling the flock shows the neighbour counts docs/model.md asks of a murmuration
# (10th/50th/90th percentile ≈ 18/39/73); frame 0 is still looser (18/28/42).
SETTLED_S = 2.0


class FlockFrame(NamedTuple):
    """One simulated frame: what draw_frame takes besides the canvas, in its order."""

    scene: object
    positions: np.ndarray
    velocities: np.ndarray
    neighbours: np.ndarray
    accent: np.ndarray


def settled_frame(seconds: float = SETTLED_S) -> FlockFrame:
    """The plate (scenes/plate.toml) `seconds` after settling."""
    from render.scene import load_scene
    from render.sim.simulate import Simulation, frames

    scene = load_scene(SCENE)
    sim = Simulation(scene)
    index = round(seconds * scene.output.fps)
    for frame in frames(sim, scene.output.fps, index + 1):
        pass
    return FlockFrame(scene, frame.positions, frame.velocities, frame.snapshot.neighbours,
                      sim.accent)


def _hand_off(pixels: np.ndarray) -> memoryview:
    """What the video writer sends down ffmpeg's pipe (no copy when already contiguous)."""
    return memoryview(np.ascontiguousarray(pixels)).cast("B")


def drawing(frame: FlockFrame, size: tuple[int, int]) -> Callable[[], memoryview]:
    """boids-render's drawing on a reused canvas, as the pipeline draws every frame."""
    from render.draw.streaks import draw_frame
    from render.draw.surface import Canvas

    canvas = Canvas(size)
    return lambda: _hand_off(draw_frame(canvas, *frame))


def _naive_draw():
    """tests/naive_draw.py, the stroked reference drawing, loaded by path (tests/ is not a
    package)."""
    path = ROOT / "tests" / "naive_draw.py"
    spec = importlib.util.spec_from_file_location("naive_draw", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stroked_drawing(frame: FlockFrame, size: tuple[int, int]) -> Callable[[], memoryview]:
    """The drawing this one replaced: a pycairo call per end point, round-capped strokes,
    cairo's default anti-aliasing."""
    from render.draw.surface import Canvas

    stroked_frame = _naive_draw().stroked_frame
    canvas = Canvas(size)
    return lambda: _hand_off(stroked_frame(canvas, *frame))


def matplotlib_drawing(frame: FlockFrame, size: tuple[int, int]) -> Callable[[], np.ndarray]:
    """The same frame through matplotlib's Agg: one LineCollection per bucket (same
    segments, widths, colours, round caps, anti-aliasing, pixel size), built once; each
    call gives the collections the frame's segments, draws, and reads the RGB back."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure

    from render.draw.streaks import BUCKETS, buckets, segments, style_for
    from render.draw.surface import world_to_pixels

    scene = frame.scene
    matrix = world_to_pixels(scene.world.width, scene.world.height, size)
    scale = matrix.xx  # pixels per world unit
    style = style_for(scene, scale)
    dpi = 100
    fig = Figure(figsize=(size[0] / dpi, size[1] / dpi), dpi=dpi, facecolor=style.background)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    left, top = -matrix.x0 / scale, matrix.y0 / scale  # the world→pixel fit, as limits
    ax.set_xlim(left, left + size[0] / scale)
    ax.set_ylim(top - size[1] / scale, top)
    collections = []
    for b in range(BUCKETS + 1):
        lc = LineCollection([], linewidths=style.widths[b] * scale * 72 / dpi,
                            colors=[style.colours[b]], capstyle="round", antialiased=True)
        ax.add_collection(lc)
        collections.append(lc)

    def draw() -> np.ndarray:
        start, end = segments(frame.positions, frame.velocities, style.tail, style.head)
        group = buckets(frame.neighbours, frame.accent, style.density_count)
        for b, lc in enumerate(collections):
            members = group == b
            lc.set_segments(np.stack([start[members], end[members]], axis=1))
        fig.canvas.draw()
        return np.ascontiguousarray(np.asarray(fig.canvas.buffer_rgba())[:, :, :3])

    return draw


def interleaved(contenders: dict[str, Callable], rounds: int) -> dict[str, float]:
    """Median milliseconds per call of each contender, calling each once per round."""
    for fn in contenders.values():
        fn()  # warm: first-call allocations, imports, caches
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


def phases(frame: FlockFrame, size: tuple[int, int], rounds: int) -> dict[str, float]:
    """Where one frame's time goes (median ms): streak outlines in numpy, leaving out the
    streaks off the frame, background paint, handing the paths to cairo, cairo rasterising
    and blending them, hand-off to the encoder. The cairo part is what fill_frame takes
    less the paint and the hand-over."""
    import cairo

    from render.draw.paths import append_polygons
    from render.draw.streaks import fill_frame, frame_paths, on_canvas
    from render.draw.surface import Canvas

    canvas = Canvas(size)
    paths = frame_paths(frame.scene, size, *frame[1:])

    def background():
        ctx = canvas.context()
        ctx.set_source_rgb(*paths.style.background)
        ctx.paint()

    def append_only():
        ctx = cairo.Context(canvas.surface)
        for b in range(len(paths.bounds) - 1):
            append_polygons(ctx, paths.records[paths.bounds[b]:paths.bounds[b + 1]])
            ctx.new_path()

    pixels = canvas.flush()
    t = interleaved({
        "geometry": lambda: frame_paths(frame.scene, size, *frame[1:]),
        "culling": lambda: on_canvas(paths, size),
        "cairo": lambda: fill_frame(canvas, paths),
        "background": background,
        "append": append_only,
        "hand-off": lambda: _hand_off(pixels),
    }, rounds)
    return {"streak outlines in numpy": t["geometry"],
            "streaks off the frame left out": t["culling"],
            "background paint": t["background"],
            "paths handed to cairo": t["append"],
            "cairo rasterising and blending": t["cairo"] - t["background"] - t["append"],
            "hand-off to the encoder": t["hand-off"]}


def picture_difference(frame: FlockFrame, size: tuple[int, int]) -> float:
    """Mean absolute difference, RGB 0–255, between the drawing and the stroked reference."""
    new = np.asarray(drawing(frame, size)()).reshape(size[1], size[0], 4)[:, :, :3]
    old = np.asarray(stroked_drawing(frame, size)()).reshape(size[1], size[0], 4)[:, :, :3]
    return float(np.abs(new.astype(int) - old.astype(int)).mean())


def run(quick: bool = False) -> list[dict]:
    """The drawing figures of issue 4: 1920x1080 and 3840x2160 (quick: 480x270 and
    960x540, few rounds, no targets), each against matplotlib and the stroked drawing."""
    from render.cli import tune_process

    tune_process()  # the heap settings a render runs with (the drawing allocates per frame)
    frame = settled_frame()
    if quick:
        sizes, rounds = [((480, 270), ""), ((960, 540), "")], 5
    else:
        sizes, rounds = [((1920, 1080), "≤ 12 ms; ≥ 3.5× matplotlib"),
                         ((3840, 2160), "≤ 35 ms; ≥ 3.5× matplotlib")], 25
    rows = []
    for size, target in sizes:
        label = f"{size[0]}x{size[1]}"
        t = interleaved({"ours": drawing(frame, size),
                         "stroked": stroked_drawing(frame, size),
                         "matplotlib": matplotlib_drawing(frame, size)}, rounds)
        rows += [
            result(f"drawing 3,600 streaks incl. hand-off to the encoder, {label}, 1 core",
                   t["ours"], "ms", t["matplotlib"], t["matplotlib"] / t["ours"], target),
            result(f"matplotlib LineCollection incl. RGB read-back, {label}",
                   t["matplotlib"], "ms"),
            result(f"previous drawing (stroked, a pycairo call per point), {label}",
                   t["stroked"], "ms", ratio=t["stroked"] / t["ours"]),
            result(f"mean abs difference from the stroked drawing, {label}",
                   picture_difference(frame, size), "/255",
                   target="" if quick else "≤ 2.55 (1% of full scale)"),
        ]
    size = sizes[0][0]
    for name, ms in phases(frame, size, rounds).items():
        rows.append(result(f"of which {name}, {size[0]}x{size[1]}", ms, "ms"))
    return rows
