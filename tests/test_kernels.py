"""The numba step (render.sim) against the all-pairs numpy reference (tests/naive.py).

The reference knows nothing of the grid or the kernels; these tests drive the product
through `Simulation` (or the kernel functions with a grid from `counting_sort`) and the
reference from the same initial arrays, and compare them step by step.
"""

from __future__ import annotations

import itertools
import math

import numba
import numpy as np
import pytest

import render.sim.simulate as simulate
from naive import (naive_accel, naive_integrate, naive_local_headings, naive_rules,
                   naive_step, naive_total_accel)
from render.scene import build_scene
from render.sim import diagnostics
from render.sim.diagnostics import local_headings
from render.sim.forces.flocking import Flocking, steer
from render.sim.grid import counting_sort, grid_shape
from render.sim.motion import Motion, World, integrate
from render.sim.neighbours import FALLOFF_POWER, neighbour_sums
from render.sim.simulate import Simulation

TOL = 1e-9


# ---------------------------------------------------------------------------------------
# Helpers


def make_scene(*, count=100, width=20.0, height=16.0, boundary="wrap", radius=2.5,
               sep_radius=1.2, falloff="unit", alignment="mean", weights=(1.0, 1.0, 0.5),
               max_force=None, speeds=(1.0, 2.0), seed=3, attractor=None,
               wall_margin=3.0, wall_strength=5.0, init="uniform"):
    """A Scene built from a TOML-shaped dict, with no settling steps."""
    raw = {
        "scene": {"seed": seed, "settle_steps": 0},
        "world": {"width": width, "height": height, "boundary": boundary,
                  "wall_margin": wall_margin, "wall_strength": wall_strength},
        "flock": {"count": count, "min_speed": speeds[0], "max_speed": speeds[1],
                  "init": init},
        "rules": {"perception_radius": radius, "separation_radius": sep_radius,
                  "falloff": falloff, "alignment": alignment,
                  "separation_weight": weights[0], "alignment_weight": weights[1],
                  "cohesion_weight": weights[2]},
    }
    if max_force is not None:
        raw["rules"]["max_force"] = max_force
    if attractor is not None:
        raw["attractor"] = attractor
    return build_scene(raw)


def simulation_at(scene, positions, velocities):
    """A Simulation of `scene` whose current state is the given arrays."""
    sim = Simulation(scene)
    sim.positions = np.array(positions, dtype=np.float64)
    sim.velocities = np.array(velocities, dtype=np.float64)
    return sim


def reference_model(scene, time_s):
    """The keyword arguments of naive_total_accel for `scene` at time `time_s`, read from
    the scene's settings (the attractor's path interpolated here, independently)."""
    world, rules = scene.world, scene.rules
    attractor = None
    if scene.attractor is not None:
        att = scene.attractor
        if att.path is not None:
            keys = np.array(att.path, dtype=np.float64)
            point = (np.interp(time_s, keys[:, 0], keys[:, 1]),
                     np.interp(time_s, keys[:, 0], keys[:, 2]))
        elif att.position is not None:
            point = att.position
        else:
            point = (world.width / 2, world.height / 2)
        attractor = dict(point=point, strength=att.strength, radius=att.radius)
    return dict(width=world.width, height=world.height, boundary=world.boundary,
                radius=rules.perception_radius, sep_radius=rules.separation_radius,
                falloff=rules.falloff, alignment=rules.alignment,
                w_sep=rules.separation_weight, w_ali=rules.alignment_weight,
                w_coh=rules.cohesion_weight,
                max_force=math.inf if rules.max_force is None else rules.max_force,
                wall_margin=world.wall_margin, wall_strength=world.wall_strength,
                attractor=attractor)


def reference_integrate(scene, pos, vel, acc):
    world, flock = scene.world, scene.flock
    return naive_integrate(pos, vel, acc, dt=scene.scene.dt, min_speed=flock.min_speed,
                           max_speed=flock.max_speed, width=world.width,
                           height=world.height, boundary=world.boundary)


def position_error(scene, a, b):
    """Largest coordinate difference, the short way round on a torus."""
    diff = np.asarray(a) - np.asarray(b)
    if scene.world.boundary == "wrap":
        extent = np.array([scene.world.width, scene.world.height])
        diff -= extent * np.round(diff / extent)
    return float(np.abs(diff).max())


def assert_matches_reference(sim, steps, tol=TOL):
    """Advance `sim` and the reference `steps` times from sim's current state; after every
    step the neighbour counts are equal and positions/velocities agree to `tol`."""
    scene = sim.scene
    pos, vel = sim.positions.copy(), sim.velocities.copy()
    for k in range(steps):
        acc, count = naive_total_accel(pos, vel, **reference_model(scene, k * scene.scene.dt))
        snap = sim.advance()
        np.testing.assert_array_equal(snap.neighbours, count,
                                      err_msg=f"neighbour counts differ at step {k}")
        pos, vel = reference_integrate(scene, pos, vel, acc)
        pos_err = position_error(scene, sim.positions, pos)
        vel_err = float(np.abs(sim.velocities - vel).max())
        assert pos_err <= tol and vel_err <= tol, (
            f"step {k}: positions differ by {pos_err:.3g}, velocities by {vel_err:.3g}")


def kernel_sums(pos, vel, *, width, height, wrap, radius, sep_radius, falloff):
    """Call the neighbourhood kernel on a grid from counting_sort; results by bird."""
    pos = np.ascontiguousarray(pos, dtype=np.float64)
    vel = np.ascontiguousarray(vel, dtype=np.float64)
    shape = grid_shape(pos, radius, width, height, wrap)
    rules = Flocking(radius, sep_radius, FALLOFF_POWER[falloff], 1.0, 1.0, 1.0, False, math.inf)
    return neighbour_sums(pos, vel, shape, World(wrap, width, height), rules)


# ---------------------------------------------------------------------------------------
# SPEC §3 worked example

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
    # Bird 1 at rest (SPEC §7: birds with zero speed skipped). Bird 0: its own (1, 0) and
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
    # SPEC §4: 3,600 birds at spacing 1 in 80 x 45, r = 2.15. A uniform scatter has about
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
           "flock": {"spacing": 1.0}}  # murmuration rules (defaults), 3,600 birds
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
