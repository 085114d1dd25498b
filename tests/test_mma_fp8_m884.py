"""fp8, tf32 m16n8k4, f16 m8n8k4 and movmatrix (issue 13): the PTX ISA fragment maps, the arithmetic
sm_90 runs (read from ptxas 13.0's SASS, settled by the H100 corpora in tests/data/hw), and the
alternatives those recorded cases break."""

from pathlib import Path

import numpy as np
import pytest

import fragsim
from fragsim import FORMS, lookup
from fragsim.facts.arch import ARCHS
from fragsim.facts.formats import from_float
from fragsim.gpu_check import corpus

DATA = Path(__file__).parent / "data"
# the sm_90 mma.sync corpora (the folders hold shared-memory corpora too)
HW = [c for c in (corpus.load(p) for p in corpus.find(str(DATA / "hw"))) if c.arch == "sm_90" and c.op in FORMS]
FP8 = [n for n, f in FORMS.items() if f.types["A"] in ("e4m3", "e5m2")]
M884 = [n for n, f in FORMS.items() if f.groups > 1]
LANE = np.arange(32)
G, T = LANE >> 2, LANE & 3


# -- fragment maps ---------------------------------------------------------------------------

@pytest.mark.parametrize("k", [16, 32])
@pytest.mark.parametrize("op", "AB")
def test_fp8_fragments_are_the_8_bit_integer_fragments(k, op):
    """PTX ISA: the .e4m3/.e5m2 A and B figures are the .s8/.u8 ones (four k per register)."""
    f8, s8 = lookup(f"m16n8k{k}.row.col.f32.e4m3.e5m2.f32"), lookup(f"m16n8k{k}.row.col.s32.s8.s8.s32")
    assert all(np.array_equal(x, y) for x, y in zip(f8.coords(op), s8.coords(op)))


def test_tf32_m16n8k4_a0_at_group_tig_a1_eight_rows_below_b0_at_tig_group():
    f = lookup("m16n8k4.row.col.f32.tf32.tf32.f32")
    (ar, ac), (br, bc) = f.coords("A"), f.coords("B")
    assert np.array_equal(ar[:, 0, 0], G) and np.array_equal(ar[:, 1, 0], G + 8) and np.array_equal(ac[:, :, 0].T, [T, T])
    assert np.array_equal(br[:, 0, 0], T) and np.array_equal(bc[:, 0, 0], G)


def _m884_formulas(layout_a, layout_b, acc):
    """PTX ISA m8n8k4 .f16 element i of lane l, in the table's stacked matrices (quad pair q = (l >> 2) & 3:
    rows 8q of A, C, D; rows 4q of B); hi = l >= 16."""
    q, hi = (LANE >> 2) & 3, LANE >> 4
    return {
        "A": lambda i: ((T + 4 * hi, i) if layout_a == "row" else (i + 4 * hi, T)) + (8 * q,),
        "B": lambda i: ((T, i + 4 * hi) if layout_b == "row" else (i, T + 4 * hi)) + (4 * q,),
        "C": lambda i: ((T + 4 * hi, i) if acc == "f16" else
                        ((LANE & 1) + (i & 2) + 4 * hi, (i & 4) + (LANE & 2) + (i & 1))) + (8 * q,),
    }


