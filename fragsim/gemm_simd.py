"""Eight-lane vectors of 32-bit lanes for ``fragsim.gemm_kernel``: ``S8`` (8 x float32), ``W8`` (8 x int32).

Why: with f16 inputs a product is exact in float32 (22 significant bits, exponents -48..32), and so is
its scaling to the block's fixed point (an integer below 2**27); eight such lanes fill a 256-bit
register where the float64 path (``fragsim.arith.simd``) needs 512 bits, and a block of up to 16
truncated terms sums exactly in int32.  numba intrinsics: call them from ``@njit`` code only.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic, models, register_model

from .arith.simd import F8, I8, _elem_ptr, _llvm_fn, _splat

LANES = 8
_S = ir.VectorType(ir.FloatType(), LANES)
_W = ir.VectorType(ir.IntType(32), LANES)
_F = ir.VectorType(ir.DoubleType(), LANES)
_I = ir.VectorType(ir.IntType(64), LANES)


class S8Type(types.Type):
    def __init__(self):
        super().__init__(name="S8")


class W8Type(types.Type):
    def __init__(self):
        super().__init__(name="W8")


S8 = S8Type()
W8 = W8Type()


@register_model(S8Type)
class _S8Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _S)


@register_model(W8Type)
class _W8Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _W)


def _array_of(arr, dtype) -> bool:
    return isinstance(arr, types.Array) and arr.dtype == dtype and arr.ndim == 1


def _loader(dtype, vt, vty):
    @intrinsic
    def load(typingctx, arr, idx):
        """arr[idx:idx+8] (no bounds check)."""
        if not _array_of(arr, dtype):
            return None

        def codegen(context, builder, sig, args):
            ptr = _elem_ptr(context, builder, sig.args[0], args[0], args[1])
            return builder.load(builder.bitcast(ptr, vty.as_pointer()), align=4)
        return vt(arr, idx), codegen
    return load


def _broadcaster(dtype, vt, vty):
    @intrinsic
    def bcast(typingctx, arr, idx):
        """arr[idx] in every lane."""
        if not _array_of(arr, dtype):
            return None

        def codegen(context, builder, sig, args):
            return _splat(builder, builder.load(_elem_ptr(context, builder, sig.args[0], args[0], args[1])), vty)
        return vt(arr, idx), codegen
    return bcast


s8_load = _loader(types.float32, S8, _S)
w8_load = _loader(types.int32, W8, _W)
s8_bcast = _broadcaster(types.float32, S8, _S)
w8_bcast = _broadcaster(types.int32, W8, _W)


def _binop(vt, emit):
    @intrinsic
    def op(typingctx, a, b):
        if a != vt or b != vt:
            return None

        def codegen(context, builder, sig, args):
            return emit(builder, *args)
        return vt(a, b), codegen
    return op


def _unop(vin, vout, emit):
    @intrinsic
    def op(typingctx, a):
        if a != vin:
            return None

        def codegen(context, builder, sig, args):
            return emit(builder, args[0])
        return vout(a), codegen
    return op


s8_mul = _binop(S8, lambda b, x, y: b.fmul(x, y))
w8_add = _binop(W8, lambda b, x, y: b.add(x, y))
w8_max = _binop(W8, lambda b, x, y: b.call(_llvm_fn(b, "llvm.smax.v8i32", _W, [_W, _W]), [x, y]))
s8_trunc = _unop(S8, W8, lambda b, x: b.fptosi(x, _W))      # toward zero; values below 2**31 only
w8_to_i8 = _unop(W8, I8, lambda b, x: b.sext(x, _I))
i8_to_w8 = _unop(I8, W8, lambda b, x: b.trunc(x, _W))      # values that fit in 32 bits only
s8_from_f8 = _unop(F8, S8, lambda b, x: b.fptrunc(x, _S))  # exact for values float32 holds


@intrinsic
def w8_zeros(typingctx):
    def codegen(context, builder, sig, args):
        return ir.Constant(_W, [0] * LANES)
    return W8(), codegen
