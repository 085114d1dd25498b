"""Sixteen lanes of 32 bits: ``S16`` (16 x float32) and ``W16`` (16 x int32), beside the 8 x 64-bit
lanes of ``fragsim.arith.simd`` (``F8``, ``I8``).

Why: where a product is exact in float32 and a block's truncated terms sum exactly in int32 (f16
inputs in the GEMM kernel, fp8 inputs in the mma kernel), one 512-bit register holds 16 lanes
where the float64 path holds 8.  numba intrinsics: call them from ``@njit`` code only.  The kernels
that compile them (``fragsim.arith.kernel_fp8``, ``fragsim.arith.kernel_gemm``) stamp this file's hash
into their own source: after editing it run ``python -m fragsim.arith.stamps``.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic, models, register_model

from .simd import F8, I8, LANES, _elem_ptr, _llvm_fn

_S16 = ir.VectorType(ir.FloatType(), 16)
_W16 = ir.VectorType(ir.IntType(32), 16)
_F8 = ir.VectorType(ir.DoubleType(), LANES)
_I8 = ir.VectorType(ir.IntType(64), LANES)
_I32x8 = ir.VectorType(ir.IntType(32), LANES)


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


def _arr(arr, dtype) -> bool:
    return isinstance(arr, types.Array) and arr.dtype == dtype and arr.ndim == 1


def _splat16(builder, x, vty):
    v = builder.insert_element(ir.Constant(vty, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(v, ir.Constant(vty, ir.Undefined), ir.Constant(_W16, [0] * 16))


def _load16(dtype, vt, vty):
    @intrinsic
    def load(typingctx, arr, idx):
        """arr[idx:idx+16] (no bounds check)."""
        if not _arr(arr, dtype):
            return None

        def codegen(context, builder, sig, args):
            ptr = _elem_ptr(context, builder, sig.args[0], args[0], args[1])
            return builder.load(builder.bitcast(ptr, vty.as_pointer()), align=4)
        return vt(arr, idx), codegen
    return load


def _bcast16(dtype, vt, vty):
    @intrinsic
    def bcast(typingctx, arr, idx):
        """arr[idx] in every lane."""
        if not _arr(arr, dtype):
            return None

        def codegen(context, builder, sig, args):
            return _splat16(builder, builder.load(_elem_ptr(context, builder, sig.args[0], args[0], args[1])), vty)
        return vt(arr, idx), codegen
    return bcast


def _op16(vin, vout, emit, n=2):
    if n == 1:
        @intrinsic
        def op1(typingctx, a):
            if a != vin:
                return None

            def codegen(context, builder, sig, args):
                return emit(builder, *args)
            return vout(a), codegen
        return op1

    @intrinsic
    def op2(typingctx, a, b):
        if a != vin or b != vin:
            return None

        def codegen(context, builder, sig, args):
            return emit(builder, *args)
        return vout(a, b), codegen
    return op2


def _half(builder, x, hi):
    return builder.shuffle_vector(x, ir.Constant(x.type, ir.Undefined),
                                  ir.Constant(_I32x8, list(range(8 * hi, 8 * hi + 8))))


s16_load = _load16(types.float32, S16, _S16)
w16_load = _load16(types.int32, W16, _W16)
s16_bcast = _bcast16(types.float32, S16, _S16)
w16_bcast = _bcast16(types.int32, W16, _W16)
s16_mul = _op16(S16, S16, lambda b, x, y: b.fmul(x, y))
s16_add = _op16(S16, S16, lambda b, x, y: b.fadd(x, y))
w16_add = _op16(W16, W16, lambda b, x, y: b.add(x, y))
w16_sub = _op16(W16, W16, lambda b, x, y: b.sub(x, y))
w16_max = _op16(W16, W16, lambda b, x, y: b.call(_llvm_fn(b, "llvm.smax.v16i32", _W16, [_W16, _W16]), [x, y]))
w16_min = _op16(W16, W16, lambda b, x, y: b.call(_llvm_fn(b, "llvm.smin.v16i32", _W16, [_W16, _W16]), [x, y]))
# toward zero; defined for values below 2**31 only (callers replace the lanes of Inf/NaN terms)
s16_trunc = _op16(S16, W16, lambda b, x: b.fptosi(x, _W16),
                  n=1)
w16_lo = _op16(W16, I8, lambda b, x: b.sext(_half(b, x, 0), _I8), n=1)
w16_hi = _op16(W16, I8, lambda b, x: b.sext(_half(b, x, 1), _I8), n=1)
s16_lo = _op16(S16, F8, lambda b, x: b.fpext(_half(b, x, 0), _F8), n=1)
s16_hi = _op16(S16, F8, lambda b, x: b.fpext(_half(b, x, 1), _F8), n=1)
w16_join = _op16(I8, W16, lambda b, x, y: b.shuffle_vector(b.trunc(x, _I32x8), b.trunc(y, _I32x8),
                                                            ir.Constant(_W16, list(range(16)))))
# 2**(F - E) as float32 bits (E clamped to F - 126 .. F + 127 by the caller)
w16_pow2 = _op16(W16, S16, lambda b, x: b.bitcast(b.shl(x, ir.Constant(_W16, [23] * 16)), _S16), n=1)


@intrinsic
def w16_splat(typingctx, x):
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return _splat16(builder, builder.trunc(args[0], ir.IntType(32)) if args[0].type.width > 32 else args[0],
                        _W16)
    return W16(x), codegen


@intrinsic
def s16_zero(typingctx):
    def codegen(context, builder, sig, args):
        return ir.Constant(_S16, [0.0] * 16)
    return S16(), codegen


def _c16(v, bits=32):
    return ir.Constant(ir.VectorType(ir.IntType(bits), 16), [v] * 16)


@intrinsic
def w16_byte(typingctx, w, j):
    """Byte j of each lane (j in 0..3)."""
    if w != W16 or not isinstance(j, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        sh = _splat16(builder, builder.trunc(builder.mul(args[1], ir.Constant(args[1].type, 8)), ir.IntType(32)), _W16)
        return builder.and_(builder.lshr(args[0], sh), _c16(0xFF))
    return W16(w, j), codegen


def _store_half(dtype, vt):
    @intrinsic
    def store(typingctx, arr, idx, v, hi):
        """arr[idx:idx+8] = lanes 8*hi .. 8*hi+7 of v (hi a literal 0 or 1)."""
        if not _arr(arr, dtype) or v != vt or not isinstance(hi, types.IntegerLiteral):
            return None
        h = hi.literal_value

        def codegen(context, builder, sig, args):
            ptr = _elem_ptr(context, builder, sig.args[0], args[0], args[1])
            x = _half(builder, args[2], h)
            builder.store(x, builder.bitcast(ptr, x.type.as_pointer()), align=4)
            return context.get_dummy_value()
        return types.none(arr, idx, v, hi), codegen
    return store


@intrinsic
def w16_zeros(typingctx):
    def codegen(context, builder, sig, args):
        return ir.Constant(_W16, [0] * 16)
    return W16(), codegen


@intrinsic
def s16_join(typingctx, lo, hi):
    """Two F8 (values float32 holds exactly) side by side."""
    if lo != F8 or hi != F8:
        return None

    def codegen(context, builder, sig, args):
        a, b = (builder.fptrunc(x, ir.VectorType(ir.FloatType(), LANES)) for x in args)
        return builder.shuffle_vector(a, b, ir.Constant(_W16, list(range(16))))
    return S16(lo, hi), codegen


s16_store8 = _store_half(types.float32, S16)
w16_store8 = _store_half(types.int32, W16)
