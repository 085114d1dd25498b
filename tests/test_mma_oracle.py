"""fragsim.mma is the reference model, bit for bit: the numba kernel against the slow
rational-arithmetic oracle (tests/oracle_mma.py), on random operands biased to NaN, Inf,
signed zeros, subnormals, cancellation and wide exponent spreads, for every form of the
instruction table on sm_80 and sm_90, and for every open choice of the parameter table."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fragsim
from fragsim.facts.arch import ARCHS

import oracle_mma as O
from mma_cases import FLOAT_FORMS, matrices, mma_case

FORMS = FLOAT_FORMS
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(form, arch, case):
    classes, seed, scenario, rows = case
    f = fragsim.lookup(form)
    A, B, C = matrices(form, classes, seed, scenario)
    d = fragsim.mma(form, fragsim.pack(form, "A", A), fragsim.pack(form, "B", B),
                    fragsim.pack(form, "C", C), arch=arch)
    D = fragsim.unpack(form, "D", d)
    cells = [(m, n) for m in rows for n in range(f.shape[1])]
    want = O.mma_matrices(form, A, B, C, arch, elements=cells)
    for m, n in cells:
        assert D[m, n] == want[m, n], (
            f"{form} {getattr(arch, 'name', arch)} D[{m},{n}]: kernel {int(D[m, n]):#x}, oracle "
            f"{int(want[m, n]):#x}; classes {classes} seed {seed} scenario {scenario}")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("form", FORMS)
def test_kernel_equals_oracle(form, arch):
    @SETTINGS
    @given(case=mma_case(form))
    def prop(case):
        _check(form, arch, case)
    prop()


# Each open choice of the parameter table, flipped: the kernel must still equal the oracle
# (so a corpus that settles a choice differently on another GPU is one edit away).
VARIANTS = {
    "zero_sign=ieee": dict(zero_sign="ieee"),
    "c_subnormal_exp=exact": dict(c_subnormal_exp="exact"),
    "tf32_nan_low_bits": dict(tf32_nan_low_bits=True),
    "e_zero_f16=-22,e_zero_f32=-140": dict(e_zero_f16=-22, e_zero_f32=-140),
    "F=23,L=2": dict(frac_bits=23, block_16bit=2, block_tf32=2),
    "round_f32=rne,round_f16=rz": dict(round_f32="rne", round_f16="rz"),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("form", ["m16n8k16.row.col.f16.f16.f16.f16", "m16n8k16.row.col.f32.bf16.bf16.f32",
                                  "m16n8k8.row.col.f32.tf32.tf32.f32"])
def test_kernel_equals_oracle_for_each_open_choice(form, variant):
    arch = ARCHS["sm_80"].with_(**VARIANTS[variant])

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(case=mma_case(form))
    def prop(case):
        _check(form, arch, case)
    prop()


def test_batches_are_independent_warps():
    form = "m16n8k16.row.col.f32.f16.f16.f32"
    rng = np.random.default_rng(11)
    regs = [rng.integers(0, 2**32, (3, 5, 32, fragsim.lookup(form).nregs(op)), dtype=np.uint64).astype(np.uint32)
            for op in "ABC"]
    d = fragsim.mma(form, *regs, arch="sm_80")
    assert d.shape == (3, 5, 32, 4) and d.dtype == np.uint32
    for i, j in [(0, 0), (2, 4), (1, 3)]:
        assert np.array_equal(d[i, j], O.mma(form, regs[0][i, j], regs[1][i, j], regs[2][i, j], "sm_80"))


@st.composite
def e_zero_edge(draw, form):
    """Row 0 of an mma whose terms sit at the e_zero / truncation edge: c = +-0 or a tiny
    (subnormal) c, a product near a rounding boundary and a tiny product whose exponent is
    within a few binades of e_zero - F, in random positions and signs."""
    f = fragsim.lookup(form)
    out16 = f.fmt("D").name == "f16"
    K = f.shape[2]
    ks = draw(st.lists(st.integers(0, K - 1), min_size=2, max_size=3, unique=True))
    vals = []
    for j, k in enumerate(ks):
        if j == 0:   # the big one: 2^-25 (f16 out) / 2^-140 (f32 out), often an exact tie
            frac = draw(st.sampled_from([1.0, 1.0, 1.0, 1.125, 1.25, 1.5, 1.875]))
            a, b = (2.0**-12, 2.0**-13 * frac) if out16 else (2.0**-70, 2.0**-70 * frac)
        else:        # the tiny one: about 2^(e_zero - F), on either side of the grid
            frac = 1 + draw(st.integers(0, 7)) / 8
            d = draw(st.integers(-3, 3))
            a, b = (2.0**-24, 2.0 ** (-22 + d) * frac) if out16 else (2.0**-75, 2.0 ** (-83 + d) * frac)
        vals.append((k, a * (-1) ** draw(st.integers(0, 1)), b))
    sign = 1 << f.fmt("C").sign_shift
    c_bits = draw(st.sampled_from([0, 0, sign, 1, 3] if out16 else [0, 0, sign, 1, 0x100]))
    return vals, c_bits


EDGE_ARCHS = {"sm_80": ARCHS["sm_80"], "sm_90": ARCHS["sm_90"],
              "sm_90,e_zero-1": ARCHS["sm_90"].with_(e_zero_f16=-22, e_zero_f32=-134),
              "sm_90,c exact": ARCHS["sm_90"].with_(c_subnormal_exp="exact"),
              "sm_90,ieee zeros": ARCHS["sm_90"].with_(zero_sign="ieee")}


@pytest.mark.parametrize("arch", list(EDGE_ARCHS))
@pytest.mark.parametrize("form", ["m16n8k16.row.col.f16.f16.f16.f16", "m16n8k8.row.col.f16.f16.f16.f16",
                                  "m16n8k16.row.col.f32.bf16.bf16.f32", "m16n8k8.row.col.f32.tf32.tf32.f32"])
def test_kernel_equals_oracle_at_the_e_zero_edge(form, arch):
    from fragsim.facts.formats import from_float
    f = fragsim.lookup(form)
    row = EDGE_ARCHS[arch]

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(case=e_zero_edge(form))
    def prop(case):
        vals, c_bits = case
        A = np.zeros(f.matrix_shape("A"), f.fmt("A").dtype)
        B = np.zeros(f.matrix_shape("B"), f.fmt("B").dtype)
        C = np.zeros(f.matrix_shape("C"), f.fmt("C").dtype)
        for k, a, b in vals:
            A[0, k] = from_float(a, f.fmt("A"))
            B[k, 0] = from_float(b, f.fmt("B"))
        C[0, 0] = c_bits
        d = fragsim.mma(form, fragsim.pack(form, "A", A), fragsim.pack(form, "B", B),
                        fragsim.pack(form, "C", C), arch=row)
        got = int(fragsim.unpack(form, "D", d)[0, 0])
        want = int(O.mma_matrices(form, A, B, C, row, elements=[(0, 0)])[0, 0])
        assert got == want, f"{form} {arch}: kernel {got:#x}, oracle {want:#x} for {vals}, c={c_bits:#x}"
    prop()
