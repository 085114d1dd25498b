"""The bank-conflict probe program: one kernel per shared-memory instruction, and its SASS check.

Each kernel runs exactly one instruction (its entry's asm text from the instruction table) on
one warp whose lane addresses, mask and cp.async sources come from global memory, so nothing
is folded at compile time; ``check_sass`` reads the cubin back (``cuobjdump -sass``) and requires
exactly one shared-memory instruction per kernel, the entry's SASS mnemonic.
"""

from __future__ import annotations

import os
import re

from fragsim.instructions import SHARED_OPS
from fragsim.instructions.shared_ops import parse_shared_op

from .. import compile
from ..kernels import shared_asm
from ..prelude import unit

SMEM_BYTES = 16384
# The probe's global source buffer for cp.async (its address is printed and recorded): 4 MiB, so
# source lines can differ in address bits up to 21, those the line-class hash was measured on.
SRC_BYTES = 4 << 20
TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe.cu")

# Every instruction the probe measures, in the table's order (the op id is the index).
OPS = tuple(SHARED_OPS)
# SASS opcodes that touch shared memory (a probe kernel must hold exactly one, its own)
SHARED_OPCODES = {"LDS", "STS", "LDSM", "STSM", "LDGSTS", "ATOMS", "LD", "ST", "ATOM", "RED", "LDSU"}


class NcuUnavailable(RuntimeError):
    """Nsight Compute (or nvcc, or the counters) cannot be used here."""


def kernel_name(op: str) -> str:
    return "probe_" + re.sub(r"[^a-z0-9]+", "_", op)


def _kernel(op: str) -> str:
    o = parse_shared_op(op)
    head = (f'extern "C" __global__ void __launch_bounds__(FS_LANES) {kernel_name(op)}'
            "(const unsigned* __restrict__ c, unsigned* __restrict__ out, const unsigned char* __restrict__ src) {\n"
            f"    __shared__ __align__(1024) unsigned char smem[SMEM_BYTES];\n"
            "    const unsigned lane = threadIdx.x;\n"
            "    const unsigned a = fs_smem_addr(smem) + c[lane];\n"
            "    const unsigned mask = c[FS_LANES];\n")
    n = o.nregs
    if o.kind in ("ldsm", "ld"):
        call = shared_asm(o, "a", regs=[f"r[{i}]" for i in range(n)]) + "\n"
        store = "for (int i = 0; i < 4; i++) out[lane * 4 + i] = r[i];\n"
    elif o.kind in ("stsm", "st"):
        call = shared_asm(o, "a", vals=[f"lane * 4 + {i}" for i in range(n)]) + "\n"
    else:  # cp.async: wait inside the guarded block, so the probe's only LDGSTS completes in the launch
        call = (shared_asm(o, "a", src="src + c[FS_LANES + 1 + lane]") + "\n"
                '        asm volatile("cp.async.wait_all;" ::: "memory");\n')
    if o.kind in ("ldsm", "stsm"):   # .sync.aligned: every lane runs it, the mask is not used
        body = ("    unsigned r[4] = {0, 0, 0, 0};\n    " + call + "    (void)mask;\n    " + store
                if o.kind == "ldsm" else "    " + call + "    (void)mask; (void)out;\n")
    elif o.kind == "ld":
        body = ("    if ((mask >> lane) & 1u) {\n        unsigned r[4] = {0, 0, 0, 0};\n        " + call
                + "        " + store + "    }\n")
    else:
        body = "    if ((mask >> lane) & 1u) {\n        " + call + "    }\n    (void)out;\n"
    return head + body + "}\n"


def probe_source(ops=OPS) -> str:
    with open(TEMPLATE) as f:
        src = f.read()
    kernels = unit(*(_kernel(op) for op in ops))
    table = ", ".join(kernel_name(op) for op in ops)
    return (src.replace("@SMEM_BYTES@", str(SMEM_BYTES)).replace("@SRC_BYTES@", str(SRC_BYTES))
            .replace("@KERNELS@", kernels)
            .replace("@TABLE@", table))


def build_probe(workdir: str, arch: str = "native", ops=OPS) -> str:
    """The probe program, built by nvcc for ``arch``; its path."""
    (exe,) = compile.nvcc([(probe_source(ops), os.path.join(workdir, "probe"))], ["-O3", f"-arch={arch}"],
                          "the bank-conflict probe", NcuUnavailable)
    return exe


def sass_functions(text: str) -> dict:
    """``cuobjdump -sass`` text -> {function name: [opcode, ...]} (opcodes without modifiers).

    Instructions guarded by ``@!PT`` (a predicate that is never true) never execute and are left out.
    """
    funcs: dict[str, list[str]] = {}
    cur = None
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
        want = parse_shared_op(op).sass
        if shared != [want]:
            raise RuntimeError(f"SASS check: {name} must hold exactly one {want} and no other shared "
                               f"access, found {shared}")
        found[op] = shared
    return found
