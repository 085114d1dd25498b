"""The Nsight Compute probe for bank conflicts: one kernel per instruction, each holding exactly
that one shared-memory instruction; the cp.async source buffer whose address it reports; the case
families; CSV and stdout parsing of ncu's output.  (Running it needs a GPU; see
fragsim/gpu_check/banks/probe.py, cases.py and cp_async_cases.py.)"""

import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from fragsim.gpu_check.banks import cases as bank_cases, cp_async_cases, measure, ncu, probe
from fragsim.instructions.shared_ops import parse_shared_op

DATA = os.path.join(os.path.dirname(__file__), "data", "banks")


def test_probe_has_one_kernel_per_op_with_the_ptx_instruction():
    src = probe.probe_source()
    for op in probe.OPS:
        body = src.split(f"void __launch_bounds__(FS_LANES) {probe.kernel_name(op)}(")[1].split("\n}\n")[0]
        o = parse_shared_op(op)
        ptx = re.findall(r'asm volatile\("([a-z.0-9]+)', body)
        want = {"ldsm": f"ldmatrix.sync.aligned.m8n8.x{o.num}", "stsm": f"stmatrix.sync.aligned.m8n8.x{o.num}",
                "ld": "ld.shared.", "st": "st.shared.", "ldgsts": "cp.async."}[o.kind]
        assert ptx[0].startswith(want) and (".trans" in ptx[0]) == o.trans


def test_recorded_h200_sass_holds_exactly_one_shared_instruction_per_kernel():
    sass = gzip.open(os.path.join(DATA, "probe_sass_h200.txt.gz"), "rt").read()
    with np.load(os.path.join(DATA, "ncu_banks_1.npz")) as z:    # the table the H200 probe was built from
        ops = [str(o) for o in z["ops"]]
    found = probe.check_sass(sass, ops)
    assert found["ldmatrix.x4"] == ["LDSM"] and found["cp.async.cg.16"] == ["LDGSTS"]


def test_recorded_h100_sass_holds_one_shared_instruction_per_kernel_of_every_op():
    sass = gzip.open(os.path.join(DATA, "probe_sass_h100.txt.gz"), "rt").read()
    assert set(probe.check_sass(sass)) == set(probe.OPS)


@pytest.mark.parametrize("op,sass", [("ld.shared.v2.u8", "LDS.U16"), ("ld.shared.v4.u8", "LDS"),
                                     ("ld.shared.v2.u16", "LDS"), ("ld.shared.v4.u16", "LDS.64"),
                                     ("st.shared.v2.u8", "STS.U16"), ("st.shared.v4.u8", "STS"),
                                     ("st.shared.v2.u16", "STS"), ("st.shared.v4.u16", "STS.64")])
def test_a_vector_of_8_or_16_bit_elements_is_one_access_of_its_whole_width_on_the_h100(op, sass):
    """ptxas (sm_90) issues one LDS/STS of the vector's width and unpacks/packs the elements in
    registers (PRMT, SGXT, LOP3), so the bank phases are those of that width."""
    text = gzip.open(os.path.join(DATA, "probe_sass_h100.txt.gz"), "rt").read()
    body = text.split(f"Function : {probe.kernel_name(op)}\n")[1].split("Function :")[0]
    assert re.findall(r"\b(?:LDS|STS)(?:\.[A-Z0-9]+)*(?= )", body) == [sass]


def test_sass_check_rejects_a_second_shared_access():
    sass = gzip.open(os.path.join(DATA, "probe_sass_h200.txt.gz"), "rt").read()
    i = sass.index("LDSM.16.M88.4")
    broken = sass[:i] + "LDS R0, [R2] ;\n        /*0000*/  " + sass[i:]
    with pytest.raises(RuntimeError, match="exactly one LDSM"):
        probe.check_sass(broken)


def test_never_executed_padding_is_not_counted():
    # ptxas pads LDGSTS with `@!PT LDS RZ, [RZ]` (predicate never true)
    text = ("Function : f\n  /*0120*/  @!PT LDS RZ, [RZ] ;\n  /*0150*/  LDGSTS.E [R7], desc[UR6][R4.64] ;\n")
    assert probe.sass_functions(text) == {"f": ["LDGSTS"]}


def test_ncu_csv_rows_group_by_launch_in_order():
    text = ('==PROF== Connected\n"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
            '"1","probe_x","m.sum","","1,024"\n"0","probe_x","m.sum","","3"\n"0","probe_x","n.sum","","2"\n')
    assert ncu.parse_ncu_csv(text) == [("probe_x", {"m.sum": 3.0, "n.sum": 2.0}), ("probe_x", {"m.sum": 1024.0})]


@pytest.mark.parametrize("op", probe.OPS)
def test_generated_address_sets_are_aligned_and_inside_the_probe_buffer(op):
    size = parse_shared_op(op).bytes_per_addr
    for label, a, _mask, src in bank_cases.cases_for(op, seed=7, n_random=20, cp_sources=True)[:200]:
        assert a.min() >= 0 and a.max() + size <= probe.SMEM_BYTES and (a % size == 0).all(), label
        assert src.min() >= 0 and src.max() + size <= probe.SRC_BYTES and (src % size == 0).all(), label


@pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")
def test_probe_compiles_for_sm_90(tmp_path):
    # -c: the host program (buffer allocation, src_base line) as well as the kernels
    cu = tmp_path / "probe.cu"
    cu.write_text(probe.probe_source())
    r = subprocess.run(["nvcc", "-arch=sm_90", "-c", "-o", str(tmp_path / "probe.o"), str(cu)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.parametrize("op", ["ldmatrix.x4", "ld.shared.v2.b32", "st.shared.b32"])
def test_a_measurement_cut_short_still_covers_every_kind_of_address_set(op):
    first = bank_cases.cases_for(op, seed=1, n_random=100)[:40]
    kinds = {bank_cases.case_category(c[0]) for c in first}
    want = {"stride", "broadcast", "duplicate", "halves", "padding", "swizzled tile"}
    if parse_shared_op(op).kind in ("ld", "st"):
        want.add("partial warp")
    assert want <= kinds


def test_probe_source_has_the_4_mib_source_buffer_and_prints_its_address():
    src = probe.probe_source()
    assert probe.SRC_BYTES == 4 << 20
    assert f"#define SRC_BYTES {4 << 20}\n" in src and "cudaMalloc(&d_src, SRC_BYTES)" in src
    assert src.count('printf("src_base %llu\\n", (unsigned long long)(size_t)d_src);') == 1
    assert "@" not in src   # every template field filled in


def test_probe_stdout_gives_launch_counts_and_the_source_buffer_address():
    out = ("==PROF== Connected to process 4242 (/tmp/probe)\nsrc_base 140556875333632\n"
           "==PROF== Profiling \"probe_cp_async_ca_4\" - 0: 0%....50%....100% - 9 passes\n"
           "launched 18 2\nlaunched 19 0\n==PROF== Disconnected from process 4242\n")
    assert ncu.parse_probe_stdout(out) == ({18: 2, 19: 0}, 140556875333632)
    assert ncu.parse_probe_stdout("launched 18 2\n") == ({18: 2}, None)


# Stand-in for Nsight Compute: runs nothing, but answers like `ncu ... probe CASES OPS SECONDS` does
# (the probe's stdout lines, one CSV row per launch and metric in --log-file), and notes its argv.
FAKE_NCU = """#!{python}
import sys
import numpy as np
from fragsim.gpu_check.banks.probe import OPS, kernel_name
args = sys.argv[1:]
if "--query-metrics" in args:
    sys.exit(0)
open({argv_log!r}, "a").write(" ".join(args) + "\\n")
log, metrics = args[args.index("--log-file") + 1], args[args.index("--metrics") + 1].split(",")
case_file, op_list = args[-3], args[-2]
words, pos, count = np.fromfile(case_file, np.uint32), 1, {{}}
for _ in range(int(words[0])):
    count[int(words[pos])] = int(words[pos + 1])
    pos += 2 + 65 * int(words[pos + 1])
print("==PROF== Connected to process 1")
print("src_base 140556875333632")
rows, launch = ['"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"'], 0
for op in map(int, op_list.split(",")):
    for _ in range(count.get(op, 0)):
        rows += [f'"{{launch}}","{{kernel_name(OPS[op])}}","{{m}}","","{{4 if "op_misc" in m else 6}}"' for m in metrics]
        launch += 1
    print(f"launched {{op}} {{count.get(op, 0)}}")
open(log, "w").write("\\n".join(rows) + "\\n")
"""


def _fake_tools(tmp_path):
    """A PATH holding the fake ncu and an nvcc that only creates its -o file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    argv_log = tmp_path / "ncu_argv.txt"
    (bin_dir / "ncu").write_text(FAKE_NCU.format(python=sys.executable, argv_log=str(argv_log)))
    (bin_dir / "nvcc").write_text(f"#!{sys.executable}\nimport sys\n"
                                  "open(sys.argv[sys.argv.index('-o') + 1], 'w').close()\n")
    for tool in ("ncu", "nvcc"):
        (bin_dir / tool).chmod(0o755)
    return str(bin_dir), argv_log


def test_run_ncu_passes_cache_control_and_returns_the_source_buffer_address(tmp_path, monkeypatch):
    bin_dir, argv_log = _fake_tools(tmp_path)
    monkeypatch.setenv("PATH", bin_dir)
    op = probe.OPS.index("cp.async.ca.16")
    case_file = str(tmp_path / "cases.bin")
    bank_cases.write_case_file(case_file, {"cp.async.ca.16": cp_async_cases.systematic("cp.async.ca.16")[:2]})
    launched, results, src_base = ncu.run_ncu(ncu.find_ncu(), "probe", case_file, [op], 1.0,
                                                  ["m.sum"], str(tmp_path), "t", cache_control="all")
    assert (launched, src_base) == ({op: 2}, 140556875333632)
    assert results == [("probe_cp_async_ca_16", {"m.sum": 6.0})] * 2
    assert "--cache-control all" in argv_log.read_text()


def test_measure_with_a_cp_family_records_the_source_buffer_address(tmp_path, monkeypatch):
    """The record of a --cp-family run holds the family's first cases of each cp.async op, the
    cache-control setting and meta["src_base"]; load_record adds the address to the offsets."""
    bin_dir, argv_log = _fake_tools(tmp_path)
    monkeypatch.setenv("PATH", bin_dir)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))   # measure's work folder
    path = measure.measure(str(tmp_path / "rec"), seed=0, budget=10, verbose=False, cp_family="validate",
                             cache_control="all", max_cases=3)
    assert os.path.basename(path) == "ncu_banks_cp_async_validate_0_cache_all.npz"
    assert "--cache-control all" in argv_log.read_text()
    rec = measure.load_record(path)
    assert rec["meta"]["src_base"] == 140556875333632
    assert (rec["meta"]["cp_family"], rec["meta"]["cache_control"]) == ("validate", "all")
    want = [(op, c) for op in probe.OPS if op.startswith("cp.async")
            for c in cp_async_cases.validate(op, 0)[:3]]
    assert [str(rec["ops"][k]) for k in rec["op"]] == [op for op, _ in want]
    assert [str(x) for x in rec["label"]] == [c[0] for _, c in want]
    assert (rec["src"] == np.array([c[3] for _, c in want]) + 140556875333632).all()
    assert (rec["addrs"] == np.array([c[1] for _, c in want])).all()


CP_OPS = [op for op in probe.OPS if parse_shared_op(op).kind == "ldgsts"]


@pytest.mark.parametrize("family", sorted(cp_async_cases.FAMILIES))
@pytest.mark.parametrize("op", CP_OPS)
def test_cp_async_families_give_aligned_in_bounds_cases_with_active_lanes(family, op):
    size = parse_shared_op(op).bytes_per_addr
    cases = cp_async_cases.FAMILIES[family](op, seed=3)
    # the two-line probes measure L1's line classes, which .cg bypasses
    assert cases or (family == "pairs" and ".cg." in op)
    for label, dst, mask, src in cases:
        assert dst.shape == src.shape == (32,), label
        assert dst.min() >= 0 and dst.max() + size <= probe.SMEM_BYTES and (dst % size == 0).all(), label
        assert src.min() >= 0 and src.max() + size <= probe.SRC_BYTES and (src % size == 0).all(), label
        assert 0 < mask <= bank_cases.FULL, label


def test_cp_async_validate_family_reaches_the_top_of_the_source_buffer():
    """Its sources span the whole buffer, so lines differ in every address bit the hash was measured on."""
    top = max(int(c[3].max()) for c in cp_async_cases.validate("cp.async.ca.4"))
    assert top >= probe.SRC_BYTES // 2


def test_systematic_family_holds_issue_9_two_lanes_of_one_line_in_two_width_phases():
    """cp.async.ca.16, mask 0x180, src = lane*16 + 16: lanes 7 and 8 read one 128-byte line."""
    lane = np.arange(32)
    hits = [c for c in cp_async_cases.systematic("cp.async.ca.16")
            if c[2] == 0x180 and (c[3] == lane * 16 + 16).all() and (c[1] == lane * 16).all()]
    assert "partial issue9 0x180 s=16" in [c[0] for c in hits]


def test_cp_async_families_other_than_cp_async_are_refused():
    with pytest.raises(ValueError, match="'ldmatrix.x4': the cp.async families need a cp.async op"):
        cp_async_cases.systematic("ldmatrix.x4")


def test_measure_refuses_an_unknown_family_before_looking_for_ncu():
    with pytest.raises(ValueError, match="cp_family 'shift': expected one of systematic, pairs, validate"):
        measure.measure("unused", cp_family="shift")


@pytest.mark.parametrize("record,family", [("1", "systematic"), ("pairs", "pairs"), ("validate", "validate")])
def test_cp_async_families_regenerate_the_h100_records_at_seed_0(record, family):
    """Every case a family gives for seed 0 was measured with exactly these addresses, in this order
    for the two-line and validation records.  (Run 1 also holds 30 ca.4 cases the systematic family
    no longer makes: lanes past 31 named in single- and two-lane masks.)"""
    with np.load(os.path.join(DATA, f"ncu_banks_h100_cp_async_{record}.npz")) as z:
        rec = {k: z[k] for k in ("ops", "op", "label", "addrs", "mask", "src")}
    for k, op in enumerate(str(o) for o in rec["ops"]):
        measured = [(str(label), tuple(d), int(m), tuple(s)) for label, d, m, s in
                    zip(*(rec[f][rec["op"] == k] for f in ("label", "addrs", "mask", "src")))]
        made = [(label, tuple(d), m, tuple(s)) for label, d, m, s in cp_async_cases.FAMILIES[family](op, 0)]
        if family == "systematic":
            assert set(made) <= set(measured), op
            assert len(made) == len(measured) - (30 if op.endswith(".4") else 0), op
        else:
            assert made == measured, op
