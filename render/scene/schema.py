"""The scene schema: every section a frozen dataclass whose fields carry their own
documentation (unit, range, choices), and the resolved `Scene` that holds them.

The validator (values.py, load.py) and the generated reference (docs/scenes.md) both read
that metadata, so a new section (steering field, containment, hawk, camera) is one more
dataclass in `SECTIONS`. Imports no numpy, numba or cairo.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .fields import (MAX_BIRDS, MAX_MAGNITUDE, MIN_POSITIVE, MIN_WORLD, easing_setting,
                     follow_setting, follow_time_setting, setting)
from .schema3d import (HAWK_3D_KEYS, MIN_WIDTH_3D_PX, PALETTE_3D_KEYS, AtmosphereSettings,
                       BirdSettings, Camera3DSettings, FlightSettings, RoostSettings)
from .values import aspect_text


@dataclass(frozen=True)
class SceneSettings:
    """The clip as a whole: its name, seed, length and simulation step."""

    name: str = setting("untitled", "Name shown in --check and metadata.", kind="str")
    seed: int = setting(0, "Seed of every random draw (numpy PCG64).", kind="int", lo=0,
                        hi=2**64 - 1)
    duration: float = setting(10.0, "Length of the clip.", unit="s", lo=0, lo_open=True)
    settle_steps: int = setting(60, "Simulation steps run before frame 0 (3D: 3000 by "
                                "default, 30 s of flight).", kind="int", lo=0)
    dt: float = setting(1 / 60, "Fixed simulation step, independent of the output fps "
                        "(3D: 0.01 by default); frames are timed by it as an exact ratio of "
                        "a second, to a millionth.",
                        unit="s", lo=1e-6, hi=1.0)


@dataclass(frozen=True)
class WorldSettings:
    """The world rectangle the birds fly in (world y points up) and what its edges do."""

    # Bounded below so that pixels per world unit stay in what cairo can invert.
    width: float = setting(80.0, "Width of the world rectangle.", unit="world units",
                           lo=MIN_WORLD)
    height: float = setting(45.0, "Height of the world rectangle.", unit="world units",
                            lo=MIN_WORLD)
    boundary: str = setting("wrap", "Edges: a torus, hyperbolic wall avoidance, or open.",
                            kind="choice", choices=("wrap", "walls", "none"))
    wall_margin: float = setting(5.0, "Walls: distance from an edge where avoidance starts.",
                                 unit="world units", lo=0, lo_open=True)
    wall_strength: float = setting(50.0, "Walls: acceleration scale; the push is "
                                   "strength·(margin/d − 1), d the distance to the edge.",
                                   unit="world units/s²", lo=0)
    dimensions: int = setting(2, "2: the plane; 3: metres, z up, open sky (boundary "
                              "\"none\") over the ground z = 0, filmed through the [camera]; "
                              "width × height places the default roost at its centre.",
                              kind="int", lo=2, hi=3)


@dataclass(frozen=True)
class FlockSettings:
    """How many birds, their speed limits and where they start."""

    count: int | None = setting(None, "Number of birds (give count or spacing).",
                                kind="int", lo=1, optional=True)
    spacing: float | None = setting(None, "2D: mean spacing, count = world area / spacing².",
                                    unit="world units", lo=0, lo_open=True, optional=True)
    min_speed: float = setting(3.6, "Lowest speed after each step (in 3D, 5 m/s by "
                               "default).", unit="world units/s", lo=0)
    max_speed: float = setting(5.7, "Highest speed after each step (in 3D, 18 m/s by "
                               "default).", unit="world units/s", lo=0)
    init: str = setting("uniform", "2D: initial positions, uniform over the world, or uniform "
                        "inside the centred ellipse; headings uniform, speeds uniform in "
                        "[min_speed, max_speed].", kind="choice", choices=("uniform", "ellipse"))
    init_ellipse: float = setting(0.385, "2D, ellipse init: semi-axes as a fraction of the world's "
                                  "width and height.", lo=0, hi=0.5, lo_open=True)

    def resolved_count(self, world: WorldSettings) -> int:
        if self.count is not None:
            return self.count
        return max(1, round(bird_estimate(self, world)))


def bird_estimate(flock: FlockSettings, world: WorldSettings) -> float:
    """Birds a flock asks for, as a float: a tiny spacing gives inf here, not an exception."""
    if flock.count is not None:
        return float(flock.count) if flock.count.bit_length() < 1000 else math.inf
    spacing = flock.spacing if flock.spacing is not None else 1.0
    return world.width * world.height / spacing / spacing  # spacing**2 could underflow to 0


@dataclass(frozen=True)
class RulesSettings:
    """The three flocking rules: separation, alignment and cohesion among neighbours."""

    perception_radius: float = setting(2.15, "Metric neighbours: every other bird closer "
                                       "than this (in 3D, topological neighbours are the "
                                       "k nearest: max_range bounds them).",
                                       unit="world units", lo=0, lo_open=True)
    separation_radius: float = setting(0.82, "2D: neighbours closer than this push (≤ "
                                       "perception).", unit="world units", lo=0)
    falloff: str = setting("inverse_square", "2D: length of each separation push at distance d: "
                           "1, 1/d or 1/d².", kind="choice",
                           choices=("unit", "inverse", "inverse_square"))
    alignment: str = setting("difference", "2D: mean, the mean neighbour velocity; "
                             "difference, that minus the bird's own.", kind="choice",
                             choices=("mean", "difference"))
    separation_weight: float = setting(6.5, "w_s: separation acceleration per unit push "
                                       "(3D: 15 by default, StarDisplay's 1.2 N on 0.08 kg).",
                                       unit="1/s² · world units^k", lo=0)
    alignment_weight: float = setting(4.0, "w_a (3D: 6.25 by default).", unit="1/s", lo=0)
    cohesion_weight: float = setting(1.3, "w_c: acceleration per world unit of offset to the "
                                     "neighbours' mean position (3D: 25 by default).",
                                     unit="1/s²", lo=0)
    max_force: float | None = setting(None, "2D: clamp on each weighted rule's vector (separation, "
                                      "alignment, cohesion separately); unset = no clamp.",
                                      unit="world units/s²", lo=0, lo_open=True, optional=True)
    neighbours: str = setting("metric", "metric: every bird within perception_radius; "
                              "topological: the topological_count nearest visible birds "
                              "(3D: topological by default).",
                              kind="choice", choices=("metric", "topological"))
    topological_count: int = setting(7, "k, the neighbours of a topological bird (≥ 1, "
                                     "below the flock size).", kind="int", lo=1)
    max_range: float | None = setting(None, "Topological: only birds closer than this "
                                      "count; unset = any distance.", unit="world units",
                                      lo=0, lo_open=True, optional=True)
    blind_angle: float = setting(0.0, "Full aperture of the cone straight behind a bird in "
                                 "which it sees no one (90: half-angle 45°; 0: none; 3D: 90 "
                                 "by default).",
                                 unit="degrees", lo=0, hi=360, hi_open=True)
    separation_sigma: float = setting(1.37, "3D: separation's reach σ, g(d) = "
                                      "exp(−((d − hard_core)/σ)²) beyond the hard core.",
                                      unit="m", lo=0, lo_open=True)
    hard_core: float = setting(0.2, "3D: within this distance separation is at full "
                               "strength, g = 1.", unit="m", lo=0)
    gather: float = setting(0.0, "3D: a bird farther than gather_radius from the flock's "
                            "centroid (horizontally) turns toward it, by this per metre "
                            "beyond (0: never): what brings a split flock together again.",
                            unit="1/s²", lo=0)
    gather_radius: float = setting(40.0, "3D: the gather's reach from the centroid.",
                                   unit="m", lo=0)
    gather_cap: float = setting(1.0, "3D: cap on the gather's sideways steering.",
                                unit="m/s²", lo=0)
    rejoin: float = setting(0.0, "3D: while the flock is split (its largest 5 m part under "
                            "90% of the birds), the gather's gain toward that part's "
                            "centroid instead, the return reading that part (0: never).",
                            unit="1/s²", lo=0)


@dataclass(frozen=True)
class AttractorSettings:
    """A pull toward a fixed point or a keyframed path."""

    enabled: bool = setting(True, "Set false to switch the section off.", kind="bool")
    position: tuple[float, float] | None = setting(
        None, "Fixed point [x, y]; default the world's centre.", kind="point",
        unit="world units", optional=True)
    path: tuple[tuple[float, float, float], ...] | None = setting(
        None, "Keyframes [[t, x, y], …], linear between them, held after the last.",
        kind="path", unit="s, world units", optional=True)
    strength: float = setting(10.0, "Pull far from the point.", unit="world units/s²", lo=0)
    radius: float = setting(5.0, "Within about this distance the pull fades: "
                            "strength·d/(d + radius).", unit="world units", lo=0, lo_open=True)


@dataclass(frozen=True)
class FieldSettings:
    """A drifting steering field that turns every bird's velocity."""

    enabled: bool = setting(True, "Set false to switch the section off.", kind="bool")
    turn_rate: float = setting(0.55, "θ_max: each step turns every bird's new velocity by "
                               "turn_rate·φ·dt, φ ∈ [−1, 1] the field.", unit="rad/s", lo=0)
    wavelength_x: float = setting(38.9, "Wavelength of the sinusoid along x.",
                                  unit="world units", lo=0, lo_open=True)
    wavelength_y: float = setting(35.1, "Wavelength of the sinusoid along y.",
                                  unit="world units", lo=0, lo_open=True)
    wavelength_diagonal: float = setting(23.7, "Wavelength of the sinusoid along (x+y)/√2.",
                                         unit="world units", lo=0, lo_open=True)
    drift_x: float = setting(3.29, "Drift speed of the x sinusoid.", unit="world units/s")
    drift_y: float = setting(0.40, "Drift speed of the y sinusoid.", unit="world units/s")
    drift_diagonal: float = setting(1.22, "Drift speed of the diagonal sinusoid.",
                                    unit="world units/s")


