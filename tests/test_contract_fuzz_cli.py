"""Contract fuzz of the command line (issue 9): every subcommand, run in-process through
``fragsim.cli.main``, exits 0 or 2, never with a traceback, and an exit 2 prints exactly one line
on stderr.  Fixed argument lists (adversarial input classes: broken files, bad expressions, bad
numbers, unknown names) and Hypothesis mixes of valid and adversarial tokens.  ``pytest -s``
prints the figures."""

import contextlib
import io
import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from contract import EITHER, ERROR, FIGURES, OK, capped
from fragsim.cli import main

F32 = "m16n8k16.row.col.f32.f16.f16.f32"
TF32 = "m16n8k8.row.col.f32.tf32.tf32.f32"
FP8 = "m16n8k16.row.col.f32.e4m3.e5m2.f32"
F64 = "m16n8k16.row.col.f64.f64.f64.f64"
WG = "m64n64k16.f32.bf16.bf16"
_DATA = os.path.join(os.path.dirname(__file__), "data")
MOVM_DIR = os.path.join(_DATA, "hw_movmatrix", "nvidia_h100_sm90")      # recorded H100 data the replays read
WGMMA_DIR = os.path.join(_DATA, "wgmma")
GEMM_REC = os.path.join(_DATA, "gemm", "gemm_h100.json")


