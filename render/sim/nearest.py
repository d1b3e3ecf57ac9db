"""Topological neighbours: each bird's k nearest visible birds, exact, from a folded grid.

docs/model.md: a bird's neighbours are the k nearest of the birds it can see (outside the cone of
`blind_angle` straight behind it), optionally only within `max_range`, ties broken by bird
index. The answer is exact and never depends on the cell side, the bird order or the
thread count: those only decide how much is searched.

The grid is folded, not a dense box: a bird's cell is the integer triple floor(p / side),
and the cell (cx, cy, cz) lands in bucket (cx mod X, cy mod Y, cz mod Z) of a table of about
two buckets per bird, so memory is O(n) however far one straggler flies. Cells far apart
may share a bucket (each candidate's own cell is checked); cells side by side are buckets
side by side, so birds sorted by bucket are sorted in space, and a row of three cells is
one run of memory. A bird searches shells of cells around its own (Chebyshev rings 0, 1,
2, …) until the k-th distance found is no larger than the distance to the nearest cell not
yet searched; a bird so isolated that its shells would pass more cells than the table has
buckets scans every bird instead (still exact; O(n) for that bird alone).

2D positions (n, 2) use the same kernels with a single layer of cells (Z = 1).

The 3D step (render.sim.step3d) keeps each bird's candidates from one search for the
steps after it (`relist`, `read_list`), and the grid they were drawn from, searching
it again (its cells grown by how far the birds have moved since) only where they cannot
tell.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .jit import inline, parallel, prange, serial, sized

# Rounding in floor(p / side) may put a bird an ulp outside the cell it is filed in: the
# stopping test subtracts this share of a cell, so a search can only be too long.
_SLACK = 1e-9


class Grid(NamedTuple):
    """Birds filed by bucket: `order` (n,) bird indices, bucket by bucket (by index within a
    bucket); `start` (X·Y·Z + 1,) each bucket's first slot; `pos` (n, 3) the positions
    (z = 0 in 2D) in that order; `cell` (n, 3) int64 their cells and `fwd` (n, 3) their
    forward vectors, each (0, 3) when not asked for; `side` the cell side; `folds`
    (X, Y, Z), powers of two."""

    order: np.ndarray
    start: np.ndarray
    pos: np.ndarray
    cell: np.ndarray
    fwd: np.ndarray
    side: float
    folds: tuple[int, int, int]


# Rows the grid's shape is estimated from (the extents for the folds, a median radius for
# the cell side): a fixed stride, so a step costs no sort of every bird (1,000,000 birds'
# percentiles took 120 ms) and stays deterministic. The shape decides only the speed.
SAMPLE = 4096


def sample(values: np.ndarray) -> np.ndarray:
    """Every k-th row of `values`, about SAMPLE of them (all when fewer)."""
    return values[::max(1, len(values) // SAMPLE)]


# Cell side per first search radius. Smaller cells hold fewer candidates but a ball then
# crosses more rows, each a lookup of its slots; measured on the settled flock3d (k = 7),
# the search is flat from 1.2 to 1.7 and 1.4 times slower at 0.67.
SIDE_PER_RADIUS = 1.5


def cell_side(radius: np.ndarray) -> float:
    """The grid's cell side for birds whose first search radii are `radius` (n,):
    SIDE_PER_RADIUS times their (sampled, finite) median; 1 when none is finite."""
    radii = sample(np.asarray(radius, np.float64))
    radii = radii[np.isfinite(radii)]
    return SIDE_PER_RADIUS * float(np.median(radii)) if len(radii) else 1.0


def folds_for(pos: np.ndarray, side: float) -> tuple[int, int, int]:
    """(X, Y, Z): powers of two, together at most about 2n buckets, each axis no longer
    than the flock's extent in cells needs (most birds' cells then get a bucket alone)."""
    n, d = pos.shape
    budget = max(64, 1 << (2 * max(n, 1) - 1).bit_length())
    low, high = np.percentile(sample(pos), [1, 99], axis=0) if n else (np.zeros(d), np.zeros(d))
    want = [max(1, int((hi - lo) / side) + 3) for lo, hi in zip(low, high)] + [1] * (3 - d)
    folds = [1, 1, 1]
    # Double the axis that is furthest short of its extent until the budget is spent.
    while True:
        shortfall = [w / f for w, f in zip(want, folds)]
        axis = int(np.argmax(shortfall))
        if shortfall[axis] <= 1 or np.prod(folds) * 2 > budget:
            return tuple(folds)
        folds[axis] *= 2


@inline
def _cell_of(pos, i, side, flat):
    """Bird i's cell (cx, cy, cz), int64; cz = 0 in 2D (`flat`)."""
    cx = np.int64(math.floor(pos[i, 0] / side))
    cy = np.int64(math.floor(pos[i, 1] / side))
    cz = np.int64(0) if flat else np.int64(math.floor(pos[i, 2] / side))
    return cx, cy, cz


