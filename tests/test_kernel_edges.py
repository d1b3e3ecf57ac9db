"""The numba step against the all-pairs reference (tests/naive.py) at the edges: across a
torus's seam, in degenerate states (coincident birds, one crowded cell, birds at rest), in
the grid's economy; and its determinism (bird identity, reruns, thread counts)."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from naive import naive_integrate, naive_rules, naive_step
from reference_steps import (TOL, assert_matches_reference, kernel_sums, make_scene,
                             reference_model, simulation_at)
from render.scene import build_scene
from render.sim.diagnostics import local_headings
from render.sim.grid import counting_sort, grid_shape
from render.sim.motion import Motion, World, integrate
from render.sim.simulate import Simulation

# ---------------------------------------------------------------------------------------
# Torus seam, grid economy, degenerate states


def test_wrap_neighbours_across_the_seam():
    width, height = 20.0, 16.0
    pos = np.array([[0.1, 8.0], [width - 0.1, 8.0]])
    vel = np.array([[0.0, 1.0], [0.0, 1.0]])
    sums = kernel_sums(pos, vel, width=width, height=height, wrap=True, radius=2.5,
                       sep_radius=1.0, falloff="unit")
    ref = naive_rules(pos, vel, width=width, height=height, boundary="wrap", radius=2.5,
                      sep_radius=1.0, falloff="unit", alignment="mean")
    for counts in (sums["count"], ref["count"]):
        np.testing.assert_array_equal(counts, [1, 1])
    np.testing.assert_allclose(sums["nn"], [0.2, 0.2], rtol=1e-12)
    np.testing.assert_allclose(ref["nearest"], [0.2, 0.2], rtol=1e-12)
    # The bird at x = 0.1 is pushed toward +x (away from its neighbour across the seam),
    # the one at x = W − 0.1 toward −x.
    for sep in (sums["sep"], ref["sep"]):
        np.testing.assert_allclose(sep, [[1.0, 0.0], [-1.0, 0.0]], atol=1e-12)
    np.testing.assert_allclose(sums["offsum"], [[-0.2, 0.0], [0.2, 0.0]], atol=1e-12)
    np.testing.assert_allclose(ref["coh"], [[-0.2, 0.0], [0.2, 0.0]], atol=1e-12)

    scene = make_scene(count=2, width=width, height=height, radius=2.5, sep_radius=1.0,
                       weights=(1.0, 0.0, 0.0), speeds=(0.0, 10.0))
    sim = simulation_at(scene, pos, vel)
    _, acc = sim.measure()
    np.testing.assert_allclose(acc, [[1.0, 0.0], [-1.0, 0.0]], atol=1e-12)
    assert_matches_reference(sim, 5)


def test_grid_tests_a_few_times_the_neighbours_never_all_pairs():
    # The plate: 3,600 birds at spacing 1 in 80 x 45, r = 2.15. A uniform scatter has about
    # 14.5 neighbours; the 3x3 block of side-r cells holds 9/π ≈ 2.9 times the disc's area.
    raw = {"scene": {"settle_steps": 0}, "world": {"width": 80.0, "height": 45.0,
                                                  "boundary": "none"},
           "flock": {"spacing": 1.0}, "rules": {"perception_radius": 2.15}}
    sim = Simulation(build_scene(raw))
    assert len(sim.positions) == 3600
    snap, _ = sim.measure()
    candidates = snap.candidates.mean()
    neighbours = snap.neighbours.mean()
    assert 12 < neighbours < 15.5
    assert candidates < 50  # against 3,599 for all pairs
    assert 2.6 < candidates / neighbours < 3.1
    assert snap.candidates.max() < 120


@pytest.mark.parametrize("falloff", ["unit", "inverse", "inverse_square"])
def test_two_coincident_birds_produce_no_nan(falloff):
    pos = np.array([[5.0, 5.0], [5.0, 5.0], [5.3, 5.0]])
    vel = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    scene = make_scene(count=3, width=10.0, height=10.0, radius=1.0, sep_radius=1.0,
                       falloff=falloff)
    sim = simulation_at(scene, pos, vel)
    snap, acc = sim.measure()
    assert np.isfinite(acc).all()
    np.testing.assert_array_equal(snap.neighbours, [2, 2, 2])
    # The coincident pair pushes nothing on each other: only bird 2 pushes them (−x).
    ref = naive_rules(pos, vel, width=10.0, height=10.0, boundary="wrap", radius=1.0,
                      sep_radius=1.0, falloff=falloff, alignment="mean")
    assert np.isfinite(ref["sep"]).all()
    assert ref["sep"][0, 1] == 0.0 and ref["sep"][0, 0] < 0.0
    assert_matches_reference(sim, 10)
    assert np.isfinite(sim.positions).all() and np.isfinite(sim.velocities).all()


@pytest.mark.parametrize("boundary", ["wrap", "none"])
def test_whole_flock_in_one_cell_produces_no_nan(boundary):
    rng = np.random.default_rng(7)
    n = 50
    pos = 5.0 + rng.random((n, 2)) * 0.3
    pos[10:20] = pos[0]  # and some exactly coincident
    vel = rng.normal(size=(n, 2))
    scene = make_scene(count=n, width=10.0, height=10.0, boundary=boundary, radius=1.0,
                       sep_radius=1.0, falloff="inverse_square", alignment="difference",
                       max_force=50.0)
    sim = simulation_at(scene, pos, vel)
    snap, acc = sim.measure()
    np.testing.assert_array_equal(snap.neighbours, n - 1)
    np.testing.assert_array_equal(snap.candidates, n - 1)
    assert np.isfinite(acc).all()
    assert_matches_reference(sim, 10)
    assert np.isfinite(sim.positions).all() and np.isfinite(sim.velocities).all()


def test_zero_speed_birds_produce_no_nan():
    # Clustered birds at rest: headings, local polarisation and the step stay finite.
    rng = np.random.default_rng(11)
    pos = 5.0 + rng.random((20, 2))
    vel = np.zeros((20, 2))
    scene = make_scene(count=20, width=10.0, height=10.0, radius=1.5, sep_radius=1.0,
                       falloff="inverse", alignment="difference", speeds=(1.0, 2.0))
    sim = simulation_at(scene, pos, vel)
    snap, acc = sim.measure()
    assert np.isfinite(acc).all() and np.isfinite(local_headings(snap, scene)).all()
    assert_matches_reference(sim, 5)
    assert np.isfinite(sim.positions).all() and np.isfinite(sim.velocities).all()


def test_isolated_bird_at_rest_takes_min_speed_along_x():
    pos = np.array([[1.0, 1.0], [8.0, 8.0]])
    vel = np.zeros((2, 2))
    scene = make_scene(count=2, width=10.0, height=10.0, boundary="none", radius=1.0,
                       sep_radius=1.0, speeds=(1.5, 2.0))
    sim = simulation_at(scene, pos, vel)
    sim.advance()
    np.testing.assert_array_equal(sim.velocities, [[1.5, 0.0], [1.5, 0.0]])
    ref_pos, ref_vel = naive_step(pos, vel, dt=scene.scene.dt, min_speed=1.5, max_speed=2.0,
                                  **reference_model(scene, 0.0))
    np.testing.assert_array_equal(ref_vel, sim.velocities)
    np.testing.assert_allclose(sim.positions, ref_pos, atol=TOL)


def test_speed_clamp_keeps_every_speed_within_limits():
    rng = np.random.default_rng(5)
    n = 120
    scene = make_scene(count=n, speeds=(1.0, 2.0), falloff="inverse_square",
                       weights=(20.0, 5.0, 5.0))
    vel = rng.normal(scale=3.0, size=(n, 2))  # many outside [1, 2] to start with
    vel[:5] *= 1e-3
    sim = simulation_at(scene, Simulation(scene).positions, vel)
    for _ in range(3):
        sim.advance()
        speed = np.hypot(sim.velocities[:, 0], sim.velocities[:, 1])
        assert speed.min() >= 1.0 * (1 - 1e-12)
        assert speed.max() <= 2.0 * (1 + 1e-12)


def test_integrate_clamps_speed_then_turns_and_wraps():
    rng = np.random.default_rng(9)
    n = 200
    width, height = 10.0, 8.0
    pos = rng.random((n, 2)) * [width, height]
    pos[:4] = [[0.001, 4.0], [9.999, 4.0], [5.0, 0.001], [5.0, 7.999]]  # about to cross
    vel = rng.normal(scale=2.0, size=(n, 2))
    vel[:4] = [[-1.5, 0.0], [1.5, 0.0], [0.0, -1.5], [0.0, 1.5]]
    acc = rng.normal(scale=30.0, size=(n, 2))
    acc[:4] = 0.0
    vel[4:6] = acc[4:6] = 0.0  # at rest: takes (min_speed, 0), then bird 5 turns
    turn = rng.uniform(-0.05, 0.05, n)
    turn[::3] = 0.0
    turn[4], turn[5] = 0.0, 0.5
    dt = 1 / 60
    kernel_pos, kernel_vel = integrate(pos, vel, acc, turn, World(True, width, height),
                                       Motion(dt, 1.0, 2.0))
    ref_pos, ref_vel = naive_integrate(pos, vel, acc, dt=dt, min_speed=1.0, max_speed=2.0,
                                       width=width, height=height, boundary="wrap",
                                       turn=turn)
    np.testing.assert_allclose(kernel_vel, ref_vel, rtol=0, atol=1e-12)
    np.testing.assert_allclose(kernel_pos, ref_pos, rtol=0, atol=1e-12)
    assert ((kernel_pos >= 0) & (kernel_pos < [width, height])).all()
    np.testing.assert_allclose(kernel_pos[:4], ref_pos[:4], atol=1e-12)
    np.testing.assert_array_equal(kernel_vel[4], [1.0, 0.0])
    np.testing.assert_allclose(kernel_vel[5], [math.cos(0.5), math.sin(0.5)], rtol=1e-15)
    assert kernel_pos[0, 0] > 9.9 and kernel_pos[1, 0] < 0.1  # crossed the seam
    assert kernel_pos[2, 1] > 7.9 and kernel_pos[3, 1] < 0.1


# ---------------------------------------------------------------------------------------
# Identity and determinism


def test_snapshot_counts_follow_bird_identity():
    scene = make_scene(count=150, falloff="inverse", alignment="difference")
    sim = Simulation(scene)
    pos, vel = sim.positions.copy(), sim.velocities.copy()
    # The grid really reorders this flock; otherwise the test could not fail.
    shape = grid_shape(pos, scene.rules.perception_radius, 20.0, 16.0, True)
    order = counting_sort(pos, shape.x0, shape.y0, shape.cw, shape.ch, shape.nx, shape.ny)[0]
    assert not np.array_equal(order, np.arange(len(pos)))
    ref = naive_rules(pos, vel, width=20.0, height=16.0, boundary="wrap", radius=2.5,
                      sep_radius=1.2, falloff="inverse", alignment="difference")
    assert len(np.unique(ref["count"])) > 3
    snap = sim.advance()
    np.testing.assert_array_equal(snap.neighbours, ref["count"])
    np.testing.assert_allclose(snap.nearest, ref["nearest"], rtol=1e-12)
    np.testing.assert_array_equal(snap.positions, pos)
    np.testing.assert_array_equal(snap.velocities, vel)


def test_same_scene_gives_bit_identical_positions():
    scene = make_scene(count=400, width=40.0, height=30.0, falloff="inverse_square",
                       alignment="difference", max_force=3.0)
    a, b = Simulation(scene), Simulation(scene)
    for _ in range(50):
        a.advance()
        b.advance()
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.velocities, b.velocities)


@pytest.fixture
def restore_threads():
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)


def test_thread_count_does_not_change_positions(restore_threads):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has a single thread on this machine")
    raw = {"scene": {"settle_steps": 0, "seed": 4}, "world": {"width": 80.0, "height": 45.0},
           "flock": {"spacing": 1.0}}  # the plate's rules (defaults), 3,600 birds
    scene = build_scene(raw)
    results = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        assert numba.get_num_threads() == threads
        sim = Simulation(scene)
        assert len(sim.positions) == 3600
        for _ in range(30):
            sim.advance()
        results.append((sim.positions, sim.velocities))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_small_turns_use_polynomials_within_an_ulp_of_libm():
    from render.sim.motion import _cos_sin
    for t in np.concatenate([np.linspace(-0.05, 0.05, 2001), [1e-12, 0.3, -2.0]]):
        c, s = _cos_sin(t)
        assert abs(c - math.cos(t)) <= 2.3e-16 and abs(s - math.sin(t)) <= 1e-17 + 1.2e-16 * abs(t)
