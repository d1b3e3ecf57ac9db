"""The sections only a 3D scene (`[world] dimensions = 3`) may have (SPEC §9–§11)."""

from __future__ import annotations

from dataclasses import dataclass

from .fields import setting


@dataclass(frozen=True)
class FlightSettings:
    """3D only: banked flight (SPEC §9). Speed relaxes to cruise; the steering's lateral
    part is flown by banking; lift along the banked up vector balances gravity."""

    enabled: bool = setting(True, "Set false to switch the section off (plain 3D boids: "
                            "the steering moves the velocity directly).", kind="bool")
    cruise_speed: float = setting(10.0, "v₀, the speed a bird relaxes toward.", unit="m/s",
                                  lo=0, lo_open=True)
    speed_time: float = setting(0.5, "τ, the speed's relaxation time toward v₀.", unit="s",
                                lo=0, lo_open=True)
    roll_in: float = setting(10.0, "Rate at which the bank angle relaxes toward atan(a_lat/g) "
                             "rolling into a turn (a target of the other sign counts as "
                             "into).", unit="1/s", lo=0, lo_open=True)
    roll_out: float = setting(1.0, "The same rate rolling out of a turn.", unit="1/s",
                              lo=0, lo_open=True)
    gravity: float = setting(9.81, "g.", unit="m/s²", lo=0, lo_open=True)
    noise: float = setting(0.125, "Standard deviation of each component of the per-step "
                           "random steering (StarDisplay's 0.01 N on 0.08 kg).",
                           unit="m/s²", lo=0)


@dataclass(frozen=True)
class AtmosphereSettings:
    """3D only: haze (SPEC §10). A bird, the treeline or the ground at distance d keeps
    0.05^(d/V) of its contrast against the sky; the rest is the sky's colour (under
    --transparent, the rest is transparency). Without this section nothing is hazed."""

    enabled: bool = setting(True, "Set false to switch the section off.", kind="bool")
    visibility: float = setting(10_000.0, "V, the distance at which contrast falls to 5% "
                                "(3% lost over 100 m at 10 km).", unit="m", lo=0,
                                lo_open=True)


# [palette] keys only a 3D scene reads (the sky, sun, treeline and birds seen through the
# camera); a 2D scene giving one is refused, as it is a 3D-only section.
PALETTE_3D_KEYS = ("sky", "ground", "bird", "sun", "sun_colour", "sun_glow", "treeline",
                   "treeline_colour", "treeline_distance", "treeline_height")


@dataclass(frozen=True)
class RoostSettings:
    """3D only: the roost on the ground that holds the flock over it (SPEC §9)."""

    enabled: bool = setting(True, "Set false to switch the section off.", kind="bool")
    position: tuple[float, float] | None = setting(
        None, "The roost on the ground [x, y]; default the world's centre.", kind="point",
        unit="m", optional=True)
    altitude: float = setting(50.0, "Preferred altitude above the ground.", unit="m", lo=0)
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
