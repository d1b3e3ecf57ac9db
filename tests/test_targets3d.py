"""The shipped 3D murmuration against issue 20's targets (real starlings), measured by
benchmarks/murmuration_targets.py: the shape every 0.5 s, the correlation length every
2 s on a sample, the sky cover through the default camera, the hunt's attacks and the
landing.

The issue's set, as CI runs it: seeds 0–4 of the shipped 20,000 birds, each the scene's
30 s of settling, its 60 s of hunt and its 60 s of landing, every row asserted on every
seed; the split across the seeds; ξ's growth from 5,000 birds (seed 0) to 20,000. The
six runs go two at a time (`murmuration_targets.runs`): 9 min 8 s of two cores from an
empty cache of settled flocks (docs/starlings.md, "What the tests cover"). The two rows
the film misses are expected failures (OPEN). `BOIDS_TARGETS=quick` runs seed 0 at 5,000
birds alone (about 2 min), where the escape turn costs two rows more.
"""

from __future__ import annotations

import math
import os
import sys
from functools import lru_cache
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import murmuration_targets as mt  # noqa: E402

pytestmark = pytest.mark.slow

FULL = os.environ.get("BOIDS_TARGETS") != "quick"
SHIPPED = 20000
RUNS = [(seed, SHIPPED) for seed in range(5)] if FULL else [(0, 5000)]


@lru_cache(maxsize=None)
def everything() -> dict[tuple[int, int], mt.Run]:
    specs = RUNS + ([(0, 5000)] if FULL else [])  # ξ's growth: 5,000 birds beside 20,000
    return dict(zip(specs, mt.runs(specs)))


def measured(seed: int, birds: int) -> mt.Run:
    return everything()[(seed, birds)]


# Each row of the table (its measure's name, as murmuration_targets.table spells it).
MEASURES = ("nearest-neighbour", "middle / thinnest", "longest / thinnest", "|thinnest axis",
            "speed", "polarisation", "non-attack samples", "longest axis'", "border ratio",
            "ξ / L", "attacks begun", "share of time", "share startled", "wave speed",
            "sky covered", "landed", "lowest bird", "birds over")
# Targets the film does not meet (docs/starlings.md says what was tried and why):
# asserted all the same, as expected failures that must fail, so one that starts to hold
# is seen.
OPEN = {
    "border ratio": "under 1.1 on every seed (0.653–0.672): the settings tried that "
                    "reach it tilt the sheet off level",
    "sky covered": "the flock covers 11–12% of its outline, not 25–60%; at 20,000 birds no "
                   "arrangement within the other targets reaches 25% "
                   "(benchmarks/sky_cover_bound.py)"}
if not FULL:
    # The film's escape turn parts a quarter to a half of 20,000 birds for a few seconds;
    # it reaches a third to two thirds of 5,000, and they part for longer.
    OPEN |= {"non-attack samples": "the escape turn parts a 5,000-bird flock for longer: "
                                   "one flock in 64% of the samples (the film's 20,000: "
                                   "83–100%)",
             "birds over": "the escape turn sends 3.2% of a 5,000-bird flock 30 m under "
                           "its altitude (the film's 20,000: 0.32% at most)"}


@pytest.mark.parametrize("measure", [
    pytest.param(m, marks=pytest.mark.xfail(strict=True, reason=OPEN[m])) if m in OPEN
    else m for m in MEASURES])
@pytest.mark.parametrize("seed, birds", RUNS)
def test_each_run_meets_the_target(seed, birds, measure):
    rows = [row for row in mt.table(measured(seed, birds)) if row[0].startswith(measure)]
    assert len(rows) == 1, measure
    name, target, value, ok = rows[0]
    assert ok, f"{name}: {value} (target {target})"


@pytest.mark.skipif(not FULL, reason="the five seeds: BOIDS_TARGETS=quick leaves them out")
def test_some_seed_splits_and_rejoins():
    splits = [mt.longest_split(measured(seed, birds).shape) for seed, birds in RUNS]
    assert any(held >= mt.SPLIT_HOLD and back <= mt.REJOIN_WITHIN for held, back in splits), \
        splits


@pytest.mark.skipif(not FULL, reason="the five seeds: BOIDS_TARGETS=quick leaves them out")
def test_the_correlation_length_grows_with_the_flock():
    small, large = mt.xi_of(measured(0, 5000)), mt.xi_of(measured(0, SHIPPED))
    for xi, length in (small, large):
        assert 0.2 <= xi / length <= 0.5
    assert large[0] / small[0] >= 0.8 * large[1] / small[1]
    assert math.isfinite(large[0])


def test_runs_at_once_are_the_runs_one_by_one():
    # Each in a process of its own, on one thread: the same series as run by run here,
    # to the bit (compared by repr, where a NaN reads as itself).
    small = dict(extra=[("scene.settle_steps", "100")], landing=False, sky=False)
    specs = [(0, 100), (1, 100)]
    for alone, together in zip([mt.run(*spec, **small) for spec in specs],
                               mt.runs(specs, jobs=2, **small)):
        assert (together.seed, together.birds) == (alone.seed, alone.birds)
        for name in ("shape", "xi", "attacks", "lowest_m", "steps", "attack_steps"):
            assert repr(getattr(together, name)) == repr(getattr(alone, name)), name


def samples(split: list[tuple[float, float]], end: float = 30.0) -> list[dict]:
    """Shape samples every 0.5 s: two clusters of 70% and 30% inside the (from, to)
    spans of `split`, one cluster of every bird elsewhere."""
    out = []
    for k in range(round(end / mt.SHAPE_EVERY)):
        t = k * mt.SHAPE_EVERY
        apart = any(a <= t < b for a, b in split)
        out.append(dict(t=t, cluster=0.7 if apart else 1.0, second=0.3 if apart else 0.0))
    return out


def test_a_split_lasts_until_the_flock_is_one_again_for_two_seconds():
    """Worked by hand: apart 10–14.5 s, one cluster for a single sample at 14.5 s (the
    parts brushing past), apart again 15–16.5 s, one from 16.5 s: one split, held 4.5 s,
    met again 6.5 s after it began (not 4.5 s, at the brush). One for 1.5 s only, then
    apart to the end: never met."""
    assert mt.longest_split(samples([(10.0, 14.5), (15.0, 16.5)])) == (4.5, 6.5)
    assert mt.longest_split(samples([(10.0, 14.5), (16.0, 30.0)])) == (4.5, math.inf)
    assert mt.longest_split(samples([(10.0, 14.5), (16.5, 30.0)])) == (4.5, 4.5)
    assert mt.longest_split(samples([])) == (0.0, math.inf)


def test_a_split_begun_in_the_minute_is_followed_past_it():
    """Worked by hand: apart 57–63 s, one from 63 s. The minute's samples alone never see
    it meet again; followed on to 80 s (`run(follow=80)` samples past the minute into
    `after`) it held 6 s and met again 6 s after it began. A split begun at 70 s, past the
    minute, is not the minute's."""
    def followed(shape: list[dict], follow: bool = True) -> mt.Run:
        return mt.Run(0, 10, shape=[s for s in shape if s["t"] < mt.WINDOW],
                      after=[s for s in shape if follow and s["t"] >= mt.WINDOW])

    shape = samples([(57.0, 63.0)], end=80.0)
    assert mt.split_of(followed(shape, follow=False)) == (3.0, math.inf)
    assert mt.split_of(followed(shape)) == (6.0, 6.0)
    assert mt.split_of(followed(samples([(70.0, 75.0)], end=80.0))) == (0.0, math.inf)
