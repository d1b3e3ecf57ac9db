"""A render on a Dask LocalCluster against the local pipeline, on the same machine.

Both draw and encode the same clip with 2 workers; the cluster's figure includes starting
its worker processes, as a user waits for it. On one machine the cluster can at best match
the local pipeline: its point is machines the local pipeline cannot use.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from export_bench import CLI, SCENE, _timed
from figures import result


def cluster_vs_local(quick: bool = False, repeats: int = 3) -> list[dict]:
    size, frames = ("320x180", 24) if quick else ("1920x1080", 240)
    repeats = 1 if quick else repeats
    with tempfile.TemporaryDirectory() as tmp:
        base = [*CLI, str(SCENE), "-o", str(Path(tmp) / "m.mp4"), "--size", size, "--quiet",
                "--workers", "2"]
        clip = [*base, "--frames", str(frames)]
        on_cluster = [*clip, "--scheduler", "local"]
        _timed(clip)  # warm the JIT cache and the page cache
        local_s = statistics.median(_timed(clip) for _ in range(repeats))
        cluster_s = statistics.median(_timed(on_cluster) for _ in range(repeats))
        start_s = statistics.median(_timed([*base, "--frames", "1", "--scheduler", "local"])
                                    for _ in range(repeats))
    what = f"{frames} frames, {size}, crf 18, 2 workers"
    return [
        result(f"local pipeline throughput, {what}", frames / local_s, "frames/s"),
        result(f"Dask LocalCluster throughput incl. start-up, {what}", frames / cluster_s,
               "frames/s", reference=frames / local_s,
               target="reported (≤ 1 on one machine)"),
        result("Dask LocalCluster, 1-frame render (start-up and join)", start_s, "s"),
    ]
