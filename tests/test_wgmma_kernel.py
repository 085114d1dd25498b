"""fragsim.wgmma's numba kernels (fragsim/arith/kernel_wgmma.py) against the NumPy model they replaced,
``fragsim.sim.wgmma.wgmma_reference`` -- the oracle, unchanged -- bit for bit: every form family (f16 with
f32 and f16 accumulators, bf16, tf32, the four fp8 pairs with either accumulator, the four int8 pairs with
and without .satfinite), A from registers and from shared memory, every swizzle and majorness, imm-scale
and scale-d, random bit patterns (NaN, Inf, subnormals and all), special values, wide exponent ranges,
the alternative parameter rows of the hardware fit, and fragsim run's in-place path on a register file.
No timing here: benchmarks/bench_wgmma.py measures the speed."""

import zlib

import numpy as np
import pytest

import fragsim
from fragsim.facts.arch import WGMMA_PARAMS
from fragsim.facts.formats import FORMATS, get_format
from fragsim.gpu_check.wgmma.family import ALTERNATIVES
from fragsim.instructions.wgmma import FLOAT_N, INT_N, lookup_wgmma
from fragsim.layout.descriptor import MatrixDescriptor, canonical_descriptor, operand_addresses
from fragsim.sim.wgmma import _config, file_plan, pack_wg, wgmma, wgmma_reference

