"""Whole GEMMs an H100 computed with mma.sync, replayed through fragsim.gemm on the CPU.

tests/data/gemm/gemm_h100.json was written by ``fragsim gpu-check --family gemm --record`` on the
GPU: per form 100 GEMMs (seeded inputs: sizes, K up to 8,192, k order, input class), each with the
digest of its inputs and of the D the GPU produced, and two small GEMMs per form in full.  CI
replays a sample per form (the first seeds and the longest K); FRAGSIM_GEMM_REPLAY=all replays
every recorded GEMM (several minutes).  The second half checks the generated kernels without a GPU.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fragsim import FORMS, lookup
from fragsim.gpu_check.gemm import family as G

REC = json.loads((Path(__file__).parent / "data" / "gemm" / "gemm_h100.json").read_text())
SAMPLE = 4          # seeds per form that CI replays, besides the longest K


def _cases(form):
    rows = REC["forms"][form]
    if os.environ.get("FRAGSIM_GEMM_REPLAY") == "all":
        return [(form, r[0]) for r in rows]
    longest = max(rows, key=lambda r: r[3])[0]
    return [(form, s) for s in sorted(set(range(SAMPLE)) | {longest})]


def test_the_recording_covers_every_form_with_100_gemms_up_to_k_8192():
    assert REC["device"]["device"].startswith("NVIDIA H100") and REC["arch"] == "sm_90"
    assert set(REC["forms"]) == {n for n, f in FORMS.items() if f.min_cc <= 90}
    for form, rows in REC["forms"].items():
        assert len(rows) == 100, form
        if G.chains(form):
            assert max(r[3] for r in rows) == G.K_MAX, form
        assert {r[4] for r in rows} == set(G.CLASSES), form


@pytest.mark.parametrize("form", sorted(REC["forms"]))
def test_gpu_gemms_are_reproduced_bit_for_bit(form):
    bad = G.replay(REC, _cases(form))
    assert not bad, "\n".join(bad)


def test_a_changed_d_is_caught():
    form = sorted(REC["forms"])[0]
    rec = json.loads(json.dumps(REC))
    rec["forms"][form][0][6] = "0" * 16
    assert G.replay(rec, [(form, 0)]) == [f"{form} seed 0 ({rec['forms'][form][0][1]}x{rec['forms'][form][0][2]}x"
                                          f"{rec['forms'][form][0][3]}, {rec['forms'][form][0][4]}): D differs from "
                                          f"the GPU's"]


# -- the generated kernels ------------------------------------------------------------------------

@pytest.mark.parametrize("form", sorted(FORMS))
def test_kernel_fragment_coordinates_are_the_tables(form):
    """The kernel computes each lane's (row, col) from the table's linear layout: the same as coords()."""
    f = lookup(form)
    for op in "ABCD":
        rows, cols = f.coords(op)
        r_expr, c_expr = (e.replace("/", "//") for e in G._coord_expr(f.layout(op)))
        lane, reg, e = np.meshgrid(np.arange(32), np.arange(rows.shape[1]) // f.words_per_elem(op),
                                   np.arange(rows.shape[2]), indexing="ij")
        env = {"lane": lane, "REG": reg, "e": e}
        assert np.array_equal(eval(r_expr, env) * np.ones_like(lane), rows), op
        assert np.array_equal(eval(c_expr, env) * np.ones_like(lane), cols), op


@pytest.mark.parametrize("form", sorted(FORMS))
def test_one_kernel_per_form_running_the_tables_instruction(form):
    src = G.kernel_source(form)
    assert src.count("asm volatile") == 1 and f'asm volatile("{lookup(form).ptx} ' in src
    assert ("c[r] = d[r]" in src) == G.chains(form)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_gemm_kernels_compile_for_sm_90(tmp_path):
    cu = tmp_path / "gemm.cu"
    cu.write_text(G.module_source(sorted(FORMS)))
    r = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", str(tmp_path / "gemm.cubin"), str(cu)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]


def test_cases_are_drawn_the_same_way_every_time():
    for form in ("m16n8k16.row.col.f32.bf16.bf16.f32", "m16n8k32.row.col.satfinite.s32.s8.u8.s32"):
        A, B, C, order, cls = G.case_inputs(form, 7)
        A2, B2, C2, order2, cls2 = G.case_inputs(form, 7)
        assert G.input_digest(A, B, C, order) == G.input_digest(A2, B2, C2, order2) and cls == cls2
