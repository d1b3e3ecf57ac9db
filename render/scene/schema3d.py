"""The sections only a 3D scene (`[world] dimensions = 3`) may have (docs/model.md,
docs/optics.md)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .fields import easing_setting, follow_setting, follow_time_setting, setting

# The streaks' width floor in 3D (render.min_width_px's default there), px.
MIN_WIDTH_3D_PX = 0.5
# flock.min_speed and max_speed's defaults in 3D, m/s: starlings in display.
MIN_SPEED_3D, MAX_SPEED_3D = 5.0, 18.0
# A 3D scene's [hawk]: it hunts (the chord is 2D's), and where the scene does not say,
# flies and startles as the film's does (the 2D chord's 3 world units/s, 13.3 and
# 160 world units/s² would neither catch a flock nor leave it in one piece).
HUNT_3D = {"mode": "hunt", "speed": 20.0, "radius": 20.0, "strength": 8.0, "period": 17.0}
# What a 3D scene flies by where it does not say: the starlings of docs/model.md
# (StarDisplay's forces, k = 7 seen outside a 90° blind cone, banked flight over a roost,
# a 10 ms step, 30 s of settling), not the 2D plate's metric rules in world units. A
# section of these set `enabled = false` switches it off. Also: the sky is open, a 3D
# world's only boundary; speeds are metres a second, a starling's range (the plate's
# world units a second would hold a flight's cruise above its top speed); and a bird is
# two thin streaks whose ink is exact at any width, so a 1 px floor would widen them more
# at a small size than at a large one (the same picture at any size).
DEFAULTS_3D = {"world": {"boundary": "none"},
               "flock": {"min_speed": MIN_SPEED_3D, "max_speed": MAX_SPEED_3D},
               "render": {"min_width_px": MIN_WIDTH_3D_PX},
               "scene": {"dt": 0.01, "settle_steps": 3000},
               "rules": {"neighbours": "topological", "blind_angle": 90.0,
                         "separation_weight": 15.0, "alignment_weight": 6.25,
                         "cohesion_weight": 25.0},
               "flight": {}, "roost": {}}


@dataclass(frozen=True)
class FlightSettings:
    """3D only: banked flight (docs/model.md). Speed relaxes to
    cruise; the steering's lateral part is flown by banking; lift along the banked up
    vector balances gravity."""

    enabled: bool = setting(True, "Set false to switch the section off (plain 3D boids: "
                            "the steering moves the velocity directly).", kind="bool")
    cruise_speed: float = setting(10.0, "v₀, the speed a bird relaxes toward (≥ "
                                  "flock.min_speed).", unit="m/s", lo=0, lo_open=True)
    speed_time: float = setting(0.5, "τ, the speed's relaxation time toward v₀.", unit="s",
                                lo=0, lo_open=True)
    roll_in: float = setting(10.0, "Rate at which the bank angle relaxes toward atan(a_lat/g) "
                             "rolling into a turn (a target of the other sign counts as "
                             "into).", unit="1/s", lo=0, lo_open=True)
    roll_out: float = setting(1.0, "The same rate rolling out of a turn.", unit="1/s",
                              lo=0, lo_open=True)
    gravity: float = setting(9.81, "g.", unit="m/s²", lo=0, lo_open=True)
    load_factor: float = setting(1.0, "The most lift a banked bird pulls, as a multiple of "
                                 "level flight's: at 1 its lift stays level flight's and a "
                                 "bird banked β sinks by g·(1 − cos β); above 1 it pulls "
                                 "1/cos β of it, holding its height in banks up to "
                                 "acos(1/load_factor) (60° at 2).", lo=1)
    noise: float = setting(0.125, "Standard deviation of each component of the per-step "
                           "random steering (StarDisplay's 0.01 N on 0.08 kg).",
                           unit="m/s²", lo=0)


@dataclass(frozen=True)
class AtmosphereSettings:
    """3D only: haze (docs/optics.md). A bird, the treeline or the ground at distance d keeps
    0.05^(d/V) of its contrast against the sky; the rest is the sky's colour (under
    --transparent, the rest is transparency). Without this section nothing is hazed."""

    enabled: bool = setting(True, "Set false to switch the section off.", kind="bool")
    visibility: float = setting(10_000.0, "V, the distance at which contrast falls to 5% "
                                "(3% lost over 100 m at 10 km).", unit="m", lo=0,
                                lo_open=True)


# [palette] keys only a 3D scene reads (the sky, sun, treeline and birds seen through the
# camera); a 2D scene giving one is refused, as it is a 3D-only section.
# The hunting hawk's keys (the chord's 2D hawk reads none of them).
HAWK_3D_KEYS = ("dive_speed", "turn_rate", "dive_height", "climb_time", "target", "zig",
                "zig_time", "zig_turn", "zig_roll", "zig_window", "reaction_time",
                "refractory", "wingspan")
PALETTE_3D_KEYS = ("sky", "ground", "bird", "sun", "sun_colour", "sun_glow", "treeline",
                   "treeline_colour", "treeline_distance", "treeline_height")


@dataclass(frozen=True)
class RoostSettings:
    """3D only: the roost on the ground that holds the flock over it (docs/model.md)."""

    enabled: bool = setting(True, "Set false to switch the section off.", kind="bool")
    position: tuple[float, float] | None = setting(
        None, "The roost on the ground [x, y]; default the world's centre.", kind="point",
        unit="m", optional=True)
    altitude: float = setting(50.0, "Preferred altitude above the ground.", unit="m", lo=0,
                              lo_open=True)
    vertical_strength: float = setting(0.1, "Vertical spring toward the preferred altitude, "
                                       "per metre off it (StarDisplay's 0.008 N/m on "
                                       "0.08 kg).", unit="1/s²", lo=0)
    radius: float = setting(150.0, "When the flock's centroid is farther than this from "
                            "the roost (horizontally), the birds turn back.", unit="m",
                            lo=0, lo_open=True)
    hysteresis: float = setting(0.3, "They keep turning back until the centroid is within "
                                "radius·(1 − hysteresis).", lo=0, hi=0.99)
    return_strength: float = setting(0.125, "Sideways steering per metre beyond the inner "
                                     "radius (StarDisplay's 0.01 N/m on 0.08 kg).",
                                     unit="1/s²", lo=0)
    return_cap: float = setting(1.5, "Cap on that sideways steering.", unit="m/s²", lo=0)
    landing_at: float | None = setting(None, "The finale: from this time (after settling) "
                                       "the birds peel off and land in the roost.",
                                       unit="s", optional=True)
    landing_spread: float = setting(20.0, "Birds peel off over this long, nearest the roost "
                                    "first.", unit="s", lo=0)
    landing_radius: float = setting(15.0, "Radius round the roost they land in (reeds drawn "
                                    "there: see palette.treeline_distance).", unit="m",
                                    lo=0, lo_open=True)
    landing_slope: float = setting(2.5, "The funnel: a landing bird descends toward "
                                   "slope × its horizontal distance beyond the reed bed "
                                   "(steep: the birds fly in, then pour down over it).",
                                   lo=0, lo_open=True)
    landing_strength: float = setting(6.0, "The landing's steering toward the roost and "
                                      "down the funnel.", unit="m/s²", lo=0, lo_open=True)
    landed: str = setting("ground", "How landed birds are drawn: where they landed, on the "
                          "ground, or hidden.", kind="choice", choices=("ground", "hidden"))


# The default 3D camera: a viewer standing this far from the roost (on its −y side),
# eyes this high, looking at the flock's preferred altitude over the roost.
VIEWER_DISTANCE_M = 300.0
EYE_HEIGHT_M = 1.7


@dataclass(frozen=True)
class Camera3DSettings:
    """3D: a pinhole camera (docs/optics.md). Focal length f = (h/2)/tan(fov/2) px for a frame
    as wide as `aspect` or wider, (w/2)/(aspect·tan(fov/2)) for a narrower one. Default: a
    viewer on the ground 300 m from the roost, eyes 1.7 m up, looking at the flock's
    altitude over the roost."""

    enabled: bool = setting(True, "Set false to use the default camera.", kind="bool")
    position: tuple[float, float, float] | None = setting(
        None, "The pinhole [x, y, z] (z ≥ 0: on or above the ground); default 300 m from "
        "the roost at eye height 1.7 m.", kind="point3", unit="m", optional=True)
    look_at: tuple[float, float, float] | None = setting(
        None, "The point at the view's centre [x, y, z] (the frame's, at the shape "
        "`aspect`); default the roost at the preferred altitude.", kind="point3", unit="m",
        optional=True)
    up: tuple[float, float, float] = setting(
        (0.0, 0.0, 1.0), "Which way is up on screen [x, y, z] (not along the view).",
        kind="point3")
    fov: float = setting(30.0, "Vertical field of view of a frame of the shape `aspect`, "
                         "in (0, 180).", unit="degrees", lo=0, lo_open=True, hi=180,
                         hi_open=True)
    aspect: float = setting(16 / 9, "The frame shape \"W:H\" (or W/H) the view is composed "
                            "for: a frame of another shape shows at least its view, more "
                            "across if wider, more above and below if narrower (a square, "
                            "portrait or A-sheet frame keeps the whole width of view), "
                            "where the horizon keeps its height in the frame (a camera "
                            "following the centroid: the flock at its centre).",
                            kind="aspect")
    near: float = setting(0.1, "Near plane: what is closer along the view is clipped "
                          "(closer than the roost).",
                          unit="m", lo=0, lo_open=True)
    path: tuple[tuple[float, ...], ...] | None = setting(
        None, "Keyframes [[t, x, y, z, look_x, look_y, look_z, fov], …], eased between, "
        "held outside; override position, look_at and fov.", kind="path8",
        unit="s, m, m, degrees", optional=True)
    easing: str = easing_setting()
    follow: str = follow_setting(
        "the camera looks at the flock's centroid, critically damped (overrides look_at).",
        "the camera flies beside the flock: position and look_at move level with the "
        "damped centroid (its x and y), so the view never turns and the sky stands still.")
    follow_time: float = follow_time_setting()


@dataclass(frozen=True)
class BirdSettings:
    """3D: the bird's body as the camera sees it (docs/optics.md); defaults a starling's."""

    wingspan: float = setting(0.4, "Tip to tip: the wings' streak on screen.", unit="m",
                              lo=0, lo_open=True)
    body_length: float = setting(0.2, "Bill to tail: the body's streak before the shutter "
                                 "adds the distance flown.", unit="m", lo=0, lo_open=True)
    wing_area: float = setting(0.019, "Both wings, seen face-on.", unit="m²", lo=0)
    body_area: float = setting(0.01, "The body's silhouette (all a bird shows edge-on).",
                               unit="m²", lo=0)
    wingbeat: float = setting(0.0, "Wing beats a second, each bird at its own place in "
                              "the beat (a starling's: about 13); 0 holds the wings level, "
                              "as a glide.", unit="Hz", lo=0, hi=200)
    stroke: float = setting(100.0, "The wings' sweep from the top of the upstroke to the "
                            "bottom of the downstroke, level in its middle; 0 holds them "
                            "level.", unit="degrees", lo=0, hi=180)


def default_points(world, roost) -> tuple[tuple[float, float, float],
                                          tuple[float, float, float]]:
    """The default camera's (position, look_at), m: VIEWER_DISTANCE_M from the roost on
    its −y side at eye height, looking at the preferred altitude over the roost (the
    world's centre at 50 m without a [roost])."""
    x, y = (roost.position if roost is not None and roost.position is not None
            else (0.5 * world.width, 0.5 * world.height))
    altitude = roost.altitude if roost is not None else RoostSettings.altitude
    return (x, y - VIEWER_DISTANCE_M, EYE_HEIGHT_M), (x, y, altitude)


def camera_placed(scene):
    """`scene` (a Scene) with the position and look_at its 3D camera leaves to the
    default (`default_points`) written in, so what records it (a still, --check) names
    where the camera stood; unchanged in 2D or with a keyframed path."""
    if scene.world.dimensions != 3 or (scene.camera and scene.camera.path is not None):
        return scene
    camera = scene.camera or Camera3DSettings()
    position, look_at = default_points(scene.world, scene.roost)
    return replace(scene, camera=replace(camera, position=camera.position or position,
                                         look_at=camera.look_at or look_at))


def keyframes(camera: Camera3DSettings | None, world, roost) -> tuple[tuple[float, ...], ...]:
    """The camera's keyframes (t, x, y, z, look_x, look_y, look_z, fov) with the defaults
    filled in: its path, or one key (t = 0) of its position, look_at and fov."""
    camera = camera or Camera3DSettings()
    if camera.path is not None:
        return camera.path
    position, look_at = default_points(world, roost)
    return ((0.0, *(camera.position or position), *(camera.look_at or look_at), camera.fov),)
