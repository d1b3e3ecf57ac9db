"""The fused step (render.sim.step) against the plain composition it replaces, bit for bit.

`Simulation.advance` does everything in one numba call. Here the same step is composed
from the separate pieces, as readable numpy: `Simulation.measure` (the neighbourhood and
steering kernels), the numpy forces of tests/numpy_forces.py, the field's turn and the
`integrate` kernel. Every state and every measure must be identical, not merely close:
the flock is chaotic, so one ulp anywhere becomes a different flock within a few hundred
steps, and the plate's tuned targets (test_plate.py) would move with it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numba
import numpy as np
import pytest

import numpy_forces
from render.scene import build_scene, load_scene
from render.sim.forces import attractor, containment, field, hawk, walls
from render.sim.motion import integrate
from render.sim.simulate import Simulation

SCENES = Path(__file__).resolve().parents[1] / "scenes"


def composed_extra_forces(sim, snap):
    """The optional forces in numpy, added in the documented order onto zeros."""
    scene, pos = sim.scene, snap.positions
    acc = np.zeros_like(pos)
    world = scene.world
    if world.boundary == "walls":
        acc += numpy_forces.walls(pos, world.width, world.height, world.wall_margin,
                                  world.wall_strength)
    if scene.attractor is not None:
        now = sim.forces_now().attractor
        acc += numpy_forces.attractor(pos, (now.x, now.y), scene.attractor.strength,
                                      scene.attractor.radius)
    if scene.containment is not None:
        c = sim.forces.containment
        acc += numpy_forces.containment(pos, (c.cx, c.cy), (c.a, c.b),
                                        scene.containment.strength)
    if snap.hawk is not None:
        acc += numpy_forces.hawk(pos, snap.hawk, scene.hawk.radius, scene.hawk.strength)
    return acc


def composed_step(sim):
    """One step of `sim` from the separate kernels; returns the Snapshot that was read."""
    scene = sim.scene
    snap, acc = sim.measure()
    acc = acc + composed_extra_forces(sim, snap)
    sim.positions, sim.velocities = integrate(sim.positions, sim.velocities, acc, sim.turns(),
                                              sim.world, sim.motion)
    sim.step_index += 1
    return snap


def assert_same_steps(scene, steps, setup=None):
    fused, composed = Simulation(scene), Simulation(scene)  # settled alike, by `advance`
    if setup is not None:
        setup(fused)
        setup(composed)
    for k in range(steps):
        a, b = fused.advance(), composed_step(composed)
        for field in ("positions", "velocities", "neighbours", "candidates", "nearest",
                      "inside"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field),
                                          err_msg=f"{field} differ at step {k}")
        assert a.hawk == b.hawk
    np.testing.assert_array_equal(fused.positions, composed.positions)
    np.testing.assert_array_equal(fused.velocities, composed.velocities)


@pytest.mark.parametrize("name", ["plate", "classic", "reynolds", "sliders"])
def test_fused_step_is_bit_identical_to_the_composed_step(name):
    # plate: open world, containment, hawk (out from t = 1 s), field;
    # classic: torus; reynolds: walls; sliders: walls and an attractor on a path.
    # The plate from its settled state: birds have strayed outside the ellipse.
    settle = "60" if name == "plate" else "0"
    scene = load_scene(SCENES / f"{name}.toml", [("scene.settle_steps", settle, "test")])
    assert_same_steps(scene, 100 if name == "plate" else 30)


def test_fused_step_matches_while_the_hawk_is_out():
    scene = load_scene(SCENES / "plate.toml", [("scene.settle_steps", "0", "test"),
                                                ("hawk.start", "0.0", "test")])
    sim = Simulation(scene)
    assert sim.hawk_position() is not None
    assert_same_steps(scene, 20)


@pytest.mark.parametrize("width, radius", [(5.0, 2.2), (4.0, 2.5), (7.5, 2.5)],
                         ids=["torus-2-cells", "torus-1-cell", "torus-3-cells"])
def test_fused_step_matches_on_a_narrow_torus(width, radius):
    raw = {"scene": {"settle_steps": 0, "seed": 2},
           "world": {"width": width, "height": width, "boundary": "wrap"},
           "flock": {"count": 40, "min_speed": 0.5, "max_speed": 2.0},
           "rules": {"perception_radius": radius, "separation_radius": 1.0,
                     "falloff": "inverse", "max_force": 1.5}}
    assert_same_steps(build_scene(raw), 20)


def test_fused_step_matches_with_far_stragglers_and_a_crowded_cell():
    # Open world: stragglers far outside share the clamped outermost cells; 600 birds in
    # one cell span several parallel work items and outgrow the scratch buffers.
    raw = {"scene": {"settle_steps": 0, "seed": 5},
           "world": {"width": 40.0, "height": 30.0, "boundary": "none"},
           "flock": {"count": 900}, "rules": {"perception_radius": 2.0}}

    def setup(sim):
        rng = np.random.default_rng(8)
        sim.positions[:600] = 20.0 + rng.random((600, 2)) * 1.5
        sim.positions[600:604] = [[-150.0, 8.0], [-149.0, 8.5], [400.0, 3.0], [401.5, 3.0]]

    assert_same_steps(build_scene(raw), 10, setup)


# ---------------------------------------------------------------------------------------
# Each force per bird (numba) against its numpy statement


def bird_by_bird(accel, params, pos):
    return np.array([accel(params, x, y)[:2] for x, y in pos])


@pytest.fixture
def scatter():
    """Positions in and around an 80 x 45 world, some exactly on special points."""
    rng = np.random.default_rng(12)
    pos = rng.uniform(-20.0, 100.0, (3000, 2))
    pos[:4] = [[40.0, 22.5], [0.0, 0.0], [80.0, 45.0], [30.0, 22.5]]
    return pos


def test_walls_per_bird_equal_numpy(scatter):
    want = numpy_forces.walls(scatter, 80.0, 45.0, 5.0, 50.0)
    got = bird_by_bird(walls.accel, walls.Walls(True, 80.0, 45.0, 5.0, 50.0), scatter)
    np.testing.assert_array_equal(got, want)


def test_attractor_per_bird_equals_numpy(scatter):
    want = numpy_forces.attractor(scatter, (30.0, 22.5), 10.0, 5.0)
    np.testing.assert_array_equal(
        bird_by_bird(attractor.accel, attractor.Attractor(True, 10.0, 5.0, 30.0, 22.5),
                     scatter), want)


def test_containment_per_bird_equals_numpy_at_and_near_the_rim(scatter):
    centre, axes = (40.0, 22.5), (30.8, 17.325)
    angle = np.linspace(0.0, 2 * np.pi, 400)
    rim = np.concatenate([np.column_stack([40.0 + f * 30.8 * np.cos(angle),
                                           22.5 + f * 17.325 * np.sin(angle)])
                          for f in (0.995, 1.0, 1.0 + 1e-12, 1.05)])
    pos = np.vstack([scatter, rim])
    want = numpy_forces.containment(pos, centre, axes, 40.0)
    params = containment.Containment(True, *centre, *axes, 40.0)
    got = np.array([containment.accel(params, x, y) for x, y in pos])
    np.testing.assert_array_equal(got[:, :2], want)
    inside = numpy_forces.ellipse_outside(pos, centre, axes)[0] == 0.0
    np.testing.assert_array_equal(got[:, 2].astype(bool), inside)
    np.testing.assert_array_equal(containment.inside(pos, params), inside)
    assert inside.any() and not inside.all()


def test_hawk_per_bird_equals_numpy_at_and_near_its_radius(scatter):
    angle = np.linspace(0.0, 2 * np.pi, 300)
    ring = np.concatenate([np.column_stack([30.0 + r * np.cos(angle), 20.0 + r * np.sin(angle)])
                           for r in (0.0, 13.3 * (1 - 1e-12), 13.3, 13.3 * 1.004)])
    pos = np.vstack([scatter, ring])
    want = numpy_forces.hawk(pos, (30.0, 20.0), 13.3, 160.0)
    params = hawk.Hawk(True, 13.3, 160.0, 0.0, 0.0, 30.0, 20.0)
    np.testing.assert_array_equal(bird_by_bird(hawk.accel, params, pos), want)


def test_field_per_bird_equals_numpy(scatter):
    waves, drifts, phases = (38.9, 35.1, 23.7), (3.29, 0.40, 1.22), (0.3, 5.9, 2.0)
    want = numpy_forces.field(scatter, 7.25, waves, drifts, np.array(phases))
    params = field.Field(True, *waves, *drifts, *phases, turn=1.0, time_s=7.25)
    got = field.turns(scatter, params)
    np.testing.assert_array_equal(got, want)
    assert math.isclose(np.abs(got).max(), 1.0, abs_tol=0.2)


def test_fused_step_is_identical_for_one_and_two_threads():
    # The plate (open world, containment, field) with the hawk out, from a settled
    # flock: thousands of birds, so every parallel loop splits across threads.
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has a single thread on this machine")
    scene = load_scene(SCENES / "plate.toml", [("hawk.start", "0.0", "test")])
    before = numba.get_num_threads()
    runs = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            sim = Simulation(scene)
            snaps = [sim.advance() for _ in range(20)]
            runs.append((sim.positions, sim.velocities, snaps[-1]))
    finally:
        numba.set_num_threads(before)
    (p1, v1, s1), (p2, v2, s2) = runs
    np.testing.assert_array_equal(p1, p2)
    np.testing.assert_array_equal(v1, v2)
    for field in ("neighbours", "candidates", "nearest", "inside"):
        np.testing.assert_array_equal(getattr(s1, field), getattr(s2, field))
