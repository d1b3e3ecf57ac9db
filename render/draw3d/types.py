"""The values the 3D drawing passes from stage to stage: where the camera is (`Pose`) and
the birds as it sees them (`Streaks`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Pose(NamedTuple):
    """A pinhole camera at one instant, for a full frame of width × height pixels.

    A world point x projects to u = width/2 + focal·(p·right)/(p·forward),
    v = cy − focal·(p·up)/(p·forward), p = x − position; u grows to the right and v
    downward, in pixels, (0, 0) the top-left corner of the full frame (a tile or window
    is a part of that frame, not another camera)."""

    position: np.ndarray  # (3,) m
    right: np.ndarray  # (3,) unit
    up: np.ndarray  # (3,) unit, the screen's up (orthogonal to forward)
    forward: np.ndarray  # (3,) unit, the optical axis
    focal: float  # px: (height/2) / tan(fov/2) where width ≥ aspect·height
    width: int
    height: int
    near: float  # m: the near plane's distance along forward
    # The frame shape (width / height) the view is composed for, its vertical field of
    # view the scene's fov: a frame of any other shape shows at least that view.
    aspect: float = 16 / 9
    # Where a frame taller than that shape puts the view it is composed for: 0 at its top,
    # 1 at its bottom, 0.5 centred (camera.lift).
    lift: float = 0.5

    @property
    def cy(self) -> float:
        """px from the top: the row the optical axis meets, the composed view's centre."""
        composed = min(float(self.height), self.width / self.aspect)
        return self.lift * (self.height - composed) + 0.5 * composed


class Streaks(NamedTuple):
    """The birds in front of the camera, as streaks on the full frame, far to near.

    Each is a segment from (x0, y0) to (x1, y1) in pixels (as `Pose`), drawn with round
    caps `width` px wide, so its area on screen is length·width + π·width²/4. `alpha`
    (0, 1] is its opacity: alpha × that area is the bird's projected silhouette in px²
    (after the width floor). `contrast` is what the atmosphere leaves of it, 0.05^(d/V)
    (1 without haze), d its distance in m; `depth` its distance along the optical axis,
    m, non-increasing down the rows; `accent` the accent birds; `ids` each streak's bird
    row in the state (−1: the hawk's)."""

    x0: np.ndarray  # (m,) float64
    y0: np.ndarray
    x1: np.ndarray
    y1: np.ndarray
    width: np.ndarray
    alpha: np.ndarray
    contrast: np.ndarray
    depth: np.ndarray
    accent: np.ndarray  # (m,) bool
    ids: np.ndarray  # (m,) int64
