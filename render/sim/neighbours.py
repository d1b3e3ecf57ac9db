"""The neighbour search: per bird, sums over the metric neighbours found in the 3x3
block of grid cells around it. Numba kernels; they take only arrays and scalars.

`tests/naive.py` holds the all-pairs numpy reference these are tested against.

Each bird's sums run over its candidates in grid order, four or eight at a time: the
candidate loops are compiled with reassociation (`jit.vectorised`), so the compiler keeps
partial sums in vector lanes and adds the lanes up at the end. That order is fixed by the
bird's candidate list alone, so any thread count gives the same bits; it differs from a
plain left-to-right sum by round-off (the all-pairs reference agrees to ~1e-14). The flock
is chaotic, so such a change of round-off grows into a different (equally valid) flock
within a few hundred steps: the plate's tuned targets are measured on the
trajectories this order produces.

Where the time goes (3,600 settled birds, ~109 candidates and ~41 neighbours per bird):
per cell its 3x3 block is copied into one buffer per coordinate, padded with far-away
dummies to a whole number of vector steps; per bird one vectorised pass over the block
tests every candidate and adds up the neighbours (masked, no branch, no scalar remainder:
its branch on each leftover candidate was mispredicted about half the time); then the
birds close enough to push, flagged in bit words by a second vectorised pass over the
squared distances, and the square roots for those alone.
"""

import math
from types import MappingProxyType

import numpy as np
from numba import uint64

from .grid import counting_sort
from .jit import inline, parallel, prange, serial, trailing_zeros, vectorised

FALLOFF_POWER = MappingProxyType({"unit": 0, "inverse": 1, "inverse_square": 2})

# Sorted birds per parallel work item. Small enough to balance two threads on a few
# thousand birds, large enough that each item's scratch allocation is noise. Results do not
# depend on it: every bird is computed alone.
CHUNK = 256

# A cell's block is padded to a multiple of this many candidates (two vector steps of
# four): the candidate loop then never reaches its scalar remainder.
PAD = 8

# The birds in grid order are one (n, 4) array, a row per bird: everything the neighbour
# search reads about a candidate sits in one cache line.
X, Y, VX, VY = range(4)
N_COLUMNS = 4

# Columns of the per-bird sums `neighbourhood` returns, (n, N_SUMS) float64 (the counts are
# small integers, exact in a float64): one row per bird, read back in one go.
COUNT, CANDIDATES, SEP_X, SEP_Y, VSUM_X, VSUM_Y, OFF_X, OFF_Y, NEAREST = range(9)
N_SUMS = 9


@serial
def _neighbour_index(c, d, count, wrap):
    """Index of the cell d (−1, 0, 1) steps from cell index c along an axis of `count`
    cells, or −1 when there is none: beyond an open edge, or on a torus narrower than three
    cells a cell already visited (there the cells visited are c, then c + 1 if count is 2)."""
    if not wrap:
        g = c + d
        return g if 0 <= g < count else -1
    if count >= 3 or d == 0 or (d == 1 and count == 2):
        return (c + d) % count
    return -1


@serial
def block_cells(c, nx, ny, wrap, cell_start, spans):
    """Sorted-slot ranges [spans[k, 0], spans[k, 1]) of the 3x3 block of cells around cell
    c, k = 3·(dy + 1) + (dx + 1) (rows bottom to top, cells left to right); an absent cell
    is an empty range."""
    cx = c % nx
    cy = c // nx
    for dy in range(-1, 2):
        gy = _neighbour_index(cy, dy, ny, wrap)
        for dx in range(-1, 2):
            gx = _neighbour_index(cx, dx, nx, wrap)
            k = 3 * (dy + 1) + dx + 1
            if gx < 0 or gy < 0:
                spans[k, 0] = spans[k, 1] = 0
            else:
                spans[k, 0] = cell_start[gy * nx + gx]
                spans[k, 1] = cell_start[gy * nx + gx + 1]


@serial
def gather_block(birds, spans, n_spans, first, block):
    """Copy the candidates of one cell's block from `birds` (n, 4) into `block` (4, ≥ total),
    transposed, in visiting order: every bird of the cell then scans one contiguous buffer
    per coordinate instead of nine ranges. Returns (total, where slot `first` landed)."""
    total = 0
    at = -1
    for k in range(n_spans):
        a = spans[k, 0]
        b = spans[k, 1]
        if a <= first < b:
            at = total + first - a
        # Unsigned indices: numba then skips its negative-index wraparound, which would
        # otherwise turn every contiguous load into a gather. (base + j = total + j − a,
        # modulo 2⁶⁴.)
        base = uint64(total) - uint64(a)
        for j in range(uint64(a), uint64(b)):
            for col in range(N_COLUMNS):
                block[col, base + j] = birds[j, col]
        total += b - a
    return total, at


