"""Each bird drawn as a short streak, density-weighted, grouped into a few paths (docs/model.md).

Birds fall into `BUCKETS` density buckets plus one accent bucket; each bucket is one path
composited once, so a frame costs six state changes, not one per bird.

A streak is a round-capped line, drawn as its filled outline (a rectangle with a polygon
for each cap) rather than stroked: numpy builds every outline at once, the whole path
reaches cairo in one call (see `paths`), and cairo's stroker is not needed. Frames are
drawn in two halves, `frame_paths` (numpy) and `fill_frame` (cairo); timings and the
comparison with the stroked drawing are in benchmarks/draw_bench.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cairo
import numpy as np

from ..scene import Scene
from .paths import append_polygons, polygon_records
from .camera import View, view_matrix
from .surface import Canvas

BUCKETS = 5
DT_REF = 1 / 60  # streak lengths are in units of the distance flown in one 60 Hz step

# cairo's 4x4-supersampling rasteriser takes half the time of its default 15x256 grid
# (benchmarks/draw_bench.py), and differs from it only at streak edges: against a 4x
# supersampled frame, 1080p ink pixels are off by 7/255 on average instead of 0.4/255,
# total ink is unchanged, and a lone thin streak's ink varies by ~5% with its sub-pixel
# position (0.2% on the fine grid). Stills that can wait pass ANTIALIAS_DEFAULT instead.
ANTIALIAS = cairo.ANTIALIAS_FAST
# How far a cap polygon may stray from the true semicircle, in pixels: the 4x4 grid's
# sample spacing (nearer than that is invisible through it), else cairo's own tolerance.
CAP_TOLERANCE_PX = {cairo.ANTIALIAS_FAST: 0.25}
FINE_CAP_TOLERANCE_PX = 0.1


@dataclass(frozen=True)
class Style:
    """Per-bucket stroke widths (world units) and colours (r, g, b, a), accent last;
    background None for a transparent frame."""

    background: tuple[float, float, float] | None
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
    background = None if scene.output.transparent else colours["background"]
    return Style(background, tuple(widths), tuple(ink), r.tail, r.head, r.density_count)


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


def to_pixels(matrix: cairo.Matrix, points: np.ndarray) -> np.ndarray:
    """(n, 2) world points through the world→pixel matrix."""
    x, y = points[:, 0], points[:, 1]
    return np.column_stack([matrix.xx * x + matrix.xy * y + matrix.x0,
                            matrix.yx * x + matrix.yy * y + matrix.y0])


def cap_sides(radius_px: float, tolerance_px: float) -> int:
    """Sides of the polygon standing in for each semicircular cap of a streak of this
    radius (pixels): the fewest, ≥ 3, that keep it within `tolerance_px` of the circle."""
    sides = 3
    while (cap_scale(sides) - 1.0) * radius_px > tolerance_px and sides < 64:
        sides += 1
    return sides


def cap_scale(sides: int) -> float:
    """Radius, relative to the streak's, of a cap polygon's inner vertices so the polygon
    has the semicircle's area (an inscribed polygon would thin every streak's ends).

    The fan of `sides` triangles from the cap's centre, the two outer vertices at radius 1
    and the inner ones at s, has area sin(π/sides)·(2s + (sides − 2)s²)/2 = π/2."""
    k = sides - 2
    return (math.sqrt(1.0 + k * math.pi / math.sin(math.pi / sides)) - 1.0) / k


def outline_polygons(start: np.ndarray, end: np.ndarray, radius: np.ndarray, sides: int,
                     out: np.ndarray) -> None:
    """Write each streak's round-capped outline into `out` (n, 2·(sides + 1), 2).

    start, end: (n, 2) C-contiguous end points; radius: (n,) half widths, in the same unit.
    The polygon runs around the head cap (from one side of the streak, over the tip, to the
    other), then around the tail cap: every outline turns the same way, so overlapping
    streaks add up under the non-zero fill rule instead of cancelling. A zero-length streak
    gets a round dot, as a round-capped stroke does.
    """
    # Points as complex numbers x + iy: a cap vertex is the cap's centre plus the streak's
    # radius·heading turned by the vertex's angle, which is one complex multiplication.
    tail, head = start.view(np.complex128)[:, 0], end.view(np.complex128)[:, 0]
    d = head - tail
    length = np.abs(d)
    moving = length > 0
    heading = d * (radius / np.where(moving, length, 1.0))  # radius long
    if not moving.all():
        heading[~moving] = radius[~moving]
    angle = np.linspace(-0.5 * np.pi, 0.5 * np.pi, sides + 1)
    reach = np.full(sides + 1, cap_scale(sides))
    reach[[0, -1]] = 1.0
    offsets = heading[:, None] * (reach * np.exp(1j * angle))  # (n, sides + 1)
    vertices = out.view(np.complex128)[..., 0]
    vertices[:, :sides + 1] = head[:, None] + offsets
    vertices[:, sides + 1:] = tail[:, None] - offsets


@dataclass(frozen=True)
class FramePaths:
    """One frame's streaks, ready for cairo: the path records (see `paths`) of every
    streak's outline in pixels, grouped by bucket (bucket b's path is
    records[bounds[b]:bounds[b + 1]]), the style that colours them, and a box around each
    outline, (n, 4) x_min, y_min, x_max, y_max px (see `outline_boxes`)."""

    records: np.ndarray
    bounds: np.ndarray
    style: Style
    boxes: np.ndarray


def frame_paths(scene: Scene, size: tuple[int, int], positions: np.ndarray,
                velocities: np.ndarray, neighbours: np.ndarray, accent: np.ndarray, *,
                antialias: cairo.Antialias = ANTIALIAS, view: View | None = None) -> FramePaths:
    """The numpy half of drawing a frame of `size` (w, h) px showing `view` (None: the
    whole world): every streak's outline, its caps as fine as `antialias` will show."""
    world = scene.world
    matrix = view_matrix(scene, size, view)
    px_per_unit = math.hypot(matrix.xx, matrix.yx)  # the view may be rotated
    style = style_for(scene, px_per_unit)
    start, end = segments(positions, velocities, style.tail, style.head)
    group = buckets(neighbours, accent, style.density_count)
    if world.boundary == "wrap":
        start, end, group = wrapped_copies(start, end, group, world.width, world.height)
    # Bucket order, so each bucket's path is one contiguous slice of records; pixels, so
    # cairo need not transform every vertex (the world→pixel scale is uniform).
    # One byte a key: numpy's stable sort then takes its radix sort (12 µs, not 68).
    order = np.argsort(group.astype(np.int8), kind="stable")
    bounds = np.searchsorted(group[order], np.arange(BUCKETS + 2))
    half_widths_px = 0.5 * px_per_unit * np.asarray(style.widths)
    sides = cap_sides(half_widths_px.max(),
                      CAP_TOLERANCE_PX.get(antialias, FINE_CAP_TOLERANCE_PX))
    records, points = polygon_records(len(order), 2 * (sides + 1))
    tails, heads = to_pixels(matrix, start[order]), to_pixels(matrix, end[order])
    radii = half_widths_px[group[order]]
    outline_polygons(tails, heads, radii, sides, out=points)
    return FramePaths(records, bounds, style,
                      outline_boxes(tails, heads, radii * max(1.0, cap_scale(sides))))


