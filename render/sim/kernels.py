"""Numba kernels of one simulation step. They take only arrays and scalars.

`tests/naive.py` holds the all-pairs numpy reference these are tested against.
"""

import math

import numpy as np

from .jit import parallel, prange, serial

FALLOFF_POWER = {"unit": 0, "inverse": 1, "inverse_square": 2}


@parallel
def neighbourhood(pos, vel, unit, cell_x, cell_y, cell_start, nx, ny, wrap, width, height,
                  radius, sep_radius, sep_power):
    """Per-bird sums over the metric neighbours found in the 3x3 block of cells.

    Arrays are in grid (sorted) order: pos, vel, unit (unit headings) (n, 2) float64.
    Returns, per sorted slot:
      count (n,) int64            neighbours within `radius`
      cand (n,) int64             other birds tested (the 3x3 block)
      sep (n, 2)                  Σ (p_i − p_j)/d · d^−sep_power over d < sep_radius, d > 0
      vsum, offsum, usum (n, 2)   Σ v_j, Σ (p_j − p_i) (torus-aware), Σ u_j
      nn (n,)                     nearest-neighbour distance (inf when none within radius)
    """
    n = pos.shape[0]
    count = np.zeros(n, np.int64)
    cand = np.zeros(n, np.int64)
    sep = np.zeros((n, 2))
    vsum = np.zeros((n, 2))
    offsum = np.zeros((n, 2))
    usum = np.zeros((n, 2))
    nn = np.full(n, np.inf)
    r2 = radius * radius
    s2 = sep_radius * sep_radius
    half_w = 0.5 * width
    half_h = 0.5 * height
    # On a torus narrower than three cells, offsets −1 and +1 reach the same cell.
    dx_lo, dx_hi = (-1, 1) if (nx >= 3 or not wrap) else (0, nx - 1)
    dy_lo, dy_hi = (-1, 1) if (ny >= 3 or not wrap) else (0, ny - 1)
    for i in prange(n):
        xi = pos[i, 0]
        yi = pos[i, 1]
        c_n = 0
        c_cand = 0
        sx = sy = vx = vy = ox = oy = ux = uy = 0.0
        best = np.inf
        for oyc in range(dy_lo, dy_hi + 1):
            gy = cell_y[i] + oyc
            if wrap:
                gy = gy % ny
            elif gy < 0 or gy >= ny:
                continue
            for oxc in range(dx_lo, dx_hi + 1):
                gx = cell_x[i] + oxc
                if wrap:
                    gx = gx % nx
                elif gx < 0 or gx >= nx:
                    continue
                c = gy * nx + gx
                for j in range(cell_start[c], cell_start[c + 1]):
                    if j == i:
                        continue
                    c_cand += 1
                    dx = pos[j, 0] - xi
                    dy = pos[j, 1] - yi
                    if wrap:
                        if dx > half_w:
                            dx -= width
                        elif dx < -half_w:
                            dx += width
                        if dy > half_h:
                            dy -= height
                        elif dy < -half_h:
                            dy += height
                    d2 = dx * dx + dy * dy
                    if d2 >= r2:
                        continue
                    c_n += 1
                    vx += vel[j, 0]
                    vy += vel[j, 1]
                    ox += dx
                    oy += dy
                    ux += unit[j, 0]
                    uy += unit[j, 1]
                    if d2 < best:
                        best = d2
                    if d2 < s2 and d2 > 0.0:
                        d = math.sqrt(d2)
                        if sep_power == 0:
                            w = 1.0 / d
                        elif sep_power == 1:
                            w = 1.0 / d2
                        else:
                            w = 1.0 / (d2 * d)
                        sx -= dx * w
                        sy -= dy * w
        count[i] = c_n
        cand[i] = c_cand
        sep[i, 0] = sx
        sep[i, 1] = sy
        vsum[i, 0] = vx
        vsum[i, 1] = vy
        offsum[i, 0] = ox
        offsum[i, 1] = oy
        usum[i, 0] = ux
        usum[i, 1] = uy
        nn[i] = math.sqrt(best)
    return count, cand, sep, vsum, offsum, usum, nn


@serial
def _clamp(x, y, limit):
    length = math.sqrt(x * x + y * y)
    if length > limit:
        s = limit / length
        return x * s, y * s
    return x, y


@parallel
def steer(count, sep, vsum, offsum, vel, w_sep, w_ali, w_coh, align_difference, max_force):
    """Flocking acceleration a = w_s·sep + w_a·ali + w_c·coh, each weighted rule clamped
    to max_force (inf: no clamp). Birds without neighbours get zero. Shapes (n, 2)."""
    n = vel.shape[0]
    acc = np.zeros((n, 2))
    for i in prange(n):
        k = count[i]
        if k == 0:
            continue
        ax, ay = _clamp(w_sep * sep[i, 0], w_sep * sep[i, 1], max_force)
        mvx = vsum[i, 0] / k
        mvy = vsum[i, 1] / k
        if align_difference:
            mvx -= vel[i, 0]
            mvy -= vel[i, 1]
        bx, by = _clamp(w_ali * mvx, w_ali * mvy, max_force)
        cx, cy = _clamp(w_coh * offsum[i, 0] / k, w_coh * offsum[i, 1] / k, max_force)
        acc[i, 0] = ax + bx + cx
        acc[i, 1] = ay + by + cy
    return acc


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
        vx = vel[i, 0] + acc[i, 0] * dt
        vy = vel[i, 1] + acc[i, 1] * dt
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
        if turn[i] != 0.0:
            c = math.cos(turn[i])
            s = math.sin(turn[i])
            vx, vy = c * vx - s * vy, s * vx + c * vy
        x = pos[i, 0] + vx * dt
        y = pos[i, 1] + vy * dt
        if wrap:
            x -= width * math.floor(x / width)
            y -= height * math.floor(y / height)
            if x >= width:
                x = 0.0
            if y >= height:
                y = 0.0
        new_pos[i, 0] = x
        new_pos[i, 1] = y
        new_vel[i, 0] = vx
        new_vel[i, 1] = vy
    return new_pos, new_vel
