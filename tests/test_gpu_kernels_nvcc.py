"""The cross-check kernels are generated from the instruction table and compile with nvcc.

Source-level facts need no CUDA; the compile tests need ``nvcc`` (skipped without it) and
read the machine code back with ``cuobjdump -sass`` when that is found (``$CUOBJDUMP``,
PATH, or next to nvcc): each kernel must hold the one instruction it exists to run.
"""

import os
import re
import shutil
import subprocess

import pytest

from fragsim import FORMS, lookup
from fragsim.gpu_check import kernels as K


def _asm(kernel):
    return re.search(r'asm volatile\("([^"]*)"', kernel.source).group(1)


@pytest.mark.parametrize("form", list(FORMS))
def test_mma_asm_operands_come_from_the_table(form):
    # mma.sync D, A, B, C: one brace group per operand, one PTX register per element register
    # (nregs(op) words, two per f64 register), in PTX order, and the instruction spelled as the
    # table spells it.
    f = lookup(form)
    asm = _asm(K.kernel_for(form))
    assert asm.startswith(f.ptx + " ")
    groups = re.findall(r"\{([^}]*)\}", asm)
    ptx_regs = [f.nregs(op) // f.words_per_elem(op) for op in "DABC"]
    assert [len(g.split(",")) for g in groups] == ptx_regs
    numbers = [int(x) for x in re.findall(r"%(\d+)", asm)]
    assert numbers == list(range(sum(ptx_regs)))


def test_f64_operands_are_doubles_made_of_two_words_low_first():
    src = K.kernel_for("m16n8k4.row.col.f64.f64.f64.f64").source
    assert '"d"(__hiloint2double(a[1], a[0]))' in src and '"d"(__hiloint2double(c[7], c[6]))' in src
    assert '"=d"(d3)' in src
    assert "d[6] = (unsigned)__double2loint(d3);" in src and "d[7] = (unsigned)__double2hiint(d3);" in src


@pytest.mark.parametrize("op,ptx,nregs", [
    ("ldmatrix.x1", "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];", 1),
    ("ldmatrix.x4.trans", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];", 4),
    ("stmatrix.x2", "stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};", 2),
    ("ld.shared.u8", "ld.shared.u8 %0, [%1];", 1),
    ("ld.shared.v4.b32", "ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];", 4),
    ("st.shared.v2.b32", "st.shared.v2.b32 [%0], {%1, %2};", 2),
    ("ld.shared.v4.u8", "ld.shared.v4.u8 {%0, %1, %2, %3}, [%4];", 4),
    ("ld.shared.v2.u16", "ld.shared.v2.u16 {%0, %1}, [%2];", 2),
    ("st.shared.v2.u8", "st.shared.v2.u8 [%0], {%1, %2};", 2),
    ("st.shared.v4.u16", "st.shared.v4.u16 [%0], {%1, %2, %3, %4};", 4),
    ("cp.async.cg.16", "cp.async.cg.shared.global [%0], [%1], 16;", 1),
])
def test_shared_asm_is_the_ptx_instruction(op, ptx, nregs):
    k = K.kernel_for(op)
    assert _asm(k) == ptx
    if k.kind in ("ldsm", "ld"):
        assert k.nregs_out() == nregs


@pytest.mark.parametrize("form", list(FORMS))
def test_mma_kernel_moves_registers_not_elements(form):
    # Registers in, registers out: lane l of case w reads words (w*32 + l)*nregs.. of each
    # operand and writes D the same way; no fragment layout enters the kernel.
    f = lookup(form)
    src = K.kernel_for(form).source
    strides = dict(re.findall(r"([ABCD]) \+ \(w \* FS_LANES \+ lane\) \* (\d+);", src))
    assert {op: int(n) for op, n in strides.items()} == {op: f.nregs(op) for op in "ABCD"}


def test_every_table_entry_and_shared_variant_has_a_kernel():
    ops = K.all_ops(90)
    assert set(FORMS) <= set(ops)
    assert set(K.SHARED_OPS) <= set(ops)
    assert len(K.SHARED_OPS) == 6 + 6 + 5 + 5 + 4 + 8     # ... cp.async, the vectors of 8/16-bit elements


def test_stmatrix_only_from_compute_capability_9():
    assert not [o for o in K.all_ops(80) if o.startswith("stmatrix")]
    assert "stmatrix.x4.trans" in K.all_ops(90)
    with pytest.raises(ValueError, match=r"lacks stmatrix.x4 \(needs 9.0\)"):
        K.module_source(80, ["stmatrix.x4"])


def test_unknown_op_is_refused_with_the_tables_message():
    with pytest.raises(ValueError, match="unknown shared-memory op"):
        K.kernel_for("ldmatrix.x3")


def _nvcc():
    return shutil.which("nvcc")


def _cuobjdump():
    cands = [os.environ.get("CUOBJDUMP"), shutil.which("cuobjdump")]
    nv = _nvcc()
    if nv:
        real = os.path.realpath(nv)
        cands.append(os.path.join(os.path.dirname(real), "cuobjdump"))
        try:  # a wrapper script: look inside for the real nvcc
            txt = open(nv, errors="ignore").read(4096)
            m = re.search(r"(/\S+)/nvcc", txt)
            if m:
                cands.append(os.path.join(m.group(1), "cuobjdump"))
        except OSError:
            pass
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def _sass_by_function(text):
    funcs, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            cur = m.group(1)
            funcs[cur] = []
            continue
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if cur and m and not (m.group(1) or "").startswith("@!PT"):
            funcs[cur].append(m.group(2))
    return funcs


def _expected_sass(k):
    """Opcode (with modifiers) the kernel's instruction must compile to."""
    if k.kind == "mma":
        return re.compile(rf"^{k.sass}(\.|$)")   # FFMA: m8n8k4 .f16, emulated on sm_80/sm_90
    if k.kind in ("ldsm", "stsm"):
        from fragsim.instructions import parse_shared_op
        op = parse_shared_op(k.op)
        base = "LDSM" if k.kind == "ldsm" else "STSM"
        suffix = "" if op.num == 1 else f"\\.{op.num}"
        return re.compile(rf"^{base}\.16\.{'MT88' if op.trans else 'M88'}{suffix}$")
    from fragsim.instructions import parse_shared_op
    nb = parse_shared_op(k.op).bytes_per_addr
    if k.kind == "ldgsts":
        width = {4: "", 8: r"\.64", 16: r"\.128"}[nb]
        bypass = r"\.BYPASS" if ".cg." in k.op else ""
        return re.compile(rf"^LDGSTS\.E{bypass}{width}$")
    mod = {1: r"\.U8", 2: r"\.U16", 4: "", 8: r"\.64", 16: r"\.128"}[nb]
    return re.compile(rf"^{'LDS' if k.kind == 'ld' else 'STS'}{mod}$")


@pytest.mark.skipif(_nvcc() is None, reason="nvcc not found on PATH")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_sources_compile_with_nvcc_and_hold_their_instruction(arch, tmp_path):
    cc = int(arch[3:])
    cu = tmp_path / f"fs_{arch}.cu"
    cu.write_text(K.module_source(cc))
    cubin = tmp_path / f"fs_{arch}.cubin"
    r = subprocess.run([_nvcc(), f"-arch={arch}", "-cubin", "-o", str(cubin), str(cu)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("compiled; cuobjdump not found, so the SASS was not read back")
    funcs = _sass_by_function(subprocess.run([tool, "-sass", str(cubin)], capture_output=True,
                                             text=True, check=True).stdout)
    for k in K.kernels(cc):
        assert k.name in funcs, f"{k.name} missing from the cubin"
        pat = _expected_sass(k)
        hits = [o for o in funcs[k.name] if pat.match(o)]
        assert hits, f"{k.op} on {arch}: no {pat.pattern} in {sorted(set(funcs[k.name]))}"