@inline
def _wrapped(d, half, extent):
    """The shortest offset on a torus of this extent."""
    if d > half:
        return d - extent
    if d < -half:
        return d + extent
    return d


@inline
def _offset(bx, by, k, xi, yi, wrap, width, height):
    """(p_k − p_i), the short way round on a torus."""
    dx = bx[k] - xi
    dy = by[k] - yi
    if wrap:
        return _wrapped(dx, 0.5 * width, width), _wrapped(dy, 0.5 * height, height)
    return dx, dy


@vectorised
def candidate_sums_open(xi, yi, total, block, dist2, width, height, r2):
    """`candidate_sums` in an open world (or with walls)."""
    return candidate_sums(xi, yi, total, block, dist2, False, width, height, r2)


@vectorised
def candidate_sums_torus(xi, yi, total, block, dist2, width, height, r2):
    """`candidate_sums` on a torus."""
    return candidate_sums(xi, yi, total, block, dist2, True, width, height, r2)


@inline
def candidate_sums(xi, yi, total, block, dist2, wrap, width, height, r2):
    """Sums over the neighbours (within sqrt(r2)) of the bird at (xi, yi) among the
    `total` candidates in `block` (4, ≥ total). Fills dist2[:total] with each candidate's
    squared distance. The bird itself must not be among them as it is: `neighbourhood`
    moves it to x = inf for its own pass, as it does the padding. Vectorised: no branch
    per candidate; called through `candidate_sums_open` / `_torus`, compiled for a
    constant `wrap`.

    Returns (count, vsum_x, vsum_y, offsum_x, offsum_y), count a float.
    """
    bx = block[X]
    by = block[Y]
    bvx = block[VX]
    bvy = block[VY]
    count = vx = vy = ox = oy = 0.0
    for k in range(uint64(total)):
        dx, dy = _offset(bx, by, k, xi, yi, wrap, width, height)
        d2 = dx * dx + dy * dy
        dist2[k] = d2
        near = d2 < r2
        count += 1.0 if near else 0.0
        vx += bvx[k] if near else 0.0
        vy += bvy[k] if near else 0.0
        ox += dx if near else 0.0
        oy += dy if near else 0.0
    return count, vx, vy, ox, oy