def run_cli(argv):
    """(exit code, stdout, stderr) of ``fragsim ARGV``, under the memory cap; an exception escaping
    main() is a traceback."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = capped(lambda: main(list(argv)), f"fragsim {' '.join(map(str, argv))[:200]}")
        except SystemExit as e:            # argparse: --help (0) and usage errors (2)
            code = e.code
    return code, out.getvalue(), err.getvalue()


# exit codes that are answers, not errors: `check` finds the address math wrong (1)
ANSWERS = {"check": (1,)}


def check_cli(argv, expect=EITHER):
    code, out, err = run_cli(argv)
    what = f"fragsim {' '.join(map(str, argv))[:300]}"
    answers = ANSWERS.get(argv[0], ()) if argv else ()
    assert code in (0, 2) + answers, f"{what}: exit code {code}; stderr {err[-500:]!r}"
    assert "Traceback" not in err, f"{what}: {err[-1000:]}"
    if code == 2:
        assert err.count("\n") == 1 and err.endswith("\n") and err.strip(), f"{what}: not one line on stderr: {err!r}"
        assert expect != OK, f"{what}: a valid command failed: {err}"
    elif code == 0:
        assert expect != ERROR, f"{what}: an invalid command succeeded: {out[:300]!r}"
        if "--json" in argv and not any(a in ("-h", "--help") for a in argv):
            json.loads(out)
    return code


# -- files the commands read -----------------------------------------------------------------------

def _file_specs():
    """(name, role, write(path)): role "a"/"b"/"c" is a good matrix of F32, "addrs" good addresses
    for conflicts, None a broken or wrong file."""
    rng = np.random.default_rng(0)

    def npy(arr, pickle=False):
        return lambda path: np.save(path, arr, allow_pickle=pickle)

    def raw(data):
        return lambda path: path.write_bytes(data)

    good = [("a.npy", "a", npy(rng.standard_normal((16, 16)).astype(np.float32))),
            ("b.npy", "b", npy(rng.standard_normal((16, 8)))), ("c.npy", "c", npy(np.zeros((16, 8), np.float16))),
            ("a_bits.npy", "a", npy(rng.integers(0, 1 << 16, (16, 16), dtype=np.uint16))),
            ("a_nan.npy", "a", npy(np.full((16, 16), np.nan, np.float32))), ("a_inf.npy", "a", npy(np.full((16, 16), -np.inf))),
            ("a_huge.npy", "a", npy(np.full((16, 16), 1e300))), ("addrs.npy", "addrs", npy(np.arange(64, dtype=np.uint32) * 16)),
            ("addrs_int8.npy", "addrs", npy(np.zeros(32, np.int8))),
            ("addrs.txt", "addrs", raw(("# two instructions\n" + " ".join(hex(16 * i) for i in range(32)) + "\n"
                                        + ", ".join(str(16 * i) for i in range(32)) + "\n").encode())),
            ("text_crlf.txt", "addrs", raw(" ".join(["0"] * 32).encode().replace(b" ", b"\r\n")))]
    bad = [("a_wrong_shape.npy", npy(np.zeros((16, 8)))), ("a_3d.npy", npy(np.zeros((2, 16, 16)))),
           ("a_0d.npy", npy(np.array(1.0))),
           ("a_complex.npy", npy(np.zeros((16, 16), complex))), ("a_bool.npy", npy(np.zeros((16, 16), bool))),
           ("a_str.npy", npy(np.full((16, 16), "x"))), ("a_negative.npy", npy(np.full((16, 16), -1, np.int16))),
           ("a_wide.npy", npy(np.full((16, 16), 1 << 20))), ("a_longdouble.npy", npy(np.zeros((16, 16), np.longdouble))),
           ("a_struct.npy", npy(np.zeros((16, 16), [("x", "i4")]))), ("addrs_float.npy", npy(np.arange(32.0))),
           ("addrs_31.npy", npy(np.arange(31) * 4)), ("addrs_3d.npy", npy(np.zeros((1, 1, 32), np.int64))),
           ("addrs_u64.npy", npy(np.full(32, 2**63, np.uint64))), ("addrs_neg.npy", npy(np.full(32, -4, np.int64))),
           ("addrs_empty.npy", npy(np.zeros(0, np.int64))), ("objects.npy", npy(np.array([1, None], dtype=object), True)),
           ("two.npz", lambda path: np.savez(path, a=np.zeros((16, 16)))),
           ("empty.npy", raw(b"")), ("empty.txt", raw(b"")), ("binary.txt", raw(bytes(range(256)))),
           ("truncated.npy", raw(np.lib.format.magic(1, 0) + b"{'descr': '<f8', 'fortran_order': False, 'shape': (16, 16), }")),
           ("garbage.npy", raw(b"\x93NUMPY\x01\x00garbage")), ("text_bad.txt", raw(b"0 16 32 zz\n")),
           ("text_31.txt", raw(" ".join(["0"] * 31).encode())),
           ("text_huge.txt", raw(" ".join(["18446744073709551616"] * 32).encode())),
           ("text_float.txt", raw(" ".join(["1.5"] * 32).encode())), ("text_nul.txt", raw(b"0\x00" * 32)),
           ("text_bom.txt", raw(b"\xef\xbb\xbf" + " ".join(["0"] * 32).encode())),
           ("missing.npy", None), ("folder", None), ("/dev/null", None)]
    return good + [(name, None, write) for name, write in bad]


FILE_ROLES = {name: role for name, role, _ in _file_specs()}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """name -> (path, role) of every file of _file_specs, written."""
    d = tmp_path_factory.mktemp("cli_files")
    out = {}
    for name, role, write in _file_specs():
        path = d / name if name not in ("folder", "/dev/null") else (d if name == "folder" else name)
        if write is not None:
            write(path)
        out[name] = (str(path), role)
    return out


# -- the fixed classes -----------------------------------------------------------------------------

def classes(f, out):
    """(label, argv, expect) with ``f(name)`` the path of a prepared file and ``out`` a writable folder."""
    yield from [
        ("layout grid", ["layout", F32, "A"], OK), ("layout by lane", ["layout", TF32, "b", "--by-lane"], OK),
        ("layout json", ["layout", F32, "c", "--json"], OK), ("layout bad operand", ["layout", F32, "E"], ERROR),
        ("layout empty form", ["layout", "", "A"], ERROR), ("layout zero-width space", ["layout", F32 + "\u200b", "A"], ERROR),
        ("layout unmodelled form", ["layout", "m8n8k16.row.col.s32.s8.u8.s32", "A"], ERROR),
        ("layout missing operand", ["layout", F32], ERROR), ("layout extra argument", ["layout", F32, "A", "B"], ERROR),
        ("layout unknown option", ["layout", F32, "A", "--bogus"], ERROR), ("layout help", ["layout", "--help"], OK),
        ("layout movmatrix", ["layout", "movmatrix"], OK), ("layout movmatrix json", ["layout", "MOVMATRIX.trans", "--json"], OK),
        ("layout movmatrix ptx svg", ["layout", "movmatrix.sync.aligned.m8n8.trans.b16", "--svg", out + "/m.svg"], OK),
        ("layout movmatrix operand", ["layout", "movmatrix", "A"], ERROR),
        ("layout movmatrix by lane", ["layout", "movmatrix", "--by-lane"], ERROR),
        ("layout movmatrix png named svg", ["layout", "movmatrix", "--png", out + "/m.svg"], ERROR),
        ("layout movmatrix untransposed", ["layout", "movmatrix.sync.aligned.m8n8.b16"], ERROR),
        ("layout wgmma grid", ["layout", WG, "D"], OK), ("layout wgmma by lane", ["layout", WG, "a", "--by-lane"], OK),
        ("layout wgmma json", ["layout", WG, "C", "--json"], OK), ("layout wgmma B", ["layout", WG, "B"], ERROR),
        ("layout cols", ["layout", WG, "D", "--cols", "0..31"], OK),
        ("layout cols past N", ["layout", WG, "D", "--cols", "60..64"], ERROR),
        ("layout cols junk", ["layout", F32, "A", "--cols", "0..x"], ERROR),
        ("layout width 0", ["layout", F32, "A", "--width", "0"], OK),
        ("layout width -1", ["layout", F32, "A", "--width", "-1"], ERROR),
        ("layout cols with json", ["layout", F32, "A", "--json", "--cols", "1"], ERROR),
        ("no such command", ["bogus"], ERROR), ("version", ["--version"], OK), ("top help", ["--help"], OK),
    ]
    for name, role in FILE_ROLES.items():
        path = f(name)
        argv = ["mma", F32, "--a", path if role != "b" else f("a.npy"), "--b", path if role == "b" else f("b.npy")]
        if role == "c":
            argv = ["mma", F32, "--a", f("a.npy"), "--b", f("b.npy"), "--c", path]
        yield (f"mma operand file {name}", argv, OK if role in ("a", "b", "c") else ERROR)
        gemm = ["gemm", F32, "--a", f("a.npy"), "--b", f("b.npy"), "-o", out + "/d.npy"]
        gemm[{"b": 5, "c": 5}.get(role, 3)] = path
        if role == "c":
            gemm[4:6] = ["--b", f("b.npy"), "--c", path]
        yield (f"gemm operand file {name}", gemm, OK if role in ("a", "b", "c") else ERROR)
        yield (f"conflicts file {name}", ["conflicts", "ld.shared.b32" if "int8" in name else "ldmatrix.x4",
                                           "--addrs-file", path],
               OK if role == "addrs" else EITHER if name == "a_wide.npy" else ERROR)   # 2**20: aligned addresses
    yield from [
        ("mma json", ["mma", F32, "--a", f("a.npy"), "--b", f("b.npy"), "--json"], OK),
        ("mma explain", ["mma", F32, "--a", f("a.npy"), "--b", f("b.npy"), "--explain", "3", "5"], OK),
        ("mma explain json on sm_80", ["mma", F32, "--a", f("a.npy"), "--b", f("b.npy"), "--explain", "15", "7",
                                       "--json", "--arch", "a100"], OK),
        ("mma explain row -1", ["mma", F32, "--a", f("a.npy"), "--b", f("b.npy"), "--explain", "-1", "0"], ERROR),
        ("mma explain col 8", ["mma", F32, "--a", f("a.npy"), "--b", f("b.npy"), "--explain", "0", "8"], ERROR),
        ("mma explain 10**30", ["mma", F32, "--a", f("a.npy"), "--b", f("b.npy"), "--explain", str(10**30), "0"], ERROR),
        ("mma explain not a number", ["mma", F32, "--a", f("a.npy"), "--b", f("b.npy"), "--explain", "x", "0"], ERROR),
        ("mma bad arch", ["mma", F32, "--a", f("a.npy"), "--b", f("b.npy"), "--arch", "sm_70"], ERROR),
        ("mma explain fp8", ["mma", FP8, "--a", f("a.npy"), "--b", f("b.npy"), "--explain", "3", "5"], OK),
        ("mma explain fp8 on sm_80", ["mma", FP8, "--a", f("a.npy"), "--b", f("b.npy"), "--explain", "3", "5",
                                      "--arch", "sm_80"], ERROR),
        ("mma explain f64 json", ["mma", F64, "--a", f("a.npy"), "--b", f("b.npy"), "--explain", "15", "7", "--json"], OK),
        ("mma form for other shapes", ["mma", TF32, "--a", f("a.npy"), "--b", f("b.npy")], ERROR),
        ("mma missing --b", ["mma", F32, "--a", f("a.npy")], ERROR),
        ("gemm json", ["gemm", F32, "--a", f("a.npy"), "--b", f("b.npy"), "-o", out + "/d.npy", "--json"], OK),
        ("gemm values descending", ["gemm", F32, "--a", f("a.npy"), "--b", f("b.npy"), "-o", out + "/d.npy",
                                    "--values", "--k-order", "descending"], OK),
        ("gemm k-order list", ["gemm", TF32, "--a", f("a.npy"), "--b", f("b.npy"), "-o", out + "/d.npy",
                               "--k-order", "1,0"], OK),
        ("gemm k-order repeated", ["gemm", TF32, "--a", f("a.npy"), "--b", f("b.npy"), "-o", out + "/d.npy",
                                   "--k-order", "1,1"], ERROR),
        ("gemm k-order words", ["gemm", F32, "--a", f("a.npy"), "--b", f("b.npy"), "-o", out + "/d.npy",
                                "--k-order", "up"], ERROR),
        ("gemm tile", ["gemm", F32, "--a", f("a.npy"), "--b", f("b.npy"), "-o", out + "/d.npy", "--tile", "16x8"], OK),
        ("gemm tile too big", ["gemm", F32, "--a", f("a.npy"), "--b", f("b.npy"), "-o", out + "/d.npy", "--tile",
                               "32x8"], ERROR),
        ("gemm tile junk", ["gemm", F32, "--a", f("a.npy"), "--b", f("b.npy"), "-o", out + "/d.npy", "--tile", "x"],
         ERROR),
        ("gemm output a folder", ["gemm", F32, "--a", f("a.npy"), "--b", f("b.npy"), "-o", out], ERROR),
        ("gemm output in no folder", ["gemm", F32, "--a", f("a.npy"), "--b", f("b.npy"), "-o", out + "/no/d.npy"],
         ERROR),
        ("gemm missing -o", ["gemm", F32, "--a", f("a.npy"), "--b", f("b.npy")], ERROR),
        ("gemm integer form, float values", ["gemm", "m16n8k16.row.col.s32.s8.s8.s32", "--a", f("a.npy"), "--b",
                                             f("b.npy"), "-o", out + "/d.npy"], ERROR),
        ("gemm bad arch", ["gemm", F32, "--a", f("a.npy"), "--b", f("b.npy"), "-o", out + "/d.npy", "--arch", "sm_70"],
         ERROR),
        ("conflicts expression", ["conflicts", "ldmatrix.x4", "--addrs", "(lane % 16) * 64 + (lane / 16) * 16"], OK),
        ("conflicts json", ["conflicts", "ld.shared.v4.b32", "--addrs", "lane * 16", "--json"], OK),
        ("conflicts mask condition", ["conflicts", "ld.shared.b32", "--addrs", "lane * 4", "--mask", "lane < 16"], OK),
        ("conflicts mask hex", ["conflicts", "ld.shared.b32", "--addrs", "lane * 4", "--mask", "0xffff"], OK),
        ("conflicts cp.async src", ["conflicts", "cp.async.ca.16", "--addrs", "lane * 16", "--src", "lane * 16 + base",
                                    "--var", "base=4096"], OK),
        ("conflicts let-binding", ["conflicts", "ldmatrix.x4", "--addrs", "row = lane % 16; row * 64 + (lane / 16) * 16"], OK),
        ("conflicts no op", ["conflicts", "--addrs", "lane"], ERROR),
        ("conflicts no addresses", ["conflicts", "ldmatrix.x4"], ERROR),
        ("conflicts bad op", ["conflicts", "ldmatrix.x3", "--addrs", "lane * 16"], ERROR),
        ("conflicts op with zero-width space", ["conflicts", "ldmatrix.x4\u200b", "--addrs", "lane * 16"], ERROR),
        ("conflicts 5,000-digit op size", ["conflicts", "cp.async.ca." + "1" * 5000, "--addrs", "lane * 16"], ERROR),
        ("conflicts both address sources", ["conflicts", "ldmatrix.x4", "--addrs", "lane", "--addrs-file", f("addrs.npy")],
         ERROR),
        ("conflicts deep parentheses", ["conflicts", "ld.shared.b32", "--addrs", "(" * 3000 + "lane * 4" + ")" * 3000], OK),
        ("conflicts 5,000-digit literal", ["conflicts", "ld.shared.b32", "--addrs", "lane + " + "7" * 5000], ERROR),
        ("conflicts 64-bit overflow", ["conflicts", "ld.shared.b32", "--addrs", "0x100000000 * 0x100000000 + lane * 4"], ERROR),
        ("conflicts division by zero", ["conflicts", "ld.shared.b32", "--addrs", "lane / (lane - 3)"], ERROR),
        ("conflicts empty expression", ["conflicts", "ld.shared.b32", "--addrs", ""], ERROR),
        ("conflicts unicode expression", ["conflicts", "ld.shared.b32", "--addrs", "lane \u00d7 4"], ERROR),
        ("conflicts misaligned", ["conflicts", "ld.shared.b32", "--addrs", "lane * 4 + 2"], ERROR),
        ("conflicts negative address", ["conflicts", "ld.shared.b32", "--addrs", "lane * 4 - 4"], ERROR),
        ("conflicts address past 32 bits", ["conflicts", "ld.shared.b32", "--addrs", "lane * 4 + 0x100000000"], ERROR),
        ("conflicts mask past 32 bits", ["conflicts", "ld.shared.b32", "--addrs", "lane * 4", "--mask", "0x1ffffffff"], ERROR),
        ("conflicts mask -1", ["conflicts", "ld.shared.b32", "--addrs", "lane * 4", "--mask", "-1"], ERROR),
        ("conflicts mask bad condition", ["conflicts", "ld.shared.b32", "--addrs", "lane * 4", "--mask", "lane <"], ERROR),
        ("conflicts mask empty", ["conflicts", "ld.shared.b32", "--addrs", "lane * 4", "--mask", ""], ERROR),
        ("conflicts mask on ldmatrix", ["conflicts", "ldmatrix.x4", "--addrs", "lane * 16", "--mask", "0xff"], ERROR),
        ("conflicts src on a load", ["conflicts", "ld.shared.b32", "--addrs", "lane * 4", "--src", "lane * 4"], ERROR),
        ("conflicts src negative", ["conflicts", "cp.async.ca.4", "--addrs", "lane * 4", "--src", "lane * 4 - 4"], ERROR),
        ("conflicts var without =", ["conflicts", "ld.shared.b32", "--addrs", "lane * k", "--var", "k"], ERROR),
        ("conflicts var float", ["conflicts", "ld.shared.b32", "--addrs", "lane * k", "--var", "k=1.5"], ERROR),
        ("conflicts var empty value", ["conflicts", "ld.shared.b32", "--addrs", "lane * k", "--var", "k="], ERROR),
        ("conflicts var lane", ["conflicts", "ld.shared.b32", "--addrs", "lane * 4", "--var", "lane=1"], ERROR),
        ("conflicts var bad name", ["conflicts", "ld.shared.b32", "--addrs", "lane * 4", "--var", "1k=2"], ERROR),
        ("conflicts var 2**64", ["conflicts", "ld.shared.b32", "--addrs", "lane * 4 + k", "--var", f"k={2**64}"], ERROR),
        ("conflicts var twice", ["conflicts", "ld.shared.b32", "--addrs", "lane * 4 + k", "--var", "k=0", "--var", "k=4"], ERROR),
        ("conflicts unused var", ["conflicts", "ld.shared.b32", "--addrs", "lane * 4", "--var", "k=4"], OK),
        ("conflicts var binds", ["conflicts", "ld.shared.b32", "--addrs", "k = 4; lane * k", "--var", "k=4"], ERROR),
        ("conflicts ncu without record", ["conflicts", "--ncu-measure"], ERROR),
        ("conflicts ncu record under a file", ["conflicts", "--ncu-measure", "--record", f("a.npy") + "/x"], ERROR),
        ("conflicts record without ncu", ["conflicts", "ld.shared.b32", "--addrs", "lane * 4", "--record", out], ERROR),
        ("conflicts ncu not installed", ["conflicts", "--ncu-measure", "--record", out + "/ncu"], EITHER),
    ]
    dry = ["gpu-check", "--dry-run", "--cases", "2", "--quiet", "--jobs", "1"]
    yield from [
        ("gpu-check dry run", dry + ["--forms", "ldmatrix.x1", "st.shared.u8"], OK),
        ("gpu-check dry run mma json", dry + ["--forms", TF32, "--json", "--arch", "sm_80"], OK),
        ("gpu-check record and keep", dry + ["--forms", "cp.async.ca.4", "--record", out + "/rec", "--keep", "1",
                                             "--json-file", out + "/report.json"], OK),
        ("gpu-check replay", ["gpu-check", "--replay", out + "/rec", "--cases", "1", "--quiet"], OK),
        ("gpu-check replay of a folder without corpora", ["gpu-check", "--replay", out + "/empty_dir"], ERROR),
        ("gpu-check replay of a file", ["gpu-check", "--replay", f("a.npy")], ERROR),
        ("gpu-check cases -1", dry + ["--cases", "-1"], ERROR), ("gpu-check cases text", dry + ["--cases", "x"], ERROR),
        ("gpu-check chunk 0", dry + ["--chunk", "0"], ERROR),
        ("gpu-check seed -1", dry + ["--seed", "-1", "--forms", "ldmatrix.x1"], ERROR),
        ("gpu-check jobs 0", dry + ["--jobs", "0", "--forms", "ldmatrix.x1"], ERROR),
        ("gpu-check jobs -2", dry + ["--jobs", "-2", "--forms", "ldmatrix.x1"], ERROR),
        ("gpu-check details -1", dry + ["--details", "-1", "--forms", "ldmatrix.x1"], ERROR),
        ("gpu-check record-cases -1", dry + ["--record-cases", "-1", "--forms", "ldmatrix.x1", "--record", out + "/r2"], ERROR),
        ("gpu-check unknown form", dry + ["--forms", "bogus"], ERROR),
        ("gpu-check ldmatrix.x3", dry + ["--forms", "ldmatrix.x3"], ERROR),
        ("gpu-check group", dry + ["--forms", "stmatrix"], OK), ("gpu-check bad arch", dry + ["--arch", "sm_70"], ERROR),
        ("gpu-check dry run and replay", dry + ["--replay", out], ERROR),
        ("gpu-check keep without record", dry + ["--keep", "3"], ERROR),
        ("gpu-check record-only without record", dry + ["--record-only"], ERROR),
        ("gpu-check json-file in a missing folder", dry + ["--json-file", out + "/no/such/x.json"], ERROR),
        ("gpu-check json-file is a folder", dry + ["--json-file", out], ERROR),
        ("gpu-check record under a file", dry + ["--record", f("a.npy") + "/x"], ERROR),
        ("gpu-check no GPU", ["gpu-check", "--cases", "1", "--quiet"], EITHER),
        ("gpu-check family movmatrix no GPU", ["gpu-check", "--family", "movmatrix", "--cases", "1"], EITHER),
        ("gpu-check family wgmma no GPU", ["gpu-check", "--family", "wgmma", "--cases", "1", "--quiet"], EITHER),
        ("gpu-check family gemm no GPU", ["gpu-check", "--family", "gemm", "--cases", "1", "--forms", TF32], EITHER),
        ("gpu-check family unknown", ["gpu-check", "--family", "hgmma"], ERROR),
        ("gpu-check family mma of a shared op", dry + ["--family", "mma", "--forms", "ldmatrix.x1"], ERROR),
        ("gpu-check family shared", dry + ["--family", "shared", "--forms", "st.shared.u8"], OK),
        ("gpu-check family movmatrix replay", ["gpu-check", "--family", "movmatrix", "--replay", MOVM_DIR], OK),
        ("gpu-check family movmatrix replay of an empty folder",
         ["gpu-check", "--family", "movmatrix", "--replay", out + "/empty_dir"], ERROR),
        ("gpu-check family movmatrix dry run", ["gpu-check", "--family", "movmatrix", "--dry-run"], ERROR),
        ("gpu-check family wgmma replay", ["gpu-check", "--family", "wgmma", "--replay", WGMMA_DIR, "--cases", "1"], OK),
        ("gpu-check family wgmma replay of a file", ["gpu-check", "--family", "wgmma", "--replay", f("a.npy")], ERROR),
        ("gpu-check family wgmma forms", ["gpu-check", "--family", "wgmma", "--forms", TF32], ERROR),
        ("gpu-check family wgmma cases -1", ["gpu-check", "--family", "wgmma", "--cases", "-1"], ERROR),
        ("gpu-check family wgmma jobs 0", ["gpu-check", "--family", "wgmma", "--jobs", "0"], ERROR),
        ("gpu-check family gemm replay", ["gpu-check", "--family", "gemm", "--replay", GEMM_REC, "--cases", "1",
                                          "--forms", TF32, "--json"], OK),
        ("gpu-check family gemm replay of a folder", ["gpu-check", "--family", "gemm", "--replay", out], ERROR),
        ("gpu-check family gemm replay of a .npy", ["gpu-check", "--family", "gemm", "--replay", f("a.npy")], ERROR),
        ("gpu-check family gemm replay no form", ["gpu-check", "--family", "gemm", "--replay", GEMM_REC, "--forms",
                                                  "bogus"], ERROR),
        ("gpu-check family gemm chunk", ["gpu-check", "--family", "gemm", "--chunk", "4"], ERROR),
        ("gpu-check family gemm replay and record", ["gpu-check", "--family", "gemm", "--replay", GEMM_REC,
                                                     "--record", out + "/g"], ERROR),
        ("gpu-check family gemm record-only without record", ["gpu-check", "--family", "gemm", "--record-only"], ERROR),
        ("tour without pictures", ["tour", "--out", out + "/tour", "--no-pictures", "--json"], OK),
        ("tour into a file", ["tour", "--out", f("a.npy"), "--no-pictures"], ERROR),
    ]
    bf16 = "m16n8k16.row.col.f32.bf16.bf16.f32"
    yield from [
        ("swizzle presets", ["swizzle", "--tile", "32x32 bf16", "--preset", "copy", "--preset", "a", "--form", bf16,
                             "--top", "2", "--warps", "1x1", "--no-xor"], OK),
        ("swizzle compare json", ["swizzle", "--tile", "32x32 bf16", "--preset", "rows", "--compare", "none", "2,4,3",
                                  "pitch=80", "xor:4^8", "--json"], OK),
        ("swizzle read expression", ["swizzle", "--tile", "16x64 f16", "--read", "ld.shared.v4.b32: lane * 16",
                                     "--no-xor"], OK),
        ("swizzle no tile", ["swizzle", "--preset", "copy"], ERROR),
        ("swizzle no access", ["swizzle", "--tile", "32x32 bf16"], ERROR),
        ("swizzle bad tile", ["swizzle", "--tile", "32x32 bf17", "--preset", "copy"], ERROR),
        ("swizzle huge tile", ["swizzle", "--tile", "99999999x99999999 f16", "--preset", "copy"], ERROR),
        ("swizzle tile 0 rows", ["swizzle", "--tile", "0x32 f16", "--preset", "copy"], ERROR),
        ("swizzle preset without form", ["swizzle", "--tile", "32x32 bf16", "--preset", "a"], ERROR),
        ("swizzle unknown preset", ["swizzle", "--tile", "32x32 bf16", "--preset", "bogus"], ERROR),
        ("swizzle read without colon", ["swizzle", "--tile", "32x32 bf16", "--read", "ldmatrix.x4 lane*64"], ERROR),
        ("swizzle bad compare", ["swizzle", "--tile", "32x32 bf16", "--preset", "copy", "--compare", "xor:4"], ERROR),
        ("swizzle max-padding huge", ["swizzle", "--tile", "32x32 bf16", "--preset", "copy", "--max-padding",
                                      str(2**63)], ERROR),
        ("swizzle max-padding negative", ["swizzle", "--tile", "32x32 bf16", "--preset", "copy", "--max-padding", "-16"], ERROR),
        ("swizzle top 0", ["swizzle", "--tile", "32x32 bf16", "--preset", "copy", "--top", "0"], ERROR),
        ("swizzle threads 48", ["swizzle", "--tile", "32x32 bf16", "--preset", "copy", "--threads", "48"], ERROR),
        ("swizzle var range reversed", ["swizzle", "--tile", "32x32 bf16", "--read", "ld.shared.v4.b32: k * 16 + lane * 16",
                                        "--var", "k=3..0"], EITHER),
        ("swizzle var huge range", ["swizzle", "--tile", "32x32 bf16", "--read", "ld.shared.v4.b32: (k & 1) * 16",
                                    "--var", f"k=0..{10**12}"], ERROR),
        ("swizzle warps 0x2", ["swizzle", "--tile", "32x32 bf16", "--preset", "a", "--form", bf16, "--warps", "0x2"], ERROR),
        ("swizzle warps huge", ["swizzle", "--tile", "32x32 bf16", "--preset", "copy", "--warps", "99999x99999"], ERROR),
        ("check load", ["check", "--form", bf16, "--operand", "A", "--tile", "16x16 bf16", "--load",
                        "ldmatrix.x4: (lane % 16) * 32 + (lane / 16) * 16"], OK),
        ("check copy", ["check", "--tile", "16x8 f16", "--copy", "cp.async.cg.16: lane * 16", "--src", "lane * 16"], EITHER),
        ("check wrong load", ["check", "--form", bf16, "--operand", "A", "--tile", "16x16 bf16", "--load",
                              "ldmatrix.x4: (lane % 16) * 32", "--json"], EITHER),
        ("check no tile", ["check", "--form", bf16, "--load", "ldmatrix.x4: lane * 16"], ERROR),
        ("check no instruction", ["check", "--tile", "16x16 bf16"], ERROR),
        ("check load without form", ["check", "--tile", "16x16 bf16", "--load", "ldmatrix.x4: lane * 16"], ERROR),
        ("check load with a store op", ["check", "--form", bf16, "--operand", "A", "--tile", "16x16 bf16", "--load",
                                        "stmatrix.x4: lane * 16"], ERROR),
        ("check bad at", ["check", "--form", bf16, "--operand", "A", "--tile", "16x16 bf16", "--load",
                          "ldmatrix.x4: (lane % 16) * 32 + (lane / 16) * 16", "--at", "x,y"], ERROR),
        ("check at outside", ["check", "--form", bf16, "--operand", "A", "--tile", "16x16 bf16", "--load",
                              "ldmatrix.x4: (lane % 16) * 32 + (lane / 16) * 16", "--at", "99999999999999999999,0"], ERROR),
        ("check bad regmap", ["check", "--form", bf16, "--operand", "A", "--tile", "16x16 bf16", "--load",
                              "ldmatrix.x4: (lane % 16) * 32 + (lane / 16) * 16", "--regmap", "0:0,0:0"], ERROR),
        ("check copy threads huge", ["check", "--tile", "16x8 f16", "--copy", "cp.async.cg.16: lane * 16", "--threads",
                                     str(2**63)], ERROR),
        ("check copy var huge range", ["check", "--tile", "16x8 f16", "--copy", "cp.async.cg.16: lane * 16 + p * 0",
                                       "--var", f"p=0..{10**12}"], ERROR),
        ("check mask bad", ["check", "--tile", "16x8 f16", "--copy", "st.shared.v4.b32: lane * 16", "--mask", "lane <"], ERROR),
        ("check wgmma", ["check", "--form", "m64n64k16.f32.bf16.bf16", "--operand", "A", "--tile", "64x64 bf16 swizzle=3,4,3",
                         "--wgmma", "start=k*32 lbo=16 sbo=1024 swizzle=128B", "--json"], OK),
        ("check wgmma wrong sbo", ["check", "--form", "m64n64k16.f32.bf16.bf16", "--operand", "B", "--tile",
                                   "64x64 bf16 swizzle=3,4,3", "--wgmma", "0x4000002000010000", "--steps", "1", "--major", "K",
                                   "--at", "0,0"], EITHER),
        ("check wgmma mn-major", ["check", "--form", "m64n64k16.f32.bf16.bf16", "--operand", "A", "--tile",
                                  "64x16 bf16 col swizzle=3,4,3", "--wgmma", "start=0 lbo=1024 sbo=1024 swizzle=128B",
                                  "--major", "MN"], EITHER),
        ("check wgmma per step", ["check", "--form", "m64n64k16.f32.bf16.bf16", "--operand", "A", "--tile", "64x32 bf16",
                                  "--wgmma", "d + k", "--wgmma", "d", "--var", "d=0x10"], EITHER),
        ("check wgmma missing sbo", ["check", "--form", "m64n64k16.f32.bf16.bf16", "--operand", "A", "--tile", "64x64 bf16",
                                     "--wgmma", "start=0 lbo=16"], ERROR),
        ("check wgmma mma form", ["check", "--form", bf16, "--operand", "A", "--tile", "64x64 bf16", "--wgmma", "0"], ERROR),
        ("check wgmma steps 0", ["check", "--form", "m64n64k16.f32.bf16.bf16", "--operand", "A", "--tile", "64x64 bf16",
                                 "--wgmma", "0", "--steps", "0"], ERROR),
        ("check wgmma major T", ["check", "--form", "m64n64k16.f32.bf16.bf16", "--operand", "A", "--tile", "64x64 bf16",
                                 "--wgmma", "0", "--major", "T"], ERROR),
        ("check wgmma with a mask", ["check", "--form", "m64n64k16.f32.bf16.bf16", "--operand", "A", "--tile", "64x64 bf16",
                                     "--wgmma", "0", "--mask", "1"], ERROR),
        ("check steps without wgmma", ["check", "--form", bf16, "--operand", "A", "--tile", "16x16 bf16", "--load",
                                       "ldmatrix.x4: lane * 16", "--steps", "2"], ERROR),
        ("check wgmma huge value", ["check", "--form", "m64n64k16.f32.bf16.bf16", "--operand", "A", "--tile", "64x64 bf16",
                                    "--wgmma", str(2**70)], ERROR),
        ("draw canonical", ["draw", "canonical", "--swizzle", "64B", "--major", "MN", "--rows", "64", "-o", out + "/c.svg"], OK),
        ("draw canonical desc", ["draw", "canonical", "--desc", "start=0x20 lbo=16 sbo=1024 swizzle=128B", "--rows", "8",
                                 "-o", out + "/c.png"], OK),
        ("draw canonical mn 8-bit", ["draw", "canonical", "--major", "MN", "--bits", "8", "-o", out + "/c.png"], ERROR),
        ("draw canonical rows 12", ["draw", "canonical", "--rows", "12", "-o", out + "/c.png"], ERROR),
        ("draw canonical desc expression", ["draw", "canonical", "--desc", "k * 2", "-o", out + "/c.png"], ERROR),
        ("draw movmatrix", ["draw", "movmatrix", "-o", out + "/m.png"], OK),
        ("draw movmatrix with an operand", ["draw", "movmatrix", "A", "-o", out + "/m.png"], ERROR),
        ("draw movmatrix bad extension", ["draw", "movmatrix", "-o", out + "/m.jpg"], ERROR),
        ("draw wgmma D", ["draw", "wgmma", "m64n8k16.f32.bf16.bf16", "D", "-o", out + "/w.png"], OK),
        ("draw wgmma A svg", ["draw", "wgmma", "m64n8k32.s32.u8.s8", "a", "-o", out + "/w.svg"], OK),
        ("draw wgmma B", ["draw", "wgmma", "m64n8k16.f32.bf16.bf16", "B", "-o", out + "/w.png"], ERROR),
        ("draw wgmma bad N", ["draw", "wgmma", "m64n40k32.s32.s8.s8", "D", "-o", out + "/w.png"], ERROR),
        ("draw wgmma mma form", ["draw", "wgmma", F32, "D", "-o", out + "/w.png"], ERROR),
        ("draw wgmma junk form", ["draw", "wgmma", "\x00", "C", "-o", out + "/w.png"], ERROR),
        ("draw wgmma operand Q", ["draw", "wgmma", "m64n8k8.f32.tf32.tf32", "Q", "-o", out + "/w.png"], ERROR),
        ("draw wgmma b1 form", ["draw", "wgmma", "m64n8k256.s32.b1.b1.and.popc", "D", "-o", out + "/w.png"], ERROR),
        ("draw wgmma no operand", ["draw", "wgmma", "m64n8k16.f32.bf16.bf16", "-o", out + "/w.png"], ERROR),
        ("draw wgmma bad extension", ["draw", "wgmma", "m64n8k16.f32.bf16.bf16", "D", "-o", out + "/w.jpg"], ERROR),
    ]


CLASS_IDS = [(label, expect) for label, _, expect in classes(lambda name: name, "OUT")]


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli_out")
    (d / "empty_dir").mkdir()
    return str(d)


@pytest.fixture(scope="module", autouse=True)
def figures(tmp_path_factory):
    """Runs the module in a scratch folder (a command may write into the current one) and prints
    the figures at the end."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path_factory.mktemp("cli_cwd"))
        yield
    print(f"\ncontract fuzz, CLI: {FIGURES['cli classes']} input classes ({FIGURES['cli classes clean']} clean), "
          f"{FIGURES['cli calls']} Hypothesis calls ({FIGURES['cli calls clean']} clean; "
          f"{FIGURES['cli calls refused']} exit 2)")


