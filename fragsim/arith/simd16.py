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

from .simd import (F8, I8, LANES, _F as _F8, _I as _I8, _any, _arr, _bcast, _binop, _cmp, _elem_ptr, _llvm_fn, _load,
                   _op, _select, _splat, _store, _unop)

_S16 = ir.VectorType(ir.FloatType(), 16)
_W16 = ir.VectorType(ir.IntType(32), 16)
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


class _VecGEP(ir.instructions.Instruction):
    """``getelementptr inbounds i32, ptr base, <16 x i64> idx``: sixteen addresses from one base (llvmlite's
    ``gep`` takes scalar indices only); LLVM folds it with the sign extension into one 32-bit-index gather."""

    def __init__(self, parent, ptr, idx):
        super().__init__(parent, ir.VectorType(ptr.type, 16), "getelementptr", [ptr, idx])

    def descr(self, buf):
        p, i = self.operands
        buf.append(f"getelementptr inbounds i32, {p.type} {p.get_reference()}, {i.type} {i.get_reference()}\n")


def _half(builder, x, hi):
    return builder.shuffle_vector(x, ir.Constant(x.type, ir.Undefined),
                                  ir.Constant(_I32x8, list(range(8 * hi, 8 * hi + 8))))


s16_load = _load(types.float32, S16, _S16, 4)
w16_load = _load(types.int32, W16, _W16, 4)
s16_bcast = _bcast(types.float32, S16, _S16)
w16_bcast = _bcast(types.int32, W16, _W16)
s16_mul = _binop(S16, lambda b, x, y: b.fmul(x, y))
s16_add = _binop(S16, lambda b, x, y: b.fadd(x, y))
w16_add = _binop(W16, lambda b, x, y: b.add(x, y))
w16_sub = _binop(W16, lambda b, x, y: b.sub(x, y))
w16_max = _binop(W16, lambda b, x, y: b.call(_llvm_fn(b, "llvm.smax.v16i32", _W16, [_W16, _W16]), [x, y]))
w16_min = _binop(W16, lambda b, x, y: b.call(_llvm_fn(b, "llvm.smin.v16i32", _W16, [_W16, _W16]), [x, y]))
# toward zero; defined for values below 2**31 only (callers replace the lanes of Inf/NaN terms)
s16_trunc = _unop(S16, W16, lambda b, x: b.fptosi(x, _W16))
w16_lo = _unop(W16, I8, lambda b, x: b.sext(_half(b, x, 0), _I8))
w16_hi = _unop(W16, I8, lambda b, x: b.sext(_half(b, x, 1), _I8))
s16_lo = _unop(S16, F8, lambda b, x: b.fpext(_half(b, x, 0), _F8))
s16_hi = _unop(S16, F8, lambda b, x: b.fpext(_half(b, x, 1), _F8))
w16_join = _op((I8, I8), W16, lambda b, x, y: b.shuffle_vector(b.trunc(x, _I32x8), b.trunc(y, _I32x8),
                                                               ir.Constant(_W16, list(range(16)))))
# 2**(F - E) as float32 bits (E clamped to F - 126 .. F + 127 by the caller)
w16_pow2 = _unop(W16, S16, lambda b, x: b.bitcast(b.shl(x, ir.Constant(_W16, [23] * 16)), _S16))


@intrinsic
def w16_splat(typingctx, x):
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return _splat(builder, builder.trunc(args[0], ir.IntType(32)) if args[0].type.width > 32 else args[0],
                        _W16)
    return W16(x), codegen


s16_zero = _op((), S16, lambda b: ir.Constant(_S16, [0.0] * 16))


def _c16(v, bits=32):
    return ir.Constant(ir.VectorType(ir.IntType(bits), 16), [v] * 16)


