"""Seamless loops on the rendering side: how many frames morph, and how well the rendered
loop closes. The flock's side of the morph is sim/loop.py."""

from __future__ import annotations

import numpy as np

from .errors import UsageError
from .scene import Scene


def crossfade_frames(scene: Scene, first: int) -> int:
    """Frames of the loop's morph (0: not a loop)."""
    out = scene.output
    if not out.loop:
        return 0
    if first:
        raise UsageError("--frames A:B: a loop is rendered whole (its first frames depend on "
                         "its last)")
    return max(1, round(out.crossfade * out.fps))  # shorter than the clip: the scene checks it


class SeamMeter:
    """How well a loop closes: the mean absolute pixel difference from the last frame to
    the first against the consecutive frames' (median), and the ink coverage during the
    morph against the clip's median (a ghosted double flock would raise it)."""

    def __init__(self, scene: Scene | None, crossfade: int):
        self.crossfade = crossfade
        self.first = self.last = None
        self.steps: list[float] = []
        self.coverage: list[float] = []

    def add(self, pixels: np.ndarray) -> None:
        """The next frame's (h, w, 4) uint8 BGRA pixels."""
        rgb = pixels[:, :, :3].astype(np.int16)
        if self.first is None:
            self.first = rgb
        else:
            self.steps.append(float(np.abs(rgb - self.last).mean()))
        self.last = rgb
        self.coverage.append(float((np.abs(rgb - self.first[0, 0]).max(axis=2) > 24).mean()))

    def measures(self) -> dict[str, float]:
        """The seam's figures; the coverage ones NaN where the median frame has no ink."""
        median = float(np.median(self.steps))
        cover = float(np.median(self.coverage))
        blend = self.coverage[:self.crossfade]
        low, high = (min(blend) / cover - 1, max(blend) / cover - 1) if cover else (np.nan,) * 2
        return {"seam": float(np.abs(self.first - self.last).mean()), "median_step": median,
                "max_step": max(self.steps), "coverage_low": low, "coverage_high": high}

    def report(self) -> str:
        """One line of the figures ("" before two frames)."""
        if not self.steps:
            return ""
        m = self.measures()
        coverage = ("no ink in the median frame" if np.isnan(m["coverage_low"]) else
                    f"ink coverage during the morph {m['coverage_low']:+.0%} to "
                    f"{m['coverage_high']:+.0%} of the median")
        return (f"loop seam: last→first {m['seam']:.2f}, consecutive frames median "
                f"{m['median_step']:.2f} (×{m['seam'] / max(m['median_step'], 1e-9):.2f}), "
                f"max {m['max_step']:.2f}; {coverage}")
