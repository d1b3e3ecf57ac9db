"""Seamless loops of the 3D murmuration: the five measures (render.loop.SeamMeter) on the
film at the tests' size (1,000 birds, 320x180, 3 s, a 0.5 s morph, the camera following
the flock), the same clip without --loop, the dissolve; what a 3D loop refuses."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from conftest import SCENES
from dissolve import dissolved

FRAMES, CROSSFADE = 90, 15
# The film turns back to its roost hard enough to fold 20,000 birds; a flock of a few
# thousand is given the gentler turn docs/starlings.md names for it, which these tests'
# flocks (1,000–5,000 birds) were measured with.
GENTLE = ("roost.radius=60.0", "roost.return_cap=2.5")
SETTINGS = ("flock.count=1000", "scene.settle_steps=300", "output.size=320x180",
            "output.fps=30", f"output.frames={FRAMES}", "camera.follow=centroid", *GENTLE)
LOOP = ("output.loop=true", "output.crossfade=0.5")


def film(*settings: str):
    """The 3D murmuration at the tests' size, with `settings` over SETTINGS."""
    from render.scene import load_scene, parse_override

    values = [*SETTINGS, *settings]
    return load_scene(SCENES / "murmuration.toml",
                      [(*parse_override(v), v) for v in values])


def metered(scene, states, *, plain: bool = False, crossfade: int = CROSSFADE):
    """The SeamMeter of `states` drawn at the scene's size, and the states' banks
    (`plain`: a clip that is not a loop, the morph's frames taken in its middle;
    `crossfade`: the morph's frames)."""
    from render.draw.surface import Canvas
    from render.loop import SeamMeter

    meter = SeamMeter(scene, crossfade, window=(FRAMES - crossfade) // 2 if plain else 0)
    banks, positions = [], []
    for state in states:
        meter.add_state(state)
        meter.add(state.draw(Canvas(scene.output.size), scene))
        banks.append(state.bank)
        positions.append(state.positions)
    return meter, np.array(banks), np.array(positions)


@pytest.fixture(scope="module")
def meters():
    """The film's measures: the plain clip, the loop, the dissolve; and the plain clip's
    frames from 0 to past the loop's tail, to compare the loop's frames with."""
    from render.sim.loop import loop_start
    from render.sim.simulate import frames
    from render.states import detached, simulated, simulation

    plain, loop = film(), film(*LOOP)
    start = loop_start(loop, FRAMES, CROSSFADE)
    longer = film(f"output.frames={start + FRAMES + CROSSFADE}")
    sim = simulation(loop)
    old = dissolved(loop, frames(sim, loop.output.fps, FRAMES), FRAMES, CROSSFADE)
    return {"plain": metered(plain, simulated(plain, 0, FRAMES), plain=True),
            "loop": metered(loop, simulated(loop, 0, FRAMES)),
            "dissolve": metered(loop, detached(loop, old, sim.accent)),
            "start": start,
            "long": [(s.positions, s.bank)
                     for s in simulated(longer, 0, start + FRAMES + CROSSFADE)]}


def test_four_measures_pass_on_the_film_without_a_loop(meters):
    # The bands are the clip's own: uninterrupted flight passes them (the wrap aside).
    plain, _, _ = meters["plain"]
    held = plain.passes(wrap=False)
    assert {k: v for k, v in held.items() if k != "steps"} == {
        "alignment": True, "ink": True, "speed": True, "camera": True}, plain.report()
    m = plain.measures(wrap=False)
    assert m["fading"] == 0.0 and m["camera_turn"] > 0  # the camera follows, smoothly


def test_the_steps_pass_on_the_film_without_a_loop(meters):
    # The following camera pans, and the horizon moves through the frame: its rows are
    # drawn ray by ray (the ground's haze turns within a row), not smeared over the
    # sky's grid, so its steps stay those of the flight.
    plain, _, _ = meters["plain"]
    assert plain.passes(wrap=False)["steps"], plain.report()


def test_the_loop_is_the_film_from_its_start_after_the_morph(meters):
    _, _, positions = meters["loop"]
    start, long = meters["start"], meters["long"]
    assert np.array_equal(positions[0], long[start + FRAMES][0]), "frame 0 follows the last"
    for i in range(CROSSFADE, FRAMES):
        assert np.array_equal(positions[i], long[start + i][0])


def test_the_morph_flies_on_from_the_search_as_from_the_start_in_3d(meters):
    # The hunt's hawk, the waves and the banks are in the copies the search keeps: the
    # guided tail flown on from them is the one flown from the start, to the bit.
    from render.sim import loop as sim_loop
    from render.sim.loop import Guided, search
    from render.sim.simulate import frames

    loop = film(*LOOP)
    sim_loop._SEARCHES.clear()  # searched again, keeping what a render keeps
    found = search(loop, FRAMES, CROSSFADE, keep=True)
    assert found.tail is not None and found.head is not None
    assert found.start == meters["start"]
    flown = [frames(Guided(loop, found.partner, found.start, FRAMES, CROSSFADE, tail,
                           head=head), 30, CROSSFADE, first=found.start + FRAMES)
             for tail, head in ((found.tail, found.head), (None, None))]
    for a, b in zip(*flown):
        assert np.array_equal(a.positions, b.positions) and np.array_equal(a.bank, b.bank)


def test_the_dissolve_fails_the_alignment_measure_in_3d(meters):
    dissolve, _, _ = meters["dissolve"]
    assert not dissolve.passes()["alignment"], dissolve.report()
    assert dissolve.passes()["ink"], dissolve.report()  # each bird drawn once
    assert dissolve.measures()["fading"] > 0.9  # and every bird jumps


@pytest.mark.xfail(strict=True, reason="since the film's split settings, the morph's "
                   "frames 9–12 of 15, as the residual begins to close, read 0.415–0.428 "
                   "against a band up to 0.427 (the flight's own frames at most 0.393) on "
                   "this 1,000-bird clip; the web loop's 20,000 birds hold it (open)")
def test_the_morph_keeps_the_alignment(meters):
    loop, _, _ = meters["loop"]
    assert loop.passes()["alignment"], loop.report()


def test_the_morph_lets_fewer_birds_jump_and_turns_the_camera_less(meters):
    loop, _, _ = meters["loop"]
    dissolve, _, _ = meters["dissolve"]
    assert loop.measures()["fading"] < 0.5 * dissolve.measures()["fading"]
    # Measured, not yet passed (docs/loops.md): the flock 3 s on is elsewhere, and the
    # camera carried back to where it looked at the start pans faster than it follows.
    assert loop.measures()["camera_turn"] < dissolve.measures()["camera_turn"]


def test_banks_end_on_the_partners_and_stay_in_flight_range(meters):
    # The morph turns each bird's bank toward its partner's, and the clip's own frame
    # (index CROSSFADE) draws that partner in its own row: the step from a morph row into
    # its partner's row is no larger than the film's own bank steps, but for the birds
    # that switch (at most the share the speed measure counts); no morph bank is steeper
    # than the film's own, head and tail. Row by row the step reads the permutation: a
    # quarter of the rows are their own partners, and 6.5% of the rows step over 14°.
    from render.sim.loop import search

    loop, banks, _ = meters["loop"]
    partner = search(film(*LOOP), FRAMES, CROSSFADE).partner
    film_banks = np.array([bank for _, bank in meters["long"]])
    into = np.abs(banks[CROSSFADE][partner] - banks[CROSSFADE - 1])
    ordinary = np.abs(np.diff(film_banks, axis=0)).max()
    assert np.mean(into > ordinary) <= loop.measures()["fading"] + 0.01
    assert np.mean(np.abs(banks[CROSSFADE] - banks[CROSSFADE - 1]) > ordinary) > 0.01
    assert np.abs(banks[:CROSSFADE]).max() <= np.abs(film_banks).max() + 1e-9


@pytest.fixture(scope="module")
def tracked():
    """The plain clip and the loop under a tracking camera (camera.follow = "track")."""
    from render.states import simulated

    plain, loop = film("camera.follow=track"), film("camera.follow=track", *LOOP)
    looped = metered(loop, simulated(loop, 0, FRAMES))
    return {"plain": metered(plain, simulated(plain, 0, FRAMES), plain=True)[0],
            "loop": looped[0], "positions": looped[2]}


def test_a_tracking_camera_closes_the_loop(meters, tracked):
    # It flies level with the flock and never turns, so the loop's camera closes where
    # the looking follow's pans back (measure 5); the sky stands still through it all.
    loop, plain = tracked["loop"], tracked["plain"]
    assert loop.passes()["camera"] and not meters["loop"][0].passes()["camera"], \
        loop.report()
    m = loop.measures()
    assert m["camera_turn"] == 0.0 and m["camera_move"] < 1e-9
    held = plain.passes(wrap=False)
    assert {k: held[k] for k in ("alignment", "ink", "speed", "camera")} == {
        "alignment": True, "ink": True, "speed": True, "camera": True}, plain.report()


def test_the_shipped_web_loop_renders_as_a_loop(cli, tmp_path):
    # scenes/web-loop.toml as the command line gives it, at a size CI can afford.
    import imageio_ffmpeg

    out = tmp_path / "loop.webm"
    r = cli(SCENES / "web-loop.toml", "-o", out, "--size", "160x90", "--duration", "2",
            "--crossfade", "0.5", "--set", "flock.count=1000", "--set",
            "scene.settle_steps=300")
    assert r.code == 0, r.err
    assert "loop seam (starts at t₀ = " in r.err and "carried across the loop" in r.err
    assert imageio_ffmpeg.count_frames_and_secs(str(out))[0] == 60


def heading(velocities) -> float:
    """The azimuth of a flock's mean horizontal velocity, radians."""
    return float(np.angle(velocities[:, 0].sum() + 1j * velocities[:, 1].sum()))


def turned_about_centroid(positions, angle):
    """positions (n, 3) turned by `angle` about the vertical through their mean, by
    complex multiplication."""
    centre = positions.mean(axis=0)
    z = (positions[:, 0] - centre[0] + 1j * (positions[:, 1] - centre[1])) * np.exp(1j * angle)
    return np.column_stack([centre[0] + z.real, centre[1] + z.imag, positions[:, 2]])


def test_turned_by_hand():
    from render.sim.loop import turned

    quarter = math.pi / 2
    assert np.allclose(turned(np.array([[1.0, 0.0, 5.0]]), quarter), [[0.0, 1.0, 5.0]])
    assert np.allclose(turned(np.array([[2.0, 1.0, 3.0]]), quarter, (1.0, 1.0, 9.0)),
                       [[1.0, 2.0, 3.0]])
    still = np.array([[2.0, 1.0, 3.0]])
    assert turned(still, 0.0, (1.0, 1.0, 0.0)) is still


def test_the_flock_s_turn_by_hand():
    from render.sim.loop import flock_turn

    east, north = np.tile([10.0, 0.0, 1.0], (4, 1)), np.tile([0.0, 10.0, -1.0], (4, 1))
    tracked = film("camera.follow=track")
    assert flock_turn(tracked, north, east) == pytest.approx(math.pi / 2)
    assert flock_turn(tracked, east, north) == pytest.approx(-math.pi / 2)
    # from 170° to −170° is 20° on, not 340° back
    at = [np.tile([math.cos(math.radians(a)), math.sin(math.radians(a)), 0.0], (3, 1))
          for a in (170.0, -170.0)]
    assert flock_turn(tracked, at[1], at[0]) == pytest.approx(math.radians(20.0))
    # a camera that pans to look at the flock, or stands still, sees its path: no turn
    for follow in ("centroid", "none"):
        assert flock_turn(film(f"camera.follow={follow}"), north, east) == 0.0


def test_the_flock_s_stretch_by_hand():
    # A head laid out twice as long along x and half as thick as the tail (the same birds)
    # is stretched back exactly; any two layouts: the map is symmetric and carries the
    # head's second moments onto the tail's (S·Ch·S = Ct), which defines it.
    from render.sim.loop import flock_shape

    tracked = film("camera.follow=track")
    rng = np.random.default_rng(3)
    tail = rng.normal(size=(500, 3)) * [20.0, 8.0, 3.0] + [300.0, 100.0, 50.0]
    head = tail.mean(axis=0) + (tail - tail.mean(axis=0)) * [2.0, 1.0, 0.5]
    assert np.allclose(flock_shape(tracked, tail, head), np.diag([0.5, 1.0, 2.0]),
                       rtol=0, atol=1e-12)
    head = rng.normal(size=(500, 3)) @ rng.normal(size=(3, 3)) + [290.0, 90.0, 45.0]
    shape = flock_shape(tracked, tail, head)
    assert np.allclose(shape, shape.T, rtol=0, atol=1e-12)
    assert np.all(np.linalg.eigvalsh(shape) > 0.0)
    assert np.allclose(shape @ np.cov(head.T) @ shape, np.cov(tail.T), rtol=1e-9)
    # a flock with no thickness, or a camera that does not track it: no stretch
    assert flock_shape(tracked, tail, head * [1.0, 1.0, 0.0]) is None
    for follow in ("centroid", "none"):
        assert flock_shape(film(f"camera.follow={follow}"), tail, head) is None


def expected_carry(turn: float, shape: np.ndarray, t: float) -> np.ndarray:
    """R(−t·turn)·S⁻ᵗ, from scipy's fractional matrix power."""
    from scipy.linalg import fractional_matrix_power

    c, s = math.cos(-t * turn), math.sin(-t * turn)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ \
        np.real(fractional_matrix_power(shape, -t))


def about_centroid(points: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    centre = points.mean(axis=0)
    return centre + (points - centre) @ matrix.T


def test_a_tracked_loop_is_the_film_turned_and_stretched_steadily():
    # Frame i is the film's frame t₀ + i mapped about its centroid by i/FRAMES of the
    # flock's turn and stretch from the morph's middle to a clip later taken back,
    # R(−t·turn)·S⁻ᵗ, its birds' velocities turned alone, and frame 0 (the tail) by all
    # of it: the heading and the layout the loop comes round to are those it starts
    # with. The flock's rise or fall over the clip is taken back steadily too.
    from scipy.linalg import sqrtm

    from render.sim.loop import search
    from render.states import simulated

    loop = film("camera.follow=track", *LOOP)
    found = search(loop, FRAMES, CROSSFADE)
    start, middle = found.start, CROSSFADE // 2
    longer = film("camera.follow=track", f"output.frames={start + FRAMES + CROSSFADE}")
    film_frames = [(s.positions, s.velocities)
                   for s in simulated(longer, 0, start + FRAMES + CROSSFADE)]
    tail, head = film_frames[start + FRAMES + middle], film_frames[start + middle]
    turn = np.angle(np.exp(1j * (heading(tail[1]) - heading(head[1]))))
    assert found.turn == pytest.approx(turn, abs=1e-12)
    # It turns (−13.6° here): a frame turned by 0.01 rad moves a bird 10 m from the centroid
    # 0.1 m, far past the tolerance below, and at 0 the checks would prove nothing.
    assert abs(turn) > 0.01
    spread_h = np.cov(turned_about_centroid(head[0], turn).T)
    root = np.real(sqrtm(spread_h))
    inverse = np.linalg.inv(root)
    shape = inverse @ np.real(sqrtm(root @ np.cov(tail[0].T) @ root)) @ inverse
    assert np.allclose(found.shape, shape, rtol=0, atol=1e-9)
    # and it stretches: one axis of the sheet by a quarter in 3 s here
    assert np.abs(np.log(np.linalg.eigvalsh(shape))).max() > 0.2
    drawn = list(simulated(loop, 0, FRAMES))
    lift = film_frames[start + FRAMES][0][:, 2].mean() - film_frames[start][0][:, 2].mean()
    assert abs(lift) > 0.01
    whole = expected_carry(turn, shape, 1.0)
    assert np.allclose(drawn[0].positions,
                       about_centroid(film_frames[start + FRAMES][0], whole) - [0, 0, lift],
                       rtol=0, atol=1e-7)
    for i in range(CROSSFADE, FRAMES):
        share = (i - CROSSFADE) / (FRAMES - CROSSFADE)
        positions, velocities = film_frames[start + i]
        assert np.allclose(drawn[i].positions, about_centroid(
            positions, expected_carry(turn, shape, i / FRAMES)) - [0, 0, share * lift],
            rtol=0, atol=1e-7)
        assert np.allclose(drawn[i].velocities, turned_vectors(velocities, -turn * i / FRAMES),
                           rtol=0, atol=1e-9)


def turned_vectors(vectors, angle):
    """(n, 3) vectors turned by `angle` about the vertical, by complex multiplication."""
    z = (vectors[:, 0] + 1j * vectors[:, 1]) * np.exp(1j * angle)
    return np.column_stack([z.real, z.imag, vectors[:, 2]])


def screen_places(states) -> np.ndarray:
    """Each state's flock centroid on screen, px (n, 2), through its camera."""
    out = []
    for state in states:
        pose = state.pose
        offset = state.positions.mean(axis=0) - pose.position
        depth = offset @ pose.forward
        out.append(pose.focal * np.array([offset @ pose.right, offset @ pose.up]) / depth)
    return np.array(out)


def test_the_flock_keeps_its_place_in_a_tracking_frame_across_the_wrap(monkeypatch):
    # A tracking camera trails its flock by some 30 m, a few metres more or less as the
    # flock speeds up and turns, and the flock rises and sinks on the roost's spring: the
    # clip's end and start differ by that much, taken back over the whole clip. Left to
    # the morph, the flock slid across the frame three times as fast as with it.
    from render.sim import loop as sim_loop
    from render.states import simulated

    def moves(scene):
        places = screen_places(simulated(scene, 0, FRAMES))
        return np.sqrt((np.diff(np.vstack([places, places[:1]]), axis=0) ** 2).sum(axis=1))

    loop = film("camera.follow=track", *LOOP)
    sim_loop._SEARCHES.clear()
    trailed = moves(loop)
    monkeypatch.setattr(sim_loop, "trailed", lambda frame, slide, share: frame)
    sim_loop._SEARCHES.clear()
    left = moves(loop)
    sim_loop._SEARCHES.clear()
    assert trailed[:CROSSFADE].max() < 0.5 * left[:CROSSFADE].max(), (trailed, left)
    # and the wrap itself moves it as the frames on either side do
    assert trailed[-1] <= 1.1 * max(trailed[-2], trailed[0]), trailed


def test_the_stretch_brings_the_pairs_together(monkeypatch):
    # The film 3 s on is laid out unlike its start (its sheet a quarter longer here):
    # paired across that change, a tenth of the birds lay 8 m or more from their partners
    # at the morph's middle; paired in the tail's layout, the same birds 3 m, and more of
    # the pairs can glide.
    from render.sim import loop as sim_loop
    from render.sim.simulate import Simulation
    from render.states import simulated

    loop = film("camera.follow=track", *LOOP)
    found = sim_loop.search(loop, FRAMES, CROSSFADE)
    middle = CROSSFADE // 2
    longer = film("camera.follow=track", f"output.frames={found.start + FRAMES + CROSSFADE}")
    wanted = (found.start + middle, found.start + FRAMES + middle)
    at = {s.index: (s.positions, s.velocities)
          for s in simulated(longer, 0, found.start + FRAMES + CROSSFADE) if s.index in wanted}
    accent = np.asarray(Simulation(loop).accent, bool)

    def gaps():
        partner, glide, _, _, (tail, head) = sim_loop._paired(loop, at[wanted[1]],
                                                              at[wanted[0]], accent, CROSSFADE)
        gap = head[0][partner] - tail[0]
        gap -= gap.mean(axis=0)
        return np.percentile(np.sqrt((gap * gap).sum(axis=1)), 90), glide.mean()

    stretched = gaps()
    monkeypatch.setattr(sim_loop, "flock_shape", lambda *args: None)
    turned_only = gaps()
    assert stretched[0] < 0.5 * turned_only[0], (stretched, turned_only)
    assert stretched[1] > turned_only[1], (stretched, turned_only)


def test_the_report_says_the_turn_and_stretch_it_carried(cli, tmp_path):
    # A loop's frames are the film's turned and stretched: the seam report says by how
    # much, and a loop under the camera that looks at the flock, which carries neither,
    # says nothing of them.
    from render.sim.loop import search

    said = {}
    for follow in ("track", "centroid"):
        r = cli(SCENES / "murmuration.toml", "-o", f"{tmp_path}/{follow}/", "--loop",
                "--crossfade", "0.5", "--frames", str(FRAMES), "--fps", "30", "--size",
                "320x180", *(a for v in SETTINGS[:2] + GENTLE + (f"camera.follow={follow}",)
                             for a in ("--set", v)))
        assert r.code == 0, r.err
        said[follow] = r.err_lines[-1]
    found = search(film("camera.follow=track", *LOOP), FRAMES, CROSSFADE)
    along = ", ".join(f"×{v:.2f}" for v in np.linalg.eigvalsh(found.shape))
    assert "(starts at t₀ = " in said["track"]
    assert f", the flock's turn of {math.degrees(found.turn):+.1f}° and stretch ({along} " \
        f"along its axes) carried across the loop)" in said["track"], said["track"]
    assert "turn of" not in said["centroid"] and "stretch" not in said["centroid"], \
        said["centroid"]


def test_the_turn_carried_leaves_fewer_birds_to_jump(monkeypatch):
    # A 4 s loop of 2,000 birds with a 1 s morph under the tracking camera: the flock
    # turns 27° in a clip. Turned back in the morph, 4.7% of the birds jump, the ink
    # reads −10% to +8% and the alignment leaves its band; carried across the loop, none
    # and ±5%. (The turn alone: the stretch carried with it is left out on both sides.)
    from render.scene import load_scene, parse_override
    from render.sim import loop as sim_loop
    from render.states import simulated

    monkeypatch.setattr(sim_loop, "flock_shape", lambda *args: None)

    values = ("flock.count=2000", "scene.settle_steps=3000", "output.size=320x180",
              "output.fps=30", "output.frames=120", "camera.follow=track", "output.loop=true",
              "output.crossfade=1", *GENTLE)
    measured = {}
    for name, turn in (("carried", sim_loop.flock_turn), ("turned back", lambda *a: 0.0)):
        monkeypatch.setattr(sim_loop, "flock_turn", turn)
        sim_loop._SEARCHES.clear()
        scene = load_scene(SCENES / "murmuration.toml",
                           [(*parse_override(v), v) for v in values])
        if name == "carried":
            assert abs(sim_loop.search(scene, 120, 30).turn) > math.radians(15.0)
        measured[name] = metered(scene, simulated(scene, 0, 120), crossfade=30)[0]
    sim_loop._SEARCHES.clear()
    carried, back = (measured[k].measures() for k in ("carried", "turned back"))
    assert measured["carried"].passes()["speed"] and measured["carried"].passes()["ink"], \
        measured["carried"].report()
    def ink(m):
        return max(-m["coverage_low"], m["coverage_high"])
    assert ink(carried) < 0.7 * ink(back), (carried, back)
    assert carried["fading"] < 0.6 * back["fading"], (carried, back)


def without_stretch(monkeypatch, name: str, value) -> tuple:
    """The tracked film's loop measured (its SeamMeter) with the stretch carried across
    the loop left out, as shipped and with render.sim.loop's `name` set to `value`: a
    test of one mechanism alone."""
    from render.sim import loop as sim_loop
    from render.states import simulated

    monkeypatch.setattr(sim_loop, "flock_shape", lambda *args: None)
    scene = film("camera.follow=track", *LOOP)
    meters = []
    for changed in (False, True):
        if changed:
            monkeypatch.setattr(sim_loop, name, value)
        sim_loop._SEARCHES.clear()
        meters.append(metered(scene, simulated(scene, 0, FRAMES))[0])
    sim_loop._SEARCHES.clear()
    return tuple(meters)


def test_the_least_cost_pairing_leaves_almost_no_bird_to_jump(monkeypatch):
    # The tracked film's end is laid out unlike its start: the greedy pairing alone left
    # 15% of its birds tens of metres from their partners (they fade out and in); the
    # least-cost pairing moves them a metre or two along the sheet, the ink stays in its
    # band and the alignment far nearer its band (0.414 at its lowest, greedy 0.283,
    # against a band from 0.417: see the next test). (The pairing alone: the stretch
    # carried across the loop, which brings the pairs together too, is left out on both
    # sides.)
    loop, greedy = without_stretch(monkeypatch, "transported", lambda *args: args[-1])
    held = loop.passes()
    assert held["speed"] and held["ink"], loop.report()
    assert not greedy.passes()["speed"], greedy.report()
    assert loop.measures()["fading"] < 0.1 * greedy.measures()["fading"], \
        (loop.measures(), greedy.measures())
    assert loop.measures()["coherence_low"] > greedy.measures()["coherence_low"] + 0.1, \
        (loop.measures(), greedy.measures())


@pytest.mark.xfail(strict=True, reason="the stand-in's morph reads 0.414 at its lowest "
                   "against a band from 0.417 since the sun's glow rolls off (0.415 "
                   "against 0.411 before): on 1,000 faint birds at 320x180 the measure "
                   "sits at its noise floor; the web loop's 20,000 birds hold it (open)")
def test_the_stand_in_s_morph_keeps_its_alignment_band(monkeypatch):
    loop, _ = without_stretch(monkeypatch, "transported", lambda *args: args[-1])
    assert loop.passes()["alignment"], loop.report()


def test_the_forecast_of_the_chosen_start_is_its_least_cost_pairs():
    # The search scores every start by its greedy pairs; the chosen start's pairs are then
    # moved, and its score (what "cannot close" speaks of) is theirs: the share that
    # cannot glide, fewer than the greedy pairs left.
    from render.sim import loop as sim_loop

    sim_loop._SEARCHES.clear()
    found = sim_loop.search(film("camera.follow=track", *LOOP), FRAMES, CROSSFADE)
    sim_loop._SEARCHES.clear()
    assert found.scores[found.start] == float((~found.glide).mean())
    assert np.array_equal(np.sort(found.partner), np.arange(len(found.partner)))
    assert found.scores[found.start] < 0.02 < min(v for k, v in found.scores.items()
                                                  if k != found.start)


def test_a_3d_morph_closes_its_residual_over_a_longer_share_than_a_2d_one():
    # Worked by hand: the residual the pull leaves closes with the smoothstep of
    # (s − (1 − share)) / share over the morph's last share, 0.4 in 3D and 0.3 in 2D, so
    # its fastest frame (the smoothstep's slope 1.5 at the middle) moves a bird 1.5 / 0.4
    # of its residual a morph in 3D against 1.5 / 0.3 in 2D: the film's largest steps,
    # three quarters of the way through a 3 s morph, were that move (docs/loops.md).
    from render.scene import load_scene
    from render.sim.loop import path

    plate = load_scene(SCENES / "plate.toml", [])
    target, guided = np.array([[1.0, 2.0, 3.0]]), np.zeros((1, 3))
    for scene, share in ((film(), 0.4), (plate, 0.3)):
        at = lambda s: path(scene, s, target[:, :scene.dimensions],  # noqa: E731
                            guided[:, :scene.dimensions], None)[0]
        assert at(0.0) == at(1.0 - share) == 0.0 and at(1.0) == 1.0
        assert at(1.0 - share / 2) == pytest.approx(0.5, abs=1e-12)
        assert at(1.0 - share / 4) == pytest.approx(27 / 32, abs=1e-12)  # 3(3/4)² − 2(3/4)³
        slope = (at(1.0 - share / 2 + 1e-6) - at(1.0 - share / 2 - 1e-6)) / 2e-6
        assert slope == pytest.approx(1.5 / share, rel=1e-6)


def test_a_3d_morph_turns_its_birds_slowly_enough_to_keep_its_ink(monkeypatch):
    # A bird's ink in 3D is how much of its wings faces the camera: velocities turned as
    # fast as in 2D pitch the whole flock toward its partners at once and show more wing
    # mid-morph. The 3D pull keeps the ink nearer the clip's and the alignment higher
    # (the band: the test above), and no more birds switch. (The pull alone: the stretch
    # carried across the loop is left out on both sides.)
    from render.sim import loop as sim_loop

    slow_meter, fast_meter = without_stretch(monkeypatch, "PULL_3D", sim_loop.PULL)
    assert slow_meter.passes()["ink"], slow_meter.report()
    slow, fast = slow_meter.measures(), fast_meter.measures()
    assert slow["coverage_high"] < 0.7 * fast["coverage_high"], (slow, fast)
    assert slow["coherence_low"] > fast["coherence_low"] + 0.02, (slow, fast)
    assert slow["coherence_high"] <= slow["band_high"], slow
    assert slow["fading"] <= fast["fading"], (slow, fast)


def test_a_loop_that_cannot_close_says_so_before_it_is_drawn(capsys):
    # Under a fixed camera the flock is tens of metres on round the roost by the clip's
    # end: nearly every pair switches, and the line says so (and what to do) as soon as
    # the start is searched, not only in the seam report after the clip is drawn.
    from render.sim.loop import dissolving, search

    fixed = film("camera.follow=none", *LOOP)
    found = search(fixed, FRAMES, CROSSFADE, progress=True)
    said = capsys.readouterr().err
    assert found.scores[found.start] > 0.5
    assert dissolving(fixed, found) in said and "camera.follow=track" in said
    # the tracking camera's loop closes: nothing to say
    tracking = film("camera.follow=track", *LOOP)
    found = search(tracking, FRAMES, CROSSFADE)
    assert found.scores[found.start] < 0.5 and dissolving(tracking, found) == ""


def test_the_clip_is_the_search_s_own_frames_to_the_bit(monkeypatch):
    # The search flies through the clip it picks and keeps those frames for it, rather
    # than the clip being flown again from the start: the same states either way.
    import render.states as states
    from render.sim import loop as sim_loop

    scene = film("camera.follow=track", "scene.seed=5", *LOOP)  # a search of its own
    handed, real = [], states.kept_frames
    monkeypatch.setattr(states, "kept_frames", lambda *a: handed.append(real(*a)) or handed[-1])
    kept = [(s.positions, s.velocities, s.bank) for s in states.simulated(scene, 0, FRAMES)]
    # searched before: its frames were handed over once, so now the clip is flown again
    flown = [(s.positions, s.velocities, s.bank) for s in states.simulated(scene, 0, FRAMES)]
    assert handed[0] is not None and handed[1] is None and not sim_loop._KEPT
    assert len(kept) == len(flown) == FRAMES
    assert all((a == b).all() for x, y in zip(kept, flown) for a, b in zip(x, y))
    # over the budget, nothing is kept
    monkeypatch.setattr(sim_loop, "KEEP_MOST", 0)
    again = film("camera.follow=track", "scene.seed=6", *LOOP)
    sim_loop.search(again, FRAMES, CROSSFADE, keep=True)
    assert real(again, FRAMES, CROSSFADE) is None


def _pose(forward):
    from render.draw3d.camera import pose

    return pose((0.0, 0.0, 1.7), np.add((0.0, 0.0, 1.7), forward), (0.0, 0.0, 1.0), 30.0,
                16, 9, 0.1)


class _State:
    def __init__(self, index, forward):
        self.index, self.pose = index, _pose(forward)
        self.positions = np.zeros((1, 3))


def test_camera_measure_from_hand_worked_poses():
    from render.loop import SeamMeter

    def camera(forwards):
        meter = SeamMeter(film(), crossfade=1)
        for i, f in enumerate(forwards):
            meter.add_state(_State(i, f))
            meter.add(np.zeros((9, 16, 4), np.uint8))
        return meter

    still = camera([(0, 1, 0)] * 4)
    assert still.passes()["camera"] and still.measures()["camera_turn"] == 0.0
    # Turning 1° a frame and back to the start at the wrap: 3° in one frame.
    turn = [(np.sin(np.radians(a)), np.cos(np.radians(a)), 0) for a in (0, 1, 2, 3)]
    pan = camera(turn)
    assert pan.measures()["camera_turn"] == pytest.approx(3.0)
    assert pan.measures()["camera_turn_median"] == pytest.approx(1.0)
    assert not pan.passes()["camera"] and pan.passes(wrap=False)["camera"]


def test_a_keyframed_camera_that_does_not_close_is_refused(cli, tmp_path):
    path = "[[0,300,-131,1.7,300,169,50,30],[3,320,-131,1.7,300,169,50,30]]"
    for check in ((), ("--check",)):  # --check refuses it as the render does
        r = cli(SCENES / "murmuration.toml", "-o", f"{tmp_path}/a/", "--loop", "--frames",
                "60", "--set", f"camera.path={path}", "--set", "flock.count=1000", *check)
        assert r.code == 2 and len(r.err_lines) == 1, r.err
        assert r.err.startswith("boids-render: camera.path: a --loop's camera must end "
                                "where"), r.err


def test_a_keyframed_camera_that_closes_loops():
    from render.loop import crossfade_frames

    path = ("[[0,300,-131,1.7,300,169,50,30],[1,320,-131,1.7,300,169,50,30],"
            "[2,300,-131,1.7,300,169,50,30]]")
    assert crossfade_frames(film(*LOOP, "output.frames=60", f"camera.path={path}"), 0) == 15


def test_hunts_and_landings_inside_the_window_are_refused_naming_the_setting():
    from render.errors import UsageError
    from render.sim.loop import calm_starts

    scene = film(*LOOP, "roost.landing_at=4.0")
    attacks = np.zeros(400, bool)
    attacks[100:130] = True  # an attack from 3.33 s to 4.33 s
    # A 2 s window (60 frames) must end by the landing (4 s, frame 120) and miss the
    # attack: the starts 0–40 do.
    assert calm_starts(scene, list(range(0, 100, 10)), 60, attacks) == [0, 10, 20, 30, 40]
    with pytest.raises(UsageError, match=r"^hawk\.mode = \"hunt\": every loop start"):
        calm_starts(scene, [50, 60], 60, attacks)
    with pytest.raises(UsageError, match=r"^roost\.landing_at = 4 s: a --loop"):
        calm_starts(scene, [70, 80], 60, attacks)


def test_a_hunt_that_leaves_no_calm_start_is_refused_at_the_attack_that_shows_it():
    from render.errors import UsageError
    from render.sim.loop import search

    # 10 s and a 4 s morph: every start from 0 to 9.3 s holds the first attack's first
    # frame, so the search stops there (that attack's end is not flown: "from …") rather
    # than fly on to 23 s; the refusal says when the hawk attacks.
    scene = film(*LOOP, "output.crossfade=4.0", "output.frames=300", "flock.count=300")
    with pytest.raises(UsageError) as refused:
        search(scene, 300, 120)
    said = str(refused.value)
    assert said.startswith('hawk.mode = "hunt": every loop start within 9.33 s puts an '
                           'attack inside the 14 s loop'), said
    assert re.search(r"\(the hawk's attacks: from \d+\.\d s\): set hawk\.enabled = false, "
                     r"or a clip that fits between two attacks$", said), said


def test_the_attacks_are_named_by_their_times():
    from render.sim.loop import spans

    flags = np.zeros(20, bool)
    flags[3:7] = flags[15:] = True  # at 2 fps: 1.5–3.5 s, and one from 7.5 s not yet over
    assert spans(flags, 2.0) == "1.5–3.5 s, from 7.5 s"
    assert spans(flags[:10], 2.0) == "1.5–3.5 s"


def test_a_loop_longer_than_the_time_to_the_landing_is_refused_before_any_flight():
    from render.errors import UsageError
    from render.loop import crossfade_frames

    # 60 frames and a 15-frame morph at 30 fps: 2.5 s, past a landing at 2 s whatever the
    # start (the search refused it only once it had flown); ending at 2.5 s, it loops.
    with pytest.raises(UsageError, match=r"^roost\.landing_at = 2 s: a --loop of 2\.5 s"):
        crossfade_frames(film(*LOOP, "output.frames=60", "roost.landing_at=2.0"), 0)
    assert crossfade_frames(film(*LOOP, "output.frames=60", "roost.landing_at=2.5"), 0) == 15


def test_a_transparent_loop_is_measured_as_it_composites_over_white():
    """A transparent frame has no sky to tell its birds from: its birds are its alpha. A
    clear frame, one with a black 20x20 bird, one with the bird at half alpha: the ink and
    the steps are those of the frames over white (measured against the sky, every frame
    read alike and every step 0)."""
    from render.loop import SeamMeter

    scene = film("output.transparent=true")
    h, w = scene.output.size[1], scene.output.size[0]
    clear = np.zeros((h, w, 4), np.uint8)
    bird, faint = clear.copy(), clear.copy()
    bird[10:30, 10:30, 3] = 255
    faint[10:30, 10:30, 3] = 128  # premultiplied black: colour 0 at any alpha
    meter = SeamMeter(scene, crossfade=1)
    for frame in (clear, bird, faint):
        meter.add(frame)
    area = 400 / (h * w)
    assert meter.coverage == pytest.approx([0.0, area, area * 128 / 255])
    assert meter.steps == pytest.approx([area * 255, area * 127])
    assert clear.sum() == 0  # the frames given are left as they are


def test_a_failing_measure_comes_with_what_may_help(meters):
    from render.loop import _advice

    follow, loop = film(), film(*LOOP, "camera.follow=track")
    fixed = film("camera.follow=none")
    assert _advice(["camera"], follow) == " (camera.follow = \"track\" closes without a pan)"
    assert _advice(["camera"], loop) == ""  # a tracking camera already
    assert "a longer --crossfade" in _advice(["ink"], follow)
    assert "a longer --crossfade" in _advice(["ink", "speed"], loop)
    # Under a camera that looks at the flock, or the film's fixed one, its turn is not
    # carried across the loop: the birds jump whatever the morph's length (the film's 6 s
    # loop: 97% and 99% with a 1 s and a 4 s morph; tracked, under 1%).
    for camera in (follow, fixed):
        assert "carries the flock's turn" in _advice(["ink", "speed"], camera)
        assert "a longer --crossfade" not in _advice(["ink", "speed"], camera)
    assert "carries the flock's turn" not in _advice(["speed"], loop)
    # Under a tracking camera a short morph turns every bird at once (the web loop with a
    # 1 s morph: steps 2.5–2.7× the median; 3 s: 1.4–1.5×).
    assert "a longer --crossfade (3-4 s)" in _advice(["steps"], loop)
    assert _advice(["steps"], follow) == _advice(["steps"], fixed) == ""
    assert "carries the flock's turn" not in _advice(["camera", "speed"], follow)
    assert _advice(["steps", "alignment"], follow) == ""
    meter, _, _ = meters["loop"]
    failed = [k for k, ok in meter.passes().items() if not ok]
    assert meter.report().endswith(f"fails: {', '.join(failed)}{_advice(failed, follow)}"
                                   if failed else "hold")


def test_beating_wings_come_round_with_the_loop_and_beat_on_through_the_morph():
    """Each bird's wing beat is where it was when the loop comes round (the beat rounded to
    a whole number in the loop: 12.7 Hz over 3 s, 38 beats), and a row that becomes its
    partner in the morph beats on as that bird (the frame after the morph draws it in the
    partner's row). Before, the wrap jumped every bird 0.1 of a beat and the morph's end
    a quarter of a beat in the median."""
    from render.sim.loop import search
    from render.sim.simulate import own_beats
    from render.states import simulated

    loop = film(*LOOP, "bird.wingbeat=12.7")
    states = list(simulated(loop, 0, FRAMES))
    partner = search(loop, FRAMES, CROSSFADE).partner
    step = (38 / 3.0) / loop.output.fps  # the loop's beat: cycles a frame

    def gap(a, b):
        d = b - a - step
        return np.abs(d - np.round(d))

    wrap = gap(states[-1].flap, states[0].flap)
    assert wrap.max() < 1e-9
    ending = gap(states[CROSSFADE - 1].flap, states[CROSSFADE].flap[partner])
    assert np.median(ending) < 0.03
    inside = [np.median(gap(states[k].flap, states[k + 1].flap)) for k in range(FRAMES - 1)
              if k != CROSSFADE - 1]
    # the morph's snap closes each row's gap over its last 30% (4 frames): the beat is
    # hastened or held back by at most a twentieth of a cycle a frame in the median, on
    # its 0.42 a frame
    assert max(inside) < 0.07 and np.median(inside) < 1e-9
    # The control: rows beating at their own places would jump at the morph's end, where
    # a row is carried to another bird's.
    own = own_beats(len(partner))
    t0, t1 = (CROSSFADE - 1) / loop.output.fps, CROSSFADE / loop.output.fps
    other = partner != np.arange(len(partner))
    assert other.mean() > 0.5
    jump = gap(own + 38 / 3.0 * t0, (own + 38 / 3.0 * t1)[partner])
    assert np.median(jump[other]) > 0.15


@pytest.mark.slow
def test_a_film_loop_at_full_size_holds_all_five_measures():
    # 6 s of the film at 5,000 birds under the tracking camera, 1280x720, a 3 s morph: its
    # turn, stretch, trail and height carried across the loop, no bird jumps, the largest
    # step stays under 1.5× the median, the ink within ±10% and the alignment in its band
    # (measured 1.30×, −2.0%…+0.7%, 0.117–0.157 in 0.108–0.165).
    from render.scene import load_scene, parse_override
    from render.sim import loop as sim_loop
    from render.states import simulated

    values = ("flock.count=5000", "output.size=1280x720", "output.fps=30",
              "output.frames=180", "camera.follow=track", "output.loop=true",
              "output.crossfade=3", *GENTLE)
    scene = load_scene(SCENES / "murmuration.toml", [(*parse_override(v), v) for v in values])
    sim_loop._SEARCHES.clear()
    meter = metered(scene, simulated(scene, 0, 180), crossfade=90)[0]
    sim_loop._SEARCHES.clear()
    assert all(meter.passes().values()), meter.report()
    assert meter.measures()["fading"] < 0.01, meter.report()


def test_a_tracked_loop_s_still_is_its_frame(cli, tmp_path):
    # The trail and height taken back over the clip are known once the morph's first frame
    # is: a still in the morph or after it is still the loop's own frame.
    from test_still import pixels

    args = ("--loop", "--crossfade", "0.5", "--frames", str(FRAMES), "--size", "320x180",
            "-q", *(a for v in SETTINGS[:2] + ("camera.follow=track",) for a in ("--set", v)))
    assert cli(SCENES / "murmuration.toml", "-o", f"{tmp_path}/seq/", *args).code == 0
    frames = sorted((tmp_path / "seq").glob("*.png"))
    for k in (4, 50):
        still = tmp_path / f"still{k}.png"
        assert cli(SCENES / "murmuration.toml", "--still", f"frame:{k}", "-o", still,
                   *args).code == 0
        assert np.array_equal(pixels(still), pixels(frames[k]))


def test_a_3d_loop_without_accent_birds_pairs_them_all():
    # The hero shot's render.accent_every = 0: every bird is paired, in one group.
    from render.sim import loop as sim_loop

    sim_loop._SEARCHES.clear()
    found = sim_loop.search(film("camera.follow=track", "render.accent_every=0", *LOOP),
                            FRAMES, CROSSFADE)
    sim_loop._SEARCHES.clear()
    assert np.array_equal(np.sort(found.partner), np.arange(len(found.partner)))
