"""How much sky any flock of the shipped film's size could cover through its default
camera: `python benchmarks/sky_cover_bound.py --birds 20000` prints, at each sampled
time, the sky cover (issue 20's measure, murmuration_targets.sky_cover) of the flown
flock beside that of idealised flocks made of the same birds.

The idealised flocks keep the flown flock's birds (their headings and banks, so each
shows the camera what it shows in the film) and its place and principal axes, and put
them uniformly in a solid ellipsoid: sharp-edged, as dense at the rim as in the middle.
First with the flown flock's own second moments; then as dense as the nearest-neighbour
target allows (0.7 m: `DENSEST_M3` a bird), in the flock's proportions, in the real
flocks' 1 : 2.8 : 5.6 and in the rounder 1 : 2 : 4 the targets allow. No rule of flight
packs a flock more favourably for the cover, so the last rows bound what any model within
the other targets can reach at this flock size and camera.

`--set bird.wingbeat=13` beats every bird's wings as a starling's (docs/model.md): the
cover with the ink of wings turned toward the camera by their stroke.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import murmuration_targets as targets  # noqa: E402  (puts this checkout's render first)

# The hull volume a bird takes at the shipped film's median nearest neighbour (2.47 m³ at
# 0.92 m, docs/starlings.md), scaled to the 0.7 m the target allows at least.
DENSEST_M3 = 2.47 * (0.7 / 0.92) ** 3
SHAPES = (("1 : 2.8 : 5.6", (1.0, 2.8, 5.6)), ("1 : 2 : 4", (1.0, 2.0, 4.0)))
QUIET_TIMES = (4.0, 8.0, 11.0, 22.0, 26.0, 40.0, 44.0, 56.0)  # seed 0: outside attacks


def ellipsoid(rng, centre, axes, semi, n: int) -> np.ndarray:
    """n points uniform in the solid ellipsoid of semi-axes `semi` along the columns of
    `axes` about `centre`."""
    u = rng.normal(size=(n, 3))
    u /= np.linalg.norm(u, axis=1)[:, None]
    local = u * rng.random(n)[:, None] ** (1 / 3) * np.asarray(semi)
    return centre + local @ axes.T


def flocks(rng, positions: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """The flown flock and the idealised ones built on its place and axes."""
    n = len(positions)
    centre = positions.mean(axis=0)
    variances, axes = np.linalg.eigh(np.cov((positions - centre).T))  # thinnest first
    semi = np.sqrt(5 * variances)  # a uniform solid ellipsoid's variance is semi² / 5
    out = [("flown", positions), ("sharp-edged, the same moments",
                                  ellipsoid(rng, centre, axes, semi, n))]
    volume = DENSEST_M3 * n
    scale = (volume / (4 / 3 * math.pi * semi.prod())) ** (1 / 3)
    out.append(("sharp-edged, densest, its proportions",
                 ellipsoid(rng, centre, axes, semi * scale, n)))
    for name, ratios in SHAPES:
        ratios = np.asarray(ratios)
        unit = (volume / (4 / 3 * math.pi * ratios.prod())) ** (1 / 3)
        out.append((f"sharp-edged, densest, {name}",
                    ellipsoid(rng, centre, axes, ratios * unit, n)))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--birds", type=int, default=20000)
    p.add_argument("--times", default=",".join(f"{t:g}" for t in QUIET_TIMES),
                   help="seconds after settling, comma-separated (default: seed 0's "
                        "quiet times)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a scene override, as the CLI's --set")
    a = p.parse_args(argv)
    times = sorted(float(s) for s in a.times.split(","))
    if times[0] <= 0:
        p.error(f"--times {a.times}: expected seconds after settling, each above 0")
    from render.sim.simulate import Simulation

    scene = targets.load(a.seed, a.birds, [tuple(s.split("=", 1)) for s in a.set])
    simulation, dt, step = Simulation(scene), scene.scene.dt, 0
    rng = np.random.default_rng(a.seed)
    covers: dict[str, list[float]] = {}
    for t in times:
        while step * dt < t:
            snap = simulation.advance()
            step += 1
        print(f"{t:g} s{' (an attack)' if snap.attack else ''}:")
        for name, positions in flocks(rng, snap.positions):
            drawn = SimpleNamespace(positions=positions, velocities=snap.velocities,
                                    bank=snap.bank, landed=None, followed=snap.followed)
            cover = targets.sky_cover(scene, t, drawn)
            covers.setdefault(name, []).append(cover)
            print(f"  {name:40s} {cover:.3f}")
    print(f"seed {a.seed}, {a.birds} birds, {' '.join(a.set)}: median over the samples")
    for name, values in covers.items():
        print(f"  {name:40s} {np.median(values):.3f} ({min(values):.3f}–{max(values):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
