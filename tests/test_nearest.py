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


def _lists(anchor, fwd, radius, side):
    """Every bird's candidate list drawn at `anchor` (nearest.relist, first radii
    `radius` (n,), cells of `side`): (cand, reach, the grid they were drawn from)."""
    from render.sim.nearest import GATHERED, LISTED, NEAR, Gathered, build_grid, relist

    n = len(anchor)
    cand, reach = np.full((n, LISTED), -1, np.int32), np.zeros(n)
    then = build_grid(anchor, side, cells=False, fwd=fwd)
    scratch = (np.empty(GATHERED, np.int64), np.empty(GATHERED), np.empty(NEAR, np.int64),
               Gathered(np.empty(LISTED, np.int64), np.empty(LISTED),
                        np.empty(GATHERED, np.int64), np.empty(1)))
    for q in range(n):
        relist(q, radius[then.order[q]], then.start, *then.folds, then.side, then.order,
               then.pos, then.fwd, cand, reach, *scratch)
    return cand, reach, then


def test_each_list_holds_the_nearest_birds_within_its_reach_nearest_first():
    """nearest.relist against all pairs: every bird within 1.35 × its first radius, at
    most LISTED of them (the nearest, by distance then bird index), nearest first, and the
    reach the listed ball's radius or, when the list is full, its last distance. Birds on
    a lattice (many equal distances) and a loose blob around it (lists not full); some
    balls hold more birds than the scratch they are gathered in (GATHERED), so the nearest
    are ranked out of them while the ball is searched."""
    from render.sim.nearest import GATHERED, LISTED, SKIN

    g = np.arange(12, dtype=float)
    lattice = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    blob, _ = flock(500, 3, seed=2, spread=30.0)
    anchor = np.concatenate([lattice, blob])
    n = len(anchor)
    fwd = np.tile([1.0, 0.0, 0.0], (n, 1))
    # Lists short of LISTED, full, and full from balls of more than GATHERED birds.
    radius = np.array([1.1, 2.0, 3.2])[np.arange(n) % 3]
    cand, reach, then = _lists(anchor, fwd, radius, 2.5)
    full = crowded = 0
    for q in range(n):
        i = then.order[q]
        r = radius[i] * (1.0 + SKIN)
        off = anchor - anchor[i]
        d2 = (off * off).sum(axis=1)
        within = [j for j in np.lexsort((np.arange(n), d2)) if d2[j] < r * r and j != i]
        want = within[:LISTED]
        got = [then.order[s] for s in cand[q] if s >= 0]
        assert got == want, q
        crowded += len(within) > GATHERED
        if len(within) >= LISTED:
            full += 1
            assert reach[q] == pytest.approx(math.sqrt(d2[want[-1]]), abs=1e-12)
        else:
            assert reach[q] == r
    assert full > 500 and full < n - 100 and crowded > 100


def search_listed(q, limit, cand, g_order, g_pos, g_fwd, cos_blind, max_d2, best_s,
                  best_d2):
    """The step's use of a list: nearest.read_list, then (how many, tested) where
    nearest.list_answers says it answers under `limit`, else (−1, tested)."""
    from render.sim.nearest import list_answers, read_list

    found, tested = read_list(q, cand, g_order, g_pos, g_fwd, cos_blind, max_d2, best_s,
                              best_d2)
    return (found if list_answers(limit, found, best_d2, max_d2) else -1), tested


def _read(pos, anchor, fwd, lists, k, blind=0.0, drifts=True):
    """Each bird's k nearest visible birds of pos from the `lists` drawn at anchor
    (`search_listed`, with the drifts, or none when not `drifts`), the birds kept
    in the slots of the grid the lists were drawn from: a list of (count, the neighbours'
    bird indices, their squared distances) per bird, count −1 where its list cannot tell."""
    from render.sim.nearest import cos_half_blind, drift, shrink

    n = len(pos)
    cand, reach, then = lists
    moved, motion = np.zeros(n), np.zeros((5, 3))
    most = drift(pos, anchor, np.zeros(0, bool), moved, motion) if drifts else 0.0
    if not drifts:
        moved[:], motion[:] = 0.0, 0.0
    best_s, best_d2 = np.empty(k, np.int64), np.empty(k)
    out = [None] * n
    for q in range(n):
        i = then.order[q]
        found, _ = search_listed(q, shrink(motion) * reach[q] - moved[i] - most, cand,
                                 then.order,
                                 pos[then.order], fwd[then.order], cos_half_blind(blind),
                                 math.inf, best_s, best_d2)
        out[i] = (found, list(then.order[best_s[:max(found, 0)]]),
                  best_d2[:max(found, 0)].copy())
    return out


