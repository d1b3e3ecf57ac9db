"""Vector stills (PDF, SVG): the same streak outlines, drawn by cairo's own vector surfaces.

The raster path blends each bucket with OPERATOR_SOURCE through a clip, which vector formats
cannot express (cairo would embed a rasterised fallback); here each bucket is one
translucent fill, the same colour arithmetic: dst·(1 − α·coverage) + colour·α·coverage.
"""

from __future__ import annotations

from pathlib import Path

import cairo
import numpy as np

from .paths import append_polygons
from .streaks import BUCKETS, FramePaths, frame_paths, on_canvas

SURFACES = {".pdf": cairo.PDFSurface, ".svg": cairo.SVGSurface}


def paint_vector(ctx: cairo.Context, paths: FramePaths) -> None:
    """Background, then one translucent fill per bucket, on any cairo context whose user
    space is the frame's pixels."""
    if paths.style.background is not None:
        ctx.set_source_rgb(*paths.style.background)
        ctx.paint()
    ctx.set_fill_rule(cairo.FILL_RULE_WINDING)  # overlapping streaks: their union, once
    for b in range(BUCKETS + 1):
        lo, hi = paths.bounds[b], paths.bounds[b + 1]
        if hi == lo:
            continue
        append_polygons(ctx, paths.records[lo:hi])
        ctx.set_source_rgba(*paths.style.colours[b])
        ctx.fill()


def write_vector(path: str | Path, scene, size: tuple[int, int], dpi: float,
                 positions: np.ndarray, velocities: np.ndarray, neighbours: np.ndarray,
                 accent: np.ndarray, title: str = "", view=None) -> None:
    """The frame of `size` px as a PDF or SVG page of size·72/dpi points. Geometry is the
    raster frame's, with cairo's finest caps (a vector has no pixel grid to hide them)."""
    path = Path(path)
    points = 72.0 / dpi
    surface = SURFACES[path.suffix.lower()](str(path), size[0] * points, size[1] * points)
    if isinstance(surface, cairo.PDFSurface) and title:
        surface.set_metadata(cairo.PDF_METADATA_TITLE, title)
        surface.set_metadata(cairo.PDF_METADATA_CREATOR, "boids-render")
    ctx = cairo.Context(surface)
    ctx.scale(points, points)
    paint_vector(ctx, on_canvas(frame_paths(scene, size, positions, velocities, neighbours,
                                            accent, antialias=cairo.ANTIALIAS_DEFAULT,
                                            view=view), size))
    surface.finish()
