"""2D neighbours as lists (topological, or metric through a blind cone) feed the same §3
rules: the kernel held to the all-pairs reference (tests/naive.py with the neighbour matrix
of tests/naive_neighbours.py) over 100 steps."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from naive import naive_integrate, naive_total_accel
from naive_neighbours import k_nearest_visible, squared_distances, visible
from reference_steps import reference_model
from render.errors import SceneError
from render.scene.load import build_scene, load_scene
from render.sim.simulate import Simulation

SCENES = Path(__file__).resolve().parents[1] / "scenes"

STEPS = 100


def scene2(neighbours, blind, **rules):
    return build_scene({"scene": {"seed": 4, "settle_steps": 0},
                        "world": {"width": 14.0, "height": 9.0, "boundary": "walls",
                                  "wall_margin": 2.0},
                        "flock": {"count": 90},
                        "rules": {"neighbours": neighbours, "blind_angle": blind,
                                  "separation_radius": 1.0, "falloff": "unit", **rules}},
                       "test.toml")


def mask_of(scene, pos, vel):
    fwd = vel / np.linalg.norm(vel, axis=1, keepdims=True)
    r = scene.rules
    if r.neighbours == "metric":
        return visible(pos, fwd, r.blind_angle) & \
            (squared_distances(pos) < r.perception_radius ** 2)
    idx, _, count = k_nearest_visible(pos, fwd, r.topological_count,
                                      blind_angle=r.blind_angle,
                                      max_range=r.max_range or math.inf)
    mask = np.zeros((len(pos), len(pos)), bool)
    for i in range(len(pos)):
        mask[i, idx[i, :count[i]]] = True
    return mask


def worst_difference(scene, steps=STEPS, flip=1.0):
    sim = Simulation(scene)
    pos, vel = sim.positions.copy(), sim.velocities.copy()
    worst = 0.0
    for k in range(steps):
        model = reference_model(scene, k * scene.scene.dt)
        model["w_coh"] *= flip
        acc, count = naive_total_accel(pos, vel, mask=mask_of(scene, pos, vel), **model)
        snap = sim.advance()
        assert np.array_equal(snap.neighbours, count), f"step {k}"
        pos, vel = naive_integrate(pos, vel, acc, dt=scene.scene.dt,
                                   min_speed=scene.flock.min_speed,
                                   max_speed=scene.flock.max_speed, width=scene.world.width,
                                   height=scene.world.height, boundary="walls")
        worst = max(worst, np.abs(sim.positions - pos).max(),
                    np.abs(sim.velocities - vel).max())
    return worst


@pytest.mark.parametrize("neighbours, blind", [("topological", 0.0), ("topological", 90.0),
                                               ("metric", 90.0)])
def test_listed_2d_neighbours_match_the_all_pairs_reference(neighbours, blind):
    assert worst_difference(scene2(neighbours, blind)) < 1e-9


def test_2d_topological_within_a_max_range_matches_the_reference():
    assert worst_difference(scene2("topological", 60.0, max_range=1.2), steps=40) < 1e-9


def test_a_wrong_2d_rule_fails_the_comparison():
    with pytest.raises(AssertionError):
        assert worst_difference(scene2("topological", 0.0), steps=20, flip=-1.0) < 1e-9


def test_the_metric_grid_search_is_still_used_without_a_blind_cone():
    assert Simulation(scene2("metric", 0.0))._listed is None


def test_listed_neighbours_need_an_open_world():
    with pytest.raises(SceneError, match="need an open world"):
        build_scene({"flock": {"count": 50}, "rules": {"neighbours": "topological"}},
                    "t.toml")


@pytest.mark.parametrize("sets, message", [
    # classic.toml wraps its world in the file: the setting just given is the one named.
    ([("rules.blind_angle", "90")], "--set rules.blind_angle: a blind cone needs an open "
     "world (world.boundary \"wrap\" here): expected 0, got 90.0"),
    ([("rules.neighbours", "topological")], "--set rules.neighbours: topological "
     "neighbours need an open world (world.boundary \"wrap\" here): expected \"metric\", "
     "got \"topological\""),
    ([("camera.follow", "centroid")], "--set camera.follow: a torus has no single centroid "
     "to follow (world.boundary \"wrap\"): expected \"none\", got \"centroid\""),
])
def test_a_wrapped_world_blames_the_setting_given_last(sets, message):
    with pytest.raises(SceneError) as caught:
        load_scene(SCENES / "classic.toml", [(k, v, "--set") for k, v in sets])
    assert caught.value.problems == [f"{message}"]


@pytest.mark.parametrize("sets, message", [
    ([("rules.neighbours", "topological"), ("rules.blind_angle", "90")],
     "topological neighbours and a blind cone (90.0°) need an open world: expected "
     "walls | none, got \"wrap\""),
    ([("camera.follow", "centroid")], "a torus has no single centroid for camera.follow = "
     "\"centroid\": expected walls | none, got \"wrap\""),
])
def test_a_world_wrapped_last_is_what_is_named(sets, message):
    sets = [(k, v, "scene file") for k, v in sets] + [("world.boundary", "wrap", "--set")]
    with pytest.raises(SceneError) as caught:
        load_scene(SCENES / "plate.toml", sets)
    assert caught.value.problems == [f"--set world.boundary: {message}"]


def test_a_setting_no_one_gave_is_named_as_the_default():
    with pytest.raises(SceneError) as caught:
        build_scene({"rules": {"neighbours": "topological"},
                     "world": {"boundary": "none", "width": 2.0, "height": 2.0}}, "t.toml")
    assert caught.value.problems == ["t.toml: rules.topological_count (the default): "
                                     "expected k below the flock size (4 birds), got 7"]


@pytest.mark.parametrize("flock, sets, message", [
    # the count just given is what is named, with the least that works
    ({}, [("flock.count", "5", "--set")], "--set flock.count: expected more birds than "
     "rules.topological_count (7), at least 8, got 5"),
    ({"count": 5}, [], "t.toml: flock.count: expected more birds than "
     "rules.topological_count (7), at least 8, got 5"),
    ({"spacing": 1.0}, [("flock.spacing", "7.0", "--set")], "--set flock.spacing: expected "
     "a spacing ≤ 5.657 (more birds than rules.topological_count, 7), got 7.0 (5 birds)"),
    # k given last is what is named
    ({"count": 5}, [("rules.topological_count", "6", "--set")],
     "--set rules.topological_count: expected k below the flock size (5 birds), got 6"),
])
def test_a_flock_no_larger_than_k_is_named_where_it_was_given_last(flock, sets, message):
    with pytest.raises(SceneError) as caught:
        build_scene({"flock": flock, "rules": {"neighbours": "topological"},
                     "world": {"boundary": "none", "width": 16.0, "height": 16.0}},
                    "t.toml", sets)
    assert caught.value.problems == [message]