@pytest.mark.parametrize("index", range(len(CLASS_IDS)), ids=[label for label, _ in CLASS_IDS])
def test_command_class(index, files, out_dir):
    FIGURES["cli classes"] += 1
    label, argv, expect = list(classes(lambda n: files[n][0], out_dir))[index]
    check_cli(argv, expect)
    FIGURES["cli classes clean"] += 1


# -- Hypothesis: tokens valid and adversarial ------------------------------------------------------

JUNK = st.one_of(st.sampled_from(["", " ", "-", "--", "-1", "0", "1e9", "nan", "\u200b", "\x00", "x" * 5000, "\u00e9",
                                  "--json", "-h", "0x", "99999999999999999999999"]),
                 st.text(max_size=12))
FORMS_T = st.one_of(st.sampled_from([F32, TF32, "m16n8k16.row.col.f16.f16.f16.f16", "mma.sync.aligned." + F32,
                                     F32.upper(), "m16n8k16.f32.bf16.bf16.f32"]), JUNK)
OPS_T = st.one_of(st.sampled_from(["ldmatrix.x4", "ldmatrix.x2.trans", "stmatrix.x1", "ld.shared.u8", "ld.shared.v4.b32",
                                   "st.shared.v2.b32", "cp.async.ca.4", "cp.async.cg.16"]), JUNK)
