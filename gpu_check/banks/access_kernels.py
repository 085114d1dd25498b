"""Whole access sets as CTA kernels: one kernel per access set, one launch per candidate layout.

An access set (``fragsim.access``: cp.async / st.shared writes, ldmatrix / ld.shared reads,
stmatrix / st.shared epilogue stores, several warps and k-steps) becomes one CUDA kernel in which
every warp issues its instructions in program order, each one an ``asm volatile`` statement written
by ``kernels.shared_asm`` from the instruction's table entry.  The lane addresses, masks, stored
values and cp.async source offsets come from global tables, so the *layout* is data: the same
kernel runs the unswizzled tile, the search's best and worst layouts and random candidates, one
launch each.  Writes complete (``cp.async.wait_all``, ``__syncthreads``) before the reads; every
read writes its registers out, so the launch also checks the data: the registers must be the
tagged elements the access set says (the round trip, on the hardware).

``CASES`` covers every preset of ``fragsim.access``; ``access`` measures them under Nsight
Compute and ``tests/test_access_ncu_replay.py`` replays the records against ``predict``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from fragsim.search import access as A
from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions.shared_op import SharedOp
from fragsim.search.swizzle_search import bytes_to_words, element_tags, lane_bytes
from fragsim.layout.tile import Tile
from fragsim.layout.xor_map import XorMap

from ..kernels import shared_asm
from ..prelude import unit

F16 = "m16n8k16.row.col.f32.f16.f16.f32"
BF16 = "m16n8k16.row.col.f32.bf16.bf16.f32"
F16K8 = "m16n8k8.row.col.f32.f16.f16.f32"
TF32 = "m16n8k8.row.col.f32.tf32.tf32.f32"
GLOBAL_BYTES = 4 << 20          # the cp.async source buffer (4 MiB, as the bank probe's)
KINDS = ("ld", "st", "ldgsts")  # Nsight Compute's counter groups of wavefronts and conflicts
INST_KINDS = ("ldsm", "ld", "stsm", "st", "ldgsts")   # its executed-instruction counters


@dataclass(frozen=True)
class AccessCase:
    """One access set, rebuilt from plain data: ``parts`` = ((preset, {keyword: value}), ...) with
    preset one of copy, a, b, epilogue (``fragsim.access``)."""

    name: str
    tile: str                   # Tile.parse spec of the unswizzled tile
    parts: tuple
    warps: tuple = (2, 2)

    @property
    def threads(self) -> int:
        return self.warps[0] * self.warps[1] * WARP_LANES

    def base_tile(self) -> Tile:
        return Tile.parse(self.tile)

    def access_set(self, global_base: int = 0) -> A.AccessSet:
        t = self.base_tile()
        sets = []
        for preset, kw in self.parts:
            kw = dict(kw)
            if preset == "copy":
                op = kw.pop("op")
                src = {"global_base": global_base} if op.startswith("cp.async") else {}   # st.shared has no source
                sets.append(A.copy(t, op, threads=self.threads, **src, **kw))
            elif preset in ("a", "b"):
                sets.append(A.mma_operand(t, kw.pop("form"), preset.upper(), warps=self.warps, **kw))
            elif preset == "epilogue":
                sets.append(A.epilogue(t, kw.pop("form"), warps=self.warps, **kw))
            else:
                raise ValueError(f"case {self.name}: unknown preset {preset!r}")
        s = A.AccessSet(sets)
        return s.writes + s.reads          # program order: every write, then every read

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "tile": self.tile, "parts": [[p, kw] for p, kw in self.parts],
                           "warps": list(self.warps)})

    @staticmethod
    def from_json(text: str) -> "AccessCase":
        d = json.loads(text)
        return AccessCase(d["name"], d["tile"], tuple((p, kw) for p, kw in d["parts"]), tuple(d["warps"]))


def _copy(op, pitch=8192):
    return ("copy", {"op": op, "global_pitch": pitch})


#: Every preset: A by ldmatrix.x4 (m16n8k16 f16/bf16, m16n8k8 f16, tf32), B by .x4.trans/.x2.trans from
#: K x N and .x4 from N x K, copies by cp.async 4/8/16 (.ca and .cg) and st.shared.v4, epilogues by
#: stmatrix, st.shared.v2.b32 and st.shared.b32 then ld.shared.v4 rows.  Global sources 8 KiB wide
#: (every tile row its own source line) except where a case says otherwise.
CASES = (
    AccessCase("a_f16_128B_ca16", "128x64 f16", (_copy("cp.async.ca.16"), ("a", {"form": F16}))),
    AccessCase("a_bf16_64B_cg16", "128x32 bf16", (_copy("cp.async.cg.16"), ("a", {"form": BF16}))),
    AccessCase("a_bf16_64B_ca16_dense", "128x32 bf16", (_copy("cp.async.ca.16", 64), ("a", {"form": BF16}))),
    AccessCase("a_f16_32B_ca8", "64x16 f16", (_copy("cp.async.ca.8"), ("a", {"form": F16}))),
    AccessCase("a_f16_64B_ca4", "64x32 f16", (_copy("cp.async.ca.4"), ("a", {"form": F16}))),
    AccessCase("a_k8_f16_sts128", "64x32 f16", (("copy", {"op": "st.shared.v4.b32"}), ("a", {"form": F16K8}))),
    AccessCase("a_tf32_128B_ca16", "64x32 tf32", (_copy("cp.async.ca.16"), ("a", {"form": TF32}))),
    AccessCase("b_kn_x4trans", "32x128 f16", (_copy("cp.async.ca.16"), ("b", {"form": F16}))),
    AccessCase("b_kn_x2trans", "32x64 bf16", (_copy("cp.async.ca.16"), ("b", {"form": BF16, "op": "ldmatrix.x2.trans"}))),
    AccessCase("b_nk_x4", "128x32 bf16", (_copy("cp.async.ca.16"), ("b", {"form": BF16, "dims": "nk"}))),
    AccessCase("ep_stmatrix_bf16", "64x128 bf16", (("epilogue", {"form": BF16}),)),
    AccessCase("ep_v2_f32", "64x64 f32", (("epilogue", {"form": BF16}),)),
    AccessCase("ep_b32_f16", "64x128 f16", (("epilogue", {"form": F16, "store_op": "st.shared.b32"}),)),
)


# ---------------------------------------------------------------------------------------------
# layouts as data
# ---------------------------------------------------------------------------------------------

def layout_spec(tile: Tile) -> dict:
    """A candidate layout as plain data: pitch and the XOR map's images."""
    x = tile.xor_map
    if x is None:
        raise ValueError(f"{tile!r}: a callable swizzle cannot be recorded as data")
    return {"pitch": tile.pitch, "xor": list(x.images), "name": tile.layout_name}