@dataclass(frozen=True)
class ContainmentSettings:
    """A soft ellipse that brings birds back; zero force inside it."""

    enabled: bool = setting(True, "Set false to switch the section off.", kind="bool")
    semi_axes: float = setting(0.385, "Semi-axes of the centred ellipse as a fraction of the "
                               "world's width and height.", lo=0, hi=0.5, lo_open=True)
    strength: float = setting(40.0, "Inward acceleration per world unit outside the ellipse "
                              "(zero inside).", unit="1/s²", lo=0)


@dataclass(frozen=True)
class HawkSettings:
    """The hawk. 2D (`mode = "chord"`): a repulsor flying straight chords through the
    flock, one pass per period. 3D (`mode = "hunt"`, docs/model.md): a hawk that pursues, dives,
    misses, climbs away and attacks again; while it dives and climbs away, birds within
    `radius` turn away and zig."""

    enabled: bool = setting(True, "Set false to switch the section off.", kind="bool")
    mode: str = setting("chord", "chord: straight passes (2D only); hunt: pursue, dive, "
                        "climb away, again (3D only: a 3D scene's hawk hunts by default).",
                        kind="choice", choices=("chord", "hunt"))
    period: float = setting(10.33, "Time between the starts of two passes (hunt: the "
                            "shortest time between two dives; 17 s by default in 3D).", unit="s",
                            lo=0, lo_open=True)
    duration: float = setting(4.3, "2D: time the hawk is out on each pass (≤ period).",
                              unit="s", lo=0, lo_open=True)
    start: float = setting(1.0, "Time the first pass starts (hunt: the pursuit).",
                           unit="s")
    bearing: float = setting(20.0, "2D: direction of the first chord; each pass adds the "
                             "golden angle (≈137.5°).", unit="degrees")
    speed: float = setting(3.0, "The hawk's speed: each pass is a chord of length "
                           "speed·duration centred on the world's centre (hunt: its "
                           "pursuit, 20 m/s by default in 3D).",
                           unit="world units/s", lo=0, lo_open=True)
    radius: float = setting(13.3, "Reach of the hawk's repulsion (hunt: its startle, 20 m "
                            "by default in 3D).", unit="world units",
                            lo=0, lo_open=True)
    strength: float = setting(160.0, "Repulsion at the hawk's centre: "
                              "strength·(1 − d/radius)² for d < radius (hunt: the "
                              "startled birds' turn away, strength·(1 − d/radius), 8 m/s² "
                              "by default in 3D).",
                              unit="world units/s²", lo=0)
    dive_speed: float = setting(30.0, "hunt: the hawk's speed in a dive.", unit="m/s", lo=0,
                                lo_open=True)
    turn_rate: float = setting(90.0, "hunt: the fastest the hawk's heading turns.",
                               unit="degrees/s", lo=0, lo_open=True)
    dive_height: float = setting(30.0, "hunt: how far above its target the hawk starts "
                                 "a dive.", unit="m", lo=0, lo_open=True)
    climb_time: float = setting(4.0, "hunt: how long the hawk climbs away after a miss.",
                                unit="s", lo=0, lo_open=True)
    target: str = setting("alternate", "hunt: what each attack aims at: the densest bird, "
                          "a bird on the flock's flank facing the hawk (chosen again each "
                          "second of the pursuit), or each in turn.", kind="choice",
                          choices=("alternate", "dense", "edge"))
    zig: float = setting(12.0, "hunt: the lateral acceleration of a zig (a quick roll "
                         "sideways and back).", unit="m/s²", lo=0)
    zig_time: float = setting(0.5, "hunt: how long a zig lasts.", unit="s", lo=0,
                              lo_open=True)
    zig_turn: float = setting(0.0, "hunt: how much of a zig turns the bird away for good: "
                              "0 steers it one way, then the other (no sideways speed "
                              "left over); 1 rolls it sideways and back, and it flies on "
                              "turned away from the hawk, by about "
                              "atan(zig·zig_time·2/π ÷ its speed).", lo=0, hi=1)
    zig_roll: float = setting(40.0, "hunt: the rate at which a zigging bird's bank follows "
                              "the zig, rolling in and out alike (a quick roll: the "
                              "flight's roll_in is 10); 0: the flight's own rates.",
                              unit="1/s", lo=0)
    zig_window: float | None = setting(None, "hunt: how long after its first zig in an "
                                       "attack the hawk begins zigs in the birds within its "
                                       "range (they still turn away after it): the waves "
                                       "leave that first contact as one pulse; unset = "
                                       "throughout its dive and climb.", unit="s", lo=0,
                                       optional=True)
    reaction_time: float = setting(0.076, "hunt: the delay before a bird copies a zig "
                                   "among its k nearest (Hemelrijk et al. 2015).", unit="s",
                                   lo=0, lo_open=True)
    refractory: float = setting(3.0, "hunt: a bird that has zigged does not zig again for "
                                "this long (so the waves do not echo).", unit="s", lo=0)
    wingspan: float = setting(1.0, "hunt: the hawk as the camera sees it, tip to tip (a "
                              "peregrine's; its body and wings in a peregrine's "
                              "proportions); 0: not drawn.", unit="m", lo=0)


