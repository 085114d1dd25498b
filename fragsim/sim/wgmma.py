"""``fragsim.wgmma``: bit-exact sm_90a ``wgmma.mma_async`` of one warpgroup, from registers, shared
memory and descriptors to the D registers.

(This module is not called ``fragsim/wgmma.py`` so that ``fragsim.wgmma`` stays the function.)

Operands: A from registers (``uint32 (..., 128, 4)``) or from shared memory through a descriptor;
B through a descriptor; descriptors are read by ``fragsim.layout.descriptor.operand_addresses``; C and D
are the accumulator registers ``uint32 (..., 128, nregs)`` (fragment maps in
``fragsim.instructions.wgmma``).

Arithmetic.  The floating-point forms are the one model of fragsim (``fragsim.arith``, the
reference doc's truncated fused dot-product-add): per output element, blocks of L products in
ascending k, each block's terms (L products and c) aligned to the largest nominal exponent
E_max, truncated F bits below it, summed exactly, and the sum rounded to the output grid; the
rounded block result is the next block's c.  The integer forms are exact (c + sum of products,
wrapped modulo 2**32, or clamped to s32 under ``.satfinite``), as ``fragsim.arith.exact``.
The parameters are one ``WgmmaParams`` row per architecture (``WGMMA_PARAMS``, in
``fragsim.facts.arch`` beside the mma.sync rows; re-exported here for the instruction's users); what
each value rests on (the H100 runs of gpu_check/wgmma_*.py) is in the row's comments and docs/validation.md.

Two implementations of that one model: the numba kernels of ``fragsim.arith.kernel_wgmma`` (``wgmma``
takes them for every form of the sm_90 row and for the rows they model; ``warpgroups`` and
``file_plan`` are ``fragsim run``'s entries) and the NumPy model below (``wgmma_reference``: operands
gathered into matrices, ``float_dot``/``int_dot`` in float64/int64), which stays the oracle the kernels
are tested against (tests/test_wgmma_kernel.py) and computes the rows the kernels do not model.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fragsim import validate
from fragsim.facts.arch import DEFAULT_ARCH, WGMMA_PARAMS, WgmmaParams, get_params
from fragsim.facts.formats import FORMATS, from_bits
from fragsim.instructions.wgmma import THREADS, WgmmaForm, lookup_wgmma
from .registers import RegisterPlan, check_regs, owners, pack_plan, plan, unpack_plan

__all__ = ["wgmma", "wgmma_reference", "warpgroups", "WgmmaParams", "WGMMA_PARAMS", "get_params", "gather_operand",
           "unpack_wg", "pack_wg", "owners"]


# -- registers <-> matrices: fragsim.sim.registers' one path, for wgmma forms ------------------------------

def _wg_plan(form, operand) -> RegisterPlan:
    """The register plan of a wgmma form's operand; an mma.sync form gets the wgmma table's refusal."""
    p = plan(form, operand)
    return p if isinstance(p.form, WgmmaForm) else plan(lookup_wgmma(form), operand)


def unpack_wg(form, operand, regs) -> np.ndarray:
    """Registers uint32 (..., 128, nregs) -> matrix bits (..., rows, cols) of A, C or D."""
    return unpack_plan(_wg_plan(form, operand), regs)


def pack_wg(form, operand, matrix) -> np.ndarray:
    """Matrix bits (..., rows, cols) -> registers uint32 (..., 128, nregs) of A, C or D."""
    return pack_plan(_wg_plan(form, operand), matrix)


# -- descriptors and shared memory -----------------------------------------------------------------------

def _descriptor_values(x, name: str) -> np.ndarray:
    """Descriptors (an int, a MatrixDescriptor, or an array/sequence of them) -> uint64 array."""
    if type(x) is np.ndarray and x.dtype == np.uint64 and x.size and (x == x.flat[0]).all():   # fragsim run's
        _valid_descriptor(int(x.flat[0]), name)
        return x
    from fragsim.layout.descriptor import MatrixDescriptor, as_descriptor
    if isinstance(x, (MatrixDescriptor, dict)):
        return np.array(as_descriptor(x, name).encode(), np.uint64)
    if isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_)):
        return np.array(_valid_descriptor(int(x), name), np.uint64)
    if isinstance(x, np.ndarray) and x.dtype.kind in "ui":
        if x.dtype.kind == "i":
            x = x.astype(np.int64).view(np.uint64) if x.dtype.itemsize == 8 else x.astype(np.int64).astype(np.uint64)
        vals = x.astype(np.uint64, copy=False)
        one = vals.size == 1 or (vals.size > 1 and (vals == vals.flat[0]).all())
        for v in (vals.reshape(-1)[:1] if one else np.unique(vals)):   # every distinct value a valid descriptor
            _valid_descriptor(int(v), name)
        return vals
    if isinstance(x, (list, tuple)):
        out = np.array([int(as_descriptor(v, f"{name}[{i}]").encode()) for i, v in enumerate(x)], np.uint64)
        return out
    raise TypeError(f"{name} must be a fragsim.MatrixDescriptor, a 64-bit descriptor value, or an array of them "
                    f"(one per batch element), got {validate.show(x)}")


@lru_cache(maxsize=4096)
def _valid_descriptor(value: int, name: str) -> int:
    """``value`` once it decodes as a descriptor (kept: a kernel passes the same few values again and again)."""
    from fragsim.layout.descriptor import as_descriptor
    return as_descriptor(value, name).encode()


@lru_cache(maxsize=4096)
def _addresses(desc: int, rows: int, k: int, elem_bits: int, major: str) -> np.ndarray:
    from fragsim.layout.descriptor import operand_addresses
    a = np.asarray(operand_addresses(int(desc), rows=rows, k=k, elem_bits=elem_bits, major=major), np.int64)
    a.setflags(write=False)
    return a


def gather_operand(smem: np.ndarray, descs: np.ndarray, *, rows: int, k: int, elem_bits: int, major: str,
                   name: str) -> np.ndarray:
    """Element words (batch, rows, k) read through one descriptor per batch element.

    ``smem`` (batch, nbytes) uint8, ``descs`` (batch,) uint64; elements little-endian."""
    nbytes = smem.shape[-1]
    eb = elem_bits // 8
    batch = smem.shape[0]
    dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}[eb]
    out = np.empty((batch, rows, k), dtype)
    uniq, inv = np.unique(descs, return_inverse=True)
    for j, d in enumerate(uniq):
        addr = _addresses(int(d), rows, k, elem_bits, major)
        top = int(addr.max()) + eb
        if top > nbytes:
            r, c = (int(i) for i in np.argwhere(addr + eb > nbytes)[0])
            raise ValueError(f"{name}: descriptor {int(d):#018x} reads element ({r}, {c}) at smem byte "
                             f"{int(addr[r, c]):#x}, past the {nbytes} bytes of smem")
        sel = np.nonzero(inv.reshape(-1) == j)[0]
        word = np.zeros((sel.size, rows, k), np.uint32)
        for i in range(eb):
            word |= smem[sel][:, addr + i].astype(np.uint32) << np.uint32(8 * i)
        out[sel] = word.astype(dtype)
    return out


# -- arithmetic ------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _decode_table(name: str) -> np.ndarray:
    n = 1 << FORMATS[name].storage_bits
    vals = np.asarray(from_bits(np.arange(n, dtype=FORMATS[name].dtype), name), np.float64)
    vals.setflags(write=False)
    return vals


def _decode(bits: np.ndarray, name: str) -> np.ndarray:
    """Exact float64 values of element words (tf32: the low 13 bits dropped first)."""
    if name in ("tf32", "f32"):
        w = bits.astype(np.uint32)
        if name == "tf32":
            w = w & np.uint32(0xFFFFE000)
        with np.errstate(invalid="ignore"):      # signalling NaNs stay NaNs
            return w.view(np.float32).astype(np.float64)
    return _decode_table(name)[bits]


def _nominal_exp(v: np.ndarray, emin: int, e_zero: int) -> np.ndarray:
    """max(floor(log2|v|), emin); e_zero for a zero; 4096 for Inf/NaN (it then wins E_max, and every
    finite term vanishes beside the Inf/NaN that decides the result)."""
    e = np.frexp(v)[1].astype(np.int64) - 1
    e = np.maximum(e, emin)
    e = np.where(v == 0, e_zero, e)
    return np.where(np.isfinite(v), e, 4096)


def _round(v: np.ndarray, man: int, ebits: int, mode: str) -> np.ndarray:
    """Exact float64 values -> the nearest (RNE) or toward-zero (RZ) value of a grid with ``man``
    mantissa and ``ebits`` exponent bits, subnormals kept, overflow to Inf; NaN stays NaN."""
    bias = (1 << (ebits - 1)) - 1
    emin = 1 - bias
    av = np.abs(v)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.maximum(np.frexp(np.where(np.isfinite(av), av, 0.0))[1].astype(np.int64) - 1, emin)
        q = np.ldexp(1.0, e - man)
        t = av / q
        r = (np.rint(t) if mode == "rne" else np.trunc(t)) * q
        r = np.where(r >= np.ldexp(1.0, bias + 1), np.inf, r)
        r = np.where(np.isfinite(av), r, av)
    return np.where(v < 0, -r, r) + 0.0           # + 0.0: a zero result is +0


def _to_bits(v: np.ndarray, out: str) -> np.ndarray:
    if out == "f16":
        w = v.astype(np.float16).view(np.uint16).astype(np.uint32)
        return np.where(np.isnan(v), np.uint32(0x7FFF), w)
    w = v.astype(np.float32).view(np.uint32)
    return np.where(np.isnan(v), np.uint32(0x7FFFFFFF), w)


def float_dot(a: np.ndarray, b: np.ndarray, c: np.ndarray, *, in_a: str, in_b: str, acc: str,
              params: WgmmaParams) -> np.ndarray:
    """D element words (batch, M, N) uint32 of the truncated fused dot-product-add.

    ``a`` (batch, M, K) and ``b`` (batch, K, N) float64 values (scale_a/b applied), ``c`` (batch, M, N)
    float64 values (+0 where scale-d is 0)."""
    F, L, man32 = params.of(in_a)
    e_zero = params.e_zero_f16 if acc == "f16" else params.e_zero_f32
    man, ebits, mode = (10, 5, params.round_f16) if acc == "f16" else (man32, 8, params.round_f32)
    acc_emin = FORMATS[acc].emin
    ea = _nominal_exp(a, FORMATS[in_a].emin, 0)
    eb = _nominal_exp(b, FORMATS[in_b].emin, 0)
    K = a.shape[-1]
    bt = np.swapaxes(b, -1, -2)                                  # (batch, N, K)
    ebt = np.swapaxes(eb, -1, -2)
    for k0 in range(0, K, L):
        k1 = min(k0 + L, K)
        with np.errstate(invalid="ignore"):                      # Inf * 0 is the NaN it should be
            p = a[:, :, None, k0:k1] * bt[:, None, :, k0:k1]     # (batch, M, N, L), exact
            zero = (a[:, :, None, k0:k1] == 0) | (bt[:, None, :, k0:k1] == 0)
        pe = np.where(zero, e_zero, ea[:, :, None, k0:k1] + ebt[:, None, :, k0:k1])
        ce = _nominal_exp(c, acc_emin, e_zero)
        emax = np.maximum(pe.max(axis=-1), ce)
        sh = F - emax
        with np.errstate(invalid="ignore"):
            s = np.trunc(np.ldexp(p, sh[..., None])).sum(axis=-1) + np.trunc(np.ldexp(c, sh))
            c = _round(np.ldexp(s, -sh), man, ebits, mode)
    return _to_bits(c, acc)


def int_dot(a: np.ndarray, b: np.ndarray, c: np.ndarray, *, satfinite: bool, params: WgmmaParams) -> np.ndarray:
    """D words (batch, M, N) uint32: c + sum_k a*b exactly, wrapped, or clamped under .satfinite."""
    lo, hi = -(1 << 31), (1 << 31) - 1
    K = a.shape[-1]
    step = K if not satfinite or params.sat_block_int <= 0 else params.sat_block_int
    acc = c.astype(np.int64)
    for k0 in range(0, K, step):
        acc = acc + np.einsum("bmk,bkn->bmn", a[:, :, k0:k0 + step], b[:, k0:k0 + step, :])
        if satfinite:
            acc = np.clip(acc, lo, hi)
    return (acc & 0xFFFFFFFF).astype(np.uint32)


# -- the instruction -------------------------------------------------------------------------------------

def _is_regs(x) -> bool:
    return isinstance(x, np.ndarray) and x.dtype == np.uint32 and x.ndim >= 2


@dataclass
class _Call:
    """A checked call: the form, the row, the immediates, each operand as given (leading dimensions
    un-broadcast) and the batch they broadcast to."""
    f: WgmmaForm
    params: WgmmaParams
    sa: int
    sb: int
    ta: bool
    tb: bool
    a_regs: bool
    sm: np.ndarray              # smem (..., nbytes); with smem_rows: (S, nbytes), one row per warpgroup chosen
    smem_rows: np.ndarray | None
    av: np.ndarray              # A's registers (..., 128, 4) or descriptor values (...)
    bdesc: np.ndarray
    cr: np.ndarray
    sd: np.ndarray
    lead: tuple
    n: int

    def flat(self, x, tail):
        return np.broadcast_to(x, self.lead + tail).reshape((self.n,) + tail)


def _immediates(f: WgmmaForm, scale_a, scale_b, trans_a, trans_b, a_regs: bool) -> tuple[int, int, bool, bool]:
    """imm-scale-a/b and imm-trans-a/b, checked against the form."""
    sa = validate.integer(scale_a, "scale_a", (1, -1), "imm-scale-a")
    sb = validate.integer(scale_b, "scale_b", (1, -1), "imm-scale-b")
    ta = validate.boolean(trans_a, "trans_a")
    tb = validate.boolean(trans_b, "trans_b")
    if not f.scale_ab and (sa != 1 or sb != 1):
        raise ValueError(f"form {f.name}: imm-scale-a/imm-scale-b exist only for the floating-point forms "
                         "(PTX ISA wgmma.mma_async); use scale_a=scale_b=1")
    if not f.trans and (ta or tb):
        raise ValueError(f"form {f.name}: imm-trans-a/imm-trans-b exist only for .f16/.bf16 inputs: .{f.types['A']} "
                         "operands must be K-major (PTX ISA wgmma.mma_async)")
    if a_regs and ta:
        raise ValueError(f"form {f.name}: trans_a applies to A in shared memory only (with A in registers PTX has "
                         "no imm-trans-a)")
    return sa, sb, ta, tb


def _checked(form, a, b, c, smem, scale_d, scale_a, scale_b, trans_a, trans_b, arch, smem_rows=None) -> _Call:
    f = lookup_wgmma(form)
    params = get_params(arch)
    a_regs = _is_regs(a)
    sa, sb, ta, tb = _immediates(f, scale_a, scale_b, trans_a, trans_b, a_regs)
    sm = validate.array(smem, "smem")
    if sm.dtype != np.uint8:
        raise TypeError(f"smem must be a uint8 array of shared-memory bytes (..., nbytes), got dtype {sm.dtype}")
    if sm.ndim < 1 or sm.shape[-1] == 0:
        raise ValueError(f"smem must be shaped (..., nbytes) with nbytes > 0, got shape {sm.shape}")
    cr = check_regs(f, "C", c)
    av = check_regs(f, "A", a) if a_regs else _descriptor_values(a, "a")     # registers or descriptors
    bdesc = _descriptor_values(b, "b")
    sd = validate.array(scale_d, "scale_d")
    if sd.dtype != np.bool_:
        raise TypeError(f"scale_d must be True/False or a bool array (one per batch element), got {validate.show(scale_d)}")
    rows = None
    if smem_rows is not None:           # fragsim run: the CTAs' shared memories, one row per warpgroup
        rows = np.asarray(smem_rows, np.int64)
        if sm.ndim != 2 or rows.ndim != 1 or (rows.size and not 0 <= rows.min() <= rows.max() < sm.shape[0]):
            raise ValueError(f"smem_rows: one row of smem ({sm.shape}) per warpgroup, got {validate.show(smem_rows)}")
        shapes = [rows.shape, cr.shape[:-2], (av.shape[:-2] if a_regs else av.shape), bdesc.shape, sd.shape]
    else:
        shapes = [sm.shape[:-1], cr.shape[:-2], (av.shape[:-2] if a_regs else av.shape), bdesc.shape, sd.shape]
    names = ["smem", "c", "a", "b", "scale_d"]
    lead = validate.broadcast_shape(shapes, names, f"{f.name}: the leading (batch) dimensions of ")
    if len(lead) > 61:                       # lead + (128, nregs) and the (batch, M, N, L) products
        raise ValueError(f"{f.name}: at most 61 leading (batch) dimensions, got {len(lead)} "
                         f"(smem {sm.shape}, a, b, c, scale_d broadcast together)")
    n = math.prod(lead)
    return _Call(f, params, sa, sb, ta, tb, a_regs, sm, rows, av, bdesc, cr, sd, lead, n)


def wgmma(form, a, b, c, *, smem, scale_d=True, scale_a=1, scale_b=1, trans_a=False, trans_b=False,
          arch=DEFAULT_ARCH) -> np.ndarray:
    """D = A*B + C (or A*B when ``scale_d`` is False) of one ``wgmma.mma_async`` per warpgroup.

    ``form``: PTX's spelling after ``wgmma.mma_async.sync.aligned.``, e.g. ``"m64n64k16.f32.bf16.bf16"``.
    ``a``: A's registers, uint32 ``(..., 128, 4)``, or A's descriptors; ``b``: B's descriptors.  A
    descriptor is a ``fragsim.MatrixDescriptor``, its 64-bit value, or an integer array of values
    (one per batch element; any non-uint32 array of ``a`` is read as descriptors).  ``c``: the
    accumulator registers uint32 ``(..., 128, nregs)``.  ``smem``: shared-memory bytes uint8
    ``(..., nbytes)``; descriptor start addresses are byte offsets into it, its byte 0 counting as
    1024-byte aligned.  ``scale_d``: bool or bool array per batch element.  ``scale_a``/``scale_b``:
    1 or -1 (imm-scale-a/b, floating-point forms).  ``trans_a``/``trans_b``: imm-trans-a/b (.f16 and
    .bf16 only; ``trans_a`` with A in shared memory only): the operand is MN-major.  Leading
    dimensions of every argument broadcast together.  Returns D registers, uint32 ``(..., 128, nregs)``.

    Computed by the numba kernels of ``fragsim.arith.kernel_wgmma`` where they model the row ``arch``
    (every form on the sm_90 row), else by ``wgmma_reference``, the NumPy model they are tested against.
    """
    v = _checked(form, a, b, c, smem, scale_d, scale_a, scale_b, trans_a, trans_b, arch)
    _room(v)
    d = _fast(v)
    return _reference(v) if d is None else d


def _room(v: _Call) -> None:
    """The kernels' working memory -- D, and C where it broadcasts -- within the limit, before they allocate."""
    M, N, _ = v.f.shape
    validate.working_memory(v.n * 8 * M * N, f"{v.f.name}: a batch of {' x '.join(map(str, v.lead))} = "
                            f"{v.n:,} warpgroups", "split the batch into several calls")


