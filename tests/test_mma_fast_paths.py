"""The compiled fp8 driver (``fragsim.arith.kernel_fp8``) and the compiled m8n8k4 .f16 trees
(``fragsim.arith.chain``) compute bit for bit what their NumPy reference models computed: the
reference implementations are kept here as the oracles, run on random register words and on words
built from special values (NaN, Inf, max, subnormals, signed zeros, sums that overflow or tie).
The m16n8 column kernel (``fragsim.arith.kernel16``, what ``fragsim.mma`` runs for those forms)
computes bit for bit what the row kernel (``fragsim.arith.kernel``) computes, on the same operands."""

import zlib

import numpy as np
import pytest

import fragsim
from fragsim import FORMS, lookup
from fragsim.arith import index_maps, kernel, kernel16, plan
from fragsim.facts.arch import ARCHS
from fragsim.arith.fp8 import byte_table

FP8 = [n for n, f in FORMS.items() if f.types["A"] in ("e4m3", "e5m2")]
M884 = [n for n, f in FORMS.items() if f.groups > 1]
BATCH = 3000

# -- reference models (the NumPy implementations the compiled ones replaced) ---------------------


def fp8_reference(pl, a, b, c):
    """fp8: bytes -> f16x2 registers by table in NumPy, the float kernel over the virtual f16 form,
    then C + x by one NumPy IEEE addition (f32: float32 add; f16: exact float64 sum -> float16)."""
    f = pl.form

    def halves(regs, fmt):
        t = byte_table(fmt)
        r = regs.reshape(regs.shape[0], 32, regs.shape[1] // 32)
        pair = lambda w: t[w & 0xFF] | (t[(w >> 8) & 0xFF] << np.uint32(16))  # noqa: E731
        return np.concatenate([pair(r & np.uint32(0xFFFF)), pair(r >> np.uint32(16))], axis=2)

    c_in = np.zeros_like(c) if pl.c_last else c
    d = kernel.run(pl.inner, index_maps(pl.inner.form), halves(a, f.types["A"]), halves(b, f.types["B"]), c_in,
                   parallel=False).reshape(c.shape)
    if not pl.c_last:
        return d
    with np.errstate(all="ignore"):
        if f.types["D"] == "f32":
            s = c.view(np.float32) + d.view(np.float32)
            out = s.view(np.uint32).copy()
            out[np.isnan(s)] = 0x7FFFFFFF
            return out
        out = np.zeros_like(d)
        for sh in (0, 16):
            xs = ((d >> np.uint32(sh)) & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16)
            cs = ((c >> np.uint32(sh)) & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16)
            s = (xs.astype(np.float64) + cs.astype(np.float64)).astype(np.float16)
            w = s.view(np.uint16).astype(np.uint32)
            w[np.isnan(s)] = 0x7FFF
            out |= w << np.uint32(sh)
        return out


def m884_reference(pl, a, b, c):
    """m8n8k4 .f16: the binary32 tree in NumPy float32 (a product of two f16 is exact, so
    fma(a, b, x) is one float32 addition), NaN canonical, f16 D by float32 -> float16."""
    from fragsim.sim.registers import pack, unpack
    f = pl.form
    M, N, K = f.shape
    g, n = f.groups, a.shape[0]

    def f32(bits, fmt):
        return bits.astype(np.uint16).view(np.float16).astype(np.float32) if fmt == "f16" else \
            bits.astype(np.uint32).view(np.float32)

    def ev(t, A, B, C):
        if t == "c":
            return C
        if t == "+0":
            return np.float32(0.0)
        if t[0] == "add":
            return ev(t[1], A, B, C) + ev(t[2], A, B, C)
        p = A[..., t[1], :, None] * B[..., t[1], None, :]
        return p if t[0] == "mul" else p + ev(t[2], A, B, C)

    A = f32(unpack(f, "A", a.reshape(n, 32, f.nregs("A"))), "f16").reshape(n, g, M, K).transpose(0, 1, 3, 2)
    B = f32(unpack(f, "B", b.reshape(n, 32, f.nregs("B"))), "f16").reshape(n, g, K, N)
    C = f32(unpack(f, "C", c.reshape(n, 32, f.nregs("C"))), f.types["C"]).reshape(n, g, M, N)
    with np.errstate(all="ignore"):
        D = ev(pl.tree, A, B, C)
        if f.types["D"] == "f16":
            bits = D.astype(np.float16).view(np.uint16).copy()
            bits[np.isnan(D)] = 0x7FFF
        else:
            bits = D.view(np.uint32).copy()
            bits[np.isnan(D)] = 0x7FFFFFFF
    return pack(f, "D", bits.reshape(n, g * M, N))


# -- operands ----------------------------------------------------------------------------------

BF16_SPECIAL = [0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x3F80, 0xBF80, 0x3F81, 0x7F7F, 0xFF7F, 0x7F80,
                0xFF80, 0x7FC0, 0x7F81, 0xFFC0, 0x4B80, 0x3380, 0x0100, 0x8080, 0x5F00, 0x2000]
F16_SPECIAL = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3C01, 0x7BFF, 0xFBFF, 0x7C00,
               0xFC00, 0x7E00, 0x7C01, 0xFE00, 0x5BFF, 0x6800, 0x1400, 0x0200]
