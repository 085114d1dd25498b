"""Contract fuzz at large sizes (issue 21, "Memory blow-up"): every public entry point and subcommand,
given valid input of a size whose work or result grows without bound, returns a sane result within
the memory cap (contract.memory_cap: 3 GiB of address space per call, over the library's own 2 GiB
of working memory, fragsim.validate.MAX_WORKING_BYTES) or refuses in one line naming what was too
large -- never a MemoryError, a machine brought down, or a traceback.  The entries are in
fuzz_entries_sizes.py; ``pytest -s`` prints the figures and the slowest call of each entry."""

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from contract import EITHER, FIGURES, MEMORY_CAP, OverCap, outcome
from fuzz_entries_sizes import ENTRIES
from test_contract_fuzz_cli import check_cli

F16 = "m16n8k16.row.col.f32.f16.f16.f32"
SLOWEST: dict = {}


@pytest.fixture(scope="module", autouse=True)
def figures():
    yield
    slow = ", ".join(f"{k} {v:.1f} s" for k, v in sorted(SLOWEST.items(), key=lambda kv: -kv[1])[:6])
    print(f"\ncontract fuzz, sizes: {FIGURES['size calls']} calls under a {MEMORY_CAP >> 30} GiB cap "
          f"({FIGURES['size calls refused']} refused); slowest: {slow}")


def _timed(name, fn):
    t0 = time.perf_counter()
    try:
        return fn()
    finally:
        SLOWEST[name] = max(SLOWEST.get(name, 0.0), time.perf_counter() - t0)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_the_largest_size_gives_a_result_within_the_cap_or_a_one_line_refusal(entry):
    FIGURES["size calls"] += 1
    got = _timed(entry.name, lambda: outcome(lambda: entry.run(entry.extreme), entry.names, EITHER, entry.name,
                                             check=lambda r: entry.check(r, entry.extreme)))
    FIGURES["size calls refused"] += got == "refused"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
@settings(max_examples=5, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_a_large_input_gives_a_result_within_the_cap_or_a_one_line_refusal(entry, data):
    kw = data.draw(entry.draw, label="sizes")
    FIGURES["size calls"] += 1
    got = _timed(entry.name, lambda: outcome(lambda: entry.run(kw), entry.names, EITHER, entry.name,
                                             check=lambda r: entry.check(r, kw)))
    FIGURES["size calls refused"] += got == "refused"


def test_the_cap_stops_an_allocation_past_it():
    """The cap itself: an allocation past it is a MemoryError, reported as a broken contract."""
    with pytest.raises(OverCap, match="needed more than the memory cap"):
        outcome(lambda: np.ones(MEMORY_CAP + (1 << 30), np.uint8), ("x",))
    assert outcome(lambda: int(np.ones(1 << 20, np.uint8).sum()), ("x",)) == "result"


# -- the command line -----------------------------------------------------------------------------------

def _npy(path, shape, dtype=np.uint16, claimed=None):
    """An .npy file of ``shape`` (zeros); ``claimed``: a header that claims that shape instead, with
    the data of ``shape`` after it."""
    if claimed is None:
        np.save(path, np.zeros(shape, dtype))
        return str(path)
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": np.dtype(dtype).str, "fortran_order": False,
                                                 "shape": claimed})
        f.write(np.zeros(shape, dtype).tobytes())
    return str(path)


@pytest.fixture(scope="module")
def big_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("sizes")
    return {
        "a_tall": _npy(d / "a_tall.npy", (1 << 14, 16)), "b_wide": _npy(d / "b_wide.npy", (16, 1 << 14)),
        "a": _npy(d / "a.npy", (16, 16)), "b": _npy(d / "b.npy", (16, 8)),
        "a_claims_2G": _npy(d / "a_claims.npy", (16, 16), claimed=(1 << 15, 1 << 15)),
        "b_claims_2G": _npy(d / "b_claims.npy", (16, 8), claimed=(1 << 15, 1 << 15)),
        "addrs_many": _npy(d / "addrs.npy", (1 << 18, 32), np.int64),
        "addrs_claims": _npy(d / "addrs_claims.npy", (32,), np.int64, claimed=(1 << 30, 32)),
        "out": str(d / "out.npy"), "png": str(d / "out.png"),
    }


def cli_cases(f):
    """(label, argv): commands whose work or output grows with a size on the command line."""
    big = "112x1024 f16"
    return [
        ("gemm 16384 x 16 x 16384", ["gemm", F16, "--a", f["a_tall"], "--b", f["b_wide"], "-o", f["out"], "--quiet"]),
        ("gemm A claims 32768 x 32768", ["gemm", F16, "--a", f["a_claims_2G"], "--b", f["b"], "-o", f["out"]]),
        ("mma B claims 32768 x 32768", ["mma", F16, "--a", f["a"], "--b", f["b_claims_2G"]]),
        ("conflicts 2**18 instructions", ["conflicts", "ld.shared.v4.b32", "--addrs-file", f["addrs_many"]]),
        ("conflicts a file that claims 2**30 instructions",
         ["conflicts", "ld.shared.v4.b32", "--addrs-file", f["addrs_claims"]]),
        ("conflicts --var 16384 x 16384", ["conflicts", "ldmatrix.x4", "--addrs", "lane * 16 + 0 * (a + b)",
                                           "--var", "a=0..16383", "--var", "b=0..16383"]),
        ("swizzle: the issue's tile", ["swizzle", "--tile", "2048x2048 f16", "--preset", "copy"]),
        ("swizzle: a full tile, widest space", ["swizzle", "--tile", big, "--preset", "copy", "--preset", "a", "--form", F16,
                                                "--xor-row-bits", "4", "--max-padding", "4096", "--threads", "1024"]),
        ("swizzle: 16384 x 4 instances", ["swizzle", "--tile", big, "--var", "i=0..16383", "--var", "warp=0..3",
                                          "--read", "ld.shared.v4.b32: (i % 112) * 2048 + warp * 0 + (lane % 8) * 16"]),
        ("check: 16384 passes of 1024 threads", ["check", "--tile", big, "--copy", "cp.async.cg.16: (tid + pass * 1024) * 16",
                                                 "--threads", "1024", "--var", "pass=0..16383"]),
        ("draw bank-map of a full tile", ["draw", "bank-map", big, "-o", f["png"]]),
        ("draw swizzle of a full tile", ["draw", "swizzle", "--tile", big + " swizzle=3,4,3", "-o", f["png"]]),
    ]


CLI_LABELS = [label for label, _ in cli_cases({k: "" for k in ("a_tall", "b_wide", "a", "b", "a_claims_2G", "b_claims_2G",
                                                              "addrs_many", "addrs_claims", "out", "png")})]


@pytest.mark.parametrize("index", range(len(CLI_LABELS)), ids=CLI_LABELS)
def test_a_large_command_runs_within_the_cap_or_exits_2_in_one_line(index, big_files):
    label, argv = cli_cases(big_files)[index]
    FIGURES["size calls"] += 1
    code = _timed("fragsim " + label, lambda: check_cli(argv, EITHER))
    FIGURES["size calls refused"] += code == 2
