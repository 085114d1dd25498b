"""fragsim.ptx.parse: PTX text -> Module, in the PTX ISA's words ("Syntax", "State Spaces, Types, and
Variables", "Instruction Operands", "Directives"), and the corpus of real compiler output in
tests/data/ptx (nvcc 13, CUTLASS/CuTe, Triton) read whole."""

from __future__ import annotations

import random
import re
import struct
from pathlib import Path

import pytest

from fragsim.ptx.ast import (
    Addr,
    Imm,
    Instr,
    Label,
    LabelDef,
    ParamList,
    Reg,
    Sink,
    SourceLoc,
    Special,
    Symbol,
    TexAddr,
    Vec,
)
from fragsim.ptx.parse import MAX_DEPTH, MAX_RANGE, PtxSyntaxError, parse, parse_file

CORPUS = Path(__file__).parent / "data" / "ptx"
FILES = sorted(CORPUS.glob("*.ptx"))
HEAD = ".version 9.0\n.target sm_90a\n.address_size 64\n"


def body(text: str, params: str = "") -> tuple:
    """The body of a one-entry module whose body is ``text``."""
    m = parse(f"{HEAD}.visible .entry k({params})\n{{\n{text}\n}}\n")
    return m.functions["k"].body


def instr(text: str, decls: str = ".reg .b32 %r<9>; .reg .b64 %rd<9>; .reg .pred %p<9>; "
          ".reg .f32 %f<9>;") -> Instr:
    """The one instruction of ``text`` in a body with the usual registers declared."""
    (ins,) = [s for s in body(f"{decls}\n{text}") if isinstance(s, Instr)]
    return ins


def error(text: str) -> str:
    with pytest.raises(PtxSyntaxError) as e:
        parse(text)
    return str(e.value)


# ------------------------------------------------------------------------------- the corpus


def instruction_statements(text: str) -> int:
    """Instructions counted from the text alone (not by the parser): comments, debug sections and
    the directives that end at the line's end (.loc/.file/.version/.target/.address_size) removed,
    label definitions dropped, the rest split at ';', '{' and '}': a piece that starts with a letter
    or '@' is an instruction (declarations and directives start with '.', initializers with
    digits)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"\.section\s+\S+\s*\{[^}]*\}", "", text)
    text = re.sub(r"(?m)^\s*\.(loc|file|version|target|address_size)\b[^\n]*$", "", text)
    text = re.sub(r"(?m)^\s*[$%\w]+:", "", text)
    pieces = re.split(r"[;{}]", text)
    return sum(1 for p in pieces if re.match(r"\s*[A-Za-z@]", p))


def operands_flat(ops):
    for o in ops:
        if isinstance(o, (Vec, ParamList, TexAddr)):
            yield from operands_flat(o.items)
        elif isinstance(o, Addr):
            yield o
            if o.base is not None:
                yield o.base
        else:
            yield o


def test_corpus_is_there():
    """The corpus holds nvcc (own kernels, sm_80/sm_90a, -lineinfo, -G), CUTLASS and Triton output."""
    names = {f.name for f in FILES}
    assert {"mma_1warp.sm90a.ptx", "hgemm_cpasync.sm80.ptx", "gemm_ldshared.sm90a.ptx",
            "reduce_shfl.sm90a.G.ptx", "devfunc_local.sm90a.lineinfo.ptx",
            "wgmma_desc.sm90a.ptx", "struct_param.sm90a.ptx", "cutlass_sgemm_sm80.sm80.ptx",
            "cutlass_wgmma_sm90.sm90a.ptx", "triton_matmul.sm90.ptx"} <= names


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_corpus_instruction_count(path):
    """Every corpus file parses, into as many instructions as the text has instruction statements."""
    m = parse_file(path)
    n = sum(len(f.instructions) for f in m.functions.values())
    assert n == instruction_statements(path.read_text())
    assert n > 0


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_corpus_instruction_lines(path):
    """Every instruction's ``line`` is the source line that spells its opcode."""
    lines = path.read_text().splitlines()
    for f in parse_file(path).functions.values():
        for ins in f.instructions:
            assert re.search(rf"(^|[\s;{{]){re.escape(ins.text)}(\s|;|$)", lines[ins.line - 1]), \
                (ins.line, ins.text)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_corpus_labels_defined(path):
    """Every branch target is a label of the same function; every call target a function."""
    m = parse_file(path)
    for f in m.functions.values():
        for ins in f.instructions:
            for o in ins.operands:
                if isinstance(o, Label):
                    if ins.opcode == "call":
                        assert o.name in m.functions, o.name
                    else:
                        assert o.name in f.labels, o.name
                        assert f.body[f.labels[o.name]] == LabelDef(o.name, f.body[
                            f.labels[o.name]].line)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_corpus_registers_and_symbols_declared(path):
    """Every register read or written (guards included) is declared by a .reg of its function, and
    every name used as a value is a variable, parameter or function of the module."""
    m = parse_file(path)
    module_names = {v.name for v in m.vars} | set(m.functions)
    for f in m.functions.values():
        regs = {n for d in f.regs for n in d.names}
        assert len(regs) == sum(len(d.names) for d in f.regs)       # unique after renaming
        names = module_names | {v.name for v in f.vars} | {p.name for p in f.params + f.returns}
        for ins in f.instructions:
            used = list(operands_flat(ins.operands)) + ([ins.guard] if ins.guard else [])
            for o in used:
                if isinstance(o, Reg):
                    assert o.name in regs, (ins.line, o.name)
                elif isinstance(o, Symbol):
                    assert o.name in names, (ins.line, o.name)


