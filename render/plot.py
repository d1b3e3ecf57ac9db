"""A picture of the diagnostics over time (--plot), readable without opening the CSV."""

from __future__ import annotations

import math
from pathlib import Path

from .errors import UsageError, option

# matplotlib writes each as its suffix says: a picture for the screen, or vectors for print.
SUFFIXES = (".png", ".pdf", ".svg")


def require(path: str | Path) -> None:
    """UsageError, before any work, when a plot cannot be written to `path`: a suffix
    other than SUFFIXES, or matplotlib missing."""
    import importlib.util

    if Path(path).suffix.lower() not in SUFFIXES:
        raise UsageError(f"{path}: {option('--plot')} draws {', '.join(SUFFIXES[:-1])} or "
                         f"{SUFFIXES[-1]}, as the suffix says; got "
                         f"{Path(path).suffix or 'no suffix'}")
    if importlib.util.find_spec("matplotlib") is None:
        _pyplot()  # says how to install it


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'boids-render[plot]'") from None
    return plt


def _panels(rows: list[dict]):
    """(pyplot, figure, its four stacked axes sharing time, the rows' times)."""
    plt = _pyplot()
    fig, axes = plt.subplots(4, 1, figsize=(10, 9), sharex=True, constrained_layout=True)
    return plt, fig, axes, [r["time_s"] for r in rows]


def plot(rows: list[dict], path: str | Path, title: str = "", *,
         overwrite: bool = True) -> None:
    """Four stacked panels against time: in 2D polarisation (global, local), neighbour-count
    percentiles, nearest-neighbour distance, and containment share / hawk hole radius; in
    3D (rows with altitudes) see `plot3d`. overwrite=False: UsageError when `path` exists
    by the time the plot is drawn."""
    if rows and "altitude_p50" in rows[0]:
        return plot3d(rows, path, title, overwrite=overwrite)
    plt, fig, axes, time = _panels(rows)
    col = lambda key: [r[key] for r in rows]  # noqa: E731
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
        ax.legend(loc="best", ncol=3)  # the polarisation runs along the top
    for ax in axes:
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    _save(plt, fig, path, overwrite)


def plot3d(rows: list[dict], path: str | Path, title: str = "", *,
           overwrite: bool = True) -> None:
    """A 3D flock's four panels against time, the hawk's attacks shaded in each: the
    polarisation and the largest cluster's share; the proportions (middle and longest
    over thinnest); the altitude percentiles and the median speed; the border ratio and
    the share landed."""
    plt, fig, axes, time = _panels(rows)
    col = lambda key: [r.get(key, math.nan) for r in rows]  # noqa: E731
    ax = axes[0]
    ax.plot(time, col("global_polarisation"), label="polarisation")
    ax.plot(time, col("cluster_share"), label="largest cluster", ls="", marker=".")
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("share")
    ax = axes[1]
    ax.plot(time, col("proportion_middle"), label="middle / thinnest", ls="", marker=".")
    ax.plot(time, col("proportion_longest"), label="longest / thinnest", ls="", marker=".")
    ax.set_ylabel("proportions")
    ax = axes[2]
    for p in ("p90", "p50", "p10"):
        ax.plot(time, col(f"altitude_{p}"), label=f"altitude {p}")
    ax.plot(time, col("speed_p50"), label="median speed (m/s)", color="k")
    ax.set_ylabel("m, m/s")
    ax = axes[3]
    ax.plot(time, col("border_ratio"), label="border ratio", ls="", marker=".")
    ax.plot(time, col("landed_share"), label="landed")
    ax.set_ylabel("ratio, share")
    ax.set_xlabel("time (s)")
    attacks = _runs(time, col("attack"))
    for ax in axes:
        for a, b in attacks:
            ax.axvspan(a, b, color="tab:red", alpha=0.12, lw=0)
        # Where it hides the fewest points: the curves sit at any height.
        ax.legend(loc="best", ncol=4, fontsize="small")
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(f"{title} (attacks shaded)" if attacks else title)
    _save(plt, fig, path, overwrite)


def _save(plt, fig, path: str | Path, overwrite: bool) -> None:
    """`fig` into `path` in the format its suffix names, whole or not at all, and closed."""
    from .encode.files import place_or_refuse

    try:
        place_or_refuse(Path(path), lambda tmp: fig.savefig(
            tmp, dpi=110, format=Path(path).suffix.lower()[1:]), overwrite=overwrite)
    finally:
        plt.close(fig)


def _runs(time: list[float], flag: list[float]) -> list[tuple[float, float]]:
    """The spans of time over which `flag` is set (> 0), as (first, last) times."""
    spans, begun = [], None
    for t, f in zip(time, flag):
        if f > 0 and begun is None:
            begun = t
        elif not f > 0 and begun is not None:
            spans.append((begun, t))
            begun = None
    if begun is not None:
        spans.append((begun, time[-1]))
    return spans
