"""The fast drawing against the stroked reference (tests/naive_draw.py), and its parts:
filled outlines, the bulk path hand-off to cairo, determinism."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import cairo
import numpy as np
import pytest

from naive_draw import stroked_frame
from render.draw import streaks
from render.draw.paths import append_polygons, append_polygons_slowly, polygon_records
from render.draw.streaks import (cap_scale, cap_sides, draw_frame, fill_frame, frame_paths,
                                 outline_polygons)
from render.draw.surface import Canvas
from render.scene import load_scene
from render.sim.simulate import Simulation, frames

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def settled():
    """The plate 2 s after settling (the plate's neighbour counts): scene and state."""
    scene = load_scene(ROOT / "scenes" / "plate.toml")
    sim = Simulation(scene)
    for frame in frames(sim, scene.output.fps, 121):
        pass
    return scene, frame.positions, frame.velocities, frame.snapshot.neighbours, sim.accent


def rgb(pixels):
    return pixels[:, :, 2::-1].astype(int)


def mean_abs_difference(a, b) -> float:
    """Over RGB, 0–255."""
    return float(np.abs(rgb(a) - rgb(b)).mean())


# Quarter-HD previews are the small size: at 320x180 (1-px streaks, every inked pixel an
# edge pixel) the 4x4 anti-aliasing grid alone differs by 2.4/255, close to the bound.
@pytest.mark.parametrize("size", [(1920, 1080), (480, 270)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_settled_frame_matches_the_stroked_reference_within_one_percent(settled, size):
    reference = stroked_frame(Canvas(size), *settled).copy()
    drawn = draw_frame(Canvas(size), *settled)
    assert mean_abs_difference(drawn, reference) <= 0.01 * 255
    # Same ink overall: anti-aliasing moves coverage between pixels, it must not add or lose.
    background = rgb(reference)[0, 0]
    ink = lambda px: np.abs(rgb(px) - background).sum()  # noqa: E731
    assert ink(drawn) == pytest.approx(ink(reference), rel=0.02)


@pytest.mark.parametrize("size", [(1920, 1080), (480, 270)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_filled_outlines_match_round_capped_strokes_at_equal_antialiasing(settled, size):
    # With cairo's own anti-aliasing on both sides only the geometry differs: the outline
    # polygons stand in for round caps to within a fraction of a pixel.
    reference = stroked_frame(Canvas(size), *settled).copy()
    drawn = draw_frame(Canvas(size), *settled, antialias=cairo.ANTIALIAS_DEFAULT)
    assert mean_abs_difference(drawn, reference) <= 0.25


def test_same_frame_gives_byte_identical_pixels(settled):
    canvas = Canvas((480, 270))
    first = draw_frame(canvas, *settled).copy()
    draw_frame(canvas, settled[0], settled[1][::-1], settled[2][::-1], settled[3][::-1],
               settled[4][::-1])  # something else in between, on the same canvas
    assert np.array_equal(draw_frame(canvas, *settled), first)
    assert np.array_equal(draw_frame(Canvas((480, 270)), *settled), first)


def test_paths_appended_in_bulk_draw_exactly_what_point_by_point_calls_draw(settled,
                                                                            monkeypatch):
    size = (480, 270)
    paths = frame_paths(settled[0], size, *settled[1:])
    bulk = fill_frame(Canvas(size), paths).copy()
    monkeypatch.setattr(streaks, "append_polygons", append_polygons_slowly)
    assert np.array_equal(fill_frame(Canvas(size), paths), bulk)


def test_bulk_path_matches_cairos_own_record_of_it():
    records, points = polygon_records(2, 3)
    points[:] = [[[0, 0], [4, 0], [4, 3]], [[1, 1], [2, 1], [2, 2]]]
    ctx = cairo.Context(cairo.ImageSurface(cairo.FORMAT_A8, 8, 8))
    append_polygons(ctx, records)
    move, line = cairo.PATH_MOVE_TO, cairo.PATH_LINE_TO
    assert list(ctx.copy_path()) == [
        (move, (0, 0)), (line, (4, 0)), (line, (4, 3)),
        (move, (1, 1)), (line, (2, 1)), (line, (2, 2))]


def test_bad_path_records_raise_instead_of_drawing_garbage():
    records, points = polygon_records(1, 3)
    records.view(np.int32)[0, 0, 0] = 7  # the first header's type: no such type
    ctx = cairo.Context(cairo.ImageSurface(cairo.FORMAT_A8, 8, 8))
    with pytest.raises(cairo.Error):
        append_polygons(ctx, records)


def shoelace(polygons):
    """Signed areas of (n, k, 2) polygons."""
    x, y = polygons[..., 0], polygons[..., 1]
    return 0.5 * (x * np.roll(y, -1, axis=1) - np.roll(x, -1, axis=1) * y).sum(axis=1)


def outlines(start, end, radius, sides):
    records, points = polygon_records(len(start), 2 * (sides + 1))
    outline_polygons(np.ascontiguousarray(start, float), np.ascontiguousarray(end, float),
                     np.asarray(radius, float), sides, out=points)
    return points


@pytest.mark.parametrize("sides", [3, 4, 7])
def test_outline_has_the_area_of_a_round_capped_stroke_and_turns_one_way(sides):
    rng = np.random.default_rng(1)
    start = rng.uniform(0, 50, (200, 2))
    end = start + rng.normal(0, 5, (200, 2))
    radius = rng.uniform(0.5, 3, 200)
    area = shoelace(outlines(start, end, radius, sides))
    length = np.hypot(*(end - start).T)
    assert np.allclose(np.abs(area), 2 * radius * length + math.pi * radius**2)
    assert (np.sign(area) == np.sign(area[0])).all(), "overlaps must add, not cancel"


def test_zero_length_streak_is_a_round_dot():
    dot = outlines([[5.0, 5.0]], [[5.0, 5.0]], [2.0], 5)[0]
    distance = np.hypot(*(dot - 5.0).T)
    assert distance.min() >= 2.0 - 1e-12 and distance.max() <= 2.0 * cap_scale(5)
    assert abs(shoelace(dot[None])[0]) == pytest.approx(math.pi * 4.0)


@pytest.mark.parametrize("tolerance", [0.1, 0.25])
def test_caps_get_more_sides_as_streaks_get_wider_and_stay_near_the_circle(tolerance):
    radii = [0.5, 1.5, 3.0, 6.0, 24.0]
    sides = [cap_sides(r, tolerance) for r in radii]
    assert sides == sorted(sides) and sides[0] == 3 and sides[-1] > sides[1]
    for r, n in zip(radii, sides):
        if n > 3:
            assert (cap_scale(n) - 1) * r <= tolerance


def test_benchmarks_matplotlib_contender_draws_the_same_picture(settled, monkeypatch):
    # The benchmark's speed-up over matplotlib means something only if both draw one frame.
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # its sibling modules
    path = ROOT / "benchmarks" / "draw_bench.py"
    spec = importlib.util.spec_from_file_location("draw_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    size = (480, 270)
    frame = bench.FlockFrame(*settled)
    theirs = bench.matplotlib_drawing(frame, size)()
    reference = stroked_frame(Canvas(size), *settled)
    assert np.abs(theirs.astype(int) - rgb(reference)).mean() <= 0.01 * 255


@pytest.mark.parametrize("size", [(1920, 1080), (480, 270)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_each_outline_lies_in_its_box_and_the_box_is_barely_larger(settled, size):
    paths = frame_paths(*settled[:1], size, *settled[1:])
    points = paths.records.reshape(len(paths.records), -1, 2, 2)[:, :, 1, :]
    low, high = points.min(axis=1), points.max(axis=1)
    box_low, box_high = paths.boxes[:, :2], paths.boxes[:, 2:]
    assert (box_low <= low + 1e-9).all() and (box_high >= high - 1e-9).all()
    # Past the outline by at most the widest streak's radius times the caps' reach.
    widest = 0.5 * max(paths.style.widths) * size[0] / settled[0].world.width * 1.2
    assert max((low - box_low).max(), (box_high - high).max()) <= widest
    # Cropped to a window: exactly the streaks whose boxes reach into it, in bucket order.
    window = dict(x=(size[0] / 3, size[0] / 2), y=(size[1] / 3, size[1] / 2))
    cropped = streaks.crop_paths(paths, **window)
    reach = ((box_high[:, 0] >= window["x"][0]) & (box_low[:, 0] <= window["x"][1]) &
             (box_high[:, 1] >= window["y"][0]) & (box_low[:, 1] <= window["y"][1]))
    assert 0 < len(cropped.records) == reach.sum() < len(paths.records)
    assert np.array_equal(cropped.records, paths.records[reach])
    assert np.array_equal(np.diff(cropped.bounds), [reach[lo:hi].sum() for lo, hi in
                                                     zip(paths.bounds, paths.bounds[1:])])
