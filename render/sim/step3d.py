"""One 3D step: neighbours (topological from render.sim.nearest, or metric), the rules
over their sums, the roost, the noise and banked flight, per bird.

Each bird reads the previous state only and writes only its own rows, so every thread
count gives the same bits. `tests/naive3d.py` holds the all-pairs numpy reference.

A topological step is one parallel loop over the birds in grid order: each bird's
neighbours (from its candidate list where the list can tell, else searched), its sums over
them, the rules and its flight, one after the other, so the neighbours' positions and
forward vectors (gathered into grid order first) are still in cache when the sums read
them, and no neighbour list goes through memory. The grid is the one the lists were drawn
from: between two drawings the birds keep their slots (they move little against each
other meanwhile, so the order stays local), and no step sorts them anew.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from . import flight as _flight
from . import nearest, noise
from .forces import flocking3d, roost
from .forces.landing import LANDED, LANDING
from .jit import inline, parallel, prange, serial, sized
from .nearest import (CHUNK, GATHERED, LISTED, NEAR, Gathered, blocks, build_grid, cell_side,
                      drift, drift_boxes, list_answers, local_limit, read_list, relist,
                      search, shrink)


class Neighbours3(NamedTuple):
    """How neighbours are found: topological (k nearest visible, optionally within
    max_range, m) or metric (the rules' radius)."""

    topological: bool
    k: int
    max_range: float


class Workspace3(NamedTuple):
    """Arrays carried from step to step for n birds: each bird's next search radius (n,,
    m; topological), the forward vectors (n, 3), the sums (n, N_SUMS3; metric only, else
    (0, N_SUMS3)) and, topological, the candidate lists (nearest.relist) of the step that
    drew them: cand (n, LISTED) int32 and reach (n,) m, rows by that step's grid slots,
    anchor (n, 3) the positions then, and `grid`, one item: that step's nearest.Grid (its
    order as bird indices), which the steps after keep their birds' slots in and search,
    or None before the lists are drawn; `boxes`, one item: each block of that grid's
    cells' box of drifts (nearest.drift_boxes; None before), `lapsed` (n,) bool, by slot:
    whose list could not answer at the last step, `lapses` [how many when the lists
    were drawn, at the last step] and `slot`, one item: each bird's slot in that grid
    ((n,) int64, −1: not in it; None before)."""

    radius: np.ndarray
    fwd: np.ndarray
    sums: np.ndarray
    cand: np.ndarray
    reach: np.ndarray
    anchor: np.ndarray
    grid: list
    boxes: list
    lapsed: np.ndarray
    lapses: list
    slot: list


def workspace3(n: int, topological: bool, radius: float) -> Workspace3:
    lists = n if topological else 0
    return Workspace3(np.full(n, radius), np.empty((n, 3)),
                      np.empty((0 if topological else n, flocking3d.N_SUMS3)),
                      np.full((lists, LISTED), -1, np.int32), np.zeros(lists),
                      np.empty((lists, 3)), [None], [None], np.zeros(lists, bool), [0, 0],
                      [None])


class Step3(NamedTuple):
    """One step's result: the new state (pos, vel (n, 3), bank (n,)) and, per bird, its
    neighbours (n,) int64, the candidates whose distance it computed (n,) int64 and its
    nearest neighbour's distance (n,, m; inf: none)."""

    pos: np.ndarray
    vel: np.ndarray
    bank: np.ndarray
    count: np.ndarray
    tested: np.ndarray
    nearest: np.ndarray


class Finale3(NamedTuple):
    """What the hunt and the landing (render.sim.hunt3d) bring to a step, each array empty
    (length 0) without them: extra (n, 3) m/s² steering added to every bird's; state (n,)
    int8 (forces.landing: a LANDING bird keeps the rules but has no roost steering; a
    LANDED one stays at rest and, topological, is nobody's neighbour); out: written by a
    topological step, idx (n, k) int64 each bird's neighbours (bird indices, nearest
    first, −1 past its count) and kth (n,) the k-th squared distance, m² (inf: short
    of k); roll (n,) each bird's roll rate, 1/s (0: the flight's own; waves.rolling)."""

    extra: np.ndarray
    state: np.ndarray
    idx: np.ndarray
    kth: np.ndarray
    roll: np.ndarray = np.empty(0)


def no_finale(k: int) -> Finale3:
    """The Finale3 of a flock without a hunt or a landing."""
    return Finale3(np.empty((0, 3)), np.empty(0, np.int8), np.empty((0, k), np.int64),
                   np.empty(0), np.empty(0))


@serial
def forward(pos, vel, out):
    """Unit forward vectors of vel (n, 3) into out (+x for a bird at rest); returns the
    mean position and the mean forward vector ((3,) each, in bird order: numpy's
    mean(axis=0) to the bit). Serial: a parallel region costs more to start than this
    pass over memory, and the means' order is fixed."""
    n = vel.shape[0]
    c0 = c1 = c2 = h0 = h1 = h2 = 0.0
    for i in range(n):
        s = math.sqrt(vel[i, 0] ** 2 + vel[i, 1] ** 2 + vel[i, 2] ** 2)
        if s == 0.0:
            out[i, 0], out[i, 1], out[i, 2] = 1.0, 0.0, 0.0
        else:
            out[i, 0], out[i, 1], out[i, 2] = vel[i, 0] / s, vel[i, 1] / s, vel[i, 2] / s
        c0, c1, c2 = c0 + pos[i, 0], c1 + pos[i, 1], c2 + pos[i, 2]
        h0, h1, h2 = h0 + out[i, 0], h1 + out[i, 1], h2 + out[i, 2]
    return np.array([c0, c1, c2]) / n, np.array([h0, h1, h2]) / n


@inline
def _fly(i, q, x, y, z, f0, f1, f2, row, vel, bank, rules, home, fl, noise_sd, seed, step,
         extra, states, roll, new_pos, new_vel, new_bank):
    """Bird i (its noise) at (x, y, z), forward f, with its sums `row`: rules + roost +
    the finale's extra steering + noise, then flight, from row q of vel, bank, extra,
    states, roll (the last three a Finale3's, maybe empty) into row q of new_pos,
    new_vel, new_bank."""
    state = states[q] if states.shape[0] > 0 else 0
    if state == LANDED:
        new_pos[q, 0], new_pos[q, 1], new_pos[q, 2] = x, y, z
        new_vel[q, 0], new_vel[q, 1], new_vel[q, 2] = 0.0, 0.0, 0.0
        new_bank[q] = 0.0
        return
    a0, a1, a2 = flocking3d.accel(rules, row, f0, f1, f2)
    if state != LANDING:
        r0, r1, r2 = roost.accel(home, x, y, z, f0, f1)
        a0, a1, a2 = a0 + r0, a1 + r1, a2 + r2
    if extra.shape[0] > 0:
        a0, a1, a2 = a0 + extra[q, 0], a1 + extra[q, 1], a2 + extra[q, 2]
    if noise_sd > 0.0:
        n0, n1, n2 = noise.normal3(seed, i, step)
        a0, a1, a2 = a0 + noise_sd * n0, a1 + noise_sd * n1, a2 + noise_sd * n2
    (new_pos[q, 0], new_pos[q, 1], new_pos[q, 2], new_vel[q, 0], new_vel[q, 1],
     new_vel[q, 2], new_bank[q]) = _flight.fly(fl, x, y, z, vel[q, 0], vel[q, 1], vel[q, 2],
                                               bank[q], a0, a1, a2,
                                               roll[q] if roll.shape[0] > 0 else 0.0)


@sized("order")
def to_slots(order, pos, fwd, vel, bank, radius, moved, extra, states, roll, s_pos, s_fwd,
             s_vel, s_bank, s_radius, s_moved, s_extra, s_states, s_roll):
    """Rows order[q] of pos, fwd, vel, bank, radius, moved (and extra, states, roll when
    not empty) into row q of the s_ arrays: the birds' state in grid order, gathered in one
    pass so the step reads memory in order (read at random inside the step, the rows cost
    more than the search at 100,000 birds). Parallel, each slot its own row: at 100,000
    birds on two threads 0.8 against 1.5 ms serial."""
    for q in prange(order.shape[0]):
        i = order[q]
        for a in range(3):
            s_pos[q, a] = pos[i, a]
            s_fwd[q, a] = fwd[i, a]
            s_vel[q, a] = vel[i, a]
        s_bank[q] = bank[i]
        s_radius[q] = radius[i]
        s_moved[q] = moved[i]
        if extra.shape[0] > 0:
            s_extra[q, 0], s_extra[q, 1], s_extra[q, 2] = extra[i, 0], extra[i, 1], extra[i, 2]
        if states.shape[0] > 0:
            s_states[q] = states[i]
        if roll.shape[0] > 0:
            s_roll[q] = roll[i]


@sized("slot")
def by_bird(slot, states, s_pos, s_vel, s_bank, s_count, s_tested, s_nearest, s_radius,
            s_idx, s_kth, pos, vel, bank, count, tested, nearest, radius, idx, kth):
    """Row slot[i] of each s_ array (a step's results by slot; s_idx, s_kth maybe empty)
    into row i of its own, for every bird i: each bird gathers its own rows, so the
    writes go in order and each thread stores only into its own stretch of memory (a
    scatter by slot had both threads store into the same cache lines at random: 0.5–0.9
    against 0.2 ms at 20,000 birds). A bird without a slot (−1: landed before the grid
    was drawn) or landed since (states, by slot, maybe empty) is left out: the step did
    not compute it."""
    for i in prange(slot.shape[0]):
        q = slot[i]
        if q < 0 or (states.shape[0] > 0 and states[q] == LANDED):
            continue
        for a in range(3):
            pos[i, a] = s_pos[q, a]
            vel[i, a] = s_vel[q, a]
        bank[i] = s_bank[q]
        count[i] = s_count[q]
        tested[i] = s_tested[q]
        nearest[i] = s_nearest[q]
        radius[i] = s_radius[q]
        if s_idx.shape[0] > 0:
            kth[i] = s_kth[q]
            for j in range(s_idx.shape[1]):
                idx[i, j] = s_idx[q, j]


@parallel
def topological_step(s_radius, start, fx, fy, fz, side, g_order, g_pos, g_fwd, max_d2, k,
                     cand, reach, anchor, boxes, moved, most, motion, keep, relisting, vel,
                     bank, rules, home, fl, noise_sd, seed, step, extra, states, roll, idx,
                     kth2, new_pos, new_vel, new_bank, count, tested_out, nearest, radius,
                     lapsed):
    """Every bird of the grid's step from its k nearest visible birds of the grid, taken
    from its candidate list (nearest.read_list) where the list can tell, else searched
    (nearest.search). The grid (start, folds, side, g_order its bird indices) and the
    lists cand, reach were drawn at an earlier step (or this one: `relisting`, every bird
    lists its candidates first, nearest.relist), and every array is in that grid's order —
    row q is the bird in slot q — at this step's positions g_pos and forward vectors g_fwd;
    since then the flock has moved by `motion` (nearest.drift; keep its `shrink`) and
    each bird has drifted `moved` (the largest: most) besides, from where it was then
    (anchor, by bird): where that bound refuses a list, the drifts around the bird (boxes,
    nearest.drift_boxes; empty: not measured) may still let it answer. In: s_radius (its
    first search radius), vel, bank and a Finale3's extra, states, roll (maybe empty). Out, all
    by slot (`by_bird` puts them in bird order): lapsed, whether the bird's list could
    not answer; the arrays of a Step3 (new_pos … nearest), its next first radius into
    radius (a little beyond its k-th distance; short of k, a growing guess no larger than
    the max range) and, when idx is not empty, its neighbours (bird indices) and k-th
    squared distance into idx, kth2."""
    lists = idx.shape[0] > 0
    n = g_order.shape[0]
    max_r = math.sqrt(max_d2)
    for c in prange((n + CHUNK - 1) // CHUNK):
        best_s = np.empty(k, np.int64)
        best_d2 = np.empty(k)
        got_s = np.empty(GATHERED, np.int64)
        got_d2 = np.empty(GATHERED)
        gathering = Gathered(np.empty(cand.shape[1], np.int64), np.empty(cand.shape[1]),
                             np.empty(GATHERED, np.int64), np.empty(1))
        row = np.empty(flocking3d.N_SUMS3)
        near = np.empty(NEAR, np.int64)
        for q in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
            if states.shape[0] > 0 and states[q] == LANDED:
                continue  # landed since the grid was drawn: its rows are the caller's
            i = g_order[q]
            tested = 0
            if relisting:
                tested = relist(q, s_radius[q], start, fx, fy, fz, side, g_order, g_pos,
                                g_fwd, cand, reach, got_s, got_d2, near, gathering)
            found, more = read_list(q, cand, g_order, g_pos, g_fwd, rules.cos_blind, max_d2,
                                    best_s, best_d2)
            tested += more
            answers = list_answers(keep * reach[q] - moved[q] - most, found, best_d2, max_d2)
            near_grow, clear = 0.0, 0.0
            if not answers and boxes.shape[0] > 0:  # the drifts bounded locally instead
                limit, near_grow, clear = local_limit(q, i, reach[q], g_pos, anchor, motion,
                                                      keep, side, fx, fy, fz, boxes,
                                                      moved[q], most)
                answers = list_answers(limit, found, best_d2, max_d2)
            lapsed[q] = not answers
            if not answers:
                found, more = search(q, s_radius[q], start, fx, fy, fz, side, 3, g_order,
                                     g_pos, g_fwd, rules.cos_blind, max_d2, best_s, best_d2,
                                     near, (anchor[i, 0], anchor[i, 1], anchor[i, 2]),
                                     moved[q] + most, 1.0 / keep, near_grow, clear)
                tested += more
            kth = best_d2[k - 1]
            radius[q] = math.sqrt(kth) * 1.05 if math.isfinite(kth) else \
                min(s_radius[q] * 1.5, 1e6, max_r)
            x, y, z = g_pos[q, 0], g_pos[q, 1], g_pos[q, 2]
            flocking3d.listed_sums(x, y, z, g_pos, g_fwd, best_s, found, rules, row)
            count[q] = found
            tested_out[q] = tested
            nearest[q] = row[flocking3d.NEAREST]
            if lists:
                kth2[q] = kth
                for j in range(k):
                    idx[q, j] = g_order[best_s[j]] if j < found else -1
            _fly(i, q, x, y, z, g_fwd[q, 0], g_fwd[q, 1], g_fwd[q, 2], row, vel,
                 bank, rules, home, fl, noise_sd, seed, step, extra, states, roll, new_pos,
                 new_vel, new_bank)


@parallel
def metric_step(pos, vel, bank, fwd, sums, rules, home, fl, noise_sd, seed, step, extra,
                states, roll, new_pos, new_vel, new_bank, count, nearest):
    """Every bird's step from its sums (n, N_SUMS3; flocking3d.metric_sums) into its rows
    of the arrays of a Step3 (new_pos … nearest, not tested); extra, states, roll: a
    Finale3's."""
    for i in prange(pos.shape[0]):
        count[i] = np.int64(sums[i, flocking3d.COUNT])
        nearest[i] = sums[i, flocking3d.NEAREST]
        _fly(i, i, pos[i, 0], pos[i, 1], pos[i, 2], fwd[i, 0], fwd[i, 1], fwd[i, 2], sums[i],
             vel, bank, rules, home, fl, noise_sd, seed, step, extra, states, roll, new_pos,
             new_vel, new_bank)


def step3(pos, vel, bank, how: Neighbours3, rules: flocking3d.Flocking3, home, fl,
          noise_sd: float, seed: int, step: int, work: Workspace3,
          fin: Finale3 | None = None) -> Step3:
    """One step of the state (pos, vel (n, 3), bank (n,)) whose forward vectors are in
    work.fwd (see `forward`), under the roost `home` of this step (roost.at_step), with
    the hunt's and the landing's `fin` (None: neither)."""
    n = len(pos)
    out = Step3(np.empty((n, 3)), np.empty((n, 3)), np.empty(n), np.empty(n, np.int64),
                np.empty(n, np.int64), np.empty(n))
    fin = fin if fin is not None else no_finale(how.k)
    if how.topological:
        _topological(pos, vel, bank, how, rules, home, fl, noise_sd, seed, step, work, fin,
                     out)
    else:
        grid = build_grid(pos, rules.radius)
        flocking3d.metric_sums(pos, work.fwd, grid.start, grid.order, grid.cell,
                               *grid.folds, grid.side, rules, work.sums, out.tested)
        metric_step(pos, vel, bank, work.fwd, work.sums, rules, home, fl, noise_sd, seed,
                    step, fin.extra, fin.state, fin.roll, out.pos, out.vel, out.bank,
                    out.count, out.nearest)
    return out


def _topological(pos, vel, bank, how, rules, home, fl, noise_sd, seed, step, work, fin,
                 out) -> None:
    """The topological step3 into `out`, over the grid of the birds flying when the
    candidate lists were drawn (all of them, without a landing); a landed bird stays at
    rest with no neighbours. A bird that has landed since keeps its slot, its position
    there put out of every search's reach (infinitely far)."""
    landed = fin.state == LANDED if fin.state.shape[0] > 0 else None
    flying = None
    if landed is not None and landed.any():
        flying = np.flatnonzero(~landed)
    if flying is None or len(flying) > 0:
        _flying(pos, vel, bank, how, rules, home, fl, noise_sd, seed, step, work, fin, out,
                landed, flying)
    if flying is not None:
        out.pos[landed], out.vel[landed], out.bank[landed] = pos[landed], 0.0, 0.0
        out.count[landed], out.tested[landed], out.nearest[landed] = 0, 0, math.inf
        if fin.idx.shape[0] > 0:
            fin.idx[landed], fin.kth[landed] = -1, math.inf


def _flying(pos, vel, bank, how, rules, home, fl, noise_sd, seed, step, work, fin, out,
            landed, flying) -> None:
    """The rows of `out` (and fin.idx, fin.kth) of the birds in the lists' grid flying,
    the grid drawn anew first when `_drift` says; landed: (n,) bool or None, flying: the
    indices of the birds not landed (None: all)."""
    moved, most, motion, relisting = _drift(pos, work, landed, flying, step)
    if relisting:
        work.grid[0] = _grid(pos, work, flying)
        slot = np.full(len(pos), -1, np.int64)
        slot[work.grid[0].order] = np.arange(len(work.grid[0].order))
        work.slot[0] = slot
    grid = work.grid[0]
    order = grid.order
    max_d2 = how.max_range ** 2 if math.isfinite(how.max_range) else math.inf
    m, k = len(order), how.k
    s_in = (np.empty((m, 3)), np.empty((m, 3)), np.empty((m, 3)), np.empty(m), np.empty(m),
            np.empty(m), np.empty((m if fin.extra.shape[0] else 0, 3)),
            np.empty(m if fin.state.shape[0] else 0, np.int8),
            np.empty(m if fin.roll.shape[0] else 0))
    to_slots(order, pos, work.fwd, vel, bank, work.radius, moved, fin.extra, fin.state,
             fin.roll, *s_in)
    s_pos, s_fwd, s_vel, s_bank, s_radius, s_moved, s_extra, s_states, s_roll = s_in
    if landed is not None and not relisting:
        s_pos[s_states == LANDED] = math.inf
    fx, fy, fz = grid.folds
    if relisting:
        work.boxes[0] = np.empty((math.prod(blocks(fx, fy, fz)), 6))
    # While the largest drift is small against the skin, the flock-wide bound answers
    # nearly every list: the boxes would cost more than they save.
    boxes = work.boxes[0]
    if most > LOCAL_DRIFT * nearest.SKIN * grid.side / nearest.SIDE_PER_RADIUS:
        drift_boxes(s_pos, work.anchor, order, motion, grid.start, fx, fy, fz, boxes)
    else:
        boxes = boxes[:0]
    lapsed = work.lapsed[:m]
    # The results by slot, then by bird in one pass: each bird's rows written from the loop
    # would be stores scattered over memory.
    lists = fin.idx.shape[0] > 0
    s_out = (np.empty((m, 3)), np.empty((m, 3)), np.empty(m), np.empty(m, np.int64),
             np.empty(m, np.int64), np.empty(m), np.empty(m),
             np.empty((m if lists else 0, k), np.int64), np.empty(m if lists else 0))
    topological_step(s_radius, grid.start, fx, fy, fz, grid.side, order, s_pos, s_fwd,
                     max_d2, k, work.cand, work.reach, work.anchor, boxes, s_moved, most,
                     motion, shrink(motion), relisting, s_vel, s_bank, rules, home, fl,
                     noise_sd, seed, step, s_extra, s_states, s_roll, s_out[7], s_out[8],
                     *s_out[:7], lapsed)
    by_bird(work.slot[0], s_states, *s_out, *out, work.radius, fin.idx, fin.kth)
    lapses = int(np.count_nonzero(lapsed))
    work.lapses[:] = [lapses if relisting else work.lapses[0], lapses]


def _grid(pos, work: Workspace3, flying) -> nearest.Grid:
    """The grid of the birds flying (flying: their indices, or None: all) at pos, its
    order as bird indices (ascending within a cell like the whole flock's: the tie-break
    by bird index holds), without its positions (each step gathers its own)."""
    if flying is None:
        grid = build_grid(pos, cell_side(work.radius), cells=False)
    else:
        grid = build_grid(np.ascontiguousarray(pos[flying]), cell_side(work.radius[flying]),
                          cells=False)
        grid = grid._replace(order=flying[grid.order])
    return grid._replace(pos=np.empty((0, 3)))


# The lists are drawn anew once any bird has drifted this share of a cell's side, the
# flock's stretch counted in (birds from beyond the blocks around a bird may then reach
# it: see nearest.local_limit), or once more lists cannot answer than when they were drawn
# by this share of the birds.
RELIST_DRIFT = 0.25
RELIST_LAPSED = 1 / 32
# The blocks' drifts are measured once the largest drift passes this share of the skin.
LOCAL_DRIFT = 0.5


def _drift(pos, work: Workspace3, landed, flying, step: int):
    """(each bird's drift since the lists were drawn (n,), the largest, the flock's
    motion since (nearest.drift's (5, 3)), whether the lists and their grid are drawn
    anew this step — then at pos, and the drifts and the motion zero). Anew: at step 0
    (the first step after settling, whether the settled state was settled or read back:
    the lists are not kept, and the candidates counted from then on are the same either
    way); when a bird flying is not in the grid; when the largest drift, with what the
    flock's stretch takes from a cell's side (1 − shrink of it), passes RELIST_DRIFT of
    that side; when the lists that could not answer at the last step outnumber those at
    the drawing by RELIST_LAPSED of the grid's birds."""
    moved = np.zeros(len(pos))
    motion = np.zeros((5, 3))
    grid = work.grid[0]
    relisting = grid is None or step == 0
    if not relisting:
        # Birds only land: the grid holds every bird flying when its birds not landed
        # number as many.
        held = len(grid.order) if landed is None else int((~landed[grid.order]).sum())
        relisting = held != (len(pos) if flying is None else len(flying))
    if not relisting:
        most = drift(pos, work.anchor, ~landed if landed is not None else np.zeros(0, bool),
                     moved, motion)
        lapsed = work.lapses[1] - work.lapses[0]
        stretch = (1.0 - shrink(motion)) * grid.side
        relisting = most + stretch > RELIST_DRIFT * grid.side or \
            lapsed > RELIST_LAPSED * len(grid.order)
    if relisting:
        np.copyto(work.anchor, pos)
        moved[:], motion[:] = 0.0, 0.0
        return moved, 0.0, motion, True
    return moved, most, motion, False
