"""The 3D scene settings: every new key validated, sections named by their dimension."""

from __future__ import annotations

import csv

import numpy as np
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


@pytest.mark.parametrize("hawk, override, line", [
    (15.0, ("world.dimensions", 2, "--set"), "--set world.dimensions: the scene is written "
     "for 3D ([flight], [roost], hawk.dive_speed): expected 3, got 2"),
    (25.0, ("flight.cruise_speed", 20.0, "--set"), "--set flight.cruise_speed: expected ≤ "
     "flock.max_speed (18.0), got 20.0"),
    (15.0, ("flight.cruise_speed", 2.0, "--set"), "--set flight.cruise_speed: expected ≥ "
     "flock.min_speed (5.0), got 2.0"),
    (15.0, ("flight.cruise_speed", 17.0, "--set"), "--set flight.cruise_speed: a hunting "
     "hawk must outfly the flock to catch it: expected less than hawk.speed (15.0 m/s), "
     "got 17.0 m/s"),
    (15.0, ("hawk.speed", 9.0, "--set"), "--set hawk.speed: a hunting hawk must outfly the "
     "flock to catch it: expected more than flight.cruise_speed (10.0 m/s), got 9.0 m/s"),
])
def test_a_contradiction_is_one_line_at_the_setting_given_last(hawk, override, line):
    raw = {**{k: dict(v) for k, v in BASE.items()},
           "flock": {"count": 100, "min_speed": 5.0, "max_speed": 18.0},
           "hawk": {"mode": "hunt", "speed": hawk, "dive_speed": 30.0}}
    with pytest.raises(SceneError) as err:
        build_scene(raw, "s.toml", [override])
    assert err.value.problems == [line]


def test_a_3d_hawk_hunts_as_the_films_does_where_the_scene_does_not_say():
    """A 3D scene's [hawk] (or `--set hawk.start=…` on a scene without one) hunts at the
    film's speeds and startle, not the 2D chord's 3 world units/s, 13.3 and 160 world
    units/s²; what the scene says wins. A hawk still too slow names the speed it lacks,
    not the file's cruise speed."""
    scene = build_scene(BASE, "s.toml", [("hawk.start", "1.0", "--set")])
    h = scene.hawk
    assert (h.mode, h.speed, h.radius, h.strength, h.period) == ("hunt", 20.0, 20.0, 8.0, 17.0)
    film = build_scene(BASE, "s.toml", [("hawk.strength", "3.0", "--set")])
    assert film.hawk.strength == 3.0 and film.hawk.speed == 20.0
    with pytest.raises(SceneError) as err:
        build_scene(BASE, "s.toml", [("hawk.speed", "3.0", "--set")])
    assert err.value.problems == [
        "--set hawk.speed: a hunting hawk must outfly the flock to catch it: expected "
        "more than flight.cruise_speed (10.0 m/s), got 3.0 m/s"]


def test_2d_forces_are_refused_in_3d():
    assert "[containment] is 2D-only" in problems(with_("containment"))


@pytest.mark.parametrize("dimensions, typo, offered, not_offered", [
    (2, "rules.perceptoin_radius", "perception_radius", "hard_core"),
    (2, "hawk.sped", "speed", "dive_speed"),
    (3, "flock.cuont", "count", "spacing"),
    (3, "render.widht_min", "min_width_px", "width_min"),
])
def test_an_unknown_key_is_offered_only_keys_its_dimension_reads(dimensions, typo, offered,
                                                                 not_offered):
    # Offered hard_core in 2D, or spacing in 3D, the user was then told "a 3D-only key".
    raw = {**BASE, "hawk": {"mode": "hunt", "speed": 20.0}} if dimensions == 3 else \
        {"flock": {"count": 100}, "hawk": {}}
    with pytest.raises(SceneError) as err:
        build_scene(raw, "s.toml", [(typo, "3", "--set")])
    (problem,) = err.value.problems
    valid = problem.split("valid keys: ")[1].split(", ")
    assert offered in valid and not_offered not in valid, problem