F32_SPECIAL = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x3F800000, 0xBF800000,
               0x3F800001, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0x4B800001,
               0xCB800001, 0x33800000, 0x477FE000, 0x477FF000, 0x38800000, 0xB8800000]
FP8_SPECIAL = [0x00, 0x80, 0x01, 0x81, 0x07, 0x08, 0x7E, 0xFE, 0x7F, 0xFF, 0x7B, 0x7C, 0x7D, 0xFC, 0x38, 0xB8,
               0x3C, 0x40]


def _words(rng, n, width, special, kind):
    """n words: uniform, or ``width``-bit fields drawn from ``special`` (with small perturbations)."""
    if kind == "uniform":
        return rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    per = 32 // width
    f = np.array(special, np.uint64)[rng.integers(0, len(special), (n, per))]
    f ^= (rng.random((n, per)) < 0.2) * rng.integers(0, 4, (n, per), dtype=np.uint64)
    return (f << (np.arange(per, dtype=np.uint64) * width)).sum(axis=1).astype(np.uint32)


def _operands(form, kind, seed):
    f = lookup(form)
    rng = np.random.default_rng(seed)
    ab = {"e4m3": (FP8_SPECIAL, 8), "e5m2": (FP8_SPECIAL, 8), "bf16": (BF16_SPECIAL, 16),
          "tf32": (F32_SPECIAL, 32)}.get(f.types["A"], (F16_SPECIAL, 16))
    cs = (F32_SPECIAL, 32) if f.types["C"] == "f32" else (F16_SPECIAL, 16)
    out = []
    for op, (sp, w) in zip("ABC", (ab, ab, cs)):
        out.append(_words(rng, BATCH * 32 * f.nregs(op), w, sp, kind).reshape(BATCH, 32 * f.nregs(op)))
    return out


# -- tests -------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["uniform", "special"])
@pytest.mark.parametrize("form", FP8)
def test_fp8_driver_is_the_numpy_decode_kernel_and_ieee_add(form, kind):
    pl = plan(form, "sm_90")
    a, b, c = _operands(form, kind, zlib.crc32(f"{form} {kind}".encode()))
    want = fp8_reference(pl, a, b, c).reshape(BATCH, 32, -1)
    got = fragsim.arith.run(pl, a, b, c)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("kind", ["uniform", "special"])
@pytest.mark.parametrize("form", M884)
def test_m8n8k4_compiled_tree_is_the_numpy_float32_tree(form, kind):
    pl = plan(form, "sm_90")
    a, b, c = _operands(form, kind, zlib.crc32(f"{form} {kind}".encode()))
    want = m884_reference(pl, a, b, c)
    got = fragsim.arith.run(pl, a, b, c)
    assert np.array_equal(got, want)


