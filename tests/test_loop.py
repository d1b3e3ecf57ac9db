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
    scene = SCENES / "murmuration.toml"
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
