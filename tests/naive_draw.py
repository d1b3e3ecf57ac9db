"""The plainly correct drawing the fast one is held to: every streak stroked by cairo as a
round-capped line, one pycairo call per end point, cairo's default (15x256) anti-aliasing.

This is the drawing boids-render shipped before streak outlines were filled in bulk; the
reference-image tests and benchmarks/draw_bench.py compare against it.
"""

from __future__ import annotations

import cairo
import numpy as np

from render.draw.streaks import BUCKETS, buckets, segments, style_for, wrapped_copies
from render.draw.surface import Canvas, world_to_pixels


def stroked_frame(canvas: Canvas, scene, positions: np.ndarray, velocities: np.ndarray,
                  neighbours: np.ndarray, accent: np.ndarray) -> np.ndarray:
    """Same contract as render.draw.streaks.draw_frame: (h, w, 4) BGRA pixels of `canvas`."""
    world = scene.world
    matrix = world_to_pixels(world.width, world.height, canvas.size)
    style = style_for(scene, matrix.xx)
    start, end = segments(positions, velocities, style.tail, style.head)
    group = buckets(neighbours, accent, style.density_count)
    if world.boundary == "wrap":
        start, end, group = wrapped_copies(start, end, group, world.width, world.height)

    ctx = cairo.Context(canvas.surface)
    ctx.set_antialias(cairo.ANTIALIAS_DEFAULT)
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
