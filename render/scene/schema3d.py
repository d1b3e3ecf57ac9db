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
    landing_at: float | None = setting(None, "The finale: from this time (after settling) "
                                       "the birds peel off and land in the roost.",
                                       unit="s", optional=True)
    landing_spread: float = setting(20.0, "Birds peel off over this long, one by one.",
                                    unit="s", lo=0)
    landing_radius: float = setting(15.0, "Radius of the reed bed they land in.", unit="m",
                                    lo=0, lo_open=True)
    landing_slope: float = setting(0.6, "The funnel: a landing bird descends toward "
                                   "slope × its horizontal distance beyond the reed bed.",
                                   lo=0, lo_open=True)
    landing_strength: float = setting(6.0, "The landing's steering toward the roost and "
                                      "down the funnel.", unit="m/s²", lo=0, lo_open=True)
    landed: str = setting("ground", "How landed birds are drawn: where they landed, on the "
                          "ground, or hidden.", kind="choice", choices=("ground", "hidden"))
