"""The benchmark runs end to end (quick mode) so it cannot rot. It checks that every
figure is measured, not how fast anything is: speed is measured, not timed in tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SMALL_SCENE

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def test_quick_benchmark_measures_every_figure(tmp_path):
    results = tmp_path / "RESULTS.md"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run"), "--quick",
                           "--results", str(results)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in results.read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| figure")]
    figures = " ".join(rows)
    for needle in ("one step, 1 thread", "all-pairs numpy", "cost per bird-step",
                   "drawing 3,600 streaks", "matplotlib", "ffmpeg alone", "full export",
                   "peak memory", "poster", "--help", "1-frame render",
                   "Dask LocalCluster", "machine busy with other work during the export",
                   "full export's floor", "plain x264 crf 23 preset slow",
                   "--quality web, H.264", "--quality web, AV1", "3D topological k=7",
                   "3D cost per bird-step", "3D log-log slope", "3D full export, flock3d",
                   "3D ffmpeg alone", "3D settling before frame 0",
                   "3D of the export's own CPU per frame", "loop (WebM, --loop)",
                   "3D loop of the film", "--check's estimate against the render"):
        assert needle in figures, f"no figure for {needle!r}"
    for row in rows:
        value = row.split("|")[2].strip()
        assert value and not any(bad in value for bad in ("nan", "inf")), row
    # No run finishes before its CPU time spread over the cores: the floor is below the
    # export's ratio, whatever the machine (2% for the clock's ticks on a short run).
    ratios = {row.split("|")[1].split(",")[0].split(":")[0].strip():
              float(row.split("|")[4].strip(" ×")) for row in rows if "full export" in row}
    assert ratios["full export's floor"] <= 1.02 * ratios["full export"], ratios
    assert ratios["3D full export's floor"] <= 1.02 * ratios["3D full export"], ratios

def _run_module():
    """benchmarks/run, a script without a .py suffix, imported."""
    from importlib.machinery import SourceFileLoader
    from importlib.util import module_from_spec, spec_from_loader

    loader = SourceFileLoader("bench_run", str(ROOT / "benchmarks" / "run"))
    module = module_from_spec(spec_from_loader("bench_run", loader))
    loader.exec_module(module)
    return module


def test_host_load_is_the_machine_s_busy_time_less_our_own():
    host_load = _run_module().host_load
    # 2 cores for 10 s: 20 s of CPU; 13 s busy, 9 of them ours, 1 s stolen.
    (row,) = host_load("the export", (100.0, 5.0, 1000.0), (113.0, 6.0, 1020.0), 9.0)
    assert row["value"] == 4 / 20 * 100
    assert "during the export" in row["figure"] and "hypervisor: 5 %" in row["figure"]
    # Coarse clock ticks can leave our own time above the machine's busy time: 0, not less.
    (row,) = host_load("x", (100.0, 0.0, 1000.0), (108.0, 0.0, 1020.0), 8.5)
    assert row["value"] == 0.0
    assert host_load("x", None, (1.0, 0.0, 2.0), 0.0) == []


def test_export_rows_from_hand_worked_turns():
    export_rows = _run_module().export_bench.export_rows
    # Three turns of ((wall, CPU) ffmpeg alone, (wall, CPU) export), 600 frames, 2 cores.
    pairs = [((30.0, 54.0), (34.0, 64.0)), ((28.0, 52.0), (33.0, 63.0)),
             ((29.0, 53.0), (36.0, 66.0))]
    rows = export_rows(pairs, 600, "1920x1080", 2)

    def row(start):
        (found,) = [r for r in rows if r["figure"].startswith(start)]
        return found

    export = row("full export, plate")
    assert (export["value"], export["reference"]) == (34.0, 29.0)
    assert export["ratio"] == 33.0 / 28.0  # the median turn's, not 34 / 29
    assert "1.83 of 2 cores busy" in row("ffmpeg alone, CPU")["figure"]
    assert row("ffmpeg alone, CPU")["value"] == 53.0
    assert row("full export, CPU")["value"] == 64.0
    floor = row("full export's floor")
    assert floor["value"] == 32.0 and floor["ratio"] == 63.0 / 2 / 28.0
    assert row("CPU the export adds")["value"] == 1e3 * 11.0 / 600


def test_results_say_which_sections_ran_and_what_is_left():
    run = _run_module()
    row = {"figure": "x", "value": 1.0, "unit": "ms"}
    every = {name: run.block(name, [row], False) for name in run.SECTIONS}
    whole = run.report(every, [])
    assert "Partial" not in whole and "Not measured yet" not in whole
    assert whole.count("| x | 1 ms |") == len(run.SECTIONS)
    cut = run.report({"sim": every["sim"], "sim3d": every["sim3d"]}, ["draw"])
    assert "Partial: 1 section(s) still to run (draw)" in cut
    assert "## sim: the simulation figures" in cut and "## draw:" not in cut
    assert "Not measured yet: draw," in cut


def test_a_run_of_some_sections_keeps_the_others_as_they_were():
    run = _run_module()
    old = run.report({name: run.block(name, [{"figure": f"old {name}", "value": 1.0,
                                               "unit": "ms"}], False)
                      for name in run.SECTIONS}, [])
    kept = run.sections_in(old)
    assert list(kept) == list(run.SECTIONS)
    kept["sim3d"] = run.block("sim3d", [{"figure": "new sim3d", "value": 2.0, "unit": "ms"}],
                              False)
    merged = run.report(kept, [])
    assert "new sim3d" in merged and "old sim3d" not in merged
    for name in run.SECTIONS:
        if name != "sim3d":
            assert f"| old {name} | 1 ms |" in merged
    # Sections come back in the run's order, each with its own heading, once.
    assert run.sections_in(merged) == kept
    assert [line for line in merged.splitlines() if line.startswith("## ")] == \
        [f"## {name}: {desc}" for name, (desc, _) in run.SECTIONS.items()]
    assert run.sections_in("# Benchmark results\n\n| figure | value |\n") == {}


def test_a_difference_reads_as_one_not_as_a_ratio():
    run = _run_module()
    row = run.figures.result("VMAF", 86.6, "", reference=86.8, ratio=-0.2,
                             compared=" points (difference)")
    assert "| -0.2 points (difference) |" in run.table([row])
    assert "| 1.5× |" in run.table([run.figures.result("t", 3.0, "s", reference=2.0)])


def test_the_sky_cover_bound_runs_and_its_flocks_are_what_it_says():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import numpy as np
    from sky_cover_bound import DENSEST_M3, ellipsoid, flocks

    rng = np.random.default_rng(0)
    axes = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    points = ellipsoid(rng, np.array([1.0, 2.0, 3.0]), axes, (2.0, 5.0, 9.0), 200_000)
    local = (points - [1.0, 2.0, 3.0]) @ axes
    assert (((local / [2.0, 5.0, 9.0]) ** 2).sum(axis=1) <= 1.0 + 1e-12).all()
    assert np.cov(local.T) == pytest.approx(np.diag([4.0, 25.0, 81.0]) / 5, abs=0.05)
    named = dict(flocks(rng, points[:5000]))
    dense = named["sharp-edged, densest, 1 : 2.8 : 5.6"] @ axes
    semi = np.sqrt(5 * np.sort(np.var(dense, axis=0)))
    assert semi / semi[0] == pytest.approx([1.0, 2.8, 5.6], rel=0.05)
    assert 4 / 3 * np.pi * semi.prod() / 5000 == pytest.approx(DENSEST_M3, rel=0.05)
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sky_cover_bound.py"),
                           "--birds", "300", "--times", "1"], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    medians = proc.stdout.split("median over the samples")[1].splitlines()[1:]
    assert len(medians) == len(named)
    assert all(0.0 < float(line.split()[-2]) < 1.0 for line in medians), proc.stdout


def test_the_loop_bound_pairs_within_reach_by_hand(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import numpy as np
    from loop_bound import least_fading

    tail = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    head = np.array([[0.5, 0.0], [1.5, 0.0], [9.0, 0.0]])
    plain = np.zeros(3, bool)
    # Birds 0 and 1 reach only head 0 and heads 0–1, bird 2 only head 1: two of three pair.
    assert least_fading(tail, head, plain, 1.0) == pytest.approx(1 / 3)
    assert least_fading(tail, head, plain, 7.5) == 0.0  # bird 2 reaches the far one
    # Across a wrapping edge 10 wide, 9.0 lies 1 from 0.0.
    assert least_fading(tail, head, plain, 1.0, np.array([10.0, 10.0])) == 0.0
    # An accent bird pairs only with an accent bird, however near the others.
    swapped = np.array([[0.0, 0.0], [5.0, 0.0]])
    assert least_fading(swapped, swapped[::-1], np.zeros(2, bool), 1.0) == 0.0
    assert least_fading(swapped, swapped[::-1], np.array([True, False]), 1.0) == 1.0
    scene = tmp_path / "small.toml"
    scene.write_text(SMALL_SCENE)
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "loop_bound.py"),
                           str(scene), "--frames", "12", "--crossfade", "0.2"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    shares = [float(line.split("at least ")[1].split("%")[0])
              for line in proc.stdout.splitlines() if line.startswith("t₀")]
    assert len(shares) == 7 and all(0.0 <= s <= 100.0 for s in shares), proc.stdout
    assert f"at best {min(shares):.1f}%" in proc.stdout


@pytest.mark.parametrize("seed", range(6))
def test_the_loop_bounds_matching_is_as_large_as_scipys(seed):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import numpy as np
    from loop_bound import matched
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    rng = np.random.default_rng(seed)
    tails, heads = rng.integers(5, 60, size=2)
    i, j = rng.integers(0, tails, 3 * tails), rng.integers(0, heads, 3 * tails)
    pairs = np.unique(np.stack([i, j], axis=1), axis=0)  # sorted by tail
    first = np.searchsorted(pairs[:, 0], np.arange(tails + 1))
    found = matched(first, pairs[:, 1], heads)
    taken = found[found >= 0]
    assert len(set(taken.tolist())) == len(taken)  # each head once
    edges = set(map(tuple, pairs.tolist()))
    assert all((a, b) in edges for a, b in enumerate(found) if b >= 0)
    graph = coo_matrix((np.ones(len(pairs)), pairs.T), shape=(tails, heads)).tocsr()
    assert len(taken) == (maximum_bipartite_matching(graph, perm_type="column") >= 0).sum()
