"""Eight-lane vectors for numba code: ``F8`` (8 x float64) and ``I8`` (8 x int64).

Why: the mma kernel is a handful of operations on each of the 8 columns of an m16n8 output
row.  LLVM's auto-vectoriser, as numba drives it, picks awkward shapes for such short loops
(and stays at 256 bits on AVX-512 machines); writing the lanes as explicit LLVM vectors
gives straight-line SIMD code, zmm registers on AVX-512, two ymm halves on AVX2 -- the same
results everywhere, since every operation is lane-wise IEEE or integer arithmetic.

Only what the kernels need is here.  Functions are numba intrinsics: call them from ``@njit``
code only.  One factory, ``_op``, makes the operations on vectors, here and in
``fragsim.arith.simd16`` (its 16 x 32-bit lanes); ``_load``, ``_store`` and ``_bcast`` make both
modules' loads, stores and broadcasts.  numba's cache of a kernel file is keyed on that file's content alone, so after
editing this file run ``python -m fragsim.arith.stamps``: it writes this file's hash into every
kernel that compiles it in (``fragsim.arith.stamps.KERNELS``; a test fails until then).
"""

from __future__ import annotations

import inspect

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic, models, register_model

LANES = 8
_F = ir.VectorType(ir.DoubleType(), LANES)
_I = ir.VectorType(ir.IntType(64), LANES)


class F8Type(types.Type):
    def __init__(self):
        super().__init__(name="F8")


class I8Type(types.Type):
    def __init__(self):
        super().__init__(name="I8")


F8 = F8Type()
I8 = I8Type()


@register_model(F8Type)
class _F8Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _F)


@register_model(I8Type)
class _I8Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _I)


def _llvm_fn(builder, name, ret, argtys):
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(ret, argtys), name)


