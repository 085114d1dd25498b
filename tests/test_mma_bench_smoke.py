"""benchmarks/bench_mma.py still runs (a tiny batch; the figures themselves are not tested)."""

import importlib.util
import json
from pathlib import Path

import fragsim


def test_bench_mma_reports_every_form_on_every_arch_that_has_it(capsys):
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_mma.py"
    spec = importlib.util.spec_from_file_location("bench_mma", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--batch", "16", "--repeat", "1", "--json"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    want = {(f, a) for f, e in fragsim.FORMS.items() for a, cc in (("sm_80", 80), ("sm_90", 90)) if e.min_cc <= cc
            and not (a == "sm_80" and e.groups > 1)}     # sm_80 has no model of m8n8k4 .f16
    assert {(r["form"], r["arch"]) for r in rows} == want
    assert ("m16n8k16.row.col.f64.f64.f64.f64", "sm_80") not in want     # sm_90's f64 shape
    assert all(r["us_1_core"] > 0 and r["us_all_cores"] > 0 for r in rows)
