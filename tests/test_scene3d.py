"""The 3D scene settings: every new key validated, sections named by their dimension."""

from __future__ import annotations

import pytest

from render.errors import SceneError
from render.scene.load import build_scene

BASE = {"world": {"dimensions": 3}, "flock": {"count": 100},
        "rules": {"neighbours": "topological", "blind_angle": 90.0},
        "flight": {}, "roost": {}}


def problems(raw) -> str:
    with pytest.raises(SceneError) as err:
        build_scene(raw, "s.toml")
    return str(err.value)


def with_(section, **keys):
    raw = {k: dict(v) for k, v in BASE.items()}
    raw.setdefault(section, {}).update(keys)
    return raw


def test_a_3d_world_is_open_sky_with_flight_and_roost():
    scene = build_scene(BASE, "s.toml")
    assert scene.dimensions == 3 and scene.world.boundary == "none"
    assert scene.flight.cruise_speed == 10.0 and scene.roost.altitude == 50.0
    assert scene.rules.topological_count == 7


def test_flight_and_roost_are_named_3d_only_in_a_2d_scene():
    text = problems(with_("world", dimensions=2))
    assert "[flight] is 3D-only" in text and "[roost] is 3D-only" in text


def test_2d_forces_are_refused_in_3d():
    assert "[containment] is 2D-only" in problems(with_("containment"))


@pytest.mark.parametrize("section, key, value, message", [
    ("world", "dimensions", 4, "≤ 3"),
    ("world", "dimensions", 1, "≥ 2"),
    ("world", "boundary", "wrap", "open sky"),
    ("rules", "topological_count", 0, "≥ 1"),
    ("rules", "topological_count", 100, "below the flock size"),
    ("rules", "blind_angle", 360.0, "below 360"),
    ("rules", "blind_angle", -1.0, "≥ 0"),
    ("rules", "neighbours", "nearest", "metric | topological"),
    ("roost", "altitude", -5.0, "≥ 0"),
    ("flight", "cruise_speed", 0.0, "> 0"),
])
def test_bad_3d_settings_are_refused(section, key, value, message):
    text = problems(with_(section, **{key: value}))
    assert f"{section}.{key}" in text and message in text


def test_the_budget_covers_a_3d_flock_of_a_million_birds():
    from render import budget

    scene = build_scene(with_("flock", count=1_000_000), "s.toml")
    flat = build_scene({"flock": {"count": 1_000_000}}, "s.toml")
    sim = budget.estimate(scene, None)
    assert sim.bytes > budget.estimate(flat, None).bytes
    assert 0.5e9 < sim.bytes < 3e9 and sim.seconds > 0
    npz = budget.estimate(scene, "out.npz")
    # positions, velocities (3 float64) and bank (1) a bird and frame
    assert npz.disk >= scene.frame_count * 1_000_000 * 7 * 8
    clip = budget.estimate(scene, "out.mp4")
    assert clip.bytes > sim.bytes and clip.seconds > sim.seconds


def test_the_estimate_counts_the_diagnostics_of_every_frame_it_measures():
    from render import budget

    scene = build_scene(with_("flock", count=20_000), "s.toml")
    flat = build_scene({"flock": {"count": 20_000}}, "s.toml")
    for output in (None, "out.mp4"):
        plain = budget.estimate(scene, output).seconds
        measured = budget.estimate(scene, output, stats=True).seconds
        assert measured - plain == pytest.approx(
            scene.frame_count * 20_000 * budget.STATS3_S_PER_BIRD)
        # from frame 60 on: the frames before are flown, not measured
        later = budget.estimate(scene, output, 60, stats=True).seconds
        later_plain = budget.estimate(scene, output, 60).seconds
        assert later - later_plain == pytest.approx(
            (scene.frame_count - 60) * 20_000 * budget.STATS3_S_PER_BIRD)
    assert budget.estimate(flat, None, stats=True).seconds - \
        budget.estimate(flat, None).seconds == pytest.approx(
            flat.frame_count * 20_000 * budget.STATS_S_PER_BIRD)