SWIZZLES = ("none", "32B", "64B", "128B")
SMEM = 40960
A_AT, B_AT = 0, 8192
FLOAT_FORMS = ["m64n{n}k16.f32.f16.f16", "m64n{n}k16.f16.f16.f16", "m64n{n}k16.f32.bf16.bf16", "m64n{n}k8.f32.tf32.tf32"]
FP8_FORMS = [f"m64n{{n}}k32.{d}.{a}.{b}" for d in ("f32", "f16") for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")]
INT_FORMS = [f"m64n{{n}}k32.{s}s32.{a}.{b}" for s in ("", "satfinite.") for a in ("s8", "u8") for b in ("s8", "u8")]
ALL_FORMS = FLOAT_FORMS + FP8_FORMS + INT_FORMS


def _special_words(rng, shape, fmt):
    """Element words drawn from the format's special values: zeros, the smallest and largest subnormal and
    normal, Inf, NaN, 1 and the largest finite value, either sign -- and random words among them."""
    bits = get_format(fmt).storage_bits
    if fmt in ("s8", "u8"):
        pool = np.array([0, 1, 0x7F, 0x80, 0xFF, 0xFE, 0x81], np.uint64)
    elif fmt == "s32":
        pool = np.array([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x7FFFFF00, 0x80000100], np.uint64)
    else:
        f = FORMATS[fmt]
        e, m = f.exp_bits, f.man_bits
        mag = [0, 1, (1 << m) - 1, 1 << m, (((1 << e) - 2) << m) | ((1 << m) - 1), ((1 << e) - 1) << m,
               (((1 << e) - 1) << m) | 1, (((1 << (e - 1)) - 1) << m)]
        if fmt == "tf32":
            mag = [x << 13 for x in mag] + [(0xFF << 23) | 1]         # a NaN whose payload only the low bits hold
        sign = 1 << (bits - 1)
        pool = np.array(mag + [x | sign for x in mag], np.uint64)
    out = rng.integers(0, 1 << bits, shape, dtype=np.uint64)
    pick = rng.random(shape) < 0.5
    out[pick] = pool[rng.integers(0, pool.size, int(pick.sum()))]
    return out.astype({8: np.uint8, 16: np.uint16, 32: np.uint32}[bits])


def _words(rng, shape, fmt, values):
    """Element words: 'random' bit patterns, 'special' values, 'normal' values, or 'wide' exponents (every
    binade the format has, products under- and overflowing)."""
    bits = get_format(fmt).storage_bits
    dtype = {8: np.uint8, 16: np.uint16, 32: np.uint32}[bits]
    if values == "random" or (fmt in ("s8", "u8", "s32") and values != "special"):
        return rng.integers(0, 1 << bits, shape, dtype=np.uint64).astype(dtype)
    if values == "special":
        return _special_words(rng, shape, fmt)
    x = rng.standard_normal(shape)
    if values == "wide":
        lo, hi = {"f16": (-24, 15), "e4m3": (-9, 8), "e5m2": (-16, 15)}.get(fmt, (-140, 127))
        x = x * 2.0 ** rng.integers(lo, hi + 1, shape)
        x[rng.random(shape) < 0.1] = 0.0
    return fragsim.to_bits(x, fmt).astype(dtype)


def _case(form, rng, batch, values, a_src="smem", b_sw="128B", b_major="K", a_sw="64B", a_major="K"):
    """Operands of ``batch`` warpgroups: shared memory holding A and B through canonical descriptors, A's
    registers, C's registers and the call's keyword arguments."""
    f = lookup_wgmma(form)
    M, N, K = f.shape
    smem = np.zeros((batch, SMEM), np.uint8)
    for op, at, sw, major, rows in (("B", B_AT, b_sw, b_major, N), ("A", A_AT, a_sw, a_major, M)):
        if op == "A" and a_src != "smem":
            continue
        fmt = f.types[op]
        bits = f.fmt(op).storage_bits
        d = canonical_descriptor(sw, major=major, elem_bits=bits, rows=rows, start=at)
        addr = operand_addresses(d, rows=rows, k=K, elem_bits=bits, major=major)
        w = _words(rng, (batch, rows, K), fmt, values).astype(np.uint64)
        for i in range(bits // 8):
            smem[:, addr + i] = ((w >> np.uint64(8 * i)) & np.uint64(0xFF)).astype(np.uint8)
        if op == "B":
            bdesc = d.encode()
        else:
            a = d.encode()
    if a_src != "smem":
        a = pack_wg(f, "A", _words(rng, (batch, M, K), f.types["A"], values))
    c = pack_wg(f, "C", _words(rng, (batch, M, N), f.types["C"], "random" if values == "random" else
                               ("special" if values == "special" else "normal")))
    kw = {"trans_a": a_src == "smem" and a_major == "MN", "trans_b": b_major == "MN"}
    return a, bdesc, c, smem, kw


def _same(form, a, b, c, smem, **kw):
    new = wgmma(form, a, b, c, smem=smem, **kw)
    old = wgmma_reference(form, a, b, c, smem=smem, **kw)
    assert new.dtype == old.dtype == np.uint32 and new.shape == old.shape
    bad = np.argwhere(new != old)
    assert bad.size == 0, (f"{form}: {len(bad)} words differ, first at {tuple(bad[0])}: kernel "
                           f"{int(new[tuple(bad[0])]):#010x}, model {int(old[tuple(bad[0])]):#010x}")


def test_every_form_of_the_sm90_row_runs_in_the_kernels():
    """Every wgmma form of the table has a kernel configuration on the sm_90 row (none falls back)."""
    from fragsim.instructions.wgmma import WGMMA_FORMS
    assert all(_config(f, WGMMA_PARAMS["sm_90"]) is not None for f in WGMMA_FORMS.values())


@pytest.mark.parametrize("values", ["random", "special", "normal", "wide"])
@pytest.mark.parametrize("form", ALL_FORMS)
def test_kernel_is_the_model(form, values):
    rng = np.random.default_rng(zlib.crc32(f"{form} {values}".encode()))
    form = form.format(n=24 if "s32" in form else 40)
    a, b, c, smem, kw = _case(form, rng, 3, values, a_src="smem" if "k32" in form else "regs")
    _same(form, a, b, c, smem, **kw)


@pytest.mark.parametrize("a_src", ["regs", "smem"])
@pytest.mark.parametrize("b_sw", SWIZZLES)
@pytest.mark.parametrize("major", ["K", "MN"])
@pytest.mark.parametrize("form", ["m64n32k16.f32.bf16.bf16", "m64n16k16.f16.f16.f16"])
def test_every_swizzle_majorness_and_source_of_a(form, a_src, b_sw, major):
    rng = np.random.default_rng(len(form) + SWIZZLES.index(b_sw))
    a, b, c, smem, kw = _case(form, rng, 2, "random", a_src=a_src, b_sw=b_sw, b_major=major,
                              a_sw=SWIZZLES[::-1][SWIZZLES.index(b_sw)], a_major=major)
    _same(form, a, b, c, smem, **kw)


@pytest.mark.parametrize("b_sw", SWIZZLES)
@pytest.mark.parametrize("form", ["m64n8k8.f32.tf32.tf32", "m64n16k32.f16.e4m3.e5m2", "m64n16k32.satfinite.s32.u8.s8"])
def test_every_swizzle_of_the_k_major_forms(form, b_sw):
    rng = np.random.default_rng(7 + SWIZZLES.index(b_sw))
    a, b, c, smem, kw = _case(form, rng, 2, "random", b_sw=b_sw, a_sw=b_sw)
    _same(form, a, b, c, smem, **kw)


@pytest.mark.parametrize("n", FLOAT_N)
def test_every_n_of_the_float_forms(n):
    form = f"m64n{n}k16.f32.f16.f16" if n % 16 else f"m64n{n}k16.f16.f16.f16"
    a, b, c, smem, kw = _case(form, np.random.default_rng(n), 1, "random", a_src="regs" if n % 24 else "smem")
    _same(form, a, b, c, smem, **kw)


@pytest.mark.parametrize("n", INT_N)
def test_every_n_of_the_integer_forms(n):
    form = f"m64n{n}k32.satfinite.s32.s8.u8" if n % 32 else f"m64n{n}k32.s32.u8.s8"
    a, b, c, smem, kw = _case(form, np.random.default_rng(n), 1, "special", a_src="regs" if n % 48 else "smem")
    _same(form, a, b, c, smem, **kw)


@pytest.mark.parametrize("form", ["m64n24k16.f32.f16.f16", "m64n16k8.f32.tf32.tf32", "m64n16k32.f16.e5m2.e4m3",
                                  "m64n8k16.f32.bf16.bf16"])
def test_scale_a_b_and_a_per_warpgroup_scale_d(form):
    rng = np.random.default_rng(11)
    a, b, c, smem, kw = _case(form, rng, 4, "special")
    for sa, sb in ((-1, 1), (1, -1), (-1, -1)):
        _same(form, a, b, c, smem, scale_a=sa, scale_b=sb, scale_d=np.array([True, False, True, False]), **kw)


def test_integer_scale_d_false():
    a, b, c, smem, kw = _case("m64n16k32.satfinite.s32.s8.s8", np.random.default_rng(12), 2, "special")
    _same("m64n16k32.satfinite.s32.s8.s8", a, b, c, smem, scale_d=np.array([False, True]), **kw)


def test_cancellation_and_c_dominated_sums():
    """Products that cancel to zero, a c that swamps the products, and the reverse (E_max from either)."""
    form = "m64n8k16.f32.bf16.bf16"
    f = lookup_wgmma(form)
    rng = np.random.default_rng(13)
    A = fragsim.to_bits(rng.standard_normal((2, 64, 16)), "bf16")
    A[..., 8:] = A[..., :8]
    B = np.zeros((2, 16, 8), np.uint16)
    B[:, :8] = fragsim.to_bits(rng.standard_normal((2, 8, 8)), "bf16")
    B[:, 8:] = B[:, :8] ^ np.uint16(0x8000)                      # every row's products sum to exactly 0
    smem = np.zeros((2, SMEM), np.uint8)
    d = MatrixDescriptor(B_AT, 128, 256, 0, "none")
    addr = operand_addresses(d, rows=8, k=16, elem_bits=16)
    Bt = np.swapaxes(B, -1, -2).astype(np.uint64)
    smem[:, addr], smem[:, addr + 1] = (Bt & 0xFF).astype(np.uint8), (Bt >> np.uint64(8)).astype(np.uint8)
    for scale in (2.0 ** -60, 1.0, 2.0 ** 60):
        C = fragsim.to_bits(rng.standard_normal((2, 64, 8)) * scale, "f32")
        _same(form, pack_wg(f, "A", A), d.encode(), pack_wg(f, "C", C), smem)


@pytest.mark.parametrize("family, label", [(fam, lab) for fam, labs in ALTERNATIVES.items() for lab in labs])
def test_the_alternative_rows_of_the_fit(family, label):
    """The rows gpu_check/wgmma/family.py tells apart on the H100: the kernels where they model the row,
    the NumPy model where they do not (F = 26 and 27 overflow the int32 block sums, RNE onto fp8's e8m13
    grid is not binary32's RNE cut) -- the same bits either way."""
    row = ALTERNATIVES[family][label]
    form = {"f16/bf16": "m64n16k16.f16.f16.f16" if "f16" in label else "m64n16k16.f32.bf16.bf16",
            "tf32": "m64n16k8.f32.tf32.tf32", "fp8": "m64n16k32.f32.e4m3.e5m2" if "f16" not in label
            else "m64n16k32.f16.e5m2.e5m2", "int8": "m64n16k32.satfinite.s32.s8.s8"}[family]
    rng = np.random.default_rng(len(label))
    for values in ("random", "wide"):
        a, b, c, smem, kw = _case(form, rng, 2, values)
        assert np.array_equal(wgmma(form, a, b, c, smem=smem, arch=row, **kw),
                              wgmma_reference(form, a, b, c, smem=smem, arch=row, **kw))


def test_batches_broadcast_descriptors_differ_and_smem_of_any_length():
    """Leading dimensions broadcast (one smem for a batch, one C for another), a descriptor per warpgroup,
    shared memory whose length is no whole number of words, and a non-contiguous one."""
    form = "m64n16k16.f32.f16.f16"
    f = lookup_wgmma(form)
    rng = np.random.default_rng(14)
    smem = rng.integers(0, 256, (3, 1, SMEM + 3), dtype=np.uint8)
    descs = np.array([canonical_descriptor(sw, elem_bits=16, rows=16, start=B_AT + 1024 * i).encode()
                      for i, sw in enumerate(("none", "128B", "32B", "64B"))], np.uint64)
    c = pack_wg(f, "C", _words(rng, (4, 64, 16), "f32", "random"))
    a = pack_wg(f, "A", _words(rng, (1, 64, 16), "f16", "random"))
    _same(form, a, descs, c, smem)
    _same(form, np.uint64(canonical_descriptor("128B", elem_bits=16, rows=64).encode()), descs[:, None], c[:1],
          smem[:, 0, ::2])


@pytest.mark.parametrize("form", ["m64n24k16.f32.f16.f16", "m64n16k16.f16.f16.f16", "m64n16k32.f16.e4m3.e4m3",
                                  "m64n24k32.satfinite.s32.s8.u8"])
@pytest.mark.parametrize("a_src", ["regs", "smem"])
def test_fragsim_runs_wgmma_on_its_register_file_in_place(form, a_src):
    """``file_plan``: C read from, D written to scattered rows of a register file (registers, threads), A's
    registers from another file, warpgroups from thread t0 on, shared memory by CTA row: the bits of
    fragsim.wgmma on the gathered operands, and no other word of the files touched."""
    f = lookup_wgmma(form)
    rng = np.random.default_rng(15)
    g, T, t0 = 3, 640, 128
    a, b, c, smem, kw = _case(form, rng, g, "special", a_src=a_src, a_sw="128B")
    nd = f.nregs("D")
    file = rng.integers(0, 2**32, (nd + 7, T), dtype=np.uint64).astype(np.uint32)
    rows = rng.permutation(nd + 7)[:nd]
    file[rows[:, None], t0 + np.arange(g * 128)] = c.reshape(g * 128, nd).T
    afile = rng.integers(0, 2**32, (9, T), dtype=np.uint64).astype(np.uint32)
    arows = np.array([5, 0, 8, 2])
    if a_src == "regs":
        afile[arows[:, None], t0 + np.arange(g * 128)] = a.reshape(g * 128, 4).T
    before, abefore = file.copy(), afile.copy()
    cta = np.array([2, 0, 1])                       # warpgroup i in CTA cta[i]
    want = wgmma(form, a, b, c, smem=smem, scale_d=np.array([True, False, True]), **kw)
    run = file_plan(form, file, rows, (afile.reshape(-1), arows) if a_src == "regs" else None, **kw)
    assert run is not None
    adesc = None if a_src == "regs" else np.full(g, a, np.uint64)
    smem_ctas = np.empty_like(smem)
    smem_ctas[cta] = smem
    assert run(t0, adesc, np.full(g, b, np.uint64), smem_ctas, cta, np.array([True, False, True]))
    got = file[rows[:, None], t0 + np.arange(g * 128)].T.reshape(g, 128, nd)
    assert np.array_equal(got, want)
    other = np.ones(file.shape, bool)
    other[rows[:, None], t0 + np.arange(g * 128)] = False
    assert np.array_equal(file[other], before[other]) and np.array_equal(afile, abefore)


@pytest.mark.parametrize("kernel", ["triton", "tma"])
def test_fragsim_run_in_place_and_general_paths_agree(kernel):
    """Triton's fp16 matmul (accumulators in .b32 registers) and the TMA + wgmma bf16 GEMM (.f32 registers)
    run twice: as they run (wgmma on the register file in place) and with an observer of wgmma events (the
    general path: registers gathered, fragsim.sim.wgmma.warpgroups, D written back); fragsim.gemm's bits."""
    import os
    ptx = os.path.join(os.path.dirname(__file__), "data", "ptx")
    rng = np.random.default_rng(16)
    n = 128
    a = fragsim.to_bits(rng.standard_normal((n, n)), "f16" if kernel == "triton" else "bf16")
    b = fragsim.to_bits(rng.standard_normal((n, n)), "f16" if kernel == "triton" else "bf16")

    class Seen:
        count = 0

        def on_wgmma(self, s, e):
            Seen.count += 1

    out = []
    for observers in ((), (Seen(),)):
        if kernel == "triton":
            c = np.zeros((n, n), np.uint16)
            fragsim.run_kernel(os.path.join(ptx, "triton_matmul.sm90.ptx"), grid=(n // 64, n // 64), block=128,
                               dynamic_smem=49152, observers=observers,
                               args=[a, b, c, n, n, n, n, n, n, np.uint64(0), np.uint64(0)])
            want = fragsim.to_bits(fragsim.gemm("m16n8k16.row.col.f32.f16.f16.f32", a, b).view(np.float32), "f16")
        else:                                       # b is B transposed (N x K)
            maps = [fragsim.TensorMap("bf16", (n, n), (2 * n,), (64, 64), swizzle="128B", base=(1 << 40) + (i << 32))
                    for i in range(2)]
            d = np.zeros((n, n), np.float32)
            fragsim.run_kernel(os.path.join(ptx, "tma_wgmma.sm90a.ptx"), grid=(n // 64, n // 64), block=128,
                               observers=observers, args=[(maps[0], a), (maps[1], b), d, n, n, n])
            c = d.view(np.uint32)
            want = fragsim.gemm("m16n8k16.row.col.f32.bf16.bf16.f32", a, b.T.copy())
        out.append(c)
        assert np.array_equal(c, want)
    assert Seen.count > 0 and np.array_equal(out[0], out[1])


@pytest.mark.parametrize("form", ["m64n64k16.f32.bf16.bf16", "m64n64k32.s32.s8.u8"])
def test_a_batch_split_over_threads(form):
    """A batch big enough for fragsim.arith.kernel_wgmma.launch to split it over numba's threads (where
    there are several): the bits of the model, warpgroup by warpgroup."""
    import numba
    from fragsim.arith import kernel_wgmma as KW
    f = lookup_wgmma(form)
    batch = 2 * KW.PER_THREAD // (4 * f.shape[1] // 8) * max(2, numba.get_num_threads())
    a, b, c, smem, kw = _case(form, np.random.default_rng(17), batch, "random")
    _same(form, a, b, c, smem, **kw)
