"""The benchmark runs end to end (quick mode) so it cannot rot. It checks that every
figure is measured, not how fast anything is: speed is measured, not timed in tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
                   "Dask LocalCluster"):
        assert needle in figures, f"no figure for {needle!r}"
    for row in rows:
        value = row.split("|")[2].strip()
        assert value and not any(bad in value for bad in ("nan", "inf")), row
