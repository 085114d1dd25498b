"""Small PTX kernels, one shared-memory access pattern each, for the shared-memory traffic report
(``fragsim.ptx.traffic``): the CPU tests run them through ``run_kernel(report=True)`` and compare
every instruction's figures with the bank model on the same access set; gpu_check/ptx_ncu.py runs
them on the GPU under Nsight Compute.

Every kernel is one CTA of ``THREADS`` threads (two warps) with a 16 KiB static shared array
``smem``, an input buffer (cp.async reads it) and an output buffer (each thread stores what it
loaded, so that ptxas keeps the loads).  ``Case.accesses`` lists the shared-memory instructions of
the kernel in PTX order, each with its table entry and, per warp, its executions (the 32 lanes'
byte offsets in ``smem`` and the mask of active lanes) -- the same arithmetic as the PTX, in Python.
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

    @property
    def entry(self) -> str:
        return "fs_traffic_" + self.name

    def ptx(self) -> str:
        """The kernel as a module of its own."""
        return HEADER + self.entry_text()

    def entry_text(self) -> str:
        return PROLOGUE.format(entry=self.entry) + self.body + EPILOGUE


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

CASES = (
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
         (Access("ld.shared.b32", lambda w: [(LANES * 8, FULL)] if w == 0 else []),)),
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
BY_NAME = {c.name: c for c in CASES}


def buffers(seed: int = 0) -> dict[str, np.ndarray]:
    """The launch's buffers: ``in`` (cp.async sources, random bytes) and ``out`` (a word per thread)."""
    rng = np.random.default_rng(seed)
    return {"in": rng.integers(0, 256, IN_BYTES, dtype=np.uint8), "out": np.zeros(THREADS, np.uint32)}


def module_source() -> str:
    """Every case's kernel in one module (one static ``smem`` shared by name)."""
    return HEADER + "".join(c.entry_text() for c in CASES)
