"""Numba flags in one place.

No fastmath: reassociating sums would make results depend on vectorisation choices.
`cache=True` so a second run does not recompile. Parallel kernels use `prange` over birds
and write only their own row, so any thread count gives bit-identical results.
"""

import numba

FLAGS = dict(cache=True, fastmath=False, error_model="numpy")

serial = numba.njit(**FLAGS)
parallel = numba.njit(parallel=True, **FLAGS)
prange = numba.prange