def test_corpus_mma_ldmatrix():
    """mma_1warp: ldmatrix.x4 writes a 4-register vector from a shared address; mma.sync has the
    d, a, b, c vectors (4, 4, 2, 4 registers) and one destination."""
    f = parse_file(CORPUS / "mma_1warp.sm90a.ptx").functions[
        "_Z9mma_1warpPK13__nv_bfloat16S1_Pfi"]
    ld = next(i for i in f.instructions if i.opcode == "ldmatrix" and "x4" in i.mods)
    assert ld.mods == ("sync", "aligned", "m8n8", "x4", "shared", "b16")
    assert isinstance(ld.operands[0], Vec) and len(ld.operands[0].items) == 4
    assert isinstance(ld.operands[1], Addr) and ld.ndst == 1
    mma = next(i for i in f.instructions if i.opcode == "mma")
    assert mma.mods == ("sync", "aligned", "m16n8k16", "row", "col", "f32", "bf16", "bf16", "f32")
    assert [len(v.items) for v in mma.operands] == [4, 4, 2, 4] and mma.ndst == 1


def test_corpus_cp_async_src_size():
    """hgemm_cpasync: cp.async.cg.shared.global [dst], [src], 16, src-size writes no register."""
    f = parse_file(CORPUS / "hgemm_cpasync.sm90a.ptx").functions[
        "_Z13hgemm_cpasyncPK6__halfS1_Pfiii"]
    cp = next(i for i in f.instructions if i.text == "cp.async.cg.shared.global")
    assert cp.ndst == 0 and len(cp.operands) == 4
    assert isinstance(cp.operands[0], Addr) and isinstance(cp.operands[1], Addr)
    assert cp.operands[2] == Imm(16, "int") and isinstance(cp.operands[3], Reg)
    assert f.directives["maxntid"] == (128, 1, 1)
    assert any(i.text == "cp.async.wait_group" and i.operands == (Imm(0, "int"),)
               for i in f.instructions)


def test_corpus_shfl_two_destinations():
    """reduce_shfl: shfl.sync.bfly.b32 d|p, a, b, c, membermask has two destinations."""
    f = next(iter(parse_file(CORPUS / "reduce_shfl.sm90a.ptx").entries.values()))
    s = next(i for i in f.instructions if i.text == "shfl.sync.bfly.b32")
    assert s.ndst == 2 and len(s.operands) == 6
    assert all(isinstance(o, Reg) for o in s.operands[:2])
    assert any(i.opcode == "atom" and i.ndst == 1 for i in f.instructions)


