"""Banked flight (docs/model.md, after StarDisplay): one bird's step from its steering.

The steering acceleration a (m/s², rules + roost + noise) is split in the bird's frame:
forward f, right r = f × z (horizontal), level up u = r × f. Along f it changes the speed,
which also relaxes toward the cruise speed v₀ with time constant τ. Along u it pitches the
bird directly. Along r it is not applied: it sets the bank angle's target
β* = atan(a·r / g), and β relaxes toward it at `roll_in` /s into a turn (|β*| > |β|, or β*
of the other sign) and `roll_out` /s out of it (a bird zigging rolls both ways at the
hunt's own, quicker rate: waves.py). Lift, along the banked up vector
cos β·u + sin β·r, has the magnitude g·(u·z): what balances gravity's part across the
flight path at the equilibrium speed (g in level flight, nothing straight up), not
g·(v/v₀)², so a bird that brakes does not lose lift and dive (the prototype's 35 m). A
banked bird pulls n times that, n = min(1/cos β, load factor): at a load factor of 1 it
loses g·(1 − cos β) of vertical lift, height in a hard turn that the roost's vertical
spring gives back; within acos(1/load factor) it turns level, at g·tan β. Then
semi-implicit Euler, the speed clamped to the flock's limits, and the ground: no bird
below z = 0.

Without [flight] (`Flight.active` false) a bird is a 3D point boid: v' = v + a·dt.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ..scene import Scene
from .jit import serial


class Flight(NamedTuple):
    """dt (s); speed limits (m/s); active: banked flight; v₀ (m/s), τ (s), the roll rates
    (1/s), g (m/s²); the most lift a bank pulls, in level flight's."""

    dt: float
    min_speed: float
    max_speed: float
    active: bool
    cruise: float
    tau: float
    roll_in: float
    roll_out: float
    g: float
    load_factor: float = 1.0


def flight(scene: Scene) -> Flight:
    f, flock = scene.flight, scene.flock
    if f is None:
        return Flight(scene.scene.dt, flock.min_speed, flock.max_speed, False, 1.0, 1.0, 0.0,
                      0.0, 9.81)
    return Flight(scene.scene.dt, flock.min_speed, flock.max_speed, True, f.cruise_speed,
                  f.speed_time, f.roll_in, f.roll_out, f.gravity, f.load_factor)


@serial
def frame(v0, v1, v2):
    """(speed, forward f, right r, up u) of velocity v: r = f × z normalised (for a bird
    flying straight up, −y), u = r × f."""
    s = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
    if s == 0.0:
        f0, f1, f2 = 1.0, 0.0, 0.0
    else:
        f0, f1, f2 = v0 / s, v1 / s, v2 / s
    h = math.sqrt(f0 * f0 + f1 * f1)
    if h < 1e-12:
        r0, r1 = 0.0, -1.0
    else:
        r0, r1 = f1 / h, -f0 / h
    u0 = r1 * f2
    u1 = -r0 * f2
    u2 = r0 * f1 - r1 * f0
    return s, f0, f1, f2, r0, r1, u0, u1, u2


@serial
def bank_step(p, bank, target, roll=0.0):
    """The bank angle after one step of relaxing from `bank` toward `target` (radians);
    `roll` (1/s), when above 0, in place of both rates: a zig's quick roll (waves.py)."""
    if roll > 0.0:
        rate = roll
    else:
        into = (target * bank < 0.0) or (abs(target) > abs(bank))
        rate = p.roll_in if into else p.roll_out
    return bank + (target - bank) * min(1.0, rate * p.dt)


@serial
def fly(p, x, y, z, v0, v1, v2, bank, a0, a1, a2, roll=0.0):
    """One bird's step under steering a (m/s²): new (x, y, z, vx, vy, vz, bank); `roll`:
    see `bank_step`."""
    s, f0, f1, f2, r0, r1, u0, u1, u2 = frame(v0, v1, v2)
    if p.active:
        along = a0 * f0 + a1 * f1 + a2 * f2 + (p.cruise - s) / p.tau
        up = a0 * u0 + a1 * u1 + a2 * u2
        bank = bank_step(p, bank, math.atan((a0 * r0 + a1 * r1) / p.g), roll)
        # Lift balances gravity's part across the flight path, g·(u·z): g level, 0 straight
        # up. A lift of g whatever the pitch pulled a climbing bird back to the vertical
        # from either side (its level up vector flips as its tilt crosses it), so a bird
        # pointing up stayed up, braked to the minimum speed by the roost's spring.
        lift = p.g * u2
        c, sb = math.cos(bank), math.sin(bank)
        if p.load_factor > 1.0:  # times min(1/cos β, load factor), not dividing by ~0
            lift *= p.load_factor if p.load_factor * c <= 1.0 else 1.0 / c
        a0 = along * f0 + up * u0 + lift * (c * u0 + sb * r0)
        a1 = along * f1 + up * u1 + lift * (c * u1 + sb * r1)
        a2 = along * f2 + up * u2 + lift * (c * u2) - p.g
    v0 = v0 + a0 * p.dt
    v1 = v1 + a1 * p.dt
    v2 = v2 + a2 * p.dt
    speed = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
    if speed == 0.0:
        v0, v1, v2 = p.min_speed, 0.0, 0.0
    elif speed > p.max_speed or speed < p.min_speed:
        k = (p.max_speed if speed > p.max_speed else p.min_speed) / speed
        v0, v1, v2 = v0 * k, v1 * k, v2 * k
    x = x + v0 * p.dt
    y = y + v1 * p.dt
    z = z + v2 * p.dt
    if z < 0.0:
        z = 0.0
        v2 = max(v2, 0.0)
    return x, y, z, v0, v1, v2, bank
