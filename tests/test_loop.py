"""Seamless loops: the last frame flows into the first, without a ghosted double flock."""

from __future__ import annotations

import numpy as np
import pytest

from test_still import pixels

LOOP = ("--size", "240x136", "--fps", "30", "--frames", "45", "--quiet",
        "--set", "flock.count=600", "--set", "scene.settle_steps=120")


@pytest.fixture(scope="module")
def renders(tmp_path_factory):
    """A 45-frame loop with a 0.5 s crossfade, and the plain clip 15 frames longer."""
    from render.cli import main
    from conftest import SCENES

    tmp = tmp_path_factory.mktemp("loop")
    scene = SCENES / "plate.toml"
    assert main([str(scene), "-o", f"{tmp}/loop/", "--loop", "--crossfade", "0.5",
                 *LOOP]) == 0
    long = [a if a != "45" else "60" for a in LOOP]
    assert main([str(scene), "-o", f"{tmp}/plain/", *long]) == 0
    load = lambda d: [pixels(p) for p in sorted((tmp / d).glob("*.png"))]  # noqa: E731
    return load("loop"), load("plain")


def test_the_loop_starts_where_the_clip_would_go_on(renders):
    loop, plain = renders
    assert len(loop) == 45
    assert np.array_equal(loop[0], plain[45]), "frame 0 is the frame after the last"
    for i in range(15, 45):  # after the crossfade, the clip itself
        assert np.array_equal(loop[i], plain[i])


def test_no_seam_and_no_jump_anywhere_in_the_loop(renders):
    loop, _ = renders
    cycle = loop + loop[:1]
    steps = [np.abs(b - a).mean() for a, b in zip(cycle, cycle[1:])]
    median = np.median(steps)
    assert steps[-1] <= 1.5 * median, "last → first"
    assert max(steps) <= 1.5 * median, "every consecutive pair"


def test_no_ghosted_double_flock_during_the_crossfade(renders):
    loop, _ = renders
    background = loop[-1][0, 0]
    coverage = [(np.abs(f - background).max(axis=2) > 24).mean() for f in loop]
    median = np.median(coverage)
    assert all(abs(c / median - 1) <= 0.15 for c in coverage[:15])


def test_loops_refuse_what_they_cannot_do(cli, small_scene, tmp_path):
    assert cli(small_scene, "-o", f"{tmp_path}/a/", "--loop", "--crossfade", "5").code == 2
    assert cli(small_scene, "-o", f"{tmp_path}/b/", "--loop", "--frames", "5:20").code == 2
    assert cli(small_scene, "-o", f"{tmp_path}/c/", "--loop", "--motion-blur", "4").code == 2


def _frame(*black):
    """A 2x2 white BGRA frame with these pixels (0–3, row-major) black."""
    frame = np.full((2, 2, 4), 255, np.uint8)
    for i in black:
        frame[divmod(i, 2)][:3] = 0
    return frame


def test_seam_meter_from_hand_worked_frames():
    from render.loop import SeamMeter

    meter = SeamMeter(None, crossfade=1)
    for frame in (_frame(0), _frame(0, 1), _frame(1)):
        meter.add(frame)
    m = meter.measures()
    # Last→first: two pixels of four differ by 255 in each colour; each step one pixel.
    assert (m["seam"], m["median_step"], m["max_step"]) == (127.5, 63.75, 63.75)
    # Ink covers a quarter of the morph's one frame and of the median frame.
    assert (m["coverage_low"], m["coverage_high"]) == (0.0, 0.0)
    assert meter.report() == ("loop seam: last→first 127.50, consecutive frames median 63.75 "
                              "(×2.00), max 63.75; ink coverage during the morph +0% to +0% "
                              "of the median")


def test_seam_meter_without_ink_reports_no_coverage():
    # Frames too small to show a bird (a 1x1 loop): nothing to divide the coverage by.
    from render.loop import SeamMeter

    meter = SeamMeter(None, crossfade=1)
    for _ in range(3):
        meter.add(_frame())
    assert np.isnan(meter.measures()["coverage_low"])
    assert meter.report().endswith("max 0.00; no ink in the median frame")