def test_corpus_call_with_return():
    """devfunc_local: the callseq block's .param variables are the function's variables, renamed
    where taken; call.uni (retval0), f, (param0, param1) has the returns list as destination."""
    m = parse_file(CORPUS / "devfunc_local.sm90a.ptx")
    callee = m.functions["_Z4polyPKfif"]
    assert callee.kind == "func" and [p.name for p in callee.returns] == ["func_retval0"]
    f = m.functions["_Z13devfunc_localPKfPKiPfi"]
    call = next(i for i in f.instructions if i.opcode == "call")
    assert call.mods == ("uni",) and call.ndst == 1
    assert call.operands == (ParamList((Symbol("retval0"),)), Label("_Z4polyPKfif"),
                             ParamList((Symbol("param0"), Symbol("param1"))))
    assert {"param0", "param1", "retval0"} <= {v.name for v in f.vars if v.space == "param"}
    depot = next(v for v in f.vars if v.space == "local")
    assert (depot.name, depot.type, depot.count, depot.align) == ("__local_depot1", "b8", 32, 16)


def test_corpus_struct_param():
    """struct_param: a struct by value is a .b8 array parameter with its alignment."""
    f = next(iter(parse_file(CORPUS / "struct_param.sm90a.ptx").entries.values()))
    p = f.params[0]
    assert (p.type, p.count, p.align) == ("b8", 40, 8)


def test_corpus_wgmma_inline_block():
    """wgmma_desc: the inline-asm block's `.reg .pred p` flattens into the body; wgmma.mma_async
    takes 32 accumulators, two descriptors, scale-d p and the immediates imm-scale-a/b,
    imm-trans-a/b; wgmma.fence/commit_group/wait_group write nothing."""
    f = next(iter(parse_file(CORPUS / "wgmma_desc.sm90a.ptx").entries.values()))
    w = next(i for i in f.instructions if i.opcode == "wgmma" and i.mods[0] == "mma_async")
    d, a, b, scale_d, *imms = w.operands
    assert len(d.items) == 32 and isinstance(a, Reg) and isinstance(b, Reg)
    assert scale_d == Reg("p") and imms == [Imm(1, "int"), Imm(1, "int"), Imm(0, "int"),
                                            Imm(0, "int")]
    assert w.ndst == 1
    assert all(i.ndst == 0 for i in f.instructions if i.opcode == "wgmma" and i is not w)
    assert "p" in {n for r in f.regs for n in r.names}


def test_corpus_lineinfo():
    """-lineinfo: .file names the source, each instruction carries the .loc in force, and the
    extended form's inlined_at is kept."""
    m = parse_file(CORPUS / "hgemm_cpasync.sm90a.lineinfo.ptx")
    assert m.files[1] == "tests/data/ptx/src/hgemm_cpasync.cu"
    ins = next(iter(m.entries.values())).instructions
    assert all(i.loc is not None for i in ins)
    assert any(i.loc.inlined_at is not None for i in ins)


def test_corpus_cutlass_entries():
    """CUTLASS's CuTe tutorials: the mangled entry is runnable by name; CuTe passes its layouts
    and tiled copies as .b8 [N] structs."""
    m = parse_file(CORPUS / "cutlass_sgemm_sm80.sm80.ptx")
    name = next(n for n in m.entries if n.startswith("_Z11gemm_device"))
    f = m.entries[name]
    assert any(p.type == "b8" and p.count is not None for p in f.params)
    assert sum(i.opcode == "mma" for i in f.instructions) > 0
    w = parse_file(CORPUS / "cutlass_wgmma_sm90.sm90a.ptx")
    assert not w.functions["__assertfail"].defined and w.functions["__assertfail"].extern
    assert any(i.opcode == "wgmma" for f in w.entries.values() for i in f.instructions)


# ------------------------------------------------------------------------ module directives


def test_module_header():
    """.version major.minor, .target with options, .address_size."""
    m = parse(".version 8.7\n.target sm_80, texmode_independent\n.address_size 32\n")
    assert (m.version, m.target, m.address_size) == ((8, 7), ("sm_80", "texmode_independent"), 32)


def test_version_required():
    """A module starts with .version."""
    assert "expected '.version'" in error(".target sm_90\n")


def test_file_with_timestamp_and_size():
    """.file index "path" [, timestamp, size]."""
    m = parse(f'{HEAD}.file 1 "a.cu"\n.file 2 "b/c.h", 1700000000, 1234\n')
    assert m.files == {1: "a.cu", 2: "b/c.h"}


