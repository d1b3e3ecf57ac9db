"""Numba flags in one place.

No fastmath: reassociating sums would make results depend on vectorisation choices.
`cache=True` so a second run does not recompile. Parallel kernels use `prange` over birds
and write only their own row, so any thread count gives bit-identical results.
"""

import os

# GNU OpenMP busy-waits between parallel regions: as soon as anything else wants the cores
# (ffmpeg encoding, a second render) every kernel launch costs tens of ms. This must be set
# before libgomp loads (numba loads it at the first parallel launch).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba  # noqa: E402

FLAGS = dict(cache=True, fastmath=False, error_model="numpy")

serial = numba.njit(**FLAGS)
parallel = numba.njit(parallel=True, **FLAGS)
prange = numba.prange