@serial
def _file(pos, side, fx, fy, fz, buckets, start):
    """Each bird's bucket into buckets (n,) and the buckets' first slots into start."""
    flat = pos.shape[1] == 2
    start[:] = 0
    for i in range(pos.shape[0]):
        cx, cy, cz = _cell_of(pos, i, side, flat)
        b = ((cz & (fz - 1)) * fy + (cy & (fy - 1))) * fx + (cx & (fx - 1))
        buckets[i] = b
        start[b + 1] += 1
    for b in range(start.shape[0] - 1):
        start[b + 1] += start[b]


@serial
def _sorted(pos, fwd, side, buckets, start, order, spos, scell, sfwd):
    """Counting sort's scatter: birds by bucket, stable, with their positions, and their
    cells and forward vectors where scell, sfwd have rows."""
    flat = pos.shape[1] == 2
    fill = start[:-1].copy()
    for i in range(pos.shape[0]):
        slot = fill[buckets[i]]
        fill[buckets[i]] += 1
        order[slot] = i
        spos[slot, 0] = pos[i, 0]
        spos[slot, 1] = pos[i, 1]
        spos[slot, 2] = 0.0 if flat else pos[i, 2]
        if scell.shape[0]:
            scell[slot, 0], scell[slot, 1], scell[slot, 2] = _cell_of(pos, i, side, flat)
        if sfwd.shape[0]:
            for a in range(fwd.shape[1]):
                sfwd[slot, a] = fwd[i, a]
            for a in range(fwd.shape[1], 3):
                sfwd[slot, a] = 0.0


def build_grid(pos: np.ndarray, side: float, *, cells: bool = True,
               fwd: np.ndarray | None = None) -> Grid:
    """The folded grid of birds at `pos` (n, 2) or (n, 3), cells of `side` world units;
    with their cells (`cells`) and their forward vectors fwd (n, 2 or 3) in grid order."""
    n = len(pos)
    fx, fy, fz = folds_for(pos, side)
    buckets = np.empty(n, np.int64)
    start = np.empty(fx * fy * fz + 1, np.int64)
    _file(pos, float(side), fx, fy, fz, buckets, start)
    order = np.empty(n, np.int64)
    spos = np.empty((n, 3))
    scell = np.empty((n if cells else 0, 3), np.int64)
    sfwd = np.empty((0 if fwd is None else n, 3))
    _sorted(pos, pos if fwd is None else fwd, float(side), buckets, start, order, spos, scell,
            sfwd)
    return Grid(order, start, spos, scell, sfwd, float(side), (fx, fy, fz))


@inline
def _offer(s, d2, g_order, best_s, best_d2, found, k):
    """Insert the bird in slot s at squared distance d2 into the top-k lists (of slots),
    sorted by d2 then by bird index; returns the new count. The caller has checked it
    beats the k-th."""
    at = found if found < k else k - 1
    if found < k:
        found += 1
    j = g_order[s]
    while at > 0 and (best_d2[at - 1] > d2 or
                      (best_d2[at - 1] == d2 and g_order[best_s[at - 1]] > j)):
        best_d2[at] = best_d2[at - 1]
        best_s[at] = best_s[at - 1]
        at -= 1
    best_d2[at] = d2
    best_s[at] = s
    return found


@inline
def _take(q, slot, ox, oy, oz, d2, bound, f0, f1, f2, cos_blind, g_order, best_s, best_d2,
          found):
    """Offer the bird in slot (offset o, squared distance d2) to the bird in slot q
    (forward f), if it is below `bound` (or at it with a lower index, once k are found)
    and visible; returns (the new count, the new bound: the k-th distance once k are
    found, else unchanged)."""
    k = best_s.shape[0]
    if d2 >= bound and not (found == k and d2 == bound and
                            g_order[slot] < g_order[best_s[k - 1]]):
        return found, bound
    if slot == q:
        return found, bound
    # In the rear cone when the angle between −forward and the offset is below half the
    # blind angle: −(o·f) > cos(half)·|o|. A coincident bird has no direction: seen.
    if cos_blind < 1.0 and d2 > 0.0:
        if -(ox * f0 + oy * f1 + oz * f2) > cos_blind * math.sqrt(d2):
            return found, bound
    found = _offer(slot, d2, g_order, best_s, best_d2, found, k)
    return found, (best_d2[k - 1] if found == k else bound)