def test_debug_section_skipped():
    """.section .debug_* { ... } carries no code: skipped."""
    m = parse(f"{HEAD}.section .debug_str\n{{\n$L__info_string0:\n.b8 95,90,0\n}}\n")
    assert m.functions == {} and m.vars == ()


def test_comments():
    """// and /* */ comments (multi-line) are white space; line numbers stay right."""
    b = body("/* one\n two */ .reg .b32 %r1; // c\n  mov.b32 %r1, 1; /* x */")
    assert b[0].line == 8 and b[0].column == 3


def test_alias_and_pragma():
    """.alias a, b; and .pragma "nounroll"; (ignored)."""
    m = parse(f'{HEAD}.pragma "nounroll";\n.func f() {{ ret; }}\n.alias g, f;\n')
    assert m.aliases == {"g": "f"}
    b = body('.pragma "nounroll";\nret;')
    assert [i.opcode for i in b] == ["ret"]


# ----------------------------------------------------------------------------- declarations


def test_module_variables():
    """Module-scope variables: alignment, arrays, extern unsized arrays, scalar and array
    initializers (PTX float literals as raw bits, decimal ones as f64)."""
    m = parse(HEAD + """
.shared .align 16 .b8 smem[4096];
.extern .shared .align 16 .b8 dyn[];
.global .u32 g = 5;
.const .f32 c[4] = {1.0, 0f40000000, -3, 0x10};
.visible .global .align 8 .u64 ptrs[2] = {generic(smem), g+4};
""")
    smem, dyn, g, c, ptrs = m.vars
    assert (smem.space, smem.type, smem.count, smem.align, smem.dims) == ("shared", "b8", 4096, 16,
                                                                         (4096,))
    assert dyn.extern and dyn.count is None and dyn.dims == (None,)
    assert g.init == (Imm(5, "int"),) and g.count is None and g.dims == ()
    one = struct.unpack("<Q", struct.pack("<d", 1.0))[0]
    assert c.init == (Imm(one, "f64"), Imm(0x40000000, "f32"), Imm(-3, "int"), Imm(16, "int"))
    assert ptrs.linkage == "visible"
    assert ptrs.init == (Symbol("smem", generic=True), Addr(Symbol("g"), 4))


def test_multidimensional_array():
    """arr[2][3]: dims (2, 3), count 6, nested initializer flattened row-major."""
    (v,) = parse(HEAD + ".global .s32 a[2][3] = {{1, 2, 3}, {4, 5, 6}};").vars
    assert v.dims == (2, 3) and v.count == 6
    assert [i.value for i in v.init] == [1, 2, 3, 4, 5, 6]


def test_register_ranges():
    """.reg .b32 %r<4> declares %r0..%r3; .reg .pred p, q declares both."""
    m = parse(f"{HEAD}.entry k() {{ .reg .b32 %r<4>; .reg .pred p, q; ret; }}")
    r, p = m.functions["k"].regs
    assert r.names == ("%r0", "%r1", "%r2", "%r3") and r.type == "b32"
    assert p.names == ("p", "q") and p.type == "pred"


def test_body_variables():
    """.local depots, .shared and .param declared in a body belong to the function."""
    b = ".local .align 8 .b8 __local_depot0[32]; .shared .align 4 .f32 t[16][17]; .param .b32 p;"
    f = parse(f"{HEAD}.entry k() {{ {b} ret; }}").functions["k"]
    assert [(v.space, v.name, v.count) for v in f.vars] == [
        ("local", "__local_depot0", 32), ("shared", "t", 16 * 17), ("param", "p", None)]


def test_parameters():
    """.param .u64 .ptr .global .align 16 p0 and a struct by value .param .align 8 .b8 p1[16]."""
    f = parse(f"{HEAD}.entry k(.param .u64 .ptr .global .align 16 p0, .param .align 8 .b8 p1[16],"
              " .param .u64 .ptr .align 4 p2) { ret; }").functions["k"]
    p0, p1, p2 = f.params
    assert (p0.type, p0.ptr_space, p0.align, p0.count) == ("u64", "global", None, None)   # the pointee's .align
    assert (p1.type, p1.count, p1.align, p1.ptr_space) == ("b8", 16, 8, None)
    assert p2.ptr_space == "generic"