def layout_tile(case: AccessCase, spec: dict) -> Tile:
    x = XorMap(spec["xor"])
    return case.base_tile().with_layout(pitch=spec["pitch"], swizzle=None if x.is_identity else x)


# ---------------------------------------------------------------------------------------------
# the kernel of one access set
# ---------------------------------------------------------------------------------------------

@dataclass
class GroupPlan:
    """Where one group's instructions sit in the tables: slot j of warp w is instruction index[j, w]
    (-1: the warp has no such instruction and skips it)."""

    group: A.AccessGroup
    index: np.ndarray          # (J, warps) int
    addr_off: int              # first word of the group in ADDR (and SRC)
    mask_off: int              # first word in MASK
    vals_off: int              # first word in VALS (stores)
    out_off: int               # first word in OUT (loads)


def _warp_of(g: A.AccessGroup, i: int) -> int:
    return int(g.labels[i].get("warp", 0))


def plan(case: AccessCase, s: A.AccessSet):
    """GroupPlans and the table sizes (ADDR, MASK, VALS, OUT words) of an access set."""
    nw = case.warps[0] * case.warps[1]
    plans, addr, mask, vals, out = [], 0, 0, 0, 0
    for g in s:
        per = [[i for i in range(len(g)) if _warp_of(g, i) == w] for w in range(nw)]
        if any(_warp_of(g, i) >= nw for i in range(len(g))):
            raise ValueError(f"case {case.name}: group {g.name} names a warp past the CTA's {nw}")
        jmax = max(len(p) for p in per)
        if g.op.kind in ("ldsm", "stsm") and any(len(p) != jmax for p in per):
            raise ValueError(f"case {case.name}: {g.op.name} is .sync.aligned; every warp must issue as many")
        index = np.full((jmax, nw), -1, np.int64)
        for w, p in enumerate(per):
            index[:len(p), w] = p
        plans.append(GroupPlan(g, index, addr, mask, vals, out))
        cells = jmax * nw
        addr += cells * WARP_LANES
        mask += cells
        if g.op.is_store and g.op.family != "cp.async":
            vals += cells * WARP_LANES * g.op.nregs
        if not g.op.is_store:
            out += cells * WARP_LANES * g.op.nregs
    return plans, (addr, mask, vals, out)