def _splat(builder, x, vty):
    """x in every lane of a vector of type ``vty``."""
    v = builder.insert_element(ir.Constant(vty, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(v, ir.Constant(vty, ir.Undefined),
                                  ir.Constant(ir.VectorType(ir.IntType(32), vty.count), [0] * vty.count))


def _elem_ptr(context, builder, arrty, arr, idx):
    ary = context.make_array(arrty)(context, builder, arr)
    return cgutils.get_item_pointer(context, builder, arrty, ary, [idx], wraparound=False)


def _arr(arr, *dtypes) -> bool:
    """A 1-d array of one of ``dtypes``."""
    return isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype in dtypes


def _op(argtys, ret, emit):
    """The intrinsic of an operation on vectors (and the one factory of them, here and in
    ``fragsim.arith.simd16``): it takes ``len(argtys)`` arguments of exactly these numba types
    (other types are not its), gives a ``ret``, and its code is ``emit(builder, *args)``."""
    def op(typingctx, *args):
        if args != tuple(argtys):
            return None

        def codegen(context, builder, sig, args):
            return emit(builder, *args)
        return ret(*args), codegen
    # numba binds a call's arguments by the definition's signature: one named parameter each
    # (a *args parameter would hand emit one tuple)
    P = inspect.Parameter
    op.__signature__ = inspect.Signature([P("typingctx", P.POSITIONAL_ONLY)] +
                                         [P(f"x{i}", P.POSITIONAL_ONLY) for i in range(len(argtys))])
    return intrinsic(op)


def _load(dtype, vt, vty, align):
    @intrinsic
    def load(typingctx, arr, idx):
        """arr[idx:idx + lanes] of a 1-d array (no bounds check)."""
        if not _arr(arr, dtype):
            return None

        def codegen(context, builder, sig, args):
            ptr = _elem_ptr(context, builder, sig.args[0], args[0], args[1])
            return builder.load(builder.bitcast(ptr, vty.as_pointer()), align=align)
        return vt(arr, idx), codegen
    return load


def _store(dtypes, vt, vty, align):
    @intrinsic
    def store(typingctx, arr, idx, v):
        """arr[idx:idx + lanes] = v."""
        if not _arr(arr, *dtypes) or v != vt:
            return None

        def codegen(context, builder, sig, args):
            ptr = _elem_ptr(context, builder, sig.args[0], args[0], args[1])
            builder.store(args[2], builder.bitcast(ptr, vty.as_pointer()), align=align)
            return context.get_dummy_value()
        return types.none(arr, idx, v), codegen
    return store


def _bcast(dtype, vt, vty):
    @intrinsic
    def bcast(typingctx, arr, idx):
        """arr[idx] in every lane."""
        if not _arr(arr, dtype):
            return None

        def codegen(context, builder, sig, args):
            return _splat(builder, builder.load(_elem_ptr(context, builder, sig.args[0], args[0], args[1])), vty)
        return vt(arr, idx), codegen
    return bcast


# --- loads, stores, splats, lanes ---

f8_load = _load(types.float64, F8, _F, 8)
i8_load = _load(types.int64, I8, _I, 8)
f8_store = _store((types.float64,), F8, _F, 8)
i8_store = _store((types.int64,), I8, _I, 8)
f8_bcast = _bcast(types.float64, F8, _F)


@intrinsic
def i8_store_u32(typingctx, arr, idx, v):
    """arr[idx:idx+8] = the low 32 bits of each lane (arr: 1-d uint32 array)."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint32 and arr.ndim == 1 and v == I8):
        return None

    def codegen(context, builder, sig, args):
        ptr = _elem_ptr(context, builder, sig.args[0], args[0], args[1])
        vty = ir.VectorType(ir.IntType(32), LANES)
        builder.store(builder.trunc(args[2], vty), builder.bitcast(ptr, vty.as_pointer()), align=4)
        return context.get_dummy_value()
    return types.none(arr, idx, v), codegen


@intrinsic
def i8_gather(typingctx, arr, base, idx, off):
    """Lane j: arr[base + idx[off + j]] widened to int64 (arr: 1-d unsigned or int64 array,
    idx: 1-d int64 array).  One hardware gather on AVX2/AVX-512."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype in (types.uint16, types.uint32,
                                                                           types.int64)
            and isinstance(idx, types.Array) and idx.dtype == types.int64 and idx.ndim == 1):
        return None

    def codegen(context, builder, sig, args):
        arrty, _, idxty, _ = sig.args
        a, b, ix, o = args
        elty = context.get_data_type(arrty.dtype)
        width = elty.width
        p0 = builder.ptrtoint(_elem_ptr(context, builder, arrty, a, b), ir.IntType(64))
        iv = builder.load(builder.bitcast(_elem_ptr(context, builder, idxty, ix, o), _I.as_pointer()), align=8)
        addrs = builder.add(builder.mul(iv, ir.Constant(_I, [width // 8] * LANES)), _splat(builder, p0, _I))
        pty = ir.VectorType(elty.as_pointer(), LANES)
        vty = ir.VectorType(elty, LANES)
        mty = ir.VectorType(ir.IntType(1), LANES)
        fn = _llvm_fn(builder, f"llvm.masked.gather.v{LANES}i{width}.v{LANES}p0", vty,
                      [pty, ir.IntType(32), mty, vty])
        r = builder.call(fn, [builder.inttoptr(addrs, pty), ir.Constant(ir.IntType(32), width // 8),
                              ir.Constant(mty, [1] * LANES), ir.Constant(vty, ir.Undefined)])
        return builder.zext(r, _I) if width < 64 else r
    return I8(arr, base, idx, off), codegen


@intrinsic
def at(typingctx, arr, idx):
    """arr[idx] of a 1-d array, with no negative-index wraparound (it blocks vectorisation)."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(idx, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        return builder.load(_elem_ptr(context, builder, sig.args[0], args[0], args[1]))
    return arr.dtype(arr, idx), codegen


@intrinsic
def f8_splat(typingctx, x):
    if not isinstance(x, types.Float):
        return None

    def codegen(context, builder, sig, args):
        return _splat(builder, context.cast(builder, args[0], sig.args[0], types.float64), _F)
    return F8(x), codegen


@intrinsic
def i8_splat(typingctx, x):
    if not isinstance(x, (types.Integer, types.Boolean)):
        return None

    def codegen(context, builder, sig, args):
        return _splat(builder, context.cast(builder, args[0], sig.args[0], types.int64), _I)
    return I8(x), codegen


def _any(vty):
    """True when any lane of a ``vty`` integer vector is nonzero."""
    t = vty.element
    return lambda b, x: b.icmp_signed("!=", b.call(_llvm_fn(b, f"llvm.vector.reduce.or.v{vty.count}i{t.width}", t, [vty]),
                                                  [x]), ir.Constant(t, 0))


i8_any = _op((I8,), types.boolean, _any(_I))


# --- lane-wise arithmetic ---

def _binop(vt, emit):
    return _op((vt, vt), vt, emit)


def _unop(vin, vout, emit):
    return _op((vin,), vout, emit)


def _call(name, vty):
    def emit(builder, *args):
        return builder.call(_llvm_fn(builder, f"{name}.v8{'f64' if vty is _F else 'i64'}", vty,
                                     [vty] * len(args)), list(args))
    return emit


f8_add = _binop(F8, lambda b, x, y: b.fadd(x, y))
f8_mul = _binop(F8, lambda b, x, y: b.fmul(x, y))
f8_max = _binop(F8, lambda b, x, y: b.select(b.fcmp_ordered(">", x, y), x, y))  # no NaN care: hats only
i8_add = _binop(I8, lambda b, x, y: b.add(x, y))
i8_sub = _binop(I8, lambda b, x, y: b.sub(x, y))
i8_and = _binop(I8, lambda b, x, y: b.and_(x, y))
i8_or = _binop(I8, lambda b, x, y: b.or_(x, y))
i8_shl = _binop(I8, lambda b, x, y: b.shl(x, y))       # shift counts must lie in 0..63
i8_shr = _binop(I8, lambda b, x, y: b.ashr(x, y))
i8_max = _binop(I8, _call("llvm.smax", _I))
i8_min = _binop(I8, _call("llvm.smin", _I))


i8_xor = _binop(I8, lambda b, x, y: b.xor(x, y))


# a*b + c per lane, rounded once (IEEE fusedMultiplyAdd)
f8_fma = _op((F8, F8, F8), F8, _call("llvm.fma", _F))


def _hsum8(builder, *args):
    def pair(x, y, lo, hi):
        m = ir.VectorType(ir.IntType(32), LANES)
        return builder.fadd(builder.shuffle_vector(x, y, ir.Constant(m, lo)),
                            builder.shuffle_vector(x, y, ir.Constant(m, hi)))
    t = [pair(args[i], args[i + 1], [0, 8, 2, 10, 4, 12, 6, 14], [1, 9, 3, 11, 5, 13, 7, 15])
         for i in range(0, 8, 2)]
    u = [pair(t[i], t[i + 1], [0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15]) for i in (0, 2)]
    return pair(u[0], u[1], [0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15])


# lane j of f8_hsum8(v0, .., v7): the sum of the 8 lanes of v_j (a transpose-and-add tree, 14 shuffles;
# the order of the additions is fixed, exact when every partial sum is)
f8_hsum8 = _op((F8,) * 8, F8, _hsum8)


f8_trunc = _unop(F8, F8, _call("llvm.trunc", _F))           # toward zero
f8_roundeven = _unop(F8, F8, _call("llvm.roundeven", _F))   # to nearest, ties to even
f8_bits = _unop(F8, I8, lambda b, x: b.bitcast(x, _I))
f8_from_bits = _unop(I8, F8, lambda b, x: b.bitcast(x, _F))
f8_to_i8 = _unop(F8, I8, lambda b, x: b.fptosi(x, _I))      # only for values that fit
i8_to_f8 = _unop(I8, F8, lambda b, x: b.sitofp(x, _F))      # exact below 2**53
i8_popc = _unop(I8, I8, _call("llvm.ctpop", _I))
# Exact widening of the low 16 / 32 bits of each lane read as binary16 / binary32 (Inf, NaN
# and subnormals included): F16C/AVX conversions.
f8_from_f16 = _unop(I8, F8, lambda b, x: b.fpext(
    b.bitcast(b.trunc(x, ir.VectorType(ir.IntType(16), LANES)), ir.VectorType(ir.HalfType(), LANES)), _F))
f8_from_f32 = _unop(I8, F8, lambda b, x: b.fpext(
    b.bitcast(b.trunc(x, ir.VectorType(ir.IntType(32), LANES)), ir.VectorType(ir.FloatType(), LANES)), _F))


# --- comparisons (a lane mask is an I8 of 0 / -1) and selection ---

def _cmp(vt, pred, unsigned=False, mask=I8, mask_ir=_I):
    """A comparison of two ``vt`` vectors as a lane mask of type ``mask`` (0 / -1; integer vectors are
    of the mask's own type; ``fragsim.arith.simd16`` makes its 16-lane ones here too)."""
    def emit(builder, x, y):
        if vt == mask:
            c = (builder.icmp_unsigned if unsigned else builder.icmp_signed)(pred, x, y)
        else:
            c = builder.fcmp_ordered(pred, x, y)
        return builder.sext(c, mask_ir)
    return _op((vt, vt), mask, emit)


i8_eq = _cmp(I8, "==")
i8_ne = _cmp(I8, "!=")
i8_lt = _cmp(I8, "<")
i8_ult = _cmp(I8, "<", unsigned=True)
f8_eq = _cmp(F8, "==")
f8_lt = _cmp(F8, "<")


def _select(vt, mask=I8, mask_ir=_I):
    """where(mask, a, b) of ``vt`` vectors, ``mask`` a lane mask of that type."""
    return _op((mask, vt, vt), vt, lambda b, m, x, y: b.select(b.icmp_signed("!=", m, ir.Constant(mask_ir, 0)), x, y))


i8_where = _select(I8)
f8_where = _select(F8)
