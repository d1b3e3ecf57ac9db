"""The only module that sees every stage: scene → simulate → draw → encode."""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

from tqdm import tqdm

from .draw.streaks import draw_frame
from .draw.surface import Canvas
from .encode import open_writer
from .scene import Scene
from .sim import diagnostics
from .sim.simulate import Simulation, frames


def render(scene: Scene, output: str | None, *, stats: str | Path | None = None,
           plot: str | Path | None = None, quiet: bool = False) -> int:
    """Render `scene` to `output` (None: simulate only); write per-frame diagnostics to
    `stats` and a picture of them to `plot` when given. Returns the number of frames."""
    total = scene.frame_count
    writer = open_writer(output, scene) if output is not None else contextlib.nullcontext()
    canvas = Canvas(scene.output.size) if output is not None else None
    spacing = math.sqrt(scene.world.width * scene.world.height / scene.count)
    rows = []
    label = Path(output).name if output else "simulate"
    with writer, tqdm(total=total, unit="frame", disable=quiet, desc=label) as bar:
        sim = Simulation(scene)
        for frame in frames(sim, scene.output.fps, total):
            if stats is not None or plot is not None:
                rows.append({"frame": frame.index, "time_s": float(frame.time),
                             **diagnostics.measure(frame.snapshot, spacing)})
            if canvas is not None:
                writer.write(draw_frame(canvas, scene, frame.positions, frame.velocities,
                                        frame.snapshot.neighbours, sim.accent))
            bar.update()
    if stats is not None:
        diagnostics.write(rows, stats)
    if plot is not None:
        from .sim.plot import plot as draw_plot

        draw_plot(rows, plot, title=f"{scene.scene.name}, seed {scene.scene.seed}")
    return total