@dataclass(frozen=True)
class CameraSettings:
    """The view: centre, zoom and rotation, keyframed or following the flock."""

    enabled: bool = setting(True, "Set false to switch the section off.", kind="bool")
    centre: tuple[float, float] | None = setting(
        None, "Point at the frame's centre [x, y]; default the world's centre.", kind="point",
        unit="world units", optional=True)
    width: float | None = setting(None, "World units across the frame's width (zoom); "
                                  "default: the whole world fits.", unit="world units",
                                  lo=0, lo_open=True, optional=True)
    rotation: float = setting(0.0, "Rotation of the view, counter-clockwise.",
                              unit="degrees")
    path: tuple[tuple[float, ...], ...] | None = setting(
        None, "Keyframes [[t, x, y, width, rotation], …], eased between, held outside; "
        "override centre, width and rotation.", kind="path5", unit="s, world units, deg",
        optional=True)
    easing: str = easing_setting()
    follow: str = follow_setting("the centre glides after the flock's centroid, critically "
                                 "damped (open worlds only).")
    follow_time: float = follow_time_setting()


@dataclass(frozen=True)
class PaletteSettings:
    """The colours: a built-in theme, each colour overridable."""

    theme: str = setting("light", "Built-in colours (dusk: near-black birds against a "
                         "sunset, with a treeline in 3D).", kind="choice",
                         choices=("light", "dark", "dusk"))
    background: str | None = setting(None, "Override, #RRGGBB (3D: a flat sky unless sky "
                                     "is given).", kind="color", optional=True)
    ink: str | None = setting(None, "Override, #RRGGBB (3D: the birds, unless bird is "
                              "given).", kind="color", optional=True)
    accent: str | None = setting(None, "Override, #RRGGBB.", kind="color", optional=True)
    sky: tuple[tuple[float, str], ...] | None = setting(
        None, "3D: the sky's colour stops [[elevation, \"#RRGGBB\"], …] by elevation angle "
        "seen from the camera, increasing, interpolated in linear light (a monotone "
        "cubic, no corner at a stop) and held beyond "
        "the first and last; default the theme's.", kind="stops", unit="degrees",
        optional=True)
    ground: str | None = setting(None, "3D: the ground below the horizon, hazed toward the "
                                 "horizon's colour with distance; default the theme's.",
                                 kind="color", optional=True)
    bird: str | None = setting(None, "3D: the birds' colour; default the theme's (dusk: "
                               "albedo 0.07 lit from below, near black).", kind="color",
                               optional=True)
    sun: tuple[float, float] | None = setting(
        None, "3D: where the sun is [azimuth, elevation], azimuth counter-clockwise from "
        "+x; default the theme's (dusk: 1.5° below the horizon; light, dark: none).",
        kind="angles", unit="degrees", optional=True)
    sun_colour: str | None = setting(None, "3D: the sun glow's colour, added to the sky.",
                                     kind="color", optional=True)
    sun_glow: float | None = setting(None, "3D: the glow's radius around the sun (0: no "
                                     "glow); default 14 (dusk), 10.", unit="degrees", lo=0,
                                     hi=180, optional=True)
    treeline: str | None = setting(None, "3D: a silhouette along the horizon; default the "
                                   "theme's (dusk: trees).", kind="choice",
                                   choices=("none", "trees", "reeds"), optional=True)
    treeline_colour: str | None = setting(None, "3D: the silhouette's colour before haze.",
                                          kind="color", optional=True)
    treeline_distance: float | None = setting(
        None, "3D: how far the treeline stands from the camera, a ring round it that moves "
        "with it and hides no bird; default 600. The camera's distance to the roost stands "
        "it at the roost, where the birds land.", unit="m", lo=0, lo_open=True,
        optional=True)
    treeline_height: float | None = setting(None, "3D: its tallest trees or reeds; default "
                                            "15.", unit="m", lo=0, lo_open=True,
                                            optional=True)


