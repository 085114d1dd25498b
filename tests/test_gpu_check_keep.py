"""`fragsim gpu-check --record DIR --keep N`: recorded corpora cut down to a committed size by
``corpus.shrink``, with the rule that made the subset written into each file's metadata.

Runs the whole command path with fragsim standing in for the GPU (``--dry-run``); no GPU needed.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from fragsim.cli import main
from fragsim.gpu_check.table import bulk
from fragsim.gpu_check import corpus

MMA = "m16n8k8.row.col.f16.f16.f16.f16"
OPS = [MMA, "ldmatrix.x2.trans", "st.shared.v2.b32", "cp.async.ca.8"]


def _record(tmp_path, capsys, keep, cases=200, ops=OPS):
    rc = main(["gpu-check", "--dry-run", "--cases", str(cases), "--forms", *ops, "--probes",
               "--record", str(tmp_path), "--keep", str(keep), "--seed", "3", "--jobs", "1", "--json"])
    out = json.loads(capsys.readouterr().out)
    return rc, out, [corpus.load(p) for p in corpus.find(str(tmp_path))]


def _probe_cases(c):
    names = c.arrays["tag_names"]
    return sum(names[t].startswith("probe") for t in c.arrays["tag"])


def test_keep_writes_probe_cases_plus_at_most_n_others_and_names_the_rule(tmp_path, capsys):
    rc, _, files = _record(tmp_path, capsys, keep=25)
    assert rc == 0 and sorted(c.op for c in files) == sorted(OPS)
    for c in files:
        probes = _probe_cases(c)
        assert len(c) - probes <= 25 and len(c) == c.meta["cases"]
        assert probes == (46 if c.op == MMA else 0)      # every probe case of the form survives
        s = c.meta["subset"]
        assert s["how"] == corpus.SUBSET_RULE and "--keep 25" in s["command"]
        assert (s["keep"], s["seed"], s["kept"], s["of"], s["probes"]) == (25, 3, len(c), 200 + probes, probes)


def test_corpora_shrunk_by_keep_replay_bit_for_bit(tmp_path, capsys):
    _record(tmp_path, capsys, keep=25)
    rc = main(["gpu-check", "--replay", str(tmp_path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["mismatches"] == 0
    assert {r["op"]: r["cases"] for r in out["results"]} == {op: (25 + 46 if op == MMA else 25) for op in OPS}


def test_keep_draws_evenly_across_the_input_classes(tmp_path, capsys):
    _, _, files = _record(tmp_path, capsys, keep=35, ops=["ldmatrix.x4"], cases=600)
    (c,) = files
    counts = np.bincount(c.arrays["tag"], minlength=len(c.arrays["tag_names"]))
    used = counts[counts > 0]
    assert used.sum() == 35 and used.max() - used.min() <= 1


def test_a_case_that_mismatched_is_kept_whatever_n(tmp_path, capsys, monkeypatch):
    run = bulk.ModelBackend.run

    def one_flipped_bit(self, op, inp):
        hw = run(self, op, inp)
        hw["out"][123, 5, 0] ^= np.uint32(1 << 7)
        return hw

    monkeypatch.setattr(bulk.ModelBackend, "run", one_flipped_bit)
    rc, out, (c,) = _record(tmp_path, capsys, keep=4, ops=["ldmatrix.x1"])
    assert rc == 1 and out["mismatches"] == 1
    assert len(c) == 5 and c.meta["subset"]["always"] == 1
    monkeypatch.undo()
    rc = main(["gpu-check", "--replay", str(tmp_path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["mismatches"] == 1
    assert (out["results"][0]["first_mismatches"][0]["lane"], out["results"][0]["first_mismatches"][0]["reg"]) == (5, 0)


@pytest.mark.parametrize("argv, message", [
    (["--keep", "10"], "--keep needs --record DIR"),
    (["--record", "DIR", "--keep", "-1"], "--keep must be >= 0, got -1"),
])
def test_keep_without_record_or_negative_is_refused_in_one_line(argv, message, capsys):
    assert main(["gpu-check", "--dry-run", "--cases", "1", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_committed_hardware_corpora_say_how_their_subset_was_made():
    files = corpus.find(str(Path(__file__).parent / "data" / "hw"))
    assert files
    for p in files:
        s = corpus.load(p).meta["subset"]
        assert s["how"] == corpus.SUBSET_RULE and s["kept"] < s["of"], p
