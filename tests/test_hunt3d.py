"""The hunt, the agitation waves and the landing (docs/model.md, the hunt): the kernels against the
numpy references of tests/naive3d.py, worked cases, the border estimator's control and
the scene's checks."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.spatial import ConvexHull, Delaunay

from naive3d import (naive_border_ratio, naive_landing, naive_peel, naive_zig_accel,
                     naive_zig_begin)
from render.sim import flockstats3d as fs
from render.sim.forces import landing, waves
from render.sim.hunt3d import extra_accel
from render.sim.forces.hunt import Startle
from render.sim.nearest import k_nearest_visible

RNG = np.random.default_rng(5)


def _flock(n=400):
    pos = RNG.normal(size=(n, 3)) * (12.0, 6.0, 2.0) + (0.0, 0.0, 30.0)
    vel = RNG.normal(size=(n, 3)) * 0.5 + (10.0, 1.0, 0.0)
    fwd = vel / np.linalg.norm(vel, axis=1)[:, None]
    idx, d2, count = k_nearest_visible(pos, fwd, 7, radius=2.0)
    return pos, vel, fwd, np.ascontiguousarray(idx), count


def _wv(**kw):
    base = dict(active=True, reaction=8, zig_steps=50, refractory=300, zig=12.0,
                range2=16.0)
    return waves.Waves(**{**base, **kw})


def test_zig_begin_matches_the_reference_over_many_steps():
    pos, vel, fwd, idx, count = _flock()
    start, side, origin = waves.fresh(len(pos))
    ref = start.copy(), side.copy(), origin.copy()
    knn = [idx[i, :count[i]] for i in range(len(pos))]
    for step in range(200):
        hawk = (0.0, 0.0, 30.0) if step % 97 == 0 else None
        # Refractory for 60 steps: the hawk's second pass startles the same birds again.
        wv = _wv(out=hawk is not None, x=0.0, y=0.0, z=30.0, refractory=60)
        new = np.empty_like(start), np.empty_like(side), np.empty_like(origin)
        waves.begin(wv, step, pos, fwd, idx, count, start, side, origin, *new)
        ref = naive_zig_begin(step, pos, fwd, knn, *ref, hawk, 16.0, 8, 60)
        start, side, origin = new
        for mine, theirs in zip(new, ref):
            assert np.array_equal(mine, theirs)
    assert (start > waves.NEVER).mean() > 0.5  # the wave did spread
    assert len(np.unique(origin[origin > waves.NEVER])) >= 2  # from more than one startle


@pytest.mark.parametrize("turn", [0.0, 0.4, 1.0])
def test_zig_and_landing_steering_match_the_reference(turn):
    pos, vel, fwd, idx, count = _flock()
    n = len(pos)
    start = RNG.integers(-60, 10, n)
    side = RNG.choice([-1.0, 1.0], n)
    state = RNG.integers(0, 3, n).astype(np.int8)
    land = landing.Landing(True, 3.0, -2.0, 15.0, 0.6, 6.0)
    wv = _wv(roll=40.0, turn=turn)
    roll = np.full(n, np.nan)
    out = extra_accel(0, pos, fwd, Startle(False, 0, 0, 0, 1, 0), wv, start, side,
                      land, state, roll)
    zigging = (start <= 0) & (start > -50) & (state != 2)  # within its 50 steps, flying
    np.testing.assert_array_equal(roll, np.where(zigging, 40.0, 0.0))
    ref = naive_zig_accel(0, start, side, fwd, 12.0, 50, turn)
    _, funnel = naive_landing(0, pos, fwd, np.zeros(n, np.int64), state, (3.0, -2.0), 15.0,
                              0.6, 6.0)
    ref = ref + np.where((state == 1)[:, None], funnel, 0.0)
    ref[state == 2] = 0.0
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-9)


@pytest.mark.parametrize("turn, left", [(0.0, 0.0), (1.0, 12.0 * 0.01 / math.tan(math.pi / 100)),
                                         (0.5, 6.0 * 0.01 / math.tan(math.pi / 100))])
def test_a_zig_leaves_the_bird_turned_by_its_turning_share_by_hand(turn, left):
    """A bird flying along +x zigs left (zig 12 m/s², 50 steps of 10 ms): its sideways
    speed gained over the zig is 12 · 0.01 · Σ sin(π e/50) · turn = 0.12 · cot(π/100) ·
    turn (3.82 m/s at turn 1, about zig · zig_time · 2/π), the full period's part adding
    up to nothing."""
    wv = _wv(turn=turn)
    gained = 0.0
    for step in range(60):  # past the zig's end: nothing more
        _, ay, _ = waves.accel(wv, step, 0, 1.0, 1.0, 0.0)
        gained += ay * 0.01
    assert gained == pytest.approx(left, abs=1e-12)


def test_a_landing_bird_under_the_funnel_flies_in_level_by_hand():
    # Roost at the origin, reed bed 15 m, slope 2.5, strength 6 m/s². 100 m out at 50 m
    # the funnel is 212.5 m up: a bird flying level at the roost is left as it is (the
    # steering once asked it to climb at 27°); flying across, it is turned, not lifted.
    p = landing.Landing(True, 0.0, 0.0, 15.0, 2.5, 6.0)
    assert landing.accel(p, 100.0, 0.0, 50.0, -1.0, 0.0, 0.0) == (0.0, 0.0, 0.0)
    assert landing.accel(p, 100.0, 0.0, 50.0, 0.0, 1.0, 0.0) == (-6.0, -6.0, 0.0)
    # 25 m out the funnel is 25 m up: 25 m above it, the descent is the steepest (1.5).
    d = np.array([-1.0, 0.0, -1.5]) / math.sqrt(3.25)
    np.testing.assert_allclose(landing.accel(p, 25.0, 0.0, 50.0, -1.0, 0.0, 0.0),
                               6.0 * (d - (-1.0, 0.0, 0.0)), rtol=0, atol=1e-12)


def test_landing_state_matches_the_reference():
    n = 300
    pos = RNG.uniform((-30, -30, 0), (30, 30, 3), (n, 3))
    vel = RNG.normal(size=(n, 3))
    peel = RNG.integers(0, 20, n)
    state = np.zeros(n, np.int8)
    land = landing.Landing(True, 0.0, 0.0, 15.0, 0.6, 6.0)
    for step in range(25):
        new = np.empty_like(state)
        landing.advance_state(land, step, pos, peel, state, new)
        ref, _ = naive_landing(step, pos, vel, peel, state, (0.0, 0.0), 15.0, 0.6, 6.0)
        assert np.array_equal(new, ref)
        state = new
        pos[:, 2] *= 0.8


def test_the_birds_nearest_the_roost_peel_first_by_hand():
    # Horizontal distances 30, 10, 20, 10 m (the last two tie: bird 1 first), 40 m up;
    # over 20 steps, checked every 10: half of them at the landing's first step.
    pos = np.array([[30.0, 0, 40], [0, 10, 40], [0, -20, 40], [-10, 0, 40]])
    state = np.zeros(4, np.int8)
    peel = np.full(4, np.iinfo(np.int64).max, np.int64)
    p = landing.Landing(True, 0.0, 0.0, 15.0, 0.6, 6.0)
    landing.peel_nearest(p, 100, 20.0, 99, pos, state, peel)
    assert (peel == np.iinfo(np.int64).max).all()  # before the landing
    landing.peel_nearest(p, 100, 20.0, 100, pos, state, peel)
    assert peel[[1, 3]].tolist() == [100, 100] and (peel[[0, 2]] > 100).all()
    landing.peel_nearest(p, 100, 20.0, 105, pos, state, peel)  # not a checking step
    assert (peel[[0, 2]] > 105).all()
    landing.peel_nearest(p, 100, 20.0, 110, pos, state, peel)
    assert peel.tolist() == [110, 100, 110, 100]


def test_peeling_matches_the_reference_as_birds_land():
    n, first, spread = 400, 30, 95.0
    rng = np.random.default_rng(11)
    pos = rng.uniform((-60, -60, 0), (60, 60, 50), (n, 3))
    pos[rng.integers(0, n, 60)] = pos[:60]  # equal distances: ties go by bird index
    state = np.zeros(n, np.int8)
    state[rng.choice(n, 20, replace=False)] = landing.LANDED  # already down: begun
    never = np.iinfo(np.int64).max
    peel = np.full(n, never, np.int64)
    p = landing.Landing(True, 5.0, -3.0, 15.0, 0.6, 6.0)
    for step in range(140):
        want = naive_peel(step, first, spread, landing.PEEL_EVERY, pos, state, peel,
                          (5.0, -3.0))
        landing.peel_nearest(p, first, spread, step, pos, state, peel)
        assert np.array_equal(peel, want)
        new = np.empty_like(state)
        landing.advance_state(p, step, pos, peel, state, new)
        state = new
        pos += rng.normal(0.0, 0.5, (n, 3))
    assert (peel < never).sum() == n - 20  # every bird flying has begun by first + spread
    started = np.sort(np.unique(peel[peel < never]))
    assert started[0] == first and started[-1] <= first + spread


def _chain(n=5):
    """Birds in a line 1 m apart, each listing only its neighbours."""
    pos = np.column_stack([np.arange(n, dtype=float), np.zeros(n), np.full(n, 30.0)])
    fwd = np.tile((0.0, 1.0, 0.0), (n, 1))
    idx = np.array([[max(i - 1, 0), min(i + 1, n - 1)] for i in range(n)], np.int64)
    return pos, fwd, idx, np.full(n, 2, np.int64)


def _run(wv, pos, fwd, idx, count, steps, startle_at=(0,)):
    start, side, origin = waves.fresh(len(pos))
    starts, origins = [], []
    for step in range(steps):
        w = wv._replace(out=step in startle_at, x=-0.5, y=0.0, z=30.0)
        new = np.empty_like(start), np.empty_like(side), np.empty_like(origin)
        waves.begin(w, step, pos, fwd, idx, count, start, side, origin, *new)
        start, side, origin = new
        starts.append(start.copy())
        origins.append(origin.copy())
    return np.array(starts), side, np.array(origins)


def test_a_zig_is_copied_after_exactly_the_reaction_time():
    # dt = 4 ms: 76 ms is exactly 19 steps; bird 0 is startled at step 0 (the hawk
    # 0.5 m from it, range 1 m reaches it only), bird k copies at step 19·k.
    pos, fwd, idx, count = _chain()
    wv = _wv(reaction=19, range2=1.0, refractory=1000, zig_steps=100)
    starts, side, origins = _run(wv, pos, fwd, idx, count, 100)
    assert list(starts[-1]) == [0, 19, 38, 57, 76]
    assert np.all(side == side[0])  # the copied side
    assert list(origins[-1]) == [0] * 5  # each copies the hawk's zig at step 0


def test_the_refractory_time_stops_the_echo():
    # Without it bird 1 would copy bird 0 and bird 0 copy bird 1 back, forever.
    pos, fwd, idx, count = _chain(2)
    wv = _wv(reaction=5, range2=1.0, refractory=50, zig_steps=10)
    starts, _, _ = _run(wv, pos, fwd, idx, count, 200)
    assert list(starts[-1]) == [0, 5]
    echo = _wv(reaction=5, range2=1.0, refractory=5, zig_steps=5)
    starts, _, _ = _run(echo, pos, fwd, idx, count, 60)
    assert starts[-1][0] > 0  # the echo a refractory time of one reaction allows


def test_a_zig_carries_the_origin_of_the_hawks_zig_it_copies():
    # Bird 0 zigs at the hawk at step 0 and bird 1 copies it at step 5, of origin 0. The
    # hawk near bird 0 at step 6 and 20 finds it refractory (50 steps): nothing begins.
    # At step 60 it startles it again (origin 60), and bird 1, free again, copies that
    # zig at 65 with its origin.
    pos, fwd, idx, count = _chain(2)
    wv = _wv(reaction=5, range2=1.0, refractory=50, zig_steps=10)
    starts, _, origins = _run(wv, pos, fwd, idx, count, 70, startle_at=(0, 6, 20, 60))
    assert list(starts[59]) == [0, 5] and list(origins[59]) == [0, 0]
    assert list(starts[-1]) == [60, 65] and list(origins[-1]) == [60, 60]


def test_the_hull_depths_match_qhull():
    pts = RNG.normal(size=(3000, 3))  # a flat lens, as a flock's sheet
    pts *= (RNG.random(3000) ** (1 / 3) / np.linalg.norm(pts, axis=1))[:, None]
    pts *= (40.0, 15.0, 5.0)
    mine = fs.depths(pts, fs.hull(pts))
    eq = ConvexHull(pts).equations
    exact = -(pts @ eq[:, :3].T + eq[:, 3]).max(axis=1)
    assert np.all(mine >= exact - 1e-9)  # an outer approximation
    assert np.abs(mine - exact).max() < 0.01 * np.ptp(pts, axis=0).max()
    outer_mine = set(np.argsort(mine)[:300])
    outer_exact = set(np.argsort(exact)[:300])
    assert len(outer_mine & outer_exact) >= 0.9 * 300  # the estimator's outer 10%


def test_border_ratio_matches_the_reference_and_reads_one_on_a_uniform_scatter():
    pts = RNG.normal(size=(1500, 3)) * (20.0, 8.0, 3.0)
    planes = fs.hull(pts)
    nn = 0.9
    tri = Delaunay(pts[ConvexHull(pts).vertices])
    ref = naive_border_ratio(pts, nn, lambda x: tri.find_simplex(x) >= 0,
                             fs.depths(pts, planes), fs._BALL)
    mine = fs.border_ratio(pts, nn, planes, sample=10 ** 6)
    assert mine == pytest.approx(ref, rel=0.03)  # the hulls differ slightly
    ratios = []
    flock = RNG.normal(size=(8000, 3))  # a flat lens, as a flock's sheet
    flock *= (RNG.random(8000) ** (1 / 3) / np.linalg.norm(flock, axis=1))[:, None]
    flock *= (50.0, 20.0, 7.0)
    planes = fs.hull(flock)
    for seed in range(3):
        u = fs.uniform_in_hull(planes, flock.min(0), flock.max(0), len(flock), seed)
        d = np.sort(np.linalg.norm(u[:, None] - u[None, :300], axis=2), axis=0)[1]
        ratios.append(fs.border_ratio(u, float(np.median(d)), planes, sample=10 ** 6))
    assert all(abs(r - 1.0) <= 0.07 for r in ratios), ratios


def test_largest_cluster_matches_connected_components():
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial.distance import cdist

    a = RNG.normal(size=(300, 3)) * 3.0
    b = RNG.normal(size=(100, 3)) * 2.0 + (60.0, 0.0, 0.0)
    pts = np.concatenate([a, b])
    _, labels = connected_components(cdist(pts, pts) < fs.LINK_M, directed=False)
    assert fs.largest_cluster(pts) == np.bincount(labels).max() / len(pts)


@pytest.mark.parametrize("spacing", [4.9, 5.0, 5.1])
def test_largest_cluster_of_chains_spaced_about_the_link(spacing):
    # Chains of birds `spacing` apart (linked below the link only), a dense blob and a few
    # strays; the shares as scipy's connected components give them, at several links.
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial.distance import cdist

    rng = np.random.default_rng(int(spacing * 10))
    chain = np.arange(300)[:, None] * (spacing, 0.0, 0.0)
    pts = np.concatenate([chain, chain[:120] + (0.0, 30.0, 1.0),
                          rng.normal(size=(100, 3)) * 4.0 + (0.0, -40.0, 0.0),
                          rng.uniform(-300, 300, (15, 3))])
    for link in (fs.LINK_M, 2.5, 12.0):
        _, labels = connected_components(cdist(pts, pts) < link, directed=False)
        assert fs.largest_cluster(pts, link) == np.bincount(labels).max() / len(pts)
        assert_same_sets(fs.clusters(pts, link), labels)


def assert_same_sets(roots, labels):
    """roots (each bird's set as its lowest-numbered bird) partition the birds as labels."""
    first = {}
    for i, label in enumerate(labels):
        first.setdefault(label, i)
    np.testing.assert_array_equal(roots, [first[label] for label in labels])


def test_clusters_of_a_flock_in_cubes_of_every_size():
    # A flock's density (hundreds within the link), a sparse rim and far strays: every
    # pair of cubes two apart is tried, and the sets are scipy's.
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial.distance import cdist

    rng = np.random.default_rng(3)
    pts = np.concatenate([rng.normal(size=(1500, 3)) * (12.0, 5.0, 2.0),
                          rng.normal(size=(400, 3)) * (4.0, 3.0, 2.0) + (45.0, 0.0, 0.0),
                          rng.uniform(-80.0, 80.0, (100, 3))])
    for link in (1.0, fs.LINK_M):
        _, labels = connected_components(cdist(pts, pts) < link, directed=False)
        assert_same_sets(fs.clusters(pts, link), labels)


@pytest.mark.parametrize("radius", [0.5, 0.7071067811865476, 1.5])
def test_counts_within_a_radius_on_a_lattice_match_all_pairs(radius):
    # A lattice 0.5 m apart puts many birds exactly at the radius (counted: ≤); the
    # centres are some of its points, each not counting itself.
    lattice = np.stack(np.meshgrid(*[np.arange(10.0)] * 3), -1).reshape(-1, 3) * 0.5
    centres = lattice[::7]
    want = (((centres[:, None] - lattice[None]) ** 2).sum(axis=2) <= radius ** 2).sum(axis=1)
    np.testing.assert_array_equal(fs.counts_within(centres, lattice, radius), want - 1)


def test_correlation_length_of_a_two_halves_flock():
    # Two halves flying apart: the fluctuations are correlated within a half, opposite
    # across, so C(r) crosses zero near the halves' separation scale.
    pts = RNG.uniform((-50, -5, -2), (50, 5, 2), (3000, 3))
    vel = np.where(pts[:, :1] < 0, -1.0, 1.0) * (1.0, 0.0, 0.0) + (10.0, 0.0, 0.0)
    xi, big = fs.correlation_length(pts, vel)
    assert 20.0 < xi < 80.0 and 95.0 < big < 102.0


HUNT = ["--set", "world.dimensions=3", "--set", "rules.neighbours=topological",
        "--set", "flock.count=500", "--set", "hawk.mode=hunt"]


@pytest.mark.parametrize("extra, needle", [
    (["--set", "hawk.speed=8.0"], "hawk.speed: a hunting hawk must outfly the flock"),
    (["--set", "roost.landing_at=99.0"], "roost.landing_at: the landing starts after the "
                                          "clip's end"),
    (["--set", "roost.landing_at=-1.0"], "roost.landing_at: the landing starts before "
                                         "settling is over"),
    (["--set", "hawk.start=-1.0"], "hawk.start: the hunt starts before settling is over"),
    (["--set", "hawk.mode=chord"], "hawk.mode: a 3D world's hawk hunts"),
])
def test_bad_hunts_and_landings_exit_2_naming_the_key(tmp_path, extra, needle):
    scene = tmp_path / "s.toml"
    scene.write_text("[scene]\nduration = 10.0\n[world]\n[flock]\n[rules]\n[flight]\n"
                     "[roost]\n[hawk]\nspeed = 20.0\n")
    done = subprocess.run([sys.executable, "-m", "render", str(scene), "--check", *HUNT,
                           *extra], capture_output=True, text=True)
    assert done.returncode == 2 and needle in done.stderr, done.stderr


@pytest.mark.parametrize("flags, code", [(["--duration", "6"], 0),
                                         (["--set", "scene.duration=6"], 0),
                                         (["--frames", "60"], 0),
                                         (["--duration", "6", "--set", "roost.landing_at=8"],
                                          2)])
def test_a_clip_cut_short_of_the_files_landing_is_an_excerpt(tmp_path, flags, code):
    """The file's landing at 9 s in its 10 s clip; --duration 6 renders the first 6 s of
    the same film (the landing simply falls after them), while a landing asked for on the
    command line past the clip's end is still refused."""
    scene = tmp_path / "s.toml"
    scene.write_text("[scene]\nduration = 10.0\n[world]\n[flock]\n[rules]\n[flight]\n"
                     "[roost]\nlanding_at = 9.0\n[hawk]\nspeed = 20.0\n")
    done = subprocess.run([sys.executable, "-m", "render", str(scene), "--check", *HUNT,
                           *flags], capture_output=True, text=True)
    assert done.returncode == code, done.stderr
    if code:
        assert "roost.landing_at: the landing starts after the clip's end" in done.stderr


def _landed_step(sim, pos, vel, landed, step, work):
    """One step3 of the flock (pos, vel) with the birds `landed` (n,) bool on the ground:
    (the Step3, its Finale3, the forward vectors it read)."""
    from render.sim import step3d
    from render.sim.forces import landing, roost

    n, k = len(pos), 7
    state = np.where(landed, landing.LANDED, landing.FLYING).astype(np.int8)
    fin = step3d.Finale3(np.zeros((n, 3)), state, np.empty((n, k), np.int64), np.empty(n))
    centroid, heading = step3d.forward(pos, vel, work.fwd)
    home = roost.at_step(sim.roost, centroid, heading, False, 1.0, 0.0, 0.01)
    new = step3d.step3(pos, vel, np.zeros(n), sim.how, sim.rules, home, sim.flight, 0.0, 0,
                       step, work, fin)
    return new, fin, work.fwd.copy()


def _assert_landed_are_nobodys_neighbours(pos, fwd, landed, new, fin):
    from naive_neighbours import k_nearest_visible as naive_knn

    flying = np.flatnonzero(~landed)
    ref_j, ref_d2 = naive_knn(pos[flying], fwd[flying], 7, blind_angle=90.0)[:2]
    np.testing.assert_array_equal(fin.idx[flying], np.where(ref_j >= 0, flying[ref_j], -1))
    np.testing.assert_allclose(fin.kth[flying], ref_d2[:, -1], rtol=0, atol=1e-9)
    np.testing.assert_array_equal(new.count[flying], (ref_j >= 0).sum(axis=1))
    assert np.all(new.count[landed] == 0) and np.all(fin.idx[landed] == -1)
    assert not np.isin(fin.idx[flying], np.flatnonzero(landed)).any()
    # A landed bird stays where it is, at rest.
    np.testing.assert_array_equal(new.pos[landed], pos[landed])
    assert not new.vel[landed].any() and not new.bank[landed].any()


def test_landed_birds_are_nobodys_neighbours():
    """A third of the flock on the ground when the candidate lists and their grid are
    drawn; then, the step after, as many again land while the lists and the grid are kept
    (the birds that landed keep their slots in it): every bird flying finds its neighbours
    among the birds flying, as the all-pairs reference does, both times."""
    from render.scene.load import build_scene
    from render.sim import step3d
    from render.sim.simulate3d import Simulation3D

    raw = {"world": {"dimensions": 3}, "flock": {"count": 300},
           "rules": {"neighbours": "topological", "topological_count": 7,
                     "blind_angle": 90.0}, "flight": {}, "roost": {},
           "scene": {"duration": 1.0, "settle_steps": 0}}
    sim = Simulation3D(build_scene(raw, "s.toml"), cache=False)
    pos, vel, _, _, _ = _flock(300)
    landed = RNG.random(len(pos)) < 0.3
    work = step3d.workspace3(len(pos), True, 2.0)
    new, fin, fwd = _landed_step(sim, pos, vel, landed, 0, work)
    _assert_landed_are_nobodys_neighbours(pos, fwd, landed, new, fin)
    grid = work.grid[0]
    more = landed | (RNG.random(len(pos)) < 0.3)
    after, fin, fwd = _landed_step(sim, new.pos, new.vel, more, 1, work)
    assert work.grid[0] is grid, "the grid was drawn anew: the case is not tested"
    _assert_landed_are_nobodys_neighbours(new.pos, fwd, more, after, fin)


@pytest.mark.parametrize("landed_key", ["ground", "hidden"])
def test_the_top_down_drawing_hides_landed_birds_when_asked(landed_key):
    from render.draw.surface import Canvas
    from render.scene.load import build_scene
    from render.states import FrameState

    raw = {"world": {"dimensions": 3, "width": 60.0, "height": 40.0},
           "flock": {"count": 40}, "rules": {"neighbours": "topological"}, "flight": {},
           "roost": {"landing_at": 1.0, "landed": landed_key},
           "output": {"size": "160x120"}, "scene": {"duration": 2.0}}
    scene = build_scene(raw, "s.toml")
    pos = RNG.uniform((5, 5, 0), (55, 35, 20), (40, 3))
    vel = np.tile((10.0, 0.0, 0.0), (40, 1))
    landed = np.arange(40) < 20
    state = FrameState(0, pos, vel, np.full(40, 7.0), np.zeros(40, bool), landed=landed)
    drawn = state.draw(Canvas(scene.output.size), scene)
    flying = FrameState(0, pos[~landed], vel[~landed], np.full(20, 7.0), np.zeros(20, bool))
    alone = flying.draw(Canvas(scene.output.size), scene)
    assert np.array_equal(drawn, alone) == (landed_key == "hidden")


@pytest.mark.parametrize("landed_key", ["ground", "hidden"])
def test_the_cameras_drawing_hides_landed_birds_when_asked(landed_key):
    from render.draw.surface import Canvas
    from render.draw3d.camera import pose_at
    from render.scene.load import build_scene
    from render.states import FrameState

    raw = {"world": {"dimensions": 3, "width": 60.0, "height": 40.0},
           "flock": {"count": 40}, "rules": {"neighbours": "topological"}, "flight": {},
           "roost": {"landing_at": 1.0, "landed": landed_key},
           "camera": {"position": [30.0, -30.0, 10.0], "look_at": [30.0, 20.0, 10.0]},
           "output": {"size": "160x120"}, "scene": {"duration": 2.0}}
    scene = build_scene(raw, "s.toml")
    pose = pose_at(scene, 0.0, None, *scene.output.size)
    pos = RNG.uniform((15, 15, 2), (45, 25, 18), (40, 3))
    vel = np.tile((10.0, 0.0, 0.0), (40, 1))
    landed = np.arange(40) % 2 == 0
    bank = np.full(40, 0.1)
    state = FrameState(0, pos, vel, np.full(40, 7.0), np.zeros(40, bool), pose=pose,
                       bank=bank, landed=landed)
    drawn = state.draw(Canvas(scene.output.size), scene)
    flying = FrameState(0, pos[~landed], vel[~landed], np.full(20, 7.0), np.zeros(20, bool),
                        pose=pose, bank=bank[~landed])
    alone = flying.draw(Canvas(scene.output.size), scene)
    assert np.array_equal(drawn, alone) == (landed_key == "hidden")


def test_the_hawk_climbs_away_to_a_bounded_height_and_attacks_again():
    from types import SimpleNamespace

    from render.sim.forces.hunt import CEILING, HawkFlight

    s = SimpleNamespace(start=0.0, speed=20.0, dive_speed=30.0, turn_rate=90.0,
                        dive_height=30.0, climb_time=4.0, period=12.0, target="alternate")
    rng = np.random.default_rng(5)
    n, dt = 200, 0.01
    pos = rng.normal(size=(n, 3)) * (15.0, 6.0, 2.0) + (0.0, 0.0, 50.0)
    vel = np.tile((10.0, 0.0, 0.0), (n, 1))
    kth = rng.random(n)
    hawk, heights, attacking = HawkFlight(), [], []
    for step in range(round(90.0 / dt)):
        t = step * dt
        hawk.step(s, t, dt, pos + vel * t, vel, kth, 45.0)  # the landing at 45 s
        heights.append(hawk.pos[2] - 50.0)
        attacking.append(hawk.attacking(t))
    assert hawk.attacks >= 3
    # Over the flock's mid-plane (its birds within a few metres): the ceiling, plus the
    # little a levelling turn overshoots.
    assert max(heights) <= CEILING * s.dive_height + 3.0
    assert np.mean(attacking[:4500]) <= 0.5 and not any(attacking[5000:])


def test_the_hawk_startles_birds_only_while_it_dives_and_climbs_away():
    """A pursuing hawk flies dive_height over its target, within the startle range of the
    flock's upper birds; if they zigged at it then, they were all refractory when it
    dived. Over a flock 30 m thick, the pursuit passes within range of birds, yet the
    startle is out only in the dive and the climb."""
    from types import SimpleNamespace

    from render.sim.forces.hunt import HawkFlight

    s = SimpleNamespace(start=0.0, speed=20.0, dive_speed=30.0, turn_rate=90.0,
                        dive_height=30.0, climb_time=4.0, period=12.0, target="alternate",
                        radius=20.0, strength=8.0)
    rng = np.random.default_rng(7)
    n, dt = 400, 0.01
    pos = rng.normal(size=(n, 3)) * (15.0, 6.0, 10.0) + (0.0, 0.0, 50.0)
    vel = np.tile((10.0, 0.0, 0.0), (n, 1))
    hawk, near_in_pursuit, phases = HawkFlight(), 0, set()
    for step in range(round(40.0 / dt)):
        t = step * dt
        now = pos + vel * t
        hawk.step(s, t, dt, now, vel, rng.random(n), math.inf)
        out = hawk.startle(s).out
        assert out == (hawk.phase in ("dive", "climb")), (t, hawk.phase)
        phases.add(hawk.phase)
        if hawk.phase == "pursue":
            near_in_pursuit += np.any(((now - hawk.pos) ** 2).sum(axis=1) < s.radius ** 2)
    assert {"pursue", "dive", "climb"} <= phases and near_in_pursuit > 0


def test_the_hawk_begins_zigs_only_within_its_window_after_its_first():
    """hawk.zig_window: the hawk's own zigs in an attack (the waves' sources) all begin
    within the window after its first, and the waves spread from that one pulse; unset,
    the hawk begins them all along its dive and climb."""
    from conftest import SCENES
    from render.scene import load_scene, parse_override
    from render.scene.load import build_scene
    from render.sim.simulate3d import Simulation3D

    spans, copied = {}, {}
    for window in (None, 0.1):
        values = ["flock.count=1500", "scene.settle_steps=0", "hawk.start=0.5"]
        body = load_scene(SCENES / "murmuration.toml",
                          [(*parse_override(v), v) for v in values]).to_dict()
        if window is None:  # the film's window left unset
            del body["hawk"]["zig_window"]
        else:
            body["hawk"]["zig_window"] = window
        sim = Simulation3D(build_scene(body, "film.toml"), cache=False)
        while not sim.finale.done and sim.time_s < 30.0:
            sim.advance()
        attack = sim.finale.done[0]
        began = np.concatenate(attack.source_t)
        spans[window] = began.max() - began.min()
        copied[window] = np.isfinite(attack.first).sum() - len(began)
    assert spans[0.1] <= 0.1 + 1e-9 < 0.5 < spans[None]
    assert copied[0.1] > 100  # the waves still spread from the pulse


def test_an_edge_attack_aims_at_the_flank_facing_the_hawk():
    """A sheet 4 times longer (x) than wide (y), the hawk behind it and off to +y: the
    edge is the tenth of the middle third of its length (by |x|) farthest toward +y, and
    the target the densest of those, not a denser bird at the tip nearest the hawk (where
    the hawk, coming from behind, aimed before) or on the far flank."""
    from render.sim.forces.hunt import choose_target

    rng = np.random.default_rng(9)
    pos = rng.normal(size=(300, 3)) * (40.0, 10.0, 2.0) + (5.0, -3.0, 50.0)
    rel = pos - pos.mean(axis=0)
    middle = np.flatnonzero(np.abs(rel[:, 0]) <= np.sort(np.abs(rel[:, 0]))[100])
    flank = middle[np.argsort(rel[middle, 1])[-10:]]
    kth = np.full(300, 4.0)
    kth[flank[3]] = 1.0                                 # the densest of the flank
    kth[np.argmin(pos[:, 0])] = 0.5                     # the tip nearest the hawk
    kth[middle[np.argmin(rel[middle, 1])]] = 0.5        # the far flank
    hawk = np.array([-200.0, 40.0, 80.0])
    assert choose_target("edge", 1, pos, kth, hawk) == flank[3]
    assert choose_target("alternate", 1, pos, kth, hawk) == flank[3]
    assert choose_target("alternate", 0, pos, kth, hawk) in (np.argmin(pos[:, 0]),
                                                             middle[np.argmin(rel[middle, 1])])
    assert choose_target("edge", 1, pos, kth, hawk * (1, -1, 1)) == \
        middle[np.argmin(rel[middle, 1])]
    assert choose_target("edge", 1, pos[:1], kth[:1], hawk) == 0


def test_an_edge_target_is_chosen_again_during_the_pursuit():
    """The flank chosen at the climb-out turns with the flock over a pursuit: every
    RETARGET seconds the hawk takes the flank facing it as it is then (here the flock
    slides across the hawk's path, from its left to its right). A dense target is kept."""
    from types import SimpleNamespace

    from render.sim.forces.hunt import RETARGET, HawkFlight, choose_target

    rng = np.random.default_rng(3)
    pos = rng.normal(size=(300, 3)) * (40.0, 10.0, 2.0) + (0.0, 0.0, 50.0)
    moved = pos + (0.0, 100.0, 0.0)
    vel = np.tile((10.0, 0.0, 0.0), (300, 1))
    kth = rng.random(300)
    for mode, again in (("edge", True), ("dense", False)):
        s = SimpleNamespace(start=0.0, speed=20.0, dive_speed=30.0, turn_rate=90.0,
                            dive_height=30.0, climb_time=4.0, period=100.0, target=mode,
                            radius=15.0, strength=8.0)
        hawk, dt, changed = HawkFlight(phase="pursue", pos=np.array([-150.0, 50.0, 80.0]),
                                       vel=np.array([20.0, 0.0, 0.0])), 0.01, []
        hawk.step(s, 0.0, dt, pos, vel, kth, math.inf)
        first = hawk.target
        for step in range(1, round(1.5 * RETARGET / dt)):
            hawk.step(s, step * dt, dt, moved, vel, kth, math.inf)
            assert hawk.phase == "pursue"
            if hawk.target != first and not changed:
                changed.append(step * dt)
        assert bool(changed) == again, mode
        assert not changed or RETARGET <= changed[0] < RETARGET + 2 * dt


def _line_attack(first, direct, origin, start=1.0):
    """An attack over birds 0.5 m apart on a line (the flock's frame), each first zigging
    at `first` (s), the `direct` ones the hawk's own zigs (its sources), from `origin`."""
    from render.sim.hunt3d import Attack

    x = np.arange(len(first)) * 0.5
    where = np.column_stack([x, np.zeros_like(x), np.zeros_like(x)])
    return Attack(start, 10.0, first, where, direct, direct.copy(), origin,
                  [first[direct]], [where[direct]])


def test_the_wave_front_speed_reads_every_source():
    """Worked by hand: 201 birds 0.5 m apart on a line in the flock's frame. The hawk
    startles the bird at 0 m at 1 s and the one at 60 m at 2 s; every other bird zigs when
    the first front moving at 15 m/s reaches it, from either. Every copied bird reads 15
    m/s; a slope fitted from the first startle alone read the birds past 60 m as a front
    going backwards. Under 10 copied birds: NaN."""
    x = np.arange(201) * 0.5
    first = np.minimum(1.0 + x / 15.0, 2.0 + np.abs(x - 60.0) / 15.0)
    direct = (x == 0.0) | (x == 60.0)
    origin = np.where(1.0 + x / 15.0 <= 2.0 + np.abs(x - 60.0) / 15.0, 1.0, 2.0)
    a = _line_attack(first, direct, origin)
    assert a.wave_speed() == pytest.approx(15.0, rel=1e-12) and a.wave_speed() is a._speed
    few = np.where(x < 4.0, first, np.nan)
    assert math.isnan(_line_attack(few, direct, origin).wave_speed())


def test_the_wave_front_speed_leaves_out_a_wave_begun_before_the_attack():
    """Worked by hand: the hawk's pursuit began a wave from the bird at 100 m at 0 s,
    running at 40 m/s (2.5 s to the line's ends); the dive at 1 s startles the bird at 0
    m and begins a front at 15 m/s. Each bird zigs with whichever reaches it first. Read
    from the dive's one source, the birds the older wave reached first make a front far
    faster than 15 m/s; left out by their origin, the front reads 15 m/s."""
    x = np.arange(201) * 0.5
    old, new = np.abs(x - 100.0) / 40.0, 1.0 + x / 15.0
    first = np.where(x == 100.0, np.nan, np.minimum(old, new))  # its zig before the attack
    first[x == 0.0] = 1.0
    direct = x == 0.0
    origin = np.where(new <= old, 1.0, 0.0)
    origin[direct] = 1.0
    a = _line_attack(first, direct, origin)
    assert (origin == 0.0).sum() > 100  # the older wave reached most birds first
    assert a.wave_speed() == pytest.approx(15.0, rel=1e-12)
    mixed = _line_attack(first, direct, np.ones_like(origin))  # without the origins
    assert mixed.wave_speed() > 20.0


def test_every_bird_the_hawk_comes_near_counts_as_startled_not_only_its_own_zigs():
    """Worked by hand: 10 birds on a line 10 m apart, the hawk flying along it at 10 m/s
    from x = −15 m (startle range 12 m), a wave running ahead of it at 20 m/s from the
    bird at 0 m. Every bird the hawk comes within 12 m of is startled; only the bird at
    0 m, the wave's first, began its zig within the hawk's range (the wave's source):
    the others already zigged when the hawk reached them. Past 35 m the hawk pursues
    again (an attack's last seconds) and startles nobody."""
    from render.sim.hunt3d import Attack

    n, dt = 10, 0.1
    x = np.arange(n) * 10.0
    pos = np.column_stack([x, np.zeros(n), np.full(n, 50.0)])
    zig_at = np.round((0.5 + x / 20.0) / dt).astype(int)   # steps: the wave from 0.5 s
    a = Attack.open(0.0, n)
    for step in range(71):  # out until it reaches x = 35 m, then pursuing on to 55 m
        hawk = Startle(step <= 50, -15.0 + 10.0 * step * dt, 0.0, 50.0, 12.0, 8.0)
        a.note(step * dt, pos, hawk, zig_at == step, np.full(n, 0.5))
    assert np.flatnonzero(a.reached).tolist() == [0, 1, 2, 3, 4]  # within 12 m of 35 m
    assert np.flatnonzero(a.direct).tolist() == [0]
    assert a.startled_share() == 0.5 and a.source_share() == 0.1
    assert np.allclose(a.first, zig_at * dt) and a.zigged_share() == 1.0
    assert len(a.source_t) == 1 and a.source_t[0].tolist() == [0.5]


def test_the_measures_leave_landed_birds_out():
    """A state with a third of its birds on the ground, at rest, measures as its birds in
    the air alone, the landed share aside (the ground birds' zero speed and close
    spacing read as the flock's); all down, the flock's measures are empty."""
    from fractions import Fraction

    from render.scene.load import build_scene
    from render.sim.diagnostics3d import measure3
    from render.sim.snapshot import Snapshot

    scene = build_scene({"world": {"dimensions": 3}, "flock": {"count": 300},
                         "rules": {"neighbours": "topological"}, "flight": {}, "roost": {},
                         "output": {"fps": 2}}, "s.toml")
    n = 300
    pos, vel, _, _, _ = _flock(n)
    landed = RNG.random(n) < 0.3
    pos[landed, 2], vel[landed] = 0.0, 0.0
    bank = RNG.normal(size=n) * 0.2
    counts = RNG.integers(0, 8, n)

    def snapshot(rows, down):
        return Snapshot(0, pos[rows], vel[rows], counts[rows], counts[rows] * 3,
                        np.ones(int(np.count_nonzero(rows))), bank=bank[rows], landed=down)

    everyone = np.ones(n, bool)
    mixed = measure3(snapshot(everyone, landed), scene, Fraction(0))
    alone = measure3(snapshot(~landed, np.zeros(int((~landed).sum()), bool)), scene,
                     Fraction(0))
    assert mixed.pop("landed_share") == pytest.approx(landed.mean())
    assert alone.pop("landed_share") == 0.0
    assert math.isfinite(mixed["border_ratio"]) and math.isfinite(mixed["speed_p10"])
    np.testing.assert_equal(mixed, alone)
    down = measure3(snapshot(everyone, everyone), scene, Fraction(0))
    assert down["landed_share"] == 1.0
    assert all(math.isnan(down[k]) for k in ("speed_p50", "extent_major_m",
                                             "global_polarisation", "cluster_share"))


def test_the_small_passes_give_the_same_bits_serial_and_parallel(monkeypatch):
    """Under jit.SERIAL_BELOW birds the passes around a 3D step (`jit.sized`: the gathers
    into grid order and back, the drifts, the zigs, the hunt's and the landing's steering
    and states) run serially; flown with them parallel instead, a hunt with its zigs and a
    landing stay the same bits."""
    from pathlib import Path

    from render.scene import load_scene
    from render.sim import jit
    from render.sim.forces import hunt
    from render.sim.simulate import Simulation

    monkeypatch.setattr(hunt, "STANDOFF", 20.0)  # the hawk dives within the test's seconds
    scene = load_scene(Path(__file__).parents[1] / "scenes" / "murmuration.toml",
                       [("flock.count", "600", "test"), ("scene.settle_steps", "0", "test"),
                        ("hawk.start", "0.0", "test"), ("roost.landing_at", "1.0", "test"),
                        ("roost.landing_spread", "0.5", "test"),
                        ("roost.altitude", "6.0", "test")])
    runs = []
    for below in (jit.SERIAL_BELOW, 0):
        monkeypatch.setattr(jit, "SERIAL_BELOW", below)
        sim = Simulation(scene, cache=False)
        for _ in range(300):
            sim.advance()
        fin = sim.finale
        runs.append((sim.positions, sim.velocities, sim.bank, fin.state, fin.zig_start))
    assert (runs[0][4] >= 0).sum() >= 10  # birds zigged
    assert (runs[0][3] == landing.LANDED).sum() >= 10
    for serial, parallel in zip(*runs):
        np.testing.assert_array_equal(serial, parallel)


@pytest.mark.parametrize("start, frames, says", [
    (5.0, 90, "the hunting hawk sets out at hawk.start (5 s), after the last frame (89, at "
              "2.97 s)"),
    (0.0, 90, "the hunting hawk set out at hawk.start (0 s) behind the flock and had not "
              "dived by the last frame (89, at 2.97 s): render further"),
    (0.0, 135, None)])
def test_a_clip_that_ends_before_the_hunts_first_attack_says_so(cli, tmp_path, start,
                                                                 frames, says):
    """The hunting hawk sets out 150 m behind the flock: a short clip ends before it
    dives, and shows a hawk that never attacks. The render says so, whether the hawk was
    still to set out or had not reached the flock; at 40 m/s from 0 s it first dives at
    4 s (frame 120 at 30 fps), and a clip through that attack says nothing."""
    from conftest import SCENES

    r = cli(SCENES / "murmuration.toml", "-o", tmp_path / "f.npz", "--frames", frames,
            "--set", "flock.count=300", "--set", "scene.settle_steps=0", "--set",
            f"hawk.start={start}", "--set", "hawk.speed=40", "--set", "hawk.dive_speed=45",
            "--stats", tmp_path / "f.csv")
    assert r.code == 0, r.err
    attacked = np.loadtxt(tmp_path / "f.csv", delimiter=",", skiprows=1,
                          usecols=25).any()  # the attack column
    assert attacked == (says is None)
    notes = [line for line in r.err_lines if "no attack" in line]
    assert notes == ([] if says is None else [f"boids-render: no attack in these frames: {says}"
                                              + ("" if start else ", or set hawk.start "
                                                 "earlier")])


@pytest.mark.parametrize("extra", [("--frames", "30:90"),
                                   ("--frames", "90", "--set", "roost.landing_at=1.0")])
def test_no_attack_goes_unsaid_where_the_clip_cannot_tell_or_none_could_come(cli, tmp_path,
                                                                             extra):
    """An excerpt that starts after frame 0 may follow an attack it does not show, and once
    the landing begins no attack does: neither says the hawk has yet to dive."""
    from conftest import SCENES

    r = cli(SCENES / "murmuration.toml", "-o", tmp_path / "f.npz", *extra, "--set",
            "flock.count=300", "--set", "scene.settle_steps=0", "--set", "hawk.start=0",
            "--stats", tmp_path / "f.csv")
    assert r.code == 0, r.err
    assert not np.loadtxt(tmp_path / "f.csv", delimiter=",", skiprows=1, usecols=25).any()
    assert not [line for line in r.err_lines if "no attack" in line]