@intrinsic
def w16_byte(typingctx, w, j):
    """Byte j of each lane (j in 0..3)."""
    if w != W16 or not isinstance(j, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        sh = _splat(builder, builder.trunc(builder.mul(args[1], ir.Constant(args[1].type, 8)), ir.IntType(32)), _W16)
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


w16_zeros = _op((), W16, lambda b: ir.Constant(_W16, [0] * 16))
# two F8 (values float32 holds exactly) side by side
s16_join = _op((F8, F8), S16, lambda b, lo, hi: b.shuffle_vector(
    b.fptrunc(lo, ir.VectorType(ir.FloatType(), LANES)), b.fptrunc(hi, ir.VectorType(ir.FloatType(), LANES)),
    ir.Constant(_W16, list(range(16)))))


s16_store8 = _store_half(types.float32, S16)
w16_store8 = _store_half(types.int32, W16)


@intrinsic
def w16_gather(typingctx, arr, base, idx, off):
    """Lane j: arr[base + idx[off + j]] (arr: 1-d uint32 or int32, idx: 1-d int32).  One hardware
    gather on AVX-512."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype in (types.uint32, types.int32)
            and _arr(idx, types.int32)):
        return None

    def codegen(context, builder, sig, args):
        arrty, _, idxty, _ = sig.args
        a, b, ix, o = args
        p0 = builder.bitcast(_elem_ptr(context, builder, arrty, a, b), ir.IntType(32).as_pointer())
        iv = builder.load(builder.bitcast(_elem_ptr(context, builder, idxty, ix, o), _W16.as_pointer()), align=4)
        ptrs = _VecGEP(builder.block, p0, builder.sext(iv, ir.VectorType(ir.IntType(64), 16)))
        builder._insert(ptrs)
        mty = ir.VectorType(ir.IntType(1), 16)
        fn = _llvm_fn(builder, "llvm.masked.gather.v16i32.v16p0", _W16, [ptrs.type, ir.IntType(32), mty, _W16])
        return builder.call(fn, [ptrs, ir.Constant(ir.IntType(32), 4), ir.Constant(mty, [1] * 16),
                                 ir.Constant(_W16, ir.Undefined)])
    return W16(arr, base, idx, off), codegen


s16_store = _store((types.float32,), S16, _S16, 4)
w16_store = _store((types.int32, types.uint32), W16, _W16, 4)
w16_and = _binop(W16, lambda b, x, y: b.and_(x, y))
w16_or = _binop(W16, lambda b, x, y: b.or_(x, y))
w16_shl = _binop(W16, lambda b, x, y: b.shl(x, y))         # shift counts must lie in 0..31
w16_shr = _binop(W16, lambda b, x, y: b.lshr(x, y))        # logical
w16_xor = _binop(W16, lambda b, x, y: b.xor(x, y))


def _avx512() -> bool:
    """Whether numba compiles for a CPU with AVX-512F (its embedded rounding modes): the host's features
    unless NUMBA_CPU_NAME / NUMBA_CPU_FEATURES name another target."""
    from numba.core import config
    import llvmlite.binding as llvm

    features, name = getattr(config, "CPU_FEATURES", None), getattr(config, "CPU_NAME", None)
    if features is not None:
        return "+avx512f" in features.split(",")
    if name not in (None, "host"):
        return False
    return bool(llvm.get_host_cpu_features().get("avx512f", False))


def _float_rz(builder, x):
    """int32 -> float32 rounded toward zero.  AVX-512: vcvtdq2ps with embedded RZ (rounding 3, exceptions
    suppressed 8); elsewhere: |x|'s bits below its 24 leading ones cleared (then exact), the sign put back."""
    if AVX512:
        fn = _llvm_fn(builder, "llvm.x86.avx512.sitofp.round.v16f32.v16i32", _S16, [_W16, ir.IntType(32)])
        return builder.call(fn, [x, ir.Constant(ir.IntType(32), 11)])
    s = builder.ashr(x, _c16(31))
    mag = builder.sub(builder.xor(x, s), s)             # -2**31 stays itself: exact as it is
    lz = builder.call(_llvm_fn(builder, "llvm.ctlz.v16i32", _W16, [_W16, ir.IntType(1)]),
                      [mag, ir.Constant(ir.IntType(1), 0)])
    sh = builder.call(_llvm_fn(builder, "llvm.smax.v16i32", _W16, [_W16, _W16]), [builder.sub(_c16(8), lz), _c16(0)])
    kept = builder.and_(mag, builder.shl(_c16(-1), sh))
    f = builder.bitcast(builder.sitofp(kept, _S16), _W16)
    return builder.bitcast(builder.or_(f, builder.and_(s, _c16(-(1 << 31)))), _S16)


AVX512 = _avx512()
# int32 -> float32 toward zero (any int32)
w16_float_rz = _unop(W16, S16, _float_rz)
s16_bits = _unop(S16, W16, lambda b, x: b.bitcast(x, _W16))
s16_from_bits = _unop(W16, S16, lambda b, x: b.bitcast(x, _S16))
w16_ctlz = _unop(W16, W16, lambda b, x: b.call(_llvm_fn(b, "llvm.ctlz.v16i32", _W16, [_W16, ir.IntType(1)]),
                                               [x, ir.Constant(ir.IntType(1), 0)]))
# the low 16 bits of each lane read as binary16, widened exactly (F16C / AVX-512 FP16 conversions)
s16_from_f16 = _unop(W16, S16, lambda b, x: b.fpext(b.bitcast(b.trunc(x, ir.VectorType(ir.IntType(16), 16)),
                                                               ir.VectorType(ir.HalfType(), 16)), _S16))
# float32 -> binary16 rounded to nearest even (IEEE: subnormals, Inf beyond the range), its bits in the low 16
s16_to_f16 = _unop(S16, W16, lambda b, x: b.zext(b.bitcast(b.fptrunc(x, ir.VectorType(ir.HalfType(), 16)),
                                                            ir.VectorType(ir.IntType(16), 16)), _W16))


# comparisons: a lane mask is a W16 of 0 / -1
w16_eq = _cmp(W16, "==", mask=W16, mask_ir=_W16)
w16_lt = _cmp(W16, "<", mask=W16, mask_ir=_W16)
s16_eq = _cmp(S16, "==", mask=W16, mask_ir=_W16)
w16_where = _select(W16, mask=W16, mask_ir=_W16)
s16_where = _select(S16, mask=W16, mask_ir=_W16)


w16_minu = _binop(W16, lambda b, x, y: b.call(_llvm_fn(b, "llvm.umin.v16i32", _W16, [_W16, _W16]), [x, y]))


def _reduce16(name, signed):
    """The lanes' maximum (signed) / minimum (unsigned), as an int64."""
    def emit(b, x):
        r = b.call(_llvm_fn(b, f"llvm.vector.reduce.{name}.v16i32", ir.IntType(32), [_W16]), [x])
        return (b.sext if signed else b.zext)(r, ir.IntType(64))
    return _op((W16,), types.int64, emit)


w16_hmax = _reduce16("smax", True)
w16_huminu = _reduce16("umin", False)
w16_any = _op((W16,), types.boolean, _any(_W16))      # True when any lane is nonzero


# float64 -> binary32 bits, rounded to nearest even (IEEE: subnormals, overflow to Inf), zero-extended
f8_to_f32_bits = _unop(F8, I8, lambda b, x: b.zext(b.bitcast(b.fptrunc(x, ir.VectorType(ir.FloatType(), LANES)),
                                                              _I32x8), _I8))



# --- 32 lanes of 16 bits in a W16 (two 16-bit numbers per 32-bit lane, the low one first) ---------

_H32 = ir.VectorType(ir.IntType(16), 32)


def _op32(emit, n=2):
    def wrap(builder, *args):
        return builder.bitcast(emit(builder, *(builder.bitcast(x, _H32) for x in args)), _W16)
    return _op((W16,) * n, W16, wrap)


h32_add = _op32(lambda b, x, y: b.add(x, y))
h32_max = _op32(lambda b, x, y: b.call(_llvm_fn(b, "llvm.smax.v32i16", _H32, [_H32, _H32]), [x, y]))
# each 32-bit lane's low 16 bits in both halves (a W16 of int32 values in [-2**15, 2**15) as 16-bit pairs)
h32_dup = _op32(lambda b, x: b.shuffle_vector(x, ir.Constant(_H32, ir.Undefined),
                                              ir.Constant(ir.VectorType(ir.IntType(32), 32),
                                                          [2 * (j // 2) for j in range(32)])), n=1)
h32_sub = _op32(lambda b, x, y: b.sub(x, y))
h32_shr = _op32(lambda b, x, y: b.lshr(x, y))         # logical; counts 0..15
h32_minu = _op32(lambda b, x, y: b.call(_llvm_fn(b, "llvm.umin.v32i16", _H32, [_H32, _H32]), [x, y]))
# a 16-bit lane mask (0 / -1 in each half) of equality
h32_eq = _op32(lambda b, x, y: b.sext(b.icmp_signed("==", x, y), _H32))
# the 16-bit lanes of the second argument where the mask's are nonzero, else the third's
h32_where = _op((W16,) * 3, W16, lambda b, m, x, y: b.bitcast(
    b.select(b.icmp_signed("!=", b.bitcast(m, _H32), ir.Constant(_H32, [0] * 32)), b.bitcast(x, _H32),
             b.bitcast(y, _H32)), _W16))
# each 32-bit lane's high 16 bits in both halves
h32_dup_hi = _op32(lambda b, x: b.shuffle_vector(x, ir.Constant(_H32, ir.Undefined),
                                                 ir.Constant(ir.VectorType(ir.IntType(32), 32),
                                                             [2 * (j // 2) + 1 for j in range(32)])), n=1)
# the high 16 bits of each lane, sign-extended (the low ones: h32_lo)
h32_hi = _unop(W16, W16, lambda b, x: b.ashr(x, _c16(16)))
h32_lo = _unop(W16, W16, lambda b, x: b.ashr(b.shl(x, _c16(16)), _c16(16)))


@intrinsic
def h32_bcast(typingctx, arr, idx):
    """The 32 bits at arr[idx], arr[idx+1] (a 1-d int16 array) in every 32-bit lane."""
    if not _arr(arr, types.int16):
        return None

    def codegen(context, builder, sig, args):
        ptr = builder.bitcast(_elem_ptr(context, builder, sig.args[0], args[0], args[1]), ir.IntType(32).as_pointer())
        return _splat(builder, builder.load(ptr, align=2), _W16)
    return W16(arr, idx), codegen


@intrinsic
def h32_store16(typingctx, arr, idx, v):
    """arr[idx:idx+16] = the low 16 bits of each lane of v (arr: 1-d int16)."""
    if not _arr(arr, types.int16) or v != W16:
        return None

    def codegen(context, builder, sig, args):
        ptr = _elem_ptr(context, builder, sig.args[0], args[0], args[1])
        x = builder.trunc(args[2], ir.VectorType(ir.IntType(16), 16))
        builder.store(x, builder.bitcast(ptr, x.type.as_pointer()), align=2)
        return context.get_dummy_value()
    return types.none(arr, idx, v), codegen

