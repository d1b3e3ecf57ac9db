"""One setting's raw TOML value → its typed value, checked against the field's metadata.

Imports no numpy, numba or cairo.
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from fractions import Fraction

from .fields import MAX_MAGNITUDE, MIN_POSITIVE


def closest(word: str, options, cutoff: float = 0.5) -> str | None:
    """The option closest to `word`, whatever its case (FLOCK is flock), or None when none
    is as close as `cutoff` (difflib's ratio)."""
    spelt = {option.lower(): option for option in reversed(list(options))}
    close = difflib.get_close_matches(word.lower(), list(spelt), n=1, cutoff=cutoff)
    return spelt[close[0]] if close else None


def suggest(word: str, options) -> str:
    """" (did you mean 'x'?)" for the closest of `options`, or "" when none is close."""
    close = closest(word, options)
    return f" (did you mean '{close}'?)" if close else ""


# A message shows this much of a value: a 10 MB string pasted by mistake is not echoed.
SHOWN = 60


def show(value) -> str:
    """A raw value as a message shows it: TOML spelling for booleans, quotes for strings;
    a long one cut to its first SHOWN characters, with its length."""
    if isinstance(value, str):
        text = repr(value)
    elif isinstance(value, bool):
        return "true" if value else "false"
    elif isinstance(value, dict):
        return "a table"
    elif isinstance(value, int) and value.bit_length() > 10_000:  # str() refuses past 4,300 digits
        return f"an integer of about {value.bit_length() * 0.30103:,.0f} digits"
    else:
        text = str(value)
    if len(text) > SHOWN:
        text = f"{text[:SHOWN]}… ({len(text):,} characters)"
    return text


def _number(value, meta, want_int: bool):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected {'an integer' if want_int else 'a number'}, "
                         f"got {show(value)}{_quoted_number(value)}")
    given = value
    if want_int and not isinstance(value, int):
        if not (isinstance(value, float) and value.is_integer()):
            raise ValueError(f"expected an integer, got {show(value)}")
        value = int(value)
    if not want_int:
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"expected a finite number, got {show(value)}")
    lo, hi = meta["lo"], meta["hi"]
    if lo is not None and (value < lo or (meta["lo_open"] and value == lo)):
        bound = f"> {lo}" if meta["lo_open"] else f"≥ {lo}"
        raise ValueError(f"expected a value {bound}{_unit(meta)}, got {show(value)}")
    if hi is not None and (value > hi or (meta["hi_open"] and value == hi)):
        bound = f"< {hi}" if meta["hi_open"] else f"≤ {hi}"
        raise ValueError(f"expected a value {bound}{_unit(meta)}, got {show(value)}")
    if not want_int and meta["lo_open"] and lo == 0 and value < MIN_POSITIVE:
        raise ValueError(f"expected a value ≥ 1e-9{_unit(meta)}, got {show(value)}")
    # Whole numbers too (a frame count of 1e300 is a typo, not a 300-digit count), but
    # for one with a range of its own (the seed's 64 bits).
    if (not want_int or hi is None) and abs(value) > MAX_MAGNITUDE:
        within = "≤ 1e9" if lo is not None and lo >= 0 else "between -1e9 and 1e9"
        raise ValueError(f"expected a value {within}{_unit(meta)}, got {show(given)}")
    return value


def _quoted_number(value) -> str:
    """A hint for a number written as a string ("5"): TOML writes numbers bare."""
    if not isinstance(value, str):
        return ""
    bare = value.strip()
    try:  # what TOML itself reads as a number when written bare
        number = tomllib.loads(f"v = {bare}")["v"]
    except (ValueError, RecursionError):
        return ""
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        return ""
    return f": a number is written without quotes{f', {bare}' * (len(bare) <= SHOWN)}"


def _unit(meta) -> str:
    return f" {meta['unit']}" if meta["unit"] and meta["unit"] != "px" else ""


# A million pixels a side is 85 m at 300 dpi: anything larger is a typo. What each output
# can draw is checked where it is drawn (budget.py): clips, PNG sequences and stills drawn
# whole are cairo surfaces of at most 32767 px a side; a PNG still is drawn in tiles.
MAX_SIDE = 1_000_000
_SIZE = re.compile(r"^\s*(\d+)\s*[xX×]\s*(\d+)\s*$")
_COLOR = re.compile(r"^#[0-9A-Fa-f]{6}$")


def parse_size(value) -> tuple[int, int]:
    if isinstance(value, (list, tuple)) and len(value) == 2 \
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        w, h = value
    elif isinstance(value, str) and _SIZE.match(value):
        w, h = map(int, _SIZE.match(value).groups())
    elif isinstance(value, (list, tuple)) and len(value) == 2 and \
            any(isinstance(v, float) for v in value) and \
            all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise ValueError(f"expected whole numbers of px such as [1920, 1080], got "
                         f"{show(value)}")
    else:
        raise ValueError(f"expected a size \"WIDTHxHEIGHT\" such as \"1920x1080\", "
                         f"got {show(value)}")
    if not (1 <= w <= MAX_SIDE and 1 <= h <= MAX_SIDE):
        fit = ""
        if min(w, h) >= 1:
            scale = MAX_SIDE / max(w, h)
            fit = f": at this aspect the largest is {max(1, round(w * scale))}x" \
                  f"{max(1, round(h * scale))}"
        raise ValueError(f"expected each side in 1..{MAX_SIDE} px, got {w}x{h}{fit}")
    return (w, h)


