"""The machine rows of the PTX instruction table (fragsim/ptx/isa/control.py, data.py, memory.py, tensor.py,
bulk.py, mbarrier.py): the instructions that act on the machine, each row a syntax line of the PTX ISA
run by a builder of fragsim.ptx.semantics (or refused, with the reason).

Read as the PTX ISA reads:

1. every instruction of a machine opcode in the PTX corpus (tests/data/ptx, docs/) is a form of exactly
   one row -- what keeps real kernels running;
2. no two rows of an opcode admit the same modifiers;
3. ptxas agrees: a kernel holding forms of a row (up to ``SAMPLES`` per row, fixed seed) assembles, for
   the row's target (sm_90a, or the row's own where it is newer);
4. fragsim's builder agrees: those forms load through the row's builder, and a refused row's forms are
   refused by every builder of the opcode (but the prefetches' no-op, which takes any address; and
   ``REFUSED_ON_PURPOSE``: forms a builder would misread);
5. a row names the builder of its own semantics module, and Nsight Compute's op where it counts one;
6. a row whose status names the ptx_kernels family is run by a kernel of that corpus.

Left out of 3 and 4, where a valid line is hard to build: ``brx.idx`` (a ``.branchtargets`` table), the
texture and surface instructions (``.texref``/``.surfref`` variables; refused whole), and the forms of
``ld``/``st`` in ``.param::func`` at a kernel's scope (``_line`` returns None).
"""

from __future__ import annotations

import functools
import os
import random
import re
import shutil
import subprocess
import tempfile
import zlib
from pathlib import Path

import pytest

from fragsim.ptx.isa import bulk, control, data, mbarrier, memory, tensor
from fragsim.ptx.parse import parse_file

MODULES = {"control": control, "data": data, "memory": memory, "tensor": tensor, "bulk": bulk,
           "mbarrier": mbarrier}
ROWS = tuple(r for m in MODULES.values() for r in m.ROWS)
OPCODES = sorted({r.opcode for r in ROWS})
REPO = Path(__file__).resolve().parent.parent
CORPUS = sorted((REPO / "tests" / "data" / "ptx").rglob("*.ptx")) + sorted((REPO / "docs").rglob("*.ptx"))
#: forms checked per row by ptxas and the builders
SAMPLES = 8
#: rows whose forms are listed in full for the overlap check (larger ones are sampled)
ENUMERABLE = 20000


def _rows(opcode: str):
    return [r for r in ROWS if r.opcode == opcode]


def _name(r) -> str:
    return f"{r.syntax.text}[{r.target}]"


# ---- 1. the corpus -------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_machine_instruction_of_the_corpus_is_a_form_of_exactly_one_row(path):
    bad = []
    for f in parse_file(path).functions.values():
        for ins in f.instructions:
            if ins.opcode not in OPCODES:
                continue
            hits = [r for r in _rows(ins.opcode) if r.syntax.match(ins.mods) is not None]
            if len(hits) != 1:
                bad.append(f"line {ins.line}: {ins.text}: {len(hits)} rows {[_name(r) for r in hits]}")
    assert not bad, "\n".join(bad[:20])


# ---- 2. no overlap -------------------------------------------------------------------------------------

def _forms(row, n: int | None = None) -> list[tuple[str, ...]]:
    """Every form of ``row`` (n None and enumerable), or up to ``n`` of them drawn with a fixed seed."""
    s = row.syntax
    if n is None and s.count() <= ENUMERABLE:
        return list(s.forms())
    k = n or SAMPLES * 8
    if s.count() <= k:
        return list(s.forms())
    rng = random.Random(zlib.crc32(f"{row.syntax.text}|{row.target}|{sorted(row.syntax.vocab.items())}".encode()))
    out: list[tuple[str, ...]] = []
    seen = set()
    while len(out) < k:
        pick: list[str] = []
        for t in s.tokens:
            choices = ([None] if t.optional else []) + list(t.spellings)
            c = rng.choice(choices)
            if c is not None:
                pick.extend(c)
        f = tuple(pick)
        if f not in seen:
            seen.add(f)
            out.append(f)
    return out


@pytest.mark.parametrize("opcode", OPCODES)
def test_no_two_rows_of_an_opcode_admit_the_same_modifiers(opcode):
    rows = _rows(opcode)
    bad = []
    for r in rows:
        for form in _forms(r):
            others = [o for o in rows if o is not r and o.syntax.match(form) is not None]
            if others:
                bad.append(f"{opcode}.{'.'.join(form)}: {_name(r)} and {[_name(o) for o in others]}")
        assert r.syntax.match(next(r.syntax.forms())) is not None
    assert not bad, "\n".join(bad[:20])


