"""The simulator. Importing it first points numba at its cache folder and its portable
target (render.sim.cache), which numba reads once, when it is first imported."""

from .cache import use_numba_cache

use_numba_cache()
