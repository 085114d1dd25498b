"""The H100 recordings of the tma family (``fragsim gpu-check --family tma --record DIR``): fragsim's
TensorMap refuses exactly the maps the driver refused, refuses at run time exactly what faulted, and
tma_load / tma_store reproduce every byte of every recorded shared region and tensor (interleaved maps,
not modelled, aside).

run1 (seed 0, driver 580.159.04) is the recording the measured rules of fragsim/facts/tma.py were
fitted on (its even-numbered cases) and checked against (its odd-numbered ones); run2 (seed 1, the same
H100) validated them, all but the driver's box-size count, refitted on both (docs/tma.md); run3 (seed 2,
recorded after that refit, nothing fitted on it) validated every rule: 6,386 cases, 0 mismatches."""

import math
from pathlib import Path

import pytest

from fragsim.facts.tma import TMA_TYPES, oob_nan
from fragsim.gpu_check.tma import family as T
from fragsim.gpu_check.tma.cases import smem_box

DATA = Path(__file__).parent / "data" / "tma"
RECORDINGS = ["run1", "run2", "run3"]


@pytest.fixture(scope="module", params=RECORDINGS)
def recording(request):
    return T.load(str(DATA / request.param / T.FILE))


def test_every_recorded_case_replays_byte_for_byte(recording):
    cases, results, dumps, _ = recording
    rep = T.verdicts(cases, results, dumps, lambda *a: None)
    assert rep["not_run"] == 0, "the recording has cases the GPU run did not reach"
    assert rep["mismatches"] == 0, "\n".join(f"{p['case']}: {p['detail']}" for p in rep["problems"][:10])
    assert rep["kinds"]["load"]["match"] > 0 and rep["kinds"]["store"]["match"] > 0
    assert rep["kinds"]["encode"]["match"] > 0
    assert all(f"{oob_nan(d):#x}" == bits for d, (bits,) in rep["nan_fill_bits"].items())


def test_each_probe_did_what_fragsim_says(recording):
    cases, results, dumps, _ = recording
    for i, (c, r) in enumerate(zip(cases, results)):
        if c["label"].startswith("probe"):
            v = T.compare(c, r, dumps.get(i))
            assert v["verdict"] == "match", f"{c['label']}: GPU {r['status']} {r.get('error', '')}: {v['detail']}"


def test_the_recording_holds_cases_of_each_measured_rule(recording):
    """Each rule fragsim/facts/tma.py calls measured has cases in the recording the replay compares:
    rows narrower than the swizzle span, NaN fills, tf32 loads, stores past a row's end within its last
    16-byte chunk, maps on both sides of the box-size limit, 32-byte interleave with the 128B swizzle."""
    cases, results, _, _ = recording
    ran = [(c, r) for c, r in zip(cases, results) if r["status"] in ("ok", "encoded", "refused")]
    spans = {"none": 0, "32B": 32, "64B": 64, "128B": 128}
    e = {n: t.bytes for n, t in TMA_TYPES.items()}
    count = {
        "narrow rows": sum(c["kind"] == "load" and smem_box(c)[0] * e[c["dtype"]] < spans[c["swizzle"]] for c, _ in ran),
        "nan fill": sum(c["kind"] == "load" and c["oob_fill"] == "nan" for c, _ in ran),
        "tf32 loads": sum(c["kind"] == "load" and c["dtype"].startswith("tf32") for c, _ in ran),
        "chunk stores": sum(c["kind"] == "store" and c["dims"][0] * e[c["dtype"]] % 16 != 0
                            and c["coords"][0] + c["box"][0] > c["dims"][0] for c, _ in ran),
        "refused for size": sum(r["status"] == "refused" and c["label"] in ("box 256", "outer box dims all 256")
                                and math.prod(-(-b // s) for b, s in zip(c["box"], c["es"])) * e[c["dtype"]] > 256 << 10
                                for c, r in ran),
        "interleave 32B, swizzle 128B": sum(c["interleave"] == "32B" and c["swizzle"] == "128B"
                                            and r["status"] == "encoded" for c, r in ran),
    }
    assert min(count.values()) >= 10, count