def kernel_name(case: AccessCase) -> str:
    return "fs_acc_" + case.name


def kernel_source(case: AccessCase, s: A.AccessSet | None = None) -> str:
    """The CUDA text of the case's kernel (layout-free: every address comes from ADDR)."""
    s = case.access_set() if s is None else s
    plans, _ = plan(case, s)
    nw = case.warps[0] * case.warps[1]
    lines = [f'extern "C" __global__ void __launch_bounds__({nw * WARP_LANES}) {kernel_name(case)}(',
             "    const unsigned* __restrict__ ADDR, const unsigned* __restrict__ MASK,",
             "    const unsigned* __restrict__ VALS, const unsigned long long* __restrict__ SRC,",
             "    const unsigned char* __restrict__ G, unsigned* __restrict__ OUT, unsigned* __restrict__ INFO) {",
             "  extern __shared__ __align__(1024) unsigned char smem[];",
             "  const unsigned warp = threadIdx.x / FS_LANES, lane = threadIdx.x % FS_LANES;",
             "  const unsigned base = fs_smem_addr(smem);",
             "  if (threadIdx.x == 0) INFO[0] = base;"]
    wrote = False
    for p in plans:
        g, o = p.group, p.group.op
        if not o.is_store and wrote:
            lines.append("  __syncthreads();   // every write lands before the reads")
            wrote = False
        lines.append(f"  // {g.describe()}")
        for j in range(p.index.shape[0]):
            cell = f"({j} * {nw} + warp)"
            a = f"base + ADDR[{p.addr_off} + {cell} * FS_LANES + lane]"
            body = [f"    const unsigned m = MASK[{p.mask_off} + {cell}];",
                    "    if (m != 0u) {"]
            if o.kind in ("ldsm", "ld"):
                regs = [f"r{k}" for k in range(o.nregs)]
                stmt = shared_asm(o, "a", regs=regs)
                outs = "".join(f" o[{k}] = r{k};" for k in range(o.nregs))
                inner = [f"unsigned {', '.join(f'{r} = 0u' for r in regs)};",
                         f"const unsigned a = {a};", stmt,
                         f"unsigned* o = OUT + {p.out_off} + ({cell} * FS_LANES + lane) * {o.nregs};{outs}"]
            elif o.kind in ("stsm", "st"):
                v = f"VALS + {p.vals_off} + ({cell} * FS_LANES + lane) * {o.nregs}"
                inner = [f"const unsigned* v = {v};", f"const unsigned a = {a};",
                         shared_asm(o, "a", vals=[f"v[{k}]" for k in range(o.nregs)])]
            else:
                inner = [f"const unsigned a = {a};",
                         f"const unsigned long long src = fs_global_addr(G + SRC[{p.addr_off} + {cell} * FS_LANES + lane]);",
                         shared_asm(o, "a", src="src")]
            if o.kind in ("ldsm", "stsm"):
                body += ["      " + x for x in inner]
            else:
                body += ["      if ((m >> lane) & 1u) {"] + ["        " + x for x in inner] + ["      }"]
            lines += ["  {"] + body + ["    }", "  }"]
        if o.family == "cp.async":
            lines += ['  asm volatile("cp.async.commit_group;" ::: "memory");',
                      '  asm volatile("cp.async.wait_all;" ::: "memory");']
        wrote = wrote or o.is_store
    lines.append("}")
    return "\n".join(lines) + "\n"


def module_source(cases=CASES) -> str:
    return unit(*(kernel_source(c) for c in cases))


def expected_sass(case: AccessCase, s: A.AccessSet | None = None) -> dict:
    """SASS mnemonic -> how many the kernel must hold (one per instruction slot of a warp)."""
    s = case.access_set() if s is None else s
    plans, _ = plan(case, s)
    out: dict = {}
    for p in plans:
        out[p.group.op.sass] = out.get(p.group.op.sass, 0) + p.index.shape[0]
    return out


# ---------------------------------------------------------------------------------------------
# one launch's tables, and what it must read back
# ---------------------------------------------------------------------------------------------

def registers(o: SharedOp, data: np.ndarray) -> np.ndarray:
    """A warp's bytes (32, bytes per lane) as the instruction's registers (32, nregs): packed words, or
    for ld/st.shared one element a register (.v4.u8: four registers of a byte each)."""
    if o.kind not in ("ld", "st"):
        return bytes_to_words(data)
    e = data.reshape(data.shape[0], o.nregs, o.element_bytes).astype(np.uint32)
    return (e << (8 * np.arange(o.element_bytes, dtype=np.uint32))).sum(-1, dtype=np.uint32)