@inline
def _run(q, a, b, r2, g_order, g_pos, g_fwd, cos_blind, best_s, best_d2, found, near):
    """Offer the bird in slot q the birds in slots a..b−1 it can see nearer than sqrt(r2)
    and than its k-th so far; returns the new count. Each piece of up to len(near)
    slots is first screened by distance alone, without a branch (the slots at or inside
    the bound written into `near`, scratch (m,) int64): a branch per candidate, taken at
    random, cost more than the distances; only the few left are offered."""
    k = best_s.shape[0]
    x, y, z = g_pos[q, 0], g_pos[q, 1], g_pos[q, 2]
    f0, f1, f2 = g_fwd[q, 0], g_fwd[q, 1], g_fwd[q, 2]
    bound = best_d2[k - 1] if found == k else r2
    for piece in range(a, b, near.shape[0]):
        kept = 0
        for slot in range(piece, min(b, piece + near.shape[0])):
            ox = g_pos[slot, 0] - x
            oy = g_pos[slot, 1] - y
            oz = g_pos[slot, 2] - z
            near[kept] = slot
            kept += np.int64(ox * ox + oy * oy + oz * oz <= bound)
        for t in range(kept):
            slot = near[t]
            ox = g_pos[slot, 0] - x
            oy = g_pos[slot, 1] - y
            oz = g_pos[slot, 2] - z
            found, bound = _take(q, slot, ox, oy, oz, ox * ox + oy * oy + oz * oz, bound, f0,
                                 f1, f2, cos_blind, g_order, best_s, best_d2, found)
    return found


@inline
def _row(q, cx0, cx1, row, start, fx, r2, g_order, g_pos, g_fwd, cos_blind, best_s,
         best_d2, found, near, gathering):
    """Offer bird q the birds of cells cx0..cx1 of one folded row (first bucket `row`):
    one run of slots, or two where the run wraps past the fold, or the whole row once.
    Returns (the new count, the slots offered). `gathering` (a Gathered, or None): gather
    them instead (see `_gather`)."""
    if cx1 - cx0 + 1 >= fx:
        a, b, c, d = start[row], start[row + fx], 0, 0
    else:
        lo = cx0 & (fx - 1)
        hi = cx1 & (fx - 1)
        if lo <= hi:
            a, b, c, d = start[row + lo], start[row + hi + 1], 0, 0
        else:
            a, b, c, d = start[row + lo], start[row + fx], start[row], start[row + hi + 1]
    if gathering is None:
        found = _run(q, a, b, r2, g_order, g_pos, g_fwd, cos_blind, best_s, best_d2, found,
                     near)
        if d > c:
            found = _run(q, c, d, r2, g_order, g_pos, g_fwd, cos_blind, best_s, best_d2,
                         found, near)
    else:
        found = _gather(q, a, b, r2, g_order, g_pos, best_s, best_d2, found, gathering)
        if d > c:
            found = _gather(q, c, d, r2, g_order, g_pos, best_s, best_d2, found, gathering)
    return found, (b - a) + (d - c)


class Gathered(NamedTuple):
    """Scratch of a `_ball` that gathers (see `relist`): top_s (m,) int64 and top_d2 (m,)
    the nearest m are ranked into, index (GATHERED,) int64 the bird indices of those
    ranked, and cut (1,), the squared distance beyond which no bird is gathered any more
    (inf until the gathered fill their arrays once)."""

    top_s: np.ndarray
    top_d2: np.ndarray
    index: np.ndarray
    cut: np.ndarray


@inline
def _gather(q, a, b, r2, g_order, g_pos, got_s, got_d2, kept, gathering):
    """Gather the birds in slots a..b−1 nearer bird q than sqrt(r2) (q left out) into
    got_s, got_d2 from `kept` on, unsorted; returns how many are gathered now. Without a
    branch: each slot is written, and the count advanced by whether it is near. When
    fewer than NEAR places are left, only the nearest len(gathering.top_s) stay (`_rank`)
    and from then on no bird beyond the farthest of them (its equals are) is gathered."""
    x, y, z = g_pos[q, 0], g_pos[q, 1], g_pos[q, 2]
    cut = gathering.cut
    for piece in range(a, b, NEAR):
        if kept > got_s.shape[0] - NEAR:
            kept = _rank(kept, got_s, got_d2, g_order, gathering)
            got_s[:kept] = gathering.top_s[:kept]
            got_d2[:kept] = gathering.top_d2[:kept]
            cut[0] = got_d2[kept - 1]
        bound = cut[0]
        for slot in range(piece, min(b, piece + NEAR)):
            ox = g_pos[slot, 0] - x
            oy = g_pos[slot, 1] - y
            oz = g_pos[slot, 2] - z
            d2 = ox * ox + oy * oy + oz * oz
            got_s[kept] = slot
            got_d2[kept] = d2
            kept += np.int64((d2 < r2) & (d2 <= bound) & (slot != q))
    return kept


