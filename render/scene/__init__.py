"""Scene files: typed, immutable settings read from TOML and validated before anything runs.

schema.py holds the frozen dataclasses (every field documented by `setting()`), values.py
turns one raw value into its typed value, load.py reads a file, applies overrides and checks
everything at once. This package imports no numpy, numba or cairo.
"""

from .load import RECORDED_SCENE, build_scene, describe, load_scene, parse_override
from .schema import (MAX_BIRDS, MAX_MAGNITUDE, MIN_POSITIVE, MIN_WORLD, OPTIONAL_SECTIONS,
                     SECTIONS, THEMES, AttractorSettings, CameraSettings, ContainmentSettings,
                     FieldSettings, FlockSettings, HawkSettings, OutputSettings,
                     PaletteSettings, RenderSettings, RulesSettings, Scene, SceneSettings,
                     WorldSettings, bird_estimate, setting)
from .values import MAX_SIDE, parse_fps, parse_size

__all__ = [
    "RECORDED_SCENE", "build_scene", "describe", "load_scene", "parse_override",
    "MAX_BIRDS", "MAX_MAGNITUDE", "MIN_POSITIVE", "MIN_WORLD", "MAX_SIDE",
    "OPTIONAL_SECTIONS", "SECTIONS", "THEMES", "Scene", "setting", "bird_estimate",
    "SceneSettings", "WorldSettings", "FlockSettings", "RulesSettings", "AttractorSettings",
    "FieldSettings", "ContainmentSettings", "HawkSettings", "CameraSettings",
    "PaletteSettings", "RenderSettings", "OutputSettings", "parse_fps", "parse_size",
]
