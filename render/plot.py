"""A picture of the diagnostics over time (--plot), readable without opening the CSV."""

from __future__ import annotations

import math
from pathlib import Path

from .errors import UsageError


def plot(rows: list[dict], path: str | Path, title: str = "") -> None:
    """Four stacked panels against time: polarisation (global, local), neighbour-count
    percentiles, nearest-neighbour distance, and containment share / hawk hole radius."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'boids-render[plot]'") from None

    time = [r["time_s"] for r in rows]
    col = lambda key: [r[key] for r in rows]  # noqa: E731
    fig, axes = plt.subplots(4, 1, figsize=(10, 9), sharex=True, constrained_layout=True)
    ax = axes[0]
    ax.plot(time, col("global_polarisation"), label="global")
    ax.plot(time, col("local_polarisation"), label="local")
    ax.set_ylim(0, 1)
    ax.set_ylabel("polarisation")
    ax = axes[1]
    for p in ("p90", "p50", "p10"):
        ax.plot(time, col(f"neighbours_{p}"), label=p)
    ax.set_ylabel("neighbours within r")
    ax = axes[2]
    ax.plot(time, col("nearest_median_spacings"), color="tab:purple")
    ax.set_ylabel("median nearest\nneighbour (spacings)")
    ax = axes[3]
    if not all(math.isnan(v) for v in col("inside_share")):
        ax.plot(time, col("inside_share"), color="tab:green", label="inside ellipse")
        ax.set_ylim(0, 1)
    ax.set_ylabel("share inside")
    if not all(math.isnan(v) for v in col("hole_radius")):
        twin = ax.twinx()
        twin.plot(time, col("hole_radius"), color="tab:red", label="hawk hole radius")
        twin.set_ylabel("hole radius (world units)")
        twin.legend(loc="lower right")
    ax.set_xlabel("time (s)")
    for ax in axes[:2]:
        ax.legend(loc="upper right", ncol=3)
    for ax in axes:
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)
