"""Numba kernels of one simulation step. They take only arrays and scalars.

`tests/naive.py` holds the all-pairs numpy reference these are tested against.

Results are bit-for-bit those of the plain loop "for each bird, for each candidate of its
3x3 block in grid order, if within r: add": every sum runs over the same neighbours in the
same order. That order matters more than it seems: the flock is chaotic, so a change of
one ulp anywhere grows into a different (equally valid) flock within a few hundred steps,
and the tuned murmuration targets are pinned to the trajectory the scene produces.

Where the time goes (3,600 settled birds, ~100 candidates and ~39 neighbours per bird):
testing a candidate is cheap and vectorises (no reduction); adding up the neighbours
cannot (reordering the sums would change round-off), and a data-dependent branch per
candidate mispredicts a third of the time. So each bird runs tight loops in turn:
distances (vectorised), a branch-free compaction of the neighbours' indices, the ordered
sums over the neighbours alone, and the square roots for the few that push.
"""

import math

import numpy as np
from numba import uint64

from .jit import inline, parallel, prange, serial

FALLOFF_POWER = {"unit": 0, "inverse": 1, "inverse_square": 2}

# Sorted birds per parallel work item. Small enough to balance two threads on a few
# thousand birds, large enough that each item's scratch allocation is noise. Results do not
# depend on it: every bird is computed alone.
CHUNK = 256

# The birds in grid order are one (n, 6) array, a row per bird: everything the neighbour
# search reads about a candidate sits in one cache line.
X, Y, VX, VY, UX, UY = range(6)

# Columns of the per-bird sums `neighbourhood` returns, (n, N_SUMS) float64 (the counts are
# small integers, exact in a float64): one row per bird, read back in one go.
COUNT, CANDIDATES, SEP_X, SEP_Y, VSUM_X, VSUM_Y, OFF_X, OFF_Y, USUM_X, USUM_Y, NEAREST = range(11)
N_SUMS = 11


@serial
def block_spans(c, nx, ny, wrap, cell_start, spans):
    """Sorted-slot ranges [spans[k, 0], spans[k, 1]) of the 3x3 block around cell c, in the
    order the block is visited (rows bottom to top, cells left to right). Returns how many.

    The three cells of a row are adjacent in memory, so a row is one range; on a torus a
    row that crosses the seam is two (up to 6 in all). On a torus narrower than three cells
    every cell of a row is visited once, starting at the bird's own column.
    """
    cx = c % nx
    cy = c // nx
    dx_lo, dx_hi = (-1, 1) if (nx >= 3 or not wrap) else (0, nx - 1)
    dy_lo, dy_hi = (-1, 1) if (ny >= 3 or not wrap) else (0, ny - 1)
    k = 0
    for oy in range(dy_lo, dy_hi + 1):
        gy = cy + oy
        if wrap:
            gy %= ny
        elif gy < 0 or gy >= ny:
            continue
        row = gy * nx
        lo = cx + dx_lo
        hi = cx + dx_hi
        if not wrap:
            lo = max(lo, 0)
            hi = min(hi, nx - 1)
        elif lo < 0:  # the part of the row beyond the left seam comes first
            spans[k, 0] = cell_start[row + lo + nx]
            spans[k, 1] = cell_start[row + nx]
            k += 1
            lo = 0
        elif hi >= nx:
            spans[k, 0] = cell_start[row + lo]
            spans[k, 1] = cell_start[row + nx]
            k += 1
            lo = 0
            hi -= nx
        spans[k, 0] = cell_start[row + lo]
        spans[k, 1] = cell_start[row + hi + 1]
        k += 1
    return k


@serial
def gather_block(birds, spans, n_spans, first, block):
    """Copy the candidates of one cell's block from `birds` (n, 6) into `block` (6, ≥ total),
    transposed, in visiting order: every bird of the cell then scans one contiguous buffer
    per coordinate instead of up to six ranges. Returns (total, where slot `first` landed)."""
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
            for col in range(6):
                block[col, base + j] = birds[j, col]
        total += b - a
    return total, at


@serial
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