def tables(case: AccessCase, tile: Tile, s: A.AccessSet):
    """ADDR, MASK, VALS, SRC tables for the access set laid out by ``tile``, the global source bytes
    (tags of a row-major matrix), and the words every read must return (``OUT``, -1 where unused)."""
    plans, (na, nm, nv, no) = plan(case, s)
    addr = np.zeros(max(na, 1), np.uint32)
    mask = np.zeros(max(nm, 1), np.uint32)
    vals = np.zeros(max(nv, 1), np.uint32)
    src = np.zeros(max(na, 1), np.uint64)
    want = np.full(max(no, 1), -1, np.int64)
    tags = element_tags(tile, 0)
    gbytes = np.zeros(GLOBAL_BYTES, np.uint8)
    for p in plans:
        g, o = p.group, p.group.op
        a = g.addresses(tile)
        J, W = p.index.shape
        for j in range(J):
            for w in range(W):
                i = p.index[j, w]
                if i < 0:
                    continue
                cell = j * W + w
                addr[p.addr_off + cell * WARP_LANES: p.addr_off + (cell + 1) * WARP_LANES] = a[i]
                m = g.mask[i] & (np.arange(WARP_LANES) < o.address_lanes) if o.kind not in ("ldsm", "stsm") \
                    else np.ones(WARP_LANES, bool)
                mask[p.mask_off + cell] = int(np.sum(m.astype(np.int64) << np.arange(WARP_LANES)))
                data = lane_bytes(tags, g.elems[i])
                if o.family == "cp.async":
                    assert g.src is not None, "cp.async groups carry their sources"
                    off = g.src[i] - int(g.source.get("global_base", 0))
                    src[p.addr_off + cell * WARP_LANES: p.addr_off + (cell + 1) * WARP_LANES] = np.where(g.mask[i], off, 0)
                    for lane in np.flatnonzero(g.mask[i]):
                        gbytes[off[lane]: off[lane] + o.bytes_per_addr] = data[lane]
                elif o.is_store:
                    k = o.nregs
                    vals[p.vals_off + cell * WARP_LANES * k: p.vals_off + (cell + 1) * WARP_LANES * k] = \
                        registers(o, data).reshape(-1)
                else:
                    k = o.nregs
                    words = registers(o, data).astype(np.int64)
                    active = g.mask[i] if o.kind == "ld" else np.ones(WARP_LANES, bool)
                    words[~active] = -1
                    want[p.out_off + cell * WARP_LANES * k: p.out_off + (cell + 1) * WARP_LANES * k] = words.reshape(-1)
    return {"ADDR": addr, "MASK": mask, "VALS": vals, "SRC": src, "G": gbytes, "want": want, "out_words": max(no, 1)}


# ---------------------------------------------------------------------------------------------
# fragsim's prediction of a launch
# ---------------------------------------------------------------------------------------------

def _counter(o: SharedOp) -> str:
    return {"ldsm": "ld", "ld": "ld", "stsm": "st", "st": "st", "ldgsts": "ldgsts"}[o.kind]


def predict(case: AccessCase, layout: dict, global_base: int) -> dict:
    """Nsight Compute's totals as fragsim predicts them for one launch: per counter group ("ld",
    "st", "ldgsts") wavefronts and bank conflicts, executed instructions per kind ("ldsm", "ld", "stsm",
    "st", "ldgsts"), and whether the bank model is exact for every instruction (cp.async outside its
    measured domain is an estimate)."""
    from fragsim.banks import bank_conflicts_batch

    s = case.access_set(global_base)
    tile = layout_tile(case, layout)
    out: dict = {k: {"wavefronts": 0, "conflicts": 0} for k in KINDS}
    inst = {k: 0 for k in INST_KINDS}
    exact = True
    phantom = 0
    for g in s:
        o = g.op
        r = bank_conflicts_batch(o, g.addresses(tile), g.mask, g.src)
        k = _counter(o)
        out[k]["wavefronts"] += int(r.wavefronts.sum())
        out[k]["conflicts"] += int(r.conflicts.sum())
        inst[o.kind] += int(g.mask.any(axis=1).sum())
        phantom = max(phantom, o.phantom_lds)
        exact = exact and bool(np.all(r.exact))
    inst["ld"] += phantom * (case.threads // WARP_LANES)   # never executed, but op_shared_ld counts them
    out["inst"] = inst
    out["exact"] = exact
    return out
