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
"""

from types import MappingProxyType

from llvmlite import ir
from numba import njit, prange, types
from numba.core.errors import NumbaTypeError
from numba.extending import intrinsic

__all__ = ["FLAGS", "inline", "parallel", "prange", "serial", "trailing_zeros", "vectorised"]

FLAGS = MappingProxyType(dict(fastmath=False, error_model="numpy", cache=True))

serial = njit(**FLAGS)
# Inlined into each caller in numba's IR: a caller that passes a constant (a flag) gets a
# copy with the other branch compiled away.
inline = njit(**FLAGS, inline="always")
parallel = njit(**FLAGS, parallel=True)
# Reassociation only ("reassoc"; "nsz": the sign of a zero sum may differ): a sum over a
# bird's candidates then vectorises. See the module docstring.
vectorised = njit(**{**FLAGS, "fastmath": {"reassoc", "nsz"}})

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
