"""benchmarks/bench_pack.py still runs (a tiny batch, one sample; the figures themselves are not tested)."""

import importlib.util
import json
from pathlib import Path


def test_bench_pack_reports_pack_mma_and_unpack_per_form_and_batch(capsys):
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_pack.py"
    spec = importlib.util.spec_from_file_location("bench_pack", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--batch", "1", "3", "--repeat", "1", "--budget", "0", "--json", "--forms", "tf32", "m64n64"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["form"], r["batch"]) for r in rows] == [("m16n8k8.row.col.f32.tf32.tf32.f32", 1),
                                                      ("m16n8k8.row.col.f32.tf32.tf32.f32", 3),
                                                      ("m64n64k16.f32.bf16.bf16", 1), ("m64n64k16.f32.bf16.bf16", 3)]
    mma_cols = {"pack A", "pack B", "pack C", "mma", "unpack D"}
    assert all(mma_cols <= r.keys() for r in rows[:2]) and all(r[c] > 0 for r in rows[:2] for c in mma_cols)
    assert all({"pack A", "pack C", "unpack D"} <= r.keys() and "mma" not in r for r in rows[2:])
