"""What every scene setting is made of: `setting` (a dataclass field carrying its own
documentation and range) and the limits every number in a scene shares."""

from __future__ import annotations

from dataclasses import field


# Every number in a scene lies within ±MAX_MAGNITUDE: products of a few of them (drift ·
# time, speed · duration) then stay far from float overflow, whose inf would turn into NaN
# inside the forces. 1e9 is a billion world units: room for any unit system.
MAX_MAGNITUDE = 1e9  # (messages spell it "1e9")
# Settings that must be positive (lo_open at 0) divide something: a wavelength, a radius, a
# period. Below this their quotients overflow to inf, so they start here.
MIN_POSITIVE = 1e-9  # (messages spell it "1e-9")
MIN_WORLD = 1e-6
# More birds than this is a mistake (a spacing typed in the wrong unit), not a flock.
MAX_BIRDS = 5_000_000


def setting(default, doc: str, *, kind: str = "float", unit: str = "", lo=None, hi=None,
            lo_open: bool = False, hi_open: bool = False, choices: tuple[str, ...] = (),
            optional: bool = False):
    """A documented scene setting: the dataclass field plus what the validator needs
    (`lo_open`, `hi_open`: the bound itself is refused)."""
    meta = dict(doc=doc, kind=kind, unit=unit, lo=lo, hi=hi, lo_open=lo_open,
                hi_open=hi_open, choices=choices, optional=optional)
    if isinstance(default, (list, dict)):
        raise TypeError("scene defaults must be immutable")
    return field(default=default, metadata=meta)


def easing_setting():
    """A camera's easing between keyframes (2D and 3D cameras alike)."""
    return setting("ease-in-out", "Between keyframes: linear; ease-in-out, stopping at each "
                   "key; smooth, flying through the keys between the first and the last "
                   "(docs/model.md).", kind="choice",
                   choices=("linear", "ease-in-out", "smooth"))


def follow_setting(centroid: str, track: str | None = None):
    """Whether a camera follows the flock ("none" or "centroid", described by `centroid`:
    what following means for that camera; and "track", described by `track`, where the
    camera has it)."""
    choices = ("none", "centroid") + (("track",) if track else ())
    text = f"centroid: {centroid}" + (f" track: {track}" if track else "")
    return setting("none", text, kind="choice", choices=choices)


def follow_time_setting():
    """A camera follow's smoothing time (2D and 3D cameras alike)."""
    return setting(1.5, "Follow's smoothing time: the spring's 1/ω, at least 2 × "
                   "scene.dt (the spring is stepped with the flock).", unit="s", lo=0,
                   lo_open=True)