# the m16n8 forms of the float model on every architecture row, and rows with the open choices changed
# (kernel16 reads them as parameters: E_max, the rounding, subnormal results, chained blocks)
def _column_plan(form, arch) -> bool:
    try:
        return kernel16.supports(plan(form, arch))
    except ValueError:          # no model of the form on the row (m8n8k4 .f16 on sm_80), or a newer form
        return False


COLUMN_PLANS = [(n, a) for n in FORMS for a in ("sm_90", "sm_80") if _column_plan(n, a)]
CHOICES = {"c_subnormal_exp": "exact", "tf32_nan_low_bits": True, "round_f16": "rz", "round_f32": "rne",
           "e_zero_f32": -60, "e_zero_f16": -5, "frac_bits": 20}


def test_the_column_kernel_takes_every_m16n8_form_of_the_float_model():
    assert {n for n, _ in COLUMN_PLANS} == {n for n, f in FORMS.items() if f.shape[:2] == (16, 8)
                                            and f.types["A"] in ("f16", "bf16", "tf32")}


@pytest.mark.parametrize("kind", ["uniform", "special"])
@pytest.mark.parametrize("form,arch", COLUMN_PLANS)
def test_column_kernel_is_the_row_kernel(form, arch, kind):
    pl = plan(form, arch)
    a, b, c = _operands(form, kind, zlib.crc32(f"{form} {arch} {kind}".encode()))
    want = kernel.run(pl, index_maps(pl.form), a, b, c, parallel=False)
    assert np.array_equal(kernel16.run(pl, a, b, c, parallel=False), want)
    assert np.array_equal(fragsim.arith.run(pl, a, b, c), want)          # fragsim.mma's path, threads too


@pytest.mark.parametrize("choice", list(CHOICES))
def test_column_kernel_is_the_row_kernel_with_an_open_choice_changed(choice):
    for form in ("m16n8k16.row.col.f16.f16.f16.f16", "m16n8k16.row.col.f32.bf16.bf16.f32",
                 "m16n8k8.row.col.f32.tf32.tf32.f32"):
        pl = plan(form, ARCHS["sm_80"].with_(**{choice: CHOICES[choice]}))
        assert kernel16.supports(pl)
        a, b, c = _operands(form, "special", zlib.crc32(f"{form} {choice}".encode()))
        want = kernel.run(pl, index_maps(pl.form), a, b, c, parallel=False)
        assert np.array_equal(kernel16.run(pl, a, b, c, parallel=False), want)


def test_plans_the_column_kernel_cannot_take_run_the_row_kernel():
    """IEEE zero signs (the int sums keep none), odd or too many blocks: fragsim.mma runs kernel.py."""
    form = "m16n8k16.row.col.f32.bf16.bf16.f32"
    for row in (ARCHS["sm_90"].with_(zero_sign="ieee"), ARCHS["sm_90"].with_(block_16bit=1),
                ARCHS["sm_90"].with_(block_16bit=2)):
        pl = plan(form, row)
        assert not kernel16.supports(pl)
        a, b, c = _operands(form, "special", 7)
        assert np.array_equal(fragsim.arith.run(pl, a, b, c),
                              kernel.run(pl, index_maps(pl.form), a, b, c, parallel=False))


@pytest.mark.parametrize("form", ["m16n8k16.row.col.f16.f16.f16.f16", "m16n8k16.row.col.f32.bf16.bf16.f32",
                                  "m16n8k8.row.col.f32.tf32.tf32.f32"])
def test_column_kernel_reads_and_writes_register_major_words(form):
    """fragsim run's register file holds a warp's words register by register (reg * 32 + lane): the same
    registers in that order give the same D in that order."""
    pl = plan(form, "sm_90")
    a, b, c = _operands(form, "special", 11)
    f = pl.form

    def major(x, op):
        return np.ascontiguousarray(x.reshape(BATCH, 32, f.nregs(op)).transpose(0, 2, 1)).reshape(BATCH, -1)

    want = kernel16.run(pl, a, b, c, parallel=False)
    got = kernel16.run(pl, major(a, "A"), major(b, "B"), major(c, "C"), parallel=False, major="register")
    assert np.array_equal(got, want.transpose(0, 2, 1))