THEMES = {
    "light": {"background": "#E7E2D5", "ink": "#2848CD", "accent": "#BE441C"},
    "dark": {"background": "#0B0D12", "ink": "#96B4FF", "accent": "#FF7854"},
    "dusk": {"background": "#E59C6A", "ink": "#151318", "accent": "#6B2A1A"},
}


@dataclass(frozen=True)
class RenderSettings:
    """How each bird is drawn: a streak whose width and opacity follow local density."""

    tail: float = setting(3.6, "2D: streak starts at p − tail·v·dt_ref (dt_ref = 1/60 s); "
                          "in 3D a bird's streak is its flight over the shutter, and only "
                          "a loop's alignment measure reads tail + head (its tile).", lo=0)
    head: float = setting(0.8, "2D: streak ends at p + head·v·dt_ref (in 3D: see tail).",
                          lo=0)
    width_min: float = setting(0.06, "2D: streak width of the sparsest birds.", unit="world units",
                               lo=0, lo_open=True)
    width_max: float = setting(0.13, "2D: streak width of the densest birds.", unit="world units",
                               lo=0, lo_open=True)
    opacity_min: float = setting(0.35, "2D: opacity of the sparsest birds.", lo=0, hi=1)
    opacity_max: float = setting(0.95, "2D: opacity of the densest birds.", lo=0, hi=1)
    density_count: float = setting(70.0, "2D: neighbour count that gets full width and opacity; "
                                   "fixed so the picture does not flicker.", lo=0, lo_open=True)
    accent_every: int = setting(17, "One bird in this many is drawn in the accent colour "
                                "(0: none).", kind="int", lo=0)
    motion_blur: int = setting(1, "Sub-frames averaged per frame across the shutter's "
                               "opening (1: off; 8–16 for a film look).", kind="int", lo=1,
                               hi=64)
    shutter_angle: float = setting(180.0, "How long the shutter is open, as a share of the "
                                   "frame interval (360° = all of it).", unit="degrees",
                                   lo=0, hi=360, lo_open=True)
    min_width_px: float = setting(1.0, "Floor on streak width so thumbnails stay legible "
                                  f"({MIN_WIDTH_3D_PX} px in 3D, where a bird is two thin "
                                  "streaks and a wider floor changes the picture with the "
                                  "size).", unit="px", lo=0)


