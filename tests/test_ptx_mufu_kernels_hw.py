"""The MUFU kernels of the PTX corpus (ptx_kernels' ``MUFU_KERNELS``: row softmax, RMSNorm, LayerNorm, a
FlashAttention-2-style forward, rotary embedding and the functions elementwise, built with
--use_fast_math and the -prec-div/-prec-sqrt/-ftz variants), replayed from an H100: ``fragsim.run_kernel``
writes the bits the GPU wrote, every ex2/lg2/rcp/rsqrt/sqrt/sin/cos .approx and div.approx/.full included.

tests/data/ptx/kernels_mufu/kernels.npz is written by ``fragsim gpu-check --family ptx_kernels --forms
softmax_fast rmsnorm layernorm attention_fwd sincos --record tests/data/ptx/kernels_mufu``; until it is
recorded these tests skip (tests/test_ptx_mufu_kernels.py runs the kernels without a recording)."""

from pathlib import Path

import pytest

from fragsim.gpu_check.ptx import kernels as P

DATA = Path(__file__).parent / "data" / "ptx" / "kernels_mufu"
if not (DATA / P.FILE).is_file():
    pytest.skip(f"no MUFU kernel recording yet ({DATA / P.FILE})", allow_module_level=True)
META, ARRAYS = P.load(str(DATA / P.FILE))
FULL = P.full_outputs(ARRAYS)
CASES = [e for e in META["cases"] if not e["gpu_error"]]


def test_the_recording_is_an_h100s_and_every_mufu_kernel_ran_there():
    assert "H100" in META["device"] and META["cc"] == "9.0"
    assert not [e["id"] for e in META["cases"] if e["gpu_error"]]
    assert {e["kernel"] for e in CASES} == P.MUFU_KERNELS
    assert [e["id"] for e in META["cases"]] == [c.id for c in P.cases(list(P.MUFU_FORMS))]


@pytest.mark.parametrize("entry", CASES, ids=[e["id"] for e in CASES])
def test_fragsim_writes_the_bits_the_gpu_wrote(entry):
    r = P.compare(entry, FULL.get(P.case_of(entry).launch_id))
    assert r["status"] == "match", r["detail"]