@pytest.mark.parametrize("dimensions, key, value", [
    (3, "hawk.bearing", "20"), (3, "hawk.duration", "4"), (3, "world.wall_margin", "10"),
    (2, "hawk.dive_speed", "40"), (2, "hawk.target", '"dense"'),
    (3, "rules.separation_radius", "3"), (3, "rules.falloff", '"unit"'),
    (3, "rules.alignment", '"mean"'), (3, "rules.max_force", "0.001"),
    (2, "rules.separation_sigma", "9"), (2, "rules.hard_core", "5"), (2, "rules.gather", "0.02"),
    # A 3D flock is a count of birds seeded over its roost, drawn by its silhouettes.
    (3, "flock.spacing", "5"), (3, "flock.init", '"ellipse"'), (3, "flock.init_ellipse", "0.3"),
    (3, "render.width_min", "0.5"), (3, "render.width_max", "0.8"),
    (3, "render.opacity_min", "0.2"), (3, "render.opacity_max", "0.9"),
    (3, "render.density_count", "9"),
])
def test_a_key_only_the_other_dimension_reads_is_refused(dimensions, key, value):
    # A hunting hawk has no chord to aim or time; a 3D sky has no walls; a 2D chord hawk
    # does not dive; each dimension's separation has its own form: each was taken and
    # never read (the same picture whatever its value).
    raw = {**BASE, "hawk": {"mode": "hunt", "speed": 20.0}} if dimensions == 3 else \
        {"flock": {"count": 100}, "hawk": {}}
    with pytest.raises(SceneError) as err:
        build_scene(raw, "s.toml", [(key, value, "--set")])
    from render.scene.schema import instead

    kind = "2D" if dimensions == 3 else "3D"
    assert err.value.problems == [f"--set {key}: a {kind}-only key: expected "
                                  f"world.dimensions = {5 - dimensions}, got {dimensions}"
                                  f"{instead(key, dimensions == 3)}"]


def test_a_hunting_hawk_has_no_pass_for_its_period_to_outlast():
    scene = build_scene({**BASE, "hawk": {"mode": "hunt", "speed": 20.0, "period": 3.0}})
    assert scene.hawk.period == 3.0


def test_a_section_of_the_other_dimension_is_blamed_on_the_set_that_made_it():
    with pytest.raises(SceneError) as err:
        build_scene(BASE, "s.toml", [("field.turn_rate", "0.5", "--set")])
    assert err.value.problems == ["--set field: [field] is 2D-only: expected "
                                  "world.dimensions = 2, got 3"]