@dataclass(frozen=True)
class OutputSettings:
    """Frame size, rate and length, loops, transparency and encoder quality."""

    size: tuple[int, int] = setting(
        (1920, 1080), "Frame size \"WxH\"; video needs even sizes; past 32767 px a side "
        "only a PNG still (in tiles).", kind="size", unit="px")
    fps: Fraction = setting(Fraction(60), "Frame rate: a number or a ratio such as "
                            "\"24000/1001\"; 29.97, 23.976, 59.94 (an NTSC rate as a "
                            "decimal) mean N·1000/1001.", kind="fps", unit="frames/s")
    frames: int | None = setting(None, "Number of frames; overrides scene.duration.",
                                 kind="int", lo=1, optional=True)
    loop: bool = setting(False, "A seamless loop: the first frames morph from the flock "
                         "just after the clip's end, so the last frame flows into the first.",
                         kind="bool")
    crossfade: float = setting(1.0, "Loop: length of the morph at the clip's start.",
                               unit="s", lo=0, lo_open=True)
    transparent: bool = setting(False, "No background: alpha for compositing (.webm, .mov, "
                                ".webp, .apng, PNG and OpenEXR frames, PDF and SVG).",
                                kind="bool")
    crf: int = setting(18, "x264 quality: 0 lossless, 18 visually lossless, 51 worst.",
                       kind="int", lo=0, hi=51)


