"""benchmarks/bench_mma.py still runs (a tiny batch; the figures themselves are not tested)."""

import importlib.util
import json
from pathlib import Path

import fragsim


def test_bench_mma_reports_every_form_on_both_archs(capsys):
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_mma.py"
    spec = importlib.util.spec_from_file_location("bench_mma", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--batch", "16", "--repeat", "1", "--json"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {(r["form"], r["arch"]) for r in rows} == {(f, a) for f in fragsim.FORMS for a in ("sm_80", "sm_90")}
    assert all(r["us_1_core"] > 0 and r["us_all_cores"] > 0 for r in rows)