EXPR_T = st.one_of(st.sampled_from(["lane * 16", "lane * 4", "(lane % 16) * 64 + (lane / 16) * 16", "lane * k",
                                    "swizzle(3, 4, 3, lane * 16)", "lane < 16", "0", "lane * 8 + 2", "lane - 1",
                                    "r = lane % 8; r * 128", "(unsigned)(lane - 1)", "lane ? 16 : 0"]), JUNK)


@st.composite
def layout_argv(draw):
    form = draw(st.one_of(FORMS_T, st.sampled_from(["movmatrix", "movmatrix.trans", " Movmatrix ", WG,
                                                    "wgmma.mma_async.sync.aligned.m64n8k32.s32.u8.u8"])))
    argv = ["layout", form] + draw(st.lists(st.one_of(st.sampled_from("ABCDabcd"), JUNK), max_size=1)) + draw(
        st.lists(st.sampled_from(["--by-lane", "--json"]), max_size=2))
    for flag, values in (("--cols", ["0..7", "5", "7..0", "0..999"]), ("--width", ["0", "40", "-3", "1"])):
        if draw(st.booleans()):
            argv += [flag, draw(st.one_of(st.sampled_from(values), JUNK.filter(lambda t: not t.startswith("-"))))]
    return argv


@st.composite
def mma_argv(draw, files):
    names = sorted(files)
    argv = ["mma", draw(st.one_of(FORMS_T, st.sampled_from([FP8, F64])))]
    for op in ("a", "b", "c"):
        if op != "c" or draw(st.booleans()):
            argv += [f"--{op}", files[draw(st.sampled_from(names))][0]]
    if draw(st.booleans()):
        argv += ["--explain", str(draw(st.integers(-2, 17))), str(draw(st.integers(-2, 9)))]
    if draw(st.booleans()):
        argv += ["--arch", draw(st.one_of(st.sampled_from(["sm_80", "H100", "hopper", "sm_70"]), JUNK))]
    return argv + draw(st.lists(st.just("--json"), max_size=1))