@inline
def _rank(kept, got_s, got_d2, g_order, gathering):
    """The nearest len(gathering.top_s) of the `kept` birds gathered (slots got_s, squared
    distances got_d2), by distance then bird index, nearest first into gathering.top_s,
    top_d2; returns how many. Each bird's place is counted, without a branch: inserted
    one by one as they were found, a branch per comparison taken at random cost the
    drawing of the lists a third of its time."""
    top_s, top_d2, index = gathering.top_s, gathering.top_d2, gathering.index
    m = top_s.shape[0]
    for a in range(kept):
        index[a] = g_order[got_s[a]]
    for a in range(kept):
        d, i = got_d2[a], index[a]
        nearer = 0
        for b in range(kept):
            nearer += np.int64((got_d2[b] < d) | ((got_d2[b] == d) & (index[b] < i)))
        if nearer < m:
            top_s[nearer] = got_s[a]
            top_d2[nearer] = d
    return min(kept, m)


@inline
def _gap(p, c, side):
    """Distance from coordinate p to cell c's interval [c·side, (c + 1)·side]."""
    return max(0.0, c * side - p, p - (c + 1) * side)


# Inlined like the helpers above, into the parallel loop: a call per bird, with its
# arrays, cost as much as the search itself (measured: half the kernel's time).
@inline
def _ball(q, r, start, fx, fy, fz, side, dims, g_order, g_pos, g_fwd, cos_blind, best_s,
          best_d2, near, at, grow, stretch, gathering=None):
    """Offer bird q every bird within r of it, through the cells the ball of radius r
    touches (rows clipped to the ball); returns (how many it keeps, the candidates whose
    distance it computed), or (−1, 0) when the ball spans more cells along an axis than
    the grid folds (the caller scans every bird).

    The cells are those around `at` (3 floats), q's place where the grid filed it, out
    to (r + grow)·stretch: a grid of this step serves with q's position, 0 and 1. A grid
    filed at an earlier step (its birds' cells those of their places then) serves with
    q's place then, grow the drift of q and the largest of any bird since (`drift`) and
    stretch 1 / `shrink` of the flock's motion: every bird now within r of q was filed
    within that of q's place.

    `gathering` (a Gathered; None: offer): gather them instead, unsorted (`_gather`), and
    return how many were gathered."""
    if gathering is None:
        best_s[:] = -1
        best_d2[:] = math.inf
    x, y, z = at
    cover = (r + grow) * stretch * (1.0 + _SLACK) + _SLACK * side  # never too few cells
    # Wider than the folds along y (or infinite, which no cell index holds): scanned.
    if not cover <= side * (fy + 1):
        return -1, 0
    r2 = r * r
    cz0 = int(math.floor((z - cover) / side)) if dims == 3 else 0
    cz1 = int(math.floor((z + cover) / side)) if dims == 3 else 0
    cy0 = int(math.floor((y - cover) / side))
    cy1 = int(math.floor((y + cover) / side))
    if cz1 - cz0 + 1 > fz or cy1 - cy0 + 1 > fy:
        return -1, 0
    found = 0
    offered = 0
    for cz in range(cz0, cz1 + 1):
        rest_z = cover * cover - (_gap(z, cz, side) ** 2 if dims == 3 else 0.0)
        if rest_z < 0.0:
            continue
        for cy in range(cy0, cy1 + 1):
            rest = rest_z - _gap(y, cy, side) ** 2
            if rest < 0.0:
                continue
            rx = math.sqrt(rest)
            row = ((cz & (fz - 1)) * fy + (cy & (fy - 1))) * fx
            found, more = _row(q, int(math.floor((x - rx) / side)),
                               int(math.floor((x + rx) / side)), row, start, fx, r2, g_order,
                               g_pos, g_fwd, cos_blind, best_s, best_d2, found, near,
                               gathering)
            offered += more
    # The bird itself sits in one of the cells: its own distance is not a test.
    return found, offered - 1


@serial
def _scan(q, g_order, g_pos, g_fwd, cos_blind, max_d2, best_s, best_d2, near):
    """`search` for an isolated bird: every bird offered, in slot order."""
    best_s[:] = -1
    best_d2[:] = math.inf
    return _run(q, 0, g_order.shape[0], max_d2, g_order, g_pos, g_fwd, cos_blind, best_s,
                best_d2, 0, near)