@inline
def bird_sums(xi, yi, me, total, block, dist2, found, pushers, wrap, width, height, r2, s2,
              sep_power):
    """Sums over the neighbours of the bird at (xi, yi) among the `total` candidates in
    `block` (`me`: its own index there). dist2 (float64), found and pushers (uint64) are
    scratch of length ≥ total. Call it with a constant `wrap`: the torus case costs
    selects in every loop.

    Returns (count, sep_x, sep_y, vsum_x, vsum_y, offsum_x, offsum_y, usum_x, usum_y,
    nearest) as documented in `neighbourhood`.
    """
    bx = block[X]
    by = block[Y]
    n = uint64(total)
    for k in range(n):
        dx, dy = _offset(bx, by, k, xi, yi, wrap, width, height)
        dist2[k] = dx * dx + dy * dy
    # Branch-free compaction: always write, advance only for a neighbour.
    m = uint64(0)
    me_u = uint64(me)
    for k in range(n):
        found[m] = k
        m += uint64((dist2[k] < r2) & (k != me_u))

    bvx = block[VX]
    bvy = block[VY]
    bux = block[UX]
    buy = block[UY]
    vx = vy = ox = oy = ux = uy = 0.0
    best = np.inf
    pushing = uint64(0)
    for q in range(m):
        k = found[q]
        dx, dy = _offset(bx, by, k, xi, yi, wrap, width, height)
        vx += bvx[k]
        vy += bvy[k]
        ox += dx
        oy += dy
        ux += bux[k]
        uy += buy[k]
        d2 = dist2[k]
        best = min(best, d2)
        # The few birds that push, compacted likewise. (In place in `found` would save a
        # buffer but costs 15%: the CPU cannot tell the store from the next loads.)
        pushers[pushing] = k
        pushing += uint64((d2 < s2) & (d2 > 0.0))
    sx = sy = 0.0
    for q in range(pushing):
        k = pushers[q]
        dx, dy = _offset(bx, by, k, xi, yi, wrap, width, height)
        d2 = dist2[k]
        d = math.sqrt(d2)
        if sep_power == 0:
            w = 1.0 / d
        elif sep_power == 1:
            w = 1.0 / d2
        else:
            w = 1.0 / (d2 * d)
        sx -= dx * w
        sy -= dy * w
    return np.int64(m), sx, sy, vx, vy, ox, oy, ux, uy, math.sqrt(best)