# ---- lines of each form, for ptxas and the builders ----------------------------------------------------

BITS = {"b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16, "b32": 32, "u32": 32,
        "s32": 32, "f32": 32, "f16x2": 32, "bf16x2": 32, "b64": 64, "u64": 64, "s64": 64, "f64": 64, "b128": 128}
CLASS = {8: "%h", 16: "%h", 32: "%r", 64: "%rd", 128: "%q"}
HEAD = """.version {version}
.target {target}
.address_size 64
.global .align 16 .b8 gbuf[1024];
.const .align 16 .b8 cbuf[1024];
.func f0()
{{
  ret;
}}
.visible .entry k(.param .u64 p0, .param .align 128 .b8 tmap[128])
{{
  .reg .pred %p<10>;
  .reg .b16 %h<40>;
  .reg .b32 %r<300>;
  .reg .b64 %rd<300>;
  .reg .b128 %q<10>;
  .local .align 16 .b8 lbuf[1024];
  .shared .align 128 .b8 sbuf[16384];
  .param .align 16 .b8 pbuf[128];
"""
TAIL = "L_end:\n  ret;\n}\n"


class Regs:
    """Fresh registers of each width, in the kernel's declared ranges."""

    def __init__(self):
        self.n = {c: 0 for c in CLASS.values()}

    def one(self, bits: int) -> str:
        c = CLASS[bits]
        self.n[c] += 1
        limit = {"%h": 39, "%q": 9}.get(c, 299)
        return f"{c}{(self.n[c] - 1) % limit + 1}"

    def vec(self, bits: int, n: int, braces: bool = False) -> str:
        """``n`` registers: a vector in braces (a scalar without them unless ``braces``)."""
        if n == 1 and not braces:
            return self.one(bits)
        return "{" + ", ".join(self.one(bits) for _ in range(n)) + "}"


def _vec_len(mods) -> int:
    return next((int(m[1:]) for m in mods if m in ("v2", "v4", "v8")), 1)


def _type(mods) -> str:
    return next(m for m in reversed(mods) if m in BITS)


def _coords(mods, regs: Regs) -> str:
    dim = int(next(m for m in mods if re.fullmatch(r"[1-5]d", m))[0])
    n = 5 if "tile::gather4" in mods else dim
    return "{" + ", ".join(regs.one(32) for _ in range(n)) + "}"


def _im2col(mods, regs: Regs) -> str:
    dim = int(next(m for m in mods if re.fullmatch(r"[1-5]d", m))[0])
    return ", " + regs.vec(16, dim - 2, braces=True) if "im2col" in mods else ""