def _listed(pos, fwd, anchor, k, drifts=True):
    """Bird 0's answer from the lists of the five-bird cases below (first radius 1 m)."""
    lists = _lists(anchor, fwd, np.ones(len(pos)), 3.0)
    found, got, _ = _read(pos, anchor, fwd, lists, k, drifts=drifts)[0]
    return (found, None) if found < 0 else (found, sorted(got))


def test_a_candidate_list_answers_while_the_birds_keep_their_places():
    """Worked by hand: bird 0 at the origin, birds 1–3 at 1, 2 and 3 m along x, bird 4 at
    10 m (beyond the list's reach of 1.35 m … every bird within 1.35 × its first radius of
    1 m: bird 1 alone). The whole flock then moves 5 m along y: nothing closed, so the
    list still answers, and bird 0's nearest is bird 1."""
    pos = np.array([[0.0, 0, 0], [1.0, 0, 0], [2.0, 0, 0], [3.0, 0, 0], [10.0, 0, 0]])
    fwd = np.tile([0.0, 1.0, 0.0], (5, 1))
    assert _listed(pos + [0.0, 5.0, 0.0], fwd, pos, k=1) == (1, [1])


def test_a_bird_that_came_from_beyond_the_reach_sends_the_bird_back_to_the_search():
    """Bird 4 flies in from 10 m to 0.5 m of bird 0, nearer than bird 1: bird 0's list
    (bird 1 alone) does not hold it, and the drifts (the mean motion taken out, bird 0's
    1.9 m, bird 4's 7.6 m) put the limit below zero, so the list refuses to answer. With
    the drifts left out the list answers bird 1 — the wrong neighbour the limit exists to
    catch."""
    anchor = np.array([[0.0, 0, 0], [1.0, 0, 0], [2.0, 0, 0], [3.0, 0, 0], [10.0, 0, 0]])
    fwd = np.tile([0.0, 1.0, 0.0], (5, 1))
    pos = anchor.copy()
    pos[4] = [0.5, 0.0, 0.0]
    assert list(naive(pos, fwd, 1)[0][0]) == [4]
    assert _listed(pos, fwd, anchor, k=1) == (-1, None)
    assert _listed(pos, fwd, anchor, k=1, drifts=False) == (1, [1])


def test_a_flock_that_closes_up_sends_the_bird_back_to_the_search():
    """Worked by hand: bird 0 at the origin, bird 1 at 1.4 m along x (off bird 0's list:
    first radius 1 m, reach 1.35 m), bird 2 at 1.25 m along y (on it), three more birds
    far off. The whole flock closes up 20% along x and flies on: the fitted motion
    explains every place (no bird drifts), and bird 1 is now 1.12 m from bird 0, nearer
    than bird 2. The closing keeps at least 0.8 of any distance, so the list's limit is
    0.8 × 1.35 = 1.08 m, under bird 2's 1.25 m: the list refuses to answer bird 2."""
    anchor = np.array([[0.0, 0, 0], [1.4, 0, 0], [0.0, 1.25, 0], [0.0, 0, 5.0],
                       [5.0, 5.0, 0], [-5.0, 3.0, 2.0]])
    fwd = np.tile([0.0, 1.0, 0.0], (6, 1))
    pos = anchor * [0.8, 1.0, 1.0] + [0.3, 2.0, -0.1]
    assert list(naive(pos, fwd, 1)[0][0]) == [1]
    assert _listed(pos, fwd, anchor, k=1) == (-1, None)


@pytest.mark.parametrize("blind", [0.0, 90.0])
def test_lists_drawn_then_read_after_the_flock_moves_equal_the_reference(blind):
    """1,500 birds listed, then moved by a common drift plus a little each: wherever a
    bird's list answers, it answers what the all-pairs reference does; most lists answer."""
    rng = np.random.default_rng(4)
    anchor, fwd = flock(1500, 3, seed=9)
    pos = anchor + [3.0, -2.0, 0.5] + rng.normal(0.0, 0.03, anchor.shape)
    k = 7
    expected = naive(pos, fwd, k, blind_angle=blind)
    radius = np.sqrt(naive(anchor, fwd, k)[1][:, -1]) * 1.05
    side = 1.5 * float(np.median(radius))
    answers = _read(pos, anchor, fwd, _lists(anchor, fwd, radius, side), k, blind=blind)
    answered = 0
    for i, (found, got, d2) in enumerate(answers):
        if found >= 0:
            answered += 1
            np.testing.assert_array_equal(got, expected[0][i][:found])
            np.testing.assert_array_equal(d2, expected[1][i][:found])
    assert answered > 0.8 * len(pos)


