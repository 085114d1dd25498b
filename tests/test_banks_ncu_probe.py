"""The Nsight Compute probe for bank conflicts: one kernel per instruction, each holding exactly
that one shared-memory instruction; CSV parsing of ncu's output.  (Running it needs a GPU; see
fragsim/gpu_check/ncu_probe.py and bank_cases.py.)"""

import gzip
import os
import re
import shutil
import subprocess

import pytest

from fragsim.gpu_check import bank_cases, ncu_probe, ncu_run
from fragsim.instructions.shared_ops import parse_shared_op

DATA = os.path.join(os.path.dirname(__file__), "data", "banks")


def test_probe_has_one_kernel_per_op_with_the_ptx_instruction():
    src = ncu_probe.probe_source()
    for op in ncu_probe.OPS:
        body = src.split(f"void __launch_bounds__(32) {ncu_probe.kernel_name(op)}(")[1].split("\n}\n")[0]
        o = parse_shared_op(op)
        ptx = re.findall(r'asm volatile\("([a-z.0-9]+)', body)
        want = {"ldsm": f"ldmatrix.sync.aligned.m8n8.x{o.num}", "stsm": f"stmatrix.sync.aligned.m8n8.x{o.num}",
                "ld": "ld.shared.", "st": "st.shared.", "ldgsts": "cp.async."}[o.kind]
        assert ptx[0].startswith(want) and (".trans" in ptx[0]) == o.trans


def test_recorded_h200_sass_holds_exactly_one_shared_instruction_per_kernel():
    sass = gzip.open(os.path.join(DATA, "probe_sass_h200.txt.gz"), "rt").read()
    found = ncu_probe.check_sass(sass)
    assert found["ldmatrix.x4"] == ["LDSM"] and found["cp.async.cg.16"] == ["LDGSTS"]


def test_sass_check_rejects_a_second_shared_access():
    sass = gzip.open(os.path.join(DATA, "probe_sass_h200.txt.gz"), "rt").read()
    i = sass.index("LDSM.16.M88.4")
    broken = sass[:i] + "LDS R0, [R2] ;\n        /*0000*/  " + sass[i:]
    with pytest.raises(RuntimeError, match="exactly one LDSM"):
        ncu_probe.check_sass(broken)


def test_never_executed_padding_is_not_counted():
    # ptxas pads LDGSTS with `@!PT LDS RZ, [RZ]` (predicate never true)
    text = ("Function : f\n  /*0120*/  @!PT LDS RZ, [RZ] ;\n  /*0150*/  LDGSTS.E [R7], desc[UR6][R4.64] ;\n")
    assert ncu_probe.sass_functions(text) == {"f": ["LDGSTS"]}


def test_ncu_csv_rows_group_by_launch_in_order():
    text = ('==PROF== Connected\n"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
            '"1","probe_x","m.sum","","1,024"\n"0","probe_x","m.sum","","3"\n"0","probe_x","n.sum","","2"\n')
    assert ncu_run.parse_ncu_csv(text) == [("probe_x", {"m.sum": 3.0, "n.sum": 2.0}), ("probe_x", {"m.sum": 1024.0})]


@pytest.mark.parametrize("op", ncu_probe.OPS)
def test_generated_address_sets_are_aligned_and_inside_the_probe_buffer(op):
    size = parse_shared_op(op).bytes_per_addr
    for label, a, _mask, src in bank_cases.cases_for(op, seed=7, n_random=20, cp_sources=True)[:200]:
        assert a.min() >= 0 and a.max() + size <= ncu_probe.SMEM_BYTES and (a % size == 0).all(), label
        assert src.min() >= 0 and src.max() + size <= bank_cases.SRC_BYTES and (src % size == 0).all(), label


@pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")
def test_probe_compiles_for_sm_90(tmp_path):
    cu = tmp_path / "probe.cu"
    cu.write_text(ncu_probe.probe_source())
    r = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-o", str(tmp_path / "p.cubin"), str(cu)],
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
