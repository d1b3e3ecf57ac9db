"""Pairing two flocks bird to bird by position and heading, for a loop's morph: an
assignment local to grid cells, so it scales to 100,000 birds.

Each bird of flock A is paired with one bird of flock B (a permutation). The cost of a
pair is the squared distance between the two birds plus the squared distance their
headings would part them over `horizon` seconds: |pa − pb|² + (horizon·|va − vb|)².
Birds are binned in square cells; inside each cell every free A bird is offered every
free B bird (in a crowded cell, the WINDOW nearest it along a Morton order), and the
offered pairs are taken cheapest first (the greedy matching). Birds left over try again
in cells twice as wide, the grid shifted by half a cell each time so that neighbours
split by a cell border meet; the last few are paired all against all. Works for (n, d)
states, any d.
"""

from __future__ import annotations

import math

import numpy as np

from ..ranking import stable_order
from .jit import serial

# Past this many birds left over, the all-against-all end would hold too many pairs: the
# rest are paired in the order of their grid cells instead (a flock that moved away).
ALL_PAIRS_LIMIT = 200
# Cells of the first level hold about this many birds of each flock.
PER_CELL = 6
# A cell that would offer more than WINDOW² pairs offers each A bird the WINDOW B birds
# nearest it in a Morton order of cells FINE times smaller (a power of two) instead: a
# sheet of birds puts hundreds in a cell, and the birds left over at the coarse levels
# thousands, whose every pair would take gigabytes.
WINDOW, FINE = 64, 16
CROWDED = WINDOW * WINDOW


def pair(pa: np.ndarray, va: np.ndarray, pb: np.ndarray, vb: np.ndarray, *,
         horizon: float, extent: np.ndarray | None = None) -> np.ndarray:
    """For each bird i of flock A (positions pa, velocities va: (n, d) float64) its partner
    in flock B (pb, vb: (n, d)): an (n,) int64 permutation. `extent`: the world's (d,)
    size when it wraps (distances across the edge count), else None."""
    n, d = pa.shape
    partner = np.full(n, -1, np.int64)
    free_a, free_b = np.arange(n), np.arange(n)
    span = np.ptp(np.concatenate([pa, pb]), axis=0).max() + 1e-9
    side = span / max(1.0, (n / PER_CELL) ** (1.0 / d))
    level = 0
    while free_a.size > ALL_PAIRS_LIMIT and side <= 2 * span:
        offset = 0.5 * side * (level % 2)
        ia, ib = _cell_pairs(pa[free_a], pb[free_b], side, offset)
        cost = _cost(pa, va, pb, vb, free_a[ia], free_b[ib], horizon, extent)
        ka, kb = _greedy(ia, ib, cost, free_a.size, free_b.size)
        partner[free_a[ka]] = free_b[kb]
        free_a, free_b = np.delete(free_a, ka), np.delete(free_b, kb)
        side *= 2.0
        level += 1
    if free_a.size > ALL_PAIRS_LIMIT:  # a flock that moved away: keep the cells' order
        order = lambda p: np.lexsort(np.floor(p / side).T[::-1])  # noqa: E731
        partner[free_a[order(pa[free_a])]] = free_b[order(pb[free_b])]
    elif free_a.size:
        m = free_a.size
        ia, ib = np.repeat(np.arange(m), m), np.tile(np.arange(m), m)
        cost = _cost(pa, va, pb, vb, free_a[ia], free_b[ib], horizon, extent)
        ka, kb = _greedy(ia, ib, cost, m, m)
        partner[free_a[ka]] = free_b[kb]
    return partner


def _cost(pa, va, pb, vb, rows_a, rows_b, horizon: float, extent) -> np.ndarray:
    """The cost of pairing A bird rows_a[k] with B bird rows_b[k], for every k."""
    out = np.empty(len(rows_a))
    _costs(np.ascontiguousarray(pa, np.float64), np.ascontiguousarray(va, np.float64),
           np.ascontiguousarray(pb, np.float64), np.ascontiguousarray(vb, np.float64),
           rows_a, rows_b, horizon * horizon,
           np.zeros(0) if extent is None else np.asarray(extent, np.float64), out)
    return out


@serial
def _costs(pa, va, pb, vb, rows_a, rows_b, h2, extent, out):
    """out[k] = |Δp|² + h2·|Δv|² of the pair (rows_a[k], rows_b[k]), Δp across a wrapping
    edge where `extent` (d,) is given (empty: none), each sum taken axis by axis in order
    (as numpy's over a row). Read in place: gathering the offered rows first took longer
    than the costs."""
    d = pa.shape[1]
    wrap = extent.shape[0] > 0
    for k in range(rows_a.shape[0]):
        i, j = rows_a[k], rows_b[k]
        near = 0.0
        turn = 0.0
        for axis in range(d):
            delta = pb[j, axis] - pa[i, axis]
            if wrap:
                delta -= extent[axis] * np.rint(delta / extent[axis])
            near += delta * delta
            dv = vb[j, axis] - va[i, axis]
            turn += dv * dv
        out[k] = near + h2 * turn