def _limits(pos, anchor, lists, empty_boxes=False, grows=False):
    """Each slot's limit from the drifts bounded around it (nearest.local_limit over the
    boxes of nearest.drift_boxes; `empty_boxes`: every box left empty, as if no bird
    around had drifted) and the flock-wide one (reach less the bird's drift and the
    largest): two (n,) arrays by slot; `grows`: local_limit's other two as well (the
    drifts' bound around the bird, the distance within which it holds)."""
    from render.sim.nearest import blocks, drift, drift_boxes, local_limit, shrink

    _, reach, then = lists
    n = len(pos)
    moved, motion = np.zeros(n), np.zeros((5, 3))
    most = drift(pos, anchor, np.zeros(0, bool), moved, motion)
    keep = shrink(motion)
    fx, fy, fz = then.folds
    boxes = np.empty((math.prod(blocks(fx, fy, fz)), 6))
    g_pos = np.ascontiguousarray(pos[then.order])
    drift_boxes(g_pos, anchor, then.order, motion, then.start, fx, fy, fz, boxes)
    if empty_boxes:
        boxes[:, :3], boxes[:, 3:] = math.inf, -math.inf
    local = np.array([local_limit(q, then.order[q], reach[q], g_pos, anchor, motion, keep,
                                  then.side, fx, fy, fz, boxes, moved[then.order[q]], most)
                      for q in range(n)])
    flockwide = keep * reach - moved[then.order] - most
    if grows:
        return local[:, 0], flockwide, local[:, 1], local[:, 2]
    return local[:, 0], flockwide


def _answers(pos, fwd, lists, limits, k, blind):
    """Each bird's answer from its list under `limits` (by slot), as `_read`."""
    from render.sim.nearest import cos_half_blind

    cand, _, then = lists
    g_pos, g_fwd = pos[then.order], fwd[then.order]
    best_s, best_d2 = np.empty(k, np.int64), np.empty(k)
    out = [None] * len(pos)
    for q, limit in enumerate(limits):
        found, _ = search_listed(q, limit, cand, then.order, g_pos, g_fwd,
                                 cos_half_blind(blind), math.inf, best_s, best_d2)
        out[then.order[q]] = (found, list(then.order[best_s[:max(found, 0)]]),
                              best_d2[:max(found, 0)].copy())
    return out


def test_a_bird_whose_neighbours_kept_together_keeps_its_list_while_the_flock_stretches():
    """Worked by hand, cells of 4 m (blocks of 2 × 2 × 2 cells, 8 m): birds 0 and 1 at
    x = 2 and 3 m (block 0), bird 2 at 34 m and bird 3 at −30 m (blocks 4 and −4), all at
    y = z = 2 m. Birds 2 and 3 fly 1 m further out (the flock stretches; its mean motion
    is nil): the largest drift is 1 m, and the flock-wide bound leaves bird 0's list
    (first radius 1 m, reach 1.35 m: bird 1) a limit of 0.35 m, short of bird 1. But
    birds 0 and 1 are alone in the 27 blocks around block 0 and did not drift: no bird
    off the list can be nearer than the reach, 1.35 m, and the birds beyond those blocks
    were filed at least 10 m away (a block's side plus bird 0's 2 m to its block's
    nearest face) and drifted at most 1 m: 9 m. The list answers bird 1."""
    anchor = np.array([[2.0, 2.0, 2.0], [3.0, 2.0, 2.0], [34.0, 2.0, 2.0], [-30.0, 2.0, 2.0]])
    fwd = np.tile([0.0, 1.0, 0.0], (4, 1))
    pos = anchor + [[0.0, 0, 0], [0.0, 0, 0], [1.0, 0, 0], [-1.0, 0, 0]]
    lists = _lists(anchor, fwd, np.ones(4), 4.0)
    then = lists[2]
    assert then.folds[0] >= 16  # blocks 4 and −4 fold onto none of −1, 0, 1
    q = int(np.flatnonzero(then.order == 0)[0])
    assert lists[1][q] == pytest.approx(1.35)
    local, flockwide = _limits(pos, anchor, lists)
    assert flockwide[q] == pytest.approx(0.35)
    assert local[q] == pytest.approx(1.35)
    assert _answers(pos, fwd, lists, flockwide, 1, 0.0)[0][0] == -1
    assert _answers(pos, fwd, lists, local, 1, 0.0)[0][:2] == (1, [1])


