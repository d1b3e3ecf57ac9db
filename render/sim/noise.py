"""Per-step noise from a counter-based hash (docs/model.md): the draw of bird `bird` at step
`step` is a pure function of (seed, bird, step), so it never depends on the order birds are
computed in or on the thread count. splitmix64 (Steele, Lea & Flood 2014) mixes the key;
53 bits of each word make a uniform in (0, 1); Box–Muller makes normals.
"""

from __future__ import annotations

import math

from numba import uint64

from .jit import serial

_GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
_MASK = (1 << 64) - 1


@serial
def splitmix64(x):
    """One splitmix64 output for the uint64 state x (the state advanced by the golden
    gamma, then mixed). All arithmetic modulo 2⁶⁴."""
    z = uint64(x) + uint64(_GOLDEN)
    z = (z ^ (z >> uint64(30))) * uint64(_M1)
    z = (z ^ (z >> uint64(27))) * uint64(_M2)
    return z ^ (z >> uint64(31))


@serial
def key(seed, bird, step):
    """The hash key of (seed, bird, step), each an integer ≥ 0 (step may be negative:
    settling steps; it is taken modulo 2⁶⁴)."""
    return splitmix64(splitmix64(splitmix64(uint64(seed)) ^ uint64(bird)) ^ uint64(step))


@serial
def uniform(k, c):
    """The c-th uniform in (0, 1) of key k."""
    return (float(splitmix64(k + uint64(c)) >> uint64(11)) + 0.5) * (1.0 / 9007199254740992.0)


@serial
def normal3(seed, bird, step):
    """Three independent standard normals for (seed, bird, step)."""
    k = key(seed, bird, step)
    r1 = math.sqrt(-2.0 * math.log(uniform(k, 0)))
    t1 = 2.0 * math.pi * uniform(k, 1)
    r2 = math.sqrt(-2.0 * math.log(uniform(k, 2)))
    t2 = 2.0 * math.pi * uniform(k, 3)
    return r1 * math.cos(t1), r1 * math.sin(t1), r2 * math.cos(t2)