@inline
def search(q, radius, start, fx, fy, fz, side, dims, g_order, g_pos, g_fwd, cos_blind,
           max_d2, best_s, best_d2, near, at, grow, stretch, near_grow, clear):
    """The k nearest visible birds of the bird in slot q into best_s (their slots) and
    best_d2 (k = their length), nearest first, −1 / inf past the last found; returns (how
    many, the candidates whose distance was computed, over every ball tried). Balls of
    radius `radius`, then 1.5 times larger each time, until one holds k birds (every bird
    outside it is farther than all of them) or reaches max range. at, grow, stretch:
    where the grid was filed (see `_ball`); a ball smaller than `clear` grows by
    near_grow instead (`local_limit`: within it, only birds that drifted that little
    against q can be)."""
    k = best_s.shape[0]
    r = radius
    tested = 0
    while True:
        final = r * r >= max_d2
        if final:
            r = math.sqrt(max_d2)
        found, more = _ball(q, r, start, fx, fy, fz, side, dims, g_order, g_pos, g_fwd,
                            cos_blind, best_s, best_d2, near, at,
                            near_grow if r < clear else grow, stretch)
        tested += more
        if found < 0:
            found = _scan(q, g_order, g_pos, g_fwd, cos_blind, max_d2, best_s, best_d2,
                          near)
            return found, tested + g_order.shape[0] - 1
        if found == k or final:
            return found, tested
        r *= 1.5


# Birds are searched in chunks of this many slots, each chunk with its own scratch lists:
# a fixed split (not one per thread), so nothing depends on the thread count.
CHUNK = 512
# The slots a run is screened in at a time (see `_run`).
NEAR = 64