def _turned_with_darters():
    """1,500 birds in a flock 8 times longer than wide (anchor, fwd), then (pos) turned
    0.3° about its middle (a bird and its neighbours together) and flown on, each bird
    moving a centimetre besides, ten birds at one end darting about 3 m."""
    rng = np.random.default_rng(8)
    anchor, fwd = flock(1500, 3, seed=11)
    anchor[:, 0] *= 8.0
    c, s = math.cos(math.radians(0.3)), math.sin(math.radians(0.3))
    mid = anchor.mean(axis=0)
    rel = anchor - mid
    pos = mid + np.column_stack([c * rel[:, 0] - s * rel[:, 1], s * rel[:, 0] + c * rel[:, 1],
                                 rel[:, 2]]) + [2.0, -1.0, 0.3]
    pos += rng.normal(0.0, 0.01, pos.shape)
    dart = np.flatnonzero(anchor[:, 0] > 100.0)[:10]
    pos[dart] += rng.normal(0.0, 3.0, (len(dart), 3))
    return anchor, fwd, pos


@pytest.mark.parametrize("blind", [0.0, 90.0])
def test_lists_of_a_turning_flock_answer_from_the_drifts_around_each_bird(blind):
    """1,500 birds in a flock 8 times longer than wide, listed, then turned 0.3° about
    its middle (a bird and its neighbours together), with ten birds at one end darting
    about 3 m: the darters' drifts make the flock-wide bound refuse nearly every list;
    bounded by the drifts around each bird, most answer (not those near the darters),
    each as the all-pairs reference does. With the boxes of drifts left empty, lists near
    the darters answer wrongly: the boxes are what keeps it exact."""
    anchor, fwd, pos = _turned_with_darters()
    k = 7
    expected = naive(pos, fwd, k, blind_angle=blind)
    radius = np.sqrt(naive(anchor, fwd, k)[1][:, -1]) * 1.05
    lists = _lists(anchor, fwd, radius, 1.5 * float(np.median(radius)))
    local, flockwide = _limits(pos, anchor, lists)
    assert (local >= flockwide).all()

    def wrong(answers):
        return sum(found >= 0 and (got != list(expected[0][i][:found]) or
                                   not np.array_equal(d2, expected[1][i][:found]))
                   for i, (found, got, d2) in enumerate(answers))

    answers = _answers(pos, fwd, lists, local, k, blind)
    answered = sum(found >= 0 for found, _, _ in answers)
    assert sum(found >= 0 for found, _, _ in _answers(pos, fwd, lists, flockwide, k,
                                                      blind)) < 0.1 * len(pos)
    assert answered > 0.7 * len(pos) and wrong(answers) == 0
    blind_to_darts = _limits(pos, anchor, lists, empty_boxes=True)[0]
    assert wrong(_answers(pos, fwd, lists, blind_to_darts, k, blind)) > 0


def test_a_search_grown_by_the_drifts_around_the_bird_finds_the_exact_neighbours():
    """The turning flock with its ten darters (above): every bird searched in the grid
    filed before, its balls grown by the drifts of the blocks around it while they stay
    nearer than any bird from beyond can have come (nearest.local_limit), answers what
    the all-pairs reference does, and tests fewer candidates than balls grown by the
    largest drift in the flock (the darters'). Grown by nothing near the darters (their
    blocks' boxes left empty), some birds miss a darter that came near."""
    anchor, fwd, pos = _turned_with_darters()
    expected = naive(pos, fwd, 7, blind_angle=90.0)
    radius = np.sqrt(naive(anchor, fwd, 7)[1][:, -1]) * 1.05
    side = 1.5 * float(np.median(radius))
    lists = _lists(anchor, fwd, radius, side)
    _, _, near_grow, clear = _limits(pos, anchor, lists, grows=True)
    found, tested = _stale(pos, anchor, fwd, 7, side, local=(near_grow, clear))
    assert_same(found, expected)
    assert tested < 0.8 * _stale(pos, anchor, fwd, 7, side)[1]
    _, _, blind_grow, clear = _limits(pos, anchor, lists, empty_boxes=True, grows=True)
    wrong = _stale(pos, anchor, fwd, 7, side, local=(blind_grow, clear))[0]
    assert not np.array_equal(wrong[0], expected[0])


