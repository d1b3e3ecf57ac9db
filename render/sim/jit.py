"""Numba flags in one place, and the one intrinsic the kernels need.

No fastmath, except `vectorised`: the few loops that add up one bird's candidates may be
reassociated, so the compiler can keep partial sums in vector lanes. Which lane a candidate
lands in depends only on that bird's candidate list and the machine code, never on the
thread count or on other birds, so results stay bit-identical for any number of threads
(on one machine and one numba build). Nothing else may reassociate, and no flag that
assumes away NaN or inf (an empty neighbourhood's nearest distance is inf).
Cached (`cache=True`; render.sim.cache names the folder), so a second run does not
recompile. Parallel kernels use `prange` over birds and write only their own row, so any
thread count gives bit-identical results.

Every kernel lets go of the GIL (`nogil`): the drawing threads' kernels (sky, streaks,
compositing) then run beside the simulation's, and a loop's pairings beside the flight
(render.sim.loop). No kernel touches a Python object, and each writes only arrays its
caller owns, so that is safe; the bits are the same.
"""

import functools
import inspect
from types import FunctionType, MappingProxyType

from llvmlite import ir
from numba import njit, prange, types
from numba.core.errors import NumbaTypeError
from numba.extending import intrinsic

__all__ = ["FLAGS", "SERIAL_BELOW", "inline", "parallel", "prange", "serial", "sized",
           "trailing_zeros", "vectorised"]

FLAGS = MappingProxyType(dict(fastmath=False, error_model="numpy", cache=True, nogil=True))

serial = njit(**FLAGS)
# Inlined into each caller in numba's IR: a caller that passes a constant (a flag) gets a
# copy with the other branch compiled away.
inline = njit(**FLAGS, inline="always")
parallel = njit(**FLAGS, parallel=True)
# Reassociation only ("reassoc"; "nsz": the sign of a zero sum may differ): a sum over a
# bird's candidates then vectorises. See the module docstring.
vectorised = njit(**{**FLAGS, "fastmath": {"reassoc", "nsz"}})

# Below this many birds the small passes around a 3D step (`sized`) run on one thread:
# their threads sleep between parallel regions (OMP_WAIT_POLICY=PASSIVE, so an encoder
# beside them keeps its cores), and waking them costs more than such a pass. The film's
# step with its hunt, 360 frames: 0.83× the wall time of parallel passes at 5,000 birds,
# 0.94× at 10,000, 1.07× at 20,000 (its CPU time 0.87×, 0.91×, 0.98×).
SERIAL_BELOW = 15_000


class Sized:
    """A kernel over birds compiled twice, `parallel` and `serial`; a call runs the serial
    one when its argument `birds` (by position) holds fewer than SERIAL_BELOW rows. Each
    bird writes only its own rows, so both give the same bits."""

    def __init__(self, fn, at: int):
        twin = FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                            fn.__closure__)
        twin.__qualname__ = f"{fn.__qualname__}_serial"  # numba caches by qualname
        self.parallel, self.serial, self.at = parallel(fn), serial(twin), at
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        small = len(args[self.at]) < SERIAL_BELOW
        return (self.serial if small else self.parallel)(*args)


def sized(birds: str):
    """Decorator: the kernel as a `Sized`, its size read from its argument `birds`."""
    def wrap(fn):
        return Sized(fn, list(inspect.signature(fn).parameters).index(birds))
    return wrap


@intrinsic
def trailing_zeros(typingctx, word):
    """The number of trailing zero bits of an integer, of the integer's type: LLVM's cttz,
    one instruction (tzcnt/bsf) where a loop over the bits would branch per bit. Zero gives
    the type's width."""
    if not isinstance(word, types.Integer):
        raise NumbaTypeError(f"trailing_zeros needs an integer, not {word}")

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return word(word), codegen
