"""Sixteen lanes of 32 bits for ``fragsim.gemm_kernel``: ``S16`` (16 x float32), ``W16`` (16 x int32).

Why: with f16 inputs a product is exact in float32 (22 significant bits, exponents -48..32), and so
is its scaling to the block's fixed point (an integer below 2**27); a block of up to 16 such
truncated terms sums exactly in int32.  So one 512-bit register holds two 8-column tiles where the
float64 path (``fragsim.arith.simd``) holds one.  numba intrinsics: call them from ``@njit`` code
only; ``fragsim.gemm_kernel``'s cache stamp covers this file.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic, models, register_model

from .arith.simd import F8, I8, _elem_ptr, _llvm_fn

LANES = 8
_S = ir.VectorType(ir.FloatType(), LANES)
_W = ir.VectorType(ir.IntType(32), LANES)
_I = ir.VectorType(ir.IntType(64), LANES)


def _array_of(arr, dtype) -> bool:
    return isinstance(arr, types.Array) and arr.dtype == dtype and arr.ndim == 1


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


_S16 = ir.VectorType(ir.FloatType(), 16)
_W16 = ir.VectorType(ir.IntType(32), 16)


class S16Type(types.Type):
    def __init__(self):
        super().__init__(name="S16")


class W16Type(types.Type):
    def __init__(self):
        super().__init__(name="W16")


S16 = S16Type()
W16 = W16Type()


@register_model(S16Type)
class _S16Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _S16)


@register_model(W16Type)
class _W16Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _W16)


def _splat16(builder, x, vty):
    v = builder.insert_element(ir.Constant(vty, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(v, ir.Constant(vty, ir.Undefined),
                                  ir.Constant(ir.VectorType(ir.IntType(32), 16), [0] * 16))


def _loader16(dtype, vt, vty):
    @intrinsic
    def load(typingctx, arr, idx):
        """arr[idx:idx+16] (no bounds check)."""
        if not _array_of(arr, dtype):
            return None

        def codegen(context, builder, sig, args):
            ptr = _elem_ptr(context, builder, sig.args[0], args[0], args[1])
            return builder.load(builder.bitcast(ptr, vty.as_pointer()), align=4)
        return vt(arr, idx), codegen
    return load


def _broadcaster16(dtype, vt, vty):
    @intrinsic
    def bcast(typingctx, arr, idx):
        """arr[idx] in every lane."""
        if not _array_of(arr, dtype):
            return None

        def codegen(context, builder, sig, args):
            return _splat16(builder, builder.load(_elem_ptr(context, builder, sig.args[0], args[0], args[1])), vty)
        return vt(arr, idx), codegen
    return bcast


s16_load = _loader16(types.float32, S16, _S16)
w16_load = _loader16(types.int32, W16, _W16)
s16_bcast = _broadcaster16(types.float32, S16, _S16)
w16_bcast = _broadcaster16(types.int32, W16, _W16)
s16_mul = _binop(S16, lambda b, x, y: b.fmul(x, y))
w16_add = _binop(W16, lambda b, x, y: b.add(x, y))
w16_max = _binop(W16, lambda b, x, y: b.call(_llvm_fn(b, "llvm.smax.v16i32", _W16, [_W16, _W16]), [x, y]))
s16_trunc = _unop(S16, W16, lambda b, x: b.fptosi(x, _W16))     # toward zero; values below 2**31 only


def _half(builder, x, hi):
    idx = ir.Constant(ir.VectorType(ir.IntType(32), LANES), list(range(8 * hi, 8 * hi + 8)))
    return builder.shuffle_vector(x, ir.Constant(x.type, ir.Undefined), idx)


w16_lo = _unop(W16, I8, lambda b, x: b.sext(_half(b, x, 0), _I))    # lanes 0-7, widened
w16_hi = _unop(W16, I8, lambda b, x: b.sext(_half(b, x, 1), _I))    # lanes 8-15, widened

_CAT = list(range(16))


@intrinsic
def w16_join(typingctx, lo, hi):
    """Two I8 (values that fit in 32 bits) side by side."""
    if lo != I8 or hi != I8:
        return None

    def codegen(context, builder, sig, args):
        a, b = (builder.trunc(x, _W) for x in args)
        return builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(ir.IntType(32), 16), _CAT))
    return W16(lo, hi), codegen


@intrinsic
def s16_join(typingctx, lo, hi):
    """Two F8 (values float32 holds exactly) side by side."""
    if lo != F8 or hi != F8:
        return None

    def codegen(context, builder, sig, args):
        a, b = (builder.fptrunc(x, _S) for x in args)
        return builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(ir.IntType(32), 16), _CAT))
    return S16(lo, hi), codegen


@intrinsic
def w16_zeros(typingctx):
    def codegen(context, builder, sig, args):
        return ir.Constant(_W16, [0] * 16)
    return W16(), codegen


@intrinsic
def i8_ult(typingctx, a, b):
    """a < b as unsigned 64-bit integers: a lane mask (I8 of 0 / -1), as ``fragsim.arith.simd``'s."""
    if a != I8 or b != I8:
        return None

    def codegen(context, builder, sig, args):
        return builder.sext(builder.icmp_unsigned("<", *args), _I)
    return I8(a, b), codegen