def _cell_pairs(pa: np.ndarray, pb: np.ndarray, side: float, offset: float):
    """The offered pairs (i, j) of A bird i and B bird j in the same cell, as two (k,)
    int64 arrays: every such pair, except in a cell whose pairs would number more than
    CROWDED, where each A bird is offered the WINDOW B birds nearest it along a Morton
    order of finer cells (so a level of a few thousand birds left over in a few large
    cells offers thousands of pairs per bird, not millions in all)."""
    origin = np.minimum(pa.min(axis=0), pb.min(axis=0)) - offset
    key_a, key_b = _keys(pa, side, origin), _keys(pb, side, origin)
    order_b = np.argsort(key_b, kind="stable")
    sorted_b = key_b[order_b]
    start = np.searchsorted(sorted_b, key_a, side="left")
    stop = np.searchsorted(sorted_b, key_a, side="right")
    _, cell_a, in_cell = np.unique(key_a, return_inverse=True, return_counts=True)
    crowded = in_cell[cell_a] * (stop - start) > CROWDED
    count = np.where(crowded, 0, stop - start)
    ia = np.repeat(np.arange(pa.shape[0]), count)
    # Position of each pair inside its A bird's run of B birds.
    within = np.arange(ia.size) - np.repeat(np.cumsum(count) - count, count)
    ib = order_b[np.repeat(start, count) + within]
    if not crowded.any():
        return ia, ib
    wa, wb = _windowed(pa, pb, side, origin, key_a, key_b, np.flatnonzero(crowded))
    return np.concatenate([ia, wa]), np.concatenate([ib, wb])


