"""Small PTX kernels, one shared-memory access pattern each, for the shared-memory traffic report
(``fragsim.ptx.traffic``): the CPU tests run them through ``run_kernel(report=True)`` and compare
every instruction's figures with the bank model on the same access set; gpu_check/ptx/traffic.py runs
them on the GPU under Nsight Compute.

Every kernel is one CTA of ``THREADS`` threads (two warps; ``Case.threads`` where a case needs more)
with a static shared array ``smem``, an input buffer (cp.async reads it) and an output buffer (each
thread stores what it loaded, so that ptxas keeps the loads).  ``Case.accesses`` lists the
shared-memory instructions of the kernel in PTX order, each with its table entry and, per warp, its
executions (the 32 lanes' byte offsets in ``smem`` and the mask of active lanes; mask 0: the warp
issues it with no lane on) -- the same arithmetic as the PTX, in Python.

Two batches: the first (``batch`` 1, ids ``traffic/<name>``) is the H100 recording's, its kernels'
text fixed (the recording's SASS names their lines); the second (``traffic2/<name>``) holds the
kernels written after reading that recording, to test what was fitted on it: other strides and
widths, idle warps, cp.async in loops and branches, the op_misc instructions, barriers, atomics,
wgmma's other swizzles and shapes.  A batch's text is fixed once it is recorded (the recording's SASS
names its PTX lines): new kernels go into a new batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fragsim.facts.hardware import WARP_LANES

#: Threads of every kernel: two warps, so that executions count per warp.
THREADS = 64
WARPS = THREADS // WARP_LANES
#: Bytes of the input buffer (cp.async sources) and of the static shared array.
IN_BYTES = 8192
SMEM_BYTES = 16384
LANES = np.arange(WARP_LANES, dtype=np.int64)
FULL = (1 << WARP_LANES) - 1

#: One warp's executions of an instruction: [(addresses (32,), mask), ...]
Executions = Callable[[int], list]


@dataclass(frozen=True)
class Access:
    """One shared-memory instruction of a case: its table entry (``fragsim.bank_conflicts`` spelling;
    "atom" for atom.shared), ``executions(warp)``, and for cp.async ``src(warp)``: the lanes' source
    byte offsets in the input buffer."""

    op: str
    executions: Executions
    src: Callable[[int], np.ndarray] | None = None


@dataclass(frozen=True)
class Case:
    """A kernel: ``name`` (the .entry is ``fs_traffic_<name>``), what it shows, the PTX of its body
    and its accesses in PTX order."""

    name: str
    doc: str
    body: str
    accesses: tuple[Access, ...]
    threads: int = 0
    batch: int = 1
    target: str = "sm_90"

    @property
    def entry(self) -> str:
        return "fs_traffic_" + self.name

    @property
    def block(self) -> int:
        return self.threads or THREADS

    def ptx(self) -> str:
        """The kernel as a module of its own."""
        return (HEADER if self.batch == 1 else HEADER2.format(target=self.target)) + self.entry_text()

    def entry_text(self) -> str:
        return (PROLOGUE if self.batch == 1 else PROLOGUE2).format(entry=self.entry) + self.body + EPILOGUE


HEADER = """.version 8.0
.target sm_90
.address_size 64

