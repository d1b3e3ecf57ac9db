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


def page_points(size: tuple[int, int], dpi: float,
                paper: str | None = None) -> tuple[float, float]:
    """A page for a frame of `size` px at `dpi`: size·72/dpi points, or, for a sheet
    sized by --paper (`paper`, a PAPER_MM name), the paper's own size the frame's way up:
    its pixels are its millimetres rounded, and a page 0.03 pt off A4 is no A4 to a
    print shop's preflight."""
    if paper is None:
        return size[0] * 72.0 / dpi, size[1] * 72.0 / dpi
    from ..options import PAPER_MM

    short, long = sorted(side / 25.4 * 72.0 for side in PAPER_MM[paper])
    return (long, short) if size[0] > size[1] else (short, long)


def vector_page(path: str | Path, size: tuple[int, int], dpi: float, title: str,
                paper: str | None = None) -> tuple[cairo.Surface, cairo.Context]:
    """A PDF or SVG surface of `page_points`, its title set, and a context whose user
    space is the frame's pixels, scaled to the page each way: a --paper sheet's pixels
    are its millimetres rounded, so the two scales differ by up to half a pixel across
    the sheet (0.02% at 300 dpi), and the picture bleeds to every edge (one scale would
    leave a hairline of bare page along two of them)."""
    path = Path(path)
    width, height = page_points(size, dpi, paper)
    surface = SURFACES[path.suffix.lower()](str(path), width, height)
    if isinstance(surface, cairo.PDFSurface) and title:
        surface.set_metadata(cairo.PDF_METADATA_TITLE, title)
        surface.set_metadata(cairo.PDF_METADATA_CREATOR, "boids-render")
    ctx = cairo.Context(surface)
    ctx.scale(width / size[0], height / size[1])
    return surface, ctx


def write_vector(path: str | Path, scene, size: tuple[int, int], dpi: float,
                 positions: np.ndarray, velocities: np.ndarray, neighbours: np.ndarray,
                 accent: np.ndarray, title: str = "", view=None,
                 paper: str | None = None) -> None:
    """The frame of `size` px as a PDF or SVG page (`page_points`). Geometry is the
    raster frame's, with cairo's finest caps (a vector has no pixel grid to hide them)."""
    surface, ctx = vector_page(path, size, dpi, title, paper)
    paint_vector(ctx, on_canvas(frame_paths(scene, size, positions, velocities, neighbours,
                                            accent, antialias=cairo.ANTIALIAS_DEFAULT,
                                            view=view), size))
    surface.finish()