def outline_boxes(start: np.ndarray, end: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """(n, 4) x_min, y_min, x_max, y_max around each streak's outline: its end points
    widened by `reach`, the farthest any cap vertex lies from them. Slightly larger than
    the outline, which is all cropping needs (a streak kept that shows nowhere colours
    nothing), and a tenth of the time of the vertices' own extremes."""
    reach = reach[:, None]
    return np.concatenate([np.minimum(start, end) - reach, np.maximum(start, end) + reach],
                          axis=1)


def crop_paths(paths: FramePaths, *, x=(-math.inf, math.inf),
               y=(-math.inf, math.inf)) -> FramePaths:
    """The streaks whose boxes reach into the window x × y (px, closed intervals): no other
    streak can colour a pixel of it."""
    boxes = paths.boxes
    inside = ((boxes[:, 2] >= x[0]) & (boxes[:, 0] <= x[1]) &
              (boxes[:, 3] >= y[0]) & (boxes[:, 1] <= y[1]))
    if inside.all():  # the usual frame of a clip: nothing to copy
        return paths
    keep = np.flatnonzero(inside)
    return FramePaths(paths.records[keep], np.searchsorted(keep, paths.bounds),
                      paths.style, boxes[keep])


def fill_frame(canvas: Canvas, paths: FramePaths, *,
               antialias: cairo.Antialias = ANTIALIAS,
               origin: tuple[int, int] = (0, 0)) -> np.ndarray:
    """The cairo half: background, then each bucket's streaks. Returns the canvas's pixels
    (h, w, 4) BGRA uint8, contiguous: ready for the encoder as they are. `origin`: the
    frame pixel at the canvas's top-left (a tile of a larger frame)."""
    ctx = canvas.context()
    ctx.translate(-origin[0], -origin[1])  # whole pixels: tiles rasterise as the frame
    ctx.set_antialias(antialias)
    if paths.style.background is None:
        ctx.set_operator(cairo.OPERATOR_CLEAR)
    else:
        ctx.set_source_rgb(*paths.style.background)
    ctx.paint()
    # Non-zero winding (cairo's default): where streaks of one bucket overlap, their union
    # is drawn once, as one stroke of them would be; even-odd would punch holes there.
    ctx.set_fill_rule(cairo.FILL_RULE_WINDING)
    # A fill in a translucent colour goes through pixman once per run of covered pixels
    # in every row (tens of thousands of calls a frame). SOURCE with the opaque colour,
    # the streaks as the clip and the opacity as a uniform mask gives the same pixels,
    # dst·(1 − α·coverage) + colour·α·coverage, and cairo blends it in place in one pass.
    ctx.set_operator(cairo.OPERATOR_SOURCE)
    for b in range(BUCKETS + 1):
        lo, hi = paths.bounds[b], paths.bounds[b + 1]
        if hi == lo:
            continue
        append_polygons(ctx, paths.records[lo:hi])
        ctx.clip()
        *rgb, alpha = paths.style.colours[b]
        ctx.set_source_rgb(*rgb)
        ctx.paint_with_alpha(alpha)
        ctx.reset_clip()
    return canvas.flush()


def draw_frame(canvas: Canvas, scene: Scene, positions: np.ndarray, velocities: np.ndarray,
               neighbours: np.ndarray, accent: np.ndarray, *,
               antialias: cairo.Antialias = ANTIALIAS, view: View | None = None) -> np.ndarray:
    """Draw one frame onto `canvas`; returns its pixels (h, w, 4) BGRA uint8, contiguous.

    positions, velocities: (n, 2) world units and world units/s; neighbours: (n,) counts;
    accent: (n,) bool. `antialias`: cairo.ANTIALIAS_DEFAULT gives cairo's finest edges
    (about twice the time), for stills where time does not matter. `view`: the camera's
    (see `camera.view_at`); None shows the whole world.
    """
    paths = frame_paths(scene, canvas.size, positions, velocities, neighbours, accent,
                        antialias=antialias, view=view)
    return fill_frame(canvas, on_canvas(paths, canvas.size), antialias=antialias)


def on_canvas(paths: FramePaths, size: tuple[int, int]) -> FramePaths:
    """The streaks that reach a frame of `size` (w, h) px. The rest colour none of it, and
    far off it cairo's 24.8 fixed-point coordinates wrap around (past 2²³ px) and would
    draw them as ghosts on it."""
    width, height = size
    return crop_paths(paths, x=(-1, width + 1), y=(-1, height + 1))


def draw_exposure(canvas: Canvas, scene: Scene, exposure, neighbours: np.ndarray,
                  accent: np.ndarray, *, view: View | None = None) -> np.ndarray:
    """Motion blur: the frame drawn at each sub-frame state of `exposure` ((positions,
    velocities) pairs) and averaged in integers before quantising, exactly and the same
    on every run. Returns the canvas's pixels, as draw_frame does."""
    total = np.zeros(canvas.pixels.shape, np.uint32)
    for positions, velocities in exposure:
        total += draw_frame(canvas, scene, positions, velocities, neighbours, accent,
                            view=view)
    n = len(exposure)
    canvas.pixels[...] = (total + n // 2) // n
    return canvas.flush()