.shared .align 1024 .b8 smem[16384];
"""
PROLOGUE = """
.visible .entry {entry}(.param .u64 p_in, .param .u64 p_out)
{{
	.reg .pred %p<8>;
	.reg .b32 %r<64>;
	.reg .b64 %rd<16>;

	ld.param.u64 %rd1, [p_in];
	ld.param.u64 %rd2, [p_out];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd2, %rd2;
	mov.u32 %r1, %tid.x;
	and.b32 %r2, %r1, 31;
	shr.u32 %r3, %r1, 5;
	mov.u32 %r4, smem;
	mov.u32 %r30, 0;
	mov.u32 %r11, 0;
	mov.u32 %r12, 0;
	mov.u32 %r13, 0;
	mov.u32 %r14, 0;
"""
#: the second batch: more registers (wgmma's accumulators), more shared memory (its tiles)
HEADER2 = """.version 8.0
.target {target}
.address_size 64

.shared .align 1024 .b8 smem[32768];
"""
PROLOGUE2 = PROLOGUE.replace(".reg .pred %p<8>;", ".reg .pred %p<16>;").replace(
    ".reg .b32 %r<64>;", ".reg .b32 %r<128>;").replace(".reg .b64 %rd<16>;", ".reg .b64 %rd<32>;\n\t.reg .f32 %f<72>;")
EPILOGUE = """	mul.wide.u32 %rd3, %r1, 4;
	add.s64 %rd4, %rd2, %rd3;
	st.global.u32 [%rd4], %r30;
	ret;
}
"""


def _addr(lane_mul: int, warp_mul: int, reg: str = "%r10") -> str:
    """``reg`` = smem + lane * lane_mul + warp * warp_mul (shared window)."""
    return (f"\tmul.lo.u32 {reg}, %r2, {lane_mul};\n\tmad.lo.u32 {reg}, %r3, {warp_mul}, {reg};\n"
            f"\tadd.u32 {reg}, {reg}, %r4;\n")


def _ld(suffix: str, regs: int = 1, guard: str = "") -> str:
    dst = "%r11" if regs == 1 else "{" + ", ".join(f"%r{11 + i}" for i in range(regs)) + "}"
    return (f"\t{guard}ld.shared.{suffix} {dst}, [%r10];\n"
            + "".join(f"\txor.b32 %r30, %r30, %r{11 + i};\n" for i in range(regs)))


def _st(suffix: str, regs: int = 1) -> str:
    src = "%r1" if regs == 1 else "{" + ", ".join(["%r1"] * regs) + "}"
    return f"\tst.shared.{suffix} [%r10], {src};\n"


def _ldmatrix() -> str:
    return ("\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r11, %r12, %r13, %r14}, [%r10];\n"
            + "".join(f"\txor.b32 %r30, %r30, %r{11 + i};\n" for i in range(4)))


#: after stores: a barrier, then every lane reads its own word back (so that the stores are kept)
READ_BACK = _addr(4, 128, "%r20") + "\tbar.sync 0;\n\tld.shared.b32 %r21, [%r20];\n\txor.b32 %r30, %r30, %r21;\n"


def affine(lane_mul: int, warp_mul: int, mask: int = FULL) -> Executions:
    """One execution per warp at smem + lane * lane_mul + warp * warp_mul."""
    return lambda w: [(LANES * lane_mul + w * warp_mul, mask)]


def read_back() -> Access:
    return Access("ld.shared.b32", affine(4, 128))


def _matrix_rows(swizzled: bool) -> np.ndarray:
    """ldmatrix/stmatrix.x4 lane addresses of a 16x16 tile of 16-bit elements in 64-byte rows: lane l
    names row l % 16 at 16-byte chunk l / 16; swizzled, the chunk is XORed with (row / 2) % 4."""
    row, chunk = LANES % 16, LANES // 16
    if swizzled:
        chunk = chunk ^ ((row >> 1) & 3)
    return row * 64 + chunk * 16


def _matrix_addr(swizzled: bool) -> str:
    out = "\tand.b32 %r5, %r2, 15;\n\tshr.u32 %r6, %r2, 4;\n"
    if swizzled:
        out += "\tshr.u32 %r7, %r5, 1;\n\tand.b32 %r7, %r7, 3;\n\txor.b32 %r6, %r6, %r7;\n"
    return out + ("\tshl.b32 %r5, %r5, 6;\n\tshl.b32 %r6, %r6, 4;\n\tadd.u32 %r10, %r5, %r6;\n"
                  "\tmad.lo.u32 %r10, %r3, 2048, %r10;\n\tadd.u32 %r10, %r10, %r4;\n")


def _matrix(swizzled: bool) -> Executions:
    return lambda w: [(_matrix_rows(swizzled) + w * 2048, FULL)]


def _cp_async(level: str, size: int, dst_mul: int) -> str:
    """cp.async of ``size`` bytes: thread t copies input bytes t * size.. to smem + lane * dst_mul +
    warp * 4096."""
    return (_addr(dst_mul, 4096) + f"\tmul.wide.u32 %rd5, %r1, {size};\n\tadd.s64 %rd5, %rd1, %rd5;\n"
            f"\tcp.async.{level}.shared.global [%r10], [%rd5], {size};\n"
            "\tcp.async.commit_group;\n\tcp.async.wait_all;\n")


def _cp(op: str, dst_mul: int) -> Access:
    size = int(op.rsplit(".", 1)[1])
    return Access(op, affine(dst_mul, 4096), lambda w: (w * WARP_LANES + LANES) * size)


def _loop_executions(w: int) -> list:
    """``for i < lane % 4: ld smem[i * 128 + lane * 4]``: iteration i runs the lanes with lane % 4 > i."""
    return [(LANES * 4 + i * 128, int(np.sum((LANES % 4 > i) << LANES))) for i in range(3)]


LOOP = ("\tand.b32 %r20, %r2, 3;\n\tmov.u32 %r21, 0;\n\tmul.lo.u32 %r22, %r2, 4;\n\tadd.u32 %r22, %r22, %r4;\n"
        "\tsetp.eq.u32 %p2, %r20, 0;\n\t@%p2 bra $L__done;\n$L__loop:\n\tmad.lo.u32 %r10, %r21, 128, %r22;\n"
        + _ld("b32") + "\tadd.u32 %r21, %r21, 1;\n\tsetp.lt.u32 %p3, %r21, %r20;\n\t@%p3 bra $L__loop;\n$L__done:\n")

BRANCH = ("\tsetp.lt.u32 %p1, %r2, 16;\n\t@%p1 bra $L__low;\n" + _addr(4, 0) + _ld("b32") + "\tbra.uni $L__join;\n"
          "$L__low:\n" + _addr(128, 0) + _ld("b32") + "$L__join:\n")

LOW, HIGH = int(np.sum((LANES < 16) << LANES)), int(np.sum((LANES >= 16) << LANES))

GENERIC = ("\tmov.u64 %rd6, smem;\n\tcvta.shared.u64 %rd6, %rd6;\n\tmul.wide.u32 %rd7, %r2, 8;\n"
           "\tadd.s64 %rd6, %rd6, %rd7;\n\tld.u32 %r11, [%rd6];\n\txor.b32 %r30, %r30, %r11;\n")

CASES: tuple[Case, ...] = (
    Case("ld_row", "ld.shared.b32, lane l at word l: one wavefront, no conflict",
         _addr(4, 128) + _ld("b32"), (Access("ld.shared.b32", affine(4, 128)),)),
    Case("ld_stride2", "ld.shared.b32 at 8-byte stride: lanes l and l + 16 share a bank, 2 wavefronts",
         _addr(8, 256) + _ld("b32"), (Access("ld.shared.b32", affine(8, 256)),)),
    Case("ld_stride32", "ld.shared.b32 at 128-byte stride: every lane in bank 0, 32 wavefronts",
         _addr(128, 4) + _ld("b32"), (Access("ld.shared.b32", affine(128, 4)),)),
    Case("ld_broadcast", "ld.shared.b32, every lane at one word: a broadcast, one wavefront",
         _addr(0, 4) + _ld("b32"), (Access("ld.shared.b32", affine(0, 4)),)),
    Case("ld_u8", "ld.shared.u8, lane l at byte l: one wavefront", _addr(1, 64) + _ld("u8"),
         (Access("ld.shared.u8", affine(1, 64)),)),
    Case("ld_u16_stride", "ld.shared.u16 at 64-byte stride: 16 words of 2 banks, 16 wavefronts",
         _addr(64, 2) + _ld("u16"), (Access("ld.shared.u16", affine(64, 2)),)),
    Case("ld_v2_row", "ld.shared.v2.b32, lane l at 8 l: two phases of 16 lanes, 2 wavefronts",
         _addr(8, 256) + _ld("v2.b32", 2), (Access("ld.shared.v2.b32", affine(8, 256)),)),
    Case("ld_v4_row", "ld.shared.v4.b32, lane l at 16 l: four phases of 8 lanes, 4 wavefronts",
         _addr(16, 512) + _ld("v4.b32", 4), (Access("ld.shared.v4.b32", affine(16, 512)),)),
    Case("ld_v4_stride", "ld.shared.v4.b32 at 32-byte stride: 2 wavefronts per phase, 8 in all",
         _addr(32, 1024) + _ld("v4.b32", 4), (Access("ld.shared.v4.b32", affine(32, 1024)),)),
    Case("ld_v2_pairs", "ld.shared.v2.b32, lanes 2k and 2k+1 at one address: partners merge, 1 wavefront",
         "\tshr.u32 %r5, %r2, 1;\n\tshl.b32 %r10, %r5, 3;\n\tadd.u32 %r10, %r10, %r4;\n" + _ld("v2.b32", 2),
         (Access("ld.shared.v2.b32", lambda w: [((LANES >> 1) * 8, FULL)]),)),
    Case("st_stride2", "st.shared.b32 at 8-byte stride: 2 wavefronts; then a conflict-free read-back",
         _addr(8, 256) + _st("b32") + READ_BACK, (Access("st.shared.b32", affine(8, 256)), read_back())),
    Case("st_v4_stride", "st.shared.v4.b32 at 32-byte stride: 8 wavefronts; then a read-back",
         _addr(32, 1024) + _st("v4.b32", 4) + READ_BACK, (Access("st.shared.v4.b32", affine(32, 1024)), read_back())),
    Case("ldmatrix_plain", "ldmatrix.x4 of a 16x16 f16 tile in 64-byte rows: 4 rows share each bank group, "
         "16 wavefronts", _matrix_addr(False) + _ldmatrix(),
         (Access("ldmatrix.x4", _matrix(False)),)),
    Case("ldmatrix_swizzled", "ldmatrix.x4 of the same tile, chunks XORed with (row / 2) % 4: 4 wavefronts",
         _matrix_addr(True) + _ldmatrix(),
         (Access("ldmatrix.x4", _matrix(True)),)),
    Case("stmatrix_plain", "stmatrix.x4 into 64-byte rows: 16 wavefronts; then a read-back",
         _matrix_addr(False) + "\tstmatrix.sync.aligned.m8n8.x4.shared.b16 [%r10], {%r1, %r1, %r1, %r1};\n" + READ_BACK,
         (Access("stmatrix.x4", _matrix(False)), read_back())),
    Case("stmatrix_swizzled", "stmatrix.x4 into swizzled 64-byte rows: 4 wavefronts; then a read-back",
         _matrix_addr(True) + "\tstmatrix.sync.aligned.m8n8.x4.shared.b16 [%r10], {%r1, %r1, %r1, %r1};\n" + READ_BACK,
         (Access("stmatrix.x4", _matrix(True)), read_back())),
    Case("cp_async_ca16", "cp.async.ca 16 bytes, lane l from source 16 l to 16 l: 4 groups, 4 wavefronts",
         _cp_async("ca", 16, 16), (_cp("cp.async.ca.16", 16),)),
    Case("cp_async_ca16_stride", "cp.async.ca 16 bytes into a 64-byte stride: destinations collide",
         _cp_async("ca", 16, 64), (_cp("cp.async.ca.16", 64),)),
    Case("cp_async_ca4", "cp.async.ca 4 bytes, lane l at word l: one group, one wavefront",
         _cp_async("ca", 4, 4), (_cp("cp.async.ca.4", 4),)),
    Case("cp_async_cg16", "cp.async.cg 16 bytes: bypasses L1, Nsight Compute counts 0 wavefronts",
         _cp_async("cg", 16, 64), (_cp("cp.async.cg.16", 64),)),
    Case("predicated", "@p ld.shared.b32 with p = lane < 16 at 8-byte stride: the 16 lanes off are left out, "
         "1 wavefront", "\tsetp.lt.u32 %p1, %r2, 16;\n" + _addr(8, 256) + _ld("b32", guard="@%p1 "),
         (Access("ld.shared.b32", affine(8, 256, LOW)),)),
    Case("warp0_only", "@p ld.shared.b32 with p = warp 0: warp 1 runs it with no lane on",
         "\tsetp.eq.u32 %p1, %r3, 0;\n" + _addr(8, 0) + _ld("b32", guard="@%p1 "),
         (Access("ld.shared.b32", lambda w: [(LANES * 8, FULL if w == 0 else 0)]),)),
    Case("branch", "if (lane < 16) read at 128-byte stride (16 wavefronts) else at word stride (1): each "
         "side one execution per warp", BRANCH,
         (Access("ld.shared.b32", affine(4, 0, HIGH)), Access("ld.shared.b32", affine(128, 0, LOW)))),
    Case("loop", "for i < lane % 4: read smem[i * 128 + 4 lane]: three executions per warp, 24, 16 and 8 "
         "lanes", LOOP, (Access("ld.shared.b32", _loop_executions),)),
    Case("generic", "ld.u32 through a generic address that lands in shared memory, 8-byte stride",
         GENERIC, (Access("ld.shared.b32", affine(8, 0)),)),
    Case("atom", "atom.shared.add.u32, lane l at word l (its wavefronts are not modelled)",
         _addr(4, 128) + "\tatom.shared.add.u32 %r11, [%r10], 1;\n\txor.b32 %r30, %r30, %r11;\n",
         (Access("atom", affine(4, 128)),)),
    Case("atom_same", "atom.shared.add.u32, every lane of a warp at one word",
         _addr(0, 128) + "\tatom.shared.add.u32 %r11, [%r10], 1;\n\txor.b32 %r30, %r30, %r11;\n",
         (Access("atom", affine(0, 128)),)),
)
# ------------------------------------------------------------------------------------- the second batch

#: Where the kernels read values ptxas must not fold (a loop's trip count): the last words of ``in``.
CONTROL_AT = IN_BYTES - 64
#: CONTROL[0]: the trip count of the cp.async loop (2)
CONTROL = (2,)
WARPGROUP = 128


def _control(k: int, reg: str) -> str:
    return f"\tld.global.u32 {reg}, [%rd1+{CONTROL_AT + 4 * k}];\n"


def _masked(w_on: int) -> Executions:
    """The warp ``w_on`` runs it with every lane, the other warp with none (an idle execution)."""
    return lambda w: [(LANES * 8, FULL if w == w_on else 0)]


def _matrix_op(op: str, num: int, trans: bool, store: bool) -> str:
    regs = "{" + ", ".join(f"%r{11 + i}" for i in range(num)) + "}"
    mods = f"m8n8.x{num}{'.trans' if trans else ''}.shared.b16"
    if store:
        return f"\tstmatrix.sync.aligned.{mods} [%r10], {{{', '.join(['%r1'] * num)}}};\n"
    return (f"\tldmatrix.sync.aligned.{mods} {regs}, [%r10];\n"
            + "".join(f"\txor.b32 %r30, %r30, %r{11 + i};\n" for i in range(num)))


def _atom(addr: str, op: str = "add.u32", value: str = "1", guard: str = "") -> str:
    rest = f"%r11, [%r10], {value}"
    if op.startswith("cas"):
        rest = f"%r11, [%r10], 0, {value}"
    return addr + f"\t{guard}atom.shared.{op} {rest};\n\txor.b32 %r30, %r30, %r11;\n"


def _lane_addr(expr: str) -> str:
    """%r10 = smem + (expr of %r2 = lane, %r3 = warp, computed into %r10) ."""
    return expr + "\tadd.u32 %r10, %r10, %r4;\n"


PAIRS = "\tshr.u32 %r10, %r2, 1;\n\tshl.b32 %r10, %r10, 2;\n\tmad.lo.u32 %r10, %r3, 128, %r10;\n"
QUADS = "\tshr.u32 %r10, %r2, 2;\n\tshl.b32 %r10, %r10, 2;\n\tmad.lo.u32 %r10, %r3, 128, %r10;\n"
HALF_SAME = ("\tshl.b32 %r10, %r2, 2;\n\tsetp.lt.u32 %p2, %r2, 16;\n\tselp.b32 %r10, 0, %r10, %p2;\n"
             "\tmad.lo.u32 %r10, %r3, 128, %r10;\n")


def _atom_case(name: str, doc: str, lanes: np.ndarray, warp_mul: int, addr: str, op: str = "add.u32",
               mask: int = FULL, guard: str = "", value: str = "1", kind: str = "atom") -> Case:
    """``kind``: the Access's op -- "atom", "atom.cas" (``ATOM_CAS_WAVEFRONTS``), "atom.popc"
    (ptxas's ATOMS.POPC.INC: ``popc_inc``); 8-byte ops "atom.64"."""
    width = 8 if op.endswith(("64", "u64", "s64", "b64")) else 4
    return Case(name, doc, _atom(addr, op, value, guard),
                (Access(kind if width == 4 else "atom.64", lambda w: [(lanes + w * warp_mul, mask)]),), batch=2)


def _misc(name: str, doc: str, body: str) -> Case:
    return Case(name, doc, body, (), batch=2)


#: spin: a dependent chain of %r5 trips (%r5 set before), so that warps reach what follows apart
SPIN = ("\tmov.u32 %r6, 0;\n\tsetp.eq.u32 %p3, %r5, 0;\n\t@%p3 bra $L__spun;\n$L__spin:\n"
        "\tmad.lo.u32 %r30, %r30, 1664525, 1013904223;\n\tadd.u32 %r6, %r6, 1;\n"
        "\tsetp.lt.u32 %p3, %r6, %r5;\n\t@%p3 bra $L__spin;\n$L__spun:\n")


def _bar(name: str, doc: str, threads: int, before: str = "", bar: str = "\tbar.sync 0;\n") -> Case:
    return Case(name, doc, before + bar, (), threads=threads, batch=2)


# wgmma: one warpgroup; A at smem + 0, B at smem + 8192 (both zeros: the traffic does not depend on
# the values); descriptors = encode(address) | LBO << 16 | SBO << 32 | mode << 62 (fragsim.MatrixDescriptor)
B_AT = 8192


def _desc(reg: str, at: int, lbo: int, sbo: int, mode: int) -> str:
    const = ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (mode << 62)
    return (f"\tadd.u32 %r40, %r4, {at};\n\tshr.u32 %r40, %r40, 4;\n\tand.b32 %r40, %r40, 16383;\n"
            f"\tcvt.u64.u32 {reg}, %r40;\n\tor.b64 {reg}, {reg}, {const};\n")


def _wgmma(n: int, a: str, b: str, trans_b: int = 0, k_steps: int = 1, b_step: int = 32, a_step: int = 32) -> str:
    """wgmma.mma_async m64n{n}k16 f32 += bf16 * bf16: A from descriptor %rd20 (or registers when
    ``a`` is "regs"), B from %rd21; ``k_steps`` in a row, the descriptors' start advancing by
    ``a_step``/``b_step`` bytes (>> 4 in the descriptor)."""
    regs = n // 2
    d = "{" + ", ".join(f"%f{i}" for i in range(regs)) + "}"
    out = "".join(f"\tmov.f32 %f{i}, 0f00000000;\n" for i in range(regs))
    out += ("" if a == "regs" else a) + b + "\twgmma.fence.sync.aligned;\n"
    for k in range(k_steps):
        if a == "regs":
            a_op, tail = "{%r11, %r12, %r13, %r14}", f"p, 1, 1, {trans_b}"
        else:
            a_op, tail = "%rd20", f"p, 1, 1, 0, {trans_b}"
        out += ("\t{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %r1, 4096;\n"
                f"\twgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 {d}, {a_op}, %rd21, {tail};\n\t}}\n")
        if k + 1 < k_steps:
            out += f"\tadd.s64 %rd21, %rd21, {b_step >> 4};\n"
            if a != "regs":
                out += f"\tadd.s64 %rd20, %rd20, {a_step >> 4};\n"
    out += "\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;\n"
    out += "".join(f"\tmov.b32 %r41, %f{i};\n\txor.b32 %r30, %r30, %r41;\n" for i in range(0, regs, 7))
    return out


def _wg(name: str, doc: str, body: str) -> Case:
    return Case(name, doc, "\tfence.proxy.async.shared::cta;\n\tbar.sync 0;\n" + body, (), threads=WARPGROUP,
                batch=2, target="sm_90a")


SW128, SW64, SW32, NONE = 1, 2, 3, 0
CP_LOOP = (_control(0, "%r20") + "\tmov.u32 %r21, 0;\n$L__copy:\n" + _addr(16, 4096)
           + "\tmad.lo.u32 %r10, %r21, 1024, %r10;\n\tmul.wide.u32 %rd5, %r1, 16;\n\tadd.s64 %rd5, %rd1, %rd5;\n"
           "\tcp.async.ca.shared.global [%r10], [%rd5], 16;\n\tcp.async.commit_group;\n\tcp.async.wait_all;\n"
           "\tadd.u32 %r21, %r21, 1;\n\tsetp.lt.u32 %p2, %r21, %r20;\n\t@%p2 bra $L__copy;\n")
CP_TWO_BLOCKS = ("\tsetp.eq.u32 %p2, %r3, 0;\n\t@%p2 bra $L__first;\n" + _cp_async("ca", 16, 32)
                 + "\tbra.uni $L__both;\n$L__first:\n" + _cp_async("ca", 4, 4) + "$L__both:\n"
                 + _cp_async("ca", 16, 16).replace("%r10", "%r19"))


def _cp_loop_executions(w: int) -> list:
    return [(LANES * 16 + w * 4096 + i * 1024, FULL) for i in range(CONTROL[0])]


CASES2 = (
    # the bank model on strides and widths the first batch did not hold
    Case("ld_stride12", "ld.shared.b32 at a 12-byte stride: an odd word stride, no conflict", _addr(12, 384)
         + _ld("b32"), (Access("ld.shared.b32", affine(12, 384)),), batch=2),
    Case("ld_stride64", "ld.shared.b32 at a 64-byte stride: lanes l and l + 2 share a bank, 16 wavefronts",
         _addr(64, 4) + _ld("b32"), (Access("ld.shared.b32", affine(64, 4)),), batch=2),
    Case("ld_u8_stride128", "ld.shared.u8 at a 128-byte stride: 32 words of bank 0, 32 wavefronts",
         _addr(128, 1) + _ld("u8"), (Access("ld.shared.u8", affine(128, 1)),), batch=2),
    Case("ld_u16_row", "ld.shared.u16, lane l at 2 l: one wavefront", _addr(2, 64) + _ld("u16"),
         (Access("ld.shared.u16", affine(2, 64)),), batch=2),
    Case("ld_v2_stride16", "ld.shared.v2.b32 at a 16-byte stride: each half-warp phase 2-way, 4 wavefronts",
         _addr(16, 512) + _ld("v2.b32", 2), (Access("ld.shared.v2.b32", affine(16, 512)),), batch=2),
    Case("ld_v4_same", "ld.shared.v4.b32, every lane at one address", _addr(0, 16) + _ld("v4.b32", 4),
         (Access("ld.shared.v4.b32", affine(0, 16)),), batch=2),
    Case("st_u16_row", "st.shared.u16, lane l at 2 l; then a read-back", _addr(2, 64) + _st("u16") + READ_BACK,
         (Access("st.shared.u16", affine(2, 64)), read_back()), batch=2),
    Case("st_v2_stride32", "st.shared.v2.b32 at a 32-byte stride; then a read-back",
         _addr(32, 1024) + _st("v2.b32", 2) + READ_BACK, (Access("st.shared.v2.b32", affine(32, 1024)), read_back()),
         batch=2),
    Case("st_no_barrier", "st.shared.b32 at an 8-byte stride, nothing after it", _addr(8, 256) + _st("b32"),
         (Access("st.shared.b32", affine(8, 256)),), batch=2),
    Case("ldmatrix_x1", "ldmatrix.x1 of 64-byte rows: lanes 8.. name nothing", _matrix_addr(False)
         + _matrix_op("ldmatrix", 1, False, False), (Access("ldmatrix.x1", _matrix(False)),), batch=2),
    Case("ldmatrix_x2_trans", "ldmatrix.x2.trans of 64-byte rows", _matrix_addr(False)
         + _matrix_op("ldmatrix", 2, True, False), (Access("ldmatrix.x2.trans", _matrix(False)),), batch=2),
    Case("stmatrix_x2_trans", "stmatrix.x2.trans into swizzled rows; then a read-back", _matrix_addr(True)
         + _matrix_op("stmatrix", 2, True, True) + READ_BACK,
         (Access("stmatrix.x2.trans", _matrix(True)), read_back()), batch=2),
    Case("generic_st", "st.u32 through a generic address into shared memory, 8-byte stride; a read-back",
         GENERIC.replace("ld.u32 %r11, [%rd6];\n\txor.b32 %r30, %r30, %r11;\n", "st.u32 [%rd6], %r1;\n")
         + READ_BACK, (Access("st.shared.b32", affine(8, 0)), read_back()), batch=2),
    Case("cp_async_ca8", "cp.async.ca 8 bytes, lane l at 8 l", _cp_async("ca", 8, 8), (_cp("cp.async.ca.8", 8),),
         batch=2),
    Case("cp_async_cg16_row", "cp.async.cg 16 bytes in a row (its executions only: Nsight Compute's source page "
         "estimates what the counters do not count)", _cp_async("cg", 16, 16), (_cp("cp.async.cg.16", 16),), batch=2),
    Case("loop_unrolled", "for i < 4 (a constant trip count ptxas unrolls): read smem[i * 128 + 4 lane]",
         "\tmov.u32 %r21, 0;\n$L__four:\n" + _addr(4, 0) + "\tmad.lo.u32 %r10, %r21, 128, %r10;\n" + _ld("b32")
         + "\tadd.u32 %r21, %r21, 1;\n\tsetp.lt.u32 %p2, %r21, 4;\n\t@%p2 bra $L__four;\n",
         (Access("ld.shared.b32", lambda w: [(LANES * 4 + i * 128, FULL) for i in range(4)]),), batch=2),
    # a warp whose lanes are all off still issues the instruction
    Case("st_warp0_only", "@p st.shared.b32 with p = warp 0: warp 1 issues it idle; then a read-back",
         "\tsetp.eq.u32 %p1, %r3, 0;\n" + _addr(8, 0) + "\t@%p1 st.shared.b32 [%r10], %r1;\n" + READ_BACK,
         (Access("st.shared.b32", _masked(0)), read_back()), batch=2),
    Case("ldmatrix_warp0_only", "@p ldmatrix.x4 with p = warp 0 (uniform in each warp): warp 1 idle",
         "\tsetp.eq.u32 %p1, %r3, 0;\n" + _matrix_addr(False) + _ldmatrix().replace("\tldmatrix", "\t@%p1 ldmatrix"),
         (Access("ldmatrix.x4", lambda w: [(_matrix_rows(False) + w * 2048, FULL if w == 0 else 0)]),), batch=2),
    Case("atom_warp0_only", "@p atom.shared.add.u32 with p = warp 0, lane l at word l: ptxas branches around "
         "it, warp 1 does not issue it", "\tsetp.eq.u32 %p1, %r3, 0;\n" + _atom(_addr(4, 0), guard="@%p1 "),
         (Access("atom", lambda w: [(LANES * 4, FULL)] if w == 0 else []),), batch=2),
    Case("cp_async_warp0_only", "@p cp.async.ca 16 with p = warp 0: warp 1 issues it idle, and both run "
         "ptxas's three never-executed LDS before it", "\tsetp.eq.u32 %p1, %r3, 0;\n"
         + _cp_async("ca", 16, 16).replace("\tcp.async.ca.", "\t@%p1 cp.async.ca."),
         (Access("cp.async.ca.16", lambda w: [(LANES * 16 + w * 4096, FULL if w == 0 else 0)],
                 lambda w: (w * WARP_LANES + LANES) * 16),), batch=2),
    # ptxas's never-executed LDS: per basic block with a cp.async, per time a warp runs it
    Case("cp_async_loop2", "cp.async.ca 16 in a loop of 2 trips (read from memory): the block's 3 LDS run "
         "each trip", CP_LOOP, (Access("cp.async.ca.16", _cp_loop_executions,
                                       lambda w: (w * WARP_LANES + LANES) * 16),), batch=2),
    Case("cp_async_two_blocks", "warp 0 copies in one block, warp 1 in another, both in a third: 3 + 3 + 6 "
         "never-executed LDS", CP_TWO_BLOCKS,
         (Access("cp.async.ca.16", lambda w: [(LANES * 32 + w * 4096, FULL)] if w else [],
                 lambda w: (w * WARP_LANES + LANES) * 16),
          Access("cp.async.ca.4", lambda w: [(LANES * 4 + w * 4096, FULL)] if not w else [],
                 lambda w: (w * WARP_LANES + LANES) * 4),
          Access("cp.async.ca.16", affine(16, 4096), lambda w: (w * WARP_LANES + LANES) * 16)), batch=2),
    # instructions with an op_misc cost of their own (or none)
    _misc("shfl3", "three shfl.sync.bfly of a lane's own value: 3 op_misc wavefronts per warp",
          "\tmul.lo.u32 %r5, %r1, %r1;\n\tshfl.sync.bfly.b32 %r6, %r5, 1, 31, -1;\n\tadd.u32 %r6, %r6, %r5;\n"
          "\tshfl.sync.bfly.b32 %r7, %r6, 2, 31, -1;\n\tmul.lo.u32 %r7, %r7, %r6;\n"
          "\tshfl.sync.bfly.b32 %r8, %r7, 4, 31, -1;\n\txor.b32 %r30, %r30, %r8;\n"),
    _misc("shfl_warp0_only", "@p shfl.sync with p = warp 0: warp 1 issues it idle",
          "\tsetp.eq.u32 %p1, %r3, 0;\n\tmov.u32 %r5, 0;\n\t@%p1 shfl.sync.bfly.b32 %r5, %r1, 1, 31, -1;\n"
          "\txor.b32 %r30, %r30, %r5;\n"),
    _misc("redux3", "three redux.sync (REDUX: run2, none)",
          "\tredux.sync.add.u32 %r5, %r1, -1;\n\tredux.sync.max.u32 %r6, %r5, -1;\n\tredux.sync.or.b32 %r7, %r6, -1;\n"
          "\txor.b32 %r30, %r30, %r7;\n"),
    _misc("vote3", "three vote.sync.ballot (VOTE: no op_misc claimed)",
          "\tsetp.lt.u32 %p2, %r2, 5;\n\tvote.sync.ballot.b32 %r5, %p2, -1;\n\tsetp.lt.u32 %p2, %r5, %r1;\n"
          "\tvote.sync.ballot.b32 %r6, %p2, -1;\n\tsetp.lt.u32 %p2, %r6, %r2;\n\tvote.sync.ballot.b32 %r7, %p2, -1;\n"
          "\txor.b32 %r30, %r30, %r7;\n"),
    _misc("match1", "one match.any.sync (MATCH: no op_misc claimed)",
          "\tand.b32 %r5, %r2, 3;\n\tmatch.any.sync.b32 %r6, %r5, -1;\n\txor.b32 %r30, %r30, %r6;\n"),
    _misc("elect1", "one elect.sync with every lane (ELECT: no op_misc claimed)",
          "\telect.sync %r5|%p2, -1;\n\tselp.u32 %r6, 1, 0, %p2;\n\txor.b32 %r30, %r30, %r6;\n\txor.b32 %r30, %r30, %r5;\n"),
    _misc("membar_cta", "membar.cta (MEMBAR.SC.CTA): a warp may wait (run2: 1 of 2)", "\tmembar.cta;\n"),
    _misc("membar_gl", "membar.gl (MEMBAR.SC.GPU with ERRBAR, CGAERRBAR, CCTL.IVALL)", "\tmembar.gl;\n"),
    _misc("fence_acq_rel_cta", "fence.acq_rel.cta (MEMBAR.ALL.CTA)", "\tfence.acq_rel.cta;\n"),
    _misc("fence_proxy_async", "fence.proxy.async (MEMBAR.ALL.GPU + FENCE.VIEW.ASYNC.S)", "\tfence.proxy.async;\n"),
    _misc("fence_proxy_shared", "fence.proxy.async.shared::cta (MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S)",
          "\tfence.proxy.async.shared::cta;\n"),
    _misc("fence_proxy_global", "fence.proxy.async.global (FENCE.VIEW.ASYNC.G only: none claimed)",
          "\tfence.proxy.async.global;\n"),
    _misc("warpsync_divergent", "shfl.sync with half the lanes in a branch: ptxas's WARPSYNC (run2: none)",
          "\tmov.u32 %r5, 0;\n\tsetp.lt.u32 %p2, %r2, 16;\n\t@!%p2 bra $L__past;\n"
          "\tshfl.sync.bfly.b32 %r5, %r1, 1, 15, 0xffff;\n$L__past:\n\txor.b32 %r30, %r30, %r5;\n"),
    # barriers: one op_misc wavefront per warp that waits, at most every warp
    _bar("bar_one_warp", "bar.sync in a one-warp CTA (run2: 1 wavefront)", 32),
    _bar("bar4_a", "bar.sync with 4 warps arriving together (a, b and c: the same kernel thrice)", 128),
    _bar("bar4_b", "bar.sync with 4 warps arriving together (a, b and c: the same kernel thrice)", 128),
    _bar("bar4_c", "bar.sync with 4 warps arriving together (a, b and c: the same kernel thrice)", 128),
    _bar("bar4_staggered", "bar.sync after warp w spins 64 w trips: warps arrive one by one, 3 wait", 128,
         "\tshl.b32 %r5, %r3, 6;\n" + SPIN),
    _bar("bar4_late0", "bar.sync after warp 0 alone spins 256 trips: warps 1-3 wait", 128,
         "\tsetp.eq.u32 %p2, %r3, 0;\n\tselp.u32 %r5, 256, 0, %p2;\n" + SPIN),
    _bar("bar8_staggered", "bar.sync after warp w spins 64 w trips, 8 warps: 7 wait", 256, "\tshl.b32 %r5, %r3, 6;\n"
         + SPIN),
    _bar("bar4_twice", "two bar.sync in a row, 4 warps", 128, "", "\tbar.sync 0;\n\tbar.sync 0;\n"),
    _bar("bar_named", "bar.sync 1, 64 by warps 0 and 1 of 4 (warps 2 and 3 pass it by)", 128,
         "\tsetp.gt.u32 %p2, %r3, 1;\n\tshl.b32 %r5, %r3, 6;\n" + SPIN + "\t@%p2 bra $L__named;\n",
         "\tbar.sync 1, 64;\n$L__named:\n"),
    # atomics on shared memory: the most active lanes in one bank (traffic.ATOM_LANES_PER_BANK)
    _atom_case("atom_stride8", "atom.shared.add.u32 at an 8-byte stride: 2 lanes per bank", LANES * 8, 256,
               _addr(8, 256)),
    _atom_case("atom_pairs", "atom.shared.add.u32, lanes 2k and 2k + 1 at one word", (LANES >> 1) * 4, 128,
               _lane_addr(PAIRS)),
    _atom_case("atom_quads", "atom.shared.add.u32, 4 lanes at each of 8 words", (LANES >> 2) * 4, 128,
               _lane_addr(QUADS)),
    _atom_case("atom_bank0", "atom.shared.add.u32 at a 128-byte stride: 32 words of one bank", LANES * 128, 4,
               _addr(128, 4)),
    _atom_case("atom_half_same", "atom.shared.add.u32: lanes 0-15 at one word, 16-31 at their own",
               np.where(LANES < 16, 0, LANES * 4), 128, _lane_addr(HALF_SAME)),
    _atom_case("atom_masked", "@p atom.shared.add.u32 with p = lane < 8, lane l at word l", LANES * 4, 128,
               "\tsetp.lt.u32 %p2, %r2, 8;\n" + _addr(4, 128), mask=0xFF, guard="@%p2 "),
    _atom_case("atom_cas_same", "atom.shared.cas.b32, every lane of a warp at one word", LANES * 0, 128,
               _addr(0, 128), "cas.b32", value="%r1", kind="atom.cas"),
    _atom_case("atom_exch", "atom.shared.exch.b32, lane l at word l", LANES * 4, 128, _addr(4, 128), "exch.b32",
               value="%r1"),
    _atom_case("atom_min_same", "atom.shared.min.s32, every lane of a warp at one word", LANES * 0, 128,
               _addr(0, 128), "min.s32", value="%r1"),
    Case("red_same", "red.shared.add.u32 of 1, every lane of a warp at one word (ptxas: ATOMS.POPC.INC)", _addr(0, 128)
         + "\tred.shared.add.u32 [%r10], 1;\n", (Access("atom.popc", affine(0, 128)),), batch=2),
    Case("atom_u64", "atom.shared.add.u64, lane l at 8 l: ptxas's compare-and-swap loop (not modelled)", _addr(8, 256)
         + "\tcvt.u64.u32 %rd6, %r1;\n\tatom.shared.add.u64 %rd7, [%r10], %rd6;\n\tcvt.u32.u64 %r11, %rd7;\n"
         "\txor.b32 %r30, %r30, %r11;\n", (Access("atom.64", affine(8, 256)),), batch=2),
    Case("atom_u64_same", "atom.shared.add.u64, every lane at one 8-byte word: a compare-and-swap loop", _addr(0, 256)
         + "\tcvt.u64.u32 %rd6, %r1;\n\tatom.shared.add.u64 %rd7, [%r10], %rd6;\n\tcvt.u32.u64 %r11, %rd7;\n"
         "\txor.b32 %r30, %r30, %r11;\n", (Access("atom.64", affine(0, 256)),), batch=2),
    Case("atom_f32", "atom.shared.add.f32, lane l at word l: a compare-and-swap loop (not modelled)", _addr(4, 128)
         + "\tcvt.rn.f32.u32 %f1, %r1;\n\tatom.shared.add.f32 %f2, [%r10], %f1;\n\tmov.b32 %r11, %f2;\n"
         "\txor.b32 %r30, %r30, %r11;\n", (Access("atom", affine(4, 128)),), batch=2),
    # wgmma's operand reads through descriptors: other shapes, swizzles, A from registers, MN-major B
    _wg("wgmma_n128_sw128", "m64n128k16 bf16, A and B K-major with the 128-byte swizzle",
        _wgmma(128, _desc("%rd20", 0, 16, 1024, SW128), _desc("%rd21", B_AT, 16, 1024, SW128))),
    _wg("wgmma_sw64", "m64n64k16 bf16, A and B K-major with the 64-byte swizzle",
        _wgmma(64, _desc("%rd20", 0, 16, 512, SW64), _desc("%rd21", B_AT, 16, 512, SW64))),
    _wg("wgmma_sw32", "m64n64k16 bf16, A and B K-major with the 32-byte swizzle",
        _wgmma(64, _desc("%rd20", 0, 16, 256, SW32), _desc("%rd21", B_AT, 16, 256, SW32))),
    _wg("wgmma_none", "m64n64k16 bf16, A and B K-major without swizzle: core matrices of 128 contiguous bytes, "
        "the second k half 128 bytes on, the next 8 rows 256 on",
        _wgmma(64, _desc("%rd20", 0, 128, 256, NONE), _desc("%rd21", B_AT, 128, 256, NONE))),
    _wg("wgmma_none_spread", "m64n64k16 bf16 without swizzle, core matrices 1024 bytes apart",
        _wgmma(64, _desc("%rd20", 0, 1024, 2048, NONE), _desc("%rd21", B_AT, 1024, 2048, NONE))),
    _wg("wgmma_rs", "m64n64k16 bf16, A from registers, B K-major 128-byte swizzle",
        _wgmma(64, "regs", _desc("%rd21", B_AT, 16, 1024, SW128))),
    _wg("wgmma_mn_major", "m64n64k16 bf16, B MN-major (imm-trans-b) with the 128-byte swizzle",
        _wgmma(64, _desc("%rd20", 0, 16, 1024, SW128), _desc("%rd21", B_AT, 8192, 1024, SW128), trans_b=1)),
    _wg("wgmma_k2", "two k-steps of m64n64k16 bf16, 128-byte swizzle, the descriptors advanced by 32 bytes",
        _wgmma(64, _desc("%rd20", 0, 16, 1024, SW128), _desc("%rd21", B_AT, 16, 1024, SW128), k_steps=2)),
)

#: guard: p = warp 0 (uniform in each warp)
WARP0 = "\tsetp.eq.u32 %p1, %r3, 0;\n"


def _case3(name: str, doc: str, body: str, accesses: tuple = (), threads: int = 0) -> Case:
    return Case(name, doc, body, accesses, threads=threads, batch=3)


def _atom3(name: str, doc: str, lanes: np.ndarray, addr: str, op: str, value: str, kind: str,
           red: bool = False) -> Case:
    """An atom (``red``: a red) of every lane of both warps, warp w at ``lanes`` + 128 w."""
    body = (addr + f"\tred.shared.{op} [%r10], {value};\n") if red else _atom(addr, op, value)
    return _case3(name, doc, body, (Access(kind, lambda w: [(lanes + w * 128, FULL)]),))


#: the third batch: variants of the rules run2 refitted (fences by scope, redux, atomics ptxas
#: aggregates or runs twice, guard-off warps of other ops, barriers of 2 and 3 warps), none of them
#: in the first two batches
CASES3 = (
    # fences: the SASS of each spelling (traffic.fence_sass) and what it costs
    _case3("membar_sys", "membar.sys (MEMBAR.SC.SYS + ERRBAR + CGAERRBAR + CCTL.IVALL): 2 per warp",
           "\tmembar.sys;\n"),
    _case3("fence_sc_cta", "fence.sc.cta (MEMBAR.SC.CTA): a warp may wait", "\tfence.sc.cta;\n"),
    _case3("fence_acq_rel_gpu", "fence.acq_rel.gpu (MEMBAR.ALL.GPU + ERRBAR + CGAERRBAR + CCTL.IVALL)",
           "\tfence.acq_rel.gpu;\n"),
    _case3("fence_sc_cluster", "fence.sc.cluster (MEMBAR.SC.GPU + ERRBAR + CGAERRBAR + CCTL.IVALL)",
           "\tfence.sc.cluster;\n"),
    _case3("fence_proxy_cluster", "fence.proxy.async.shared::cluster (MEMBAR.ALL.GPU + FENCE.VIEW.ASYNC.S)",
           "\tfence.proxy.async.shared::cluster;\n"),
    _case3("fence_mbarrier_init", "fence.mbarrier_init.release.cluster (no SASS)",
           "\tfence.mbarrier_init.release.cluster;\n"),
    _case3("membar_cta3", "three membar.cta in a row: each warp may wait at each", "\tmembar.cta;\n" * 3),
    _case3("membar_cta_after_st", "st.shared then membar.cta: the store outstanding at the MEMBAR",
           _addr(4, 128) + _st("b32") + "\tmembar.cta;\n", (Access("st.shared.b32", affine(4, 128)),)),
    _case3("membar_cta_4warps", "membar.cta in a CTA of 4 warps", "\tmembar.cta;\n", threads=128),
    _case3("membar_gl_4warps", "membar.gl in a CTA of 4 warps: 2 per warp", "\tmembar.gl;\n", threads=128),
    _case3("fence_mix", "fence.proxy.async, membar.cta, fence.acq_rel.gpu, fence.proxy.async.global",
           "\tfence.proxy.async;\n\tmembar.cta;\n\tfence.acq_rel.gpu;\n\tfence.proxy.async.global;\n"),
    # redux.sync
    _case3("redux_min1", "one redux.sync.min.s32 (REDUX): none", "\tredux.sync.min.s32 %r5, %r1, -1;\n"
           "\txor.b32 %r30, %r30, %r5;\n"),
    _case3("redux_half", "redux.sync.add.u32 of the lanes < 16, in a branch (membermask 0xffff)",
           "\tmov.u32 %r5, 0;\n\tsetp.lt.u32 %p2, %r2, 16;\n\t@!%p2 bra $L__past;\n"
           "\tredux.sync.add.u32 %r5, %r1, 0xffff;\n$L__past:\n\txor.b32 %r30, %r30, %r5;\n"),
    _case3("redux_warp0_only", "@p redux.sync with p = warp 0", WARP0 + "\tmov.u32 %r5, 0;\n"
           "\t@%p1 redux.sync.add.u32 %r5, %r1, -1;\n\txor.b32 %r30, %r30, %r5;\n"),
    # atomics: red.add of 1 (ATOMS.POPC.INC), other red/atom, cas at other spreads
    _atom3("red1_row", "red.shared.add.u32 of 1, lane l at word l: POPC.INC, one wavefront", LANES * 4,
           _addr(4, 128), "add.u32", "1", "atom.popc", red=True),
    _atom3("red1_pairs", "red.shared.add.u32 of 1, lanes 2k and 2k+1 at word k", (LANES // 2) * 4, PAIRS
           + "\tadd.u32 %r10, %r10, %r4;\n", "add.u32", "1", "atom.popc", red=True),
    _atom3("red1_bank0", "red.shared.add.u32 of 1 at a 128-byte stride: 32 words of bank 0", LANES * 128,
           _addr(128, 0), "add.u32", "1", "atom.popc", red=True),
    _atom3("red3_same", "red.shared.add.u32 of 3, every lane at one word (not an increment)", LANES * 0,
           _addr(0, 128), "add.u32", "3", "atom", red=True),
    _atom3("red_reg_same", "red.shared.add.u32 of a register, every lane at one word", LANES * 0,
           _addr(0, 128), "add.u32", "%r1", "atom", red=True),
    _atom3("red_min_same", "red.shared.min.u32, every lane at one word", LANES * 0, _addr(0, 128), "min.u32",
           "%r1", "atom", red=True),
    _atom3("red_or_row", "red.shared.or.b32, lane l at word l", LANES * 4, _addr(4, 128), "or.b32", "%r1", "atom",
           red=True),
    _atom3("atom1_same", "atom.shared.add.u32 of 1 (result used), every lane at one word", LANES * 0,
           _addr(0, 128), "add.u32", "1", "atom"),
    _atom3("atom_inc_same", "atom.shared.inc.u32, every lane at one word", LANES * 0, _addr(0, 128), "inc.u32",
           "1000", "atom"),
    _atom3("cas_row", "atom.shared.cas.b32, lane l at word l: one round", LANES * 4, _addr(4, 128), "cas.b32",
           "%r1", "atom.cas"),
    _atom3("cas_pairs", "atom.shared.cas.b32, lanes 2k and 2k+1 at word k: two rounds", (LANES // 2) * 4,
           PAIRS + "\tadd.u32 %r10, %r10, %r4;\n", "cas.b32", "%r1", "atom.cas"),
    _atom3("cas_stride8", "atom.shared.cas.b32 at an 8-byte stride: 2 lanes a bank", LANES * 8, _addr(8, 0),
           "cas.b32", "%r1", "atom.cas"),
    # a warp whose guard turns every lane off, on other ops
    _case3("ld_v4_warp0_only", "@p ld.shared.v4.b32 with p = warp 0: warp 1 idle",
           WARP0 + _addr(16, 0) + _ld("v4.b32", 4, guard="@%p1 "),
           (Access("ld.shared.v4.b32", lambda w: [(LANES * 16, FULL if w == 0 else 0)]),)),
    _case3("stmatrix_warp0_only", "@p stmatrix.x4 with p = warp 0: warp 1 idle", WARP0 + _matrix_addr(False)
           + _matrix_op("stmatrix", 4, False, True).replace("\tstmatrix", "\t@%p1 stmatrix"),
           (Access("stmatrix.x4", lambda w: [(_matrix_rows(False) + w * 2048, FULL if w == 0 else 0)]),)),
    _case3("red_warp0_only", "@p red.shared.add.u32 of 1 with p = warp 0", WARP0 + _addr(4, 0)
           + "\t@%p1 red.shared.add.u32 [%r10], 1;\n",
           (Access("atom.popc", lambda w: [(LANES * 4, FULL)] if w == 0 else []),)),
    _case3("cas_warp0_only", "@p atom.shared.cas.b32 with p = warp 0, lane l at word l",
           WARP0 + _atom(_addr(4, 0), "cas.b32", "%r1", guard="@%p1 "),
           (Access("atom.cas", lambda w: [(LANES * 4, FULL)] if w == 0 else []),)),
    _case3("membar_warp0_only", "@p membar.gl with p = warp 0", WARP0 + "\t@%p1 membar.gl;\n"),
    _case3("shfl_idx_warp1_only", "@p shfl.sync.idx with p = warp 1", "\tsetp.eq.u32 %p1, %r3, 1;\n"
           "\tmov.u32 %r5, 0;\n\t@%p1 shfl.sync.idx.b32 %r5, %r1, 3, 31, -1;\n\txor.b32 %r30, %r30, %r5;\n"),
    # barriers of 2 and 3 warps
    Case("bar2", "bar.sync, 2 warps arriving together", "\tbar.sync 0;\n", (), threads=64, batch=3),
    Case("bar3", "bar.sync, 3 warps arriving together", "\tbar.sync 0;\n", (), threads=96, batch=3),
    Case("bar3_staggered", "bar.sync after warp w spins 64 w trips, 3 warps", "\tshl.b32 %r5, %r3, 6;\n" + SPIN
         + "\tbar.sync 0;\n", (), threads=96, batch=3),
    Case("bar2_twice", "two bar.sync, 2 warps", "\tbar.sync 0;\n\tbar.sync 0;\n", (), threads=64, batch=3),
    Case("barrier_aligned3", "barrier.sync.aligned 0, 3 warps", "\tbarrier.sync.aligned 0;\n", (), threads=96,
         batch=3),
    Case("bar_arrive_sync", "warp 0 bar.arrive 1, 64; warp 1 bar.sync 1, 64", WARP0 + "\t@!%p1 bra $L__waiter;\n"
         "\tbar.arrive 1, 64;\n\tbra.uni $L__after;\n$L__waiter:\n\tbar.sync 1, 64;\n$L__after:\n", (),
         batch=3),
)
CASES = CASES + CASES2 + CASES3
BY_NAME = {c.name: c for c in CASES}


def buffers(seed: int = 0, threads: int = THREADS) -> dict[str, np.ndarray]:
    """The launch's buffers: ``in`` (cp.async sources, random bytes; its last words the ``CONTROL``
    values the kernels read where ptxas must not see a constant) and ``out`` (a word per thread)."""
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, IN_BYTES, dtype=np.uint8)
    data[CONTROL_AT:CONTROL_AT + 4 * len(CONTROL)] = np.array(CONTROL, np.uint32).view(np.uint8)
    return {"in": data, "out": np.zeros(threads, np.uint32)}


def module_source() -> str:
    """The first batch's kernels in one module (one static ``smem`` shared by name)."""
    return HEADER + "".join(c.entry_text() for c in CASES if c.batch == 1)