@pytest.mark.parametrize("form,big,c_word", [
    ("m16n8k16.row.col.f32.f16.f16.f32", 0x7BFF, 0x4EFFFFFF),    # 65504**2 ~ 2**32, c ~ 2**31
    ("m16n8k16.row.col.f32.bf16.bf16.f32", 0x4F7F, 0x5EFFFFFF)])  # (2**31 * 1.99)**2 ~ 2**64, c ~ 2**63
def test_column_kernel_block_sums_beyond_int32(form, big, c_word):
    """sm_90's 16-term blocks with every product near its largest and c of the same sign and exponent: the
    truncated terms (each below 2**27) and c's (below 2**26) sum past 2**31 -- the column kernel's int32
    sum cannot hold it, and the row kernel's answer still comes out (either sign)."""
    pl = plan(form, "sm_90")
    f = pl.form
    rng = np.random.default_rng(5)
    n = 64
    a = np.full((n, 32 * f.nregs("A")), big * 0x10001, np.uint32)
    b = np.full((n, 32 * f.nregs("B")), big * 0x10001, np.uint32)
    a ^= (rng.random(a.shape) < 0.3) * np.uint32(0x00010001)     # a few ulps off, signs kept
    c = np.full((n, 32 * f.nregs("C")), c_word, np.uint32)
    a[n // 2:] ^= np.uint32(0x80008000)                            # the other sign, products and c both
    c[n // 2:] ^= np.uint32(0x80000000)
    want = kernel.run(pl, index_maps(f), a, b, c, parallel=False)
    assert np.array_equal(kernel16.run(pl, a, b, c, parallel=False), want)


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_column_kernel_negative_sums_below_binary16_give_plus_zero(arch):
    """A binary16 accumulator: 16 products of -2**-34 sum to -2**-30, far below half the least subnormal;
    it rounds to zero, and the model's zero is +0 (IEEE rounding would keep the sign: -0)."""
    form = "m16n8k16.row.col.f16.f16.f16.f16"
    pl = plan(form, arch)
    f = pl.form
    n = 8
    a = np.full((n, 32 * f.nregs("A")), 0x0001 * 0x10001, np.uint32)        # 2**-24
    b = np.full((n, 32 * f.nregs("B")), 0x9400 * 0x10001, np.uint32)        # -2**-10
    c = np.zeros((n, 32 * f.nregs("C")), np.uint32)
    got = kernel16.run(pl, a, b, c, parallel=False)
    assert np.array_equal(got, kernel.run(pl, index_maps(f), a, b, c, parallel=False))
    assert not got.any()


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_column_kernel_inf_times_an_all_zero_operand_is_nan(arch):
    """bf16: A holds Inf and NaN, every element of B is +0 or -0 -- each Inf or NaN product is NaN, so
    the rows that hold one give NaN even though every product exponent lies low (an all-zero operand
    does not make a warp's products tame)."""
    form = "m16n8k16.row.col.f32.bf16.bf16.f32"
    pl = plan(form, arch)
    f = pl.form
    rng = np.random.default_rng(9)
    n = 16
    halves = rng.choice(np.array([0x3F80, 0xC000, 0x7F80, 0xFF80, 0x7FC1, 0x0001], np.uint32), (n, 32 * f.nregs("A"), 2),
                        p=[0.4, 0.4, 0.05, 0.05, 0.05, 0.05])
    a = halves[..., 0] | (halves[..., 1] << np.uint32(16))
    b = np.where(rng.random((n, 32 * f.nregs("B"))) < 0.5, 0, 0x80008000).astype(np.uint32)
    c = rng.integers(0x3F000000, 0x40000000, (n, 32 * f.nregs("C")), dtype=np.uint32)
    got = kernel16.run(pl, a, b, c, parallel=False)
    assert np.array_equal(got, kernel.run(pl, index_maps(f), a, b, c, parallel=False))
    assert (got == 0x7FFFFFFF).any()
