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

from .simd import F8, I8, LANES, _cmp, _elem_ptr, _llvm_fn, _select

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


class _VecGEP(ir.instructions.Instruction):
    """``getelementptr inbounds i32, ptr base, <16 x i64> idx``: sixteen addresses from one base (llvmlite's
    ``gep`` takes scalar indices only); LLVM folds it with the sign extension into one 32-bit-index gather."""

    def __init__(self, parent, ptr, idx):
        super().__init__(parent, ir.VectorType(ptr.type, 16), "getelementptr", [ptr, idx])

    def descr(self, buf):
        p, i = self.operands
        buf.append(f"getelementptr inbounds i32, {p.type} {p.get_reference()}, {i.type} {i.get_reference()}\n")


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
    if n == 2:
        return op2

    @intrinsic
    def op3(typingctx, a, b, c):
        if a != vin or b != vin or c != vin:
            return None

        def codegen(context, builder, sig, args):
            return emit(builder, *args)
        return vout(a, b, c), codegen
    return op3


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


def _store16(dtypes, vt, vty):
    @intrinsic
    def store(typingctx, arr, idx, v):
        """arr[idx:idx+16] = v."""
        if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype in dtypes) or v != vt:
            return None

        def codegen(context, builder, sig, args):
            ptr = _elem_ptr(context, builder, sig.args[0], args[0], args[1])
            builder.store(args[2], builder.bitcast(ptr, vty.as_pointer()), align=4)
            return context.get_dummy_value()
        return types.none(arr, idx, v), codegen
    return store


s16_store = _store16((types.float32,), S16, _S16)
w16_store = _store16((types.int32, types.uint32), W16, _W16)
w16_and = _op16(W16, W16, lambda b, x, y: b.and_(x, y))
w16_or = _op16(W16, W16, lambda b, x, y: b.or_(x, y))
w16_shl = _op16(W16, W16, lambda b, x, y: b.shl(x, y))         # shift counts must lie in 0..31
w16_shr = _op16(W16, W16, lambda b, x, y: b.lshr(x, y))        # logical
w16_xor = _op16(W16, W16, lambda b, x, y: b.xor(x, y))


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
w16_float_rz = _op16(W16, S16, _float_rz, n=1)
s16_bits = _op16(S16, W16, lambda b, x: b.bitcast(x, _W16), n=1)
s16_from_bits = _op16(W16, S16, lambda b, x: b.bitcast(x, _S16), n=1)
w16_ctlz = _op16(W16, W16, lambda b, x: b.call(_llvm_fn(b, "llvm.ctlz.v16i32", _W16, [_W16, ir.IntType(1)]),
                                               [x, ir.Constant(ir.IntType(1), 0)]), n=1)
# the low 16 bits of each lane read as binary16, widened exactly (F16C / AVX-512 FP16 conversions)
s16_from_f16 = _op16(W16, S16, lambda b, x: b.fpext(b.bitcast(b.trunc(x, ir.VectorType(ir.IntType(16), 16)),
                                                               ir.VectorType(ir.HalfType(), 16)), _S16), n=1)
# float32 -> binary16 rounded to nearest even (IEEE: subnormals, Inf beyond the range), its bits in the low 16
s16_to_f16 = _op16(S16, W16, lambda b, x: b.zext(b.bitcast(b.fptrunc(x, ir.VectorType(ir.HalfType(), 16)),
                                                            ir.VectorType(ir.IntType(16), 16)), _W16), n=1)


# comparisons: a lane mask is a W16 of 0 / -1
w16_eq = _cmp(W16, "==", mask=W16, mask_ir=_W16)
w16_lt = _cmp(W16, "<", mask=W16, mask_ir=_W16)
s16_eq = _cmp(S16, "==", mask=W16, mask_ir=_W16)
w16_where = _select(W16, mask=W16, mask_ir=_W16)
s16_where = _select(S16, mask=W16, mask_ir=_W16)


w16_minu = _op16(W16, W16, lambda b, x, y: b.call(_llvm_fn(b, "llvm.umin.v16i32", _W16, [_W16, _W16]), [x, y]))


def _reduce16(name, signed):
    @intrinsic
    def reduce(typingctx, v):
        """The lanes' maximum (signed) / minimum (unsigned), as an int64."""
        if v != W16:
            return None

        def codegen(context, builder, sig, args):
            r = builder.call(_llvm_fn(builder, f"llvm.vector.reduce.{name}.v16i32", ir.IntType(32), [_W16]), [args[0]])
            return (builder.sext if signed else builder.zext)(r, ir.IntType(64))
        return types.int64(v), codegen
    return reduce


w16_hmax = _reduce16("smax", True)
w16_huminu = _reduce16("umin", False)


@intrinsic
def w16_any(typingctx, v):
    """True when any lane is nonzero."""
    if v != W16:
        return None

    def codegen(context, builder, sig, args):
        r = builder.call(_llvm_fn(builder, "llvm.vector.reduce.or.v16i32", ir.IntType(32), [_W16]), [args[0]])
        return builder.icmp_signed("!=", r, ir.Constant(ir.IntType(32), 0))
    return types.boolean(v), codegen


# float64 -> binary32 bits, rounded to nearest even (IEEE: subnormals, overflow to Inf), zero-extended
f8_to_f32_bits = _op16(F8, I8, lambda b, x: b.zext(b.bitcast(b.fptrunc(x, ir.VectorType(ir.FloatType(), LANES)),
                                                              _I32x8), _I8), n=1)



# --- 32 lanes of 16 bits in a W16 (two 16-bit numbers per 32-bit lane, the low one first) ---------

_H32 = ir.VectorType(ir.IntType(16), 32)


def _op32(emit, n=2):
    def wrap(builder, *args):
        return builder.bitcast(emit(builder, *(builder.bitcast(x, _H32) for x in args)), _W16)
    return _op16(W16, W16, wrap, n)


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
h32_where = _op16(W16, W16, lambda b, m, x, y: b.bitcast(
    b.select(b.icmp_signed("!=", b.bitcast(m, _H32), ir.Constant(_H32, [0] * 32)), b.bitcast(x, _H32),
             b.bitcast(y, _H32)), _W16), n=3)
# each 32-bit lane's high 16 bits in both halves
h32_dup_hi = _op32(lambda b, x: b.shuffle_vector(x, ir.Constant(_H32, ir.Undefined),
                                                 ir.Constant(ir.VectorType(ir.IntType(32), 32),
                                                             [2 * (j // 2) + 1 for j in range(32)])), n=1)
# the high 16 bits of each lane, sign-extended (the low ones: h32_lo)
h32_hi = _op16(W16, W16, lambda b, x: b.ashr(x, _c16(16)), n=1)
h32_lo = _op16(W16, W16, lambda b, x: b.ashr(b.shl(x, _c16(16)), _c16(16)), n=1)


@intrinsic
def h32_bcast(typingctx, arr, idx):
    """The 32 bits at arr[idx], arr[idx+1] (a 1-d int16 array) in every 32-bit lane."""
    if not _arr(arr, types.int16):
        return None

    def codegen(context, builder, sig, args):
        ptr = builder.bitcast(_elem_ptr(context, builder, sig.args[0], args[0], args[1]), ir.IntType(32).as_pointer())
        return _splat16(builder, builder.load(ptr, align=2), _W16)
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