@st.composite
def gemm_argv(draw, files, out):
    names = sorted(files)
    argv = ["gemm", draw(FORMS_T)]
    for op in ("a", "b", "c"):
        if op != "c" or draw(st.booleans()):
            argv += [f"--{op}", files[draw(st.sampled_from(names))][0]]
    argv += ["-o", draw(st.sampled_from([out + "/d.npy", out, out + "/no/d.npy"]))]
    for flag, values in (("--k-order", ["ascending", "descending", "0", "1,0", "0,0", "-1"]),
                         ("--tile", ["16x8", "32x8", "8x8", "0x0"]), ("--arch", ["sm_80", "H100", "sm_70"])):
        if draw(st.booleans()):
            argv += [flag, draw(st.one_of(st.sampled_from(values), JUNK.filter(lambda t: not t.startswith("-"))))]
    return argv + draw(st.lists(st.sampled_from(["--json", "--values", "--quiet"]), max_size=2, unique=True))


@st.composite
def conflicts_argv(draw, files):
    argv = ["conflicts", draw(OPS_T)]
    if draw(st.integers(0, 3)):
        argv += ["--addrs", draw(EXPR_T)]
    else:
        argv += ["--addrs-file", files[draw(st.sampled_from(sorted(files)))][0]]
    for flag in ("--mask", "--src"):
        if draw(st.booleans()):
            argv += [flag, draw(st.one_of(EXPR_T, st.sampled_from(["0xffff", "0", "0xffffffff", "-1"])))]
    for _ in range(draw(st.integers(0, 2))):
        argv += ["--var", draw(st.one_of(st.sampled_from(["k=2", "k=0x10", "base=4096", "k=-1", "k", "=3", "lane=0"]), JUNK))]
    return argv + draw(st.lists(st.just("--json"), max_size=1))


