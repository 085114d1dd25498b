"""Whole kernels of the PTX corpus, replayed from an H100: ``fragsim.run_kernel`` on the committed PTX,
with the inputs regenerated from the recorded seeds, writes the bits the GPU wrote.

tests/data/ptx/kernels/kernels.npz was written by ``fragsim gpu-check --family ptx_kernels --record``
(gpu_check/ptx/kernels.py): per case the kernel, PTX file, shape, seed, launch, the digest of the
inputs and of each output buffer the GPU left (the region one CTA writes, for single-CTA cases),
and the whole outputs of each kernel's first launch."""

from pathlib import Path

import numpy as np
import pytest

from fragsim.gpu_check.ptx import kernels as P

DATA = Path(__file__).parent / "data" / "ptx" / "kernels"
META, ARRAYS = P.load(str(DATA / P.FILE))
FULL = P.full_outputs(ARRAYS)
CASES = [e for e in META["cases"] if not e["gpu_error"]]


def test_the_recording_is_an_h100s_and_every_kernel_of_the_family_ran_there():
    """(The TMA and the MUFU kernels may be recorded on their own, ``P.RECORDED_APART``:
    tests/test_ptx_tma_kernels_hw.py, tests/test_ptx_mufu_kernels_hw.py.)"""
    assert "H100" in META["device"] and META["cc"] == "9.0"
    recorded = {e["kernel"] for e in CASES}
    assert set(P.BY_NAME) - set().union(*P.RECORDED_APART.values()) <= recorded <= set(P.BY_NAME)
    assert [e["id"] for e in META["cases"]] == [c.id for c in P.cases() if c.kernel in recorded]


def test_whole_grids_and_single_ctas_and_every_value_class_are_recorded():
    assert {e["values"] for e in CASES} == set(P.VALUES)
    single = {e["kernel"] for e in CASES if e["ctas"] is not None}
    assert {"hgemm_cpasync", "gemm_ldshared", "triton_matmul_sm90", "cutlass_wgmma_sm90_nt"} <= single


@pytest.mark.parametrize("entry", CASES, ids=[e["id"] for e in CASES])
def test_fragsim_writes_the_bits_the_gpu_wrote(entry):
    r = P.compare(entry, FULL.get(P.case_of(entry).launch_id))
    assert r["status"] == "match", r["detail"]


def test_a_bit_the_gpu_wrote_otherwise_is_reported_with_its_element():
    """The comparison can fail: the recorded output with one bit flipped is a mismatch naming the element."""
    entry = next(e for e in CASES if e["kernel"] == "hgemm_cpasync" and e["ctas"] is None)
    full = {k: v.copy() for k, v in FULL[P.case_of(entry).launch_id].items()}
    full["D"][1, 2] ^= np.uint32(1)
    r = P.compare(dict(entry, outputs={"D": P.digest(full["D"])}), full)
    assert r["status"] == "mismatch"
    assert "1 element(s) differ, first at [1, 2]" in r["detail"]


def test_inputs_that_are_not_the_recorded_ones_are_refused_before_any_comparison():
    entry = dict(CASES[0], inputs="0" * 32)
    r = P.compare(entry)
    assert r["status"] == "error" and "not the recorded ones" in r["detail"]
