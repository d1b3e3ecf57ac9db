"""Scene files: TOML read, overrides applied, every setting validated before anything runs.

Precedence is one rule: built-in defaults < a scene file it extends (`extends`, its own
below it) < scene file < command line (`--set` and explicit flags). Every problem is
collected and raised at once as one SceneError. Imports no numpy, numba or cairo.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import tomllib
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..errors import SceneError
from .checks3d import check_hunt_and_landing
from .schema import (ALWAYS_3D, MAX_BIRDS, OPTIONAL_SECTIONS, SECTIONS, SECTIONS_2D,
                     SECTIONS_3D, SECTIONS_3D_CLASSES, Scene, bird_estimate, instead,
                     unread_keys)
from .schema3d import (DEFAULTS_3D, HUNT_3D, RoostSettings, camera_placed, default_points,
                       keyframes)
from .values import SHOWN, closest, convert, show, suggest


def load_scene(path: str | Path, overrides: list[tuple[str, str, str]] = ()) -> Scene:
    """Read a scene file (and the files it extends) and apply overrides, then validate
    everything at once.

    `overrides` are (dotted key, raw value, source label) with the raw value in TOML syntax
    (a bare word is taken as a string). Raises SceneError listing every problem found.
    """
    path = str(path)
    raw, origins = _extended(_read(path), path, (path,))
    return build_scene(raw, path, overrides, origins)


def _nearest_file(path: str) -> str:
    """"; did you mean …?" with the scene file whose name is nearest `path`'s, in its
    folder or in scenes/ beside it (where the shipped ones are), else ""."""
    folder = os.path.dirname(path) or "."
    found = {}
    for where in (os.path.join(folder, "scenes"), folder):  # the folder's own first
        try:
            found |= {Path(n).stem: os.path.join(where, n) for n in os.listdir(where)
                      if n.endswith(".toml") and n != "pyproject.toml"}
        except OSError:
            continue
    found = {stem: near for stem, near in found.items()
             if os.path.normpath(near) != os.path.normpath(path)}
    near = closest(Path(path).stem, list(found), cutoff=0.75)
    return f"; did you mean {os.path.normpath(found[near])}?" if near else ""


def _unquoted(path: str, said: str) -> str:
    """A hint for TOML's complaint about a value at a line holding a bare word or token
    (theme = dark, size = 1920x1080, background = #000000): a string is written in quotes;
    True is written true. Else ""."""
    at = re.search(r"(?:Invalid value|Expected newline or end of document after a "
                   r"statement) \(at line (\d+), column \d+\)", said)
    line = _line(path, int(at[1])) if at else None
    # A token with no spaces: "#…" is one too (TOML reads it as a comment, the value lost).
    word = line and re.match(r"\s*([A-Za-z_][\w.-]*)\s*=\s*(#?[^\s#\"'\[\]{}=]+)\s*"
                             r"(#.*)?$", line)
    if not word or word[2] in ("true", "false", "inf", "nan"):
        return ""
    if word[2].lower() in ("true", "false"):
        return f": TOML writes it in lower case, {word[1]} = {word[2].lower()}"
    # A token of digits is a string only where the setting takes text (1920x1080 as a
    # size, 24000/1001 as a frame rate); a number's (dt = 1/60) is no string.
    if not re.match(r"[A-Za-z_#]", word[2]) and not _kinds(word[1]) & _TEXT_KINDS:
        return ""
    return f": a string is written in quotes, {word[1]} = \"{word[2]}\""


# Settings whose value is written as a string.
_TEXT_KINDS = {"str", "choice", "color", "fps", "size", "aspect", "path"}


def _kinds(key: str) -> set[str]:
    """The kinds (`setting(kind=…)`) of the settings named `key`, in any section."""
    return {f.metadata.get("kind") for cls in (*SECTIONS.values(),
                                               *SECTIONS_3D_CLASSES.values())
            for f in dataclasses.fields(cls) if f.name == key}


def _line(path: str, number: int) -> str | None:
    """Line `number` (from 1) of the text file at `path`, or None."""
    try:
        with open(path, encoding="utf-8-sig") as fh:
            return fh.read().split("\n")[number - 1]  # TOML's lines end at \n alone
    except (OSError, UnicodeDecodeError, IndexError):
        return None


def _twice(path: str, said: str) -> str | None:
    """TOML's "Cannot overwrite a value" said as what is given twice: a key in its table,
    or a table ([[hawk]] after [hawk]); a header without its "]", which TOML reads as a
    table declared again when one of that name came before; None where the line says
    none of these."""
    at = re.fullmatch(r"Cannot (?:overwrite a value|declare .*? twice) (\(at line (\d+), "
                      r"column \d+\))", said)
    line = _line(path, int(at[2])) if at else None
    if line is None:
        return None
    if line.strip().startswith("[") and "]" not in line:
        return f"{line.strip()}: expected ] to end the section's header {at[1]}"
    if not said.startswith("Cannot overwrite"):
        return None
    table = re.match(r"\s*\[\[?\s*([^\]]*?)\s*\]", line)
    if table:
        return f"[{table[1]}] appears twice {at[1]}"
    key = re.match(r"\s*([A-Za-z0-9_.-]+)\s*=", line)
    return None if key is None else f"{key[1]} is set twice in one table {at[1]}"


def _read(path: str) -> dict:
    """The TOML of a scene file, or a SceneError naming what is wrong with it."""
    try:
        with open(path, "rb") as fh:
            # An editor's byte-order mark is no part of the text.
            return tomllib.loads(fh.read().decode("utf-8-sig"))
    except FileNotFoundError:
        if os.path.islink(path):
            raise SceneError([f"{path}: a link to {os.readlink(path)}, which does not "
                              f"exist"]) from None
        raise SceneError([f"{path}: no such scene file{_nearest_file(path)}"]) from None
    except tomllib.TOMLDecodeError as exc:
        said = _twice(path, str(exc)) or _REPEATED.sub(
            lambda m: f"[{'.'.join(_QUOTED.findall(m[1]))}] appears twice", str(exc))
        raise SceneError([f"{path}: TOML syntax error: {said}{_unquoted(path, str(exc))}"]) \
            from None
    except UnicodeDecodeError as exc:
        still = f"; a PNG still: --from {path} draws the scene it records" \
            if str(path).lower().endswith(".png") else ""
        raise SceneError([f"{path}: expected UTF-8 text (TOML), got byte "
                          f"0x{exc.object[exc.start]:02x} at offset {exc.start}{still}"]) \
            from None
    except ValueError:  # tomllib's int() of a literal past Python's 4,300 digits
        raise SceneError([f"{path}: TOML syntax error: an integer of more than 4,300 "
                          f"digits"]) from None
    except RecursionError:  # tomllib reads nested arrays recursively
        raise SceneError([f"{path}: TOML syntax error: arrays or tables nested too deeply"]) \
            from None
    except OSError as exc:
        raise SceneError([f"{path}: cannot read: {exc.strerror}"]) from None


# A scene file's top-level key naming the scene file it extends.
EXTENDS = "extends"
# [flock]'s settings that stand for each other: setting one replaces the other where a file
# below (one extended, or the scene file under the command line) sets it.
_ALTERNATIVES = {"count": "spacing", "spacing": "count"}


def _extended(raw: dict, path: str, chain: tuple[str, ...]) -> tuple[dict, dict[str, str]]:
    """(the scene file's TOML `raw` over that of the file its `extends` names, a path
    relative to it, and so on down; which file each table and setting of the result came
    from, "section" or "section.key" → path, where not `path` itself). Each table of a file
    replaces only the settings it names of the same table below it. `chain`: the files
    read so far, `path` last (a file extending one of them would never end)."""
    if EXTENDS not in raw:
        return raw, {}
    raw = dict(raw)
    name = raw.pop(EXTENDS)
    if not isinstance(name, str) or not name.strip():
        raise SceneError([f"{path}: {EXTENDS}: expected the path of a scene file, relative to "
                          f"this one, got {show(name)}"])
    base = os.path.normpath(os.path.join(os.path.dirname(path), name))
    if os.path.isdir(base):
        raise SceneError([f"{path}: {EXTENDS}: {base} is a folder: expected a scene file"])
    if not os.path.isfile(base):
        raise SceneError([f"{path}: {EXTENDS}: no such scene file {base}"
                          f"{_nearest_file(base)}"])
    if any(os.path.samefile(base, read) for read in chain):
        raise SceneError([f"{path}: {EXTENDS}: the scenes extend each other in a circle "
                          f"({' → '.join((*chain, base))})"])
    below, origins = _extended(_read(base), base, (*chain, base))
    merged = dict(below)
    for section, body in below.items():
        origins.setdefault(section, base)
        if isinstance(body, dict):
            merged[section] = dict(body)
            for key in body:
                origins.setdefault(f"{section}.{key}", base)
    for section, body in raw.items():
        origins.pop(section, None)
        if not (isinstance(body, dict) and isinstance(merged.get(section), dict)):
            merged[section] = body
            continue
        for key, value in body.items():
            other = _ALTERNATIVES.get(key) if section == "flock" else None
            if other is not None and other not in body:
                merged[section].pop(other, None)
            merged[section][key] = value
            origins.pop(f"{section}.{key}", None)
    return merged, origins


# tomllib names a repeated table by its key tuple: "Cannot declare ('camera',) twice".
_REPEATED = re.compile(r"Cannot declare \(((?:'[^']*',? ?)+)\) twice")
_QUOTED = re.compile(r"'([^']*)'")


def parse_override(text: str) -> tuple[str, str]:
    """Split "section.key=value" (the --set syntax)."""
    key, sep, value = text.partition("=")
    if not sep or "." not in key:
        hint = _section_hint(key.strip(), value.strip()) if sep else ""
        raise SceneError([f"--set {text}: expected section.key=value{hint}"])
    return key.strip(), value.strip()


def _toml_value(raw: str):
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except (ValueError, RecursionError):  # TOMLDecodeError, an integer past Python's
        return raw                        # 4,300 digits, arrays nested past the stack


def _override_value(section: str, key: str, value):
    """An override's value: text read as TOML, as --set takes it, except for a setting
    that is free text (a scene's name), which keeps the text as written whatever it reads
    as: `--set scene.name=2026` names the scene "2026", not the integer."""
    if not isinstance(value, str):
        return value
    read = _toml_value(value)
    if isinstance(read, str):
        return read
    kinds = {f.metadata.get("kind") for cls in (SECTIONS[section],
                                                SECTIONS_3D_CLASSES.get(section))
             if cls is not None for f in dataclasses.fields(cls) if f.name == key}
    return value if kinds == {"str"} else read


def _closest(section: str) -> str:
    """" (did you mean 'x'?)", or the sections there are when none is close."""
    return suggest(section, SECTIONS) or f"; sections: {', '.join(SECTIONS)}"


def _stray(name: str, body, path: str) -> str:
    """The problem of a top-level name that is no section: an unknown [section], or a key
    written above every section header (named with the sections that hold such a key)."""
    if isinstance(body, dict):
        return f"{path}: [{name}]: unknown section{_closest(name)}"
    homes = _sections_with(name)
    if homes:
        return f"{path}: {name}: expected under {' or '.join(f'[{h}]' for h in homes)}, got " \
               f"it outside any section"
    homes = _homes(three=True) | _homes(three=False)
    # Among every key of the scene, only a near miss: "zoom" is not "loop".
    close = closest(name, [EXTENDS, *homes], cutoff=0.75)
    section = closest(name, SECTIONS, cutoff=0.75)
    hint = f" (did you mean a [{section}] section?)" if close is None and section else \
        "" if close is None else f" (did you mean '{close}'?)" if close == EXTENDS \
        else f" (did you mean '{close}' under [{homes[close]}]?)"
    return f"{path}: {name}: unknown key outside any section{hint}; sections: " \
           f"{', '.join(SECTIONS)}"


def _key_hint(section: str, key: str, readable, elsewhere, three: bool | None) -> str:
    """" (did you mean …?)" for `key`, unknown in `section` of a scene of this dimension
    (`three`, None: not known): the same key in one or two other sections; else a near miss
    among the section's keys (`readable`), those it has in the other dimension only
    (`elsewhere`), then every section's; "" when none is close."""
    if key == EXTENDS:
        return f" ({EXTENDS} goes at the top of the file, above every section)"

    def dimension(home: str, name: str) -> str:
        only = {SECTIONS_3D: 3, SECTIONS_2D: 2}
        for sections, d in only.items():
            if home in sections:
                return f" ({d}D)" if three is None or three != (d == 3) else ""
        if three is not None and name in unread_keys(three).get(home, ()):
            return f" ({2 if three else 3}D)"
        return ""

    homes = [home for home in _sections_with(key) if home != section]
    if len(homes) > 2:  # a key such as `enabled`, in many sections, points nowhere
        return ""
    if homes:
        return f" (did you mean " \
               f"{' or '.join(f'{h}.{key}{dimension(h, key)}' for h in homes)}?)"
    close = closest(key, readable)
    if close is None and elsewhere:
        close = closest(key, elsewhere)
    if close is not None:
        return f" (did you mean '{close}'{dimension(section, close)}?)"
    keys = _homes(True) | _homes(False) if three is None else _homes(three)
    close = closest(key, keys, cutoff=0.75)
    return "" if close is None else f" (did you mean {keys[close]}.{close}?)"


def _section_hint(name: str, value: str) -> str:
    """" (did you mean section.name=value?)" for a --set key without its section: the
    sections that hold it (the first three), or a near miss's; "" when none is close."""
    homes = _sections_with(name)
    if not homes:
        keys = _homes(three=True) | _homes(three=False)
        close = closest(name, keys, cutoff=0.75)
        homes, name = ([], name) if close is None else ([keys[close]], close)
    if not homes:
        return ""
    more = " or another section's" if len(homes) > 3 else ""
    return f" (did you mean {' or '.join(f'{h}.{name}={value}' for h in homes[:3])}{more}?)"


def _sections_with(name: str) -> list[str]:
    """The sections (of either dimension) that hold a key `name`."""
    return [section for section, cls in SECTIONS.items()
            if any(name in {f.name for f in dataclasses.fields(c)}
                   for c in (cls, SECTIONS_3D_CLASSES.get(section, cls)))]


def _homes(three: bool) -> dict[str, str]:
    """Each key a scene of this dimension (`three`) reads in one section only → that
    section (a key such as `enabled`, in many, points nowhere)."""
    unread = unread_keys(three)
    homes: dict[str, list[str]] = {}
    for name, cls in SECTIONS.items():
        if name in (SECTIONS_2D if three else SECTIONS_3D):
            continue
        for f in dataclasses.fields(SECTIONS_3D_CLASSES.get(name, cls) if three else cls):
            if f.name not in unread.get(name, ()):
                homes.setdefault(f.name, []).append(name)
    return {key: names[0] for key, names in homes.items() if len(names) == 1}


def build_scene(raw: dict, path: str = "<scene>",
                overrides: list[tuple[str, str, str]] = (),
                origins: dict[str, str] | None = None) -> Scene:
    """The Scene of a scene file's TOML `raw` (read from `path`) with `overrides`; origins:
    the file each table or setting came from where not `path` (see `_extended`)."""
    origins = origins or {}
    problems: list[str] = []
    sources: dict[str, str] = {}
    merged: dict[str, dict] = {}
    rejected: set[str] = set()  # "section.key" or "section" whose value was already reported

    for name, body in raw.items():
        where = origins.get(name, path)
        if len(name) > SHOWN:  # pasted by mistake: not echoed whole in every line
            problems.append(f"{where}: {show(name)}: expected a section's name")
            continue
        if name not in SECTIONS:
            problems.append(_stray(name, body, where))
            continue
        if isinstance(body, list) and body and all(isinstance(b, dict) for b in body):
            problems.append(f"{where}: [[{name}]]: expected one [{name}] table, got an "
                            f"array of {len(body)}")
            rejected.add(name)
            continue
        if not isinstance(body, dict):
            problems.append(f"{where}: {name}: expected a [{name}] table, got {show(body)}")
            rejected.add(name)
            continue
        merged[name] = {key: value for key, value in body.items() if len(key) <= SHOWN}
        problems += [f"{origins.get(f'{name}.{key}', where)}: {name}.{show(key)}: expected a "
                     f"setting's name" for key in body if len(key) > SHOWN]
        for key in merged[name]:
            dotted = f"{name}.{key}"
            sources[dotted] = f"{FROM}{origins[dotted]}" if dotted in origins else "scene file"

    for dotted, value, label in overrides:
        section, _, key = dotted.partition(".")
        if len(dotted) > SHOWN:
            problems.append(f"{label} {show(dotted)}: expected a setting's name")
            continue
        if section not in SECTIONS:
            problems.append(f"{label} {dotted}: unknown section{_closest(section)}")
            continue
        merged.setdefault(section, {})[key] = _override_value(section, key, value)
        sources[dotted] = label
        # count and spacing are alternatives: setting one replaces the file's other.
        other = _ALTERNATIVES.get(key) if section == "flock" else None
        if other and _in_a_file(sources.get(f"flock.{other}", "default")):
            merged["flock"].pop(other, None)
            sources.pop(f"flock.{other}")

    world = merged.get("world", {})
    if world.get("dimensions") == 3:
        for section, keys in DEFAULTS_3D.items():
            _fill(merged.setdefault(section, {}), keys)
        hawk = merged.get("hawk")
        if hawk is not None and hawk.setdefault("mode", "hunt") == "hunt":
            _fill(hawk, HUNT_3D)

    dimensions = world.get("dimensions")
    # A misspelt `dimensions` ("dimension = 3") is reported alone too: read as 2D, a 3D
    # scene's every key would be refused after it.
    misspelt = dimensions is None and any(closest(key, ["dimensions"], cutoff=0.75)
                                          for key in world)
    if misspelt or dimensions is not None and (isinstance(dimensions, bool)
                                               or dimensions not in (2, 3)):
        # Every other section is read as one dimension's or the other's: its keys would
        # only be refused against a dimension the scene does not have.
        _build_section(SECTIONS["world"], "world", world, path, sources, problems, rejected)
        raise SceneError(problems)
    three = dimensions == 3
    values: dict[str, Any] = {}
    for name, cls in SECTIONS.items():
        if three:
            cls = SECTIONS_3D_CLASSES.get(name, cls)
        elif name in ALWAYS_3D:
            values[name] = None  # a 2D scene that names it is refused below
            continue
        if name in OPTIONAL_SECTIONS and name not in merged:
            values[name] = None
            continue
        values[name] = _build_section(cls, name, merged.get(name, {}), path, sources,
                                      problems, rejected, three)
        if name in OPTIONAL_SECTIONS and not values[name].enabled:
            values[name] = None

    # Relations run even when other settings were rejected, so one run reports every
    # problem; those involving a rejected setting are skipped (it is reported already).
    _check_relations(values, merged, path, sources, rejected, problems)
    if problems:
        raise SceneError(problems)

    all_sources = {}
    for name, section in values.items():
        if section is None:
            continue
        for f in dataclasses.fields(section):
            key = f"{name}.{f.name}"
            all_sources[key] = sources.get(key, "default")
    return Scene(**values, path=path, sources=tuple(sorted(all_sources.items())))


def _fill(body: dict, defaults: dict) -> None:
    """The `defaults` a section's `body` does not set, set (a 3D scene's own defaults)."""
    for key, value in defaults.items():
        body.setdefault(key, value)


def _where(dotted: str, path: str, sources: dict[str, str]) -> str:
    """Message prefix naming where a setting came from: the file (the one it extends, for
    a setting from there), or the flag that set it (for a whole section, the flag that set
    any of its keys)."""
    label = sources.get(dotted, "default")
    if "." not in dotted:
        label = next((flag for key, flag in sources.items()
                      if key.startswith(f"{dotted}.") and flag not in _PRECEDENCE),
                     "scene file")
    if label == "default":  # set nowhere: the scene's own value all the same
        return f"{path}: {dotted} (the default)"
    if label.startswith(FROM):
        return f"{label.removeprefix(FROM)}: {dotted}"
    if label == "scene file":
        return f"{path}: {dotted}"
    # "--set output.size: ..." (the API's "overrides output.size"), but a flag or keyword
    # of its own names its key after it: "--size (output.size): ...", "size (...)".
    if label in ("--set", "overrides"):
        return f"{label} {dotted}"
    return f"{label.removesuffix('=')} ({dotted})"


def _build_section(cls, name, body, path, sources, problems, rejected, three=None):
    """`cls` from the section's `body`; its problems appended. `three`: whether the scene
    is 3D (None: not known), whose keys an unknown one is offered: the valid keys of this
    section, or the same key in another section."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unread = () if three is None else unread_keys(three).get(name, ())
    readable = [key for key in fields if key not in unread]
    # A section with a class of its own in 3D (the camera): the other dimension's keys.
    own_3d = SECTIONS_3D_CLASSES.get(name) is cls
    other = SECTIONS[name] if own_3d else SECTIONS_3D_CLASSES.get(name)
    others = {f.name for f in dataclasses.fields(other)} if other else set()
    kwargs = {}
    for key, value in body.items():
        prefix = _where(f"{name}.{key}", path, sources)
        if key not in fields and key in others:
            problems.append(f"{prefix}: a {2 if own_3d else 3}D-only key: expected "
                            f"world.dimensions = {2 if own_3d else 3}, got "
                            f"{3 if own_3d else 2}{instead(f'{name}.{key}', own_3d)}")
            continue
        if key not in fields:
            elsewhere = [k for k in (*fields, *others) if k not in readable]
            problems.append(f"{prefix}: unknown key"
                            f"{_key_hint(name, key, readable, elsewhere, three)}; "
                            f"valid keys: {', '.join(readable)}")
            continue
        try:
            kwargs[key] = convert(value, fields[key].metadata)
        except ValueError as exc:
            problems.append(f"{prefix}: {exc}")
            rejected.add(f"{name}.{key}")
    return cls(**kwargs)




# Settings that must not exceed another: (lower, upper).
_ORDERED = (("flock.min_speed", "flock.max_speed"),
            ("flock.min_speed", "flight.cruise_speed"),
            ("flight.cruise_speed", "flock.max_speed"),
            ("rules.separation_radius", "rules.perception_radius"),
            ("render.width_min", "render.width_max"),
            ("hawk.duration", "hawk.period"))
_PRECEDENCE = {"default": 0, "scene file": 1}  # any other source is the command line: 2
# The scene a still records: its path is "STILL (recorded scene)".
RECORDED_SCENE = "recorded scene"
# A setting from a scene file that the scene file extends: named "from <its path>", below
# the file that extends it (whose settings replace its own, as the command line does).
FROM, _EXTENDED = "from ", 0.5


def _in_a_file(label: str) -> bool:
    return label == "scene file" or label.startswith(FROM)


def _precedence(label: str) -> float:
    """The rank of a setting's source: the later, the higher."""
    return _EXTENDED if label.startswith(FROM) else _PRECEDENCE.get(label, 2)


def _check_relations(values, merged, path, sources, rejected, problems):
    """Problems between settings, each reported at the setting given last in precedence
    (the one the user most likely just changed), with the file or flag it came from."""

    def get(dotted):
        section, _, key = dotted.partition(".")
        return None if values[section] is None else getattr(values[section], key)

    def usable(*keys):
        return not any(k in rejected or k.partition(".")[0] in rejected for k in keys)

    def rank(dotted):
        return _precedence(sources.get(dotted, "default"))

    def where(dotted):
        return _where(dotted, path, sources)

    unread = unread_keys(values["world"].dimensions == 3)
    # A scene written for the other dimension (its world.dimensions changed on the command
    # line) is told so once: what it sets is not weighed against that dimension's defaults.
    fits = _check_dimensions(values, merged, where, usable, problems, rank)
    for low, high in _ORDERED if fits else ():
        lo, hi = get(low), get(high)
        if lo is None or hi is None or lo <= hi or not usable(low, high):
            continue
        if any(key.partition(".")[2] in unread.get(key.partition(".")[0], ())
               for key in (low, high)):
            continue  # a key this dimension does not read (a hunting hawk's duration)
        if rank(high) > rank(low):
            problems.append(f"{where(high)}: expected ≥ {low} ({show(lo)}), got {show(hi)}")
        else:
            problems.append(f"{where(low)}: expected ≤ {high} ({show(hi)}), got {show(lo)}")

    flock, world = values["flock"], values["world"]
    if fits:
        check_hunt_and_landing(values, merged, where, usable, problems, rank)
    if world.dimensions == 3 and values["camera"] is not None:
        _check_camera3d(values, where, usable, problems, rank)
    output = values["output"]
    if output.frames is None and usable("scene.duration", "output.fps", "output.frames") \
            and round(Fraction(values["scene"].duration) * output.fps) < 1:
        problems.append(f"{where('scene.duration')}: expected a clip of at least one frame "
                        f"(scene.duration × output.fps, rounded: ≥ "
                        f"{float(1 / (2 * output.fps)):.3g} s at {show(output.fps)} fps), "
                        f"got {show(values['scene'].duration)} s")
    if output.loop and usable("output.loop", "output.crossfade", "output.fps",
                              "output.frames", "scene.duration"):
        count = output.frames if output.frames is not None else \
            max(1, round(Fraction(values["scene"].duration) * output.fps))
        crossfade = round(output.crossfade * output.fps)
        length = "output.frames" if output.frames is not None else "scene.duration"
        if crossfade < 2:  # a morph of one frame is a cut: the seam shows
            problems.append(f"{where('output.crossfade')}: expected a crossfade of at least "
                            f"2 frames ({float(2 / output.fps):.3g} s at {show(output.fps)} "
                            f"fps), got {show(output.crossfade)} s ({crossfade} "
                            f"frame{'' if crossfade == 1 else 's'})")
        elif crossfade >= count and rank(length) > rank("output.crossfade"):
            problems.append(f"{where(length)}: expected a clip longer than the loop's "
                            f"crossfade ({crossfade} frames, output.crossfade "
                            f"{show(output.crossfade)} s), got {count} frames")
        elif crossfade >= count:
            problems.append(f"{where('output.crossfade')}: expected a crossfade shorter than "
                            f"the clip ({count} frames), got {show(output.crossfade)} s "
                            f"({crossfade} frames)")
        if values["render"].motion_blur > 1 and usable("render.motion_blur"):
            problems.append(f"{where('render.motion_blur')}: a loop's crossfade is drawn "
                            f"without motion blur: expected 1 with output.loop, got "
                            f"{values['render'].motion_blur}")
    camera = values["camera"]
    dt = values["scene"].dt
    if camera is not None and camera.follow != "none" and camera.follow_time < 2 * dt \
            and usable("camera.follow_time", "scene.dt"):
        # The follow's spring is stepped with the flock (semi-implicit): past ω·dt = 0.83
        # it diverges, and the camera flies off to infinity; under 0.5 it never overshoots.
        key = max(["camera.follow_time", "scene.dt"], key=rank)
        problems.append(f"{where(key)}: expected camera.follow_time ≥ 2 × scene.dt "
                        f"({2 * dt:.3g} s: the follow's spring is stepped with the flock), "
                        f"got {show(camera.follow_time)} s (scene.dt {dt:.3g} s)")
    if camera is not None and camera.follow == "centroid" and world.boundary == "wrap" \
            and usable("camera.follow", "world.boundary"):
        if rank("world.boundary") > rank("camera.follow"):
            problems.append(f"{where('world.boundary')}: a torus has no single centroid for "
                            f"camera.follow = \"centroid\": expected walls | none, got "
                            f"\"wrap\"")
        else:
            problems.append(f"{where('camera.follow')}: a torus has no single centroid to "
                            f"follow (world.boundary \"wrap\"): expected \"none\", got "
                            f"\"centroid\"")
    if flock.count is not None and flock.spacing is not None \
            and usable("flock.count", "flock.spacing"):
        key = "flock.spacing" if rank("flock.spacing") > rank("flock.count") else "flock.count"
        problems.append(f"{where(key)}: give count or spacing, not both "
                        f"(got count {show(flock.count)} and spacing {show(flock.spacing)})")
    elif usable("flock.count", "flock.spacing", "world.width", "world.height"):
        birds = bird_estimate(flock, world)
        if birds > MAX_BIRDS:
            if flock.count is not None:
                got = f"{flock.count:,}" if birds < 1e15 else show(flock.count)
                problems.append(f"{where('flock.count')}: expected at most {MAX_BIRDS:,} birds, "
                                f"got {got}")
            else:
                least = math.sqrt(world.width * world.height / MAX_BIRDS)
                shown = f"{birds:,.0f}" if birds < 1e15 else f"{birds:.3g}"
                problems.append(f"{where('flock.spacing')}: expected a spacing ≥ {least:.4g} "
                                f"(at most {MAX_BIRDS:,} birds in this world), got "
                                f"{show(flock.spacing or 1.0)} ({shown} birds)")


def _wrapped(key, listing, rules, where) -> str:
    """The problem of a wrapped 2D world whose birds pick neighbours by rank or through a
    blind cone (`listing`: those settings, with what they are), told at `key`."""
    need = " and ".join(listing.values()) + (" need" if len(listing) > 1 else " needs")
    if key == "world.boundary":
        return f"{where(key)}: {need} an open world: expected walls | none, got \"wrap\""
    wrapped = "world.boundary \"wrap\" here"
    if key == "rules.neighbours":
        return f"{where(key)}: topological neighbours need an open world ({wrapped}): " \
               f"expected \"metric\", got \"topological\""
    return f"{where(key)}: a blind cone needs an open world ({wrapped}): expected 0, " \
           f"got {show(rules.blind_angle)}"


def _check_dimensions(values, merged, where, usable, problems, rank):
    """Sections and settings that exist in one dimension only (one problem at
    world.dimensions when the command line changed it under a scene written for the other
    dimension: then False, and the checks that depend on the dimension are not made);
    topological k below the flock size."""
    world, rules = values["world"], values["rules"]
    if not usable("world.dimensions"):
        return False
    three = world.dimensions == 3
    other = [f"[{name}]" for name in (SECTIONS_3D if not three else SECTIONS_2D)
             if name in merged]
    other += [f"{section}.{key}" for section, names in unread_keys(three).items()
              for key in names
              if key in merged.get(section, {}) and usable(f"{section}.{key}")]
    if other and rank("world.dimensions") > _PRECEDENCE["scene file"]:
        problems.append(f"{where('world.dimensions')}: the scene is written for "
                        f"{2 if three else 3}D ({', '.join(other)}): expected "
                        f"{2 if three else 3}, got {world.dimensions}")
        return False  # what follows from the other dimension would only repeat it
    for name in other:
        kind = "3D-only" if not three else "2D-only"
        if name.startswith("["):
            problems.append(f"{where(name[1:-1])}: {name} is {kind}: expected "
                            f"world.dimensions = {3 if not three else 2}, got "
                            f"{world.dimensions}")
        else:
            problems.append(f"{where(name)}: a {kind} key: expected world.dimensions = "
                            f"{3 if not three else 2}, got {world.dimensions}"
                            f"{instead(name, three)}")
    if three and world.boundary != "none" and usable("world.boundary"):
        problems.append(f"{where('world.boundary')}: a 3D world is open sky: expected "
                        f"\"none\", got {show(world.boundary)}")
    listing = {}  # the settings that want an open world, and what they are
    if rules.neighbours == "topological":
        listing["rules.neighbours"] = "topological neighbours"
    if rules.blind_angle > 0.0:
        listing["rules.blind_angle"] = f"a blind cone ({show(rules.blind_angle)}°)"
    if not three and listing and world.boundary == "wrap" and usable(
            "world.boundary", "rules.neighbours", "rules.blind_angle"):
        problems.append(_wrapped(max(["world.boundary", *listing], key=rank), listing,
                                 rules, where))
    flock = values["flock"]
    if rules.neighbours == "topological" and usable(
            "rules.topological_count", "rules.neighbours", "flock.count", "flock.spacing",
            "world.width", "world.height"):
        if rules.topological_count >= bird_estimate(flock, world):
            problems.append(_too_few_birds(flock, world, rules.topological_count, where,
                                           rank))
    return True


def _too_few_birds(flock, world, k: int, where, rank) -> str:
    """The problem of a flock no larger than its birds' k, told at the setting given last
    of the two: the count or spacing just set, or k."""
    birds = bird_estimate(flock, world)
    size = "flock.count" if flock.count is not None else "flock.spacing"
    blamed = max(["rules.topological_count", size], key=rank)
    if blamed == "flock.count":
        return (f"{where(size)}: expected more birds than rules.topological_count ({k}), "
                f"at least {k + 1}, got {flock.count:,}")
    if blamed == "flock.spacing":
        most = math.sqrt(world.width * world.height / (k + 1))
        return (f"{where(size)}: expected a spacing ≤ {most:.4g} (more birds than "
                f"rules.topological_count, {k}), got {show(flock.spacing or 1.0)} "
                f"({birds:,.0f} birds)")
    return f"{where(blamed)}: expected k below the flock size ({birds:,.0f} birds), got {k}"


def _check_camera3d(values, where, usable, problems, rank):
    """A pinhole that can see: above the ground, looking somewhere, with an up that is not
    the view's own direction, at every keyframe (defaults filled in from the roost), each
    problem at the setting given last. A followed centroid is checked as the camera
    flies."""
    camera = values["camera"]
    name = "camera.path" if camera.path is not None else "camera.position"
    if not usable(name, "camera.look_at", "camera.up", "roost", "world"):
        return
    if math.hypot(*camera.up) == 0.0:
        problems.append(f"{where('camera.up')}: expected a direction, got a zero vector "
                        f"{list(camera.up)}")
        return
    # The settings a keyframe's view comes from: a problem is blamed on the one given last.
    looks = (name,) if camera.path is not None else ("camera.look_at", name)
    home = default_points(values["world"], values["roost"])[1]
    reach = (values["roost"] or RoostSettings()).radius
    for key in keyframes(camera, values["world"], values["roost"]):
        at = f" (keyframe t = {show(key[0])})" if camera.path is not None else ""
        if key[3] < 0.0:
            problems.append(f"{where(name)}: the camera is below the ground{at}: expected "
                            f"z ≥ 0 m, got {show(key[3])}")
        # A near plane past the roost clips the flock that flies about it: an empty sky.
        # (look_at only aims the camera; a camera inside the roost's circle is left be.)
        off = math.dist(key[1:4], home)
        if off > reach and camera.near >= off:
            blamed = max(("camera.near", name), key=rank)
            problems.append(f"{where(blamed)}: expected a near plane closer than the roost "
                            f"the flock flies about, {off:.1f} m away{at}, got "
                            f"camera.near = {show(camera.near)}")
        if camera.follow == "centroid":
            continue
        view = [b - a for a, b in zip(key[1:4], key[4:7])]
        if math.hypot(*view) < 1e-6:
            problems.append(f"{where(max(looks, key=rank))}: the camera looks at its own "
                            f"position{at}: expected look_at ≠ position, got "
                            f"{list(key[4:7])} for both")
            continue
        if parallel(camera.up, view):
            blamed = max(("camera.up", *looks), key=rank)
            problems.append(f"{where(blamed)}: expected an up vector not parallel to "
                            f"the view direction {[round(c, 6) for c in view]}{at}, got "
                            f"{list(camera.up)}")
    if camera.path is not None and camera.follow != "centroid" and not problems:
        _check_between_keys(camera, keyframes(camera, values["world"], values["roost"]),
                            where(max(("camera.up", "camera.path"), key=rank)), problems)


def _check_between_keys(camera, keys, where: str, problems) -> None:
    """The view between each two keyframes: their positions and look_at points are eased
    together, so the view is v0 + s·d for s from 0 to 1 (d = v1 − v0). Where it passes
    through zero (a pan of 180° through the lens) or along `up`, the pinhole has no
    direction or no screen-up: refused here, not met by the render mid-clip."""
    up = camera.up
    if camera.easing == "smooth":
        _check_smooth_keys(camera, keys, where, problems)
    else:
        _check_through_keys(keys, up, where, problems)
    if not problems:
        _check_turn_rate(camera, keys, where, problems)


# Faster than this the view does not pan but jumps (a 180° whip pan in 0.3 s; a look_at
# that passes a hair from the camera swung the view 32° between two frames at 30 fps).
MOST_TURN_DEG_S = 600.0
TURN_SAMPLES_S = 120  # views a second the turn is read at


def _check_turn_rate(camera, keys, where: str, problems) -> None:
    """The view's turn between each two keyframes, read TURN_SAMPLES_S times a second:
    refused where it passes MOST_TURN_DEG_S, naming the keyframes and the moment."""
    import numpy as np  # here: loading a scene loads no numpy (--check answers at once)

    from .easing import keyed

    rows = np.asarray(keys, np.float64)
    for a, b in zip(keys, keys[1:]):
        count = max(2, math.ceil((b[0] - a[0]) * TURN_SAMPLES_S) + 1)
        times = np.linspace(a[0], b[0], count)
        eased = np.array([keyed(rows, t, camera.easing) for t in times])
        views = eased[:, 4:7] - eased[:, 1:4]
        views /= np.linalg.norm(views, axis=1, keepdims=True)
        cos = np.clip(np.einsum("ij,ij->i", views[:-1], views[1:]), -1.0, 1.0)
        rate = np.degrees(np.arccos(cos)) / np.diff(times)
        k = int(np.argmax(rate))
        if rate[k] > MOST_TURN_DEG_S:
            at = (times[k] + times[k + 1]) / 2
            problems.append(f"{where}: the view would turn {rate[k]:.0f}°/s at t = "
                            f"{at:.2f} s, between keyframes t = {show(a[0])} and t = "
                            f"{show(b[0])} (its look_at passes close by the camera): "
                            f"expected at most {MOST_TURN_DEG_S:.0f}°/s, a pan rather than "
                            f"a jump; add a keyframe between them")
            return


def _check_through_keys(keys, up, where: str, problems) -> None:
    """`_check_between_keys` for a path eased linearly or in and out: the view is a line
    between two keys, solved exactly."""
    for a, b in zip(keys, keys[1:]):
        v0 = [look - at for at, look in zip(a[1:4], a[4:7])]
        d = [(look - at) - v for at, look, v in zip(b[1:4], b[4:7], v0)]
        span = f"between keyframes t = {show(a[0])} and t = {show(b[0])}"
        # The least view, then where its cross product with up is least: (v0 + s·d) × up
        # is v0 × up + s·(d × up), zero only if the view lies along up there.
        for s, along in ((_least(v0, d), False), (_least(_cross(v0, up), _cross(d, up)), True)):
            view = [v + s * e for v, e in zip(v0, d)]
            if math.hypot(*view) < 1e-6:
                problems.append(f"{where}: the camera would look at its own position {span} "
                                f"(its look_at passes through it): expected a view that "
                                f"keeps a direction; add a keyframe between them")
                break
            if along and parallel(up, view):
                problems.append(f"{where}: expected an up vector not parallel to the view "
                                f"{span}: it turns through {list(up)} there; add a "
                                f"keyframe between them, or give camera.up another "
                                f"direction")


# Views a `smooth` path is read at between two keyframes, each least refined from there:
# its position and look_at are cubics of their own, so the view is no line to solve.
SMOOTH_SAMPLES = 256


def _check_smooth_keys(camera, keys, where: str, problems) -> None:
    """`_check_between_keys` for a `smooth` path: between each two keyframes, the least
    view and the least angle between the view and `up`, each found among SMOOTH_SAMPLES
    times and then narrowed to its bottom."""
    import numpy as np  # here: loading a scene loads no numpy (--check answers at once)

    from .easing import keyed

    rows = np.asarray(keys, np.float64)
    up = np.asarray(camera.up, np.float64) / np.linalg.norm(camera.up)

    def view(t: float) -> np.ndarray:
        row = keyed(rows, t, "smooth")
        return row[4:7] - row[1:4]

    def off_up(t: float) -> float:  # |sin| of the angle to up; 0: along it (or no view)
        v = view(t)
        return float(np.linalg.norm(np.cross(v, up)) / max(np.linalg.norm(v), 1e-300))

    for a, b in zip(keys, keys[1:]):
        span = f"between keyframes t = {show(a[0])} and t = {show(b[0])}"
        if _least_along(lambda t: float(np.linalg.norm(view(t))), a[0], b[0]) < 1e-6:
            problems.append(f"{where}: the camera would look at its own position {span} "
                            f"(its look_at passes through it): expected a view that keeps a "
                            f"direction; add a keyframe between them")
            return
        if _least_along(off_up, a[0], b[0]) < 1e-9:
            problems.append(f"{where}: expected an up vector not parallel to the view {span}: "
                            f"it turns through {list(camera.up)} there; add a keyframe "
                            f"between them, or give camera.up another direction")
            return


def _least_along(f, t0: float, t1: float) -> float:
    """The least of f over [t0, t1]: the least of SMOOTH_SAMPLES readings, then a golden
    section search between its two neighbours."""
    times = [t0 + (t1 - t0) * k / (SMOOTH_SAMPLES - 1) for k in range(SMOOTH_SAMPLES)]
    values = [f(t) for t in times]
    i = min(range(len(values)), key=values.__getitem__)
    lo, hi = times[max(i - 1, 0)], times[min(i + 1, len(times) - 1)]
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(60):
        m1, m2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if f(m1) < f(m2):
            hi = m2
        else:
            lo = m1
    return min(values[i], f(0.5 * (lo + hi)))


def _least(a, b) -> float:
    """The s in [0, 1] where |a + s·b| is least (3-vectors)."""
    bb = sum(e * e for e in b)
    return 0.0 if bb == 0.0 else min(max(-sum(x * e for x, e in zip(a, b)) / bb, 0.0), 1.0)


def _cross(a, b) -> tuple[float, float, float]:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def parallel(a, b) -> bool:
    """Whether 3-vectors a and b (b nonzero) are parallel (a zero a counts as parallel)."""
    return math.hypot(*_cross(a, b)) <= 1e-9 * math.hypot(*a) * math.hypot(*b)


def describe(scene: Scene, drawn: str | None = None) -> str:
    """The resolved settings, one per line, with where each value came from (--check),
    under a line saying what is drawn (`drawn`, by default the clip's frames)."""
    # A still's recorded scene (--from) is the file its settings come from.
    file = RECORDED_SCENE if scene.path.endswith(f"({RECORDED_SCENE})") else "scene file"
    sources = {key: file if label == "scene file" else label for key, label in scene.sources}
    drawn = f"{scene.frame_count} frames" if drawn is None else drawn
    lines = [f"# {scene.path}: {scene.count} bird{'s' * (scene.count != 1)}, {drawn}"]
    # The camera a 3D scene is filmed by, where it stands and looks.
    sections = camera_placed(scene).to_dict()
    if scene.dimensions == 3:
        given = dataclasses.asdict(scene.camera) if scene.camera else {}
        sources |= {f"camera.{key}": "default camera" for key in sections["camera"]
                    if scene.camera is None
                    or (given.get(key) is None and key in ("position", "look_at"))}
    for name, body in sections.items():
        lines.append(f"[{name}]")
        for key, value in body.items():
            text = f'"{value}"' if isinstance(value, str) else str(value).lower() \
                if isinstance(value, bool) else str(value)
            setting = f"{key} = {text}"
            lines.append(f"{setting:<30} # {sources.get(f'{name}.{key}', 'default')}")
    return "\n".join(lines)
