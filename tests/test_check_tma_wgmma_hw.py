"""check_tma_wgmma's injected mismatches as an H100 ran them (tests/data/ptx/kernels_tma_check, recorded by
``fragsim gpu-check --family ptx_kernels --forms tma_check --record DIR``): src/tma_wgmma_check.cu with one
mismatch between the TMA box and the wgmma descriptors each.  The GPU's product is right exactly where the
check says right, and fragsim.run_kernel writes the GPU's bits, the wrong products' included."""

from pathlib import Path

import pytest

from fragsim.gpu_check.ptx import kernels as P

DATA = Path(__file__).parent / "data" / "ptx" / "kernels_tma_check"
META, ARRAYS = P.load(str(DATA / P.FILE))
FULL = P.full_outputs(ARRAYS)
BY_KERNEL = {e["kernel"]: e for e in META["cases"]}


def test_the_recording_is_an_h100s_and_holds_every_case():
    assert "H100" in META["device"] and META["cc"] == "9.0"
    assert set(BY_KERNEL) == set(P.TMA_CHECK)
    assert not any(e["gpu_error"] for e in BY_KERNEL.values())


@pytest.mark.parametrize("name", list(P.TMA_CHECK))
def test_the_gpus_product_is_right_exactly_where_the_check_says_so(name):
    _, _, want, _ = P.TMA_CHECK[name]
    assert BY_KERNEL[name]["product"] == want


@pytest.mark.parametrize("name", list(P.TMA_CHECK))
def test_fragsim_writes_the_bits_the_gpu_wrote(name):
    entry = BY_KERNEL[name]
    r = P.compare(entry, FULL.get(P.case_of(entry).launch_id))
    assert r["status"] == "match", r["detail"]