@pytest.mark.parametrize("blind", [0.0, 90.0])
def test_lists_of_a_flock_that_turns_and_stretches_answer_from_its_fitted_motion(blind):
    """1,500 birds in a flock 8 times longer than wide, listed, then turned 0.5° about
    its middle and stretched 1% along its length while it flies on, each bird moving a
    centimetre or so besides: its ends move more than a metre from where its mean motion
    puts them, so bounded by that motion no list would answer. nearest.drift fits the turn
    and the stretch: each bird's drift is its centimetre, and nearly every list answers,
    each as the all-pairs reference does."""
    from render.sim.nearest import drift

    rng = np.random.default_rng(12)
    anchor, fwd = flock(1500, 3, seed=13)
    anchor[:, 0] *= 8.0
    c, s = math.cos(math.radians(0.5)), math.sin(math.radians(0.5))
    mid = anchor.mean(axis=0)
    rel = (anchor - mid) * [1.01, 1.0, 1.0]
    pos = mid + np.column_stack([c * rel[:, 0] - s * rel[:, 1], s * rel[:, 0] + c * rel[:, 1],
                                 rel[:, 2]]) + [2.0, -1.0, 0.3]
    pos += rng.normal(0.0, 0.01, pos.shape)
    k = 7
    expected = naive(pos, fwd, k, blind_angle=blind)
    radius = np.sqrt(naive(anchor, fwd, k)[1][:, -1]) * 1.05
    lists = _lists(anchor, fwd, radius, 1.5 * float(np.median(radius)))
    moved, motion = np.zeros(len(pos)), np.zeros((5, 3))
    most = drift(pos, anchor, np.zeros(0, bool), moved, motion)
    assert most < 0.06
    # The mean motion alone: every bird's displacement less the flock's mean.
    alone = np.linalg.norm(pos - anchor - (pos - anchor).mean(axis=0), axis=1)
    assert alone.max() > 1.0
    _, flockwide = _limits(pos, anchor, lists)
    answers = _answers(pos, fwd, lists, flockwide, k, blind)
    assert sum(found >= 0 for found, _, _ in answers) > 0.95 * len(pos)
    for i, (found, got, d2) in enumerate(answers):
        if found >= 0:
            np.testing.assert_array_equal(got, expected[0][i][:found])
            np.testing.assert_array_equal(d2, expected[1][i][:found])


def test_the_fitted_motion_is_the_turn_and_the_stretch():
    """nearest.drift against numpy's least squares (an independent fit of d ≈ t + L·a
    over the birds flying), on a turned, stretched and translated flock with noise; birds
    not flying are left out of the fit and of the largest drift."""
    from render.sim.nearest import drift

    rng = np.random.default_rng(3)
    anchor, _ = flock(3000, 3, seed=14)
    turn = np.array([[0.99, -0.05, 0.01], [0.05, 1.02, 0.0], [0.0, 0.01, 0.98]])
    pos = anchor @ turn.T + [5.0, -2.0, 1.0] + rng.normal(0.0, 0.02, anchor.shape)
    flying = np.ones(len(pos), bool)
    flying[:40] = False
    pos[:40] += 50.0  # far off: fitted, they would skew the fit and be the largest drift
    moved, motion = np.zeros(len(pos)), np.zeros((5, 3))
    most = drift(pos, anchor, flying, moved, motion)
    a1 = np.column_stack([np.ones(flying.sum()), anchor[flying]])
    fit = np.linalg.lstsq(a1, (pos - anchor)[flying], rcond=None)[0]  # rows: t, then Lᵀ
    # motion: the displacement at its point c (row 4), L; lstsq's t is at the origin.
    np.testing.assert_allclose(motion[0] - motion[1:4] @ motion[4], fit[0], atol=1e-9)
    np.testing.assert_allclose(motion[1:4], fit[1:].T, atol=1e-9)
    want = np.linalg.norm(pos - anchor - fit[0] - anchor @ fit[1:], axis=1)
    np.testing.assert_allclose(moved, want, atol=1e-9)
    assert most == pytest.approx(want[flying].max(), abs=1e-9)
    assert moved[:40].min() > most


