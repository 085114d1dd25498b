"""wgmma: the form table (PTX ISA 9.7.15 wgmma.mma_async), its fragment maps, and fragsim.wgmma's
contract.  The hardware cases are replayed in test_wgmma_hw.py."""

import numpy as np
import pytest

import fragsim
from fragsim.layout.descriptor import MatrixDescriptor, operand_addresses
from fragsim.instructions.wgmma import FLOAT_N, INT_N, WGMMA_FORMS, lookup_wgmma
from fragsim.sim.wgmma import pack_wg, unpack_wg, wgmma

SAMPLE = ["m64n8k16.f32.f16.f16", "m64n24k16.f16.f16.f16", "m64n256k16.f32.bf16.bf16", "m64n40k8.f32.tf32.tf32",
          "m64n136k32.f16.e4m3.e5m2", "m64n8k32.f32.e5m2.e5m2", "m64n24k32.satfinite.s32.s8.u8", "m64n256k32.s32.u8.u8"]


def test_table_has_every_dense_form_of_ptx():
    """32 N for each of 4 16-bit/tf32 spellings and 8 fp8 ones; 18 N for each of 8 integer ones."""
    assert len(WGMMA_FORMS) == 32 * (4 + 8) + 18 * 8
    assert len(FLOAT_N) == 32 and INT_N[:4] == (8, 16, 24, 32) and INT_N[-1] == 256 and 40 not in INT_N


@pytest.mark.parametrize("name", SAMPLE)
@pytest.mark.parametrize("op", ["A", "D"])
def test_fragment_maps_cover_the_matrix_once(name, op):
    f = lookup_wgmma(name)
    rows, cols = f.coords(op)
    r, c = f.matrix_shape(op)
    flat = np.sort((rows * c + cols).ravel())
    assert np.array_equal(flat, np.arange(r * c)), "every element held by exactly one (thread, register, half)"


@pytest.mark.parametrize("name", ["m64n24k16.f32.bf16.bf16", "m64n256k32.s32.s8.s8", "m64n16k16.f16.f16.f16"])
def test_accumulator_is_the_isa_figure(name):
    """PTX ISA "WGMMA .m64nNk16 register fragment layout for accumulator matrix D": d_i of thread t at
    row 16*warp + groupID + 8*((i >> 1) & 1), col 8*(i >> 2) + 2*tig + (i & 1)."""
    f = lookup_wgmma(name)
    rows, cols = f.coords("D")
    epr = f.elems_per_reg("D")
    for t in (0, 5, 37, 70, 127):
        for reg in range(f.nregs("D")):
            for h in range(epr):
                i = reg * epr + h
                lane, warp = t % 32, t // 32
                assert rows[t, reg, h] == 16 * warp + lane // 4 + 8 * ((i >> 1) & 1)
                assert cols[t, reg, h] == 8 * (i >> 2) + 2 * (lane % 4) + (i & 1)