def _mma_regs(name: str) -> dict[str, int]:
    """32-bit registers (64-bit for .f64) per thread of each operand of an mma.sync form."""
    from fragsim.instructions import FORMS
    from fragsim.instructions.mma import ALIASES
    base = ALIASES.get(name, name)
    if base in FORMS:
        f = FORMS[base]
        wide = f.fmt("A").name == "f64"
        return {op: f.nregs(op) // (2 if wide else 1) for op in "ABCD"}
    t = name.split(".")
    m, rest = t[0][1:].split("n")
    n, k = (int(x) for x in rest.split("k"))
    m = int(m)
    types = [x for x in t if x in ("s8", "u8", "s4", "u4", "b1", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "f16", "f32",
                                   "s32", "bf16", "tf32", "f64")]
    d, a, b, c = types[:4]
    bits = {"s8": 8, "u8": 8, "s4": 4, "u4": 4, "b1": 1, "e4m3": 8, "e5m2": 8, "e3m2": 8, "e2m3": 8, "e2m1": 8,
            "f16": 16, "bf16": 16, "f32": 32, "s32": 32, "tf32": 32}
    return {"A": m * k * bits[a] // 1024, "B": k * n * bits[b] // 1024, "C": m * n * bits[c] // 1024,
            "D": m * n * bits[d] // 1024}


def _line(row, mods: tuple[str, ...]) -> str | None:
    """A PTX line of ``row``'s form ``mods`` with operands of the right kinds, or None where none is built."""
    op, R = row.opcode, Regs()
    text = ".".join((op, *mods))
    hint = "L2::cache_hint" in mods

    def pol(reg: str = "%rd9") -> str:
        return f", {reg}" if hint else ""
    if op in ("bra",):
        return f"{text} L_end"
    if op == "call":
        return f"{text} f0"
    if op in ("ret", "exit", "trap", "membar") or op == "fence" and "[addr]" not in row.operands:
        return text
    if op == "fence":
        return f"{text} [%rd1], 128"
    if op in ("bar", "barrier"):
        if mods[:1] == ("cluster",):
            return text
        if "warp" in mods:
            return f"{text} %r1"
        if "red" in mods:
            return f"{text} {'%r1' if 'popc' in mods else '%p1'}, 0, 64, !%p2"
        return f"{text} 1, 64" if "arrive" in mods else f"{text} 0"
    if op == "nanosleep":
        return f"{text} %r1"
    if op == "pmevent":
        return f"{text} 1"
    if op == "mov":
        t = mods[-1]
        if t == "pred":
            return f"{text} %p1, %p2"
        return f"{text} {R.one(BITS[t])}, {R.one(BITS[t])}"
    if op == "cvta":
        b = 32 if mods[-1] == "u32" else 64
        return f"{text} {R.one(b)}, {R.one(b)}"
    if op == "activemask":
        return f"{text} %r1"
    if op in ("ld", "ldu", "st"):
        space = next((m for m in mods if m.split("::")[0] in ("param", "global", "local", "shared", "const")), "")
        if space.startswith("param"):
            if op == "st":
                addr = "[pbuf]"
            else:
                addr = "[%rd1]" if space == "param::func" else "[tmap]"
        else:
            addr = "[%rd1]"
        value = R.vec(BITS[_type(mods)], _vec_len(mods))
        return f"{text} {addr}, {value}{pol()}" if op == "st" else f"{text} {value}, {addr}{pol()}"
    if op in ("atom", "red"):
        t = _type(mods)
        n = _vec_len(mods)
        srcs = [R.vec(BITS[t], n)] + ([R.vec(BITS[t], n)] if "cas" in mods else [])
        dst = [] if op == "red" else [R.vec(BITS[t], n)]
        return f"{text} {', '.join(dst + ['[%rd1]'] + srcs)}{pol()}"
    if op in ("ldmatrix", "stmatrix"):
        num = int(next(m for m in mods if m in ("x1", "x2", "x4"))[1])
        n = num * (2 if "m16n16" in mods else 1)
        regs = R.vec(32, n, braces=True)
        return f"{text} {regs}, [%rd1]" if op == "ldmatrix" else f"{text} [%rd1], {regs}"
    if op == "movmatrix":
        return f"{text} %r1, %r2"
    if op == "mma":
        name = ".".join(mods[2:])
        n = _mma_regs(name)
        b = 64 if ".f64" in name else 32
        return f"{text} " + ", ".join(R.vec(b, n[x], braces=True) for x in "DABC")
    if op == "wgmma":
        if mods[0] != "mma_async":
            return f"{text} 0" if mods[0] == "wait_group" else text
        name = ".".join(mods[3:])
        from fragsim.instructions.wgmma import WGMMA_FORMS
        f = WGMMA_FORMS.get(name)
        if f is None:                               # .b1: N/2 .s32 registers, descriptors, scale-d
            n = int(re.match(r"m64n(\d+)", name).group(1)) // 2
            return f"{text} {R.vec(32, n)}, %rd1, %rd2, %p1"
        imms = (", 1, 1" if f.scale_ab else "") + (", 0, 0" if f.trans else "")
        return f"{text} {R.vec(32, f.nregs('D'))}, %rd1, %rd2, %p1{imms}"
    if op == "cp":
        return _cp_line(row, mods, text, R, pol)
    if op in ("prefetch", "prefetchu"):
        addr = {"const": "[cbuf]", "param": "[tmap]"}.get(mods[0], "[%rd1]") if "tensormap" in mods else "[%rd1]"
        return f"{text} {addr}"
    if op == "mbarrier":
        what = mods[0]
        if what == "pending_count":
            return f"{text} %r1, %rd2"
        if what in ("init",):
            return f"{text} [%rd1], %r1"
        if what == "inval":
            return f"{text} [%rd1]"
        if what in ("expect_tx", "complete_tx"):
            return f"{text} [%rd1], %r1"
        if what in ("arrive", "arrive_drop"):
            dst = "_" if "shared::cluster" in mods else "%rd2"
            count = ", %r1" if "expect_tx" in mods or "noComplete" in mods else ""
            return f"{text} {dst}, [%rd1]{count}"
        return f"{text} %p1, [%rd1], {'%r1' if 'parity' in mods else '%rd2'}"
    if op == "mapa":
        return f"{text} %r1, %r2, %r3" if mods[-1] == "u32" else f"{text} %rd1, %rd2, %r3"
    if op == "getctarank":
        return f"{text} %r1, %r2" if mods[-1] == "u32" else f"{text} %r1, %rd2"
    return None                                     # brx.idx, textures and surfaces


def _cp_line(row, mods, text: str, R: Regs, pol) -> str:
    if mods[:2] == ("async", "mbarrier"):
        return f"{text} [%rd1]"
    if mods[-1] in ("commit_group", "wait_all"):
        return text
    if "wait_group" in mods:
        return f"{text} 0"
    if mods[1:2] in (("ca",), ("cg",)):
        return f"{text} [%rd1], [%rd2], 16{pol()}"
    if "prefetch" in mods:
        if "tensor" in mods:
            return f"{text} [%rd2, {_coords(mods, R)}]{_im2col(mods, R)}{pol()}"
        return f"{text} [%rd1], %r1{pol()}"
    load = "mbarrier::complete_tx::bytes" in mods
    if "tensor" in mods:
        tm = f"[%rd2, {_coords(mods, R)}]"
        if mods[0] == "reduce" or not load:
            return f"{text} {tm}, [%rd1]{pol()}"
        mask = ", %h1" if "multicast::cluster" in mods else ""
        return f"{text} [%rd1], {tm}, [%rd3]{_im2col(mods, R)}{mask}{pol()}"
    if load:
        mask = ", %h1" if "multicast::cluster" in mods else ""
        return f"{text} [%rd1], [%rd2], %r1, [%rd3]{mask}{pol()}"
    return f"{text} [%rd1], [%rd2], %r1{pol()}" + (", %h2" if "cp_mask" in mods else "")


# ---- 3. ptxas ------------------------------------------------------------------------------------------

def _ptxas_ptx() -> tuple[int, int] | None:
    """The newest PTX ISA version the ptxas on PATH takes, or None without one."""
    exe = shutil.which("ptxas")
    if exe is None:
        return None
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release (\d+)\.(\d+)", out)
    if m is None:
        return None
    major, minor = int(m.group(1)), int(m.group(2))
    # CUDA 12.x takes PTX 8.x (12.9: 8.8); CUDA 13.x takes PTX 9.x
    return (8, min(minor, 8)) if major == 12 else (major - 4, minor) if major >= 13 else (7, minor)


def _arch(row) -> str:
    """ptxas's -arch for a row: sm_90a, or the row's own target where it is newer (with its "a")."""
    n = int(re.match(r"sm_(\d+)", row.target).group(1))
    return "sm_90a" if n <= 90 else f"sm_{n}a"


def _sampled() -> list[tuple[object, tuple[str, ...], str]]:
    out = []
    for r in ROWS:
        for form in _forms(r, SAMPLES):
            line = _line(r, form)
            if line is not None:
                out.append((r, form, line))
    return out


def _assemble(lines: list[str], target: str, version: str) -> dict[int, str]:
    """ptxas on a kernel of ``lines``: index -> its first error."""
    head = HEAD.format(version=version, target=target)
    first = head.count("\n") + 1
    text = head + "".join(f"  {line};\n" for line in lines) + TAIL
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(text)
        r = subprocess.run(["ptxas", f"-arch={target}", src, "-o", os.path.join(d, "k.cubin")],
                           capture_output=True, text=True)
    errors: dict[int, str] = {}
    for m in re.finditer(r"line (\d+); error\s*:\s*(.*)", r.stderr):
        errors.setdefault(int(m.group(1)) - first, m.group(2))
    if r.returncode and not errors:
        errors[-1] = r.stderr
    return errors


@functools.lru_cache(maxsize=1)
def _ptxas_verdicts() -> dict[int, tuple[str, str | None]]:
    """id of each sampled (row, form, line) -> (line, ptxas's error or None); rows newer than ptxas left out."""
    newest = _ptxas_ptx()
    assert newest is not None
    version = f"{newest[0]}.{newest[1]}"
    groups: dict[str, list[tuple[object, tuple[str, ...], str]]] = {}
    for r, form, line in _sampled():
        if tuple(int(x) for x in r.ptx.split(".")) <= newest:
            groups.setdefault(_arch(r), []).append((r, form, line))
    out = {}
    for target, items in groups.items():
        errors = _assemble([line for _, _, line in items], target, version)
        assert -1 not in errors, errors[-1]
        for i, (r, form, line) in enumerate(items):
            out[id(r), form] = (line, errors.get(i))
    return out


needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None or _ptxas_ptx() is None, reason="ptxas not on PATH")


@needs_ptxas
@pytest.mark.parametrize("row", ROWS, ids=_name)
def test_ptxas_assembles_the_forms_of_every_row(row):
    verdicts = _ptxas_verdicts()
    bad = [f"{line}: {err}" for (rid, _), (line, err) in verdicts.items() if rid == id(row) and err]
    assert not bad, "\n".join(bad)


# ---- 4. the builders -----------------------------------------------------------------------------------

def _compiler(lines: list[str]):
    """A fragsim Compiler of a kernel holding ``lines``, ready to build each (labels and starts laid out as
    ``Compiler.compile`` does), and the instructions."""
    from fragsim.facts.arch import get_arch
    from fragsim.ptx import ast as A
    from fragsim.ptx.parse import parse
    from fragsim.ptx.program import Compiler
    text = HEAD.format(version="8.0", target="sm_90a") + "".join(f"  {line};\n" for line in lines) + TAIL
    module = parse(text)
    entry = module.functions["k"]
    c = Compiler(module, entry, get_arch("sm_90a"))
    labels, starts, pc = {}, {}, 0
    for f in c.functions:
        starts[f.name] = pc
        for item in f.body:
            if isinstance(item, A.LabelDef):
                labels[(f.name, item.name)] = pc
            else:
                pc += 1
        pc += 1
    c.labels, c.starts, c.function = labels, starts, entry
    return c, [x for x in entry.body if isinstance(x, A.Instr)][:len(lines)]


def _builds(run, ins, c) -> str | None:
    try:
        run(ins, c)
    except Exception as e:                          # a refusal (or a builder's crash, a refusal too)
        return f"{type(e).__name__}: {e}"
    return None


#: refused rows whose forms a builder would take, refused by the table on purpose: syntax -> why
REFUSED_ON_PURPOSE = {
    "cp.async.cop.ss.global.level::cache_hint{.level::prefetch_size}":
        "semantics.tensor.cp reads the cache-policy operand as src-size",
}


@functools.lru_cache(maxsize=1)
def _builder_verdicts() -> dict[tuple[int, tuple[str, ...]], str]:
    """For each sampled form: why it disagrees with its row's builder(s), or ''."""
    items = _sampled()
    c, instrs = _compiler([line for _, _, line in items])
    out = {}
    for (r, form, line), ins in zip(items, instrs):
        if r.run is not None:
            err = _builds(r.run, ins, c)
            out[id(r), form] = f"{line}: {err}" if err else ""
        elif r.syntax.text not in REFUSED_ON_PURPOSE:
            runs = {o.run for o in _rows(r.opcode) if o.run is not None and o.run.__name__ != "nothing"}
            took = [b.__name__ for b in runs if _builds(b, ins, c) is None]
            out[id(r), form] = f"{line}: refused by the row, built by {took}" if took else ""
    return out


@pytest.mark.parametrize("row", ROWS, ids=_name)
def test_the_builders_agree_with_every_row(row):
    bad = [v for (rid, _), v in _builder_verdicts().items() if rid == id(row) and v]
    assert not bad, "\n".join(bad)


# ---- 5. builders and Nsight Compute's ops --------------------------------------------------------------

def _ncu_ops() -> set[str]:
    from fragsim.instructions.shared_ops import SHARED_OPS
    from fragsim.ptx import traffic
    return {e.kind for e in SHARED_OPS.values()} | {traffic.ATOM, traffic.GMMA_WAVEFRONTS.split("_op_")[1].split(".")[0]}


@pytest.mark.parametrize("module", MODULES)
def test_a_row_runs_on_a_builder_of_its_own_semantics_module(module):
    for r in MODULES[module].ROWS:
        assert r.kind == "machine", r.syntax.text
        if r.run is not None:
            assert r.run.__module__ == f"fragsim.ptx.semantics.{module}", (r.syntax.text, r.run)


def test_a_row_counts_as_an_op_nsight_compute_counts():
    ops = _ncu_ops()
    assert {r.ncu for r in ROWS} - {None} <= ops


# ---- 6. ptx_kernels ------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _gpu_corpus_mods() -> set[tuple[str, tuple[str, ...]]]:
    """(opcode, mods) of every instruction of the PTX files gpu_check's ptx_kernels family runs on the GPU."""
    from fragsim.gpu_check.ptx.kernels import KERNEL
    files = {p for k in KERNEL.values() for p in k.files}
    out = set()
    for name in files:
        for f in parse_file(REPO / "tests" / "data" / "ptx" / name).functions.values():
            out.update((ins.opcode, ins.mods) for ins in f.instructions)
    return out


@pytest.mark.parametrize("row", [r for r in ROWS if r.status.family == "ptx_kernels"], ids=_name)
def test_a_row_validated_by_ptx_kernels_is_run_by_one_of_its_kernels(row):
    assert any(op == row.opcode and row.syntax.match(mods) is not None for op, mods in _gpu_corpus_mods())
