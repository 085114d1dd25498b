"""Files named on the command line: a file that cannot be read (or written) as the option expects is
one line on stderr naming the option, the file and what was expected, with exit code 2; outputs
are checked before the run.  Also the `conflicts --var` rules (issue 9 items 3, 10 and 14)."""

import numpy as np
import pytest

from fragsim.cli import main

F32 = "m16n8k16.row.col.f32.f16.f16.f32"


def one_line_error(capsys, argv, *needles):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in err, err
    return err


@pytest.fixture
def files(tmp_path):
    (tmp_path / "empty.npy").write_bytes(b"")
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "binary.txt").write_bytes(b"0 16\n\x00\xff\xfe\x80")
    np.savez(tmp_path / "two.npz", a=np.zeros((16, 16)), b=np.zeros((16, 8)))
    np.save(tmp_path / "objects.npy", np.array([1, None], dtype=object))
    np.save(tmp_path / "b.npy", np.zeros((16, 8), np.float32))
    (tmp_path / "a_file").write_text("x")
    return tmp_path


@pytest.mark.parametrize("name, problem", [("empty.npy", "the file is empty"),
                                           ("two.npz", "a .npz archive"),
                                           ("missing.npy", "cannot read it (No such file or directory)"),
                                           ("objects.npy", "not a readable .npy array: holds Python objects"),
                                           (".", "cannot read it")])
def test_mma_operand_file_that_is_not_one_npy_array(files, capsys, name, problem):
    path = str(files / name)
    one_line_error(capsys, ["mma", F32, "--a", path, "--b", str(files / "b.npy")],
                   f"--a {path}: {problem}", "expected the 16x16 matrix A saved by numpy.save (.npy)")


def test_mma_operand_from_dev_null_is_an_empty_file(files, capsys):
    one_line_error(capsys, ["mma", F32, "--a", "/dev/null", "--b", str(files / "b.npy")],
                   "--a /dev/null: the file is empty")


@pytest.mark.parametrize("name, problem", [("missing.npy", "cannot read it (No such file or directory)"),
                                           ("empty.npy", "the file is empty"),
                                           ("empty.txt", "the file is empty"),
                                           ("binary.txt", "not a text file (byte 0xff at offset 6 is not UTF-8)"),
                                           ("objects.npy", "not a readable .npy array")])
def test_addrs_file_that_cannot_be_read(files, capsys, name, problem):
    path = str(files / name)
    one_line_error(capsys, ["conflicts", "ld.shared.b32", "--addrs-file", path],
                   f"--addrs-file {path}: {problem}", "expected byte offsets as text")


@pytest.mark.parametrize("value", ["9223372036854775808", "-9223372036854775809", "0x10000000000000000"])
def test_addrs_file_value_outside_int64_names_the_line(files, capsys, value):
    path = files / "big.txt"
    path.write_text(" ".join(["0"] * 32) + "\n" + " ".join([value] + ["0"] * 31) + "\n")
    one_line_error(capsys, ["conflicts", "ld.shared.b32", "--addrs-file", str(path)],
                   f"--addrs-file {path} line 2: {value} does not fit in 64-bit signed (long)")


def test_repeated_var_is_refused(capsys):
    one_line_error(capsys, ["conflicts", "ld.shared.b32", "--addrs", "lane * 4 + k", "--var", "k=0", "--var", "k=4"],
                   "--var k given twice (k=0 and k=4)")


@pytest.mark.parametrize("value", [str(2**63), str(-2**63 - 1), hex(2**64)])
def test_var_outside_int64_is_refused(capsys, value):
    one_line_error(capsys, ["conflicts", "ld.shared.b32", "--addrs", "lane * 4 + k", "--var", f"k={value}"],
                   f"--var k: {value} does not fit in 64-bit signed (long)")


def test_var_at_the_int64_edges_is_accepted(capsys):
    # k - k keeps the addresses lane * 4: the values themselves parse and evaluate
    for k in (2**63 - 1, -2**63):
        assert main(["conflicts", "ld.shared.b32", "--addrs", "lane * 4 + (k - k)", "--var", f"k={k}"]) == 0
    capsys.readouterr()


def test_gpu_check_json_file_is_checked_before_the_run(capsys, monkeypatch):
    from fragsim.gpu_check.table import bulk

    def no_run(*a, **k):
        raise AssertionError("the run started before the output path was checked")
    monkeypatch.setattr(bulk, "check_op", no_run)
    one_line_error(capsys, ["gpu-check", "--dry-run", "--cases", "1", "--forms", "ldmatrix.x1",
                            "--json-file", "/nonexistent/x.json"],
                   "--json-file /nonexistent/x.json: cannot write there (No such file or directory)")


def test_gpu_check_json_file_that_is_a_folder(tmp_path, capsys):
    one_line_error(capsys, ["gpu-check", "--dry-run", "--json-file", str(tmp_path)],
                   f"--json-file {tmp_path}: is a folder")


def test_gpu_check_record_under_a_file(files, capsys):
    path = str(files / "a_file" / "corpora")
    one_line_error(capsys, ["gpu-check", "--dry-run", "--cases", "1", "--record", path],
                   f"--record {path}: cannot write there (Not a directory)")


def test_gpu_check_replay_of_a_missing_folder(tmp_path, capsys):
    path = str(tmp_path / "nothing")
    one_line_error(capsys, ["gpu-check", "--replay", path], f"--replay {path}: no such folder",
                   "expected a folder of recorded corpora (*.npz)")


def test_ncu_measure_record_is_checked_before_looking_for_ncu(files, capsys):
    path = str(files / "a_file")
    one_line_error(capsys, ["conflicts", "--ncu-measure", "--record", path], f"--record {path}: exists and is not a folder")


def test_record_without_ncu_measure_is_refused(tmp_path, capsys):
    one_line_error(capsys, ["conflicts", "ld.shared.b32", "--addrs", "lane * 4", "--record", str(tmp_path)],
                   "--record goes with --ncu-measure")


def test_writable_file_check_leaves_no_file_and_keeps_an_existing_one(tmp_path):
    from fragsim.cli.args import writable_file

    new, old = tmp_path / "new.json", tmp_path / "old.json"
    old.write_text("kept")
    writable_file(str(new), "--json-file")
    writable_file(str(old), "--json-file")
    assert not new.exists() and old.read_text() == "kept"


def test_an_os_error_escaping_a_subcommand_is_one_line_naming_the_file(capsys, monkeypatch):
    import fragsim.cli.layout as layout

    def fails(args):
        raise PermissionError(13, "Permission denied", "/some/file")
    monkeypatch.setattr(layout, "run", fails)
    one_line_error(capsys, ["layout", F32, "A"], "fragsim layout: error: /some/file: Permission denied")


@pytest.mark.parametrize("write, problem", [
    (lambda p: np.savez(p, x=np.zeros(3)), "KeyError: 'meta'"),        # an .npz without the record's metadata
    (lambda p: p.write_bytes(b"garbage"), "File is not a zip file"),   # not a zip archive at all
    (lambda p: p.write_bytes(b"PK\x03\x04 damaged"), "BadZipFile"),    # a damaged archive
])
def test_gpu_check_replay_of_a_file_that_is_not_a_corpus_names_it(tmp_path, capsys, write, problem):
    path = tmp_path / "x.npz"
    write(path)
    one_line_error(capsys, ["gpu-check", "--replay", str(tmp_path)], f"{path}: not a fragsim GPU record", problem)
