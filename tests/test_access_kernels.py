"""gpu_check's access-set kernels: generated from the table, compile with nvcc, tables that say what the
access set says, and the record/compare path of the Nsight Compute measurement (no GPU needed)."""

import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from fragsim.sim import smem as S
from fragsim.gpu_check.banks import access_kernels as K
from fragsim.gpu_check.banks import access as N
from fragsim.gpu_check.banks.ncu import COUNTERS, INSTRUCTIONS, OP_MISC_WAVEFRONTS
from fragsim.facts.hardware import WARP_LANES
from fragsim.search.swizzle_search import swizzle_search

CASES = {c.name: c for c in K.CASES}


def test_the_cases_cover_every_preset_and_instruction_family():
    ops = {g.op.name for c in K.CASES for g in c.access_set()}
    assert {"ldmatrix.x4", "ldmatrix.x4.trans", "ldmatrix.x2.trans", "cp.async.ca.4", "cp.async.ca.8",
            "cp.async.ca.16", "cp.async.cg.16", "st.shared.v4.b32", "stmatrix.x4", "st.shared.v2.b32",
            "st.shared.b32", "ld.shared.v4.b32"} <= ops
    assert {p for c in K.CASES for p, _ in c.parts} == {"copy", "a", "b", "epilogue"}
    assert all(K.AccessCase.from_json(c.to_json()) == c for c in K.CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_kernel_holds_one_asm_statement_per_instruction_slot(name):
    c = CASES[name]
    src = K.kernel_source(c)
    stmts = re.findall(r'asm volatile\("([a-z0-9.:]+) [^"]*"', src)
    ptx = {g.op.ptx: g.op.sass for g in c.access_set()}
    got: dict = {}
    for s in stmts:
        if s in ptx:
            got[ptx[s]] = got.get(ptx[s], 0) + 1
    assert got == K.expected_sass(c)
    assert ("__syncthreads()" in src) == any(g.op.is_store for g in c.access_set())


def _emulate(case, tile, t):
    """Run the kernel's tables through fragsim's simulator, warp slot by warp slot: the words each read
    returns, in OUT's layout."""
    s = case.access_set()
    plans, (_, _, _, no) = K.plan(case, s)
    smem = np.zeros(max(tile.size, 1), np.uint8)
    out = np.zeros(max(no, 1), np.int64)
    for p in plans:
        o = p.group.op
        J, W = p.index.shape
        for j in range(J):
            for w in range(W):
                cell = j * W + w
                m = int(t["MASK"][p.mask_off + cell])
                if not m:
                    continue
                a = t["ADDR"][p.addr_off + cell * 32: p.addr_off + (cell + 1) * 32].astype(np.int64)
                lanes = ((m >> np.arange(WARP_LANES)) & 1).astype(bool)
                if o.family == "cp.async":
                    off = t["SRC"][p.addr_off + cell * 32: p.addr_off + (cell + 1) * 32].astype(np.int64)
                    data = t["G"][off[:, None] + np.arange(o.bytes_per_addr)]
                    S.cp_async(smem, a, data, o.bytes_per_addr, lanes, o.level)
                elif o.is_store:
                    v = t["VALS"][p.vals_off + cell * 32 * o.nregs: p.vals_off + (cell + 1) * 32 * o.nregs]
                    v = v.reshape(32, o.nregs)
                    if o.family == "stmatrix":
                        S.stmatrix(smem, a, v, o.num, o.trans)
                    else:
                        S.st_shared(smem, a, v, o.bytes_per_addr, lanes, o.element_bytes)
                else:
                    r = S.ldmatrix(smem, a, o.num, o.trans) if o.family == "ldmatrix" else \
                        S.ld_shared(smem, a, o.bytes_per_addr, lanes, o.element_bytes)
                    out[p.out_off + cell * 32 * o.nregs: p.out_off + (cell + 1) * 32 * o.nregs] = r.reshape(-1)
    return out


SMALL_VECTORS = {"copy_st_v4u8_then_a": K.AccessCase("copy_st_v4u8_then_a", "64x16 f16", (
    ("copy", {"op": "st.shared.v4.u8"}), ("a", {"form": K.F16}))),
    "copy_st_v4u16_then_a": K.AccessCase("copy_st_v4u16_then_a", "64x16 f16", (
        ("copy", {"op": "st.shared.v4.u16"}), ("a", {"form": K.F16})))}


@pytest.mark.parametrize("name", sorted(CASES) + sorted(SMALL_VECTORS))
def test_tables_replayed_through_the_simulator_return_the_tagged_elements(name):
    """What the launch checks on the GPU holds in fragsim: the tables' writes then reads give `want`
    (stores of vectors of 8/16-bit elements too: one element a register)."""
    c = CASES.get(name) or SMALL_VECTORS[name]
    s = c.access_set()
    r = swizzle_search(c.base_tile(), s.reads, s.writes, top=1)
    for cand in (r.best, r.nothing):
        t = K.tables(c, cand.tile, s)
        got = _emulate(c, cand.tile, t)
        want = t["want"]
        assert np.array_equal(got[want >= 0], want[want >= 0])
        assert (want >= 0).sum() > 0


@pytest.mark.parametrize("name", ["a_bf16_64B_cg16", "ep_stmatrix_bf16", "b_kn_x4trans"])
def test_predict_is_the_searchs_figures_as_nsight_compute_counts_them(name):
    c = CASES[name]
    s = c.access_set()
    r = swizzle_search(c.base_tile(), s.reads, s.writes, top=1)
    for cand in (r.best, r.nothing):
        p = K.predict(c, K.layout_spec(cand.tile), 0)
        assert sum(p[k]["wavefronts"] for k in K.KINDS) == cand.ncu_wavefronts
        assert p["inst"]["ldsm"] + p["inst"]["stsm"] == sum(
            len(g) for g in s if g.op.family in ("ldmatrix", "stmatrix"))


def _synthetic(tmp_path, perturb=None):
    """A record whose counters are fragsim's own predictions (what a perfect GPU would show)."""
    plan, launches = [], []
    values: dict = {m: [] for m in N.METRICS}
    for name in ("a_bf16_64B_ca16_dense", "ep_v2_f32"):
        c = CASES[name]
        for role, spec in N.choose_layouts(c, 1, np.random.default_rng(0))[:2]:
            plan.append({"case": c.to_json(), "name": name, "role": role, "layout": spec})
            launches.append({"data_ok": True, "bad_words": 0, "smem_base": 0})
            p = K.predict(c, spec, 1 << 21)
            v = {COUNTERS[g][1]: p[g]["conflicts"] for g in COUNTERS}
            v.update({COUNTERS[g][0]: p[g]["wavefronts"] for g in ("ld", "st")})
            v.update({INSTRUCTIONS[kind]: p["inst"][kind] for kind in INSTRUCTIONS})
            v[OP_MISC_WAVEFRONTS] = 5
            # cp.async's "wavefronts" counter is the shared total: every group's, plus op_misc
            v[COUNTERS["ldgsts"][0]] = p["ld"]["wavefronts"] + p["st"]["wavefronts"] + p["ldgsts"]["wavefronts"] + 5
            for k in values:
                values[k].append(v[k])
    if perturb:
        values[perturb][0] += 1
    path = str(tmp_path / "synthetic.npz")
    N.save_record(path, {"gbase": 1 << 21, "device": {"device": "model"}}, plan, launches, values)
    return path


def test_a_record_that_matches_the_model_compares_clean(tmp_path):
    assert N.compare(_synthetic(tmp_path), verbose=False) == []


def test_a_record_that_differs_is_reported_with_both_figures(tmp_path):
    diffs = N.compare(_synthetic(tmp_path, perturb=COUNTERS["ld"][1]), verbose=False)
    (i, case, layout, what, p, m, exact), = diffs
    assert (i, case, what, m) == (0, "a_bf16_64B_ca16_dense", "ld conflicts", p + 1)


def test_plan_layouts_are_distinct_and_recordable():
    c = CASES["a_f16_128B_ca16"]
    ls = N.choose_layouts(c, 3, np.random.default_rng(0))
    keys = [(s["pitch"], tuple(s["xor"])) for _, s in ls]
    assert len(set(keys)) == len(keys) and [r for r, _ in ls][:3] == ["best", "none", "worst"]
    assert json.loads(json.dumps(ls))  # plain data


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found on PATH")
def test_the_module_compiles_with_nvcc_for_sm_90(tmp_path):
    cu = tmp_path / "access.cu"
    cu.write_text(K.module_source())
    r = subprocess.run([shutil.which("nvcc"), "-arch=sm_90", "-cubin", "-o", str(tmp_path / "access.cubin"), str(cu)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
