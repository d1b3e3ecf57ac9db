"""Property: whatever scene and overrides a user writes, boids-render either renders it or
exits 2 with one clear line per problem, never a traceback (hypothesis generates them).

Generated values are either junk (wrong types, NaN, infinities, huge or negative numbers,
misspelt keys and sections) or valid values from ranges small enough that a two-frame
render of a tiny frame takes milliseconds; the file runs in a few seconds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import tempfile
from pathlib import Path

import imageio.v3 as iio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from render.cli import main
from render.scene import SECTIONS

FIELDS = {name: {f.name: f.metadata for f in dataclasses.fields(cls)}
          for name, cls in SECTIONS.items()}
DOTTED = [f"{section}.{key}" for section, keys in FIELDS.items() for key in keys]

# Valid values for the settings that decide how long a render takes, kept cheap: at most
# a few hundred birds, a few steps per frame, small frames.
CHEAP = {
    "scene.settle_steps": st.integers(0, 5),
    "scene.dt": st.floats(1 / 240, 1.0),
    "scene.duration": st.floats(0.01, 100),
    "world.width": st.floats(1.0, 60.0),
    "world.height": st.floats(1.0, 60.0),
    "flock.count": st.integers(1, 60),
    "flock.spacing": st.floats(4.0, 50.0),
    "rules.perception_radius": st.floats(0.01, 30.0),
    "output.size": st.builds("{}x{}".format, st.integers(1, 48), st.integers(1, 48)),
    "output.fps": st.one_of(st.integers(1, 120), st.just("24000/1001")),
    "output.frames": st.integers(1, 3),
}

# Wrong in type or far out of range. Numbers that happen to be valid are tiny or huge, so
# none makes an expensive render (a valid 10⁸ settle steps would merely be slow); the
# huge ones are refused by validation or by the time budget.
JUNK = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=12),
    st.booleans(),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e300, -1e300, 0.0, -1.0, 5e-324,
                     1e-12, 1e17]),
    st.integers(0, 3),
    st.integers(-10**18, -1),
    st.integers(10**16, 2**63 - 1),
    st.floats(max_value=-1e-3, allow_infinity=False),
    st.floats(min_value=1e17, allow_infinity=False),  # as an int: past every limit
    st.lists(st.integers(-5, 5), max_size=3),
    st.dictionaries(st.sampled_from(["a", "count"]), st.integers(0, 3), max_size=2),
)
# Every generated scene starts from this cheap one; generated keys replace its values.
BASE = {"scene": {"settle_steps": 2}, "flock": {"count": 30}, "output": {"size": "32x18"}}
# Hypothesis renders dozens of scenes: the full suite runs them, the inner loop does not.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_numba_thread")]


def valid(dotted: str):
    """A value the validator should accept for `dotted` (cheap to render)."""
    if dotted in CHEAP:
        return CHEAP[dotted]
    section, _, key = dotted.partition(".")
    meta = FIELDS[section][key]
    kind = meta["kind"]
    if kind in ("float", "int"):
        lo = meta["lo"] if meta["lo"] is not None else -100
        hi = meta["hi"] if meta["hi"] is not None else 100
        if kind == "int":
            return st.integers(int(lo) + meta["lo_open"], int(hi) - meta["hi_open"])
        return st.floats(lo, hi, exclude_min=meta["lo_open"], exclude_max=meta["hi_open"])
    if kind == "bool":
        return st.booleans()
    if kind == "choice":
        return st.sampled_from(meta["choices"])
    if kind == "color":
        return st.from_regex(r"\A#[0-9A-Fa-f]{6}\Z")
    if kind == "point":
        return st.lists(st.floats(-100, 100), min_size=2, max_size=2)
    if kind == "path":
        return st.lists(st.floats(-100, 100), min_size=3, max_size=3).map(
            lambda k: [[0.0, k[1], k[2]], [1.0 + abs(k[0]), k[2], k[1]]])
    return st.text(max_size=8)


def value_for(dotted: str, sloppy: bool):
    known = dotted.partition(".")[2] in FIELDS.get(dotted.partition(".")[0], {})
    if not known:
        return JUNK
    return st.one_of(valid(dotted), valid(dotted), JUNK) if sloppy else valid(dotted)


@st.composite
def scenes(draw) -> dict:
    """A scene: half the time only known keys with valid values (which may still conflict,
    such as min_speed > max_speed), otherwise with junk values, keys and sections mixed in."""
    sloppy = draw(st.booleans())
    extra = ["rulez", "flok"] if sloppy else []
    doc = {}
    for name in draw(st.lists(st.sampled_from([*SECTIONS, *extra]), unique=True,
                              max_size=7)):
        if sloppy and draw(st.integers(0, 9)) == 0:
            doc[name] = draw(JUNK)  # not a table
            continue
        keys = [*FIELDS.get(name, {}), *(["cuont", "bogus"] if sloppy else [])]
        chosen = draw(st.lists(st.sampled_from(keys), unique=True, max_size=4))
        doc[name] = {key: draw(value_for(f"{name}.{key}", sloppy)) for key in chosen}
    for name, body in BASE.items():
        if isinstance(doc.setdefault(name, {}), dict):
            for key, value in body.items():
                if not (key == "count" and "spacing" in doc[name]):
                    doc[name].setdefault(key, value)
    return doc


@st.composite
def overrides(draw) -> str:
    sloppy = draw(st.booleans())
    dotted = draw(st.sampled_from([*DOTTED, *(["flock.cuont", "wrold.width", "seed"]
                                              if sloppy else [])]))
    if sloppy and draw(st.integers(0, 5)) == 0:
        return dotted  # no "="
    value = draw(value_for(dotted, sloppy))
    text = value if isinstance(value, str) and draw(st.booleans()) else toml_value(value)
    return f"{dotted}={text}"


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") \
            if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"


def toml_text(doc: dict) -> str:
    lines = []
    for name, body in doc.items():
        if isinstance(body, dict):
            lines.append(f"[{name}]")
            lines += [f"{key} = {toml_value(v)}" for key, v in body.items()]
        else:
            lines.insert(0, f"{name} = {toml_value(body)}")  # top-level keys come first
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------


def run(scene_text: str, sets: list[str]) -> None:
    """Render `scene_text` with `sets` as --set overrides and check the property."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scene.toml"
        path.write_text(scene_text, encoding="utf-8")
        out = Path(tmp) / "out"
        argv = [str(path), "-o", f"{out}/", "--frames", "2", "-q"]
        for text in sets:
            argv += ["--set", text]
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
        message = err.getvalue()
        assert "Traceback" not in message
        if code == 0:
            frames = sorted(out.iterdir())
            assert [p.name for p in frames] == ["frame_00000.png", "frame_00001.png"]
            assert iio.imread(frames[0]).ndim == 3
            return
        assert code == 2, message
        lines = message.splitlines()
        assert lines, "exit 2 without saying why"
        for line in lines:
            assert line.startswith("boids-render: "), line
            # Each line names where the problem is: the file, the flag that set it, or
            # (a request too large to work) the output.
            assert str(path) in line or any(flag in line for flag in ("--set", "--frames")) \
                or str(out) in line, line
            assert any(word in line for word in (
                "expected", "unknown", "not both", "TOML syntax", "needs", "would take")), line
        assert not out.exists() or not any(out.iterdir())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=scenes(), sets=st.lists(overrides(), max_size=3))
def test_any_scene_and_overrides_render_or_exit_2_with_one_line_per_problem(doc, sets):
    run(toml_text(doc), sets)


@settings(max_examples=150, deadline=None)
@given(doc=scenes(), cut=st.integers(0, 400), junk=st.sampled_from(
    ["=", "[", "]", '"', "\n[", " = = ", "\x00", "[[a]]", "\ufeff", "a.b.c = 1"]))
def test_malformed_toml_exits_2_with_the_line_or_renders(doc, cut, junk):
    text = toml_text(doc)
    cut = min(cut, len(text))
    run(text[:cut] + junk + text[cut:], [])
