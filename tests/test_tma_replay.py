"""The H100 recording of the tma family (tests/data/tma/tma.npz, written by
``fragsim gpu-check --family tma --record tests/data/tma``): fragsim's TensorMap refuses exactly the
maps the driver refused, refuses at run time exactly what faulted, and tma_load / tma_store reproduce
every byte of every recorded shared region and tensor (interleaved maps, not modelled, aside)."""

from pathlib import Path

import pytest

from fragsim.gpu_check import tma as T

RECORDING = Path(__file__).parent / "data" / "tma" / T.FILE

pytestmark = pytest.mark.skipif(
    not RECORDING.is_file(), reason=f"no TMA recording yet ({RECORDING.relative_to(Path(__file__).parent.parent)}): "
    "on an sm_90 GPU run `fragsim gpu-check --family tma --record tests/data/tma` and commit the file")


@pytest.fixture(scope="module")
def recording():
    return T.load(str(RECORDING))


def test_every_recorded_case_replays_byte_for_byte(recording):
    cases, results, dumps, _ = recording
    rep = T.verdicts(cases, results, dumps, lambda *a: None)
    assert rep["not_run"] == 0, "the recording has cases the GPU run did not reach"
    assert rep["mismatches"] == 0, "\n".join(f"{p['case']}: {p['detail']}" for p in rep["problems"][:10])
    assert rep["kinds"]["load"]["match"] > 0 and rep["kinds"]["store"]["match"] > 0
    assert rep["kinds"]["encode"]["match"] > 0


def test_each_probe_did_what_fragsim_says(recording):
    cases, results, dumps, _ = recording
    for i, (c, r) in enumerate(zip(cases, results)):
        if c["label"].startswith("probe"):
            v = T.compare(c, r, dumps.get(i))
            assert v["verdict"] == "match", f"{c['label']}: GPU {r['status']} {r.get('error', '')}: {v['detail']}"