@pytest.mark.parametrize("name, formula", [
    ("m64n8k16.f32.f16.f16", lambda g, t, i: (g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2))),
    ("m64n8k8.f32.tf32.tf32", lambda g, t, i: (g + 8 * (i & 1), t + 4 * (i >> 1))),
    ("m64n8k32.f32.e4m3.e4m3", lambda g, t, i: (g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >> 3))),
])
def test_a_in_registers_is_the_isa_figure(name, formula):
    """A in registers: warp w's rows 16w.. hold the m16n8 A fragment of the same K (CuTe ALayout_64x16/8/32)."""
    f = lookup_wgmma(name)
    rows, cols = f.coords("A")
    epr = f.elems_per_reg("A")
    for t in range(128):
        for reg in range(4):
            for h in range(epr):
                r, c = formula(t % 32 // 4, t % 4, reg * epr + h)
                assert (rows[t, reg, h], cols[t, reg, h]) == (r + 16 * (t // 32), c)


@pytest.mark.parametrize("spelling, rule", [
    ("m64n40k32.s32.s8.s8", "N must be 8, 16, 24, then 32..256"),
    ("m64n64k16.f16.bf16.bf16", ".dtype .f16 with .bf16 inputs"),
    ("m64n64k16.f32.f16.bf16", "must be the same"),
    ("m64n64k32.f32.e4m3.s8", "do not mix"),
    ("m64n64k16.satfinite.f32.f16.f16", ".satfinite applies to the integer forms"),
    ("m64n64k8.f32.f16.f16", "K = 16"),
    ("m64n264k16.f32.f16.f16", "N must be 8..256"),
    ("m64n64k256.s32.b1.b1.and.popc", "not modelled"),
])
def test_illegal_and_unmodelled_spellings_are_one_line(spelling, rule):
    with pytest.raises(ValueError) as e:
        lookup_wgmma(spelling)
    assert rule in str(e.value) and "\n" not in str(e.value)


def test_long_spelling_accepted():
    assert lookup_wgmma("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16").name == "m64n64k16.f32.bf16.bf16"


# -- the instruction ---------------------------------------------------------------------------------------

def _place(smem, desc, mat_rows_k, elem_bits, major="K"):
    """Write an operand (rows, k) of element words into smem through the descriptor map."""
    addr = operand_addresses(desc, rows=mat_rows_k.shape[-2], k=mat_rows_k.shape[-1], elem_bits=elem_bits, major=major)
    for i in range(elem_bits // 8):
        smem[..., addr + i] = ((mat_rows_k.astype(np.uint64) >> np.uint64(8 * i)) & np.uint64(0xFF)).astype(np.uint8)


DESC_B = MatrixDescriptor(4096, 128, 256, 0, "none")
DESC_A = MatrixDescriptor(0, 0, 512, 0, "64B")       # 64 rows x 64 B: bytes 0..4095


def _rand(rng, shape, fmt, lo=-8, hi=8):
    return fragsim.to_bits(rng.uniform(0.5, 1, shape) * 2.0 ** rng.integers(lo, hi, shape) * rng.choice([-1, 1], shape), fmt)


@pytest.mark.parametrize("form, mform", [
    ("m64n24k16.f32.bf16.bf16", "m16n8k16.row.col.f32.bf16.bf16.f32"),
    ("m64n16k16.f16.f16.f16", "m16n8k16.row.col.f16.f16.f16.f16"),
    ("m64n16k8.f32.tf32.tf32", "m16n8k8.row.col.f32.tf32.tf32.f32"),
])
def test_16bit_and_tf32_arithmetic_is_the_one_model(form, mform):
    """With the sm_90 rows of both (F = 25, L = 16 / 8, e_zero, rounding), a wgmma is bit for bit its
    m16n8 tiles through fragsim.mma: the same model, A from registers and B through a descriptor."""
    rng = np.random.default_rng(3)
    f = lookup_wgmma(form)
    M, N, K = f.shape
    inn, acc = f.types["A"], f.types["D"]
    A, B, C = _rand(rng, (4, M, K), inn), _rand(rng, (4, K, N), inn, -20, 20), _rand(rng, (4, M, N), acc, -4, 12)
    smem = np.zeros((4, 8192), np.uint8)
    _place(smem, DESC_B, np.swapaxes(B, -1, -2), f.fmt("B").storage_bits)
    D = unpack_wg(f, "D", wgmma(form, pack_wg(f, "A", A), DESC_B.encode(), pack_wg(f, "C", C), smem=smem))
    for w in range(4):
        for j in range(N // 8):
            sl = (slice(None), slice(16 * w, 16 * w + 16), slice(8 * j, 8 * j + 8))
            d = fragsim.mma(mform, fragsim.pack(mform, "A", A[:, 16 * w:16 * w + 16]),
                            fragsim.pack(mform, "B", B[:, :, 8 * j:8 * j + 8]), fragsim.pack(mform, "C", C[sl]))
            assert np.array_equal(fragsim.unpack(mform, "D", d), D[sl])


def test_a_from_descriptor_equals_a_from_registers():
    rng = np.random.default_rng(4)
    form = "m64n8k16.f32.f16.f16"
    f = lookup_wgmma(form)
    A, B = _rand(rng, (2, 64, 16), "f16"), _rand(rng, (2, 16, 8), "f16")
    C = _rand(rng, (2, 64, 8), "f32")
    smem = np.zeros((2, 8192), np.uint8)
    _place(smem, DESC_A, A, 16)
    _place(smem, DESC_B, np.swapaxes(B, -1, -2), 16)
    c = pack_wg(f, "C", C)
    assert np.array_equal(wgmma(form, DESC_A, DESC_B, c, smem=smem), wgmma(form, pack_wg(f, "A", A), DESC_B, c, smem=smem))


def test_scale_d_false_ignores_c_and_scale_a_negates():
    """PTX: D = A*B when scale-d is 0; imm-scale-a = -1 negates A."""
    rng = np.random.default_rng(5)
    form = "m64n8k16.f32.bf16.bf16"
    f = lookup_wgmma(form)
    A, B = _rand(rng, (64, 16), "bf16"), _rand(rng, (16, 8), "bf16")
    smem = np.zeros(8192, np.uint8)
    _place(smem, DESC_B, B.T, 16)
    a = pack_wg(f, "A", A)
    zero = np.zeros((128, 4), np.uint32)
    big = pack_wg(f, "C", fragsim.to_bits(np.full((64, 8), 1e30), "f32"))
    assert np.array_equal(wgmma(form, a, DESC_B, big, smem=smem, scale_d=False), wgmma(form, a, DESC_B, zero, smem=smem))
    neg = pack_wg(f, "A", A ^ np.uint16(0x8000))
    assert np.array_equal(wgmma(form, a, DESC_B, zero, smem=smem, scale_a=-1), wgmma(form, neg, DESC_B, zero, smem=smem))


def test_integer_satfinite_clamps_and_plain_wraps():
    """.satfinite limits the s32 result to MIN_INT32..MAX_INT32; without it the sum wraps modulo 2**32."""
    form = "m64n8k32.s32.s8.s8"
    f = lookup_wgmma(form)
    A = np.full((64, 32), 127, np.uint8)
    B = np.full((32, 8), 127, np.uint8)
    smem = np.zeros(8192, np.uint8)
    _place(smem, DESC_B, B.T, 8)
    C = np.full((64, 8), 0x7FFFFFF0, np.uint32)
    args = (pack_wg(f, "A", A), DESC_B, pack_wg(f, "C", C))
    wrap = unpack_wg(f, "D", wgmma(form, *args, smem=smem))
    sat = unpack_wg(f, "D", wgmma("m64n8k32.satfinite.s32.s8.s8", *args, smem=smem))
    assert (wrap == (0x7FFFFFF0 + 32 * 127 * 127) % 2**32).all() and (sat == 0x7FFFFFFF).all()


@pytest.mark.parametrize("kwargs, message", [
    ({"trans_b": True, "form": "m64n8k8.f32.tf32.tf32"}, "imm-trans-a/imm-trans-b exist only for .f16/.bf16"),
    ({"scale_a": -1, "form": "m64n8k32.s32.s8.s8"}, "imm-scale-a/imm-scale-b exist only for the floating-point"),
    ({"trans_a": True, "a": "regs"}, "trans_a applies to A in shared memory only"),
    ({"scale_b": 2}, "scale_b must be 1 or -1"),
    ({"b": MatrixDescriptor(8000, 128, 256).encode()}, "past the 8192 bytes of smem"),
    ({"b": 1 << 14}, "unused bits 14-15"),
    ({"c": np.zeros((32, 4), np.uint32)}, "(..., 128, 4)"),
    ({"smem": np.zeros(8192, np.int8)}, "smem must be a uint8 array"),
    ({"scale_d": 1}, "scale_d must be True/False"),
    ({"arch": "sm_80"}, "wgmma is an sm_90a instruction"),
])
def test_bad_input_is_one_line_naming_it(kwargs, message):
    form = kwargs.pop("form", "m64n8k16.f32.f16.f16")
    f = lookup_wgmma(form)
    kw = {"form": form, "a": DESC_A.encode(), "b": DESC_B.encode(), "c": np.zeros((128, f.nregs("C")), np.uint32),
          "smem": np.zeros(8192, np.uint8)}
    if kwargs.get("a") == "regs":
        kwargs["a"] = np.zeros((128, 4), np.uint32)
    kw.update(kwargs)
    with pytest.raises((ValueError, TypeError)) as e:
        wgmma(kw.pop("form"), kw.pop("a"), kw.pop("b"), kw.pop("c"), **kw)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_batches_broadcast():
    """One descriptor for a batch of images, a per-case scale_d."""
    form = "m64n8k16.f32.f16.f16"
    f = lookup_wgmma(form)
    rng = np.random.default_rng(6)
    smem = rng.integers(0, 0x3C, (3, 8192), dtype=np.uint8)       # finite f16 words
    c = pack_wg(f, "C", _rand(rng, (64, 8), "f32"))
    d = wgmma(form, DESC_A, DESC_B, c, smem=smem, scale_d=np.array([True, False, True]))
    assert d.shape == (3, 128, 4)
    for i in range(3):
        assert np.array_equal(d[i], wgmma(form, DESC_A, DESC_B, c, smem=smem[i], scale_d=bool(i != 1)))
