"""The MUFU kernels of ptx_kernels (tests/data/ptx/src/softmax_fast.cu, rmsnorm.cu, layernorm.cu,
attention_fwd.cu, sincos.cu), before and apart from their H100 recording
(tests/test_ptx_mufu_kernels_hw.py): their committed PTX holds the MUFU instructions each build is
for, src/build.sh's ``// ptx:`` lines build exactly the files the family runs, ``--forms`` names them
apart from the TMA kernels, and fragsim runs every shape, writing every element of each CTA's region
and nothing outside it."""

import re

import numpy as np
import pytest

from fragsim.gpu_check.ptx import kernels as P

MUFU_OPS = re.compile(r"\b((?:ex2|lg2|rcp|rsqrt|sqrt|sin|cos|div|tanh)\.[a-z0-9.]+)")
#: The MUFU (and IEEE divide/square root) instructions of each build, as nvcc 13.0 emits them.
EXPECTED = {
    "softmax_fast.sm90a.ptx": {"ex2.approx.ftz.f32", "rcp.approx.ftz.f32", "div.approx.ftz.f32"},
    "softmax_fast.precdiv.sm90a.ptx": {"ex2.approx.f32", "rcp.approx.f32", "div.full.f32", "div.approx.f32"},
    "softmax_fast.default.sm90a.ptx": {"ex2.approx.f32", "rcp.rn.f32", "div.rn.f32", "div.approx.f32"},
    "rmsnorm.sm90a.ptx": {"rsqrt.approx.ftz.f32", "div.approx.ftz.f32"},
    "rmsnorm.default.sm90a.ptx": {"rsqrt.approx.f32", "div.rn.f32"},
    "layernorm.sm90a.ptx": {"sqrt.rn.f32", "div.rn.f32", "rcp.rn.f32"},
    "layernorm.approx.sm90a.ptx": {"div.full.f32", "sqrt.approx.f32", "rsqrt.approx.f32"},
    "layernorm.approx_ftz.sm90a.ptx": {"div.full.ftz.f32", "sqrt.approx.ftz.f32", "rsqrt.approx.ftz.f32"},
    "layernorm.fast.sm90a.ptx": {"div.approx.ftz.f32", "sqrt.approx.ftz.f32", "rsqrt.approx.ftz.f32"},
    "attention_fwd.sm90a.ptx": {"ex2.approx.ftz.f32", "lg2.approx.ftz.f32", "rcp.approx.ftz.f32"},
    "sincos.sm90a.ptx": {"sin.approx.ftz.f32", "cos.approx.ftz.f32", "ex2.approx.ftz.f32", "lg2.approx.ftz.f32",
                         "div.approx.ftz.f32", "rsqrt.approx.ftz.f32", "sqrt.approx.ftz.f32", "ex2.approx.f32",
                         "ex2.approx.f16", "ex2.approx.f16x2", "ex2.approx.ftz.bf16", "ex2.approx.ftz.bf16x2"},
    "sincos.default.sm90a.ptx": {"sin.approx.f32", "cos.approx.f32", "ex2.approx.f32", "lg2.approx.f32",
                                 "div.approx.f32", "div.rn.f32", "rsqrt.approx.f32", "sqrt.rn.f32",
                                 "ex2.approx.ftz.f32", "ex2.approx.f16", "ex2.approx.f16x2", "ex2.approx.ftz.bf16",
                                 "ex2.approx.ftz.bf16x2"},
}
MUFU = [P.BY_NAME[k] for k in sorted(P.MUFU_KERNELS)]


def test_the_mufu_kernels_files_hold_the_instructions_their_builds_are_for():
    files = {f for k in MUFU for f in k.files}
    assert files == set(EXPECTED)
    for f, ops in EXPECTED.items():
        assert set(MUFU_OPS.findall((P.corpus() / f).read_text())) == ops, f


def test_the_ptx_lines_of_the_sources_build_exactly_the_files_the_family_runs():
    built = {name: flags for cu in sorted((P.corpus() / "src").glob("*.cu")) if "// ptx: " in cu.read_text()
             for name, flags in P.builds(cu)}
    assert set(built) == set(EXPECTED)
    assert all(flags[0] == "-arch=sm_90a" for flags in built.values())
    assert "--use_fast_math" in built["softmax_fast.sm90a.ptx"]
    assert built["layernorm.approx.sm90a.ptx"] == ["-arch=sm_90a", "-prec-div=false", "-prec-sqrt=false"]


def test_forms_name_the_mufu_kernels_apart_from_the_tma_ones():
    """softmax contains "tma": a form names a kernel only from the start of one of its words."""
    assert P.MUFU_KERNELS and not P.MUFU_KERNELS & P.TMA_KERNELS
    assert {c.kernel for c in P.cases(["tma"])} == P.TMA_KERNELS
    assert {c.kernel for c in P.cases(list(P.MUFU_FORMS))} == P.MUFU_KERNELS
    assert {c.kernel for c in P.cases(["layernorm"])} == {"layernorm", "layernorm_approx", "layernorm_approx_ftz",
                                                           "layernorm_fast"}
    assert {c.kernel for c in P.cases(["1warp", "matmul_sm90"])} == {"mma_1warp", "triton_matmul_sm90"}
    with pytest.raises(ValueError, match="--forms max"):
        P.cases(["max"])


#: Every shape of every MUFU kernel once, the value classes (normal, edge, special) in turn.
SHAPES = [P.Case(k.name, k.files[0], i, k.seeds[i % len(k.seeds)]) for k in MUFU for i in range(len(k.shapes))]


@pytest.mark.parametrize("case", SHAPES, ids=[c.id for c in SHAPES])
def test_fragsim_runs_every_shape_writing_every_output_and_one_cta_its_region_alone(case):
    """The whole grid leaves no output element as it was; the last CTA alone (a partial tile where the
    shape has one) writes the whole grid's bits in its region and nothing outside it."""
    g = case.launch()
    whole = P.fragsim_outputs(case, g)
    for name in g.outputs:
        sentinel = P.SENTINEL32 if whole[name].dtype.itemsize == 4 else P.SENTINEL16
        assert not (whole[name] == sentinel).any(), f"{name}: elements left unwritten"
    last = tuple(x - 1 for x in g.grid)
    if last == (0, 0, 0):
        return
    alone = P.fragsim_outputs(P.Case(case.kernel, case.file, case.shape, case.seed, (last,)), g)
    assert g.region is not None
    for name, m in g.region(last).items():
        assert m.any()
        assert np.array_equal(alone[name][m], whole[name][m]), name
        assert np.array_equal(alone[name][~m], g.buffers[name][~m]), name
