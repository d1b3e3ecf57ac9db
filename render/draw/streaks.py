"""Each bird drawn as a short streak, density-weighted, grouped into a few strokes (SPEC §5).

Birds fall into `BUCKETS` density buckets plus one accent bucket; each bucket is one path
and one stroke, so a frame costs six state changes, not one per bird.
"""

from __future__ import annotations

from dataclasses import dataclass

import cairo
import numpy as np

from ..scene import Scene
from .surface import Canvas, world_to_pixels

BUCKETS = 5
DT_REF = 1 / 60  # streak lengths are in units of the distance flown in one 60 Hz step


@dataclass(frozen=True)
class Style:
    """Per-bucket stroke widths (world units) and colours (r, g, b, a), accent last."""

    background: tuple[float, float, float]
    widths: tuple[float, ...]
    colours: tuple[tuple[float, float, float, float], ...]
    tail: float
    head: float
    density_count: float


def style_for(scene: Scene, scale_px: float) -> Style:
    """Bucket widths and colours; `scale_px` is pixels per world unit (for the px floor)."""
    r = scene.render
    colours = scene.colours()
    floor = r.min_width_px / scale_px
    ramp = np.linspace(0.0, 1.0, BUCKETS)
    widths = [max(floor, r.width_min + t * (r.width_max - r.width_min)) for t in ramp]
    alphas = [r.opacity_min + t * (r.opacity_max - r.opacity_min) for t in ramp]
    ink = [(*colours["ink"], a) for a in alphas]
    # The tracer birds must stay easy to follow: drawn at full density weight.
    widths.append(widths[-1])
    ink.append((*colours["accent"], r.opacity_max))
    return Style(colours["background"], tuple(widths), tuple(ink), r.tail, r.head,
                 r.density_count)


def buckets(neighbours: np.ndarray, accent: np.ndarray, density_count: float) -> np.ndarray:
    """Bucket per bird: 0..BUCKETS−1 by density (neighbours / density_count, clipped to 1),
    BUCKETS for the accent birds. (n,) int64."""
    density = np.minimum(neighbours / density_count, 1.0)
    out = np.minimum((density * BUCKETS).astype(np.int64), BUCKETS - 1)
    out[accent] = BUCKETS
    return out


def segments(positions: np.ndarray, velocities: np.ndarray, tail: float, head: float):
    """Streak end points: (n, 2) tails and heads in world units."""
    step = velocities * DT_REF
    return positions - tail * step, positions + head * step


def wrapped_copies(start, end, bucket, width: float, height: float):
    """On a torus, a streak poking over an edge is drawn again shifted by the world's size,
    so it shows on both sides and never as a line across the frame."""
    starts, ends, groups = [start], [end], [bucket]
    lo = np.minimum(start, end)
    hi = np.maximum(start, end)
    extent = np.array([width, height])
    for sx in (-1, 0, 1):
        for sy in (-1, 0, 1):
            if sx == 0 and sy == 0:
                continue
            pick = np.ones(len(start), bool)
            for axis, s in ((0, sx), (1, sy)):
                if s == 1:
                    pick &= lo[:, axis] < 0.0
                elif s == -1:
                    pick &= hi[:, axis] > extent[axis]
            if pick.any():
                shift = np.array([sx, sy]) * extent
                starts.append(start[pick] + shift)
                ends.append(end[pick] + shift)
                groups.append(bucket[pick])
    return np.concatenate(starts), np.concatenate(ends), np.concatenate(groups)


def draw_frame(canvas: Canvas, scene: Scene, positions: np.ndarray, velocities: np.ndarray,
               neighbours: np.ndarray, accent: np.ndarray) -> np.ndarray:
    """Draw one frame onto `canvas`; returns its pixels (h, w, 4) BGRA uint8."""
    world = scene.world
    matrix = world_to_pixels(world.width, world.height, canvas.size)
    style = style_for(scene, matrix.xx)
    start, end = segments(positions, velocities, style.tail, style.head)
    group = buckets(neighbours, accent, style.density_count)
    if world.boundary == "wrap":
        start, end, group = wrapped_copies(start, end, group, world.width, world.height)

    ctx = canvas.context()
    ctx.set_source_rgb(*style.background)
    ctx.paint()
    ctx.set_matrix(matrix)
    ctx.set_line_cap(cairo.LINE_CAP_ROUND)
    for b in range(BUCKETS + 1):
        members = np.flatnonzero(group == b)
        if members.size == 0:
            continue
        for (x0, y0), (x1, y1) in zip(start[members].tolist(), end[members].tolist()):
            ctx.move_to(x0, y0)
            ctx.line_to(x1, y1)
        ctx.set_line_width(style.widths[b])
        ctx.set_source_rgba(*style.colours[b])
        ctx.stroke()
    return canvas.flush()
