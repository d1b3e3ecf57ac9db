"""The 3D step held to its all-pairs numpy reference (tests/naive3d.py) over 100 steps,
for every combination: metric/topological × blind cone on/off, banked flight on/off ×
roost on/off; a wrong kernel fails; the bank angle in a steady turn; threads."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from naive3d import (State3, model_of, naive_landing_step3, naive_noise, naive_step3,
                     unit_rows)
from naive_neighbours import k_nearest_visible
from render.scene.load import build_scene
from render.sim import flight, noise
from render.sim.simulate import Simulation

STEPS = 100


def scene3(neighbours="topological", blind=90.0, flight_on=True, roost_on=True, n=60,
           roost=None, flight=None, **rules):
    raw = {"scene": {"seed": 5, "dt": 0.01, "settle_steps": 0},
           "world": {"dimensions": 3, "width": 100.0, "height": 60.0},
           "flock": {"count": n, "min_speed": 2.0, "max_speed": 18.0},
           "rules": {"neighbours": neighbours, "blind_angle": blind,
                     "separation_weight": 15.0, "alignment_weight": 6.25,
                     "cohesion_weight": 25.0, "perception_radius": 2.5, **rules}}
    # A 3D scene flies banked over a roost unless they are switched off; `roost`: keys of
    # [roost] over the tests' own (a landing, a roost elsewhere); `flight`: of [flight].
    raw["flight"] = dict(flight or {}) if flight_on else {"enabled": False}
    raw["roost"] = {"enabled": False}
    if roost_on:
        # The return switches on within the test's second: the centroid is near the roost.
        raw["roost"] = {"radius": 3.0, "hysteresis": 0.5, "return_cap": 3.0,
                        "position": [48.0, 30.0], **(roost or {})}
    return build_scene(raw, "test.toml")


def run_both(scene, steps=STEPS):
    sim = Simulation(scene, cache=False)
    ref = State3(sim.positions.copy(), sim.velocities.copy(), sim.bank.copy(), 0)
    model = model_of(scene)
    worst = 0.0
    for _ in range(steps):
        sim.advance()
        ref = naive_step3(ref, model)
        worst = max(worst, np.abs(sim.positions - ref.pos).max(),
                    np.abs(sim.velocities - ref.vel).max(), np.abs(sim.bank - ref.bank).max())
    return sim, ref, worst


@pytest.mark.parametrize("neighbours", ["metric", "topological"])
@pytest.mark.parametrize("blind", [0.0, 90.0])
def test_3d_step_matches_the_all_pairs_reference(neighbours, blind):
    _, _, worst = run_both(scene3(neighbours, blind))
    assert worst < 1e-9


@pytest.mark.parametrize("flight_on", [False, True])
@pytest.mark.parametrize("roost_on", [False, True])
def test_flight_and_roost_match_the_reference(flight_on, roost_on):
    sim, ref, worst = run_both(scene3(flight_on=flight_on, roost_on=roost_on))
    assert worst < 1e-9
    if roost_on:
        assert sim.homing == ref.homing
    if not flight_on:
        assert (sim.bank == 0).all()


def test_a_bank_that_pulls_matches_the_reference():
    """With a load factor of 2 the birds turning back to the roost (banks of up to 17° at
    its 3 m/s² cap) pull 1/cos β: step for step as the reference, and not the flight of a
    load factor of 1."""
    sim, ref, worst = run_both(scene3(flight={"load_factor": 2.0}))
    level, _, _ = run_both(scene3())
    assert worst < 1e-9
    assert np.abs(sim.bank).max() > 0.1
    assert np.abs(sim.positions - level.positions).max() > 1e-4


def test_a_bank_within_the_load_factor_turns_level():
    """Level at 10 m/s and held at 3 m/s² to its right, a bird at a load factor of 2
    banks to atan(3/g) and turns at 3 m/s² with no vertical acceleration (lift 1/cos β of
    level flight's: g·tan β across, g up); at a load factor of 1 it turns at g·sin β and
    sinks by g·(1 − cos β)."""
    beta = math.atan(3.0 / 9.81)
    for n, across, down in ((2.0, 3.0, 0.0),
                            (1.0, 9.81 * math.sin(beta), 9.81 * (1 - math.cos(beta)))):
        p = flight.Flight(0.01, 1.0, 20.0, True, 10.0, 0.5, 10.0, 1.0, 9.81, n)
        bank = 0.0
        for _ in range(400):
            x, y, z, vx, vy, vz, bank = flight.fly(p, 0.0, 0.0, 50.0, 10.0, 0.0, 0.0, bank,
                                                   0.0, -3.0, 0.0)
        assert bank == pytest.approx(beta, rel=1e-9)
        assert -vy / p.dt == pytest.approx(across, rel=1e-9)
        assert -vz / p.dt == pytest.approx(down, abs=1e-9)


def test_a_bank_past_the_load_factor_pulls_only_that():
    """Level at 10 m/s, banked 60° and held there: at a load factor of 1.2 the lift is
    1.2 g (not the 2 g that 1/cos 60° asks), whose vertical part 0.6 g leaves 0.4 g down:
    vz = −0.4 · 9.81 · 0.01 after one step."""
    p = flight.Flight(0.01, 1.0, 20.0, True, 10.0, 0.5, 10.0, 1.0, 9.81, 1.2)
    beta = math.radians(60.0)
    out = flight.fly(p, 0.0, 0.0, 50.0, 10.0, 0.0, 0.0, beta, 0.0, -9.81 * math.tan(beta), 0.0)
    assert out[6] == pytest.approx(beta, rel=1e-12)
    assert out[5] == pytest.approx(-0.4 * 9.81 * 0.01, rel=1e-9)


@pytest.mark.parametrize("roost_on", [False, True])
def test_the_gather_matches_the_reference(roost_on):
    """Every bird more than 1 m from the centroid turns toward it (the blob of 60 spans a
    few metres): with the roost's return and without it."""
    gather = {"gather": 2.0, "gather_radius": 1.0, "gather_cap": 3.0}
    sim, _, worst = run_both(scene3(roost_on=roost_on, **gather))
    assert worst < 1e-9
    plain = Simulation(scene3(roost_on=roost_on), cache=False)
    for _ in range(STEPS):
        plain.advance()
    assert np.abs(sim.positions - plain.positions).max() > 1e-2  # the gather steers


def test_topological_max_range_matches_the_reference():
    _, _, worst = run_both(scene3(max_range=1.5), steps=30)
    assert worst < 1e-9


def test_a_landing_matches_the_reference():
    """Birds peel off, land and stay, step for step as in the reference: a landing bird
    keeps the rules among the birds in the air and steers down the funnel instead of by
    the roost and the gather, and the return and the gather follow the birds still
    flying."""
    scene = scene3(n=80, roost={"altitude": 3.0, "landing_at": 0.2,
                                "landing_spread": 0.5, "landing_radius": 20.0},
                   gather=2.0, gather_radius=1.0, gather_cap=3.0)
    sim = Simulation(scene, cache=False)
    n = len(sim.positions)
    ref = State3(sim.positions.copy(), sim.velocities.copy(), sim.bank.copy(), 0)
    land, peel = np.zeros(n, np.int8), np.full(n, np.iinfo(np.int64).max)
    model = model_of(scene)
    worst, seen = 0.0, set()
    for _ in range(150):
        sim.advance()
        ref, land, peel = naive_landing_step3(ref, model, land, peel)
        np.testing.assert_array_equal(sim.finale.state, land)
        assert sim.homing == ref.homing
        worst = max(worst, np.abs(sim.positions - ref.pos).max(),
                    np.abs(sim.velocities - ref.vel).max(), np.abs(sim.bank - ref.bank).max())
        seen.update(int(s) for s in np.unique(land))
        if (land == 1).sum() >= 10 and (land == 0).sum() >= 10:
            seen.add(-1)  # flying and landing birds side by side, neighbours of each other
    assert worst < 1e-9
    assert seen == {-1, 0, 1, 2} and (land == 2).sum() >= 10


def test_a_wrong_kernel_fails_the_comparison(monkeypatch):
    """The alignment's sign flipped in the reference: the comparison must notice."""
    import naive3d

    real = naive3d.naive_rules3

    def wrong(pos, fwd, m):
        return real(pos, fwd, dict(m, w_ali=-m["w_ali"]))

    monkeypatch.setattr(naive3d, "naive_rules3", wrong)
    _, _, worst = run_both(scene3(), steps=10)
    assert worst > 1e-6


def test_noise_is_the_hash_of_seed_bird_and_step():
    got = np.array([noise.normal3(11, i, -40) for i in range(500)])
    # The same uniforms; libm's and numpy's log/cos may differ in the last bit.
    np.testing.assert_allclose(got, naive_noise(11, 500, -40), rtol=0, atol=1e-13)
    assert abs(got.mean()) < 0.1 and abs(got.std() - 1) < 0.05


def test_bank_settles_on_atan_of_the_lateral_steering_over_g():
    """A bird held at a constant 3 m/s² to its right banks to atan(3/g) (16.99°)."""
    p = flight.Flight(0.01, 1.0, 20.0, True, 10.0, 0.5, 10.0, 1.0, 9.81)
    bank = 0.0
    for _ in range(400):
        x, y, z, vx, vy, vz, bank = flight.fly(p, 0.0, 0.0, 50.0, 10.0, 0.0, 0.0, bank,
                                               0.0, -3.0, 0.0)
    assert bank == pytest.approx(math.atan(3.0 / 9.81), rel=1e-9)
    assert vy < 0  # the lift tilted to its right (−y) turns it right


def test_bank_rolls_in_fast_and_out_slowly_and_a_sign_change_is_in():
    p = flight.Flight(0.01, 1.0, 20.0, True, 10.0, 0.5, 10.0, 1.0, 9.81)
    assert flight.bank_step(p, 0.0, 0.2) == pytest.approx(0.02)  # into: 10 /s
    assert flight.bank_step(p, 0.2, 0.0) == pytest.approx(0.198)  # out: 1 /s
    assert flight.bank_step(p, 0.2, -0.1) == pytest.approx(0.17)  # sign change: into


def test_a_zigging_bird_rolls_at_the_hunts_rate_both_ways():
    p = flight.Flight(0.01, 1.0, 20.0, True, 10.0, 0.5, 10.0, 1.0, 9.81)
    assert flight.bank_step(p, 0.0, 0.2, 40.0) == pytest.approx(0.08)  # into: 40 /s
    assert flight.bank_step(p, 0.2, 0.0, 40.0) == pytest.approx(0.12)  # out: 40 /s, not 1
    assert flight.bank_step(p, 0.2, -0.1, 200.0) == pytest.approx(-0.1)  # the whole way, no more
    assert flight.bank_step(p, 0.2, 0.0, 0.0) == flight.bank_step(p, 0.2, 0.0)  # 0: own


@pytest.mark.parametrize("neighbours", ["metric", "topological"])
def test_zigging_birds_roll_at_their_own_rate_as_the_reference(neighbours):
    """Half the birds steered by a zig-like sideways push and given a roll rate of 40 /s
    (`Finale3.roll`, as waves.rolling gives a zigging bird), the others none: step for
    step as the reference, and their banks follow the push faster than the flight's own
    rates would (the same flock without the rates, beside it)."""
    from render.sim import step3d

    scene = scene3(neighbours, roost_on=False)
    sim = Simulation(scene, cache=False)
    n, k, model = len(sim.positions), 7, model_of(scene)
    rng = np.random.default_rng(3)
    side = rng.choice([-1.0, 1.0], n)
    roll = np.where(rng.random(n) < 0.5, 40.0, 0.0)
    state = {r: (sim.positions.copy(), sim.velocities.copy(), sim.bank.copy())
             for r in ("rolled", "own")}
    ref = State3(*(a.copy() for a in state["rolled"]), 0)
    works = {r: step3d.workspace3(n, sim.how.topological, 2.0) for r in state}
    steepest = {"rolled": 0.0, "own": 0.0}
    worst = 0.0
    for step in range(40):
        fwd, _ = unit_rows(state["rolled"][1])
        left = np.column_stack([-fwd[:, 1], fwd[:, 0], np.zeros(n)])
        left /= np.linalg.norm(left, axis=1, keepdims=True)
        push = (12.0 * side * math.sin(2 * math.pi * step / 40))[:, None] * left
        for r, rates in (("rolled", roll), ("own", np.zeros(n))):
            pos, vel, bank = state[r]
            step3d.forward(pos, vel, works[r].fwd)
            fin = step3d.Finale3(push, np.zeros(n, np.int8), np.empty((n, k), np.int64),
                                 np.empty(n), rates)
            new = step3d.step3(pos, vel, bank, sim.how, sim.rules, sim.roost, sim.flight,
                               model["noise"], model["seed"], step, works[r], fin)
            state[r] = (new.pos, new.vel, new.bank)
            steepest[r] = max(steepest[r], np.abs(new.bank[roll > 0]).max())
        ref = naive_step3(ref, model, push, roll)
        pos, vel, bank = state["rolled"]
        worst = max(worst, np.abs(pos - ref.pos).max(), np.abs(vel - ref.vel).max(),
                    np.abs(bank - ref.bank).max())
    assert worst < 1e-9
    assert steepest["rolled"] > 1.3 * steepest["own"]


def test_level_flight_at_cruise_holds_its_altitude():
    p = flight.Flight(0.01, 1.0, 20.0, True, 10.0, 0.5, 10.0, 1.0, 9.81)
    out = flight.fly(p, 0.0, 0.0, 50.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    assert out[2] == 50.0 and out[3] == 10.0 and out[5] == 0.0


def test_no_bird_goes_below_the_ground():
    p = flight.Flight(0.01, 1.0, 20.0, False, 10.0, 0.5, 10.0, 1.0, 9.81)
    out = flight.fly(p, 0.0, 0.0, 0.01, 10.0, 0.0, -5.0, 0.0, 0.0, 0.0, 0.0)
    assert out[2] == 0.0 and out[5] == 0.0


def test_seeding_is_a_compact_blob_that_scales_with_count():
    small = Simulation(scene3(n=500), cache=False)
    large = Simulation(scene3(n=4000), cache=False)
    for sim, n in ((small, 500), (large, 4000)):
        r = np.linalg.norm(sim.positions - (48.0, 30.0, 50.0), axis=1).max()
        assert r ** 3 * 4 / 3 * math.pi == pytest.approx(2.5 * n, rel=0.1)
        heading = np.arctan2(sim.velocities[:, 1], sim.velocities[:, 0])
        spread = np.degrees(np.ptp(np.unwrap(heading - heading[0])))
        assert spread <= 30.0


_THREADS = """
import sys, numpy as np
sys.path.insert(0, "tests")
from test_step3d import scene3
from render.sim.simulate import Simulation
sim = Simulation(scene3(n=400), cache=False)
tested = [sim.advance().candidates for _ in range(40)]  # the lists' reads and redraws too
np.save(sys.argv[1], np.concatenate([sim.positions.ravel(), sim.velocities.ravel(), sim.bank,
                                     np.concatenate(tested)]))
"""


def test_any_thread_count_gives_the_same_bits(tmp_path):
    out = []
    for threads in (1, 2):
        path = tmp_path / f"t{threads}.npy"
        env = dict(os.environ, NUMBA_NUM_THREADS=str(threads))
        subprocess.run([sys.executable, "-c", _THREADS, str(path)], check=True, env=env,
                       cwd=os.path.dirname(os.path.dirname(__file__)))
        out.append(np.load(path))
    assert np.array_equal(out[0], out[1])


def test_the_settled_state_is_kept_and_loaded_with_the_same_bits(tmp_path, monkeypatch):
    from render.sim import settled
    from render.sim.simulate3d import Simulation3D

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    scene = build_scene({"scene": {"seed": 2, "dt": 0.01, "settle_steps": 30},
                         "world": {"dimensions": 3}, "flock": {"count": 80},
                         "rules": {"neighbours": "topological"}, "flight": {},
                         "roost": {}, "camera": {"follow": "centroid"}}, "test.toml")
    first = Simulation(scene)
    assert settled.path(scene).is_file()

    def no_settling(self):
        raise AssertionError("settled again")

    monkeypatch.setattr(Simulation3D, "advance", no_settling)
    second = Simulation(scene)
    assert second.step_index == 0
    for name in ("positions", "velocities", "bank"):
        assert np.array_equal(getattr(first, name), getattr(second, name))
    monkeypatch.undo()
    a, b = first.advance(), Simulation(scene).advance()
    assert np.array_equal(a.positions, b.positions) and a.followed == b.followed
    # The candidate lists are not kept: both draw them anew at step 0, so the birds each
    # search tested (the stats' candidates) are the same too.
    fresh = Simulation(build_scene({**scene.to_dict(), "scene": {"seed": 2, "dt": 0.01,
                                                                  "settle_steps": 30}},
                                   "test.toml"), cache=False)
    loaded = Simulation(scene)
    for _ in range(12):
        x, y = fresh.advance(), loaded.advance()
        assert np.array_equal(x.candidates, y.candidates)
        assert np.array_equal(x.positions, y.positions)


def test_a_follow_camera_of_another_pace_settles_its_own_spring(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def scene(follow_time):
        return build_scene({"scene": {"seed": 2, "dt": 0.01, "settle_steps": 30},
                            "world": {"dimensions": 3}, "flock": {"count": 80},
                            "rules": {"neighbours": "topological"}, "flight": {},
                            "roost": {}, "camera": {"follow": "centroid",
                                                     "follow_time": follow_time}},
                           "test.toml")

    Simulation(scene(0.6))  # kept on disk
    kept, fresh = Simulation(scene(0.9)), Simulation(scene(0.9), cache=False)
    assert kept.advance().followed == fresh.advance().followed


def test_the_estimate_leaves_out_a_settling_already_on_disk(tmp_path, monkeypatch):
    from render import budget

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    scene = build_scene({"scene": {"seed": 4, "dt": 0.01, "settle_steps": 40,
                                   "duration": 0.1},
                         "world": {"dimensions": 3}, "flock": {"count": 80},
                         "rules": {"neighbours": "topological"}, "flight": {},
                         "roost": {}}, "test.toml")
    before = budget.estimate(scene, str(tmp_path / "x.mp4"))
    assert not before.settled and "cache" not in str(before)
    Simulation(scene)  # settles, and keeps the settled state
    after = budget.estimate(scene, str(tmp_path / "x.mp4"))
    _, per_step = budget.simulation_costs(scene)
    assert after.settled and "(the settled flock read from its cache)" in str(after)
    assert before.seconds - after.seconds == pytest.approx(40 * 80 * per_step)
    still = budget.still_estimate(scene, 0.05)
    assert still.settled and still.seconds < budget.still_estimate(
        build_scene({**scene.to_dict(), "scene": {**scene.to_dict()["scene"], "seed": 5}},
                    "test.toml"), 0.05).seconds


@pytest.mark.parametrize("damage", ["cut short", "emptied", "garbage"])
def test_a_damaged_settled_state_is_settled_again_and_rewritten(tmp_path, monkeypatch,
                                                                  damage):
    from render.sim import settled

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    scene = build_scene({"scene": {"seed": 3, "dt": 0.01, "settle_steps": 20},
                         "world": {"dimensions": 3}, "flock": {"count": 60},
                         "rules": {"neighbours": "topological"}, "flight": {},
                         "roost": {}}, "test.toml")
    first = Simulation(scene)
    kept = settled.path(scene)
    whole = kept.read_bytes()
    kept.write_bytes({"cut short": whole[:len(whole) // 2], "emptied": b"",
                      "garbage": b"PK\x03\x04" + bytes(200)}[damage])
    again = Simulation(scene)
    assert np.array_equal(first.positions, again.positions)
    assert kept.read_bytes() == whole


def test_the_settled_key_follows_the_simulation_settings_only():
    from render.sim import settled

    base = {"world": {"dimensions": 3}, "flock": {"count": 80}, "flight": {}}
    one = build_scene(base, "a.toml")
    renamed = build_scene({**base, "scene": {"name": "other", "duration": 3.0}}, "b.toml")
    faster = build_scene({**base, "flight": {"cruise_speed": 12.0}}, "c.toml")
    assert settled.key(one) == settled.key(renamed) != settled.key(faster)
    # The follow camera's spring settles with the flock; where the camera stands does not.
    follow = {**base, "camera": {"follow": "centroid", "follow_time": 0.6}}
    keys = {settled.key(build_scene(body, "d.toml")) for body in (
        follow, {**follow, "camera": {"follow": "centroid", "follow_time": 0.9}},
        {**follow, "camera": {"follow": "none", "follow_time": 0.6}})}
    assert len(keys) == 3
    moved = {**follow, "camera": {**follow["camera"], "position": [0.0, -300.0, 1.7]}}
    assert settled.key(build_scene(moved, "e.toml")) == \
        settled.key(build_scene(follow, "f.toml"))
    # A hunt's settling keeps the neighbours its hawk reads at frame 0.
    hunted = {**base, "rules": {"neighbours": "topological"},
              "hawk": {"mode": "hunt", "speed": 20.0}}
    calm = {**hunted, "hawk": {"mode": "hunt", "speed": 20.0, "enabled": False}}
    assert settled.key(build_scene(hunted, "i.toml")) != settled.key(build_scene(calm,
                                                                                "j.toml"))
    assert settled.key(build_scene({**base, "camera": {"follow": "none"}}, "g.toml")) == \
        settled.key(build_scene({**base, "camera": {"follow": "none", "follow_time": 0.9}},
                                "h.toml"))


_SETTLING = """
import sys
from render.scene import load_scene
from render.sim.simulate import Simulation
scene = load_scene("scenes/murmuration.toml", [("flock.count", "200", "test"),
                                                ("scene.settle_steps", "30", "test")])
Simulation(scene)
print("\\n".join(module.__file__ for name, module in sorted(sys.modules.items())
                if name.split(".")[0] == "render"))
"""


def test_a_settling_runs_no_source_its_state_is_not_named_by(tmp_path):
    # The film's settling (its hunt, waves and landing loaded) imports no module of the
    # package outside the settled state's sources but the scene's (its values are in the
    # key), the errors' and the progress bar's: so an edit to a module left out (the
    # loop's morph, the diagnostics) cannot change a state the cache keeps.
    from render.sim import settled

    root = os.path.dirname(os.path.dirname(__file__))
    ran = subprocess.run([sys.executable, "-c", _SETTLING], check=True, cwd=root,
                         env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)),
                         capture_output=True, text=True).stdout.split()
    package = Path(settled.__file__).parents[1]
    named = set(settled.sources())
    outside = [path for path in map(Path, ran) if path not in named
               and path.parent != package / "scene"
               and path.name not in ("__init__.py", "errors.py", "progress.py")]
    assert not outside and package / "sim" / "step3d.py" in map(Path, ran), outside


def test_an_edit_to_a_reader_of_the_states_keeps_them(tmp_path):
    from render.sim import settled
    from render.sim.cache import files_digest

    package = tmp_path / "render"
    shutil.copytree(Path(settled.__file__).parents[1], package,
                    ignore=shutil.ignore_patterns("__pycache__"))

    def digest():
        return files_digest(settled.sources(package), package)

    first = digest()
    for name in settled.READERS:
        (package / "sim" / name).write_text("# edited\n")
    assert digest() == first
    for edited in ("sim/step3d.py", "sim/forces/roost.py", "ranking.py"):
        (package / edited).write_text((package / edited).read_text() + "# edited\n")
        assert digest() != first, edited
        first = digest()


def test_settling_shows_progress_on_stderr_only_when_asked(capsys):
    scene = scene3(n=50)
    scene = build_scene({**{k: v for k, v in scene.to_dict().items()},
                         "scene": {"seed": 5, "dt": 0.01, "settle_steps": 5}}, "t.toml")
    Simulation(scene, progress=True, cache=False)
    assert "settling" in capsys.readouterr().err
    Simulation(scene, progress=False, cache=False)
    assert "settling" not in capsys.readouterr().err


def test_candidates_are_the_birds_whose_distance_the_search_computed():
    """Every bird nearer than a bird's k-th neighbour (seen or behind it) must have been
    tested, so the count is at least that many; and the grid tests far fewer than all."""
    sim = Simulation(scene3(n=1500), cache=False)
    for _ in range(3):
        sim.advance()
    snap = sim.advance()
    pos = snap.positions
    d2 = ((pos[:, None, :] - pos[None, :, :]) ** 2).sum(axis=2)
    np.fill_diagonal(d2, np.inf)
    _, found_d2, count = k_nearest_visible(pos, snap.velocities, 7, blind_angle=90.0)
    kth = found_d2[np.arange(len(pos)), count - 1]
    nearer = (d2 <= kth[:, None]).sum(axis=1)
    assert (snap.neighbours == count).all()
    assert (snap.candidates >= nearer).all()
    assert (snap.candidates > snap.neighbours).mean() > 0.9  # the blind ones were tested too
    assert snap.candidates.mean() < 0.2 * len(pos)


def test_the_return_aims_from_each_bird():
    """Worked by hand: the roost at the origin, the return on at 2 m/s², the flock's side
    left. A bird at (10, 0) flying +x flies straight away: 2 m/s² to its left (+y). A bird
    at (0, 10) flying +x has the roost on its right, square to its heading: half of it,
    1 m/s², to the right (−y), whatever the centroid. At 60 m the spring (0.15 /s², 50 m)
    pulls down 1.5 m/s²."""
    from render.sim.forces import roost

    p = roost.Roost(True, 0.0, 0.0, 50.0, 0.15, 5.0, 3.0, 1.0, 2.0, homing=True,
                    strength=2.0, side=1.0)
    np.testing.assert_allclose(roost.accel(p, 10.0, 0.0, 60.0, 1.0, 0.0), (0.0, 2.0, -1.5),
                               atol=1e-12)
    np.testing.assert_allclose(roost.accel(p, 0.0, 10.0, 50.0, 1.0, 0.0), (0.0, -1.0, 0.0),
                               atol=1e-12)
    np.testing.assert_allclose(roost.accel(p, 0.0, -10.0, 50.0, -1.0, 0.0), (0.0, 1.0, 0.0),
                               atol=1e-12)


def test_the_gather_turns_a_far_bird_toward_the_centroid():
    """Worked by hand: the centroid at (0, 0), the gather 0.1 /s² beyond 40 m, capped at
    3 m/s². A bird at (60, 0) flying +y has the centroid square to its left: half of
    min(0.1·20, 3), 1 m/s², toward it (−x). At (100, 0) flying straight away (+x): the
    cap, 3 m/s², to its left (+y; straight away both sides are as short, and the left is
    taken). Within 40 m, or flying toward the centroid, no turn; the roost off, no spring
    either."""
    from render.sim.forces import roost

    p = roost.Roost(False, 0.0, 0.0, 0.0, 0.0, math.inf, math.inf, 0.0, 0.0, gather=0.1,
                    gather_radius=40.0, gather_cap=3.0)
    p = roost.at_step(p, np.zeros(3), np.array([1.0, 0.0, 0.0]), False, 1.0, 0.0, 0.01)
    np.testing.assert_allclose(roost.accel(p, 60.0, 0.0, 50.0, 0.0, 1.0), (-1.0, 0.0, 0.0),
                               atol=1e-12)
    np.testing.assert_allclose(roost.accel(p, 100.0, 0.0, 50.0, 1.0, 0.0), (0.0, 3.0, 0.0),
                               atol=1e-12)
    assert roost.accel(p, 30.0, 0.0, 50.0, 0.0, 1.0) == (0.0, 0.0, 0.0)
    np.testing.assert_allclose(roost.accel(p, 60.0, 0.0, 50.0, -1.0, 0.0), 0.0, atol=1e-12)


def two_parts(scene, apart=60.0, first=50):
    """The scene's flock as two groups flying +x side by side, `apart` m apart in y: the
    first `first` birds round (0, 0, 50) and the others round (0, apart, 50)."""
    sim = Simulation(scene, cache=False)
    n = len(sim.positions)
    rng = np.random.default_rng(1)
    pos = rng.normal(scale=1.5, size=(n, 3)) + (0.0, 0.0, 50.0)
    pos[first:, 1] += apart
    sim.positions = pos
    sim.velocities = np.tile([10.0, 0.0, 0.0], (n, 1)) + rng.normal(scale=0.1, size=(n, 3))
    return sim


@pytest.mark.parametrize("gather", [0.0, 0.1])
def test_the_gather_brings_two_parts_of_a_flock_together(gather):
    """Two groups of 50 birds 60 m apart, flying side by side (the roost far off: its
    spring only): each bird's nearest seven are in its own group, so without the gather
    they fly on apart; with it (0.1 /s² beyond 10 m) they are one flock (5 m single
    linkage) within 10 s."""
    from scipy.cluster.hierarchy import fcluster, linkage

    sim = two_parts(scene3(n=100, roost={"radius": 1000.0, "position": [0.0, 30.0]},
                           gather=gather, gather_radius=10.0, gather_cap=2.0))
    largest = 0
    for _ in range(1000):
        sim.advance()
        labels = fcluster(linkage(sim.positions, "single"), 5.0, "distance")
        largest = max(largest, np.bincount(labels).max())
    assert (largest == 100) == (gather > 0)


@pytest.mark.parametrize("roost_on", [False, True])
def test_the_rejoin_matches_the_reference(roost_on):
    """A flock in two parts of 40 and 20 birds, 30 m apart: the reference finds the
    parts with scipy's connected components every half second; the return reads the
    larger part and the gather pulls toward it at `rejoin`, step for step as the
    simulator (with the roost's return and without it)."""
    scene = scene3(n=60, roost_on=roost_on, gather=0.05, gather_radius=2.0, rejoin=0.5,
                   gather_cap=3.0, roost={"radius": 20.0, "position": [-20.0, 0.0]})
    sim = two_parts(scene, apart=30.0, first=40)
    ref = State3(sim.positions.copy(), sim.velocities.copy(), sim.bank.copy(), 0)
    model = model_of(scene)
    worst = 0.0
    for _ in range(120):
        sim.advance()
        ref = naive_step3(ref, model)
        worst = max(worst, np.abs(sim.positions - ref.pos).max(),
                    np.abs(sim.velocities - ref.vel).max())
    assert worst < 1e-9
    assert ref.part is not None and ref.part[:40].all() and not ref.part[40:].any()
    assert sim.homing == ref.homing


def test_the_largest_part_of_a_split_flock():
    """Worked by hand: birds in lines 1 m apart are linked (5 m), lines 20 m apart are
    not. 95 and 5 birds: one flock (95% ≥ 90%). 60, 40: split, the 60. 45, 45 and 10:
    split, a tie, the part of bird 0. With the first 50 of 60, 40 landed, the flying ones
    are 10 and 40: the 40."""
    from render.sim.forces.roost import largest_part

    def lines(*counts):
        return np.concatenate([np.column_stack([np.arange(c, dtype=float), np.full(c, 20.0 * i),
                                                np.full(c, 50.0)])
                               for i, c in enumerate(counts)])

    assert largest_part(lines(95, 5)) is None
    np.testing.assert_array_equal(largest_part(lines(60, 40)), np.arange(100) < 60)
    np.testing.assert_array_equal(largest_part(lines(45, 45, 10)), np.arange(100) < 45)
    flying = np.arange(100) >= 50
    np.testing.assert_array_equal(largest_part(lines(60, 40), flying), np.arange(100) >= 60)


def test_the_return_leans_in_over_two_seconds():
    """Worked by hand: the centroid 20 m out (radius 10, inner 5, 0.2 /s², cap 2 m/s²):
    the goal is min(0.2·15, 2) = 2 m/s², reached 2 s after the return starts, 0.01 m/s²
    more each 10 ms step; back inside the inner radius it eases off at the same rate."""
    from render.sim.forces import roost

    p = roost.Roost(True, 0.0, 0.0, 50.0, 0.1, 10.0, 5.0, 0.2, 2.0)
    out, heading = np.array([20.0, 0.0, 50.0]), np.array([1.0, 0.0, 0.0])
    home = roost.at_step(p, out, heading, False, 1.0, 0.0, 0.01)
    assert home.homing and home.strength == pytest.approx(0.01)
    strengths = []
    for _ in range(250):
        home = roost.at_step(p, out, heading, home.homing, home.side, home.strength, 0.01)
        strengths.append(home.strength)
    assert strengths[198] == pytest.approx(2.0) and strengths[-1] == pytest.approx(2.0)
    assert strengths[97] == pytest.approx(0.99)
    inside = roost.at_step(p, np.array([1.0, 0.0, 50.0]), heading, True, home.side, 2.0, 0.01)
    assert not inside.homing and inside.strength == pytest.approx(1.99)


@pytest.mark.parametrize("rules", [{}, {"max_range": 1.5}])
def test_steps_from_the_candidate_lists_equal_steps_searched_afresh(monkeypatch, rules):
    """1,500 birds over 60 steps: the candidate lists and their grid are drawn anew
    several times, and in between the lists answer most birds (the drifts bounded around
    them on every step) and the old grid, its cells grown by the drifts, the rest. The
    same run with no list allowed to answer (every bird searches the old grid), and with
    the lists and the grid drawn anew every step, gives the same bits."""
    from render.sim import step3d

    real = step3d._drift
    relists = []
    boxed = []
    real_boxes = step3d.drift_boxes

    def boxes_spy(*args):
        boxed.append(True)
        real_boxes(*args)

    monkeypatch.setattr(step3d, "drift_boxes", boxes_spy)

    def spy(*args):
        moved, most, shift, relisting = real(*args)
        relists.append(relisting)
        return moved, most, shift, relisting

    def never(*args):
        moved, most, shift, relisting = real(*args)
        return moved + math.inf, most, shift, relisting

    runs = []
    for drift, every_step in ((spy, False), (never, False), (real, True)):
        monkeypatch.setattr(step3d, "_drift", drift)
        monkeypatch.setattr(step3d, "RELIST_DRIFT", -1.0 if every_step else 0.25)
        # The drifts bounded around each bird on every step between two drawings.
        monkeypatch.setattr(step3d, "LOCAL_DRIFT", 0.0)
        sim = Simulation(scene3(n=1500, **rules), cache=False)
        tested = [sim.advance().candidates.mean() for _ in range(60)]
        runs.append((sim.positions, sim.velocities, sim.bank, np.mean(tested), len(boxed)))
    for other in runs[1:]:
        for a, b in zip(runs[0][:3], other[:3]):
            assert np.array_equal(a, b)
    assert sum(relists[:60]) >= 3 and not all(relists[:60])
    assert runs[0][4] > 0  # the drifts were bounded around the birds on some steps
    assert runs[0][3] < 0.8 * runs[1][3]  # the lists did answer


def test_the_forward_pass_means_are_numpys_to_the_bit():
    """The centroid and mean heading the roost and the follow camera read: numpy's
    mean(axis=0) of the positions and of the unit forward vectors, the same bits."""
    from render.sim import step3d

    rng = np.random.default_rng(3)
    pos = rng.normal(200.0, 40.0, (10_001, 3))
    vel = rng.normal(0.0, 10.0, (10_001, 3))
    vel[5] = 0.0  # at rest: +x
    fwd = np.empty_like(vel)
    centroid, heading = step3d.forward(pos, vel, fwd)
    assert np.array_equal(centroid, pos.mean(axis=0))
    assert np.array_equal(heading, fwd.mean(axis=0))
    assert fwd[5].tolist() == [1.0, 0.0, 0.0]


def test_a_seed_past_int64_flies_after_a_small_one_in_the_same_process():
    # The step's kernels were typed for int64 by the first seed they saw: 2⁶⁴ − 1 after
    # seed 0 raised OverflowError (a notebook trying seeds one after another).
    import render
    from conftest import SCENES

    def flown(seed):
        scene = render.load_scene(SCENES / "flock3d.toml", {
            "flock.count": 60, "scene.settle_steps": 3, "scene.seed": seed,
            "output.frames": 2})
        return list(render.simulate(scene))[-1].positions

    first, big = flown(0), flown(2**64 - 1)
    assert np.isfinite(big).all() and not np.array_equal(first, big)