SECTIONS: dict[str, type] = {
    "scene": SceneSettings,
    "world": WorldSettings,
    "flock": FlockSettings,
    "rules": RulesSettings,
    "flight": FlightSettings,
    "roost": RoostSettings,
    "bird": BirdSettings,
    "atmosphere": AtmosphereSettings,
    "attractor": AttractorSettings,
    "field": FieldSettings,
    "containment": ContainmentSettings,
    "hawk": HawkSettings,
    "camera": CameraSettings,
    "palette": PaletteSettings,
    "render": RenderSettings,
    "output": OutputSettings,
}
# Forces that are on when their section is present (and `enabled` is not false).
OPTIONAL_SECTIONS = {"flight", "roost", "atmosphere", "attractor", "field", "containment", "hawk",
                     "camera"}
# Sections only a 3D world reads, and the 2D forces a 3D world does not have (yet).
SECTIONS_3D = ("flight", "roost", "atmosphere", "bird")
# A 3D world reads these sections with its own keys (a 2D camera's centre and zoom mean
# nothing to a pinhole).
SECTIONS_3D_CLASSES: dict[str, type] = {"camera": Camera3DSettings}
# Built in 3D whether present or not (defaults); None in 2D.
ALWAYS_3D = ("bird",)
SECTIONS_2D = ("attractor", "field", "containment")
# Keys of sections both dimensions have that only one reads: a 2D chord hawk has none of
# the hunt's, a hunting hawk no chord to aim or time, the 3D sky no walls, and each
# dimension's separation its own (2D: a radius, a falloff, alignment's form and a clamp;
# 3D: a Gaussian reach beyond a hard core).
KEYS_2D = {"hawk": ("bearing", "duration"), "world": ("wall_margin", "wall_strength"),
           "rules": ("separation_radius", "falloff", "alignment", "max_force"),
           # A 3D flock is seeded as a blob over its roost, a count of birds; its birds
           # are drawn by their silhouettes, not by these widths and density ramps.
           "flock": ("spacing", "init", "init_ellipse"),
           "render": ("width_min", "width_max", "opacity_min", "opacity_max",
                      "density_count")}
KEYS_3D = {"palette": PALETTE_3D_KEYS, "hawk": HAWK_3D_KEYS,
           "rules": ("separation_sigma", "hard_core", "gather", "gather_radius",
                     "gather_cap", "rejoin")}


