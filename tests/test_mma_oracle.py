"""fragsim.mma is the reference model, bit for bit: the numba kernel against the slow
rational-arithmetic oracle (tests/oracle_mma.py), on random operands biased to NaN, Inf,
signed zeros, subnormals, cancellation and wide exponent spreads, for every form of the
instruction table on sm_80 and sm_90, and for every open choice of the parameter table."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import fragsim
from fragsim.arch import ARCHS

import oracle_mma as O
from mma_cases import matrices, mma_case

FORMS = list(fragsim.FORMS)
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
