"""Simulation figures: one step of the plate (scenes/plate.toml) at 3,600 birds
and at larger flocks of the same density, against an all-pairs numpy step of the same
rules measured in the same run.

Each public function returns result dicts {figure, value, unit, reference, ratio, target};
`run(quick)` returns them all (quick: toy sizes and few repeats, a few seconds). Times are
medians over several repeats: the machine is small and shared. Nothing runs on import.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from figures import result

# GNU OpenMP busy-waits between parallel regions: when anything else wants the cores every
# kernel launch then costs tens of ms. libgomp reads this when numba first loads it; the
# command line sets it for a render the same way.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCENE = ROOT / "scenes" / "plate.toml"
BIRDS = 3600  # the scene's own flock: 80 x 45 at spacing 1
# "Settled": 2 s after the scene's settling steps, as the drawing figures use; by then the
# flock is clustered (about 100 candidates and 39 neighbours per bird).
SETTLED_STEPS = 120


# ---------------------------------------------------------------------------------------
# Flocks


def load_scene(path, overrides):
    from render.scene import load_scene

    return load_scene(path, overrides)


def scene_for(birds: int = BIRDS):
    """The plate with its world scaled so that `birds` keep spacing 1 (same density,
    same aspect; every other length stays in spacings)."""
    scale = math.sqrt(birds / BIRDS)
    return load_scene(SCENE, [("world.width", repr(80.0 * scale), "bench"),
                              ("world.height", repr(45.0 * scale), "bench")])


def settled(birds: int = BIRDS, extra_steps: int = SETTLED_STEPS, threads: int = 2):
    """A Simulation of `scene_for(birds)` after its settling and `extra_steps` more."""
    from render.sim.simulate import Simulation

    with numba_threads(threads):
        sim = Simulation(scene_for(birds))
        for _ in range(extra_steps):
            sim.advance()
    return sim


@contextmanager
def numba_threads(threads: int):
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    try:
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(before)


# ---------------------------------------------------------------------------------------
# The all-pairs numpy reference


def all_pairs_step(sim):
    """One step of `sim`'s flock by the obvious vectorised numpy code: (n, n) arrays of
    every pair's offset and distance, the plate's rules (inverse-square separation,
    difference alignment, cohesion, each clamped), its containment, hawk and steering
    field, semi-implicit Euler. Returns the new (positions, velocities); `sim` is not
    advanced."""
    scene, rules, flock = sim.scene, sim.scene.rules, sim.scene.flock
    pos, vel = sim.positions, sim.velocities
    x, y = pos[:, 0], pos[:, 1]
    dx = x[None, :] - x[:, None]  # [i, j]: p_j − p_i
    dy = y[None, :] - y[:, None]
    d2 = dx * dx + dy * dy
    near = d2 < rules.perception_radius ** 2
    np.fill_diagonal(near, False)
    count = near.sum(axis=1)
    k = np.maximum(count, 1)
    push = near & (d2 < rules.separation_radius ** 2) & (d2 > 0)
    weight = np.where(push, np.where(push, d2, 1.0) ** -1.5, 0.0)  # unit vector / d²
    sep = -np.column_stack([(dx * weight).sum(axis=1), (dy * weight).sum(axis=1)])
    ali = (near.astype(float) @ vel) / k[:, None] - vel
    coh = np.column_stack([(dx * near).sum(axis=1), (dy * near).sum(axis=1)]) / k[:, None]

    def clamp(v):
        length = np.sqrt((v ** 2).sum(axis=1, keepdims=True))
        return v * np.minimum(1.0, rules.max_force / np.maximum(length, 1e-300))

    acc = (clamp(rules.separation_weight * sep) + clamp(rules.alignment_weight * ali)
           + clamp(rules.cohesion_weight * coh))
    acc[count == 0] = 0.0
    acc += _containment(pos, sim.forces.containment)
    hawk = sim.hawk_position()
    if hawk is not None:
        offset = pos - np.asarray(hawk)
        dist = np.sqrt((offset ** 2).sum(axis=1, keepdims=True))
        fade = np.clip(1.0 - dist / scene.hawk.radius, 0.0, None)
        acc += offset / np.maximum(dist, 1e-300) * scene.hawk.strength * fade ** 2
    v = vel + acc * sim.dt
    speed = np.sqrt((v ** 2).sum(axis=1, keepdims=True))
    v *= np.clip(speed, flock.min_speed, flock.max_speed) / speed
    turn = sim.turns()
    c, s = np.cos(turn)[:, None], np.sin(turn)[:, None]
    v = np.hstack([c * v[:, :1] - s * v[:, 1:], s * v[:, :1] + c * v[:, 1:]])
    return pos + v * sim.dt, v


def _containment(pos, c):
    """The containment's pull in numpy: strength·d toward the centre at distance d past the
    ellipse (along the ray from the centre), zero inside."""
    offset = pos - np.array([c.cx, c.cy])
    rho = np.hypot(offset[:, 0] / c.a, offset[:, 1] / c.b)[:, None]
    dist = np.sqrt((offset ** 2).sum(axis=1, keepdims=True))
    past = np.where(rho > 1.0, dist * (1.0 - 1.0 / np.maximum(rho, 1.0)), 0.0)
    return -offset / np.maximum(dist, 1e-300) * c.strength * past


def all_pairs_error(sim) -> float:
    """Largest coordinate difference between one all-pairs step and one kernel step from
    the same state (round-off only: the two compute the same rules)."""
    import copy

    want_pos, want_vel = all_pairs_step(sim)
    twin = copy.copy(sim)
    twin.advance()
    return float(max(np.abs(twin.positions - want_pos).max(),
                     np.abs(twin.velocities - want_vel).max()))


# ---------------------------------------------------------------------------------------
# Figures


def plate_step(quick: bool = False) -> list[dict]:
    """The settled plate, one step (`Simulation.advance`, everything a step does) on
    one thread, against the all-pairs numpy step of the same flock, in turns; and how the
    two agree."""
    birds = 900 if quick else BIRDS
    sim = settled(birds, extra_steps=10 if quick else SETTLED_STEPS)
    with numba_threads(1):
        t = interleaved({"ours": (sim.advance, 20 if quick else 100),
                         "all pairs": (lambda: all_pairs_step(sim), 1)},
                        rounds=2 if quick else 7)
    ours, reference = t["ours"], t["all pairs"]
    label = f"settled plate, {birds:,} birds, one step, 1 thread"
    return [
        result(label, ours, "ms", reference, reference / ours,
               "" if quick else "≤ 0.7 ms; ≥ 500× all-pairs numpy"),
        result(f"all-pairs numpy step of the same rules, {birds:,} birds", reference, "ms"),
        result("all-pairs step vs kernel step, largest difference (round-off)",
               all_pairs_error(sim), "", target="≤ 1e-9"),
    ]


def neighbour_search(quick: bool = False) -> list[dict]:
    """The neighbourhood kernel alone on the settled plate: nanoseconds per
    candidate tested (1 thread), beside what the hardware needs to merely test a candidate
    (a vectorised distance count over the same candidates, no sums)."""
    from render.sim.grid import counting_sort
    from render.sim.neighbours import (CANDIDATES, COUNT, N_COLUMNS, N_SUMS, neighbourhood,
                                       sort_birds)

    birds = 900 if quick else BIRDS
    sim = settled(birds, extra_steps=10 if quick else SETTLED_STEPS)
    pos, vel = sim.positions, sim.velocities
    shape = sim.grid(pos)
    rules, world = sim.forces.flocking, sim.world
    order, cell_start, _ = counting_sort(pos, shape.x0, shape.y0, shape.cw, shape.ch,
                                         shape.nx, shape.ny)
    rows = np.empty((len(pos), N_COLUMNS))
    sort_birds(pos, vel, order, rows)
    sums = np.empty((len(pos), N_SUMS))

    def search():
        neighbourhood(rows, cell_start, shape.nx, shape.ny, world.wrap, world.width,
                      world.height, rules.radius, rules.sep_radius, rules.sep_power, sums)

    def count_only():
        _count_within(rows, cell_start, shape.nx, shape.ny, rules.radius)

    rounds, calls = (3, 5) if quick else (15, 20)
    with numba_threads(1):
        t = interleaved({"search": (search, calls), "count": (count_only, calls)}, rounds)
    t_search, t_count = t["search"], t["count"]
    candidates = float(sums[:, CANDIDATES].sum())
    return [
        result("neighbourhood kernel, per candidate tested, 1 thread",
               t_search * 1e6 / candidates, "ns", t_count * 1e6 / candidates,
               t_search / t_count),
        result("hardware reference: distance test alone, per candidate", t_count * 1e6 /
               candidates, "ns"),
        result("candidates tested per bird", candidates / len(pos), "",
               float(sums[:, COUNT].mean()), float(candidates / sums[:, COUNT].sum()),
               "≈ 3× the neighbours (reference: neighbours per bird)"),
    ]


def step_phases(quick: bool = False) -> list[dict]:
    """Where one step of the settled plate goes (1 thread, median ms): the serial
    counting sort, the gather into grid order, the neighbourhood search, the steering
    field (three polynomial sines for φ, cos and sin of the turn per bird), the
    rest of the fused kernel (steering, containment, hawk, integration, identity order),
    and Python around it (grid bounds, hawk position, arguments, Snapshot). Every part
    runs on the same state, the whole step too (put back to it before each call): the
    step's cost moves with the flock (the hawk, how clustered it is), which would
    otherwise read as Python overhead."""
    from render.sim import step
    from render.sim.grid import counting_sort
    from render.sim.neighbours import N_COLUMNS, N_SUMS, neighbourhood, sort_birds

    birds = 900 if quick else BIRDS
    sim = settled(birds, extra_steps=10 if quick else SETTLED_STEPS)
    pos, vel = sim.positions, sim.velocities
    shape = sim.grid(pos)
    world, now = sim.world, sim.forces_now()
    rules = now.flocking
    no_field = now._replace(field=now.field._replace(active=False))
    order, cell_start, _ = counting_sort(pos, *shape)
    rows, sums = np.empty((len(pos), N_COLUMNS)), np.empty((len(pos), N_SUMS))
    work = step.workspace(len(pos))
    step_index = sim.step_index

    def advance_from_state():
        sim.positions, sim.velocities, sim.step_index = pos, vel, step_index
        sim.advance()

    calls = {
        "sort": lambda: counting_sort(pos, *shape),
        "gather": lambda: sort_birds(pos, vel, order, rows),
        "search": lambda: neighbourhood(rows, cell_start, shape.nx, shape.ny, world.wrap,
                                        world.width, world.height, rules.radius,
                                        rules.sep_radius, rules.sep_power, sums),
        "kernel": lambda: step.advance_flock(pos, vel, shape, world, sim.motion, now, work),
        "no field": lambda: step.advance_flock(pos, vel, shape, world, sim.motion, no_field,
                                               work),
        "advance": advance_from_state,
    }
    rounds, n = (3, 5) if quick else (15, 20)
    with numba_threads(1):
        t = interleaved({name: (fn, n) for name, fn in calls.items()}, rounds)
    field = t["kernel"] - t["no field"]
    rest = t["kernel"] - t["sort"] - t["gather"] - t["search"] - field
    label = f"{birds:,} birds, 1 thread"
    return [result(f"of which {what}, {label}", ms, "ms") for what, ms in (
        ("counting sort (serial)", t["sort"]),
        ("gather into grid order", t["gather"]),
        ("neighbourhood search", t["search"]),
        ("steering field: 3 polynomial sines + the turn's cos, sin per bird", field),
        ("steering, containment, hawk, integration, identity order", rest),
        ("Python around the kernel", t["advance"] - t["kernel"]))]


def large_flocks(quick: bool = False) -> list[dict]:
    """One step at 100,000 and 1,000,000 birds (same density), two threads; and the cost
    per bird-step from 10,000 to 1,000,000 birds with its log-log slope. Each flock is
    timed right after its settling steps."""
    sizes = [2_000, 6_000, 20_000] if quick else [10_000, 30_000, 100_000, 300_000,
                                                   1_000_000]
    targets = {} if quick else {100_000: "≤ 15 ms", 1_000_000: "≤ 200 ms"}
    sims = {birds: settled(birds, extra_steps=0) for birds in sizes}
    # The same flock on one thread first, in a block of its own (a change of thread count
    # between calls can slow the next two-thread calls): how much a second core gives.
    middle = sizes[2]
    with numba_threads(1):
        alone = interleaved({middle: (sims[middle].advance, 1 if quick else 10)},
                            rounds=3 if quick else 5)[middle]
    with numba_threads(2):
        # A few million bird-steps per size and round, all sizes in turns.
        times = interleaved({birds: (sim.advance, 1 if quick else max(2, 2_000_000 // birds))
                             for birds, sim in sims.items()}, rounds=3 if quick else 5)
    rows = [result(f"{birds:,} birds, one step, 2 threads", times[birds], "ms",
                   target=target) for birds, target in targets.items()]
    rows += [
        result(f"{middle:,} birds, one step, 1 thread", alone, "ms"),
        result(f"two threads' speed-up at {middle:,} birds", alone / times[middle], "×",
               target="" if quick else "≈ 2 when both cores are free"),
    ]
    per_bird = {b: t * 1e6 / b for b, t in times.items()}
    for birds, ns in per_bird.items():
        rows.append(result(f"cost per bird-step at {birds:,} birds, 2 threads", ns, "ns"))
    slope = float(np.polyfit(np.log(list(times)), np.log(list(times.values())), 1)[0])
    spread = max(per_bird.values()) / min(per_bird.values())
    first, last = sizes[0], sizes[-1]
    rows += [
        result(f"log-log slope of step time, {first:,} → {last:,} birds", slope, "",
               target="" if quick else "≈ 1 (flat cost per bird)"),
        result(f"cost per bird-step, largest ÷ smallest, {first:,} → {last:,} birds",
               spread, "", target="" if quick else "≤ 1.3/0.7 ≈ 1.86 (flat within ±30%)"),
    ]
    return rows


def parallel_calibration(quick: bool = False) -> list[dict]:
    """Speed-up of a trivially parallel loop on two threads, measured now: on a shared
    machine it says whether the second core was there for the two-thread figures."""
    data = np.ones(200_000 if quick else 2_000_000)

    def on(threads):
        def call():
            with numba_threads(threads):
                _busy(data)
        return call

    t = interleaved({1: (on(1), 1), 2: (on(2), 1)}, rounds=3 if quick else 9)
    return [result("trivially parallel loop, speed-up on 2 threads", t[1] / t[2], "×",
                   target="≈ 2 when both cores are free")]


def heap_tuning(quick: bool = False) -> list[dict]:
    """One step at 100,000 birds (two threads) in a process of its own (heap_child.py),
    with and without the malloc tuning the command line applies, in turns: the time and the
    page faults it saves a step. (glibc only: elsewhere no rows.)"""
    import platform

    if platform.libc_ver()[0] != "glibc":
        return []
    birds, steps, rounds = (20_000, 5, 1) if quick else (100_000, 20, 3)
    runs = {"1": [], "0": []}
    for _ in range(rounds):
        for tuned in runs:
            out = subprocess.run([sys.executable, str(HERE / "heap_child.py"), str(birds),
                                  str(steps), tuned],
                                 capture_output=True, text=True, check=True).stdout.split()
            runs[tuned].append((float(out[0]), float(out[1])))
    (kept, kept_faults), (plain, plain_faults) = (
        (statistics.median(t for t, _ in r), statistics.median(f for _, f in r))
        for r in runs.values())
    label = f"{birds:,} birds, one step, 2 threads"
    return [
        result(f"{label}, freed heap kept (mallopt) vs returned to the OS", kept, "ms", plain,
               plain / kept),
        result(f"page faults a step at {birds:,} birds, heap kept vs returned", kept_faults,
               "", plain_faults),
    ]


def run(quick: bool = False) -> list[dict]:
    """Every simulation figure of issue 4."""
    return (plate_step(quick) + step_phases(quick) + neighbour_search(quick)
            + parallel_calibration(quick) + large_flocks(quick) + heap_tuning(quick))


# ---------------------------------------------------------------------------------------
# Helpers


def interleaved(contenders: dict, rounds: int) -> dict[str, float]:
    """Median milliseconds per call of each contender {name: (fn, calls per round)}, taking
    turns round by round, so that load from elsewhere on the machine falls on all alike.
    Each is called once first (compilation, caches)."""
    for fn, _ in contenders.values():
        fn()
    times = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, (fn, calls) in contenders.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            times[name].append((time.perf_counter() - start) * 1e3 / calls)
    return {name: statistics.median(t) for name, t in times.items()}


def _jit(**options):
    import numba

    return numba.njit(error_model="numpy", **options)


def _count_within(rows, cell_start, nx, ny, radius):
    """Birds within `radius` of each bird over its 3x3 block (open world), the plainest
    vectorisable loop: the floor for testing a candidate, with none of the ordered sums."""
    return _count_kernel()(rows, cell_start, nx, ny, radius)


_compiled = {}


def _count_kernel():
    if "count" not in _compiled:
        from numba import uint64

        @_jit()
        def count(rows, cell_start, nx, ny, radius):
            r2 = radius * radius
            x = rows[:, 0].copy()
            y = rows[:, 1].copy()
            total = 0
            for c in range(nx * ny):
                cx, cy = c % nx, c // nx
                lo, hi = max(cx - 1, 0), min(cx + 1, nx - 1)
                for i in range(cell_start[c], cell_start[c + 1]):
                    for gy in range(max(cy - 1, 0), min(cy + 1, ny - 1) + 1):
                        a = uint64(cell_start[gy * nx + lo])
                        b = uint64(cell_start[gy * nx + hi + 1])
                        for j in range(a, b):
                            dx = x[j] - x[i]
                            dy = y[j] - y[i]
                            total += dx * dx + dy * dy < r2
            return total

        _compiled["count"] = count
    return _compiled["count"]


def _busy(a):
    if "busy" not in _compiled:
        import numba

        @_jit(parallel=True)
        def busy(a):
            out = np.empty_like(a)
            for i in numba.prange(a.size):
                out[i] = math.sin(a[i]) + math.sqrt(a[i])
            return out

        _compiled["busy"] = busy
    return _compiled["busy"](a)