@parallel
def neighbourhood(birds, cell_start, nx, ny, wrap, width, height, radius, sep_radius,
                  sep_power, sums):
    """Per-bird sums over the metric neighbours found in the 3x3 block of cells.

    birds: (n, 6) float64 in grid (sorted) order, columns X, Y, VX, VY, UX, UY (u: unit
    heading); cell_start (nx·ny + 1,) from `counting_sort`. Fills sums (n, N_SUMS), per
    sorted slot:
      COUNT                 neighbours within `radius`
      CANDIDATES            other birds tested (the 3x3 block)
      SEP_X, SEP_Y          Σ (p_i − p_j)/d · d^−sep_power over d < sep_radius, d > 0
      VSUM_*, OFF_*, USUM_* Σ v_j, Σ (p_j − p_i) (torus-aware), Σ u_j
      NEAREST               nearest-neighbour distance (inf when none within radius)
    """
    n = birds.shape[0]
    r2 = radius * radius
    s2 = sep_radius * sep_radius
    for chunk in prange((n + CHUNK - 1) // CHUNK):
        lo = chunk * CHUNK
        hi = min(n, lo + CHUNK)
        spans = np.empty((6, 2), np.int64)
        cap = 0
        block = np.empty((6, 0))
        dist2 = np.empty(0)
        found = np.empty(0, np.uint64)
        pushers = np.empty(0, np.uint64)
        # The cell holding slot lo; then every cell overlapping [lo, hi), in order.
        c = np.searchsorted(cell_start, lo, side="right") - 1
        slot = lo
        while slot < hi:
            first = cell_start[c]
            end = min(cell_start[c + 1], hi)
            if end > slot:
                n_spans = block_spans(c, nx, ny, wrap, cell_start, spans)
                need = 0
                for k in range(n_spans):
                    need += spans[k, 1] - spans[k, 0]
                if need > cap:
                    cap = 2 * need
                    block = np.empty((6, cap))
                    dist2 = np.empty(cap)
                    found = np.empty(cap, np.uint64)
                    pushers = np.empty(cap, np.uint64)
                total, at = gather_block(birds, spans, n_spans, first, block)
                for i in range(slot, end):
                    me = at + i - first
                    if wrap:
                        out = bird_sums(birds[i, X], birds[i, Y], me, total, block, dist2,
                                        found, pushers, True, width, height, r2, s2, sep_power)
                    else:
                        out = bird_sums(birds[i, X], birds[i, Y], me, total, block, dist2,
                                        found, pushers, False, width, height, r2, s2, sep_power)
                    (sums[i, COUNT], sums[i, SEP_X], sums[i, SEP_Y], sums[i, VSUM_X],
                     sums[i, VSUM_Y], sums[i, OFF_X], sums[i, OFF_Y], sums[i, USUM_X],
                     sums[i, USUM_Y], sums[i, NEAREST]) = out
                    sums[i, CANDIDATES] = total - 1
                slot = end
            c += 1


def split_sums(sums: np.ndarray) -> dict[str, np.ndarray]:
    """`neighbourhood`'s columns by name: count, cand (int64), sep, vsum, offsum, usum
    (n, 2), nn (n,)."""
    return dict(count=sums[:, COUNT].astype(np.int64),
                cand=sums[:, CANDIDATES].astype(np.int64),
                sep=sums[:, SEP_X:SEP_Y + 1].copy(), vsum=sums[:, VSUM_X:VSUM_Y + 1].copy(),
                offsum=sums[:, OFF_X:OFF_Y + 1].copy(),
                usum=sums[:, USUM_X:USUM_Y + 1].copy(), nn=sums[:, NEAREST].copy())


@parallel
def sort_birds(pos, vel, order, birds):
    """Fill `birds` (n, 6) with the birds in grid order, rows X, Y, VX, VY, UX, UY: sorted
    slot k is bird order[k]; (UX, UY) its unit heading (zero at rest)."""
    for k in prange(pos.shape[0]):
        b = order[k]
        birds[k, X] = pos[b, 0]
        birds[k, Y] = pos[b, 1]
        birds[k, VX] = vel[b, 0]
        birds[k, VY] = vel[b, 1]
        birds[k, UX], birds[k, UY] = heading(vel[b, 0], vel[b, 1])


@serial
def _clamp(x, y, limit):
    length = math.sqrt(x * x + y * y)
    if length > limit:
        s = limit / length
        return x * s, y * s
    return x, y


@serial
def steer_bird(k, sep_x, sep_y, vsum_x, vsum_y, off_x, off_y, vx, vy, w_sep, w_ali, w_coh,
               align_difference, max_force):
    """One bird's flocking acceleration from its `k` neighbours' sums (see `steer`)."""
    if k == 0:
        return 0.0, 0.0
    ax, ay = _clamp(w_sep * sep_x, w_sep * sep_y, max_force)
    mvx = vsum_x / k
    mvy = vsum_y / k
    if align_difference:
        mvx -= vx
        mvy -= vy
    bx, by = _clamp(w_ali * mvx, w_ali * mvy, max_force)
    cx, cy = _clamp(w_coh * off_x / k, w_coh * off_y / k, max_force)
    return ax + bx + cx, ay + by + cy


@parallel
def steer(count, sep, vsum, offsum, vel, w_sep, w_ali, w_coh, align_difference, max_force):
    """Flocking acceleration a = w_s·sep + w_a·ali + w_c·coh, each weighted rule clamped
    to max_force (inf: no clamp). Birds without neighbours get zero. Shapes (n, 2)."""
    n = vel.shape[0]
    acc = np.zeros((n, 2))
    for i in prange(n):
        acc[i, 0], acc[i, 1] = steer_bird(
            count[i], sep[i, 0], sep[i, 1], vsum[i, 0], vsum[i, 1], offsum[i, 0],
            offsum[i, 1], vel[i, 0], vel[i, 1], w_sep, w_ali, w_coh, align_difference,
            max_force)
    return acc


@serial
def integrate_bird(x, y, vx, vy, ax, ay, turn, dt, min_speed, max_speed, wrap, width,
                   height):
    """One bird's step (see `integrate`); returns the new (x, y, vx, vy)."""
    vx = vx + ax * dt
    vy = vy + ay * dt
    speed = math.sqrt(vx * vx + vy * vy)
    if speed == 0.0:
        vx = min_speed
        vy = 0.0
    elif speed > max_speed:
        vx *= max_speed / speed
        vy *= max_speed / speed
    elif speed < min_speed:
        vx *= min_speed / speed
        vy *= min_speed / speed
    if turn != 0.0:
        c = math.cos(turn)
        s = math.sin(turn)
        vx, vy = c * vx - s * vy, s * vx + c * vy
    x = x + vx * dt
    y = y + vy * dt
    if wrap:
        x -= width * math.floor(x / width)
        y -= height * math.floor(y / height)
        if x >= width:
            x = 0.0
        if y >= height:
            y = 0.0
    return x, y, vx, vy


@parallel
def integrate(pos, vel, acc, turn, dt, min_speed, max_speed, wrap, width, height):
    """Semi-implicit Euler: v' = clamp_speed(v + a·dt) turned by `turn` radians,
    p' = p + v'·dt (wrapped onto the torus when `wrap`). Returns new (pos, vel), (n, 2).

    A bird with zero speed and min_speed > 0 takes heading +x: it has no direction of its
    own, and a fixed choice keeps the step deterministic and free of NaN.
    """
    n = pos.shape[0]
    new_pos = np.empty_like(pos)
    new_vel = np.empty_like(vel)
    for i in prange(n):
        new_pos[i, 0], new_pos[i, 1], new_vel[i, 0], new_vel[i, 1] = integrate_bird(
            pos[i, 0], pos[i, 1], vel[i, 0], vel[i, 1], acc[i, 0], acc[i, 1], turn[i], dt,
            min_speed, max_speed, wrap, width, height)
    return new_pos, new_vel


@serial
def heading(vx, vy):
    """v/|v|, or zero for a bird at rest."""
    speed = math.sqrt(vx * vx + vy * vy)
    if speed > 0.0:
        return vx / speed, vy / speed
    return 0.0, 0.0