@parallel
def nearest_visible(radius, start, fx, fy, fz, side, dims, g_order, g_pos, g_fwd, cos_blind,
                    max_d2, out_j, out_d2, out_count, out_tested):
    """Every bird's neighbours (see `search`) into row i of out_j (n, k) int64 and out_d2
    (n, k) float64, their number into out_count (n,), the candidates tested into
    out_tested (n,). Birds are taken in bucket order, so birds near in space are searched
    near in time; each writes only its own rows."""
    n = g_order.shape[0]
    k = out_j.shape[1]
    for c in prange((n + CHUNK - 1) // CHUNK):
        best_s = np.empty(k, np.int64)
        best_d2 = np.empty(k)
        near = np.empty(NEAR, np.int64)
        for q in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
            i = g_order[q]
            found, tested = search(q, radius[i], start, fx, fy, fz, side, dims, g_order,
                                   g_pos, g_fwd, cos_blind, max_d2, best_s, best_d2, near,
                                   (g_pos[q, 0], g_pos[q, 1], g_pos[q, 2]), 0.0, 1.0,
                                   0.0, 0.0)
            for m in range(k):
                out_j[i, m] = g_order[best_s[m]] if m < found else -1
                out_d2[i, m] = best_d2[m]
            out_count[i] = found
            out_tested[i] = tested


def cos_half_blind(blind_angle_deg: float) -> float:
    """cos of half the blind cone's aperture; 1.0 (no cone) for an aperture of 0."""
    if blind_angle_deg <= 0.0:
        return 1.0
    return math.cos(math.radians(blind_angle_deg) / 2.0)


def k_nearest_visible(pos: np.ndarray, fwd: np.ndarray, k: int, *, radius,
                      side: float | None = None, blind_angle: float = 0.0,
                      max_range: float = math.inf):
    """Each bird's k nearest visible birds: (indices (n, k) int64, −1 where none; squared
    distances (n, k) float64, inf where none; counts (n,) int64).

    pos, fwd: (n, d) float64, d = 2 or 3; fwd the unit forward vectors (read only with a
    blind cone). radius: each bird's first search radius, a number or (n,), world units
    (about its k-th neighbour's distance is fastest: last step's, say); side: the grid's
    cell side (default `cell_side`). Neither changes the result.
    """
    n, d = pos.shape
    if d not in (2, 3) or fwd.shape != pos.shape:
        raise ValueError(f"positions and forward vectors: expected equal (n, 2) or (n, 3) "
                         f"shapes, got {pos.shape} and {fwd.shape}")
    radius = np.broadcast_to(np.asarray(radius, np.float64), (n,))
    if n and not (radius > 0.0).all():
        raise ValueError("radius: expected search radii > 0")
    side = cell_side(radius) if side is None and n else (side or 1.0)
    if not side > 0.0:
        raise ValueError(f"side: expected a cell side > 0, got {side}")
    pos = np.ascontiguousarray(pos, np.float64)
    grid = build_grid(pos, side, cells=False, fwd=np.asarray(fwd, np.float64))
    out_j = np.empty((n, k), np.int64)
    out_d2 = np.empty((n, k), np.float64)
    count = np.empty(n, np.int64)
    tested = np.empty(n, np.int64)
    max_d2 = max_range * max_range if math.isfinite(max_range) else math.inf
    nearest_visible(np.ascontiguousarray(radius), grid.start, *grid.folds, grid.side, d,
                    grid.order, grid.pos, grid.fwd, cos_half_blind(blind_angle), max_d2,
                    out_j, out_d2, count, tested)
    return out_j, out_d2, count


# Candidate lists with a skin (Verlet lists): a bird's nearest birds, found once, serve
# the steps after as long as no bird that was farther than the list's reach can have come
# nearer than its k-th. Each bird's list holds every bird (seen or not) within its reach:
# its first search radius times 1 + SKIN (or less, when LISTED birds fill it first).
SKIN = 0.35
LISTED = 32


# Scratch for gathering a list: room for LISTED birds and a screened piece (NEAR) twice.
GATHERED = 2 * (LISTED + NEAR)


@inline
def relist(q, radius, start, fx, fy, fz, side, g_order, g_pos, g_fwd, cand, reach, got_s,
           got_d2, near, gathering):
    """The bird in slot q lists every bird within radius·(1 + SKIN) of it, nearest first,
    into row q of cand (their slots, −1 past the last) and the list's reach into reach[q]
    (every bird off the list is at least that far; 0: no list, the bird so isolated its
    ball spans the fold), from a grid of this step. The birds are gathered unsorted first
    (got_s, got_d2: (GATHERED,) scratch; gathering: a Gathered of len(cand[q])), then
    ranked. Returns the candidates whose distance it computed."""
    r = radius * (1.0 + SKIN)
    gathering.cut[0] = math.inf
    kept, tested = _ball(q, r, start, fx, fy, fz, side, 3, g_order, g_pos, g_fwd, 1.0,
                         got_s, got_d2, near, (g_pos[q, 0], g_pos[q, 1], g_pos[q, 2]),
                         0.0, 1.0, gathering)
    found = _rank(kept, got_s, got_d2, g_order, gathering) if kept > 0 else kept
    m = cand.shape[1]
    for t in range(m):
        cand[q, t] = gathering.top_s[t] if t < found else -1
    reach[q] = 0.0 if found < 0 else (r if found < m else math.sqrt(gathering.top_d2[m - 1]))
    return max(tested, 0)


@inline
def read_list(q, cand, g_order, g_pos, g_fwd, cos_blind, max_d2, best_s, best_d2):
    """The k nearest visible birds of the bird in slot q among its listed candidates (row
    q of the lists cand, drawn at an earlier step whose grid order the slots still
    follow) into best_s, best_d2, as `search`; returns (how many, the candidates tested).
    Whether they are the k nearest of the whole flock is `list_answers`'s to say."""
    k = best_s.shape[0]
    best_s[:] = -1
    best_d2[:] = math.inf
    x, y, z = g_pos[q, 0], g_pos[q, 1], g_pos[q, 2]
    f0, f1, f2 = g_fwd[q, 0], g_fwd[q, 1], g_fwd[q, 2]
    found = 0
    bound = max_d2
    tested = 0
    for t in range(cand.shape[1]):
        s = cand[q, t]
        if s < 0:
            break
        tested += 1
        ox = g_pos[s, 0] - x
        oy = g_pos[s, 1] - y
        oz = g_pos[s, 2] - z
        found, bound = _take(q, s, ox, oy, oz, ox * ox + oy * oy + oz * oz, bound, f0, f1,
                             f2, cos_blind, g_order, best_s, best_d2, found)
    return found, tested


@inline
def list_answers(limit, found, best_d2, max_d2):
    """Whether `read_list`'s answer (found, best_d2) is exact when every bird off the list
    is at least `limit` away (see `local_limit`): when the answer lies strictly inside the
    limit, every bird off the list being farther than the k-th (or, short of k, than the
    max range). The limit gives up a little for the rounding in the distances it was
    drawn from."""
    k = best_d2.shape[0]
    limit = limit * (1.0 - 1e-12) - 1e-9
    if not limit > 0.0:
        return False
    return (best_d2[k - 1] if found == k else max_d2) < limit * limit


# Since the lists were drawn the flock has flown on, turned and stretched: `drift` fits
# that motion (a bird listed at a carried to a + t + L·a, least squares over the birds
# flying) and leaves each bird its drift, what the fit does not explain. Two birds listed
# a apart are now at least shrink·|a| less their two drifts apart (shrink = 1 − ‖L‖): a
# turning flock's far ends move metres from where its mean motion would put them within a
# few steps, but each bird drifts little from where the fit puts it.
@inline
def residual(motion, p0, p1, p2, a0, a1, a2):
    """The drift (3 floats) of a bird now at p, listed at a: its displacement less the
    flock's motion there. motion (5, 3): the displacement t at a point c of the flock, L
    row by row, then c; the motion at a is t + L·(a − c) (taken from c, not the origin, so
    its rounding stays that of distances within the flock, wherever the flock is)."""
    c0, c1, c2 = a0 - motion[4, 0], a1 - motion[4, 1], a2 - motion[4, 2]
    e0 = p0 - a0 - (motion[0, 0] + motion[1, 0] * c0 + motion[1, 1] * c1 + motion[1, 2] * c2)
    e1 = p1 - a1 - (motion[0, 1] + motion[2, 0] * c0 + motion[2, 1] * c1 + motion[2, 2] * c2)
    e2 = p2 - a2 - (motion[0, 2] + motion[3, 0] * c0 + motion[3, 1] * c1 + motion[3, 2] * c2)
    return e0, e1, e2


# A fitted L larger than this (Frobenius) is not a flock's motion over a few steps (a flock
# of a handful of birds, or all in one plane): the translation alone is used.
MOST_LINEAR = 0.25


def shrink(motion: np.ndarray) -> float:
    """The least share of any distance between two listed birds that the flock's motion
    keeps: 1 − ‖L‖ (Frobenius, never below the largest singular value)."""
    return 1.0 - math.sqrt(float((motion[1:4] ** 2).sum()))


@sized("pos")
def _moments(pos, anchor, flying, ref, parts):
    """Per chunk of CHUNK birds, of those flying (flying (n,) bool, or empty: all), into
    row c of parts: how many, Σ a (3), Σ d (3), Σ a aᵀ (9, by rows), Σ d aᵀ (9); a the
    anchors less `ref` (3,), a point among them (the sums stay small), d the
    displacements."""
    every = flying.shape[0] == 0
    for c in prange(parts.shape[0]):
        row = parts[c]
        row[:] = 0.0
        for i in range(c * CHUNK, min(pos.shape[0], (c + 1) * CHUNK)):
            if every or flying[i]:
                row[0] += 1.0
                for r in range(3):
                    ar = anchor[i, r] - ref[r]
                    dr = pos[i, r] - anchor[i, r]
                    row[1 + r] += ar
                    row[4 + r] += dr
                    for col in range(3):
                        ac = anchor[i, col] - ref[col]
                        row[7 + 3 * r + col] += ar * ac
                        row[16 + 3 * r + col] += dr * ac


@sized("pos")
def _drifts(pos, anchor, flying, motion, out, most):
    """Each bird's drift's length into out (n,), and per chunk the largest of the birds
    flying into most (chunks,)."""
    every = flying.shape[0] == 0
    for c in prange(most.shape[0]):
        top = 0.0
        for i in range(c * CHUNK, min(pos.shape[0], (c + 1) * CHUNK)):
            e0, e1, e2 = residual(motion, pos[i, 0], pos[i, 1], pos[i, 2], anchor[i, 0],
                                  anchor[i, 1], anchor[i, 2])
            out[i] = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
            if (every or flying[i]) and out[i] > top:
                top = out[i]
        most[c] = top


def drift(pos: np.ndarray, anchor: np.ndarray, flying: np.ndarray, out: np.ndarray,
          motion: np.ndarray) -> float:
    """The flock's motion since the lists were drawn at anchor (n, 3) into motion (5, 3)
    (see `residual`), fitted to the birds flying (flying (n,) bool, or empty: all), each
    bird's drift's length into out (n,); returns the largest over the birds flying. Sums
    go by fixed chunks of birds, so nothing depends on the thread count."""
    chunks = max(1, -(-len(pos) // CHUNK))
    parts = np.empty((chunks, 25))
    ref = anchor[0].copy() if len(anchor) else np.zeros(3)
    _moments(pos, anchor, flying, ref, parts)
    total = parts.sum(axis=0)
    m = total[0]
    motion[:] = 0.0
    if m > 0:
        sum_a, sum_d = total[1:4], total[4:7]
        spread = total[7:16].reshape(3, 3) - np.outer(sum_a, sum_a) / m
        carried = total[16:25].reshape(3, 3) - np.outer(sum_d, sum_a) / m
        try:
            linear = np.linalg.solve(spread, carried.T).T
        except np.linalg.LinAlgError:
            linear = np.zeros((3, 3))
        if not (np.isfinite(linear).all() and np.sqrt((linear ** 2).sum()) <= MOST_LINEAR):
            linear = np.zeros((3, 3))
        motion[0] = sum_d / m - linear @ (sum_a / m)
        motion[1:4] = linear
        motion[4] = ref
    most = np.empty(chunks)
    _drifts(pos, anchor, flying, motion, out, most)
    return float(most.max())


# A bird's list is exact while no bird off it can have come nearer than its k-th. The
# largest drift of the whole flock bounds that, but a flock whose birds change places
# (a wave, a bird darting) has some drift far more than the rest: so the drifts are also
# bounded locally, per block of 2 × 2 × 2 cells of the lists' grid.
@inline
def blocks(fx, fy, fz):
    """The blocks' folds for a grid folded (fx, fy, fz): half as many along each axis,
    an axis folded once staying one block."""
    return max(fx // 2, 1), max(fy // 2, 1), max(fz // 2, 1)


@sized("g_pos")
def drift_boxes(g_pos, anchor, g_order, motion, start, fx, fy, fz, boxes):
    """Each block's box of its birds' drifts (see `residual`; listed at anchor (n, 3), by
    bird, the flock's motion since `motion`) into row b of boxes (blocks, 6): lows then
    highs, lows above highs for a block with no bird. The blocks fold as the cells do
    (X/2 · Y/2 · Z/2 of them, an axis folded once stays one block): block (bx, by, bz)
    holds the birds of buckets (2bx + 0|1, 2by + 0|1, 2bz + 0|1). g_pos: this step's
    positions in the grid's slots (a bird landed since: infinite, left out)."""
    nx, ny, nz = blocks(fx, fy, fz)
    for b in prange(nx * ny * nz):
        x0, y0, z0 = 2 * (b % nx), 2 * ((b // nx) % ny), 2 * (b // (nx * ny))
        lo0 = lo1 = lo2 = math.inf
        hi0 = hi1 = hi2 = -math.inf
        for cz in range(z0, z0 + min(fz, 2)):
            for cy in range(y0, y0 + min(fy, 2)):
                row = (cz * fy + cy) * fx
                for q in range(start[row + x0], start[row + x0 + min(fx, 2)]):
                    i = g_order[q]
                    e0, e1, e2 = residual(motion, g_pos[q, 0], g_pos[q, 1], g_pos[q, 2],
                                          anchor[i, 0], anchor[i, 1], anchor[i, 2])
                    if not (abs(e0) < math.inf):
                        continue
                    lo0, hi0 = min(lo0, e0), max(hi0, e0)
                    lo1, hi1 = min(lo1, e1), max(hi1, e1)
                    lo2, hi2 = min(lo2, e2), max(hi2, e2)
        boxes[b, 0], boxes[b, 1], boxes[b, 2] = lo0, lo1, lo2
        boxes[b, 3], boxes[b, 4], boxes[b, 5] = hi0, hi1, hi2


@inline
def local_limit(q, i, reach, g_pos, anchor, motion, keep, side, fx, fy, fz, boxes, moved,
                most):
    """How near a bird off the list of the bird in slot q (bird i) can have come since
    the lists were drawn, at least: `list_answers`'s limit. A bird off the list was
    `reach` or farther from q then, and two birds listed a apart are now at least
    keep·|a| (keep: `shrink` of the flock's motion) less the distance between their
    drifts apart. Birds filed in the 27 blocks around q's then (see `drift_boxes`) drifted
    within those blocks' boxes; every other bird was filed at least a block's side plus
    q's distance to its own block's nearest face away (or the reach, if farther), and
    drifted at most `most` (the flock's largest drift; q's own: `moved`). Never below the
    flock-wide limit, keep·reach − moved − most. Returns (that limit, the bound on a
    drift against q's of a bird filed in those blocks, how near any other bird can have
    come): a search (`search`'s near_grow, clear) need grow its balls only by the drifts
    around q while they stay inside the last."""
    nx, ny, nz = blocks(fx, fy, fz)
    block = 2.0 * side
    a0, a1, a2 = anchor[i, 0], anchor[i, 1], anchor[i, 2]
    e0, e1, e2 = residual(motion, g_pos[q, 0], g_pos[q, 1], g_pos[q, 2], a0, a1, a2)
    # q's block from its cell, as it was filed (a cell's block is its index halved).
    bx = np.int64(math.floor(a0 / side)) >> 1
    by = np.int64(math.floor(a1 / side)) >> 1
    bz = np.int64(math.floor(a2 / side)) >> 1
    worst = 0.0
    for z in range(bz - 1, bz + 2):
        for y in range(by - 1, by + 2):
            row = ((z & (nz - 1)) * ny + (y & (ny - 1))) * nx
            for x in range(bx - 1, bx + 2):
                b = row + (x & (nx - 1))
                if boxes[b, 0] > boxes[b, 3]:
                    continue
                d0 = max(e0 - boxes[b, 0], boxes[b, 3] - e0)
                d1 = max(e1 - boxes[b, 1], boxes[b, 4] - e1)
                d2 = max(e2 - boxes[b, 2], boxes[b, 5] - e2)
                worst = max(worst, d0 * d0 + d1 * d1 + d2 * d2)
    worst = min(math.sqrt(worst), moved + most)
    face = min(a0 - bx * block, (bx + 1) * block - a0, a1 - by * block,
               (by + 1) * block - a1, a2 - bz * block, (bz + 1) * block - a2)
    far = max(reach, block + max(face, 0.0) - _SLACK * side)
    clear = keep * far - moved - most
    return min(keep * reach - worst, clear), worst, clear