def parse_fps(value) -> Fraction:
    """A frame rate: an integer, a ratio "N/D" (exact), or a decimal; a decimal that is
    an NTSC rate N·1000/1001 rounded to its own digits (23.976, 23.98, 29.97, 59.94, …)
    means that rate, as in every editor's menus, not the decimal itself (2997/100: a time
    base no NTSC timeline shares)."""
    try:
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, str):
            fps = Fraction(value.strip())
        elif isinstance(value, (int, float)) and math.isfinite(value):
            fps = Fraction(value).limit_denominator(1001)
        else:
            raise ValueError
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"expected a frame rate such as 60, 29.97 or \"24000/1001\", "
                         f"got {show(value)}") from None
    if isinstance(value, float) and 0 < value <= 1000 and \
            abs(fps - Fraction(value)) > Fraction(value) / 10**6:
        # A number is read as the nearest ratio N/D with D ≤ 1001 (100/3 for 33.333…):
        # a rate that ratio misses (0.0001 read 0, 0.0007 read 1/1001) is said so.
        raise ValueError(f"expected a frame rate that is a ratio N/D with D ≤ 1001 when "
                         f"written as a number (or any exact ratio written as a string, "
                         f"such as \"{Fraction(repr(value))}\"), got {show(value)}")
    if not (0 < fps <= 1000):
        raise ValueError(f"expected a frame rate in (0, 1000], got {show(value)}")
    return ntsc_rate(value, fps)


def parse_aspect(value) -> float:
    """A frame's shape: "W:H" ("16:9", "2.39:1") or the number W/H, as W/H."""
    ratio = None
    if isinstance(value, str):
        w, sep, h = value.partition(":")
        try:
            w, h = float(w), float(h)
            ratio = w / h if sep and w > 0 and h > 0 else None
        except (ValueError, ZeroDivisionError):
            pass
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        ratio = float(value)
    if ratio is None or not ASPECT_RANGE[0] <= ratio <= ASPECT_RANGE[1]:
        raise ValueError(f"expected a frame shape \"W:H\" such as \"16:9\", or W/H as a "
                         f"number in [{ASPECT_RANGE[0]:g}, {ASPECT_RANGE[1]:g}], got "
                         f"{show(value)}")
    return ratio


ASPECT_RANGE = (0.01, 100.0)


def aspect_text(ratio: float) -> str | float:
    """A frame shape as a person writes it, reading back to the same float: "16:9" for
    16/9, "2.39:1" for 2.39; a ratio no such text gives exactly, as the number."""
    small = Fraction(ratio).limit_denominator(16)
    for text in (f"{small.numerator}:{small.denominator}", f"{ratio:g}:1"):
        if parse_aspect(text) == ratio:
            return text
    return ratio


NTSC_BASES = (24, 30, 48, 60, 96, 120, 240)  # rates whose NTSC twin is N·1000/1001


def ntsc_rate(value, fps: Fraction) -> Fraction:
    """fps, or the NTSC rate N·1000/1001 that `value` (as written: an int, a float or a
    string) spells as a decimal rounded to its own number of digits, or cut to two or
    more (23.98 and 23.97 are both said for 24000/1001; 29.9 is not 29.97)."""
    text = repr(value) if isinstance(value, float) else str(value).strip()
    if fps.denominator == 1 or "." not in text or "/" in text or "e" in text.lower():
        return fps
    digits = len(text.split(".")[1].rstrip("0"))
    for base in NTSC_BASES:
        twin = Fraction(base * 1000, 1001)
        cut = Fraction(math.floor(twin * 10**digits), 10**digits) if digits >= 2 else None
        if fps in (round(twin, digits), cut):
            return twin
    return fps


def _stops(value, meta) -> tuple[tuple[float, str], ...]:
    """[[elevation °, "#RRGGBB"], …], elevations increasing within [-90, 90]."""
    if not (isinstance(value, list) and value and all(
            isinstance(s, list) and len(s) == 2 and isinstance(s[1], str) for s in value)):
        raise ValueError(f"expected colour stops [[elevation, \"#RRGGBB\"], …], "
                         f"got {show(value)}")
    stops = []
    for elevation, colour in value:
        elevation = _number(elevation, dict(meta, lo=-90.0, hi=90.0, lo_open=False,
                                            hi_open=False), False)
        stops.append((elevation, convert(colour, dict(meta, kind="color"))))
    if any(b[0] <= a[0] for a, b in zip(stops, stops[1:])):
        angles = ", ".join(show(s[0]) for s in stops)
        raise ValueError(f"expected elevations in increasing order, got {angles}")
    return tuple(stops)


