"""3D simulation figures (issue 18): one step of scenes/flock3d.toml (topological k = 7,
90° blind cone, banked flight, the roost, the noise) at 10,000 (1 thread), 100,000 and
1,000,000 birds (2 threads), the cost per bird-step from 10,000 to 1,000,000 with its
log-log slope, and the step a scientist would write measured in the same run: a
scipy.spatial.cKDTree built each step, query(k = 3k, workers=2), the blind cone filtered
in numpy, the k nearest visible kept, the rules, the roost, the noise and the flight in
numpy (tests/naive3d.py's).

The flocks are settled as the scene settles them (its 3,000 steps, 30 s of flight), as the
issue asks: a flock fresh from its seeding blob steps faster than the same flock settled
(which is denser and turns), so figures on it flatter (docs/performance.md has the
difference). Settled states come from the disk cache of settled states
(render/sim/settled.py) when this version of the simulator settled them before; the first
run settles 1,000,000 birds for about half an hour (a bar on stderr). `run(quick)`
returns the result dicts; quick: toy sizes, flown QUICK_SETTLE steps only.
"""

from __future__ import annotations

import math
import resource
import sys

import numpy as np

from figures import result
from sim_bench import ROOT, interleaved, load_scene, numba_threads

SCENE = ROOT / "scenes" / "flock3d.toml"
QUICK_SETTLE = 20


def flock(birds: int, threads: int = 2, quick: bool = False):
    """A Simulation3D of flock3d.toml with `birds`, settled (quick: flown QUICK_SETTLE
    steps from its seeding, not cached)."""
    from render.sim.simulate import Simulation

    sets = [("flock.count", str(birds), "bench")]
    if quick:
        sets.append(("scene.settle_steps", "0", "bench"))
    scene = load_scene(SCENE, sets)
    with numba_threads(threads):
        sim = Simulation(scene, cache=not quick, progress=not quick)
        for _ in range(QUICK_SETTLE if quick else 0):
            sim.advance()
    return sim


def reference_step(sim, state):
    """One step of the flock in `state` (naive3d.State3) the cKDTree way; returns the next."""
    sys.path.insert(0, str(ROOT / "tests"))
    from naive3d import model_of, naive_fly, naive_noise, naive_roost, unit_rows
    from scipy.spatial import cKDTree

    m = model_of(sim.scene)
    pos, k = state.pos, m["k"]
    fwd, _ = unit_rows(state.vel)
    d, j = cKDTree(pos).query(pos, k=3 * k + 1, workers=2)
    d, j = d[:, 1:], j[:, 1:]
    off = pos[j] - pos[:, None, :]
    cos_half = math.cos(math.radians(m["blind_angle"]) / 2)
    seen = -(off * fwd[:, None, :]).sum(axis=2) <= cos_half * d
    # The k nearest visible: stable sort of the blind ones to the end.
    order = np.argsort(~seen, axis=1, kind="stable")[:, :k]
    d, off = np.take_along_axis(d, order, 1), np.take_along_axis(off, order[..., None], 1)
    jn = np.take_along_axis(j, order, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        u = np.where(d[..., None] > 0, off / d[..., None], 0.0)
    g = np.where(d <= m["core"], 1.0, np.exp(-((d - m["core"]) / m["sigma"]) ** 2))
    sep = -m["w_sep"] * (g[..., None] * u).mean(axis=1)
    sep += (sep * fwd).sum(axis=1)[:, None] * fwd
    ali = m["w_ali"] * (fwd[jn].mean(axis=1) - fwd)
    c2 = (u.mean(axis=1) ** 2).sum(axis=1)[:, None]
    acc = sep + ali + m["w_coh"] * c2 * ((1 - g)[..., None] * u).mean(axis=1)
    push, homing, side, pull = naive_roost(state, fwd, m)
    acc += push + m["noise"] * naive_noise(m["seed"], len(pos), state.step)
    vel, bank = naive_fly(state.vel, state.bank, acc, m)
    return type(state)(pos + vel * m["dt"], vel, bank, state.step + 1, homing, side, pull)


def _stepper(sim):
    from naive3d import State3

    state = [State3(sim.positions.copy(), sim.velocities.copy(), sim.bank.copy(), 0)]

    def step():
        state[0] = reference_step(sim, state[0])
    return step


def state_bytes(sim) -> int:
    """Bytes of the simulator's own arrays (state and workspace, with the lists' grid and
    its blocks' boxes of drifts)."""
    work = sim._work
    grid, boxes = work.grid[0], work.boxes[0]
    arrays = [sim.positions, sim.velocities, sim.bank,
              *(a for a in work if isinstance(a, np.ndarray)),
              *(() if grid is None else (a for a in grid if isinstance(a, np.ndarray))),
              *(() if boxes is None else (boxes,))]
    return int(sum(a.nbytes for a in arrays))


def run(quick: bool = False) -> list[dict]:
    sizes = [2_000, 6_000, 20_000] if quick else [10_000, 100_000, 1_000_000]
    small, middle, large = sizes
    sims = {b: flock(b, quick=quick) for b in sizes}
    sys.path.insert(0, str(ROOT / "tests"))
    rows = []
    with numba_threads(1):
        t = interleaved({"ours": (sims[small].advance, 3 if quick else 20),
                         "ref": (_stepper(sims[small]), 1 if quick else 5)},
                        rounds=2 if quick else 5)
    rows.append(result(f"3D topological k=7, {small:,} birds, one step, 1 thread", t["ours"],
                       "ms", t["ref"], t["ref"] / t["ours"],
                       target="" if quick else "≥ 8× the cKDTree reference"))
    with numba_threads(2):
        t = interleaved({"ours": (sims[middle].advance, 2 if quick else 10),
                         "ref": (_stepper(sims[middle]), 1)}, rounds=2 if quick else 3)
        rows.append(result(f"3D topological k=7, {middle:,} birds, one step, 2 threads",
                           t["ours"], "ms", t["ref"], t["ref"] / t["ours"],
                           target="" if quick else "≤ 20 ms; ≥ 15× the cKDTree reference"))
        times = interleaved({b: (s.advance, 1 if quick else max(2, 2_000_000 // b))
                             for b, s in sims.items()}, rounds=2 if quick else 3)
    rows.append(result(f"3D topological k=7, {large:,} birds, one step, 2 threads",
                       times[large], "ms", target="" if quick else "≤ 250 ms"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    rows.append(result(f"3D, {large:,} birds: the simulator's arrays", state_bytes(
        sims[large]) / 2**20, "MiB"))
    rows.append(result("3D figures: the process's peak memory", peak, "MiB"))
    per_bird = {b: t * 1e6 / b for b, t in times.items()}
    for b, ns in per_bird.items():
        rows.append(result(f"3D cost per bird-step at {b:,} birds, 2 threads", ns, "ns"))
    slope = float(np.polyfit(np.log(list(times)), np.log(list(times.values())), 1)[0])
    rows += [
        result(f"3D log-log slope of step time, {small:,} → {large:,} birds", slope, ""),
        result(f"3D cost per bird-step, largest ÷ smallest, {small:,} → {large:,} birds",
               max(per_bird.values()) / min(per_bird.values()), "",
               target="" if quick else "≤ 1.3"),
    ]
    return rows