def wgmma_reference(form, a, b, c, *, smem, scale_d=True, scale_a=1, scale_b=1, trans_a=False, trans_b=False,
                    arch=DEFAULT_ARCH) -> np.ndarray:
    """``wgmma``, computed by the NumPy model: every element's blocks in float64 (``float_dot``,
    ``int_dot``).  The oracle of the numba kernels (tests compare the two); slow (tens of microseconds per
    m16n8k16-equivalent)."""
    return _reference(_checked(form, a, b, c, smem, scale_d, scale_a, scale_b, trans_a, trans_b, arch))


def warpgroups(form, a, b, c, *, smem, smem_rows, scale_d, scale_a=1, scale_b=1, trans_a=False, trans_b=False,
               arch=DEFAULT_ARCH, reference=False) -> np.ndarray:
    """``wgmma`` of warpgroups whose shared memory is row ``smem_rows[i]`` of ``smem`` (S, nbytes) -- the
    CTAs of ``fragsim run`` -- without copying those rows per warpgroup."""
    v = _checked(form, a, b, c, smem, scale_d, scale_a, scale_b, trans_a, trans_b, arch, smem_rows)
    d = None if reference else _fast(v)
    return _reference(v) if d is None else d


def _reference(v: _Call) -> np.ndarray:
    """The NumPy model: operands gathered into matrices, ``float_dot`` / ``int_dot`` in float64 / int64."""
    f, params, n, lead = v.f, v.params, v.n, v.lead
    M, N, K = f.shape
    sm, av, cr, bdesc, sd, ta, tb, sa, sb = v.sm, v.av, v.cr, v.bdesc, v.sd, v.ta, v.tb, v.sa, v.sb
    # per warpgroup: its smem (copied where it broadcasts), A and B as elements and decoded values,
    # C, D and the accumulators as words and values
    validate.working_memory(n * (sm.shape[-1] + 16 * (M * K + N * K) + 32 * M * N),
                            f"{f.name}: a batch of {' x '.join(map(str, lead))} = {n:,} warpgroups",
                            "split the batch into several calls")

    flat = v.flat
    smf = sm[flat(v.smem_rows, ())] if v.smem_rows is not None else flat(sm, sm.shape[-1:])
    ta_, tb_ = f.types["A"], f.types["B"]
    abits, bbits = f.fmt("A").storage_bits, f.fmt("B").storage_bits
    if v.a_regs:
        A = unpack_wg(f, "A", flat(av, av.shape[-2:]))
    else:
        A = gather_operand(smf, flat(av, ()), rows=M, k=K, elem_bits=abits, major="MN" if ta else "K", name="a")
    B = gather_operand(smf, flat(bdesc, ()), rows=N, k=K, elem_bits=bbits, major="MN" if tb else "K", name="b")
    C = unpack_wg(f, "C", flat(cr, cr.shape[-2:]))
    keep = flat(sd, ())
    out = np.empty((n, M, N), np.uint32)
    acc = f.types["D"]
    if acc == "s32":
        from fragsim.facts.formats import int_from_bits
        Ai = int_from_bits(A, ta_)
        Bi = np.swapaxes(int_from_bits(B, tb_), -1, -2)
        Ci = np.where(keep[:, None, None], C.astype(np.uint32).view(np.int32).astype(np.int64), 0)
        out[:] = int_dot(Ai, Bi, Ci, satfinite=f.satfinite, params=params)
    else:
        # chunks keep the (batch, M, N, L) product arrays near 2**21 elements
        step = max(1, (1 << 21) // (M * N * min(K, params.of(ta_)[1])))
        for i in range(0, n, step):
            j = min(n, i + step)
            av_ = _decode(A[i:j], ta_) * sa
            bv = np.swapaxes(_decode(B[i:j], tb_), -1, -2) * sb
            cv = np.where(keep[i:j, None, None], _decode(C[i:j], acc), 0.0)
            out[i:j] = float_dot(av_, bv, cv, in_a=ta_, in_b=tb_, acc=acc, params=params)
    d = pack_wg(f, "D", out if acc != "f16" else out.astype(np.uint16))
    return d.reshape(lead + d.shape[-2:])


# -- the numba path --------------------------------------------------------------------------------------

_FLOAT_CODES = {"f16": 0, "bf16": 1, "tf32": 2, "e4m3": 4, "e5m2": 5}      # fragsim.arith.kernel_wgmma's
_COMPUTE = {"f16": 0, "bf16": 1, "tf32": 2, "e4m3": 0, "e5m2": 0}          # fp8 values are f16 values


@dataclass(frozen=True)
class _Config:
    """What the numba kernels need of a (form, row) beyond the operands."""
    key: tuple                  # float: compiled() configuration; integer: ()
    prm: np.ndarray
    integer: bool
    abits: int
    bbits: int
    cwords: int                 # C's and D's register words per warpgroup
    dwords: int


@lru_cache(maxsize=256)
def _config(f: WgmmaForm, params: WgmmaParams) -> _Config | None:
    """How the numba kernels compute this form on this row, or None where they do not model it (the
    NumPy model then does)."""
    M, N, K = f.shape
    ta, tb, acc = f.types["A"], f.types["B"], f.types["D"]
    sizes = dict(abits=f.fmt("A").storage_bits, bbits=f.fmt("B").storage_bits, cwords=THREADS * f.nregs("C"),
                 dwords=THREADS * f.nregs("D"))
    if acc == "s32":
        block = K if not f.satfinite or params.sat_block_int <= 0 else params.sat_block_int
        if block % 8:
            return None
        prm = np.array([K, N, FORMATS_INT[ta], FORMATS_INT[tb], f.satfinite, block, sizes["cwords"], sizes["dwords"]],
                       np.int64)
        return _Config((), prm, True, **sizes)
    F, L, man32 = params.of(ta)
    # kernel16's limits: blocks of an even length dividing K whose truncated terms sum in int32
    if K % L or L % 2 or (L << (F + 2)) > (1 << 31):
        return None
    a_emin, b_emin = FORMATS[ta].emin, FORMATS[tb].emin
    if acc == "f16":
        rne, ezero, mask = params.round_f16 == "rne", params.e_zero_f16, -1
        # the int32 path scales c by its exponent field: E_max must stay above F - 127
        if min(ezero, 2 * min(a_emin, b_emin), FORMATS["f16"].emin) < F - 126:
            return None
    else:
        rne, ezero = params.round_f32 == "rne", params.e_zero_f32
        if man32 < 23 and rne:                  # RNE onto a coarser grid is not binary32's RNE, then a cut
            return None
        mask = -(1 << (23 - man32))
    # (C and D words between warps, D's words of a warp: lane-major registers; fragsim run's file changes them)
    prm = np.array([F, ezero, FORMATS[acc].emin, _FLOAT_CODES[ta], a_emin, 0, _FLOAT_CODES[tb], b_emin, 0, mask, N,
                    32 * f.nregs("C"), 32 * f.nregs("D"), 32 * f.nregs("D")], np.int64)
    return _Config((_COMPUTE[ta], acc == "f16", rne, K, L), prm, False, **sizes)


FORMATS_INT = {"s8": 1, "u8": 0}        # signed


def _order(x: np.ndarray, kind: str, K: int) -> np.ndarray:
    """Per-element values of an operand (rows, K) in the order the kernels decode them: float A k-major
    by warps of 16 rows, float B k-major by blocks of 8 columns, integer operands row-major."""
    rows = x.shape[0]
    if kind == "fA":
        return x.reshape(rows // 16, 16, K).transpose(0, 2, 1).ravel()
    if kind == "fB":
        return x.reshape(rows // 8, 8, K).transpose(0, 2, 1).ravel()
    return x.ravel()


@lru_cache(maxsize=4096)
def _smem_table(desc: int, rows: int, k: int, elem_bits: int, major: str, kind: str, nbytes: int, name: str):
    """(word index, bit shift) of every element read through ``desc``, in the kernels' order, over shared
    memory as 32-bit words; refuses an element past ``nbytes`` as ``gather_operand`` does."""
    addr = _addresses(desc, rows, k, elem_bits, major)
    eb = elem_bits // 8
    if int(addr.max()) + eb > nbytes:
        r, c = (int(i) for i in np.argwhere(addr + eb > nbytes)[0])
        raise ValueError(f"{name}: descriptor {desc:#018x} reads element ({r}, {c}) at smem byte "
                         f"{int(addr[r, c]):#x}, past the {nbytes} bytes of smem")
    if (addr % eb).any():
        return None
    a = _order(addr, kind, k)
    idx, sh = (a >> 2).astype(np.int32), ((a & 3) * 8).astype(np.int32)
    idx.setflags(write=False)
    sh.setflags(write=False)
    return idx, sh, int(idx.min()), int(idx.max()) + 1


@lru_cache(maxsize=256)
def _register_maps(f: WgmmaForm, integer: bool, file=None):
    """Where the kernels find A's elements in its registers (word, bit shift), C's (float: per column of a
    warp, its 16 rows, relative to the warp's first word; integer: row-major over the warpgroup) and put
    D's, and where each stretch of D's words goes (``doff``: 16 words a stretch, 8 for the integer forms).

    ``file`` None: the registers of ``fragsim.wgmma``, lane-major (``thread * nregs + reg`` from the
    warpgroup's first word).  ``file = (c_rows, a_rows, T)``: fragsim run's register file (registers,
    T threads) flattened, register ``r`` of C/D in row ``c_rows[r]``, of A in ``a_rows[r]`` (or None), a
    warpgroup's words from its first thread on (D's words register-major: whole stretches of a row)."""
    M, N, K = f.shape
    out: dict[str, np.ndarray] = {}

    def word(thread, reg, nregs, rows):
        return thread * nregs + reg if file is None else np.asarray(rows, np.int64)[reg] * file[2] + thread

    rows, cols = f.coords("A")                       # (128, 4, epr)
    thread, reg, half = np.meshgrid(np.arange(THREADS), np.arange(4), np.arange(rows.shape[2]), indexing="ij")
    if file is None or file[1] is not None:
        w = np.full((M, K), -1, np.int64)
        shift = np.full((M, K), -1, np.int64)
        w[rows, cols] = word(thread, reg, 4, None if file is None else file[1])
        shift[rows, cols] = half * f.fmt("A").storage_bits
        kind = "iA" if integer else "fA"
        out["a_idx"], out["a_sh"] = (_order(x, kind, K).astype(np.int32) for x in (w, shift))
    rows, cols = f.coords("C")                       # (128, nregs, epr)
    nregs, epr = rows.shape[1], rows.shape[2]
    thread, reg, half = np.meshgrid(np.arange(THREADS), np.arange(nregs), np.arange(epr), indexing="ij")
    c_rows = None if file is None else file[0]
    out["prow"] = np.zeros(0, np.int64) if file is None else np.unique(np.asarray(file[0], np.int64)) * file[2]
    if integer:
        src = np.full(M * N, -1, np.int64)
        src[rows * N + cols] = word(thread, reg, nregs, c_rows)
        out["c_src"] = src
        elem = (rows * N + cols)[..., 0]             # (thread, reg): D's element
        if file is None:                             # D's words lane-major, 8 at a time
            out["d_dst"] = elem.reshape(-1).astype(np.int64)
            out["doff"] = np.arange(0, THREADS * nregs, 8, dtype=np.int64)
        else:                                        # register-major: 8 threads of one register a stretch
            out["d_dst"] = elem.T.reshape(-1).astype(np.int64)
            x = np.arange(0, THREADS * nregs, 8)
            out["doff"] = word(x % THREADS, x // THREADS, nregs, c_rows).astype(np.int64)
    else:
        # per warp, relative to its first thread: the same map for each of the 4 warps
        w = rows // 16
        assert (w == thread // 32).all()
        rel = word(thread % 32, reg, nregs, c_rows)
        pos = cols * 16 + rows % 16                  # the kernel's column-major D of a warp
        src = np.full(16 * N, -1, np.int64)
        sh = np.zeros(16 * N, np.int64)
        sel = w == 0
        src[pos[sel]] = rel[sel]
        sh[pos[sel]] = half[sel] * 16
        for ww in range(1, 4):
            assert np.array_equal(src[pos[w == ww]], rel[w == ww])
        out["c_src"], out["c_sh"] = src.astype(np.int32), sh.astype(np.int32)
        p0 = pos[:32]                                # (lane, reg, half) of warp 0
        for ww in range(1, 4):
            assert np.array_equal(pos[32 * ww:32 * ww + 32], p0)
        if file is not None:                         # register-major: 16 lanes of one register a stretch
            p0 = p0.transpose(1, 0, 2)
        p0 = p0.reshape(32 * nregs, epr)
        out["d_lo"], out["d_hi"] = np.ascontiguousarray(p0[:, 0], np.int32), np.ascontiguousarray(p0[:, -1], np.int32)
        x = np.arange(0, 32 * nregs, 16)
        out["doff"] = (x if file is None else word(x % 32, x // 32, nregs, c_rows)).astype(np.int64)
    for k, v in out.items():
        assert (v >= 0).all(), f"{f.name}: {k} does not cover its matrix"
        v.setflags(write=False)
    return out


def _rows_of(x: np.ndarray, tail: int, lead: tuple, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``x`` (..., *tail dims) as a C-contiguous 2-D array (S, size of the tail) and the row of it each of
    the ``n`` batch elements of ``lead`` reads -- broadcasting by index, not by copying."""
    xl = x.shape[:x.ndim - tail]
    s = math.prod(xl)
    x2 = x.reshape(s, -1)
    if not x2.flags.c_contiguous:
        x2 = np.ascontiguousarray(x2)
    if s == 1:
        return x2, np.zeros(n, np.int64)
    if xl == lead:
        return x2, np.arange(n, dtype=np.int64)
    return x2, np.broadcast_to(np.arange(s, dtype=np.int64).reshape(xl), lead).reshape(n)


def _tables(descs: np.ndarray, lead: tuple, n: int, rows: int, k: int, elem_bits: int, major: str, kind: str,
            nbytes: int, name: str):
    """The element tables of a batch of descriptors, stacked per distinct value, and each warpgroup's offset
    into them; None where an element is not aligned to its size."""
    if descs.size == 1 or (descs == descs.flat[0]).all():           # one descriptor for all: one table
        t = _smem_table(int(descs.flat[0]), rows, k, elem_bits, major, kind, nbytes, name)
        return None if t is None else (t[0], t[1], np.zeros(n, np.int64), t[2], t[3])
    uniq, inv = np.unique(descs, return_inverse=True)
    tabs = [_smem_table(int(d), rows, k, elem_bits, major, kind, nbytes, name) for d in uniq]
    if any(t is None for t in tabs):
        return None
    which = np.broadcast_to(inv.reshape(descs.shape), lead).reshape(n)
    lo, hi = np.array([t[2] for t in tabs], np.int64)[which], np.array([t[3] for t in tabs], np.int64)[which]
    return np.concatenate([t[0] for t in tabs]), np.concatenate([t[1] for t in tabs]), which * (rows * k), lo, hi


def _fast(v: _Call) -> np.ndarray | None:
    """D of the numba kernels (``fragsim.arith.kernel_wgmma``), or None where they do not model the call."""
    f, n, lead = v.f, v.n, v.lead
    kern = _kernel(f, v.params, (v.sa, v.sb, v.ta, v.tb), None)
    if kern is None or n == 0:          # an empty batch: the NumPy model's empty D
        return None
    if v.smem_rows is not None:
        sm2, srow = v.sm, v.flat(v.smem_rows, ())
    else:
        sm2, srow = _rows_of(v.sm, 1, lead, n)
    a: tuple | np.ndarray
    if v.a_regs:
        a2, arow = _rows_of(v.av, 2, lead, n)
        a = (a2.reshape(-1), arow * (THREADS * 4))
    else:
        a = v.flat(v.av, ()) if v.av.size > 1 else v.av
    c2, crow = _rows_of(v.cr, 2, lead, n)
    keep = (np.full(n, bool(v.sd.reshape(-1)[0]), np.uint8) if v.sd.size == 1
            else v.flat(v.sd, ()).astype(np.uint8))
    dwords = kern.cfg.dwords
    d = np.empty(n * dwords, np.uint32)
    ok = kern(n, a, v.flat(v.bdesc, ()) if v.bdesc.size > 1 else v.bdesc, sm2, srow, c2.reshape(-1),
              crow * kern.cfg.cwords, keep, d, np.arange(n, dtype=np.int64) * dwords)
    return d.reshape(lead + (THREADS, dwords // THREADS)) if ok else None


@lru_cache(maxsize=256)
def _kernel(f: WgmmaForm, params: WgmmaParams, imm: tuple, file) -> "_Kernel | None":
    """The kernel of a form, row and immediates (and register layout, ``_register_maps``'s ``file``), or None
    where the numba kernels do not model them."""
    cfg = _config(f, params)
    return None if cfg is None else _Kernel(f, cfg, _register_maps(f, cfg.integer, file), imm, file is not None)


class _Kernel:
    """A form, row, immediates and register layout, ready to launch: everything that does not change from
    one call to the next.  Calling it runs the kernel over ``n`` warpgroups: A from registers ``a = (words,
    base per warpgroup)`` or through descriptors ``a`` (one per warpgroup), B through ``bdesc``, shared memory
    row ``srow[g]`` of ``sm2`` (S, nbytes), C's words from ``cbase[g]`` of ``cw``, D's to ``dbase[g]`` of
    ``dw``.  False (nothing computed) where an operand's elements are not aligned to their size."""

    def __init__(self, f: WgmmaForm, cfg: _Config, maps: dict, imm: tuple, file_mode: bool):
        from fragsim.arith import kernel_wgmma as KW
        M, N, K = f.shape
        self.f, self.cfg, self.maps, self.file_mode = f, cfg, maps, file_mode
        sa, sb, self.ta, self.tb = imm
        self.kind = "i" if cfg.integer else "f"
        if cfg.integer:
            self.kern, self.tiles = KW.run_int, 4 * N // 8 * (K // 16)
            self.scratch = lambda: KW.scratch_int(K, N)
            self.tail: tuple = (maps["c_src"], maps["d_dst"], cfg.prm)
        else:
            prm = cfg.prm.copy()
            prm[KW.Q_A_NEG], prm[KW.Q_B_NEG] = sa < 0, sb < 0
            if file_mode:                   # C and D of a warp: 32 threads further in the file's rows
                prm[KW.Q_CSTEP] = prm[KW.Q_DSTEP] = 32
            self.kern, self.tiles = KW.compiled(*cfg.key), 4 * N // 8
            self.scratch = lambda: KW.scratch(K, N)
            self.tail = (maps["c_src"], maps["c_sh"], maps["d_lo"], maps["d_hi"], prm)
        self.launch = KW.launch
        from fragsim.arith.jit import listen
        self.listen = listen

    def __call__(self, n: int, a, bdesc, sm2, srow, cw, cbase, keep, dw, dbase) -> bool:
        f, cfg, maps = self.f, self.cfg, self.maps
        M, N, K = f.shape
        # shared memory as 32-bit words (a copy only where its rows are no whole number of words)
        nbytes = sm2.shape[-1]
        if nbytes % 4 or not sm2.flags.c_contiguous:
            pad = np.zeros((sm2.shape[0], -(-nbytes // 4) * 4), np.uint8)
            pad[:, :nbytes] = sm2
            sm2 = pad
        smw = sm2.reshape(-1).view(np.uint32)
        sbase = srow * (sm2.shape[1] // 4)
        bt = _tables(bdesc, (n,), n, N, K, cfg.bbits, "MN" if self.tb else "K", self.kind + "B", nbytes, "b")
        if bt is None:
            return False
        # the word ranges of each warpgroup's A, B, C and D, for the kernels' prefetches (C and D in fragsim
        # run's register file: the warpgroup's 128 words of each row in maps["prow"])
        pf = np.zeros((n, 8), np.int64)
        pf[:, 2], pf[:, 3] = sbase + bt[3], sbase + bt[4]
        if isinstance(a, tuple):
            asrc, abase = a
            aidx, ash, atoff = maps["a_idx"], maps["a_sh"], np.zeros(n, np.int64)
            if not self.file_mode:
                pf[:, 0], pf[:, 1] = abase, abase + THREADS * 4
        else:
            at = _tables(a, (n,), n, M, K, cfg.abits, "MN" if self.ta else "K", self.kind + "A", nbytes, "a")
            if at is None:
                return False
            asrc, abase = smw, sbase
            aidx, ash, atoff = at[:3]
            pf[:, 0], pf[:, 1] = sbase + at[3], sbase + at[4]
        pf[:, 4], pf[:, 6] = cbase, dbase
        pf[:, 5], pf[:, 7] = cbase + cfg.cwords, dbase + cfg.dwords
        self.listen()
        self.launch(self.kern, n, self.tiles, (asrc, abase, aidx, ash, atoff, smw, sbase, bt[0], bt[1], bt[2], cw, cbase,
                                               keep, dw, dbase, maps["doff"], pf.reshape(-1), maps["prow"]) + self.tail,
                    self.scratch, True)
        return True


def file_plan(form, file: np.ndarray, d_rows, a=None, *, scale_a=1, scale_b=1, trans_a=False, trans_b=False,
              arch=DEFAULT_ARCH):
    """fragsim run's wgmma on its register file, D written in place, prepared once per instruction and run:
    C and D in rows ``d_rows`` of ``file`` (registers, threads) uint32, A in registers ``a = (words, rows)``
    (a file of the same threads, flattened, and A's 4 rows in it) or (None) through descriptors.  Returns
    ``run(t0, a, b, smem, smem_rows, scale_d) -> True``: the warpgroups of threads t0, t0 + 128, ... (one
    per entry of ``smem_rows``, the row of ``smem`` (S, nbytes) that is its CTA's shared memory), A through
    descriptors ``a`` (one per warpgroup; ignored with A in registers), B through ``b``, ``scale_d`` per
    warpgroup; it returns False, with nothing written, where an operand's elements are not aligned.  None
    where the numba kernels do not model the form on ``arch`` (the caller then takes ``warpgroups``)."""
    f = lookup_wgmma(form)
    imm = _immediates(f, scale_a, scale_b, trans_a, trans_b, a is not None)
    if file.size >= 1 << 31 or (a is not None and a[0].size >= 1 << 31):     # the kernels' indices are int32
        return None
    kern = _kernel(f, get_params(arch), imm, (tuple(int(r) for r in d_rows),
                                             None if a is None else tuple(int(r) for r in a[1]), file.shape[1]))
    if kern is None:
        return None
    words = file.reshape(-1)
    a_words = None if a is None else a[0]
    steps = np.arange(1 << 12, dtype=np.int64) * THREADS

    def run(t0: int, a_desc, b_desc, smem, smem_rows, scale_d) -> bool:
        n = len(smem_rows)
        base = t0 + (steps[:n] if n <= steps.size else np.arange(n, dtype=np.int64) * THREADS)
        src = (a_words, base) if a_words is not None else _descriptor_values(a_desc, "a")
        keep = np.asarray(scale_d).astype(np.uint8)
        return kern(n, src, _descriptor_values(b_desc, "b"), smem, np.asarray(smem_rows, np.int64), words, base,
                    keep, words, base)
    return run
