"""Measure shared-memory wavefronts and bank conflicts with Nsight Compute, one instruction at a time.

A probe program (``ncu_banks_probe.cu``, one kernel per shared-memory instruction) launches one
warp per address set; each launch runs exactly one ``LDSM``/``STSM``/``LDS``/``STS``/``LDGSTS``
(``cuobjdump -sass`` checks this before anything is measured).  ``ncu --clock-control none`` reads
the wavefront and bank-conflict counters of every launch; the address sets, masks and counters are
written to a compact ``.npz`` record that ``tests/test_banks_hw_replay.py`` replays against
``fragsim.bank_conflicts``.

    python -m fragsim.gpu_check.ncu_banks measure --record DIR [--seed N] [--budget SECONDS]
    python -m fragsim.gpu_check.ncu_banks compare RECORD.npz     # model vs a record, on any machine
    fragsim conflicts --ncu-measure --record DIR                  # the same, from the CLI

Nsight Compute missing, or unable to read the counters: one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from fragsim.instructions.shared_ops import parse_shared_op

SMEM_BYTES = 16384
TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ncu_banks_probe.cu")

# Every instruction the probe measures, in kernel-table order (the op id is the index).
OPS = (
    "ldmatrix.x1", "ldmatrix.x2", "ldmatrix.x4",
    "ldmatrix.x1.trans", "ldmatrix.x2.trans", "ldmatrix.x4.trans",
    "stmatrix.x1", "stmatrix.x2", "stmatrix.x4",
    "stmatrix.x1.trans", "stmatrix.x2.trans", "stmatrix.x4.trans",
    "ld.shared.u8", "ld.shared.u16", "ld.shared.b32", "ld.shared.v2.b32", "ld.shared.v4.b32",
    "st.shared.u8", "st.shared.u16", "st.shared.b32", "st.shared.v2.b32", "st.shared.v4.b32",
    "cp.async.ca.4", "cp.async.ca.8", "cp.async.ca.16", "cp.async.cg.16",
)

# ncu metrics: the ones the model predicts, then context (instruction counts, ncu's own
# instrumented wavefront/ideal figures, bank reads/writes).  Those the device lacks are skipped.
METRICS = (
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_misc.sum",
    "l1tex__data_bank_reads.sum",
    "l1tex__data_bank_writes.sum",
    "smsp__inst_executed_op_ldsm.sum",
    "smsp__inst_executed_op_shared_stsm.sum",
    "smsp__inst_executed_op_shared_ld.sum",
    "smsp__inst_executed_op_shared_st.sum",
    "smsp__inst_executed_op_ldgsts.sum",
)
# ncu's own SASS-instrumented estimate; slow to collect, measured in the first record only
SASS_METRICS = ("smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared.sum",)

# short names used in records and by the replay test
SHORT = {
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "wf_ld",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "wf_st",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum": "wf_shared",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "bc_ld",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "bc_st",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum": "bc_ldgsts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum": "bc_shared",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_cmd_read.sum": "wf_read",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_cmd_write.sum": "wf_write",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum": "wf_ldgsts",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum": "wf_ldsm",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_stsm.sum": "wf_stsm",
    "l1tex__data_bank_reads.sum": "bank_reads",
    "l1tex__data_bank_writes.sum": "bank_writes",
    "smsp__inst_executed_op_ldsm.sum": "inst_ldsm",
    "smsp__inst_executed_op_shared_stsm.sum": "inst_stsm",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_misc.sum": "wf_op_misc",
    "smsp__inst_executed_op_shared_ld.sum": "inst_ld",
    "smsp__inst_executed_op_shared_st.sum": "inst_st",
    "smsp__inst_executed_op_ldgsts.sum": "inst_ldgsts",
    "smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared.sum": "sass_wf",
    "smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared_ideal.sum": "sass_ideal",
}

SASS_OPCODE = {"ldsm": "LDSM", "stsm": "STSM", "ld": "LDS", "st": "STS", "ldgsts": "LDGSTS"}
SHARED_OPCODES = {"LDS", "STS", "LDSM", "STSM", "LDGSTS", "ATOMS", "LD", "ST", "ATOM", "RED", "LDSU"}


class NcuUnavailable(RuntimeError):
    """Nsight Compute (or nvcc, or the counters) cannot be used here."""


# ---------------------------------------------------------------------------------------------
# the probe program
# ---------------------------------------------------------------------------------------------

def kernel_name(op: str) -> str:
    return "probe_" + re.sub(r"[^a-z0-9]+", "_", op)


def _kernel(op: str) -> str:
    o = parse_shared_op(op)
    head = (f'extern "C" __global__ void __launch_bounds__(32) {kernel_name(op)}'
            "(const unsigned* __restrict__ c, unsigned* __restrict__ out, const unsigned char* __restrict__ src) {\n"
            f"    __shared__ __align__(1024) unsigned char smem[SMEM_BYTES];\n"
            "    const unsigned lane = threadIdx.x;\n"
            "    const unsigned a = (unsigned)__cvta_generic_to_shared(smem) + c[lane];\n"
            "    const unsigned mask = c[32];\n")
    if o.kind in ("ldsm", "stsm"):
        n = o.num
        ptx = o.ptx  # the instruction table's spelling
        regs = ",".join(f"%{i}" for i in range(n))
        if o.kind == "ldsm":
            body = (f"    unsigned r[4] = {{0, 0, 0, 0}};\n"
                    f'    asm volatile("{ptx} {{{regs}}}, [%{n}];" : '
                    + ", ".join(f'"=r"(r[{i}])' for i in range(n)) + ' : "r"(a));\n'
                    "    (void)mask;\n"
                    "    for (int i = 0; i < 4; i++) out[lane * 4 + i] = r[i];\n")
        else:
            regs = ",".join(f"%{i + 1}" for i in range(n))
            body = (f'    asm volatile("{ptx} [%0], {{{regs}}};" :: "r"(a), '
                    + ", ".join(f'"r"(lane * 4 + {i})' for i in range(n)) + ' : "memory");\n'
                    "    (void)mask; (void)out;\n")
    elif o.kind in ("ld", "st"):
        nb = o.bytes_per_addr
        nw = max(1, nb // 4)
        regs = ",".join(f"%{i}" for i in range(nw))
        if nw > 1:
            regs = "{" + regs + "}"
        if o.kind == "ld":
            body = ("    if ((mask >> lane) & 1u) {\n"
                    "        unsigned r[4] = {0, 0, 0, 0};\n"
                    f'        asm volatile("{o.name} {regs}, [%{nw}];" : '
                    + ", ".join(f'"=r"(r[{i}])' for i in range(nw)) + ' : "r"(a));\n'
                    "        for (int i = 0; i < 4; i++) out[lane * 4 + i] = r[i];\n"
                    "    }\n")
        else:
            sregs = ",".join(f"%{i + 1}" for i in range(nw))
            if nw > 1:
                sregs = "{" + sregs + "}"
            body = ("    if ((mask >> lane) & 1u) {\n"
                    f'        asm volatile("{o.name} [%0], {sregs};" :: "r"(a), '
                    + ", ".join(f'"r"(lane * 4 + {i})' for i in range(nw)) + ' : "memory");\n'
                    "    }\n    (void)out;\n")
    elif o.kind == "ldgsts":
        level = o.name.split(".")[2]
        body = ("    if ((mask >> lane) & 1u) {\n"
                f'        asm volatile("cp.async.{level}.shared.global [%0], [%1], {o.bytes_per_addr};" '
                ':: "r"(a), "l"(src + c[33 + lane]) : "memory");\n'
                '        asm volatile("cp.async.wait_all;" ::: "memory");\n'
                "    }\n    (void)out;\n")
    else:  # pragma: no cover
        raise ValueError(op)
    return head + body + "}\n"


def probe_source(ops=OPS) -> str:
    with open(TEMPLATE) as f:
        src = f.read()
    kernels = "\n".join(_kernel(op) for op in ops)
    table = ", ".join(kernel_name(op) for op in ops)
    return (src.replace("@SMEM_BYTES@", str(SMEM_BYTES)).replace("@KERNELS@", kernels)
            .replace("@TABLE@", table))


def build_probe(workdir: str, arch: str = "native", ops=OPS) -> str:
    nvcc = shutil.which("nvcc")
    if not nvcc:
        raise NcuUnavailable("nvcc not found on PATH (needed to build the bank-conflict probe)")
    cu = os.path.join(workdir, "probe.cu")
    exe = os.path.join(workdir, "probe")
    with open(cu, "w") as f:
        f.write(probe_source(ops))
    cmd = [nvcc, "-O3", f"-arch={arch}", "-o", exe, cu]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise NcuUnavailable(f"nvcc failed building the probe: {r.stderr.strip().splitlines()[-1:]}")
    return exe


def sass_functions(text: str) -> dict:
    """``cuobjdump -sass`` text -> {function name: [opcode, ...]} (opcodes without modifiers).

    Instructions guarded by ``@!PT`` (a predicate that is never true) never execute and are left out.
    """
    funcs, cur = {}, None
    for line in text.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)(?:\.[A-Z0-9_.]+)?\b", line)
        if m and cur is not None:
            if (m.group(1) or "").strip() == "@!PT":
                continue  # predicated on never-true: not executed (ptxas pads LDGSTS with `@!PT LDS RZ, [RZ]`)
            cur.append(m.group(2))
    return funcs


def check_sass(sass_text: str, ops=OPS) -> dict:
    """Each probe kernel must hold exactly one shared-memory instruction, the one under test."""
    funcs = sass_functions(sass_text)
    found = {}
    for op in ops:
        name = kernel_name(op)
        if name not in funcs:
            raise RuntimeError(f"SASS check: kernel {name} not found in cuobjdump output")
        shared = [o for o in funcs[name] if o in SHARED_OPCODES]
        want = SASS_OPCODE[parse_shared_op(op).kind]
        if shared != [want]:
            raise RuntimeError(f"SASS check: {name} must hold exactly one {want} and no other shared "
                               f"access, found {shared}")
        found[op] = shared
    return found


# ---------------------------------------------------------------------------------------------
# address sets
# ---------------------------------------------------------------------------------------------

LANE = np.arange(32, dtype=np.int64)
FULL = 0xFFFFFFFF


def _align(op):
    o = parse_shared_op(op)
    return o.bytes_per_addr, o.bytes_per_addr, o.kind in ("ld", "st", "ldgsts")


def _fit(addrs, w):
    """Keep aligned addresses inside the probe's shared array."""
    a = np.asarray(addrs, dtype=np.int64)
    a = a - (a % w)
    return a % (SMEM_BYTES - (SMEM_BYTES % w))


