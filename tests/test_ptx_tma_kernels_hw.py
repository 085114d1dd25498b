"""The TMA kernels of the PTX corpus (ptx_kernels' ``TMA_KERNELS``: tma_wgmma, tma_bulk and CuTe's
wgmma_tma_sm90 tutorial), replayed from an H100: ``fragsim.run_kernel`` writes the bits the GPU wrote.

tests/data/ptx/kernels_tma/kernels.npz is written by ``fragsim gpu-check --family ptx_kernels --forms tma
--record tests/data/ptx/kernels_tma`` (its tensor maps encoded by the driver's cuTensorMapEncodeTiled);
until it is recorded these tests skip."""

from pathlib import Path

import pytest

from fragsim.gpu_check.ptx import kernels as P

DATA = Path(__file__).parent / "data" / "ptx" / "kernels_tma"
if not (DATA / P.FILE).is_file():
    pytest.skip(f"no TMA kernel recording yet ({DATA / P.FILE})", allow_module_level=True)
META, ARRAYS = P.load(str(DATA / P.FILE))
FULL = P.full_outputs(ARRAYS)
CASES = [e for e in META["cases"] if not e["gpu_error"]]


def test_the_recording_is_an_h100s_and_every_tma_kernel_ran_there():
    assert "H100" in META["device"] and META["cc"] == "9.0"
    assert {e["kernel"] for e in CASES} == P.TMA_KERNELS
    assert [e["id"] for e in META["cases"]] == [c.id for c in P.cases(["tma"])]


@pytest.mark.parametrize("entry", CASES, ids=[e["id"] for e in CASES])
def test_fragsim_writes_the_bits_the_gpu_wrote(entry):
    r = P.compare(entry, FULL.get(P.case_of(entry).launch_id))
    assert r["status"] == "match", r["detail"]