@st.composite
def gpu_check_argv(draw, out):
    argv = ["gpu-check", "--dry-run", "--quiet", "--cases", draw(st.sampled_from(["0", "1", "3", "-1", "x"])),
            "--jobs", draw(st.sampled_from(["1", "1", "0", "-1"]))]
    argv += ["--forms"] + draw(st.lists(st.one_of(
        st.sampled_from(["ldmatrix.x1", "stmatrix.x2.trans", "ld.shared.u16", "cp.async.cg.16", "mma", TF32, "ldmatrix"]),
        JUNK.filter(lambda t: not t.startswith("-"))), min_size=1, max_size=2))
    for flag, values in (("--seed", ["0", "7", "-1", "x"]), ("--chunk", ["1", "0", "1000"]), ("--details", ["0", "-1"]),
                         ("--arch", ["sm_80", "sm_90", "sm_70"]), ("--json-file", [out + "/j.json", out + "/no/j.json", out])):
        if draw(st.booleans()):
            argv += [flag, draw(st.sampled_from(values))]
    return argv + draw(st.lists(st.just("--json"), max_size=1))


@st.composite
def gpu_check_family_argv(draw, out):
    """--family replays (no GPU) with options each family takes or refuses."""
    family = draw(st.sampled_from(["movmatrix", "wgmma", "gemm"]))
    source = {"movmatrix": MOVM_DIR, "wgmma": WGMMA_DIR, "gemm": GEMM_REC}
    argv = ["gpu-check", "--family", family, "--replay",
            draw(st.one_of(st.sampled_from(sorted(source.values()) + [out, out + "/none"]), JUNK)),
            "--cases", draw(st.sampled_from(["0", "1", "-1", "x"]))]
    if family == "gemm":        # a few forms only: a whole-recording replay takes seconds
        argv += ["--forms", draw(st.sampled_from([TF32, "m16n8k16.row.col.f32.bf16", "bogus"]))]
    for flag, values in (("--forms", [TF32, "bogus"]), ("--seed", ["0", "3"]), ("--keep", ["0", "5"]),
                         ("--chunk", ["8"]), ("--jobs", ["1", "0"]), ("--record", [out + "/fam"])):
        if draw(st.integers(0, 3)) == 0:
            argv += [flag, draw(st.sampled_from(values))]
    return argv + draw(st.lists(st.sampled_from(["--json", "--quiet", "--dry-run", "--probes"]), max_size=2))