# What the other dimension has in a key's place, for its "2D-only key" error.
INSTEAD_IN_3D = {
    "camera.centre": "camera.look_at and camera.position", "camera.width": "camera.fov",
    "camera.rotation": "camera.up", "rules.separation_radius": "rules.separation_sigma",
    "rules.falloff": "rules.separation_sigma and rules.hard_core",
    "flock.spacing": "flock.count (a blob over the roost, about 2.5 m³ a bird)",
    "flock.init": "flock.count (a blob over the roost, about 2.5 m³ a bird)",
    "flock.init_ellipse": "flock.count (a blob over the roost, about 2.5 m³ a bird)",
    "render.width_min": "bird.wingspan (and render.min_width_px, the pixel floor)",
    "render.width_max": "bird.wingspan (and render.min_width_px, the pixel floor)",
    "world.wall_margin": "[roost], which holds a 3D flock",
    "world.wall_strength": "[roost], which holds a 3D flock"}
INSTEAD_IN_2D = {
    "camera.position": "camera.centre", "camera.look_at": "camera.centre",
    "camera.fov": "camera.width", "camera.up": "camera.rotation",
    "rules.separation_sigma": "rules.separation_radius",
    "rules.hard_core": "rules.separation_radius"}


def instead(dotted: str, three: bool) -> str:
    """"; in 3D: …" naming what a scene of this dimension (`three`) has in the place of
    the other dimension's key `dotted`, or "" where it has nothing like it."""
    there = (INSTEAD_IN_3D if three else INSTEAD_IN_2D).get(dotted)
    return f"; in {3 if three else 2}D: {there}" if there else ""


def unread_keys(three: bool) -> dict[str, tuple[str, ...]]:
    """The keys, by section, a scene of this dimension does not read."""
    return KEYS_2D if three else KEYS_3D


@dataclass(frozen=True)
class Scene:
    """The fully resolved scene. `sources` maps "section.key" to where its value came from."""

    scene: SceneSettings
    world: WorldSettings
    flock: FlockSettings
    rules: RulesSettings
    flight: FlightSettings | None
    roost: RoostSettings | None
    bird: BirdSettings | None
    atmosphere: AtmosphereSettings | None
    attractor: AttractorSettings | None
    field: FieldSettings | None
    containment: ContainmentSettings | None
    hawk: HawkSettings | None
    camera: CameraSettings | Camera3DSettings | None
    palette: PaletteSettings
    render: RenderSettings
    output: OutputSettings
    path: str = "<scene>"
    sources: tuple[tuple[str, str], ...] = ()

    @property
    def dimensions(self) -> int:
        return self.world.dimensions

    @property
    def count(self) -> int:
        return self.flock.resolved_count(self.world)

    @property
    def frame_count(self) -> int:
        if self.output.frames is not None:
            return self.output.frames
        return max(1, round(Fraction(self.scene.duration) * self.output.fps))

    def colours(self) -> dict[str, tuple[float, float, float]]:
        """Background, ink and accent as RGB in [0, 1]."""
        base = THEMES[self.palette.theme]
        out = {}
        for name in ("background", "ink", "accent"):
            hexcode = getattr(self.palette, name) or base[name]
            out[name] = tuple(int(hexcode[i:i + 2], 16) / 255 for i in (1, 3, 5))
        return out

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Every setting the scene reads, resolved, in TOML-friendly types."""
        out = {}
        unread = unread_keys(self.world.dimensions == 3)
        for name in SECTIONS:
            section = getattr(self, name)
            if section is None:
                continue
            out[name] = {f.name: aspect_text(getattr(section, f.name))
                         if f.metadata["kind"] == "aspect" else _plain(getattr(section, f.name))
                         for f in dataclasses.fields(section)
                         if getattr(section, f.name) is not None
                         and f.name not in unread.get(name, ())}
        return out

    def to_toml(self) -> str:
        """Every setting, resolved, as a scene file that loads back to the same Scene."""
        lines = []
        for name, body in self.to_dict().items():
            lines.append(f"[{name}]")
            lines += [f"{key} = {_toml(value)}" for key, value in body.items()]
            lines.append("")
        return "\n".join(lines)


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        # A JSON string is a TOML basic string, but for DEL, which TOML escapes; the
        # rest of Unicode as it is, so --info prints "Étourneaux", not "\u00c9tourneaux".
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


def _plain(value):
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return f"{value[0]}x{value[1]}"
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value