def structured_cases(op: str, rng: np.random.Generator):
    """Named address sets: strides, broadcast, duplicates, half/quarter relations, padding,
    swizzled tiles and (for maskable instructions) partially active warps."""
    from fragsim.swizzle import Swizzle

    w, al, maskable = _align(op)
    out = []

    def add(label, a, mask=FULL):
        out.append((label, _fit(a, al), int(mask)))

    strides = {1: [1, 2, 3, 4, 5, 6, 8, 12, 16, 32, 64, 128, 132, 256],
               2: [2, 4, 6, 8, 10, 12, 16, 32, 64, 128, 130, 132, 256],
               4: [4, 8, 12, 16, 20, 32, 36, 64, 68, 128, 132, 256, 512],
               8: [8, 16, 24, 32, 40, 64, 72, 128, 136, 256, 264, 512],
               16: [16, 32, 48, 64, 80, 128, 144, 256, 272, 512]}[w]
    for s in strides:
        add(f"stride {s}", LANE * s)
    add("stride -w (reversed)", (31 - LANE) * w)
    # broadcast
    for x in (0, 4 * 7, 1040, int(rng.integers(0, SMEM_BYTES // w)) * w):
        add(f"broadcast {x:#x}", np.full(32, x))
    if w < 4:
        add("one word, every byte", (LANE % (4 // w)) * w)
        add("two words same bank", (LANE % (4 // w)) * w + (LANE // 16) * 128)
    # duplicates: lane l reads what lane (l & ~m) would
    perm = rng.permutation(32)
    bases = {"contiguous": LANE * w, "same bank": LANE * 128, "permuted": perm * w,
             "random 1KiB": rng.integers(0, 1024 // w, 32) * w}
    for m in (1, 2, 3, 4, 7, 8, 15, 16, 24, 31):
        for bname, f in bases.items():
            add(f"dup l&~{m} of {bname}", f[LANE & ~m])
    pairs = (LANE & ~1) * w
    pairs[5] = 77 * w
    add("pairs equal but one", pairs)
    for k in (2, 4, 8, 16):
        add(f"lane%{k}", (LANE % k) * w)
        add(f"lane%{k} + 128*(lane/{k})", (LANE % k) * w + (LANE // k) * 128)
    # half- and quarter-warp relations (phases of 8- and 16-byte accesses)
    h0 = LANE % 16
    for d in (0, 64, 128, 256, 16 * w):
        add(f"upper half = lower + {d}", h0 * w + (LANE // 16) * d)
    add("upper half reversed", np.where(LANE < 16, h0, 15 - h0) * w)
    add("upper half pair-swapped", np.where(LANE < 16, h0, h0 ^ 1) * w)
    add("upper half permuted", np.concatenate([np.arange(16), rng.permutation(16)]) * w)
    q0 = LANE % 8
    for d in (0, 32, 64, 128, 8 * w, 512):
        add(f"quarter q = quarter 0 + q*{d}", q0 * w + (LANE // 8) * d)
    add("quarters permuted", np.concatenate([rng.permutation(8) for _ in range(4)]) * w)
    # padding: 2-D tiles, rows of R bytes plus a pad
    pads = [0, 4, 8, 16] if w <= 4 else ([0, 8, 16] if w == 8 else [0, 16, 32])
    for R in (64, 128, 256):
        for pad in pads:
            if pad % al:
                continue
            per_row = max(1, min(32, R // w))
            add(f"row access R={R} pad={pad}", (LANE // per_row) * (R + pad) + (LANE % per_row) * w)
            add(f"column access R={R} pad={pad}", LANE * (R + pad))
    if w == 16:  # ldmatrix-style rows: lane -> (row lane%16, 16-byte chunk lane/16)
        for R in (32, 64, 128, 256):
            for pad in (0, 16, 32):
                add(f"A-frag rows R={R} pad={pad}", (LANE % 16) * (R + pad) + (LANE // 16) * 16)
                add(f"B-frag rows R={R} pad={pad}",
                    (((LANE >> 4) << 3) + (LANE & 7)) * (R + pad) + ((LANE >> 3) & 1) * 16)
    # swizzled tiles
    swz = [Swizzle(1, 4, 3), Swizzle(2, 4, 3), Swizzle(3, 4, 3), Swizzle(2, 4, 2), Swizzle(3, 4, 4),
           Swizzle(3, 4, -4), Swizzle(2, 2, 3), Swizzle(3, 2, 3), Swizzle(3, 3, 3)]
    for sz in swz:
        if (1 << sz.M) < al:
            continue
        for R in (64, 128, 256):
            if w == 16:
                for kk in (0, 1):
                    add(f"{sz} A-frag R={R} k={kk}", sz((LANE % 16) * R + (LANE // 16 + 2 * kk) * 16))
                    add(f"{sz} B-frag R={R} k={kk}",
                        sz((((LANE >> 4) << 3) + (LANE & 7)) * R + (((LANE >> 3) & 1) + 2 * kk) * 16))
                per_row = R // 16
                add(f"{sz} chunk writes R={R}", sz((LANE // per_row) * R + (LANE % per_row) * 16))
            else:
                per_row = max(1, R // w)
                add(f"{sz} row access R={R}", sz((LANE // per_row) * R + (LANE % per_row) * w))
                add(f"{sz} column access R={R}", sz(LANE * R + 3 * w))
    # seed 001: 64-byte rows, 16-byte atom ^ (row & 3)
    if w == 16:
        row = LANE % 16
        add("atom^(row&3) R=64 A", row * 64 + (((LANE >> 4)) ^ (row & 3)) * 16)
        rowb = ((LANE >> 4) << 3) + (LANE & 7)
        add("atom^(row&3) R=64 B", rowb * 64 + ((((LANE >> 3) & 1)) ^ (rowb & 3)) * 16)
    if w <= 8:  # XOR-swizzled column reads of a 32-wide tile
        add("column, col^row swizzle", LANE * 32 * w + ((5 ^ LANE) % 32) * w)
        add("column, no swizzle", LANE * 32 * w + 5 * w)
    # partially active warps
    if maskable:
        masks = [0x1, 0x80000000, 0x0000FFFF, 0xFFFF0000, 0x55555555, 0xAAAAAAAA, 0x00010001,
                 0x000000FF, 0x0000FF00, 0x0F0F0F0F, 0x11111111, 0x80000001, 0x7FFFFFFF, 0xFF00FF00,
                 int(rng.integers(1, 1 << 32)), int(rng.integers(1, 1 << 32))]
        pats = {"contiguous": LANE * w, "stride 128": LANE * 128, "lane%8": (LANE % 8) * w,
                "broadcast": np.zeros(32, np.int64), "dup l&~1": (LANE & ~1) * w * 8}
        for m in masks:
            for pname, p in pats.items():
                add(f"mask {m:#010x} {pname}", p, m)
    return round_robin(out)


def case_category(label: str) -> str:
    """The kind of address set a label names (stride, broadcast, duplicate, ... random style)."""
    label = label.split(" | ")[0]
    if label.startswith("random"):
        return label
    for prefix, cat in (("stride", "stride"), ("broadcast", "broadcast"), ("one word", "broadcast"),
                        ("two words", "broadcast"), ("dup", "duplicate"), ("pairs", "duplicate"),
                        ("lane%", "duplicate"), ("upper", "halves"), ("quarter", "halves"), ("mask", "partial warp")):
        if label.startswith(prefix):
            return cat
    if "Swizzle" in label or "swizzle" in label or "atom^" in label:
        return "swizzled tile"
    return "padding"


def round_robin(cases):
    """Interleave the categories, so a run cut short by its time budget still measures each kind."""
    groups: dict = {}
    for c in cases:
        groups.setdefault(case_category(c[0]), []).append(c)
    out, lists = [], list(groups.values())
    for i in range(max((len(g) for g in lists), default=0)):
        out.extend(g[i] for g in lists if i < len(g))
    return out


def random_cases(op: str, rng: np.random.Generator, n: int):
    """``n`` seeded random address sets of varied structure (some with random active masks)."""
    w, al, maskable = _align(op)
    out = []
    styles = ("uniform", "few distinct", "few banks", "affine", "permuted", "dup", "gf2", "rows", "pairs")
    for i in range(n):
        style = styles[i % len(styles)]
        if style == "uniform":
            R = int(rng.choice([128, 256, 512, 1024, 4096, SMEM_BYTES]))
            a = rng.integers(0, max(1, R // al), 32) * al
        elif style == "few distinct":
            k = int(rng.integers(1, 9))
            R = int(rng.choice([128, 512, 4096]))
            pool = rng.integers(0, max(1, R // al), k) * al
            a = pool[rng.integers(0, k, 32)]
        elif style == "few banks":
            nb = int(rng.integers(1, 9))
            banks = rng.integers(0, 32, nb)
            rows = rng.integers(0, int(rng.integers(1, 9)), 32)
            word = rows * 32 + banks[rng.integers(0, nb, 32)]
            a = word * 4 + (rng.integers(0, 4, 32) if al < 4 else 0)
        elif style == "affine":
            s = int(rng.integers(0, 300 // al + 1)) * al
            s2 = int(rng.integers(0, 600 // al + 1)) * al
            k = int(rng.integers(1, 5))
            x = int(rng.integers(0, 32))
            a = int(rng.integers(0, 64)) * al + ((LANE ^ x) % (1 << k)) * s + ((LANE ^ x) >> k) * s2
        elif style == "permuted":
            a = int(rng.integers(0, 64)) * al + rng.permutation(32) * max(al, int(rng.choice([al, 4, 8, 16])))
        elif style == "dup":
            m = int(rng.integers(1, 32))
            f = rng.integers(0, int(rng.choice([256, 1024, 4096])) // al, 32) * al
            a = f[LANE & ~m]
        elif style == "gf2":  # lane bits -> XOR of random (aligned) basis offsets, as layouts do
            top = int(rng.choice([256, 1024, 4096]))
            basis = rng.integers(0, top // al, 5) * al
            basis[rng.random(5) < 0.2] = 0
            a = np.zeros(32, np.int64)
            for b in range(5):
                a ^= ((LANE >> b) & 1) * basis[b]
        elif style == "pairs":  # partners (lane ^ 1 or lane ^ 2) share an address, sometimes but one
            m = int(rng.choice([1, 2, 3, 5, 6, 9]))
            f = rng.integers(0, int(rng.choice([256, 1024, 4096])) // al, 32) * al
            a = f[LANE & ~m]
            if rng.random() < 0.3:
                a[int(rng.integers(0, 32))] = int(rng.integers(0, 4096 // al)) * al
        else:  # rows: a tile of rows with random pitch, random lanes-per-row
            per_row = int(rng.choice([1, 2, 4, 8, 16, 32]))
            pitch = int(rng.integers(1, 80)) * al
            a = (LANE // per_row) * pitch + (LANE % per_row) * w
        mask = FULL
        if maskable and rng.random() < 0.3:
            if rng.random() < 0.5:
                mask = int(rng.integers(1, 1 << 32))
            else:
                lo = int(rng.integers(0, 32))
                hi = int(rng.integers(lo + 1, 33))
                mask = ((1 << hi) - 1) ^ ((1 << lo) - 1)
        out.append((f"random {style}", _fit(a, al), mask))
    return out


def interleave(first, second):
    out = []
    for i in range(max(len(first), len(second))):
        if i < len(first):
            out.append(first[i])
        if i < len(second):
            out.append(second[i])
    return out


SRC_BYTES = 65536  # the probe's global source buffer for cp.async


def src_layouts(w: int, rng: np.random.Generator) -> dict:
    """Per-lane global source offsets for cp.async (they decide how L1 groups the lanes)."""
    return {"src lane*16": LANE * 16, "src contiguous": LANE * w, "src lane*128": LANE * 128,
            "src same": np.zeros(32, np.int64), "src permuted": rng.permutation(32) * w,
            "src lane*32": LANE * 32, "src reversed": (31 - LANE) * w}


def _with_src(cases, src):
    return [(label, a, m, np.asarray(src, np.int64)) for label, a, m in cases]


def cp_async_cases(op: str, rng: np.random.Generator, n_random: int):
    """cp.async: a set of destination patterns under every source layout, then random ones."""
    w, al, _ = _align(op)
    dests = [c for c in structured_cases(op, rng)
             if re.match(r"(stride (4|8|16|32|64|128) |broadcast 0x0|dup l&~(1|3|7|8|15|16|24) of "
                         r"(contiguous|permuted|random)|lane%(2|4)$|upper half|mask 0x(0000ffff|55555555|"
                         r"000000ff|0f0f0f0f) (contiguous|stride 128))", c[0] + " ")]
    dests += random_cases(op, rng, 8)
    out = []
    for sname, src in src_layouts(w, rng).items():
        out += [(f"{label} | {sname}", a, m, src) for label, a, m in dests]
    order = rng.permutation(len(out))
    out = [out[i] for i in order]
    rand = random_cases(op, rng, n_random)
    layouts = list(src_layouts(w, rng).items())
    for label, a, m in rand:
        if rng.random() < 0.25:
            sname, src = "src random", rng.integers(0, SRC_BYTES // w, 32) * w
        else:
            sname, src = layouts[int(rng.integers(0, len(layouts)))]
        out.append((f"{label} | {sname}", a, m, np.asarray(src, np.int64)))
    return out


def cases_for(op: str, seed: int, n_random: int, structured: bool = True, cp_sources: bool = False):
    """The address sets for one op: (label, addrs, mask, cp.async source offsets)."""
    rng = np.random.default_rng([seed, OPS.index(op)])
    if cp_sources and parse_shared_op(op).kind == "ldgsts":
        return cp_async_cases(op, rng, n_random)
    s = structured_cases(op, rng) if structured else []
    r = random_cases(op, rng, n_random)
    return _with_src(interleave(s, r), LANE * 16)


def write_case_file(path: str, per_op: dict):
    with open(path, "wb") as f:
        f.write(np.uint32(len(per_op)).tobytes())
        for op, cases in per_op.items():
            arr = np.zeros((len(cases), 65), np.uint32)
            for i, (_, a, m, src) in enumerate(cases):
                arr[i, :32] = a
                arr[i, 32] = m
                arr[i, 33:] = src
            f.write(np.array([OPS.index(op), len(cases)], np.uint32).tobytes())
            f.write(arr.tobytes())


# ---------------------------------------------------------------------------------------------
# Nsight Compute
# ---------------------------------------------------------------------------------------------

def find_ncu() -> str:
    ncu = shutil.which("ncu")
    if not ncu:
        raise NcuUnavailable("Nsight Compute (ncu) not found on PATH; install it or add it to PATH")
    return ncu


def available_metrics(ncu: str) -> set | None:
    try:
        r = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = set(re.findall(r"^\s*([a-z0-9]+__[a-z0-9_]+)", r.stdout, flags=re.M))
    return names or None


def parse_ncu_csv(text: str) -> list:
    """ncu ``--csv`` (details page) -> [(kernel name, {metric: value}), ...] in launch order."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        return []
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    by_id = {}
    order = []
    for r in rows:
        if "Metric Name" not in r:
            continue
        key = r["ID"]
        if key not in by_id:
            by_id[key] = (r.get("Kernel Name") or r.get("Function Name") or "", {})
            order.append(key)
        v = (r.get("Metric Value") or "").replace(",", "").strip()
        try:
            val = float(v)
        except ValueError:
            continue
        by_id[key][1][r["Metric Name"]] = val
    return [by_id[k] for k in sorted(order, key=lambda s: int(s))]


_PERM = ("ERR_NVGPUCTRPERM", "permission", "not supported", "Failed to profile", "No kernels were profiled")


def run_ncu(ncu: str, exe: str, case_file: str, op_ids, seconds_per_op: float, metrics, workdir: str, tag: str):
    log = os.path.join(workdir, f"ncu_{tag}.csv")
    cmd = [ncu, "--clock-control", "none", "--cache-control", "none", "--csv", "--print-units", "base",
           "-k", "regex:^probe_", "--metrics", ",".join(metrics), "--log-file", log,
           exe, case_file, ",".join(str(i) for i in op_ids), f"{seconds_per_op:.1f}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    text = open(log).read() if os.path.exists(log) else ""
    launched = {int(a): int(b) for a, b in re.findall(r"^launched (\d+) (\d+)$", r.stdout, flags=re.M)}
    if r.returncode != 0 or not launched:
        tail = (r.stderr + r.stdout + text).strip().splitlines()[-5:]
        raise NcuUnavailable(f"ncu failed (exit {r.returncode}): {' | '.join(tail)}")
    results = parse_ncu_csv(text)
    if not results:
        msg = next((ln for ln in text.splitlines() if any(p in ln for p in _PERM)), text.strip()[-300:])
        raise NcuUnavailable(f"ncu could not read the performance counters: {msg}")
    return launched, results


# ---------------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------------

def save_record(path: str, meta: dict, ops, labels, addrs, masks, srcs, values: dict):
    np.savez_compressed(
        path, meta=np.array(json.dumps(meta)), ops=np.array(OPS), op=np.asarray(ops, np.int16),
        label=np.array(labels), addrs=np.asarray(addrs, np.int32), mask=np.asarray(masks, np.uint32),
        src=np.asarray(srcs, np.int32),
        **{f"m_{k}": np.asarray(v, np.int32) for k, v in values.items()})


def load_record(path: str) -> dict:
    z = np.load(path, allow_pickle=False)
    rec = {k: z[k] for k in z.files}
    rec["meta"] = json.loads(str(rec["meta"]))
    if "src" not in rec:  # the first record: every cp.async lane copied from src + 16 * lane
        rec["src"] = np.broadcast_to(LANE.astype(np.int32) * 16, rec["addrs"].shape).copy()
    rec["metrics"] = {k[2:]: rec.pop(k) for k in list(rec) if k.startswith("m_")}
    return rec


def measure(record_dir: str, seed: int = 1, n_random: int = 220, budget: float = 300.0,
            structured: bool = True, arch: str = "native", ops=OPS, verbose=True,
            cp_sources: bool = True, cp_weight: float = 3.0, sass: bool = False) -> str:
    """Build, check and run the probe under ncu; write ``record_dir/ncu_banks_<seed>.npz``."""
    say = print if verbose else (lambda *a, **k: None)
    ncu = find_ncu()
    os.makedirs(record_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="fragsim_ncu_banks_")
    t0 = time.time()
    exe = build_probe(work, arch)
    cuobjdump = shutil.which("cuobjdump")
    if cuobjdump:
        sass_text = subprocess.run([cuobjdump, "-sass", exe], capture_output=True, text=True).stdout
        check_sass(sass_text, OPS)
        with open(os.path.join(record_dir, f"probe_sass_{seed}.txt"), "w") as f:
            f.write(sass_text)
        say(f"SASS check passed: one shared instruction per kernel ({len(OPS)} kernels)")
    else:
        say("warning: cuobjdump not found; SASS not checked (the instruction counters still are)")
    say(f"probe built in {time.time() - t0:.1f}s")
    avail = available_metrics(ncu)
    metrics = [m for m in METRICS + (SASS_METRICS if sass else ()) if avail is None or m.split(".")[0] in avail]
    if avail:
        with open(os.path.join(record_dir, "metrics_available.txt"), "w") as f:
            f.write("\n".join(sorted(n for n in avail if re.search(r"shared|ldgsts|bank|lsu|ldsm|stsm", n))))
    say(f"metrics ({len(metrics)}): {', '.join(SHORT[m] for m in metrics)}")
    skipped = [m for m in METRICS if m not in metrics]
    if skipped:
        say(f"not on this device: {', '.join(skipped)}")
    per_op = {op: cases_for(op, seed, n_random, structured, cp_sources) for op in ops}
    case_file = os.path.join(work, "cases.bin")
    write_case_file(case_file, per_op)
    groups = {}
    for op in ops:
        groups.setdefault(parse_shared_op(op).kind, []).append(op)
    weight = {op: (cp_weight if parse_shared_op(op).kind == "ldgsts" else 1.0) for op in ops}
    unit = budget / sum(weight.values())
    rec_ops, labels, addrs, masks, srcs = [], [], [], [], []
    values = {SHORT[m]: [] for m in metrics}
    failures = []
    for kind, gops in groups.items():
        t1 = time.time()
        ids = [OPS.index(op) for op in gops]
        try:
            launched, results = run_ncu(ncu, exe, case_file, ids, unit * weight[gops[0]], metrics, work, kind)
        except NcuUnavailable as e:
            if not rec_ops and kind == next(iter(groups)):
                raise  # the first group failing means ncu itself does not work here
            failures.append(f"{kind}: {e}")
            say(f"[{kind}] FAILED: {e}")
            continue
        pos = 0
        for op in gops:
            n = launched.get(OPS.index(op), 0)
            got = results[pos:pos + n]
            pos += n
            if len(got) != n or any(k.split("(")[0].strip() != kernel_name(op) for k, _ in got):
                failures.append(f"{op}: expected {n} profiled launches of {kernel_name(op)}, got "
                                f"{len(got)} ({sorted(set(k for k, _ in got))[:3]})")
                say(failures[-1])
                continue
            for (label, a, m, src), (_, vals) in zip(per_op[op][:n], got):
                srcs.append(src)
                rec_ops.append(OPS.index(op))
                labels.append(label)
                addrs.append(a)
                masks.append(m)
                for full in metrics:
                    values[SHORT[full]].append(int(vals.get(full, -1)))
            say(f"{op:20s} {n:4d} launches measured")
        say(f"[{kind}] {sum(launched.values())} launches in {time.time() - t1:.1f}s")
    import gzip
    with gzip.open(os.path.join(record_dir, f"ncu_raw_{seed}.csv.gz"), "wt") as f:
        for kind in groups:
            pth = os.path.join(work, f"ncu_{kind}.csv")
            if os.path.exists(pth):
                f.write(f"# ---- {kind}\n" + open(pth).read())
    meta = {"seed": seed, "failures": failures, "device": _device_name(), "ncu": _ncu_version(ncu), "smem_bytes": SMEM_BYTES,
            "metrics": {SHORT[m]: m for m in metrics}, "date": time.strftime("%Y-%m-%d"),
            "structured": structured, "n_random": n_random, "cp_sources": cp_sources}
    path = os.path.join(record_dir, f"ncu_banks_{seed}.npz")
    save_record(path, meta, rec_ops, labels, np.array(addrs), masks, np.array(srcs), values)
    say(f"wrote {path} ({len(rec_ops)} measurements)")
    return path


def _device_name() -> str:
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        return r.stdout.strip().splitlines()[0]
    except Exception:  # pragma: no cover - informational only
        return "unknown"


def _ncu_version(ncu: str) -> str:
    try:
        r = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=30)
        return r.stdout.strip().splitlines()[-1]
    except Exception:  # pragma: no cover
        return "unknown"


# ---------------------------------------------------------------------------------------------
# model vs record
# ---------------------------------------------------------------------------------------------

def measured_figures(rec: dict, i: int | None = None):
    """(wavefronts, conflicts) as the counters of the op's kind report them, for every row."""
    m = rec["metrics"]
    kinds = np.array([parse_shared_op(o).kind for o in rec["ops"]])[rec["op"]]
    is_ld = np.isin(kinds, ["ld", "ldsm"])
    is_st = np.isin(kinds, ["st", "stsm"])
    # cp.async: its wavefronts have no op_ metric of their own; they are the shared total less the
    # 4 per launch that land in op_misc (the probe's commit/wait), and less op_ld/op_st (0 here)
    cp_wf = m["wf_shared"] - m["wf_op_misc"] - m["wf_ld"] - m["wf_st"]
    wf = np.where(is_ld, m["wf_ld"], np.where(is_st, m["wf_st"], cp_wf))
    bc = np.where(is_ld, m["bc_ld"], np.where(is_st, m["bc_st"], m["bc_ldgsts"]))
    return wf.astype(np.int64), bc.astype(np.int64)


def compare(path: str, verbose=True) -> dict:
    """Model vs every measurement of a record: {op: (cases, wavefront mismatches, conflict mismatches)}."""
    from fragsim.banks import bank_conflicts_batch

    rec = load_record(path)
    wf, bc = measured_figures(rec)
    summary = {}
    for k, op in enumerate(rec["ops"]):
        sel = np.flatnonzero(rec["op"] == k)
        if not sel.size:
            continue
        is_cp = str(op).startswith("cp.async")
        r = bank_conflicts_batch(str(op), rec["addrs"][sel], rec["mask"][sel],
                                 rec["src"][sel] if is_cp else None)
        ex = r.exact
        bad_w = int(((r.wavefronts != wf[sel]) & ex).sum())
        bad_c = int(((r.conflicts != bc[sel]) & ex).sum())
        outside = int((~ex).sum())
        odd_w = int(((r.wavefronts != wf[sel]) & ~ex).sum())
        summary[str(op)] = (int(sel.size), bad_w, bad_c, outside, odd_w)
        if verbose:
            extra = f"  | {outside} outside the exact domain, {odd_w} of them differ" if outside else ""
            print(f"{op:20s} {sel.size:5d} cases  wavefront mismatches {bad_w:4d}  conflict mismatches {bad_c:4d}{extra}")
    return summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fragsim.gpu_check.ncu_banks", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="measure every op under ncu and write a record")
    m.add_argument("--record", required=True, help="folder for the .npz record")
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--random", type=int, default=220, help="random address sets per op")
    m.add_argument("--budget", type=float, default=300.0, help="seconds of profiling, split over the ops")
    m.add_argument("--no-structured", action="store_true", help="random address sets only")
    m.add_argument("--arch", default="native")
    m.add_argument("--sass", action="store_true", help="also collect ncu's SASS-instrumented wavefront estimate (slow)")
    m.add_argument("--cp-weight", type=float, default=3.0, help="time share of each cp.async op relative to others")
    c = sub.add_parser("compare", help="model vs a record")
    c.add_argument("record")
    args = p.parse_args(argv)
    try:
        if args.cmd == "measure":
            measure(args.record, args.seed, args.random, args.budget, not args.no_structured, args.arch,
                    cp_weight=args.cp_weight, sass=args.sass)
        else:
            compare(args.record)
    except NcuUnavailable as e:
        sys.stderr.write(f"ncu_banks: {e}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
