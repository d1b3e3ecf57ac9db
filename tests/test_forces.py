"""The extra forces, against hand-worked values and the references of tests/naive.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

import numpy_forces
from naive import (naive_attractor, naive_containment, naive_field, naive_hawk,
                   naive_hawk_position, naive_walls)
from render.scene import HawkSettings, build_scene
from render.sim.diagnostics import hole_radius
from render.sim.forces import attractor, containment, field, walls
from render.sim.forces import hawk as hawk_force
from render.sim.forces.hawk import position as hawk_position
from render.sim.simulate import Simulation


def test_containment_is_exactly_zero_inside_the_ellipse():
    rng = np.random.default_rng(1)
    angle = rng.uniform(0, 2 * np.pi, 500)
    radius = np.sqrt(rng.random(500)) * 0.999
    pos = np.column_stack([40 + 30 * radius * np.cos(angle), 20 + 10 * radius * np.sin(angle)])
    assert not numpy_forces.containment(pos, (40, 20), (30, 10), 61.0).any()


def test_containment_pushes_back_in_proportion_to_the_distance_outside():
    # 5 units beyond the end of the major axis, and 2 beyond the minor one.
    pos = np.array([[75.0, 20.0], [40.0, 32.0]])
    acc = numpy_forces.containment(pos, (40, 20), (30, 10), 4.0)
    assert acc[0] == pytest.approx([-20.0, 0.0])
    assert acc[1] == pytest.approx([0.0, -8.0])


def test_field_is_the_mean_of_three_drifting_sinusoids():
    pos = np.array([[3.0, 4.0]])
    wl, drift, phase = (10.0, 20.0, 30.0), (1.0, 2.0, 3.0), (0.1, 0.2, 0.3)
    t = 1.5
    diag = 7.0 / math.sqrt(2)
    want = (math.sin(2 * math.pi * (3 - 1.5) / 10 + 0.1)
            + math.sin(2 * math.pi * (4 - 3.0) / 20 + 0.2)
            + math.sin(2 * math.pi * (diag - 4.5) / 30 + 0.3)) / 3
    assert numpy_forces.field(pos, t, wl, drift, phase)[0] == pytest.approx(want)


def test_field_turns_velocities_without_changing_speed():
    scene = build_scene({"flock": {"count": 300, "min_speed": 1.0, "max_speed": 9.0},
                         "rules": {"separation_weight": 0, "alignment_weight": 0,
                                   "cohesion_weight": 0},
                         "scene": {"settle_steps": 0}, "field": {"turn_rate": 30.0}})
    sim = Simulation(scene)
    before = sim.velocities.copy()
    turn = sim.turns()
    sim.advance()
    speed = lambda v: np.hypot(v[:, 0], v[:, 1])  # noqa: E731
    assert speed(sim.velocities) == pytest.approx(speed(before))
    angle = np.arctan2(sim.velocities[:, 1], sim.velocities[:, 0]) - np.arctan2(
        before[:, 1], before[:, 0])
    assert np.angle(np.exp(1j * angle)) == pytest.approx(turn)
    assert np.abs(turn).max() <= 30.0 * scene.scene.dt


def test_hawk_flies_a_chord_through_the_centre_and_turns_by_the_golden_angle():
    hawk = HawkSettings(period=10.0, duration=4.0, start=1.0, bearing=0.0, speed=3.0)
    assert hawk_position(0.5, hawk, (40, 20)) is None
    assert hawk_position(1.0, hawk, (40, 20)) == pytest.approx((34.0, 20.0))
    assert hawk_position(3.0, hawk, (40, 20)) == pytest.approx((40.0, 20.0))
    assert hawk_position(5.5, hawk, (40, 20)) is None
    x, y = hawk_position(11.0, hawk, (40, 20))
    assert math.degrees(math.atan2(20 - y, 40 - x)) == pytest.approx(137.5077, abs=1e-3)


def test_hawk_repulsion_falls_off_quadratically_to_zero_at_its_radius():
    pos = np.array([[10.0, 0.0], [0.0, -5.0], [20.0, 0.0]])
    acc = numpy_forces.hawk(pos, (0.0, 0.0), 10.0, 100.0)
    assert acc[0] == pytest.approx([0.0, 0.0])
    assert acc[1] == pytest.approx([0.0, -25.0])
    assert acc[2] == pytest.approx([0.0, 0.0])


def test_hole_radius_ignores_a_few_stragglers_but_not_a_sheet_of_birds():
    rng = np.random.default_rng(3)
    sheet = rng.random((20000, 2)) * 100 - 50  # density 2 birds per unit², around (0, 0)
    sheet = sheet[np.hypot(sheet[:, 0], sheet[:, 1]) > 10.0]
    stragglers = np.array([[1.0, 0.0], [0.0, 2.0], [-3.0, 0.0]])
    r = hole_radius(np.vstack([sheet, stragglers]), (0.0, 0.0), spacing=1.0)
    # The disc reaches a quarter of the mean density 1 where 3 + 2π(r² − 10²) = π r² / 4.
    want = math.sqrt((200 - 3 / math.pi) / 1.75)
    assert r == pytest.approx(want, abs=0.15)
    assert math.isnan(hole_radius(sheet, None, spacing=1.0))


def test_field_sine_is_within_1e15_of_libm():
    # Within one turn libm's own argument 2π·t is rounded by < 5e-16; farther out the
    # reference loses more digits than the polynomial (which reduces t exactly).
    turns = np.concatenate([np.linspace(-0.5, 0.5, 200_001), [0.25, -0.25, 1e-9]])
    np.testing.assert_allclose(numpy_forces.sin_turns(turns), np.sin(2 * np.pi * turns),
                               rtol=0, atol=1e-15)
    wide = np.linspace(-40.0, 40.0, 100_001)
    np.testing.assert_allclose(numpy_forces.sin_turns(wide), np.sin(2 * np.pi * wide), rtol=0,
                               atol=1e-13)
    got = np.array([field.sin_turns(t) for t in wide[::997]])
    np.testing.assert_array_equal(got, numpy_forces.sin_turns(wide[::997]))


# ---------------------------------------------------------------------------------------
# Each force's numba implementation against its plain reference (tests/naive.py)


@pytest.fixture
def around():
    """Positions in and around an 80 x 45 world."""
    return np.random.default_rng(21).uniform(-20.0, 100.0, (4000, 2))


def per_bird(accel, params, pos):
    return np.array([accel(params, x, y) for x, y in pos])


def test_walls_kernel_matches_reference(around):
    got = per_bird(walls.accel, walls.Walls(True, 80.0, 45.0, 5.0, 50.0), around)
    want = naive_walls(around, width=80.0, height=45.0, margin=5.0, strength=50.0)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # Hand-worked: 1 from the left edge with margin 5, strength 50: 50·(5/1 − 1) = 200.
    assert walls.accel(walls.Walls(True, 80.0, 45.0, 5.0, 50.0), 1.0, 20.0) == (200.0, 0.0)


def test_attractor_kernel_matches_reference(around):
    params = attractor.Attractor(True, 10.0, 5.0, 30.0, 22.5)
    got = per_bird(attractor.accel, params, around)
    want = naive_attractor(around, point=(30.0, 22.5), strength=10.0, radius=5.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    # Hand-worked: 15 to the right of the point, radius 5: 10·15/20 = 7.5 back toward it.
    assert per_bird(attractor.accel, params, [[45.0, 22.5]])[0] == pytest.approx([-7.5, 0.0])


def test_field_kernel_matches_reference(around):
    waves, drifts, phases = (38.9, 35.1, 23.7), (3.29, 0.40, 1.22), (0.3, 5.9, 2.0)
    params = field.Field(True, *waves, *drifts, *phases, turn=1.0, time_s=7.25)
    want = naive_field(around, time_s=7.25, wavelengths=waves, drifts=drifts, phases=phases)
    np.testing.assert_allclose(field.turns(around, params), want, rtol=0, atol=1e-12)
    # Hand-worked (as test_field_is_the_mean_of_three_drifting_sinusoids), and the turn
    # is turn_rate·dt times φ.
    params = field.Field(True, 10.0, 20.0, 30.0, 1.0, 2.0, 3.0, 0.1, 0.2, 0.3, turn=0.5,
                         time_s=1.5)
    diag = 7.0 / math.sqrt(2)
    phi = (math.sin(2 * math.pi * (3 - 1.5) / 10 + 0.1)
           + math.sin(2 * math.pi * (4 - 3.0) / 20 + 0.2)
           + math.sin(2 * math.pi * (diag - 4.5) / 30 + 0.3)) / 3
    assert field.turns(np.array([[3.0, 4.0]]), params)[0] == pytest.approx(0.5 * phi)
    assert not field.turns(around, params._replace(active=False)).any()


def test_containment_kernel_matches_reference(around):
    centre, axes = (40.0, 22.5), (30.8, 17.325)
    params = containment.Containment(True, *centre, *axes, 40.0)
    want, inside = naive_containment(around, centre=centre, semi_axes=axes, strength=40.0)
    got = per_bird(containment.accel, params, around)
    np.testing.assert_allclose(got[:, :2], want, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got[:, 2].astype(bool), inside)
    np.testing.assert_array_equal(containment.inside(around, params), inside)
    assert 0.05 < inside.mean() < 0.95
    # Hand-worked: ellipse 30 x 10 about the origin, bird at (30, 10): ρ = √2, so it is
    # (1 − 1/√2) of its distance past the rim, pulled back by that much (strength 1).
    unit = containment.Containment(True, 0.0, 0.0, 30.0, 10.0, 1.0)
    ax, ay, is_inside = containment.accel(unit, 30.0, 10.0)
    past = 1 - 1 / math.sqrt(2)
    assert (ax, ay) == pytest.approx((-past * 30, -past * 10))
    assert not is_inside and containment.accel(unit, 29.0, 0.0) == (0.0, 0.0, True)


def test_hawk_kernel_matches_reference(around):
    params = hawk_force.Hawk(True, 13.3, 160.0, 40.0, 22.5, 30.0, 20.0)
    want = naive_hawk(around, where=(30.0, 20.0), radius=13.3, strength=160.0)
    got = per_bird(hawk_force.accel, params, around)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert (np.hypot(*want.T) > 0).sum() > 50
    # Hand-worked: radius 10, strength 100; 2.5 from the hawk: 100·0.75² = 56.25 away.
    hand = hawk_force.Hawk(True, 10.0, 100.0, 0.0, 0.0, 0.0, 0.0)
    assert hawk_force.accel(hand, 2.5, 0.0) == pytest.approx((56.25, 0.0))
    assert hawk_force.accel(hand, 0.0, -5.0) == pytest.approx((0.0, -25.0))
    assert hawk_force.accel(hand, 0.0, 0.0) == (0.0, 0.0)


def test_hawk_position_matches_reference():
    settings = HawkSettings(period=10.33, duration=4.3, start=1.0, bearing=20.0, speed=9.0)
    for t in np.linspace(0.0, 60.0, 601):
        got = hawk_position(t, settings, (40.0, 22.5))
        want = naive_hawk_position(t, start=1.0, period=10.33, duration=4.3, bearing=20.0,
                                   speed=9.0, centre=(40.0, 22.5))
        assert (got is None) == (want is None), t
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_simulation_builds_each_force_once_from_the_scene():
    scene = build_scene({"scene": {"settle_steps": 0}, "world": {"width": 80.0,
                                                               "height": 45.0}})
    sim = Simulation(scene)
    built = sim.forces
    sim.advance()
    assert sim.forces is built  # a step's moving parts are a new value, not an edit
    assert built.containment == containment.containment(scene)
    assert built.containment.a == pytest.approx(0.385 * 80.0)