def test_function_directives():
    """Performance directives between parameters and body: name -> values."""
    f = parse(f"{HEAD}.visible .entry k() .maxntid 256, 1, 1 .minnctapersm 2 .explicitcluster"
              " .reqnctapercluster 2, 1, 1 { ret; }").functions["k"]
    assert f.directives == {"maxntid": (256, 1, 1), "minnctapersm": (2,), "explicitcluster": (),
                            "reqnctapercluster": (2, 1, 1)}
    assert f.visible and f.kind == "entry"


def test_func_declarations_and_definitions():
    """.extern .func declares (defined False); a forward declaration is replaced by the definition;
    .weak and .noreturn are flags."""
    m = parse(HEAD + """
.extern .func (.param .b32 r) vprintf (.param .b64 a, .param .b64 b);
.weak .func (.param .b32 r) f (.param .b32 x);
.weak .func (.param .b32 r) f (.param .b32 x) { st.param.b32 [r], 1; ret; }
.func die() .noreturn { trap; }
""")
    v, f, d = m.functions["vprintf"], m.functions["f"], m.functions["die"]
    assert v.extern and not v.defined and [p.name for p in v.params] == ["a", "b"]
    assert f.weak and f.defined and [p.name for p in f.returns] == ["r"]
    assert d.noreturn and d.kind == "func"
    assert set(m.entries) == set()


def test_function_defined_twice():
    """Two definitions of one function are an error."""
    assert "defined twice" in error(f"{HEAD}.func f() {{ ret; }}\n.func f() {{ ret; }}")


# ------------------------------------------------------------------------------- instructions


def test_opcode_split_at_dots():
    """ld.global.nc.v4.u32 -> opcode 'ld', modifiers in order; '::' stays inside a modifier."""
    i = instr("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];")
    assert i.opcode == "ld" and i.mods == ("global", "nc", "L1::no_allocate", "L2::256B", "v4",
                                           "u32")
    assert i.text == "ld.global.nc.L1::no_allocate.L2::256B.v4.u32"


def test_guards():
    """@%p1 and @!%p1 guard an instruction; @%p1 bra.uni L has one label operand, no destination."""
    i = instr("@%p1 bra.uni $L__BB0_2;\n$L__BB0_2:")
    assert (i.guard, i.opcode, i.mods, i.operands, i.ndst) == (
        Reg("%p1"), "bra", ("uni",), (Label("$L__BB0_2"),), 0)
    assert instr("@!%p2 mov.b32 %r1, %r2;").guard == Reg("%p2", negated=True)


def test_setp_pair():
    """setp.lt.s32 p|q, a, b writes two predicates: the first two operands, ndst 2."""
    i = instr("setp.lt.and.s32 %p1|%p2, %r1, %r2, !%p3;")
    assert i.operands == (Reg("%p1"), Reg("%p2"), Reg("%r1"), Reg("%r2"), Reg("%p3", True))
    assert i.ndst == 2 and i.mods == ("lt", "and", "s32")


@pytest.mark.parametrize("text, ndst", [
    ("add.s32 %r1, %r2, 3;", 1),
    ("st.global.v2.f32 [%rd1+8], {%f1, %f2};", 0),
    ("ld.global.v2.f32 {%f1, %f2}, [%rd1];", 1),
    ("bar.sync 0;", 0),
    ("bar.red.popc.u32 %r1, 0, %p1;", 1),
    ("red.global.add.f32 [%rd1], %f1;", 0),
    ("atom.shared.add.u32 %r1, [%r2], 1;", 1),
    ("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%r1], {%r2, %r3};", 0),
    ("cp.async.commit_group;", 0),
    ("wgmma.fence.sync.aligned;", 0),
    ("wgmma.wait_group.sync.aligned 0;", 0),
    ("mbarrier.init.shared.b64 [%r1], 1;", 0),
    ("mbarrier.try_wait.parity.shared.b64 %p1, [%r1], %r2;", 1),
    ("ret;", 0),
    ("exit;", 0),
    ("membar.gl;", 0),
    ("fence.proxy.async.shared::cta;", 0),
])
def test_destination_count(text, ndst):
    """ndst from the PTX ISA's operand descriptions: st/red/bar/barriers/fences write no register,
    loads/atomics/arithmetic write their first operand (a vector counts once)."""
    assert instr(text).ndst == ndst


