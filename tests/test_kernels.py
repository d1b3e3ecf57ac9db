"""The numba step (render.sim) against the all-pairs numpy reference (tests/naive.py).

The reference knows nothing of the grid or the kernels; these tests drive the product
through `Simulation` (or the kernel functions with a grid from `counting_sort`) and the
reference from the same initial arrays, and compare them step by step. The torus seam,
degenerate states and determinism: test_kernel_edges.py.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import render.sim.simulate as simulate
from naive import naive_accel, naive_local_headings, naive_rules
from reference_steps import (assert_matches_reference, kernel_sums, make_scene,
                             reference_model, simulation_at)
from render.sim import diagnostics
from render.sim.diagnostics import local_headings
from render.sim.forces.flocking import Flocking, steer
from render.sim.simulate import Simulation

# ---------------------------------------------------------------------------------------
# docs/model.md's worked example

WORKED_POS = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]])
WORKED_VEL = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
# r > 2 (r_sep = r: both neighbours push); world big and open so nothing wraps.
WORKED = dict(width=100.0, height=100.0, boundary="none", radius=2.5, sep_radius=2.5,
              falloff="unit", alignment="mean")
WORKED_WEIGHTS = dict(w_sep=1.5, w_ali=1.0, w_coh=1.0)


def worked_scene():
    return make_scene(count=3, width=WORKED["width"], height=WORKED["height"],
                      boundary="none", radius=2.5, sep_radius=2.5, falloff="unit",
                      alignment="mean", weights=(1.5, 1.0, 1.0), speeds=(0.0, 10.0))


def test_worked_example_reference_rules_and_steering():
    rules = naive_rules(WORKED_POS, WORKED_VEL, **WORKED)
    np.testing.assert_allclose(rules["sep"][0], [-1.0, -1.0], atol=1e-15)
    np.testing.assert_allclose(rules["ali"][0], [0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(rules["coh"][0], [1.0, 1.0], atol=1e-15)
    acc, count = naive_accel(WORKED_POS, WORKED_VEL, **WORKED, **WORKED_WEIGHTS)
    np.testing.assert_allclose(acc[0], [-0.5, -0.5], atol=1e-15)
    assert count[0] == 2


def test_worked_example_kernel_rule_vectors():
    sums = kernel_sums(WORKED_POS, WORKED_VEL, width=100.0, height=100.0, wrap=False,
                       radius=2.5, sep_radius=2.5, falloff="unit")
    k = sums["count"][0]
    assert k == 2
    np.testing.assert_allclose(sums["sep"][0], [-1.0, -1.0], atol=1e-15)
    np.testing.assert_allclose(sums["vsum"][0] / k, [0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(sums["offsum"][0] / k, [1.0, 1.0], atol=1e-15)
    acc = steer(sums["count"], sums["sep"], sums["vsum"], sums["offsum"], WORKED_VEL,
                Flocking(2.5, 2.5, 0, 1.5, 1.0, 1.0, False, math.inf))
    np.testing.assert_allclose(acc[0], [-0.5, -0.5], atol=1e-15)


def test_worked_example_local_heading():
    # Bird 0 and both its neighbours: ((1, 0) + (0, 1) + (0, −1)) / 3.
    scene = worked_scene()
    snap, _ = simulation_at(scene, WORKED_POS, WORKED_VEL).measure()
    np.testing.assert_allclose(local_headings(snap, scene)[0], [1 / 3, 0.0], rtol=0,
                               atol=1e-15)


def test_worked_example_local_heading_skips_birds_at_rest():
    # Bird 1 at rest (docs/model.md: birds with zero speed skipped). Bird 0: its own (1, 0) and
    # bird 2's (0, −1), over 2 (not 3); bird 1: bird 0's alone; bird 2: bird 0's and its own.
    scene = worked_scene()
    vel = WORKED_VEL.copy()
    vel[1] = 0.0
    snap, _ = simulation_at(scene, WORKED_POS, vel).measure()
    np.testing.assert_allclose(local_headings(snap, scene),
                               [[0.5, -0.5], [1.0, 0.0], [0.5, -0.5]], rtol=0, atol=1e-15)
    # The polarisation averages over the moving birds 0 and 2 only: |(0.5, −0.5)| each.
    stats = diagnostics.measure(snap, scene)
    assert stats["local_polarisation"] == pytest.approx(math.sqrt(0.5), abs=1e-15)
    assert stats["global_polarisation"] == pytest.approx(math.sqrt(0.5), abs=1e-15)
    # Nobody moving: no heading anywhere, and no bird to average over.
    snap, _ = simulation_at(scene, WORKED_POS, np.zeros((3, 2))).measure()
    assert not local_headings(snap, scene).any()
    assert math.isnan(diagnostics.measure(snap, scene)["local_polarisation"])


@pytest.mark.parametrize("boundary", ["wrap", "none"])
def test_local_headings_match_reference(boundary):
    # A torus a few cells wide, some birds at rest, some coincident.
    rng = np.random.default_rng(5)
    pos = rng.random((300, 2)) * [12.0, 9.0]
    pos[:5] = pos[5]
    vel = rng.normal(size=(300, 2))
    vel[10:20] = 0.0
    scene = make_scene(count=300, width=12.0, height=9.0, boundary=boundary, radius=2.5)
    snap, _ = simulation_at(scene, pos, vel).measure()
    ref = naive_local_headings(pos, vel, width=12.0, height=9.0, boundary=boundary,
                               radius=2.5)
    np.testing.assert_allclose(local_headings(snap, scene), ref, rtol=0, atol=1e-14)


def test_worked_example_simulation_steering():
    sim = simulation_at(worked_scene(), WORKED_POS, WORKED_VEL)
    snap, acc = sim.measure()
    assert snap.neighbours[0] == 2
    np.testing.assert_allclose(acc[0], [-0.5, -0.5], atol=1e-15)
    ref_acc, ref_count = naive_accel(WORKED_POS, WORKED_VEL, **WORKED, **WORKED_WEIGHTS)
    np.testing.assert_array_equal(snap.neighbours, ref_count)
    np.testing.assert_allclose(acc, ref_acc, atol=1e-15)


# ---------------------------------------------------------------------------------------
# Small rules, kernel and reference side by side


@pytest.mark.parametrize("falloff, push", [("unit", 1.0), ("inverse", 2.0),
                                           ("inverse_square", 4.0)])
def test_separation_pushes_away_from_close_birds(falloff, push):
    # Two birds 0.5 apart along x: each is pushed away from the other by f(0.5).
    pos = np.array([[5.0, 5.0], [5.5, 5.0]])
    vel = np.array([[1.0, 0.0], [1.0, 0.0]])
    expected = np.array([[-push, 0.0], [push, 0.0]])
    ref = naive_rules(pos, vel, width=10.0, height=10.0, boundary="none", radius=1.0,
                      sep_radius=1.0, falloff=falloff, alignment="mean")
    np.testing.assert_allclose(ref["sep"], expected, rtol=1e-14)
    sums = kernel_sums(pos, vel, width=10.0, height=10.0, wrap=False, radius=1.0,
                       sep_radius=1.0, falloff=falloff)
    np.testing.assert_allclose(sums["sep"], expected, rtol=1e-14)


def test_separation_ignores_neighbours_beyond_separation_radius():
    pos = np.array([[5.0, 5.0], [6.5, 5.0]])
    vel = np.array([[1.0, 0.0], [1.0, 0.0]])
    sums = kernel_sums(pos, vel, width=10.0, height=10.0, wrap=False, radius=2.0,
                       sep_radius=1.0, falloff="unit")
    ref = naive_rules(pos, vel, width=10.0, height=10.0, boundary="none", radius=2.0,
                      sep_radius=1.0, falloff="unit", alignment="mean")
    np.testing.assert_array_equal(sums["count"], [1, 1])
    np.testing.assert_array_equal(sums["sep"], 0.0)
    np.testing.assert_array_equal(ref["sep"], 0.0)


def test_neighbours_are_strictly_closer_than_radius():
    pos = np.array([[1.0, 1.0], [3.0, 1.0], [1.0, 2.9]])  # distances 2 and 1.9
    vel = np.ones((3, 2))
    sums = kernel_sums(pos, vel, width=10.0, height=10.0, wrap=False, radius=2.0,
                       sep_radius=0.5, falloff="unit")
    ref = naive_rules(pos, vel, width=10.0, height=10.0, boundary="none", radius=2.0,
                      sep_radius=0.5, falloff="unit", alignment="mean")
    np.testing.assert_array_equal(sums["count"], [1, 0, 1])
    np.testing.assert_array_equal(ref["count"], [1, 0, 1])


def test_max_force_clamps_each_rule_separately():
    # Separation alone is long (inverse_square at d = 0.1 → 100); alignment and cohesion
    # are short. A clamp of 1 shortens only the separation vector.
    pos = np.array([[5.0, 5.0], [5.1, 5.0]])
    vel = np.array([[1.0, 0.0], [1.0, 0.2]])
    common = dict(width=10.0, height=10.0, boundary="none", radius=1.0, sep_radius=1.0,
                  falloff="inverse_square", alignment="difference",
                  w_sep=1.0, w_ali=1.0, w_coh=1.0)
    acc, _ = naive_accel(pos, vel, max_force=1.0, **common)
    np.testing.assert_allclose(acc[0], [-1.0 + 0.1, 0.2], rtol=1e-12)
    scene = make_scene(count=2, width=10.0, height=10.0, boundary="none", radius=1.0,
                       sep_radius=1.0, falloff="inverse_square", alignment="difference",
                       weights=(1.0, 1.0, 1.0), max_force=1.0)
    _, kernel_acc = simulation_at(scene, pos, vel).measure()
    np.testing.assert_allclose(kernel_acc, acc, rtol=1e-12)


# ---------------------------------------------------------------------------------------
# Kernels == reference over 100 steps

PRODUCT = list(itertools.product(("unit", "inverse", "inverse_square"),
                                 ("mean", "difference"),
                                 ("wrap", "walls", "none"),
                                 (None, 1.5)))


def flocking_args(scene, **changes):
    """The arguments of naive_accel (flocking rules only) for `scene`."""
    model = reference_model(scene, 0.0)
    for extra in ("wall_margin", "wall_strength", "attractor"):
        del model[extra]
    model.update(changes)
    return model


@pytest.mark.parametrize("falloff, alignment, boundary, max_force", PRODUCT)
def test_kernels_match_reference_for_100_steps(falloff, alignment, boundary, max_force):
    scene = make_scene(falloff=falloff, alignment=alignment, boundary=boundary,
                       max_force=max_force)
    sim = Simulation(scene)
    clamped, count = naive_accel(sim.positions, sim.velocities, **flocking_args(scene))
    assert count.mean() > 3  # dense enough that every rule has work to do
    if max_force is not None:
        # The clamp must bite somewhere, or this case tests nothing the unclamped one does not.
        free, _ = naive_accel(sim.positions, sim.velocities,
                              **flocking_args(scene, max_force=math.inf))
        assert not np.allclose(free, clamped)
    assert_matches_reference(sim, 100)


@pytest.mark.parametrize("attractor", [
    {"position": [6.0, 9.0], "strength": 4.0, "radius": 3.0},
    {"path": [[0.0, 4.0, 4.0], [1.0, 16.0, 12.0]], "strength": 4.0, "radius": 2.0},
], ids=["fixed", "moving"])
def test_kernels_match_reference_with_attractor(attractor):
    scene = make_scene(falloff="inverse", alignment="difference", boundary="none",
                       max_force=1.5, attractor=attractor)
    assert_matches_reference(Simulation(scene), 100)


@pytest.mark.parametrize("width, radius", [(5.0, 2.2), (4.0, 2.5), (7.5, 2.5)],
                         ids=["torus-2-cells", "torus-1-cell", "torus-3-cells"])
def test_kernels_match_reference_on_a_torus_only_a_few_cells_wide(width, radius):
    scene = make_scene(count=40, width=width, height=width, radius=radius, sep_radius=1.0,
                       falloff="inverse", alignment="difference", max_force=1.5)
    assert_matches_reference(Simulation(scene), 30)


def test_kernels_match_reference_when_birds_stray_far_outside_an_open_world():
    # Open world: the grid covers the birds' bounding box, clamped to a few world spans;
    # the stragglers far beyond it share the outermost cells and must still find each other.
    scene = make_scene(count=60, boundary="none", falloff="unit", alignment="mean")
    sim = Simulation(scene)
    sim.positions[:6] = [[-150.0, 8.0], [-149.0, 8.5], [400.0, 3.0], [401.5, 3.0],
                         [401.0, 300.0], [400.0, 301.0]]
    assert_matches_reference(sim, 20)


def test_comparison_detects_a_kernel_with_flipped_separation(monkeypatch):
    advance_flock = simulate.step.advance_flock

    def flipped(*args):
        *head, forces, work = args
        rules = forces.flocking._replace(w_sep=-forces.flocking.w_sep)
        return advance_flock(*head, forces._replace(flocking=rules), work)

    monkeypatch.setattr(simulate.step, "advance_flock", flipped)
    scene = make_scene(falloff="inverse", alignment="difference", boundary="wrap")
    with pytest.raises(AssertionError):
        assert_matches_reference(Simulation(scene), 100)