def convert(value, meta):
    """`value` as the type its field's `setting()` metadata names; ValueError if it is not one."""
    kind = meta["kind"]
    if kind == "float":
        return _number(value, meta, want_int=False)
    if kind == "int":
        return _number(value, meta, want_int=True)
    if kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {show(value)}")
        return value
    if kind == "str":
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {show(value)}")
        if "\0" in value:  # it goes into files' metadata, and a PDF's title refuses a NUL
            raise ValueError(f"expected text without a NUL character, got {show(value)}")
        return value
    if kind == "choice":
        if value not in meta["choices"]:
            options = " | ".join(meta["choices"])
            hint = suggest(str(value), meta["choices"]) if isinstance(value, str) else ""
            raise ValueError(f"expected one of {options}, got {show(value)}{hint}")
        return value
    if kind == "color":
        if not (isinstance(value, str) and _COLOR.match(value)):
            raise ValueError(f"expected a colour \"#RRGGBB\", got {show(value)}")
        return value.upper()
    if kind == "stops":
        return _stops(value, meta)
    if kind == "angles":
        if not (isinstance(value, list) and len(value) == 2):
            raise ValueError(f"expected [azimuth, elevation] in degrees, got {show(value)}")
        azimuth, elevation = (_number(v, dict(meta, lo=None, hi=None), False) for v in value)
        if not -90.0 <= elevation <= 90.0:
            raise ValueError(f"expected an elevation in [-90, 90] degrees, got {show(value)}")
        return azimuth, elevation
    if kind == "size":
        return parse_size(value)
    if kind == "fps":
        return parse_fps(value)
    if kind == "aspect":
        return parse_aspect(value)
    if kind == "point":
        if not (isinstance(value, list) and len(value) == 2):
            raise ValueError(f"expected a point [x, y], got {show(value)}")
        return tuple(_number(v, dict(meta, lo=None, hi=None), False) for v in value)
    if kind == "point3":
        if not (isinstance(value, list) and len(value) == 3):
            raise ValueError(f"expected a point [x, y, z], got {show(value)}")
        return tuple(_number(v, dict(meta, lo=None, hi=None), False) for v in value)
    if kind == "path8":
        return _keyframes3d(value, meta)
    if kind == "path5":
        keys = _keyframes(value, meta, 5, "[[t, x, y, width, rotation], …]")
        bad = [i for i, k in enumerate(keys, 1) if k[3] <= 0]
        if bad:
            raise ValueError(f"{_keyed(keys, bad[0])}: expected its width > 0, got "
                             f"{show(keys[bad[0] - 1][3])}")
        return keys
    if kind == "path":
        return _keyframes(value, meta, 3, "[[t, x, y], …]")
    raise AssertionError(f"unknown setting kind {kind}")


def _keyframes(value, meta, columns: int, shape: str) -> tuple[tuple[float, ...], ...]:
    """Keyframes of `columns` numbers each (spelled `shape` in messages, which names the
    columns), times increasing. A message names the keyframe: a long path's text is cut
    short."""
    if not (isinstance(value, list) and value and all(isinstance(k, list) for k in value)):
        raise ValueError(f"expected keyframes {shape}, got {show(value)}")
    names = shape[2:shape.index("]")].split(", ")
    for i, k in enumerate(value, 1):
        if len(k) != columns:
            raise ValueError(f"expected keyframes {shape}, {columns} numbers each: keyframe "
                             f"{i} of {len(value)} has {len(k)}, got {show(k)}")
    keys = []
    for i, k in enumerate(value, 1):
        numbers = []
        for name, v in zip(names, k):
            try:
                numbers.append(_number(v, dict(meta, lo=None, hi=None), False))
            except ValueError as exc:
                raise ValueError(f"keyframe {i} of {len(value)}, its {name}: {exc}") from None
        keys.append(tuple(numbers))
    for i, (a, b) in enumerate(zip(keys, keys[1:]), 2):
        if b[0] <= a[0]:
            times = ", ".join(show(k[0]) for k in keys)
            raise ValueError(f"expected keyframe times in increasing order: keyframe {i} of "
                             f"{len(keys)} at t = {show(b[0])} does not come after "
                             f"{show(a[0])}; got {times}")
    return tuple(keys)


def _keyed(keys, i: int) -> str:
    """Keyframe i (from 1) named by its place and its time."""
    return f"keyframe {i} of {len(keys)} (t = {show(keys[i - 1][0])})"


def _keyframes3d(value, meta) -> tuple[tuple[float, ...], ...]:
    """[[t, x, y, z, look_x, look_y, look_z, fov], …]: times increasing, fov in (0, 180)."""
    keys = _keyframes(value, meta, 8, "[[t, x, y, z, look_x, look_y, look_z, fov], …]")
    bad = [i for i, k in enumerate(keys, 1) if not 0.0 < k[7] < 180.0]
    if bad:
        raise ValueError(f"{_keyed(keys, bad[0])}: expected its fov in (0, 180) degrees, "
                         f"got {show(keys[bad[0] - 1][7])}")
    return keys