def test_call_without_returns():
    """call f, (a); has no destination; call with returns has the returns list as destination."""
    m = parse(HEAD + """
.func g(.param .b32 x) { ret; }
.entry k() { .reg .b32 %r1;
  { .param .b32 a; st.param.b32 [a], %r1; call.uni g, (a); }
}""")
    (st, call) = m.functions["k"].instructions
    assert call.operands == (Label("g"), ParamList((Symbol("a"),))) and call.ndst == 0


@pytest.mark.parametrize("lit, value", [
    ("0x3210", 0x3210), ("0X1f", 31), ("017", 15), ("0b101", 5), ("42", 42), ("0", 0),
    ("-8", -8), ("7U", 7), ("0xFFFFFFFFFFFFFFFF", 2**64 - 1),
])
def test_integer_literals(lit, value):
    """PTX integer literals: hex, octal (leading 0), binary, decimal, negated, U suffix."""
    assert instr(f"add.s32 %r1, %r2, {lit};").operands[2] == Imm(value, "int")


@pytest.mark.parametrize("lit, imm", [
    ("0f3F800000", Imm(0x3F800000, "f32")),
    ("0F7FC00001", Imm(0x7FC00001, "f32")),      # NaN payload kept
    ("0d3FF0000000000000", Imm(0x3FF0000000000000, "f64")),
    ("1.0", Imm(0x3FF0000000000000, "f64")),
    ("-0.5", Imm(struct.unpack("<Q", struct.pack("<d", -0.5))[0], "f64")),
    ("1e-3", Imm(struct.unpack("<Q", struct.pack("<d", 1e-3))[0], "f64")),
    ("-0f3F800000", Imm(0xBF800000, "f32")),
])
def test_float_literals(lit, imm):
    """0fXXXXXXXX / 0dXXXXXXXXXXXXXXXX are raw IEEE bits; decimal literals are f64."""
    assert instr(f"add.f32 %f1, %f2, {lit};").operands[2] == imm


def test_bad_octal_literal():
    """A leading 0 means octal: 09 is not a literal."""
    assert "octal" in error(f"{HEAD}.entry k() {{ .reg .b32 %r1; mov.b32 %r1, 09; }}")


@pytest.mark.parametrize("text, special", [
    ("%tid.x", Special("tid", "x")), ("%ctaid.y", Special("ctaid", "y")),
    ("%nctaid.z", Special("nctaid", "z")), ("%ntid.x", Special("ntid", "x")),
    ("%laneid", Special("laneid", None)), ("%warpid", Special("warpid", None)),
    ("%smid", Special("smid", None)), ("%clock", Special("clock", None)),
    ("%clock64", Special("clock64", None)), ("%lanemask_lt", Special("lanemask_lt", None)),
    ("%dynamic_smem_size", Special("dynamic_smem_size", None)),
])
def test_special_registers(text, special):
    """Special registers, with .x/.y/.z components where they have them."""
    assert instr(f"mov.u32 %r1, {text};").operands[1] == special


def test_special_register_bad_component():
    """%tid.w is not a component."""
    assert ".x, .y or .z" in error(f"{HEAD}.entry k() {{ .reg .b32 %r1; mov.u32 %r1, %tid.w; }}")


@pytest.mark.parametrize("text, addr", [
    ("[%rd1+16]", Addr(Reg("%rd1"), 16)),
    ("[%rd1+-8]", Addr(Reg("%rd1"), -8)),
    ("[%rd1-8]", Addr(Reg("%rd1"), -8)),
    ("[%rd1]", Addr(Reg("%rd1"), 0)),
    ("[ %rd1 + 0x10 ]", Addr(Reg("%rd1"), 16)),
    ("[smem+8]", Addr(Symbol("smem"), 8)),
    ("[smem]", Addr(Symbol("smem"), 0)),
    ("[64]", Addr(None, 64)),
])
def test_addresses(text, addr):
    """[reg+imm], [reg+-imm], [var+imm], [var], [imm]."""
    decls = ".reg .b64 %rd<3>; .reg .f32 %f1; .shared .b8 smem[64];"
    assert instr(f"ld.shared.f32 %f1, {text};", decls).operands[1] == addr