TILES_T = st.one_of(st.sampled_from(["32x32 bf16", "16x64 f16 swizzle=3,4,3", "64x32 f16 row pitch=80", "16x16 f32 col",
                                      "8x8 u8", "32x32 bf16 swizzle=2,4,2 base=1024"]), JUNK)
BF16 = "m16n8k16.row.col.f32.bf16.bf16.f32"


@st.composite
def swizzle_argv(draw):
    argv = ["swizzle", "--tile", draw(TILES_T), "--no-xor"]
    for _ in range(draw(st.integers(0, 2))):
        presets = ["copy", "rows", "a", "b", "epilogue", "copy:cp.async.cg.16"]
        argv += ["--preset", draw(st.one_of(st.sampled_from(presets), JUNK))]
    if draw(st.booleans()):
        reads = ["ld.shared.v4.b32: lane * 16", "ldmatrix.x4: lane * 16 + k * 512"]
        argv += ["--read", draw(st.one_of(st.sampled_from(reads), JUNK))]
    for flag, values in (("--form", [BF16, F32]), ("--top", ["1", "0", "3"]), ("--max-padding", ["0", "32", "-16"]),
                         ("--var", ["k=0..1", "k=2", "k=1,3"]), ("--warps", ["1x1", "2x2", "0x1"]),
                         ("--threads", ["32", "64", "48"]),
                         ("--compare", ["none", "2,4,3", "pitch=80"])):
        if draw(st.integers(0, 3)) == 0:
            argv += [flag, draw(st.one_of(st.sampled_from(values), JUNK.filter(lambda t: not t.startswith("-"))))]
    return argv + draw(st.lists(st.just("--json"), max_size=1))