def _windowed(pa, pb, side, origin, key_a, key_b, crowded):
    """For the A birds `crowded` (indices), the WINDOW B birds of their cell nearest each
    along a Morton order of cells FINE times smaller: (i, j) int64 arrays."""
    _, cell = np.unique(np.concatenate([key_a, key_b]), return_inverse=True)
    bits = FINE.bit_length() - 1
    code_a = cell[:len(key_a)] << (bits * pa.shape[1])
    code_b = cell[len(key_a):] << (bits * pa.shape[1])
    code_a = code_a + _morton(pa, side, origin, bits)
    code_b = code_b + _morton(pb, side, origin, bits)
    order_b = np.argsort(code_b, kind="stable")
    sorted_b = code_b[order_b]
    own = cell[:len(key_a)][crowded] << (bits * pa.shape[1])
    first = np.searchsorted(sorted_b, own, side="left")
    last = np.searchsorted(sorted_b, own + (1 << (bits * pa.shape[1])), side="left")
    at = np.searchsorted(sorted_b, code_a[crowded], side="left")
    low = np.clip(at - WINDOW // 2, first, np.maximum(first, last - WINDOW))
    count = np.minimum(low + WINDOW, last) - low
    ia = np.repeat(crowded, count)
    within = np.arange(ia.size) - np.repeat(np.cumsum(count) - count, count)
    return ia, order_b[np.repeat(low, count) + within]


def _morton(p: np.ndarray, side: float, origin: np.ndarray, bits: int) -> np.ndarray:
    """Each point's Morton code (bits per axis) of its place inside its cell of `side`."""
    fine = np.floor((p - origin) / side * (1 << bits)).astype(np.int64) % (1 << bits)
    code = np.zeros(p.shape[0], np.int64)
    for bit in range(bits):
        for axis in range(p.shape[1]):
            code |= ((fine[:, axis] >> bit) & 1) << (bit * p.shape[1] + axis)
    return code


def _keys(p: np.ndarray, side: float, origin: np.ndarray) -> np.ndarray:
    """One int64 per cell of side `side` of a grid whose corner is at `origin`."""
    cells = np.floor((p - origin) / side).astype(np.int64)
    key = np.zeros(p.shape[0], np.int64)
    for axis in range(p.shape[1]):
        key = key * (1 << 20) + cells[:, axis]
    return key


def _greedy(ia, ib, cost, na: int, nb: int):
    """The greedy matching of the offered pairs: cheapest first (ties to the earlier
    offer), each bird taken once. Matched (A, B) index arrays."""
    got = _take(stable_order(cost), ia, ib, na, nb)
    return ia[got], ib[got]


@serial
def _take(order, ia, ib, na, nb):
    """The offers, in `order`, whose two birds are both still free: their indices."""
    taken_a = np.zeros(na, np.bool_)
    taken_b = np.zeros(nb, np.bool_)
    got = np.empty(min(na, nb), np.int64)
    count = 0
    for k in order:
        a, b = ia[k], ib[k]
        if not (taken_a[a] or taken_b[b]):
            taken_a[a] = True
            taken_b[b] = True
            got[count] = k
            count += 1
    return got[:count]


# A flock's layout at a clip's end is not its start's: some of its parts hold more birds
# than at the start and some fewer. The greedy matching pairs the birds of each place
# first and leaves the rest to pair across the flock, tens of metres apart, and those fade
# out and in. The least-cost pairing instead moves birds along the sheet a metre or two
# each, where a few would otherwise jump. Its pairs lie among each bird's nearest few
# dozen in the cost's space: TRANSPORT of them (and its greedy partner, which keeps a
# whole pairing among the candidates) are offered, and an auction finds their least-cost
# pairing within EPSILON of the greedy pairing's mean cost per bird.
TRANSPORT, EPSILON = 64, 1e-4
# Where the layouts differ across the whole flock (a few birds in a hundred gone from one
# end to the other), the bids carry each move along a chain of birds, round after round:
# past this many bids a bird (the film's pairs take under 60) the greedy pairing is kept
# instead. Counted in bids, not seconds, so every machine keeps the same pairs.
BIDS = 200


def transport(pa: np.ndarray, va: np.ndarray, pb: np.ndarray, vb: np.ndarray,
              partner: np.ndarray, *, horizon: float) -> np.ndarray:
    """The least-cost pairing of flock A with flock B (as `pair`, no wrapping) among each
    A bird's TRANSPORT nearest B birds in the cost's space and its `partner` (a
    permutation, such as `pair`'s): an (n,) int64 permutation, its total cost within
    n · EPSILON · the partner pairing's mean cost of the least; `partner` itself where
    the auction would take more than BIDS bids a bird."""
    from scipy.spatial import cKDTree

    n = pa.shape[0]
    if n < 2:
        return partner.copy()
    a, b = np.hstack([pa, horizon * va]), np.hstack([pb, horizon * vb])
    _, near = cKDTree(b).query(a, min(n, TRANSPORT), workers=-1)  # each query its own
    rows = np.concatenate([np.repeat(np.arange(n), near.shape[1]), np.arange(n)])
    key = np.unique(rows * n + np.concatenate([near.ravel(), partner]))
    rows, cols = key // n, key % n
    cost = _cost(pa, va, pb, vb, rows, cols, horizon, None)
    mean = float(_cost(pa, va, pb, vb, np.arange(n), partner, horizon, None).mean())
    out = np.empty(n, np.int64)
    done = _auction(np.searchsorted(rows, np.arange(n + 1)), cols, cost,
                    max(EPSILON * mean, 1e-300), np.zeros(n), out, BIDS * n)
    return out if done else partner.copy()


@serial
def _auction(first, to, cost, eps_end, price, partner, budget):
    """The least-cost assignment of n persons to n objects, person i offered objects
    to[first[i]:first[i + 1]] at cost[…] (a whole assignment among them), within n ·
    eps_end of the least, into partner (n,); price (n,) zeros. False (partner then not
    whole) once it has taken `budget` bids without finishing. Bertsekas' forward
    auction, one bid at a time in a queue (so the same answer every run), with
    ε-scaling: ε from a quarter of the dearest offer down by 5 a round to eps_end."""
    n = first.shape[0] - 1
    dearest = 0.0
    for e in range(cost.shape[0]):
        dearest = max(dearest, cost[e])
    owner = np.empty(n, np.int64)
    queue = np.empty(n, np.int64)
    eps = max(dearest / 4.0, eps_end)
    bids = 0
    while True:
        for i in range(n):
            partner[i], owner[i], queue[i] = -1, -1, i
        head, waiting = 0, n
        while waiting > 0:
            i = queue[head]
            head = head + 1 if head + 1 < n else 0
            waiting -= 1
            best = second = -math.inf
            j = -1
            for e in range(first[i], first[i + 1]):
                value = -cost[e] - price[to[e]]
                if value > best:
                    second, best, j = best, value, to[e]
                elif value > second:
                    second = value
            if second == -math.inf:  # offered one object only: bid as if the next were dearest
                second = best - dearest
            price[j] += best - second + eps
            bids += 1
            if bids > budget:
                return False
            outbid = owner[j]
            owner[j], partner[i] = i, j
            if outbid >= 0:
                partner[outbid] = -1
                at = head + waiting
                queue[at - n if at >= n else at] = outbid
                waiting += 1
        if eps <= eps_end:
            return True
        eps = max(eps / 5.0, eps_end)