def test_symbol_operands():
    """A variable used as a value is a Symbol: mov.u64 %rd1, smem; cvta.shared.u64 %rd2, buf."""
    decls = ".reg .b64 %rd<3>; .shared .b8 smem[64];"
    assert instr("mov.u64 %rd1, smem;", decls).operands[1] == Symbol("smem")


def test_vector_with_sink():
    """{%r1, _, %r3, %r4}: '_' is a Sink."""
    i = instr("ld.shared.v4.u32 {%r1, _, %r3, %r4}, [%r5];")
    assert i.operands[0] == Vec((Reg("%r1"), Sink(), Reg("%r3"), Reg("%r4")))


def test_prmt_and_shfl():
    """prmt.b32 d, a, b, 0x3210 (selector immediate); shfl.sync.bfly.b32 d|p, a, b, c, mask."""
    assert instr("prmt.b32 %r1, %r2, %r3, 0x3210;").operands[3] == Imm(0x3210, "int")
    s = instr("shfl.sync.bfly.b32 %r1|%p1, %r2, 1, 31, -1;")
    assert s.ndst == 2 and s.operands[5] == Imm(-1, "int")


def test_mov_pack():
    """mov.b64 %rd1, {%r1, %r2} packs a vector."""
    assert instr("mov.b64 %rd1, {%r1, %r2};").operands[1] == Vec((Reg("%r1"), Reg("%r2")))


def test_texture_operand():
    """tex.2d.v4.f32.f32 d, [tex, {x, y}] parses (the machine refuses it)."""
    i = instr("tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [t, {%f5, %f6}];",
              ".reg .f32 %f<7>; .global .texref t;")
    assert i.operands[1] == TexAddr((Symbol("t"), Vec((Reg("%f5"), Reg("%f6")))))


def test_pipe_only_after_first_operand():
    """'|' pairs destinations: only after the first operand."""
    assert "only after its first operand" in error(
        f"{HEAD}.entry k() {{ .reg .b32 %r<3>; add.s32 %r1, %r1|%r2, 1; }}")


# ---------------------------------------------------------------------------- scoped blocks


def test_inner_block_register_renamed():
    """A register declared in a nested block is a different register from one of the same name
    outside: the second declaration becomes p%k, its uses inside the block follow; braces go."""
    f = parse(f"""{HEAD}.entry k() {{
  .reg .b32 %r1; .reg .pred p;
  setp.eq.b32 p, %r1, 0;
  {{ .reg .pred p; setp.ne.b32 p, %r1, 0; @p bra L; }}
  {{ .reg .pred p; setp.lt.s32 p, %r1, 0; }}
  @p bra L;
L:
  ret;
}}""").functions["k"]
    ins = f.instructions
    names = [ins[0].operands[0].name, ins[1].operands[0].name, ins[2].guard.name,
             ins[3].operands[0].name, ins[4].guard.name]
    assert names[0] == "p" and names[4] == "p"
    assert names[1] == names[2] and names[1] not in ("p", names[3]) and names[3] != "p"
    assert names[1].startswith("p%") and names[3].startswith("p%")
    assert sorted(n for r in f.regs for n in r.names) == sorted(["%r1", "p", names[1], names[3]])


def test_inner_block_label_renamed():
    """Labels in a nested block are the block's own: a label defined twice in sibling blocks is
    renamed, and each block's branch goes to its own copy."""
    f = parse(f"""{HEAD}.entry k() {{
  {{ bra L; L: }}
  {{ bra L; L: }}
  ret;
}}""").functions["k"]
    b1, b2, _ = f.instructions
    assert b1.operands[0].name != b2.operands[0].name
    assert set(f.labels) == {b1.operands[0].name, b2.operands[0].name}
    assert f.labels[b1.operands[0].name] == 1 and f.labels[b2.operands[0].name] == 3


def test_redeclared_in_same_block():
    """Declaring one register twice in one block is an error."""
    assert "declared twice" in error(f"{HEAD}.entry k() {{ .reg .b32 %r1; .reg .b32 %r1; }}")


def test_nesting_depth_bounded():
    """Blocks nested deeper than MAX_DEPTH are refused with a message, not a crash."""
    text = f"{HEAD}.entry k() {{" + "{" * (MAX_DEPTH + 5) + "}" * (MAX_DEPTH + 6)
    assert "nested deeper" in error(text)
    init = f"{HEAD}.global .b32 a[1] = " + "{" * (MAX_DEPTH + 5) + "1" + "}" * (MAX_DEPTH + 5) + ";"
    assert "nested deeper" in error(init)


