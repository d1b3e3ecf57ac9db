"""Topological neighbours from the hashed grid against the all-pairs reference, cKDTree and
hand-worked cases."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from naive_neighbours import k_nearest_visible as naive
from render.sim.nearest import folds_for, k_nearest_visible


def flock(n: int, dims: int, seed: int, spread: float = 10.0):
    """A blob of n birds with headings within a few tens of degrees of +x."""
    rng = np.random.default_rng(seed)
    pos = rng.normal(0.0, spread, (n, dims))
    fwd = np.zeros((n, dims))
    fwd[:, 0] = 1.0
    fwd[:, 1:] = rng.normal(0.0, 0.4, (n, dims - 1))
    return pos, fwd / np.linalg.norm(fwd, axis=1, keepdims=True)


def assert_same(found, expected):
    for got, want, what in zip(found, expected, ("indices", "squared distances", "counts")):
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("blind", [0.0, 90.0])
@pytest.mark.parametrize("max_range", [math.inf, 2.5])
def test_neighbours_equal_the_all_pairs_reference(dims, blind, max_range):
    pos, fwd = flock(1500, dims, seed=dims)
    expected = naive(pos, fwd, 7, blind_angle=blind, max_range=max_range)
    found = k_nearest_visible(pos, fwd, 7, radius=1.5, blind_angle=blind, max_range=max_range)
    assert_same(found, expected)
    if math.isfinite(max_range):
        assert (found[2] < 7).any(), "the range should cut some neighbourhoods short"


@pytest.mark.parametrize("side,radius", [(0.05, 0.1), (0.4, 0.4), (3.0, 1.0), (40.0, 30.0),
                                         (1.0, "ragged")])
def test_the_answer_does_not_depend_on_the_cell_side_or_the_first_radius(side, radius):
    pos, fwd = flock(800, 3, seed=11)
    if radius == "ragged":
        radius = np.random.default_rng(0).uniform(0.01, 5.0, len(pos))
    expected = naive(pos, fwd, 7, blind_angle=90.0)
    assert_same(k_nearest_visible(pos, fwd, 7, radius=radius, side=side, blind_angle=90.0),
                expected)


def test_the_answer_does_not_depend_on_the_thread_count():
    pos, fwd = flock(5000, 3, seed=5)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = k_nearest_visible(pos, fwd, 7, radius=2.0, blind_angle=90.0)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = k_nearest_visible(pos, fwd, 7, radius=2.0, blind_angle=90.0)
    finally:
        numba.set_num_threads(before)
    assert_same(many, one)


def test_without_a_blind_cone_the_neighbours_are_ckdtrees():
    from scipy.spatial import cKDTree

    pos, fwd = flock(4000, 3, seed=2)
    d, j = cKDTree(pos).query(pos, k=8)
    found_j, found_d2, _ = k_nearest_visible(pos, fwd, 7, radius=2.0)
    np.testing.assert_array_equal(found_j, j[:, 1:])  # the first is the bird itself
    np.testing.assert_allclose(np.sqrt(found_d2), d[:, 1:], rtol=1e-12)


def test_ties_go_to_the_lower_index():
    # Four birds at distance 1 from bird 0; the lower indices win whatever the layout.
    pos = np.array([[0.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0],
                    [-1.0, 0.0, 0.0], [5.0, 5.0, 5.0]])
    fwd = np.tile([0.0, 0.0, 1.0], (6, 1))
    for side in (0.3, 1.0, 7.0):
        j, d2, count = k_nearest_visible(pos, fwd, 2, radius=side, side=side)
        assert j[0].tolist() == [1, 2] and d2[0].tolist() == [1.0, 1.0] and count[0] == 2


def test_the_blind_cone_hides_birds_just_inside_its_edge():
    # Bird 0 flies along +x; a 90° blind cone is every offset within 45° of −x.
    eps = math.radians(0.01)
    inside, outside = math.radians(45) - eps, math.radians(45) + eps
    pos = np.array([[0.0, 0.0, 0.0],
                    [-math.cos(inside), math.sin(inside), 0.0],     # just inside: hidden
                    [-math.cos(outside), 0.0, math.sin(outside)],   # just outside: seen
                    [-3.0, 0.0, 0.0]])                              # straight behind
    fwd = np.tile([1.0, 0.0, 0.0], (4, 1))
    j, _, count = k_nearest_visible(pos, fwd, 3, radius=1.0, blind_angle=90.0)
    assert j[0].tolist() == [2, -1, -1] and count[0] == 1
    j, _, count = k_nearest_visible(pos, fwd, 3, radius=1.0, blind_angle=0.0)
    assert j[0].tolist() == [1, 2, 3] and count[0] == 3


def test_a_straggler_far_away_costs_no_memory_and_still_finds_its_neighbours():
    pos, fwd = flock(1500, 3, seed=8)
    pos[17] = [10_000.0, -10_000.0, 10_000.0]  # 10 km out: a dense box would need 1e12 cells
    # A bird ahead of the flock with everyone in its blind cone falls back to the scan.
    pos[18] = [200.0, 0.0, 0.0]
    expected = naive(pos, fwd, 7, blind_angle=90.0)
    assert_same(k_nearest_visible(pos, fwd, 7, radius=0.5, blind_angle=90.0), expected)
    assert np.prod(folds_for(pos, 0.5)) <= 4 * len(pos) + 64


def test_fewer_birds_than_k():
    pos, fwd = flock(4, 3, seed=1)
    j, d2, count = k_nearest_visible(pos, fwd, 7, radius=1.0)
    assert count.tolist() == [3, 3, 3, 3]
    assert (j[:, 3:] == -1).all() and np.isinf(d2[:, 3:]).all()


def _listed(pos, fwd, anchor, k=3, blind=0.0):
    """Bird 0's k nearest visible birds of pos from its candidate list drawn at anchor
    (nearest.relist), through nearest.search_listed with the limit the drifts give;
    returns (count, the neighbours' bird indices) or (−1, None): the list cannot tell."""
    from render.sim.nearest import (LISTED, NEAR, build_grid, cos_half_blind, drift,
                                    relist, search_listed)

    n = len(pos)
    cand, reach = np.full((n, LISTED), -1, np.int32), np.zeros(n)
    then = build_grid(anchor, 3.0, cells=False, fwd=fwd)
    q0 = int(np.flatnonzero(then.order == 0)[0])
    relist(q0, 0, 1.0, then.start, *then.folds, then.side, then.order, then.pos, then.fwd,
           cand, reach, np.empty(LISTED, np.int64), np.empty(LISTED), np.empty(NEAR, np.int64))
    moved = np.empty(n)
    most = drift(pos, anchor, np.zeros(0, bool), moved)
    now = build_grid(pos, 3.0, cells=False, fwd=fwd)
    slot_of = np.empty(n, np.int64)
    slot_of[now.order] = np.arange(n)
    best_s, best_d2 = np.empty(k, np.int64), np.empty(k)
    found, _ = search_listed(int(slot_of[0]), 0, reach[0] - moved[0] - most, slot_of, cand,
                             now.order, now.pos, now.fwd, cos_half_blind(blind), math.inf,
                             best_s, best_d2)
    return (found, None) if found < 0 else (found, sorted(now.order[best_s[:found]]))


def test_a_candidate_list_answers_while_the_birds_keep_their_places():
    """Worked by hand: bird 0 at the origin, birds 1–3 at 1, 2 and 3 m along x, bird 4 at
    10 m (beyond the list's reach of 1.35 m … every bird within 1.35 × its first radius of
    1 m: bird 1 alone). The whole flock then moves 5 m along y: nothing closed, so the
    list still answers, and bird 0's nearest is bird 1."""
    pos = np.array([[0.0, 0, 0], [1.0, 0, 0], [2.0, 0, 0], [3.0, 0, 0], [10.0, 0, 0]])
    fwd = np.tile([0.0, 1.0, 0.0], (5, 1))
    found, got = _listed(pos + [0.0, 5.0, 0.0], fwd, pos, k=1)
    assert (found, got) == (1, [1])


def test_a_bird_that_came_from_beyond_the_reach_sends_the_bird_back_to_the_search():
    """Bird 4 flies in from 10 m to 0.5 m of bird 0, nearer than bird 1: bird 0's list
    (bird 1 alone) does not hold it, and the drifts (the mean motion taken out, bird 0's
    1.9 m, bird 4's 7.6 m) put the limit below zero, so the list refuses to answer. With the drifts left out the list answers bird 1 — the
    wrong neighbour the limit exists to catch."""
    from render.sim.nearest import LISTED, NEAR, build_grid, relist, search_listed

    anchor = np.array([[0.0, 0, 0], [1.0, 0, 0], [2.0, 0, 0], [3.0, 0, 0], [10.0, 0, 0]])
    fwd = np.tile([0.0, 1.0, 0.0], (5, 1))
    pos = anchor.copy()
    pos[4] = [0.5, 0.0, 0.0]
    found, _ = _listed(pos, fwd, anchor, k=1)
    assert found == -1
    expected = naive(pos, fwd, 1)[0][0]
    assert list(expected) == [4]
    # The same list read with a limit that ignores the drift answers wrongly.
    cand, reach = np.full((5, LISTED), -1, np.int32), np.zeros(5)
    grid = build_grid(anchor, 3.0, cells=False, fwd=fwd)
    q0 = int(np.flatnonzero(grid.order == 0)[0])
    relist(q0, 0, 1.0, grid.start, *grid.folds, grid.side, grid.order, grid.pos, grid.fwd,
           cand, reach, np.empty(LISTED, np.int64), np.empty(LISTED), np.empty(NEAR, np.int64))
    now = build_grid(pos, 3.0, cells=False, fwd=fwd)
    slot_of = np.empty(5, np.int64)
    slot_of[now.order] = np.arange(5)
    best_s, best_d2 = np.empty(1, np.int64), np.empty(1)
    found, _ = search_listed(int(slot_of[0]), 0, reach[0], slot_of, cand, now.order, now.pos,
                             now.fwd, 1.0, math.inf, best_s, best_d2)
    assert found == 1 and now.order[best_s[0]] == 1


@pytest.mark.parametrize("blind", [0.0, 90.0])
def test_lists_drawn_then_read_after_the_flock_moves_equal_the_reference(blind):
    """1,500 birds listed, then moved by a common drift plus a little each: wherever a
    bird's list answers, it answers what the all-pairs reference does; most lists answer."""
    rng = np.random.default_rng(4)
    anchor, fwd = flock(1500, 3, seed=9)
    pos = anchor + [3.0, -2.0, 0.5] + rng.normal(0.0, 0.03, anchor.shape)
    from render.sim.nearest import (LISTED, NEAR, build_grid, cos_half_blind, drift,
                                    relist, search_listed)

    n, k = len(pos), 7
    expected = naive(pos, fwd, k, blind_angle=blind)
    radius = np.sqrt(naive(anchor, fwd, k)[1][:, -1]) * 1.05
    then = build_grid(anchor, 1.5 * float(np.median(radius)), cells=False, fwd=fwd)
    cand, reach = np.full((n, LISTED), -1, np.int32), np.zeros(n)
    scratch = (np.empty(LISTED, np.int64), np.empty(LISTED), np.empty(NEAR, np.int64))
    for q in range(n):
        i = then.order[q]
        relist(q, i, radius[i], then.start, *then.folds, then.side, then.order, then.pos,
               then.fwd, cand, reach, *scratch)
    moved = np.empty(n)
    most = drift(pos, anchor, np.zeros(0, bool), moved)
    now = build_grid(pos, then.side, cells=False, fwd=fwd)
    slot_of = np.empty(n, np.int64)
    slot_of[now.order] = np.arange(n)
    answered = 0
    best_s, best_d2 = np.empty(k, np.int64), np.empty(k)
    for i in range(n):
        found, _ = search_listed(int(slot_of[i]), i, reach[i] - moved[i] - most, slot_of,
                                 cand, now.order, now.pos, now.fwd, cos_half_blind(blind),
                                 math.inf, best_s, best_d2)
        if found >= 0:
            answered += 1
            np.testing.assert_array_equal(now.order[best_s[:found]], expected[0][i][:found])
            np.testing.assert_array_equal(best_d2[:found], expected[1][i][:found])
    assert answered > 0.8 * n
