"""The tma family of gpu_check (gpu_check/tma/family.py, device.py) without a GPU: its CUDA builds for
sm_90a, its cases cover the argument space the issue names, and the pipeline -- workers, a new worker
after each fault, the recording, the replay -- runs with fragsim standing in for the GPU and catches a
changed byte, a probe that did not fault, a map the driver judged otherwise."""

import json
import shutil
import subprocess
from collections import Counter

import numpy as np
import pytest

from fragsim.cli import main
from fragsim.facts.tma import SWIZZLES, TMA_TYPES
from fragsim.gpu_check.tma import family as T
from fragsim.gpu_check.tma import cases as C
from fragsim.gpu_check.tma import device as D
from fragsim.tma import box_layout


@pytest.fixture(scope="module")
def cases():
    return C.make_cases(1200, 0)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_kernels_build_for_sm_90a_with_every_rank_of_tensor_load_and_store(tmp_path):
    cu = tmp_path / "tma.cu"
    cu.write_text(T.FAMILIES["tma"].source(90))
    for flags, out in ((list(D.NVCC_FLAGS), "tma.cubin"), (["-gencode=arch=compute_90a,code=sm_90a", "-ptx"], "tma.ptx")):
        r = subprocess.run(["nvcc", *flags, "-o", str(tmp_path / out), str(cu)], capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
    ptx = (tmp_path / "tma.ptx").read_text()
    for rank in range(1, 6):
        assert f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" in ptx
        assert f"cp.async.bulk.tensor.{rank}d.global.shared::cta.tile.bulk_group" in ptx
    for op in ("mbarrier.init.shared::cta.b64", "mbarrier.arrive.expect_tx", "mbarrier.try_wait.parity",
               "mbarrier.arrive.shared::cta.b64",
               "fence.proxy.async.shared::cta", "cp.async.bulk.wait_group 0", "cvta.param.u64"):
        assert op in ptx


def test_the_load_cases_cover_every_dtype_rank_swizzle_fill_and_edge_and_the_model_takes_them(cases):
    loads = [c for c in cases if c["kind"] == "load" and not c["label"]]
    assert {c["dtype"] for c in loads} == set(TMA_TYPES)
    assert {len(c["dims"]) for c in loads} == {1, 2, 3, 4, 5}
    assert {c["swizzle"] for c in loads} == set(SWIZZLES) and {c["oob_fill"] for c in loads} == {"zero", "nan"}
    assert {c["dst"] for c in loads} == set(range(0, 2048, 128)) and len({c["base_offset"] for c in loads}) == 64
    assert any(max(c["es"][1:], default=1) > 1 for c in loads) and any(c["es"][0] > 1 for c in loads)
    assert any(s != sorted(s) for s in (c["strides"] for c in loads))        # a permuted memory order
    edges = Counter()
    for c in loads:
        box = box_layout(C.tensor_map(c, 0x10000000 + c["base_offset"]), c["coords"], c["dst"])
        edges["negative"] += bool((box.coords < 0).any())
        edges["past the end"] += bool((box.coords >= np.array(c["dims"])).any())
        edges["wholly outside"] += not box.in_bounds.any()
        edges["inside"] += bool(box.in_bounds.all())
        edges["int32 limit"] += any(abs(x) > 2**30 for x in c["coords"])
    assert min(edges.values()) > 0, edges
    assert any(c["interleave"] != "none" for c in cases if c["kind"] == "load")


def test_the_encode_cases_move_every_parameter_to_its_limits(cases):
    assert {c["label"] for c in cases if c["kind"] == "encode"} == set(C.MUTATIONS)
    assert sum(c["kind"] == "store" and not c["label"] for c in cases) == 1200 // 8
    assert [c["label"] for c in cases if c["label"].startswith("probe")] == [p["label"] for p in C.PROBES]


def _dry_run(tmp_path, n=40, seed=3):
    cs = C.make_cases(n, seed)
    work = tmp_path / "work"
    work.mkdir()
    results, dumps = T.run_all(cs, "--dry-run", str(work), lambda *a: None, launcher=T.in_process)
    return cs, results, dumps


def test_the_dry_run_pipeline_agrees_restarts_after_each_fault_and_replays_from_its_recording(tmp_path):
    cs, results, dumps = _dry_run(tmp_path)
    faulted = [r for r in results if r["status"] == "fault"]
    assert len(faulted) == 9 and all(cs[r["i"]]["label"].startswith("probe") for r in faulted)
    rep = T.verdicts(cs, results, dumps, lambda *a: None)
    assert rep["mismatches"] == 0 and rep["cases"] == len(cs) - rep["not_modelled"]
    T.save(str(tmp_path), cs, results, dumps, {"device": "stand-in"})
    cs2, results2, dumps2, meta = T.load(str(tmp_path / T.FILE))
    assert cs2 == cs and meta["device"] == "stand-in" and set(dumps2) == set(dumps)
    assert T.verdicts(cs2, results2, {}, lambda *a: None)["mismatches"] == 0       # digests alone


def test_a_changed_byte_of_a_recorded_dump_is_a_mismatch_naming_the_byte(tmp_path):
    cs, results, dumps = _dry_run(tmp_path)
    i = next(i for i, c in enumerate(cs) if c["kind"] == "load" and c["interleave"] == "none" and i in dumps)
    dumps[i] = dumps[i].copy()
    dumps[i][37] ^= 0x40
    rep = T.verdicts(cs, results, dumps, lambda *a: None)
    assert rep["mismatches"] == 1 and "first shared byte 37" in rep["problems"][0]["detail"]
    results[i]["digest"] = "0" * 32
    assert "digest differs" in T.compare(cs[i], results[i], None)["detail"]


def test_a_store_that_writes_past_its_tensor_shows_in_the_guard_bytes(tmp_path):
    cs, results, dumps = _dry_run(tmp_path)
    i = next(i for i, c in enumerate(cs) if c["kind"] == "store" and i in dumps)
    assert results[i]["guard"] == C.STORE_GUARD and dumps[i].size == C.footprint(cs[i]) + C.STORE_GUARD
    dumps[i] = dumps[i].copy()
    dumps[i][C.footprint(cs[i])] ^= 1
    got = T.compare(cs[i], results[i], dumps[i])
    assert got["verdict"] == "mismatch" and f"first tensor byte {C.footprint(cs[i])}" in got["detail"]


def test_a_load_whose_mbarrier_counted_more_bytes_than_fragsim_is_a_mismatch(tmp_path):
    cs, results, dumps = _dry_run(tmp_path)
    i = next(i for i, c in enumerate(cs) if c["kind"] == "load" and c["interleave"] == "none" and i in dumps)
    assert results[i]["tx_exact"] is True
    got = T.compare(cs[i], dict(results[i], tx_exact=False), dumps[i])
    assert got["verdict"] == "mismatch" and f"more than the {C.tx_bytes(cs[i])} bytes fragsim counts" in got["detail"]


def test_f32_specials_make_ties_nans_infinities_and_subnormals_of_a_third_of_the_words():
    case = next(c for c in C.make_cases(200, 4) if c.get("pattern") == "f32 specials" and c["kind"] == "load")
    plain, _ = C.inputs({k: v for k, v in case.items() if k != "pattern"})
    tensor, _ = C.inputs(case)
    words = tensor[:tensor.size // 4 * 4].view(np.uint32)
    changed = words != plain[:tensor.size // 4 * 4].view(np.uint32)
    assert 0.1 < changed.mean() < 0.5
    assert ((words & 0x1FFF) == 0x1000).sum() > words.size / 40 and ((words & 0x7F800000) == 0x7F800000).sum() > 0


def test_the_encode_cases_bracket_the_drivers_box_size_limit_and_its_rounding():
    """A 228 KB box encodes, 232 KB and up do not, a box that element_strides[0] brings under it does;
    the driver rounds box_dims / element_strides down, to 0 where box_dims[0] < element_strides[0]."""
    base = dict(C.make_cases(2, 1)[0], kind="encode", swizzle="none")
    want = {"box bytes 228 KB": True, "box bytes 232 KB": False, "box bytes 256 KB": False,
            "box bytes 1 MB, element_strides[0] 8": True, "box bytes 228 KB rounding down, 232 KB up": True,
            "box bytes 232 KB rounding down, 236 KB up": False,
            "box bytes 1 MB, u64 box_dims[0] 2 < element_strides[0] 4": True,
            "box bytes 512 KB, f32 box_dims[0] 4 < element_strides[0] 8": True}
    got = {}
    for label in want:
        c = dict(base, label=label)
        C.MUTATIONS[label](c, np.random.default_rng(0))
        got[label] = D.ModelDevice().encode(c) == D.CUDA_SUCCESS
    assert got == want


def test_a_probe_that_does_not_fault_on_the_gpu_is_a_mismatch_naming_fraggsims_rule():
    probe = dict(C.PROBES[0])
    tensor, _ = C.inputs(probe)
    got = T.compare(probe, {"status": "ok", "base": 1 << 20, "bytes": None}, np.zeros(C.region_bytes(probe), np.uint8))
    assert got["verdict"] == "mismatch" and "fragsim refuses it: tma_load: coords[0] = 1" in got["detail"]
    assert T.compare(probe, {"status": "fault", "base": 1 << 20, "error": "illegal instruction"}, None)["verdict"] == "match"


@pytest.mark.parametrize("status, words", [("refused", "the driver refuses the map (CUresult 1); fragsim accepts it"),
                                           ("encoded", "the driver encodes the map; fragsim refuses it: TensorMap:")])
def test_a_map_judged_otherwise_by_the_driver_is_a_mismatch(status, words):
    c = C.make_cases(2, 1)[0]
    c.update(label="", kind="encode", dims=[64, 8], strides=[128], box=[64, 8], es=[1, 1], interleave="none",
             swizzle="none", dtype="f16", oob_fill="zero")
    if status == "encoded":
        c["box"] = [4, 8]                      # 8 bytes: fragsim refuses
    got = T.compare(c, {"status": status, "code": 1 if status == "refused" else 0, "base": 1 << 20}, None)
    assert got["verdict"] == "mismatch" and words in got["detail"]


def test_a_worker_that_dies_without_a_word_marks_its_case_and_a_new_worker_goes_on(tmp_path):
    cs = C.make_cases(8, 2)
    calls = []

    def launcher(cases_path, cubin, out_dir, start):
        calls.append(start)
        if start == 0:                      # runs cases 0..2, dies on 3
            D.work(cs[:3], D.ModelDevice(), out_dir, 0)
            return 139
        return T.in_process(cases_path, "--dry-run", out_dir, start)

    results, _ = T.run_all(cs, "--dry-run", str(tmp_path), lambda *a: None, launcher=launcher)
    assert results[3]["status"] == "crash" and calls[:2] == [0, 4]
    assert all(r["status"] != "crash" for r in results[4:])


def test_after_max_faults_the_cases_left_are_not_run_and_say_so(tmp_path):
    cs = C.make_cases(80, 2)

    def launcher(cases_path, cubin, out_dir, start):
        with open(f"{out_dir}/results.jsonl", "a") as f:
            f.write(json.dumps({"i": start, "status": "fault", "error": "illegal instruction"}) + "\n")
        return 3

    results, _ = T.run_all(cs, "--dry-run", str(tmp_path), lambda *a: None, launcher=launcher)
    assert [r["status"] for r in results].count("fault") == T.MAX_FAULTS
    assert results[-1]["status"] == "not run"
    assert T.verdicts(cs, results, {}, lambda *a: None)["not_run"] == len(cs) - T.MAX_FAULTS


def test_the_command_replays_a_recording_and_refuses_dry_run_with_replay(tmp_path, capsys):
    cs, results, dumps = _dry_run(tmp_path)
    T.save(str(tmp_path), cs, results, dumps, {"device": "stand-in"})
    assert main(["gpu-check", "--family", "tma", "--replay", str(tmp_path), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["family"] == "tma" and rep["mismatches"] == 0 and rep["cases"] > 0
    assert main(["gpu-check", "--family", "tma", "--replay", str(tmp_path), "--dry-run"]) == 2
    assert "--dry-run and --replay exclude each other" in capsys.readouterr().err
    assert main(["gpu-check", "--family", "tma", "--replay", str(tmp_path / "work")]) == 2
    assert "no tma.npz there" in capsys.readouterr().err