@pytest.mark.parametrize("section, key, value, message", [
    ("world", "dimensions", 4, "≤ 3"),
    ("world", "dimensions", 1, "≥ 2"),
    ("world", "boundary", "wrap", "open sky"),
    ("rules", "topological_count", 0, "≥ 1"),
    ("rules", "topological_count", 100, "below the flock size"),
    ("rules", "blind_angle", 360.0, "< 360"),  # a bird must see something
    ("rules", "blind_angle", -1.0, "≥ 0"),
    ("rules", "neighbours", "nearest", "metric | topological"),
    ("roost", "altitude", -5.0, "> 0"),
    ("roost", "altitude", 0.0, "> 0"),  # a flock held at the ground skims it
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


def test_the_estimate_counts_the_diagnostics_of_the_frames_it_measures():
    """Every frame's own measures, and the costly ones on the states sampled every 0.5 s:
    at 30 fps and dt = 0.01 s, frames 0, 15, 30, … of the 3,600."""
    from render import budget

    raw = with_("flock", count=20_000)
    raw["scene"], raw["output"] = {"dt": 0.01, "duration": 120.0}, {"fps": 30}
    scene = build_scene(raw, "s.toml")
    flat = build_scene({"flock": {"count": 20_000}}, "s.toml")
    assert scene.frame_count == 3600
    for output in (None, "out.mp4"):
        for first, sampled in ((0, 240), (60, 236)):  # from 60: 60, 75, …, 3585
            assert budget.sampled_frames(scene, first) == sampled
            extra = budget.estimate(scene, output, first, stats=True).seconds - \
                budget.estimate(scene, output, first).seconds
            assert extra == pytest.approx(
                (3600 - first) * 20_000 * budget.STATS_S_PER_BIRD +
                sampled * 20_000 * budget.STATS3_S_PER_BIRD)
    assert budget.estimate(flat, None, stats=True).seconds - \
        budget.estimate(flat, None).seconds == pytest.approx(
            flat.frame_count * 20_000 * budget.STATS_S_PER_BIRD)



def test_the_estimate_samples_as_often_as_the_diagnostics():
    """render.budget keeps its own copy of the sampling period (it imports no numpy):
    the two must agree, or the estimate counts other frames than those measured."""
    from render import budget
    from render.sim import diagnostics3d

    assert budget.STATS3_EVERY_S == diagnostics3d.SHAPE_EVERY

@pytest.mark.parametrize("fps, frames", [("2", "0:12"), ('"24000/1001"', "7:110")])
def test_the_frames_counted_as_sampled_are_the_ones_measured(cli, write_scene, tmp_path,
                                                             fps, frames):
    """The estimate's count of sampled frames against a real --stats run's rows that
    carry the sampled measures, at a rate that fits the 0.5 s and one that does not: at
    both, one frame every 0.5 s."""
    from render import budget
    from render.scene.load import load_scene

    path = write_scene("""
        [scene]
        dt = 0.01
        settle_steps = 0
        duration = 6.0
        [world]
        dimensions = 3
        [flock]
        count = 60
        [rules]
        neighbours = "topological"
        [flight]
        [roost]
        """)
    stats = tmp_path / "stats.csv"
    result = cli(path, "--set", f"output.fps={fps}", "--frames", frames, "--stats", stats,
                 "-q")
    assert result.code == 0, result.err
    rows = list(csv.DictReader(stats.open()))
    first, last = (int(x) for x in frames.split(":"))
    assert len(rows) == last - first
    measured = [int(row["frame"]) for row in rows if row["cluster_share"] not in ("", "nan")]
    scene = load_scene(path, [("output.fps", fps, "--set")])
    assert budget.sampled_frames(scene, first) - \
        budget.sampled_frames(scene, last) == len(measured)
    # one every 0.5 s: every frame at 2 fps, every 11.988 frames at 23.976
    gaps = set(np.diff(measured).tolist())
    assert gaps == {1} if fps == "2" else gaps <= {11, 12}


@pytest.mark.parametrize("name", ["murmuration", "flock3d", "plate", "classic"])
def test_a_resolved_scene_writes_itself_back_without_keys_it_does_not_read(name):
    import tomllib
    from pathlib import Path

    from render.scene import load_scene

    scene = load_scene(Path(__file__).parents[1] / "scenes" / f"{name}.toml")
    raw = tomllib.loads(scene.to_toml())
    again = build_scene(raw, "again.toml")
    assert again.to_dict() == scene.to_dict()
    three = scene.world.dimensions == 3
    assert ("bearing" in raw.get("hawk", {})) == (not three and "hawk" in raw)
    assert ("wall_margin" in raw["world"]) == (not three)
    assert ("falloff" in raw["rules"]) == (not three)
    assert ("hard_core" in raw["rules"]) == three
    assert ("gather" in raw["rules"]) == three


def test_a_key_the_dimension_does_not_read_is_not_held_to_one_it_does():
    # separation_radius ≤ perception_radius binds 2D; a 3D metric flock's perception
    # radius may be anything, whatever the unread separation radius defaults to.
    scene = build_scene(BASE, "s.toml", [("rules.neighbours", '"metric"', "--set"),
                                         ("rules.perception_radius", "0.5", "--set")])
    assert scene.rules.perception_radius == 0.5


def test_a_still_recorded_with_keys_its_dimension_does_not_read_draws_again(cli, tmp_path):
    # Records written before scenes left those keys out hold them: --from takes them.
    from PIL import Image, PngImagePlugin

    from render.encode.still import provenance

    scene = build_scene({**BASE, "scene": {"settle_steps": 5}, "output": {"size": "32x18"},
                         "hawk": {"mode": "hunt", "speed": 20.0}})
    text = scene.to_toml().replace("[hawk]\n", "[hawk]\nbearing = 20.0\nduration = 4.3\n")
    text = text.replace("[world]\n", "[world]\nwall_margin = 5.0\n")
    text = text.replace("[rules]\n", "[rules]\nfalloff = \"unit\"\nmax_force = 3.0\n")
    info = PngImagePlugin.PngInfo()
    for key, value in provenance(text, scene.scene.seed, 0, "0").items():
        info.add_itxt(key, value)
    old = tmp_path / "old.png"
    Image.new("RGBA", (32, 18)).save(old, pnginfo=info)
    r = cli("--from", old, "-o", tmp_path / "again.png", "--check")
    assert r.code == 0, r.err


def test_a_landing_or_a_hunt_the_clip_never_reaches_is_refused_an_excerpt_is_not():
    """The clip ends at output.frames where they run past scene.duration, and a landing
    or a hunt after its end, or a landing with the roost off, is a mistake told at the
    setting given last; a later setting that cuts them off is an excerpt."""
    landing = {**BASE, "scene": {"duration": 40.0},
               "roost": {"landing_at": 60.0}, "output": {"fps": 24}}
    assert build_scene({**landing, "output": {"fps": 24, "frames": 2000}}).frame_count == 2000
    text = problems({**landing, "output": {"fps": 24, "frames": 1200}})
    assert text.endswith("s.toml: roost.landing_at: the landing starts after the clip's "
                         "end: expected below the clip's end (1200 frames at 24 fps: 50 s), "
                         "got 60.0"), text
    assert "expected below scene.duration (40.0 s), got 60.0" in problems(landing)
    short = {**landing, "scene": {"duration": 80.0}, "output": {"fps": 24, "frames": 240}}
    assert build_scene(short).frame_count == 240  # the clip's first 10 s: an excerpt
    off = {**BASE, "roost": {"landing_at": 5.0, "enabled": False}}
    assert problems(off).endswith("roost.landing_at: a landing needs the roost: expected "
                                  "roost.enabled = true, got false")
    with pytest.raises(SceneError) as err:
        build_scene({**BASE, "roost": {"landing_at": 5.0}}, "s.toml",
                    [("roost.enabled", "false", "--set")])
    assert err.value.problems == ["--set roost.enabled: a landing (roost.landing_at = 5.0) "
                                  "needs the roost: expected true, got false"]
    late = {**BASE, "hawk": {"start": 12.0}}
    assert problems(late).endswith("hawk.start: the hunt starts after the clip's end: "
                                   "expected below scene.duration (10.0 s), got 12.0")
    assert build_scene({**BASE, "hawk": {"start": 2.0}}, "s.toml",
                       [("scene.duration", "1.0", "--duration")]).hawk.start == 2.0


def test_a_dimension_the_scene_cannot_have_is_the_one_problem_told():
    """world.dimensions = 4 leaves every other section read as neither 2D's nor 3D's: one
    line, not one per camera key. A 2D scene switched to 3D on the command line is told
    it is written for 2D, once, its speeds not weighed against 3D's flight."""
    raw = {**BASE, "camera": {"fov": 20.0, "look_at": [0.0, 0.0, 50.0]}}
    with pytest.raises(SceneError) as err:
        build_scene(raw, "s.toml", [("world.dimensions", "4", "--set")])
    assert err.value.problems == ["--set world.dimensions: expected a value ≤ 3, got 4"]
    plate = {"flock": {"count": 100, "max_speed": 5.7}, "rules": {"separation_radius": 1.0}}
    with pytest.raises(SceneError) as err:
        build_scene(plate, "s.toml", [("world.dimensions", "3", "--set")])
    assert len(err.value.problems) == 1 and err.value.problems[0].startswith(
        "--set world.dimensions: the scene is written for 2D (rules.separation_radius): "
        "expected 2, got 3"), err.value.problems