def _stale(pos, anchor, fwd, k, side, blind=90.0, grown=True, local=None):
    """Each bird's k nearest visible birds of pos, searched (nearest.search) in the grid
    filed at anchor, its cells grown by the drifts (or, not `grown`, read as if filed at
    pos; `local`, two (n,) arrays by slot: grown by the first while the ball is smaller
    than the second, see nearest.local_limit): (indices (n, k), squared distances (n, k),
    counts (n,)) as k_nearest_visible, and the candidates tested in all."""
    from render.sim.nearest import NEAR, build_grid, cos_half_blind, drift, search, shrink

    n = len(pos)
    near_grow, clear = local if local is not None else (np.zeros(n), np.zeros(n))
    then = build_grid(anchor, side, cells=False)
    moved, motion = np.zeros(n), np.zeros((5, 3))
    most = drift(pos, anchor, np.zeros(0, bool), moved, motion)
    stretch = 1.0 / shrink(motion)
    if not grown:
        moved[:], most, stretch = 0.0, 0.0, 1.0
    g_pos, g_fwd = pos[then.order], fwd[then.order]
    best_s, best_d2, near = np.empty(k, np.int64), np.empty(k), np.empty(NEAR, np.int64)
    out = (np.full((n, k), -1, np.int64), np.full((n, k), np.inf), np.zeros(n, np.int64))
    tested = 0
    for q in range(n):
        i = then.order[q]
        found, more = search(q, 0.5 * side, then.start, *then.folds, then.side, 3,
                             then.order, g_pos, g_fwd, cos_half_blind(blind), math.inf,
                             best_s, best_d2, near, tuple(anchor[i] if grown else pos[i]),
                             moved[i] + most, stretch, near_grow[q], clear[q])
        out[0][i, :found] = then.order[best_s[:found]]
        out[1][i, :found] = best_d2[:found]
        out[2][i] = found
        tested += more
    return out, tested


def test_a_grid_filed_steps_ago_searched_with_its_cells_grown_finds_the_exact_neighbours():
    """1,500 birds filed, then moved by a common drift plus up to a few tenths of a metre
    each: the search in the old grid, its cells grown by the largest drift around the
    places less the common motion, answers what the all-pairs reference does for every
    bird. Read as if the birds were still in their old cells, it misses some."""
    rng = np.random.default_rng(6)
    anchor, fwd = flock(1500, 3, seed=10)
    pos = anchor + [4.0, -3.0, 1.0] + rng.normal(0.0, 0.1, anchor.shape)
    expected = naive(pos, fwd, 7, blind_angle=90.0)
    assert_same(_stale(pos, anchor, fwd, 7, side=1.5)[0], expected)
    wrong = _stale(pos, anchor, fwd, 7, side=1.5, grown=False)[0]
    assert not np.array_equal(wrong[0], expected[0])


def test_a_bird_that_left_its_old_cell_is_still_found():
    """Worked by hand: bird 0 at the origin, bird 1 at 0.4 m and bird 2 at 1.5 m along x,
    cells of 1 m. Bird 2 flies to 0.3 m of bird 0, out of its old cell; the flock's motion
    (the birds in a line: no turn or stretch can be fitted, the translation alone) is
    −0.4 m along x, bird 0's drift 0.4 m, bird 2's 0.8 m. The search in the old grid, its
    first ball (0.5 m) around the origin (where bird 0 was filed) grown by 1.2 m (its
    drift and the largest), visits cells −2 to 1 and finds bird 2 as bird 0's nearest.
    Read as if no bird had moved, the ball visits cells −1 and 0 and answers bird 1."""
    anchor = np.array([[0.0, 0.0, 0.0], [0.4, 0.0, 0.0], [1.5, 0.0, 0.0]])
    fwd = np.tile([0.0, 1.0, 0.0], (3, 1))
    pos = anchor.copy()
    pos[2] = [0.3, 0.0, 0.0]
    assert _stale(pos, anchor, fwd, 1, side=1.0)[0][0][0].tolist() == [2]
    assert _stale(pos, anchor, fwd, 1, side=1.0, grown=False)[0][0][0].tolist() == [1]
