"""Per-frame diagnostics of a flock (SPEC §7), written as CSV or JSON."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from .simulate import Snapshot, unit_headings

COLUMNS = ("frame", "time_s", "global_polarisation", "local_polarisation",
           "neighbours_p10", "neighbours_p50", "neighbours_p90",
           "nearest_median_spacings", "candidates_mean")


def measure(snap: Snapshot, spacing: float) -> dict[str, float]:
    """Diagnostics of one state; `spacing` = sqrt(world area / count)."""
    unit = unit_headings(snap.velocities)
    moving = np.any(unit != 0.0, axis=1)
    global_pol = float(np.hypot(*unit[moving].mean(axis=0))) if moving.any() else 0.0
    has = snap.neighbours > 0
    local = np.hypot(snap.local_heading[has, 0], snap.local_heading[has, 1])
    local_pol = float(local.mean()) if has.any() else math.nan
    p10, p50, p90 = np.percentile(snap.neighbours, [10, 50, 90])
    nearest = snap.nearest[np.isfinite(snap.nearest)]
    nn = float(np.median(nearest)) / spacing if nearest.size else math.nan
    return {
        "global_polarisation": global_pol,
        "local_polarisation": local_pol,
        "neighbours_p10": float(p10),
        "neighbours_p50": float(p50),
        "neighbours_p90": float(p90),
        "nearest_median_spacings": nn,
        "candidates_mean": float(snap.candidates.mean()),
    }


def write(rows: list[dict], path: str | Path) -> None:
    """Rows as CSV (.csv) or a JSON list of objects (.json)."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        path.write_text(json.dumps(rows, indent=1) + "\n")
        return
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
