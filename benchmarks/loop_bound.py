"""The fewest birds a 2D loop's morph must fade, whatever the morph does:
`python benchmarks/loop_bound.py scenes/plate.toml --frames 90 --crossfade 0.5 --set
scene.settle_steps=300` prints, for each start t₀ the loop's search tries, the least share
of the birds that cannot reach a partner within the morph.

A morph carries each drawn bird from the tail (the flock a clip after t₀, at the morph's
first frame) to the head's bird it becomes (the flock at the morph's last frame, t₀ plus
the morph), one bird to one. The loop's 4th measure (docs/loops.md) reads a bird that
moves faster than 1.5× the scene's maximum speed between two frames as fading out and in.
So a tail bird can become a head bird only if the two lie within 1.5 × the maximum speed
× the morph's length, by whatever path; the largest pairing within that reach (a maximum
bipartite matching, `matched`) leaves the rest to fade, and no morph that draws each bird
once fades fewer. Accent birds pair among themselves, as the loop pairs them. The bound
is lenient: a path that turns back or crosses the lanes counts as reachable, though the
streaks' alignment (the 2nd measure) would see it.

2D scenes under a fixed camera: a 3D loop's speeds are read relative to the flock's
centroid, which this leaves out.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's render, not an installed one
from render.loop import SPEED_LIMIT  # noqa: E402  (numba's cache folder, before numba)
from render.sim.jit import serial  # noqa: E402


def least_fading(tail: np.ndarray, head: np.ndarray, accent: np.ndarray, reach: float,
                 extent: np.ndarray | None = None) -> float:
    """The least share of the birds at `tail` ((n, d) positions) left without a bird of
    `head` (n, d) within `reach` when each is paired with one, accent birds ((n,) bool)
    among themselves; `extent`: the world's (d,) size where it wraps (None: open)."""
    from scipy.spatial import cKDTree

    if extent is not None:
        tail, head = np.mod(tail, extent), np.mod(head, extent)
    near = cKDTree(tail, boxsize=extent).sparse_distance_matrix(
        cKDTree(head, boxsize=extent), reach, output_type="ndarray")
    i, j = near["i"].astype(np.int64), near["j"].astype(np.int64)
    keep = accent[i] == accent[j]
    i, j = i[keep], j[keep]
    order = np.argsort(i, kind="stable")
    first = np.searchsorted(i[order], np.arange(len(tail) + 1))
    return float((matched(first, j[order], len(head)) < 0).mean())


def matched(first: np.ndarray, to: np.ndarray, heads: int) -> np.ndarray:
    """A maximum matching of the bipartite graph whose tail i has the heads
    to[first[i]:first[i + 1]]: each tail's head, or −1. scipy's maximum_bipartite_matching
    gives the same size (tests/test_benchmarks.py) but took minutes where many tails stay
    unmatched (220 s for the plate's 3,600 birds at a reach of 9 units; this, 0.1 s)."""
    tails = np.full(len(first) - 1, -1, np.int64)
    _augment(first.astype(np.int64), to.astype(np.int64), tails, np.full(heads, -1, np.int64))
    return tails


@serial
def _augment(first, to, tails, heads):
    """Grow the matching (tails[i] = j, heads[j] = i, −1: free) along augmenting paths,
    a depth-first search from every free tail a round, each head entered once a round,
    until a round finds none (then none exists: Berge)."""
    seen = np.zeros(heads.shape[0], np.int64)
    stack = np.empty(tails.shape[0] + 1, np.int64)
    edge = np.empty(tails.shape[0] + 1, np.int64)
    grew, round_ = True, 0
    while grew:
        grew, round_ = False, round_ + 1
        for root in range(tails.shape[0]):
            if tails[root] >= 0:
                continue
            depth, stack[0], edge[0] = 0, root, first[root]
            while depth >= 0:
                a = stack[depth]
                if edge[depth] == first[a + 1]:
                    depth -= 1  # a dead end: back up
                    continue
                b = to[edge[depth]]
                edge[depth] += 1
                if seen[b] == round_:
                    continue
                seen[b] = round_
                if heads[b] < 0:  # free: flip the path's edges into the matching
                    for d in range(depth, -1, -1):
                        h = to[edge[d] - 1]
                        tails[stack[d]], heads[h] = h, stack[d]
                    grew = True
                    break
                depth += 1
                stack[depth], edge[depth] = heads[b], first[heads[b]]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("scene", type=Path)
    p.add_argument("--frames", type=int, required=True, help="the clip's frames")
    p.add_argument("--crossfade", type=float, default=1.0, help="the morph, s (default 1)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a scene override, as the CLI's --set")
    a = p.parse_args(argv)
    from render.scene import load_scene, parse_override
    from render.sim.loop import SEARCH, STRIDE, wrapping
    from render.sim.simulate import Simulation, frames

    sets = [*a.set, f"output.frames={a.frames}"]
    scene = load_scene(a.scene, [(*parse_override(s), s) for s in sets])
    if scene.dimensions != 2:
        p.error(f"{a.scene}: a 2D scene, please (a 3D loop's speeds are the centroid's)")
    fps = scene.output.fps
    morph = round(a.crossfade * fps)
    if not 2 <= morph < a.frames:
        p.error(f"--crossfade {a.crossfade:g}: from 2 frames to under the clip's {a.frames}")
    sim = Simulation(scene)
    accent = np.asarray(sim.accent, bool)
    flown = [f.positions.copy() for f in frames(sim, fps, 2 * a.frames + morph)]
    reach = SPEED_LIMIT * scene.flock.max_speed * morph / float(fps)
    extent = wrapping(scene, flown[0])
    shares = {}
    for start in range(0, int(a.frames * SEARCH) + 1, max(1, morph // STRIDE)):
        shares[start] = least_fading(flown[start + a.frames], flown[start + morph], accent,
                                     reach, extent)
        print(f"t₀ {start / float(fps):6.3f} s: at least {shares[start]:.1%} of the birds "
              f"fade", flush=True)
    best = min(shares, key=shares.get)
    print(f"{a.scene.name}, {a.frames} frames, a {a.crossfade:g} s morph (reach "
          f"{reach:.3g} world units), {' '.join(a.set)}: at best {shares[best]:.1%} "
          f"(t₀ {best / float(fps):.3f} s), at worst {max(shares.values()):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