@st.composite
def check_argv(draw):
    kind = draw(st.sampled_from(["--load", "--store", "--copy"]))
    expr = {"--load": ["ldmatrix.x4: (lane % 16) * 32 + (lane / 16) * 16", "ld.shared.b32: lane * 4"],
            "--store": ["st.shared.b32: ((lane / 4) * 8 + (lane % 4) * 2) * 2", "stmatrix.x1: lane * 16"],
            "--copy": ["cp.async.cg.16: lane * 16", "st.shared.v4.b32: tid * 16"]}[kind]
    argv = ["check", "--tile", draw(TILES_T), kind, draw(st.one_of(st.sampled_from(expr), JUNK))]
    for flag, values in (("--form", [BF16, F32]), ("--operand", ["A", "B", "C"]), ("--at", ["0,0", "16,0", "m * 16,0"]),
                         ("--var", ["m=1", "p=0..3"]), ("--threads", ["32", "64", "48"]), ("--src", ["lane * 16", "0"]),
                         ("--mask", ["lane < 16", "0xffff"]), ("--global-pitch", ["64", "8"])):
        if draw(st.integers(0, 3)) == 0:
            argv += [flag, draw(st.one_of(st.sampled_from(values), JUNK.filter(lambda t: not t.startswith("-"))))]
    return argv + draw(st.lists(st.just("--json"), max_size=1))


@st.composite
def any_command_junk(draw):
    """Every subcommand the parser has (new ones too), with arbitrary arguments."""
    from fragsim.cli import COMMANDS
    name = draw(st.sampled_from([c.replace("_", "-") for c in COMMANDS if c != "tour"]))
    return [name] + draw(st.lists(st.one_of(JUNK, st.sampled_from(["--help", "--json", "--tile", "--form", F32, "A"])),
                                  max_size=4))


@st.composite
def any_argv(draw, files, out):
    # no arguments, or a first one starting with "-", runs the tour (the default command, slow with
    # its pictures): the fixed classes cover it
    junk = st.lists(JUNK, min_size=1, max_size=4).filter(lambda a: not a[0].startswith("-") or a[0] in ("-h", "--help"))
    return draw(st.one_of(layout_argv(), mma_argv(files), gemm_argv(files, out), conflicts_argv(files), gpu_check_argv(out),
                          gpu_check_family_argv(out),
                          swizzle_argv(),
                          check_argv(), any_command_junk(), junk))


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_hypothesis_commands(data, files, out_dir):
    """Any mix of valid and adversarial arguments: exit 0, or exit 2 with one line on stderr."""
    argv = data.draw(any_argv(files, out_dir), label="argv")
    FIGURES["cli calls"] += 1
    code = check_cli(argv)
    FIGURES["cli calls clean"] += 1
    FIGURES["cli calls refused"] += code == 2
