"""fragsim conflicts: the per-phase report, JSON, address files, masks, variables, errors."""

import json

import numpy as np

from fragsim.cli import main


def run(capsys, *argv):
    code = main(["conflicts", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_report_lists_phases_collisions_and_ncu_totals(capsys):
    code, out, _ = run(capsys, "ldmatrix.x4", "--addrs", "(lane % 16) * 128 + (lane / 16) * 16")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "ldmatrix.x4  (ldmatrix.sync.aligned.m8n8.x4.shared.b16)"
    assert lines[2].startswith("phase 0  lanes 0-7") and "8 wavefronts" in lines[2]
    assert lines[3].startswith("    banks 0-3: 8 rows: 0x0 (lane 0), 0x80 (lane 1)")
    assert lines[-3].split() == ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "32"]
    assert lines[-2].split() == ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "28"]


def test_json_with_loop_variable_and_mask(capsys):
    code, out, _ = run(capsys, "st.shared.b32", "--addrs", "lane * 4 * k", "--var", "k=32",
                       "--mask", "lane < 4", "--json")
    d = json.loads(out)
    assert code == 0 and (d["wavefronts"], d["ideal"], d["conflicts"]) == (4, 1, 3)
    assert d["active_lanes"] == [0, 1, 2, 3]


def test_mask_as_hex_bits(capsys):
    code, out, _ = run(capsys, "ld.shared.v4.b32", "--addrs", "lane * 16", "--mask", "0xff", "--json")
    assert json.loads(out)["wavefronts"] == 1


def test_addrs_file_with_several_instructions_prints_a_table(capsys, tmp_path):
    f = tmp_path / "addrs.txt"
    f.write_text("\n".join(" ".join(hex(x) for x in row) for row in
                           [np.arange(32) * 4, np.arange(32) * 128]))
    code, out, _ = run(capsys, "ld.shared.b32", "--addrs-file", str(f))
    assert code == 0
    assert out.splitlines()[2].split() == ["0", "1", "1", "0"]
    assert out.splitlines()[3].split() == ["1", "32", "1", "31"]


def test_cp_async_source_expression(capsys):
    code, out, _ = run(capsys, "cp.async.ca.16", "--addrs", "lane * 16", "--src", "0", "--json")
    d = json.loads(out)
    assert code == 0 and d["wavefronts"] == 32 and d["exact"]


def test_misaligned_address_is_one_line_naming_the_lane(capsys):
    code, _, err = run(capsys, "ldmatrix.x4", "--addrs", "lane * 18")
    assert code == 2 and err.count("\n") == 1
    assert "lane 1: ldmatrix row address 0x12 is not 16-byte aligned" in err


def test_expression_error_names_the_position(capsys):
    code, _, err = run(capsys, "ld.shared.b32", "--addrs", "lane * (4")
    assert code == 2 and "position 9: expected ')'" in err


def test_missing_addresses_and_bad_var_are_errors(capsys):
    assert run(capsys, "ld.shared.b32")[0] == 2
    code, _, err = run(capsys, "ld.shared.b32", "--addrs", "lane", "--var", "k")
    assert code == 2 and "expected NAME=VALUE" in err


def test_ncu_measure_without_nsight_compute_is_one_line_and_exit_2(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    code, _, err = run(capsys, "--ncu-measure", "--record", str(tmp_path / "rec"))
    assert code == 2 and err.count("\n") == 1 and "ncu" in err