@serial
def close_words(dist2, total, s2, words):
    """Bit j of words[w] set when candidate 64·w + j has dist2 < s2, for the `total`
    candidates: the birds close enough to push, found without a branch per candidate (an
    OR over each word vectorises). Reads whole words: dist2 must hold inf (or anything
    ≥ s2) from `total` up to the next multiple of 64. words: uint64, ≥ ceil(total / 64)."""
    for w in range((total + 63) // 64):
        base = 64 * w
        word = uint64(0)
        for j in range(64):
            word |= uint64(dist2[base + j] < s2) << uint64(j)
        words[w] = word


@serial
def separation(xi, yi, block, dist2, words, total, wrap, width, height, sep_power):
    """Separation of the bird at (xi, yi) from the candidates flagged in `words` (see
    `close_words`), in block order; coincident birds (d = 0) push nothing. Returns (sep_x,
    sep_y, smallest d² among them, inf when none)."""
    bx = block[X]
    by = block[Y]
    best = np.inf
    sx = sy = 0.0
    for w in range((total + 63) // 64):
        word = words[w]
        while word != 0:
            k = 64 * w + trailing_zeros(word)
            word &= word - uint64(1)
            d2 = dist2[k]
            best = min(best, d2)
            if d2 > 0.0:
                dx, dy = _offset(bx, by, k, xi, yi, wrap, width, height)
                d = math.sqrt(d2)
                if sep_power == 0:
                    w_push = 1.0 / d
                elif sep_power == 1:
                    w_push = 1.0 / d2
                else:
                    w_push = 1.0 / (d2 * d)
                sx -= dx * w_push
                sy -= dy * w_push
    return sx, sy, best


@vectorised
def smallest(values, total):
    """min(values[:total]) (inf when total is 0)."""
    best = np.inf
    for k in range(uint64(total)):
        v = values[k]
        best = v if v < best else best
    return best


@parallel
def neighbourhood(birds, cell_start, nx, ny, wrap, width, height, radius, sep_radius,
                  sep_power, sums):
    """Per-bird sums over the metric neighbours found in the 3x3 block of cells.

    birds: (n, 4) float64 in grid (sorted) order, columns X, Y, VX, VY; cell_start
    (nx·ny + 1,) from `counting_sort`. Fills sums (n, N_SUMS), per sorted slot:
      COUNT                 neighbours within `radius`
      CANDIDATES            other birds tested (the 3x3 block)
      SEP_X, SEP_Y          Σ (p_i − p_j)/d · d^−sep_power over d < sep_radius, d > 0
      VSUM_*, OFF_*         Σ v_j, Σ (p_j − p_i) (torus-aware)
      NEAREST               nearest-neighbour distance (inf when none within radius)
    """
    n = birds.shape[0]
    r2 = radius * radius
    s2 = min(sep_radius * sep_radius, r2)
    for chunk in prange((n + CHUNK - 1) // CHUNK):
        lo = chunk * CHUNK
        hi = min(n, lo + CHUNK)
        spans = np.empty((9, 2), np.int64)
        cap = 0
        block = np.empty((N_COLUMNS, 0))
        dist2 = np.empty(0)
        words = np.empty(0, np.uint64)
        # The cell holding slot lo; then every cell overlapping [lo, hi), in order.
        c = np.searchsorted(cell_start, lo, side="right") - 1
        slot = lo
        while slot < hi:
            first = cell_start[c]
            end = min(cell_start[c + 1], hi)
            if end > slot:
                block_cells(c, nx, ny, wrap, cell_start, spans)
                need = 0
                for k in range(9):
                    need += spans[k, 1] - spans[k, 0]
                if (need + PAD + 63) // 64 * 64 > cap:
                    cap = (2 * need + PAD + 63) // 64 * 64
                    block = np.empty((N_COLUMNS, cap))
                    dist2 = np.empty(cap)
                    words = np.empty(cap // 64, np.uint64)
                total, at = gather_block(birds, spans, 9, first, block)
                # Dummies at x = y = inf: d² = inf, never a neighbour; no NaN, even on a
                # torus (inf − width = inf).
                padded = (total + PAD - 1) // PAD * PAD
                for k in range(total, padded):
                    block[X, k] = block[Y, k] = np.inf
                    block[VX, k] = block[VY, k] = 0.0
                for k in range(padded, (padded + 63) // 64 * 64):
                    dist2[k] = np.inf
                for i in range(slot, end):
                    me = at + i - first
                    xi = birds[i, X]
                    yi = birds[i, Y]
                    block[X, me] = np.inf  # not its own neighbour: d² = inf
                    if wrap:
                        out = candidate_sums_torus(xi, yi, padded, block, dist2, width,
                                                   height, r2)
                    else:
                        out = candidate_sums_open(xi, yi, padded, block, dist2, width,
                                                  height, r2)
                    block[X, me] = xi
                    (sums[i, COUNT], sums[i, VSUM_X], sums[i, VSUM_Y], sums[i, OFF_X],
                     sums[i, OFF_Y]) = out
                    close_words(dist2, padded, s2, words)
                    sx, sy, best = separation(xi, yi, block, dist2, words, padded, wrap, width,
                                              height, sep_power)
                    if best == np.inf:  # no bird close enough to push: the nearest is farther
                        best = smallest(dist2, total)
                    sums[i, SEP_X] = sx
                    sums[i, SEP_Y] = sy
                    sums[i, NEAREST] = math.sqrt(best) if best < r2 else np.inf
                    sums[i, CANDIDATES] = total - 1
                slot = end
            c += 1


def neighbour_sums(pos: np.ndarray, vel: np.ndarray, grid, world,
                   rules) -> dict[str, np.ndarray]:
    """`neighbourhood`'s sums for the birds pos, vel (n, 2) on the grid `grid` (a
    grid.GridShape), world (motion.World) and flocking rules (forces.Flocking), by bird
    identity, by name (see `split_sums`)."""
    order, cell_start, _ = counting_sort(pos, grid.x0, grid.y0, grid.cw, grid.ch, grid.nx,
                                         grid.ny)
    birds = np.empty((len(pos), N_COLUMNS))
    sums = np.empty((len(pos), N_SUMS))
    sort_birds(pos, vel, order, birds)
    neighbourhood(birds, cell_start, grid.nx, grid.ny, world.wrap, world.width,
                  world.height, rules.radius, rules.sep_radius, rules.sep_power, sums)
    mine = np.empty_like(sums)
    mine[order] = sums
    return split_sums(mine)


def split_sums(sums: np.ndarray) -> dict[str, np.ndarray]:
    """`neighbourhood`'s columns by name: count, cand (int64), sep, vsum, offsum (n, 2),
    nn (n,)."""
    return dict(count=sums[:, COUNT].astype(np.int64),
                cand=sums[:, CANDIDATES].astype(np.int64),
                sep=sums[:, SEP_X:SEP_Y + 1].copy(), vsum=sums[:, VSUM_X:VSUM_Y + 1].copy(),
                offsum=sums[:, OFF_X:OFF_Y + 1].copy(), nn=sums[:, NEAREST].copy())


@parallel
def sort_birds(pos, vel, order, birds):
    """Fill `birds` (n, 4) with the birds in grid order, columns X, Y, VX, VY: sorted
    slot k is bird order[k]."""
    for k in prange(pos.shape[0]):
        b = order[k]
        birds[k, X] = pos[b, 0]
        birds[k, Y] = pos[b, 1]
        birds[k, VX] = vel[b, 0]
        birds[k, VY] = vel[b, 1]