def test_register_range_bounded():
    """%r<N> beyond MAX_RANGE is refused (bounded work)."""
    assert "range declares" in error(f"{HEAD}.entry k() {{ .reg .b32 %r<{MAX_RANGE + 1}>; }}")


# ------------------------------------------------------------------------------------ .loc


def test_loc_attaches_until_next():
    """.loc file line column applies to the instructions after it until the next .loc; the
    extended form keeps inlined_at."""
    b = body(".reg .b32 %r1;\nmov.b32 %r1, 0;\n.loc 1 25 3\nmov.b32 %r1, 1;\nmov.b32 %r1, 2;\n"
             ".loc 1 17 5, function_name $L__info_string0, inlined_at 1 32 13\nret;")
    assert [i.loc for i in b] == [None, SourceLoc(1, 25, 3), SourceLoc(1, 25, 3),
                                  SourceLoc(1, 17, 5, SourceLoc(1, 32, 13))]


# ----------------------------------------------------------------------------------- errors


def test_missing_semicolon_message():
    """A missing ';' names line, column, the instruction and what was found."""
    text = f"{HEAD}.entry k() {{\n.reg .b32 %r<3>;\n  add.s32 %r1, %r2, 1\n}}\n"
    assert error(text) == "line 7, column 1: expected ';' after the operands of 'add.s32', found '}'"


@pytest.mark.parametrize("text, words", [
    (f"{HEAD}.entry k() {{ ret; ", "end of file"),
    (f"{HEAD}/* never closed", "never closed"),
    (f"{HEAD}.entry k() {{ # }}", "unexpected character '#'"),
    (f"{HEAD}.entry k() {{ ld.global.u32 %r1, [%r2+%r3]; }}", "byte offset"),
    (f"{HEAD}.global .b32 x", "expected ';'"),
    (f"{HEAD}.reg .b32 x;", "module directive"),
    (f"{HEAD}.entry k(.param .b32) {{ }}", "parameter name"),
    (f"{HEAD}.address_size 48", "expected 32 or 64"),
    (f"{HEAD}.entry k() {{ mov.u32 %r1, %r2, ; }}", "an operand of 'mov.u32'"),
])
def test_syntax_errors(text, words):
    """Malformed PTX: a PtxSyntaxError (a ValueError) naming line and column and what was
    expected."""
    msg = error(text)
    assert words in msg and re.match(r"line \d+, column \d+: ", msg)


def test_not_text():
    """parse takes str; parse_file of a non-UTF-8 file is a PtxSyntaxError."""
    with pytest.raises(TypeError, match="text"):
        parse(b".version 9.0")


def test_binary_file(tmp_path):
    p = tmp_path / "x.ptx"
    p.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(PtxSyntaxError, match="not a text file"):
        parse_file(p)


def test_large_module():
    """A module of many instructions parses whole (the work is linear in the text)."""
    n = 20000
    lines = "\n".join(f"add.s32 %r{i % 8}, %r{(i + 1) % 8}, {i};" for i in range(n))
    f = parse(f"{HEAD}.entry k() {{ .reg .b32 %r<8>;\n{lines}\nret; }}").functions["k"]
    assert len(f.instructions) == n + 1 and f.instructions[-2].operands[2] == Imm(n - 1, "int")


def test_damaged_corpus_files():
    """Truncated, cut or spliced corpus files either parse or raise PtxSyntaxError: never another
    exception."""
    rng = random.Random(22)
    texts = [p.read_text() for p in FILES if p.stat().st_size < 12000]
    outcomes = set()
    for _ in range(300):
        t = rng.choice(texts)
        a, b = sorted(rng.randrange(len(t)) for _ in range(2))
        t = rng.choice([t[:a], t[:a] + t[a + rng.randrange(1, 16):], t[:a] + t[b:b + 60] + t[a:]])
        try:
            parse(t)
            outcomes.add("parsed")
        except PtxSyntaxError as e:
            assert re.match(r"line \d+, column \d+: ", str(e)), str(e)
            outcomes.add("error")
    assert outcomes == {"parsed", "error"}
