"""Scene files as a user meets them: loading, precedence, validation messages, --check."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from render.cli import overrides_from, parser
from render.scene import WorldSettings, load_scene

SCENES = Path(__file__).resolve().parents[1] / "scenes"
PLATE = SCENES / "plate.toml"
MURMURATION = SCENES / "murmuration.toml"


def resolve(*argv):
    """The Scene the command line would build from `argv` (same overrides, same order)."""
    args = parser().parse_args([str(a) for a in argv])
    return load_scene(args.scene, overrides_from(args))


def sources(scene) -> dict[str, str]:
    return dict(scene.sources)


def check_output(text: str) -> dict[str, tuple[str, str]]:
    """Parse --check output into {"section.key": (printed value, source)}."""
    out, section = {}, None
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        if line.startswith("[") and line.rstrip().endswith("]"):
            section = line.strip()[1:-1]
            continue
        setting, sep, source = line.rpartition(" # ")
        assert sep, f"no source on --check line {line!r}"
        key, _, value = setting.partition(" = ")
        out[f"{section}.{key.strip()}"] = (value.strip(), source.strip())
    return out


# ---------------------------------------------------------------------------------------
# The shipped scene and precedence: defaults < scene file < command line


def test_shipped_plate_scene_loads_with_spec_values():
    scene = load_scene(PLATE)
    assert scene.scene.name == "plate"
    assert (scene.world.width, scene.world.height) == (80.0, 45.0)
    assert scene.count == 3600  # spacing 1 over 80 x 45 (docs/model.md, the plate)
    assert scene.rules.perception_radius == 2.15
    assert scene.rules.separation_radius == 0.82
    assert scene.scene.settle_steps == 60
    assert sources(scene)["scene.name"] == "scene file"


def test_the_default_scene_is_the_3d_film():
    # `make render` renders scenes/murmuration.toml: the 20,000-starling film, not the plate.
    scene = load_scene(MURMURATION)
    assert scene.scene.name == "murmuration"
    assert scene.dimensions == 3
    assert scene.count == 20000
    assert scene.rules.topological_count == 7
    assert scene.camera is None  # filmed by the default camera, from the ground
    assert sources(scene)["scene.name"] == "scene file"

def test_keys_missing_from_the_scene_file_take_the_defaults(small_scene):
    scene = resolve(small_scene)
    assert scene.world.wall_margin == WorldSettings().wall_margin
    assert sources(scene)["world.wall_margin"] == "default"


@pytest.mark.parametrize("text, told", [("", True), ("# to do\n[scene]\n", True),
                                         ("[scene]\nseed = 1\n", False)])
def test_a_file_that_sets_nothing_is_said_to(cli, write_scene, text, told):
    path = write_scene(text)
    # Its one key overridden, the file still set it.
    result = cli(path, "--check", "--set", "flock.count=50", "--seed", "2")
    assert result.code == 0
    assert (f"{path}: the file sets no key" in result.err) == told
    assert "sets no key" not in cli(path, "--check", "--quiet").err


def test_scene_file_value_overrides_the_default(small_scene):
    scene = resolve(small_scene)
    assert scene.scene.seed == 3  # the built-in default is 0
    assert sources(scene)["scene.seed"] == "scene file"


def test_set_overrides_the_scene_file(small_scene):
    scene = resolve(small_scene, "--set", "scene.seed=5", "--set", "flock.count=50")
    assert scene.scene.seed == 5
    assert scene.count == 50
    assert sources(scene)["scene.seed"] == "--set"
    assert sources(scene)["flock.count"] == "--set"


@pytest.mark.parametrize("text, name", [("2026", "2026"), ("true", "true"),
                                         ("1979-05-27", "1979-05-27"), ('"quoted"', "quoted"),
                                         ("dusk study", "dusk study")])
def test_a_name_set_is_text_whatever_it_reads_as(small_scene, text, name):
    scene = resolve(small_scene, "--set", f"scene.name={text}", "--set", "scene.seed=5")
    assert scene.scene.name == name
    assert scene.scene.seed == 5  # numbers elsewhere still read as TOML


def test_later_set_wins_over_earlier_set(small_scene):
    scene = resolve(small_scene, "--set", "scene.seed=5", "--set", "scene.seed=6")
    assert scene.scene.seed == 6


@pytest.mark.parametrize("argv", [
    ("--set", "scene.seed=5", "--seed", "9"),
    ("--seed", "9", "--set", "scene.seed=5"),
], ids=["set-then-flag", "flag-then-set"])
def test_explicit_flag_overrides_set_whatever_the_order(small_scene, argv):
    scene = resolve(small_scene, *argv)
    assert scene.scene.seed == 9
    assert sources(scene)["scene.seed"] == "--seed"


def test_size_and_fps_flags_override_set_and_scene_file(small_scene):
    scene = resolve(small_scene, "--set", "output.size=640x360", "--size", "320x180",
                    "--set", "output.fps=25", "--fps", "24")
    assert scene.output.size == (320, 180)
    assert scene.output.fps == Fraction(24)
    assert sources(scene)["output.size"] == "--size"
    assert sources(scene)["output.fps"] == "--fps"


def test_set_count_replaces_the_spacing_the_scene_file_gives(cli):
    # count and spacing are two ways to say one thing; the command line outranks the file,
    # so `--set flock.count=200` on the shipped (spacing-based) scene must simply win.
    # There is no TOML null to unset the file's spacing from the command line.
    r = cli(PLATE, "--check", "--set", "flock.count=200")
    assert r.code == 0, r.err
    scene = resolve(PLATE, "--set", "flock.count=200")
    assert scene.count == 200


def test_count_and_spacing_both_on_the_command_line_is_an_error(cli, small_scene):
    r = cli(small_scene, "--check", "--set", "flock.count=50", "--set", "flock.spacing=2")
    assert r.code == 2
    assert "count or spacing" in r.err


# ---------------------------------------------------------------------------------------
# A scene file that extends another: its tables over the other's, below the command line


def test_the_shipped_web_loop_is_the_film_with_its_loop_settings():
    # scenes/web-loop.toml stands for the command line docs/loops.md gave before it.
    loop = load_scene(SCENES / "web-loop.toml")
    film = resolve(MURMURATION, "--duration", 6, "--loop", "--crossfade", 4, "--set",
                   "camera.follow=track", "--set", "roost.radius=60.0", "--set",
                   "roost.return_cap=2.5", "--set", "scene.name=web-loop")
    assert loop.to_toml() == film.to_toml()
    assert sources(loop)["roost.radius"] == "scene file"
    assert sources(loop)["flock.count"] == f"from {MURMURATION.parent}/murmuration.toml"


@pytest.fixture
def extended(write_scene, tmp_path):
    """A 3D base scene in a folder of its own, and a writer of scenes extending it."""
    (tmp_path / "base").mkdir()
    write_scene("""
        [scene]
        name = "base"
        seed = 4
        duration = 20.0
        [world]
        dimensions = 3
        [flock]
        count = 100
        max_speed = 18.0
        [rules]
        neighbours = "topological"
        [flight]
        [roost]
        landing_at = 10.0
        """, "base/base.toml")
    return lambda text: write_scene('extends = "base/base.toml"\n' + text, "child.toml")


def test_a_scene_file_replaces_only_the_settings_it_names(write_scene, small_scene_text,
                                                          tmp_path):
    (tmp_path / "base").mkdir()
    write_scene(small_scene_text, "base/small.toml")
    child = write_scene('extends = "base/small.toml"\n[scene]\nname = "child"\n'
                        '[flock]\nspacing = 2.0\n', "child.toml")
    scene = resolve(child, "--seed", 9)
    assert (scene.scene.name, scene.scene.seed, scene.scene.duration) == ("child", 9, 1.0)
    assert scene.flock.spacing == 2.0 and scene.flock.count is None  # one replaces the other
    assert scene.flock.init == "uniform"
    said = sources(scene)
    assert (said["scene.name"], said["scene.seed"]) == ("scene file", "--seed")
    assert said["flock.init"] == f"from {child.parent}/base/small.toml"
    # The command line's spacing replaces the count the extended file gives.
    bare = write_scene('extends = "base/small.toml"\n', "bare.toml")
    scene = resolve(bare, "--set", "flock.spacing=2.0")
    assert (scene.flock.spacing, scene.flock.count) == (2.0, None)


def test_a_length_the_extending_file_gives_cuts_the_film_short_of_its_landing(extended, cli):
    # Its length is given over the landing, as --duration is: an excerpt, not a mistake,
    # and so it stays when the scene is built again (the API's frame at another size).
    from render import api

    child = extended("[scene]\nduration = 2.0\n")
    scene = load_scene(child)
    assert (scene.scene.duration, scene.roost.landing_at) == (2.0, 10.0)
    assert api._rebuilt(scene, [("output.size", "64x36", "size=")]).scene.duration == 2.0
    r = cli(extended("[roost]\nlanding_at = 30.0\n"), "--check")
    assert r.code == 2
    assert "child.toml: roost.landing_at: the landing starts after the clip's end" in r.err


@pytest.mark.parametrize("text, told", [
    ("", "base/base.toml: flock.max_speed: expected a value ≥ 0"),  # the base's own
    ("[flok]\ncount = 5\n", "child.toml: [flok]: unknown section (did you mean 'flock'?)"),
    ("[flock]\ncont = 5\n", "child.toml: flock.cont: unknown key (did you mean 'count'?)")])
def test_a_problem_is_told_in_the_file_that_has_it(extended, cli, text, told):
    child = extended(text)
    if not text:
        base = child.parent / "base" / "base.toml"
        base.write_text(base.read_text().replace("max_speed = 18.0", "max_speed = -1.0"))
    r = cli(child, "--check")
    assert r.code == 2
    assert told in r.err, r.err


@pytest.mark.parametrize("text, told", [
    ('extends = "nowhere.toml"\n', "child.toml: extends: no such scene file nowhere.toml"),
    ("extends = 3\n", "child.toml: extends: expected the path of a scene file, relative to "
                      "this one, got 3"),
    ('extends = "child.toml"\n', "child.toml: extends: the scenes extend each other in a "
                                 "circle (child.toml → child.toml)")])
def test_what_a_scene_extends_must_be_a_scene_file_it_does_not_lead_back_to(
        write_scene, cli, monkeypatch, text, told):
    child = write_scene(text, "child.toml")
    monkeypatch.chdir(child.parent)
    r = cli("child.toml", "--check")
    assert r.code == 2
    assert r.err.strip() == f"boids-render: {told}", r.err


def test_two_scene_files_extending_each_other_are_told_the_circle(write_scene, cli,
                                                                   monkeypatch):
    write_scene('extends = "b.toml"\n[flock]\ncount = 5\n', "a.toml")
    b = write_scene('extends = "a.toml"\n', "b.toml")
    monkeypatch.chdir(b.parent)
    r = cli("a.toml", "--check")
    assert "b.toml: extends: the scenes extend each other in a circle (a.toml → b.toml → " \
           "a.toml)" in r.err, r.err


# ---------------------------------------------------------------------------------------
# Command-line values are validated like scene-file values


@pytest.mark.parametrize("argv, key, got", [
    (("--set", "rules.cohesion_weight=abc"), "rules.cohesion_weight", "got 'abc'"),
    (("--set", "flock.count=2.5"), "flock.count", "got 2.5"),
    (("--set", "flock.count=true"), "flock.count", "got true"),
    (("--set", "rules.perception_radius=0"), "rules.perception_radius", "got 0"),
    (("--set", "render.opacity_max=1.5"), "render.opacity_max", "got 1.5"),
    (("--set", "output.crf=52"), "output.crf", "got 52"),
    (("--set", "rules.falloff=cubic"), "rules.falloff", "got 'cubic'"),
    (("--set", "rules.cohesion_weight=nan"), "rules.cohesion_weight", "got nan"),
    (("--set", "rules.cohesion_weight=inf"), "rules.cohesion_weight", "got inf"),
    (("--set", "world.width=-inf"), "world.width", "got -inf"),
    (("--set", "output.fps=nan"), "output.fps", "got nan"),
    (("--seed", "-1"), "scene.seed", "got -1"),
    (("--seed", "seven"), "scene.seed", "got 'seven'"),
    (("--fps", "0"), "output.fps", "got '0'"),
    (("--fps", "1/0"), "output.fps", "got '1/0'"),
    (("--size", "1920by1080"), "output.size", "got '1920by1080'"),
    (("--duration", "soon"), "scene.duration", "got 'soon'"),
    (("--frames", "0"), "output.frames", "got 0"),
    (("--crf", "99"), "output.crf", "got 99"),
], ids=lambda v: " ".join(v) if isinstance(v, tuple) else None)
def test_command_line_value_is_validated_like_the_file(cli, small_scene, argv, key, got):
    r = cli(small_scene, "--check", *argv)
    assert r.code == 2
    assert r.out == ""
    assert len(r.err_lines) == 1, r.err
    line = r.err_lines[0]
    assert argv[0] in line  # names where the value came from (--set, --seed, …)
    assert key in line
    assert "expected" in line
    assert got in line


# ---------------------------------------------------------------------------------------
# Scene-file validation: one line per problem, naming file, section.key, expected and got


@pytest.mark.parametrize("body, key, expected, got", [
    ('[flock]\ncount = "many"', "flock.count", "expected an integer", "got 'many'"),
    ("[flock]\ncount = 0", "flock.count", "expected a value ≥ 1", "got 0"),
    ("[scene]\nseed = 1.5", "scene.seed", "expected an integer", "got 1.5"),
    ("[scene]\nseed = nan", "scene.seed", "expected an integer", "got nan"),
    ("[scene]\ndt = -inf", "scene.dt", "expected", "got -inf"),
    ("[flock]\nmin_speed = true", "flock.min_speed", "expected a number", "got true"),
    ('[world]\nboundary = "torus"', "world.boundary", "expected one of wrap | walls | none",
     "got 'torus'"),
    ('[rules]\nfalloff = "inverse-square"', "rules.falloff", "did you mean 'inverse_square'",
     "got 'inverse-square'"),
    ("[rules]\nperception_radius = 0.0", "rules.perception_radius", "expected a value > 0",
     "got 0"),
    ("[rules]\ncohesion_weight = nan", "rules.cohesion_weight", "expected a finite number",
     "got nan"),
    ("[rules]\nperception_radius = inf", "rules.perception_radius",
     "expected a finite number", "got inf"),
    ("[render]\nopacity_max = 1.5", "render.opacity_max", "expected a value ≤ 1", "got 1.5"),
    ("[output]\ncrf = 52", "output.crf", "expected a value ≤ 51", "got 52"),
    ('[output]\nsize = "1920x"', "output.size", "expected a size", "got '1920x'"),
    ('[output]\nfps = "fast"', "output.fps", "expected a frame rate", "got 'fast'"),
    # a number is the nearest ratio with a denominator ≤ 1001: 0 here (refused, its range
    # said to hold it), and 0.0007 silently read 1/1001
    ("[output]\nfps = 0.0001", "output.fps", 'as a string, such as "1/10000"', "got 0.0001"),
    ("[output]\nfps = 0.0007", "output.fps", 'such as "7/10000"', "got 0.0007"),
    ('[palette]\nink = "blue"', "palette.ink", "expected a colour", "got 'blue'"),
], ids=lambda v: v.replace("\n", " ") if isinstance(v, str) and v.startswith("[") else None)
def test_bad_scene_file_value_is_one_line_naming_key_expected_and_got(
        cli, write_scene, body, key, expected, got):
    path = write_scene(body + "\n")
    r = cli(path, "--check")
    assert r.code == 2
    assert len(r.err_lines) == 1, r.err
    line = r.err_lines[0]
    assert str(path) in line
    assert key in line
    assert expected in line
    assert got in line


@pytest.mark.parametrize("body, key, expected", [
    ("[flock]\ncount = 10\nmin_speed = 6.0\nmax_speed = 5.0", "flock.min_speed",
     "expected ≤ flock.max_speed"),
    ("[flock]\ncount = 10\n[rules]\nperception_radius = 2.0\nseparation_radius = 3.0",
     "rules.separation_radius", "expected ≤ rules.perception_radius"),
    ("[flock]\ncount = 10\nspacing = 2.0", "flock.count", "count or spacing, not both"),
], ids=["min_speed>max_speed", "separation>perception", "count+spacing"])
def test_inconsistent_settings_are_rejected(cli, write_scene, body, key, expected):
    r = cli(write_scene(body + "\n"), "--check")
    assert r.code == 2
    assert len(r.err_lines) == 1, r.err
    assert key in r.err and expected in r.err


def test_inconsistency_created_by_set_is_rejected(cli, small_scene):
    r = cli(small_scene, "--check", "--set", "flock.min_speed=9", "--set", "flock.max_speed=4")
    assert r.code == 2
    assert "flock.min_speed" in r.err and "got 9" in r.err


def test_unknown_key_in_file_suggests_the_closest_and_lists_valid_keys(cli, write_scene):
    r = cli(write_scene("[rules]\nperceptoin_radius = 3.0\n"), "--check")
    assert r.code == 2
    assert "rules.perceptoin_radius" in r.err
    assert "did you mean 'perception_radius'" in r.err
    assert "separation_radius" in r.err  # the list of valid keys


def test_unknown_key_in_set_suggests_the_closest(cli, small_scene):
    r = cli(small_scene, "--check", "--set", "flock.cuont=5")
    assert r.code == 2
    assert "--set flock.cuont" in r.err
    assert "did you mean 'count'" in r.err


def test_unknown_section_in_file_suggests_the_closest(cli, write_scene):
    r = cli(write_scene("[rulez]\nfalloff = \"unit\"\n"), "--check")
    assert r.code == 2
    assert "rulez" in r.err and "unknown section" in r.err
    assert "did you mean 'rules'" in r.err


def test_unknown_section_in_set_suggests_the_closest(cli, small_scene):
    r = cli(small_scene, "--check", "--set", "wrold.width=10")
    assert r.code == 2
    assert "wrold" in r.err and "unknown section" in r.err
    assert "did you mean 'world'" in r.err


@pytest.mark.parametrize("setting, told", [
    ("FLOCK.COUNT=50", "--set FLOCK.COUNT: unknown section (did you mean 'flock'?)"),
    ("flock.separation_weight=2", "--set flock.separation_weight: unknown key (did you mean "
                                  "rules.separation_weight?)")])
def test_a_set_in_the_wrong_case_or_section_is_offered_the_right_one(cli, small_scene,
                                                                     setting, told):
    r = cli(small_scene, "--check", "--set", setting)
    assert r.code == 2 and told in r.err, r.err


@pytest.mark.parametrize("text, line", [
    ("seed = 3\n[scene]\nduration = 1.0\n",
     "seed: expected under [scene], got it outside any section"),
    ("zoom = 3\n", "zoom: unknown key outside any section; sections: scene, world,"),
    ("[view]\nzoom = 2\n", "[view]: unknown section; sections: scene, world,"),
    # Spelt wrong above every section: the closest key, and where it goes.
    ("seeed = 3\n", "seeed: unknown key outside any section (did you mean 'seed' under "
                   "[scene]?); sections: scene, world,"),
    ('extend = "base.toml"\n', "extend: unknown key outside any section (did you mean "
                              "'extends'?)"),
    # A key of another section: that section's key, before a look-alike of this one's.
    ("[flock]\nperception_radius = 5.0\n",
     "flock.perception_radius: unknown key (did you mean rules.perception_radius?); "
     "valid keys: count,"),
    ("[world]\ndimensions = 3\n[flock]\nlanding_at = 5.0\n",
     "flock.landing_at: unknown key (did you mean roost.landing_at?)"),
    # ... where one section holds it: `enabled` is in many.
    ("[flock]\nenabled = false\n", "flock.enabled: unknown key; valid keys: count,"),
    ("[Flock]\ncount = 50\n", "[Flock]: unknown section (did you mean 'flock'?)"),
    ("[flock]\nCOUNT = 50\n", "flock.COUNT: unknown key (did you mean 'count'?)"),
    ("[[camera]]\nfov = 30.0\n", "[[camera]]: expected one [camera] table, got an array of 1"),
    ("[scene]\nseed = 1\n[scene]\nseed = 2\n",
     "TOML syntax error: [scene] appears twice (at line 3, column 7)"),
    # TOML says "Cannot overwrite a value" of a key or a table given twice.
    ("[flock]\ncount = 5\ncount = 6\n",
     "TOML syntax error: count is set twice in one table (at line 3, column 10)"),
    ('[hawk]\nmode = "hunt"\n[[hawk]]\n',
     "TOML syntax error: [hawk] appears twice (at line 3, column 7)"),
    # A header without its "]", read by TOML as the earlier table declared again.
    ("[scene]\nseed = 1\n[flock]\ncount = 5\n[scene\nname = \"x\"\n",
     "TOML syntax error: [scene: expected ] to end the section's header (at line 5, "
     "column 7)"),
    # Nested past Python's stack: an internal error (RecursionError) before.
    ("[flock]\ncount = " + "[" * 1000 + "]" * 1000 + "\n",
     "TOML syntax error: arrays or tables nested too deeply"),
    # The other dimension's key spelt wrong, a key of two sections, one of a section the
    # scene's dimension has not: none had a hint, or a misleading one ('min_speed').
    ("[rules]\nhardcore = 0.2\n", "rules.hardcore: unknown key (did you mean 'hard_core' "
                                  "(3D)?)"),
    ("[output]\nduration = 5.0\n", "output.duration: unknown key (did you mean "
                                   "scene.duration or hawk.duration?)"),
    ("[flock]\ncruise_speed = 10.0\n", "flock.cruise_speed: unknown key (did you mean "
                                       "flight.cruise_speed (3D)?)"),
    ("[flock]\nperception_radis = 2.0\n", "flock.perception_radis: unknown key (did you "
                                          "mean rules.perception_radius?)"),
    ('[scene]\nextends = "base.toml"\n', "scene.extends: unknown key (extends goes at the "
                                         "top of the file, above every section)"),
    ("flcok = 5\n", "flcok: unknown key outside any section (did you mean a [flock] "
                    "section?)"),
    # Alone: read as 2D, a 3D scene's every key was refused after it (23 lines).
    ("[world]\ndimension = 3\n[flight]\ncruise_speed = 10.0\n[rules]\nhard_core = 0.2\n",
     "world.dimension: unknown key (did you mean 'dimensions'?)"),
    # The name goes into files' metadata (a PDF's title refused a NUL).
    ('[scene]\nname = "a\\u0000b"\n', "scene.name: expected text without a NUL "
                                       "character, got 'a\\x00b'"),
    # Whole numbers are within 1e9 too (a 301-digit frame count was taken).
    ("[output]\nframes = 1e300\n", "output.frames: expected a value ≤ 1e9, got 1e+300"),
    ("[scene]\nduration = 1e300\n", "scene.duration: expected a value ≤ 1e9 s, got 1e+300"),
    ('[flock]\ncount = "5"\n', "flock.count: expected an integer, got '5': a number is "
                               "written without quotes, 5"),
])
def test_a_scene_file_slip_is_named_as_written(cli, write_scene, text, line):
    path = write_scene(text)
    r = cli(path, "--check")
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    assert r.err_lines[0].startswith(f"boids-render: {path}: {line}"), r.err


@pytest.mark.parametrize("given, says", [
    ("seed=3", " (did you mean scene.seed=3?)"),  # the section that holds the key
    ("cuont=5", " (did you mean flock.count=5?)"),  # a near miss's
    ("enabled=true", " (did you mean flight.enabled=true or roost.enabled=true or "
                     "atmosphere.enabled=true or another section's?)"),
    ("zzz=1", ""), ("seed", "")])
def test_set_without_section_dot_key_is_bad_input(cli, small_scene, given, says):
    r = cli(small_scene, "--check", "--set", given)
    assert r.code == 2
    assert r.err_lines == [f"boids-render: --set {given}: expected section.key=value{says}"]


def test_toml_syntax_error_gives_line_and_column(cli, write_scene):
    path = write_scene('[scene]\nname = "x"\nseed = = 3\n')
    r = cli(path, "--check")
    assert r.code == 2
    assert len(r.err_lines) == 1, r.err
    assert str(path) in r.err
    assert "line 3" in r.err and "column" in r.err


def test_missing_scene_file_is_bad_input(cli, tmp_path, monkeypatch):
    r = cli(tmp_path / "nowhere.toml", "--check")
    assert r.code == 2
    assert "nowhere.toml" in r.err and "no such scene file" in r.err
    assert "did you mean" not in r.err
    # A slip of the name, or the shipped scene's name given without its folder
    (tmp_path / "scenes").mkdir()
    (tmp_path / "scenes" / "murmuration.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    for given in ("scenes/murmuraton.toml", "murmuration.toml"):
        r = cli(given, "--check")
        assert r.code == 2 and r.err.strip().endswith(
            f"{given}: no such scene file; did you mean scenes/murmuration.toml?"), r.err
    # A name like nothing here is not offered the nearest of unlike ones
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "a.toml").write_text("")
    r = cli("flock.toml", "--check")
    assert r.code == 2 and "did you mean" not in r.err, r.err


def test_a_bare_word_where_toml_wants_a_value_is_told_to_quote_it(cli, write_scene):
    path = write_scene("[camera]\neasing = smooth  # eased\n")
    r = cli(path, "--check")
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    assert r.err.strip().endswith('a string is written in quotes, easing = "smooth"'), r.err
    path = write_scene("[camera]\neasing = [smooth]\n", "other.toml")
    assert "in quotes" not in cli(path, "--check").err  # not a bare word: no guess
    path = write_scene("[output]\nloop = True\n", "bool.toml")  # quoted, still no bool
    assert cli(path, "--check").err.strip().endswith(
        "TOML writes it in lower case, loop = true")
    # Tokens TOML stops inside of, or reads as a comment: no hint before.
    for line, quoted in (("size = 1920x1080", 'size = "1920x1080"'),
                         ("fps = 24000/1001", 'fps = "24000/1001"'),
                         ("background = #000000", 'background = "#000000"')):
        path = write_scene(f"[output]\n{line}\n", "token.toml")
        assert cli(path, "--check").err.strip().endswith(
            f"a string is written in quotes, {quoted}"), line
    # A number's slip is no string: quoted, it would be refused as one.
    for section, line in (("scene", "dt = 1/60"), ("flock", "count = 1,000")):
        path = write_scene(f"[{section}]\n{line}\n", "number.toml")
        r = cli(path, "--check")
        assert r.code == 2 and "TOML syntax error" in r.err and "quotes" not in r.err, r.err


def test_every_problem_is_reported_at_once(cli, write_scene):
    path = write_scene('[flock]\ncount = "many"\n[rules]\nfalloff = "cubic"\n')
    r = cli(path, "--check")
    assert r.code == 2
    assert len(r.err_lines) == 2, r.err
    assert "flock.count" in r.err_lines[0] or "flock.count" in r.err_lines[1]
    assert any("rules.falloff" in line for line in r.err_lines)


def test_file_and_command_line_problems_are_reported_together(cli, write_scene):
    path = write_scene('[flock]\ncount = "many"\n[rules]\nfalloff = "cubic"\n')
    r = cli(path, "--check", "--set", "render.opacity_max=7")
    assert r.code == 2
    assert len(r.err_lines) == 3, r.err
    assert any("--set render.opacity_max" in line for line in r.err_lines)


# ---------------------------------------------------------------------------------------
# Frame rates and sizes


@pytest.mark.parametrize("argv", [
    ("--fps", "24000/1001"),
    ("--set", "output.fps=24000/1001"),
    ("--set", 'output.fps="24000/1001"'),
], ids=["--fps", "--set bare", "--set quoted"])
def test_rational_fps_on_the_command_line_is_exact(small_scene, argv):
    assert resolve(small_scene, *argv).output.fps == Fraction(24000, 1001)


def test_rational_fps_in_the_scene_file_is_exact(write_scene):
    path = write_scene('[output]\nfps = "24000/1001"\n')
    scene = resolve(path)
    assert scene.output.fps == Fraction(24000, 1001)
    assert isinstance(scene.output.fps, Fraction)


@pytest.mark.parametrize("written, rate", [
    ("29.97", Fraction(30000, 1001)), ("23.976", Fraction(24000, 1001)),
    ("23.98", Fraction(24000, 1001)), ("23.97", Fraction(24000, 1001)),  # 23.976 cut short
    ("59.94", Fraction(60000, 1001)), ("47.96", Fraction(1199, 25)),
    ("29.9", Fraction(299, 10)),  # one digit: 29.97 rounds to 30.0, and cuts need two
    ("119.88", Fraction(120000, 1001)), ("29.970", Fraction(30000, 1001)),
    ("2997/100", Fraction(2997, 100)), ("29.5", Fraction(59, 2)), ("24.0", Fraction(24)),
    ("12.5", Fraction(25, 2))])
def test_an_ntsc_rate_written_as_a_decimal_is_that_rate(small_scene, write_scene, written,
                                                          rate):
    """29.97 in an editor's menu is 30000/1001, and 23.97 is said for 23.976 as 23.98 is;
    a ratio is taken as written, and a decimal no NTSC rate rounds or cuts to stays
    itself."""
    ways = [("--fps", written), ("--set", f"output.fps={written}"),
            (write_scene(f'[output]\nfps = "{written}"\n'),)]
    if "/" not in written:  # a TOML number
        ways.append((write_scene(f"[output]\nfps = {written}\n"),))
    for way in ways:
        scene = resolve(*way) if len(way) == 1 else resolve(small_scene, *way)
        assert scene.output.fps == rate, way


def test_integer_fps_is_a_fraction(write_scene):
    assert resolve(write_scene("[output]\nfps = 30\n")).output.fps == Fraction(30)


def test_size_parses_to_width_and_height(write_scene, small_scene):
    assert resolve(write_scene('[output]\nsize = "1920x1080"\n')).output.size == (1920, 1080)
    assert resolve(small_scene, "--size", "1920x1080").output.size == (1920, 1080)


def test_duration_and_fps_give_the_frame_count(small_scene):
    assert resolve(small_scene, "--fps", "24", "--duration", "2.5").frame_count == 60
    # rounded to the nearest, a half to the even (docs/outputs.md, "Frame timing")
    assert resolve(small_scene, "--fps", "25", "--duration", "0.5").frame_count == 12
    assert resolve(small_scene, "--fps", "25", "--duration", "0.54").frame_count == 14
    assert resolve(small_scene, "--fps", "24", "--duration", "1.03").frame_count == 25
    assert resolve(small_scene, "--frames", "7").frame_count == 7


# ---------------------------------------------------------------------------------------
# --check


def test_check_prints_each_setting_with_its_source(cli, small_scene):
    r = cli(small_scene, "--check", "--set", "flock.count=50", "--seed", "9")
    assert r.code == 0
    assert r.err == ""
    assert "50 birds" in r.out.splitlines()[0]
    settings = check_output(r.out)
    assert settings["scene.name"] == ('"small"', "scene file")
    assert settings["flock.count"] == ("50", "--set")
    assert settings["scene.seed"] == ("9", "--seed")
    assert settings["world.wall_margin"] == (str(WorldSettings().wall_margin), "default")
    assert settings["output.size"] == ('"160x90"', "scene file")


def test_check_renders_nothing(cli, small_scene, tmp_path):
    target = tmp_path / "out" / "clip.mp4"
    r = cli(small_scene, "--check", "-o", target)
    assert r.code == 0
    assert not target.parent.exists()


# ---------------------------------------------------------------------------------------
# Relations between settings, and values no render could use


def test_relation_broken_by_set_names_the_flag_not_the_file(cli, small_scene):
    r = cli(small_scene, "--check", "--set", "flock.max_speed=2")
    assert r.code == 2
    assert r.err_lines == ["boids-render: --set flock.max_speed: expected ≥ flock.min_speed "
                           "(3.6), got 2.0"]


def test_relation_broken_by_the_file_names_the_file(cli, write_scene):
    path = write_scene("[hawk]\nperiod = 2.0\n")
    r = cli(path, "--check")
    assert r.code == 2
    assert r.err_lines == [f"boids-render: {path}: hawk.period: expected ≥ hawk.duration "
                           f"(4.3), got 2.0"]


def test_relations_are_checked_alongside_unrelated_problems(cli, write_scene):
    path = write_scene('[flock]\ncount = 10\nmin_speed = 6.0\nmax_speed = 5.0\n'
                       '[rules]\nfalloff = "cubic"\n')
    r = cli(path, "--check", "--set", "render.width_min=0.5", "--set", "render.width_max=0.2")
    assert r.code == 2
    assert len(r.err_lines) == 3, r.err
    assert any("rules.falloff" in line for line in r.err_lines)
    assert any("flock.min_speed" in line and "expected ≤ flock.max_speed" in line
               for line in r.err_lines)
    assert any(line.startswith("boids-render: --set render.width_min: expected ≤ "
                               "render.width_max") for line in r.err_lines)


def test_a_rejected_value_is_not_reported_again_by_a_relation(cli, write_scene):
    # max_speed is rejected; comparing min_speed with the default in its place would add
    # a second, misleading line.
    r = cli(write_scene('[flock]\ncount = 10\nmin_speed = 9.0\nmax_speed = "fast"\n'),
            "--check")
    assert r.code == 2
    assert len(r.err_lines) == 1, r.err
    assert "flock.max_speed" in r.err and "got 'fast'" in r.err


def test_count_and_spacing_both_from_set_names_the_flag(cli, small_scene):
    r = cli(small_scene, "--check", "--set", "flock.count=50", "--set", "flock.spacing=2")
    assert r.code == 2
    assert r.err_lines[0].startswith("boids-render: --set flock.")


@pytest.mark.parametrize("body, key, expected", [
    ("[world]\nwidth = 1e12", "world.width", "expected a value ≤ 1e9 world units"),
    ("[world]\nheight = 1e-9", "world.height", "expected a value ≥ 1e-06"),
    ("[field]\nwavelength_x = 5e-324", "field.wavelength_x", "expected a value ≥ 1e-9"),
    ("[field]\ndrift_x = 1e300", "field.drift_x", "between -1e9 and 1e9"),
    ("[scene]\ndt = 1e-12", "scene.dt", "expected a value ≥ 1e-06 s"),
    # rounded to a millionth of a second, it was 0: an internal ZeroDivisionError
    ("[scene]\ndt = 1e-7", "scene.dt", "expected a value ≥ 1e-06 s"),
    ("[attractor]\nposition = [1e300, 0]", "attractor.position", "between -1e9 and 1e9"),
    ("[flock]\nspacing = 1e-7", "flock.spacing", "expected a spacing ≥ 0.0268"),
    ('[output]\nsize = "2000000x1000"', "output.size",
     "expected each side in 1..1000000 px, got 2000000x1000: at this aspect the largest is "
     "1000000x500"),
    ("[attractor]\npath = [[1, 0, 0], [0, 1, 1]]", "attractor.path",
     "expected keyframe times in increasing order: keyframe 2 of 2 at t = 0.0 does not come "
     "after 1.0; got 1.0, 0.0"),
    ("[camera]\npath = [[0, 40, 22, 80, 0], [0, 40, 22, 60, 0]]", "camera.path",
     "keyframe 2 of 2 at t = 0.0 does not come after 0.0; got 0.0, 0.0"),
    ("[camera]\npath = [[0, 40, 22, 80, 0], [1, 40, 22, 0, 0]]", "camera.path",
     "keyframe 2 of 2 (t = 1.0): expected its width > 0, got 0.0"),
    ("[attractor]\npath = [[0, 0, 0], [1, \"far\", 1]]", "attractor.path",
     "keyframe 2 of 2, its x: expected a number, got 'far'"),
], ids=lambda v: v.replace("\n", " ") if isinstance(v, str) and v.startswith("[") else None)
def test_value_no_render_could_use_is_one_line_saying_what_would_work(
        cli, write_scene, body, key, expected):
    path = write_scene(body + "\n")
    r = cli(path, "--check")
    assert r.code == 2
    assert len(r.err_lines) == 1, r.err
    assert f"{path}: {key}" in r.err
    assert expected in r.err


def test_a_scene_file_saved_with_a_byte_order_mark_reads(cli, tmp_path):
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + b'[scene]\nname = "bom"\n')
    r = cli(path, "--check")
    assert r.code == 0 and 'name = "bom"' in r.out, r.err


def test_a_scene_path_that_is_not_a_file_is_named(cli, write_scene, tmp_path):
    (tmp_path / "dangling.toml").symlink_to(tmp_path / "gone.toml")
    r = cli(tmp_path / "dangling.toml", "--check")  # was offered itself
    assert r.code == 2 and r.err_lines == [
        f"boids-render: {tmp_path / 'dangling.toml'}: a link to {tmp_path / 'gone.toml'}, "
        f"which does not exist"], r.err
    for extends, says in ((".", f"{tmp_path} is a folder: expected a scene file"),
                          ("", "expected the path of a scene file, relative to this one, "
                               "got ''")):
        path = write_scene(f'extends = "{extends}"\n', "child.toml")
        r = cli(path, "--check")
        assert r.code == 2 and r.err_lines == [f"boids-render: {path}: extends: {says}"]
    write_scene("", "murmuration.toml")
    path = write_scene('extends = "murmuraton.toml"\n', "child.toml")
    assert cli(path, "--check").err.strip().endswith(
        f"; did you mean {tmp_path / 'murmuration.toml'}?")


def test_scene_file_that_is_not_utf8_is_one_line(cli, tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes('[scene]\nname = "Étourneaux"\n'.encode("latin-1"))
    r = cli(path, "--check")
    assert r.code == 2
    assert len(r.err_lines) == 1, r.err
    assert str(path) in r.err and "UTF-8" in r.err


def test_quality_presets_sit_between_the_scene_file_and_explicit_options(cli):
    from conftest import SCENES

    r = cli(SCENES / "plate.toml", "--check", "--quality", "preview", "--crf", "30",
            "--set", "output.fps=25")
    assert r.code == 0, r.err
    lines = {line.split("=")[0].strip(): line for line in r.out.splitlines() if "=" in line}
    assert '"1280x720"' in lines["size"] and "--quality preview" in lines["size"]
    assert "30" in lines["crf"] and "--crf" in lines["crf"]
    assert '"25"' in lines["fps"] and "--set" in lines["fps"]
    r = cli(SCENES / "plate.toml", "--check", "--quality", "film")
    lines = {line.split("=")[0].strip(): line for line in r.out.splitlines() if "=" in line}
    assert "motion_blur = 8" in lines["motion_blur"] and '"24"' in lines["fps"]


def test_unknown_quality_is_bad_input(cli):
    from conftest import SCENES

    assert cli(SCENES / "plate.toml", "--check", "--quality", "ultra").code == 2


def test_a_huge_value_is_refused_in_one_short_line(cli, tmp_path):
    """A value pasted by mistake is not echoed whole, and an integer past Python's
    4,300-digit conversion limit is a mistake to report, not an internal error."""
    scene = tmp_path / "s.toml"
    for text in (f'[flock]\ncount = "{"a" * 200_000}"\n', f"[flock]\ncount = {'7' * 5000}\n"):
        scene.write_text(text)
        r = cli(scene, "--check")
        assert r.code == 2 and len(r.err_lines) == 1 and len(r.err) < 300, r.err[:300]
    scene.write_text("[flock]\ncount = 10\n")
    for value in ("7" * 100_000, "7" * 4000, f'"{"b" * 100_000}"'):
        r = cli(scene, "--set", f"flock.count={value}", "--check")
        assert r.code == 2 and len(r.err_lines) == 1 and len(r.err) < 300, r.err[:300]
        assert r.err.startswith("boids-render: --set flock.count: expected"), r.err[:300]
    # A name as long: a key, a section, an override's (echoed whole, about 100 kB each).
    for text in (f"[flock]\n{'k' * 100_000} = 5\n", f"[{'s' * 100_000}]\nk = 5\n"):
        scene.write_text(text)
        r = cli(scene, "--check")
        assert r.code == 2 and len(r.err_lines) == 1 and len(r.err) < 300, r.err[:300]
        assert r.err.rstrip().endswith("characters): expected a section's name") or \
            r.err.rstrip().endswith("characters): expected a setting's name"), r.err[:300]
    scene.write_text("[flock]\ncount = 10\n")
    r = cli(scene, "--set", f"flock.{'k' * 100_000}=5", "--check")
    assert r.code == 2 and len(r.err_lines) == 1 and len(r.err) < 300, r.err[:300]


@pytest.mark.parametrize("sets, named", [
    ([("camera.follow_time", "0.01", "--set")], "--set camera.follow_time"),
    ([("camera.follow_time", "0.1", "scene file"), ("scene.dt", "0.1", "--set")],
     "--set scene.dt"),
])
def test_a_follow_quicker_than_two_steps_is_refused(sets, named):
    # The follow's spring diverged: a frame of one colour, after numpy's overflow warning.
    from render.errors import SceneError
    from render.scene import build_scene

    with pytest.raises(SceneError) as caught:
        build_scene({"world": {"boundary": "walls"}, "camera": {"follow": "centroid"}},
                    "t.toml", sets)
    [problem] = caught.value.problems
    assert problem.startswith(f"{named}: expected camera.follow_time ≥ 2 × scene.dt"), problem