@pytest.mark.parametrize("name", M884)
@pytest.mark.parametrize("op", "ABCD")
def test_m8n8k4_fragments_are_the_ptx_isa_quad_pair_formulas(name, op):
    f = lookup(name)
    _, la, lb, d, _, _, c = name.split(".")
    form = _m884_formulas(la, lb, d if op == "D" else c)["C" if op in "CD" else op]
    rows, cols = f.coords(op)
    epr = rows.shape[2]
    for i in range(rows.shape[1] * epr):
        r, col, base = form(i)
        assert np.array_equal(rows[:, i // epr, i % epr], r + base + 0 * LANE)
        assert np.array_equal(cols[:, i // epr, i % epr], col + 0 * LANE)


def test_m8n8k4_quad_pairs_are_independent_products():
    """Quad pair q's D depends on its own A, B, C rows only (four 8x8x4 products per warp)."""
    f = lookup("m8n8k4.row.col.f32.f16.f16.f32")
    rng = np.random.default_rng(0)
    A = from_float(rng.integers(-4, 5, (32, 4)).astype(float), "f16")
    B = from_float(rng.integers(-4, 5, (16, 8)).astype(float), "f16")
    C = from_float(rng.integers(-4, 5, (32, 8)).astype(float), "f32")
    d = fragsim.mma(f, *(fragsim.pack(f, op, x) for op, x in zip("ABC", (A, B, C))))
    D = fragsim.unpack(f, "D", d).view(np.float32)
    a, b, c = A.view(np.float16).astype(float), B.view(np.float16).astype(float), C.view(np.float32)
    for q in range(4):
        want = a[8 * q:8 * q + 8] @ b[4 * q:4 * q + 4] + c[8 * q:8 * q + 8]
        assert np.array_equal(D[8 * q:8 * q + 8], want)


def test_movmatrix_transposes_the_ldmatrix_fragment():
    """Lane l's destination halves hold source elements (2*(l % 4) + e, l >> 2) of the row-major matrix."""
    M = np.arange(64, dtype=np.uint32).reshape(8, 8) | 0xA000
    regs = (M[G, 2 * T] | (M[G, 2 * T + 1] << 16))[:, None]
    d = fragsim.movmatrix(regs)[:, 0]
    assert np.array_equal(d & 0xFFFF, M.T[G, 2 * T]) and np.array_equal(d >> 16, M.T[G, 2 * T + 1])


def test_movmatrix_refuses_a_second_register_by_name():
    with pytest.raises(ValueError, match=r"movmatrix source registers: expected shape \(\.\.\., 32, 1\)"):
        fragsim.movmatrix(np.zeros((32, 2), np.uint32))


# -- arithmetic ------------------------------------------------------------------------------

def _d00(form, a, b, c, arch="sm_90"):
    """D[0, 0] of one dot product (values; padded with zeros) repeated in every output."""
    f = lookup(form)
    M, N, K = f.shape
    g = f.groups
    mats = [np.broadcast_to(np.array(list(a) + [0.0] * (K - len(a))), (g * M, K)),
            np.tile(np.array(list(b) + [0.0] * (K - len(b)))[:, None], (g, N)),
            np.full((g * M, N), c)]
    regs = [fragsim.pack(f, op, from_float(x, f.fmt(op))) for op, x in zip("ABC", mats)]
    return int(fragsim.unpack(f, "D", fragsim.mma(f, *regs, arch=arch))[0, 0])


F8 = "m16n8k32.row.col.f32.e4m3.e4m3.f32"


def test_fp8_low_halves_are_one_block_the_high_halves_the_next():
    """k=0 and k=1 (low halves) cancel to 0 in the first HMMA, so k=2's 2^-17 survives whole; one
    block of all k would truncate it against 2^16 (F = 25 bits below the largest product)."""
    a, b = [256.0, -256.0, 2.0 ** -8], [256.0, 256.0, 2.0 ** -9]
    assert _d00(F8, a, b, 0.0) == 0x37000000
    assert _d00(F8, a, b, 0.0, ARCHS["sm_90"].with_(fp8_split="none")) == 0


def test_fp8_c_is_added_last_rounding_to_nearest():
    """c = 2^24, products 1 + 1 + 1: the mma gives 3 exactly, FADD rounds 2^24 + 3 to 2^24 + 4; C inside
    the mma (rounded toward zero) would give 2^24 + 2."""
    a = [1.0, 1.0, 0.0, 0.0, 1.0]
    assert _d00(F8, a, a, 2.0 ** 24) == 0x4B800002
    assert _d00(F8, a, a, 2.0 ** 24, ARCHS["sm_90"].with_(fp8_c="mma")) == 0x4B800001


def test_fp8_f16_accumulator_overflows_in_the_first_hmma():
    """448 * 448 = 200704 is past f16's 65504: the f16 HMMA gives +Inf before C is added."""
    assert _d00("m16n8k16.row.col.f16.e4m3.e4m3.f16", [448.0], [448.0], 0.0) == 0x7C00


def test_m884_f32_is_a_chain_of_fmas_in_ascending_k_then_c():
    """1 + 2^-24 (k=1) + 2^-24 (k=2): ascending, each 2^-24 is a tie that rounds to even (1); c = 0 last."""
    e = 2.0 ** -24
    assert _d00("m8n8k4.row.col.f32.f16.f16.f32", [1.0, e, e, 0.0], [1.0] * 4, 0.0) == 0x3F800000
    assert _d00("m8n8k4.row.col.f32.f16.f16.f32", [e, e, 1.0, 0.0], [1.0] * 4, 0.0) == 0x3F800001


def test_m884_f16_sums_the_pairs_k01_and_k23_with_c_between():
    """f16 D: ((c + (a0 b0 + a1 b1)) + (a2 b2 + a3 b3)) in binary32, then one rounding to f16."""
    e = 2.0 ** -24
    arch = ARCHS["sm_90"]
    t = arch.m884_f16
    assert t == ("add", ("add", "c", ("fma", 1, ("mul", 0))), ("fma", 3, ("mul", 2)))
    # c = 1, k=0,1: 2^-24 each (kept: 1 + 2^-23), k=2,3: -2^-24 each -> back to exactly 1
    assert _d00("m8n8k4.row.col.f16.f16.f16.f16", [e, e, -e, -e], [1.0] * 4, 1.0) == 0x3C00


@pytest.mark.parametrize("change, message", [
    (dict(fp8_split="thirds"), "fp8_split must be"), (dict(fp8_c="first"), "fp8_c must be"),
    (dict(m884_f32=("add", "c", ("fma", 0, "+0"))), "each k of 0..3 once"),
    (dict(m884_f16=("add", "c", ("fma", 7, "+0"))), "k must be an integer in 0..3"),
    (dict(m884_f32=("sub", "c", "c")), "is not 'c', '\\+0' or a tuple")])
def test_arch_rows_refuse_impossible_fp8_and_m884_fields(change, message):
    with pytest.raises(ValueError, match=message):
        ARCHS["sm_90"].with_(**change)


def test_sm80_refuses_fp8_by_compute_capability():
    with pytest.raises(ValueError, match=r"needs compute capability 8\.9"):
        fragsim.mma(F8, np.zeros((32, 4), np.uint32), np.zeros((32, 2), np.uint32), np.zeros((32, 4), np.uint32),
                    arch="sm_80")


# -- what the H100 said ----------------------------------------------------------------------

def test_h100_corpora_cover_every_new_form():
    ops = {c.op for c in HW}
    assert set(FP8) | set(M884) | {"m16n8k4.row.col.f32.tf32.tf32.f32"} <= ops


TREE_ALTERNATIVES = {
    "m884_f32 descending k": dict(m884_f32=("add", "c", ("fma", 0, ("fma", 1, ("fma", 2, ("fma", 3, "+0")))))),
    "m884_f32 c first": dict(m884_f32=("fma", 3, ("fma", 2, ("fma", 1, ("fma", 0, "c"))))),
    "m884_f32 pairs": dict(m884_f32=("add", ("add", "c", ("fma", 1, ("mul", 0))), ("fma", 3, ("mul", 2)))),
    "m884_f16 chain": dict(m884_f16=("add", "c", ("fma", 3, ("fma", 2, ("fma", 1, ("fma", 0, "+0")))))),
    "m884_f16 k23 pair first": dict(m884_f16=("add", ("add", "c", ("fma", 3, ("mul", 2))), ("fma", 1, ("mul", 0)))),
    "m884_f16 c last": dict(m884_f16=("add", ("add", ("fma", 1, ("mul", 0)), ("fma", 3, ("mul", 2))), "c")),
    "fp8_split=halves": dict(fp8_split="halves"), "fp8_split=none": dict(fp8_split="none"),
    "fp8_c=mma": dict(fp8_c="mma"), "fp8 blocks of 8": dict(block_16bit=8),
}


@pytest.mark.parametrize("alt", list(TREE_ALTERNATIVES))
def test_hardware_rejects_the_alternative(alt):
    arch = ARCHS["sm_90"].with_(**TREE_ALTERNATIVES[alt])
    for c in HW:
        f = lookup(c.op)
        if f.groups == 1 and f.types["A"] not in ("e4m3", "e5m2"):
            continue
        inp = c.inputs()
        if not np.array_equal(fragsim.mma(c.op, inp["a"], inp["b"], inp["c"], arch=arch), c.outputs()["d"]):
            return
    pytest.fail(f"every recorded sm_90 case also agrees with {alt}: the corpus does not settle it")


@pytest.mark.parametrize("form", ["m16n8k32.row.col.f32.e4m3.e5m2.f32", "m16n8k16.row.col.f16.e5m2.e5m2.f16"])
def test_hardware_rejects_mma_sims_ada_fp8_model(form):
    """MMA-Sim 2.1.1's Ada Lovelace fp8 model (F = 13, e8m13 output grid) is not what an H100 computes."""
    torch = pytest.importorskip("torch")
    nv = pytest.importorskip("mmasim.nv_ptx")
    c = next(x for x in HW if x.op == form)
    f = lookup(form)
    sim = nv.MMA("Ada Lovelace", form.replace(".row.col", ""))
    inp, hw = c.inputs(), c.outputs()["d"]
    dt = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    acc = (torch.float32, np.uint32) if f.types["C"] == "f32" else (torch.float16, np.uint16)
    for i in range(min(len(c), 50)):
        A, B, C, D = (fragsim.unpack(f, op, x[i]) for op, x in zip("ABCD", (inp["a"], inp["b"], inp["c"], hw)))
        d = sim(torch.from_numpy(A).view(dt[f.types["A"]]), torch.from_numpy(B).view(dt[f.types["B"]]),
                torch.from_numpy(C.view(acc[1])).view(torch.int32 if acc[1] is np.uint32 else torch.int16).view(acc[0]))
        if not np.array_equal(d.contiguous().numpy().view(acc[1]), D):
            return
    pytest.fail("MMA-Sim's Ada fp8 model agrees with every recorded case tried")


MOVM = DATA / "hw_movmatrix" / "nvidia_h100_sm90" / "movmatrix.trans.npz"


@pytest.mark.skipif(not MOVM.exists(), reason="no movmatrix recording")
def test_recorded_movmatrix_cases_are_reproduced_bit_for_bit():
    c = corpus.load(str(MOVM), ("movmatrix",))
    assert c.meta["device"] and c.meta["mismatches"] == 0 and len(c) == c.meta["cases"] > 0
    assert np.array_equal(fragsim.movmatrix(c.arrays["a"]), c.arrays["d"])


@pytest.mark.gpu
def test_movmatrix_matches_the_gpu_live():
    """Live (``pytest -m gpu``): hypothesis-drawn source registers through the GPU and fragsim.movmatrix."""
    from hypothesis import given, settings, strategies as st
    from hypothesis.extra import numpy as hnp
    from fragsim.gpu_check.movmatrix.family import FAMILIES
    from fragsim.gpu_check.runner import GpuUnavailable
    fam = FAMILIES["movmatrix"]
    try:
        fn = fam.compile(fam.device())
    except (GpuUnavailable, ImportError) as e:
        pytest.skip(f"no GPU to test on: {e}")

    @settings(max_examples=60, deadline=None)
    @given(hnp.arrays(np.uint32, (4, 32, 1), elements=st.one_of(st.integers(0, 2**32 - 1),
                                                                st.sampled_from([0, 0xFFFFFFFF, 0x80008000, 1]))))
    def agree(a):
        hw = fam.device_outputs(fn, a)
        assert np.array_equal(hw, fragsim.movmatrix(a))

    agree()
