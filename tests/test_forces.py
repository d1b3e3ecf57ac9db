"""The murmuration's extra forces, against hand-worked values."""

from __future__ import annotations

import math

import numpy as np
import pytest

import numpy_forces
from render.scene import HawkSettings, build_scene
from render.sim.diagnostics import hole_radius
from render.sim.forces import field
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
