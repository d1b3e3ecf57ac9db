"""Degenerate but legal scenes: each runs a few frames with finite positions and
velocities (no NaN reaches the renderer) and renders."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import render.sim.simulate as simulate
from render.encode import Target
from render.pipeline import Diagnostics, render
from render.scene import build_scene
from render.sim.grid import grid_shape, max_cells
from render.sim.simulate import Simulation, frames
from render.sim.state import seed_flock

BASE = {
    "scene": {"seed": 5, "settle_steps": 3},
    "world": {"width": 80.0, "height": 45.0, "boundary": "wrap"},
    "flock": {"count": 40},
    "output": {"size": "64x36", "fps": 30, "frames": 4},
}
# Cases whose birds are all moved onto one point after seeding (no legal scene seeds
# birds exactly on top of each other, but the simulation must survive it).
COINCIDENT = {"two coincident birds", "coincident birds, unit separation",
              "coincident birds, walls and every force"}

CASES = {
    "one bird": {"flock": {"count": 1}},
    "two coincident birds": {"flock": {"count": 2}},
    "coincident birds, unit separation": {"flock": {"count": 5},
                                          "rules": {"falloff": "unit"}},
    "perception radius larger than the world": {
        "rules": {"perception_radius": 500.0, "separation_radius": 200.0}},
    "perception radius larger than an open world": {
        "world": {"boundary": "none"},
        "rules": {"perception_radius": 500.0, "separation_radius": 500.0}},
    "every bird in one grid cell": {
        "world": {"width": 3.0, "height": 2.0, "boundary": "none"},
        "rules": {"perception_radius": 10.0, "separation_radius": 1.0}},
    "perception radius tiny next to the world": {
        "rules": {"perception_radius": 1e-9, "separation_radius": 0.0}},
    "zero weights": {"rules": {"separation_weight": 0.0, "alignment_weight": 0.0,
                               "cohesion_weight": 0.0}},
    "speed range of a single value": {"flock": {"min_speed": 4.0, "max_speed": 4.0}},
    "speed range of zero": {"flock": {"min_speed": 0.0, "max_speed": 0.0}},
    "coincident birds, walls and every force": {
        "world": {"boundary": "walls"}, "flock": {"count": 3},
        "attractor": {}, "field": {}, "containment": {}, "hawk": {"start": 0.0}},
}
pytestmark = pytest.mark.usefixtures("one_numba_thread")


def scene_for(case: str):
    raw = {name: dict(body) for name, body in BASE.items()}
    for name, body in CASES[case].items():
        raw.setdefault(name, {}).update(body)
    return build_scene(raw, f"<{case}>")


@pytest.fixture
def case_scene(request, monkeypatch):
    """The scene of `case` (the test's parameter), its birds moved onto one point when the
    case asks for coincident birds."""
    case = request.node.callspec.params["case"]
    if case in COINCIDENT:
        def coincident(scene):
            init = seed_flock(scene)
            centre = np.array([scene.world.width, scene.world.height]) / 2
            return dataclasses.replace(init, positions=np.tile(centre, (scene.count, 1)))

        monkeypatch.setattr(simulate, "seed_flock", coincident)
    return scene_for(case)


@pytest.mark.parametrize("case", list(CASES))
def test_degenerate_scene_keeps_positions_and_velocities_finite(case, case_scene):
    scene = case_scene
    if case in COINCIDENT:  # no settling, so that frame 0 reads birds on one point
        scene = dataclasses.replace(scene, scene=dataclasses.replace(scene.scene,
                                                                     settle_steps=0))
    sim = Simulation(scene)
    if case in COINCIDENT:
        assert (sim.positions == sim.positions[0]).all()
    for frame in frames(sim, scene.output.fps, 6):
        assert np.isfinite(frame.positions).all(), frame.index
        assert np.isfinite(frame.velocities).all(), frame.index
        speed = np.hypot(*frame.snapshot.velocities.T)
        assert (speed <= scene.flock.max_speed * (1 + 1e-12)).all()
        assert (speed >= scene.flock.min_speed * (1 - 1e-12)).all()
        assert np.isfinite(frame.snapshot.neighbours).all()


@pytest.mark.parametrize("case", list(CASES))
def test_degenerate_scene_renders(case, case_scene, tmp_path):
    assert render(case_scene, Target.of(f"{tmp_path}/seq/", case_scene),
                  diagnostics=Diagnostics(stats=tmp_path / "stats.csv"), quiet=True) == 4
    assert len(list((tmp_path / "seq").glob("frame_*.png"))) == 4


def test_one_cell_case_really_is_one_cell():
    scene = scene_for("every bird in one grid cell")
    init = seed_flock(scene)
    shape = grid_shape(init.positions, scene.rules.perception_radius, 3.0, 2.0, False)
    assert (shape.nx, shape.ny) == (1, 1)


def test_tiny_perception_radius_keeps_the_grid_small():
    scene = scene_for("perception radius tiny next to the world")
    shape = grid_shape(seed_flock(scene).positions, 1e-9, 80.0, 45.0, True)
    assert shape.nx * shape.ny <= max_cells(scene.count)
    assert shape.cw >= 1e-9 and shape.ch >= 1e-9
