"""Rows: the tensor-core data path -- ``ldmatrix``, ``stmatrix``, ``movmatrix``, ``mma.sync``, ``wgmma`` --
and ``cp.async`` with its groups (PTX ISA sections 9.7.9.25, 9.7.14.5, 9.7.15).  Builders:
``fragsim.ptx.semantics.tensor``.

The spellings of the forms fragsim models come from its instruction tables, never retyped here:
``mma.sync`` from ``fragsim.instructions`` (``FORMS`` and the ``.rn`` spellings of ``ALIASES``; the ISA's
other forms, refused, from ``ptx_mma.PTX_FORMS``), ``wgmma.mma_async`` from ``instructions.wgmma``,
ldmatrix/stmatrix from the shared-memory table (``instructions.ldmatrix.ENTRIES``), movmatrix from
``instructions.movmatrix``.  Each is validated bit for bit by its gpu_check family (mma, wgmma, shared,
movmatrix).
"""

from __future__ import annotations

from fragsim.instructions import FORMS
from fragsim.instructions.ldmatrix import ENTRIES
from fragsim.instructions.mma import ALIASES
from fragsim.instructions.movmatrix import REGISTER_OPS
from fragsim.instructions.ptx_mma import PTX_FORMS
from fragsim.instructions.wgmma import INT_N, WGMMA_FORMS

from ..semantics import tensor as T
from .grammar import Syntax
from .row import Row, Status

K = Status("exact", "ptx_kernels")


def _r(text: str, operands: str, run, target: str, ptx: str, status: Status, ncu: str | None = None,
       note: str = "", **vocab: tuple[str, ...]) -> Row:
    return Row(Syntax(text, **vocab), operands, run, target, ptx, status, kind="machine", ncu=ncu, note=note)


def _no(text: str, operands: str, why: str, target: str, ptx: str, **vocab: tuple[str, ...]) -> Row:
    return Row(Syntax(text, **vocab), operands, None, target, ptx, Status("refused", why=why), kind="machine")


def _tokens(family: str) -> dict[str, tuple[str, ...]]:
    """shape, num, ss, type of the shared-memory table's entries of ``family`` (``ldmatrix.sync.aligned.
    m8n8.x4{.trans}.shared.b16``), as slot vocabularies."""
    out: dict[str, list[str]] = {"shape": [], "num": [], "ss": [], "type": []}
    for e in ENTRIES:
        if e.family != family:
            continue
        t = e.ptx.split(".")
        for key, v in (("shape", t[3]), ("num", t[4]), ("ss", t[-2]), ("type", t[-1])):
            if v not in out[key]:
                out[key].append(v)
    if "shared" in out["ss"]:
        out["ss"].append("shared::cta")
    return {k: tuple(v) for k, v in out.items()}


LDSM, STSM = _tokens("ldmatrix"), _tokens("stmatrix")
MATRIX_B8 = "ldmatrix/stmatrix .b8 (.m16n16, .m8n16, .m16n8) and the sub-byte source formats are not modelled"
SHARED = Status("bit-exact", "shared")
MATRIX: tuple[Row, ...] = (
    _r("ldmatrix.sync.aligned(.shape.num){.trans}{.ss}.type", "d, [p]", T.ldmatrix, "sm_75", "6.5", SHARED, "ldsm",
       note=".shared::cta: PTX 7.8; .num before .shape as ptxas takes it too (CUTLASS writes "
            "ldmatrix.sync.aligned.x4.m8n8.shared.b16)", **LDSM),
    _no("ldmatrix.sync.aligned.m16n16.num.trans{.ss}.b8", "d, [p]", MATRIX_B8, "sm_100a", "8.6", num=("x1", "x2"),
        ss=LDSM["ss"]),
    _no("ldmatrix.sync.aligned.m8n16.num{.ss}.dst_fmt.src_fmt", "d, [p]", MATRIX_B8, "sm_100a", "8.6",
        num=LDSM["num"], ss=LDSM["ss"], dst_fmt=("b8x16",), src_fmt=("b6x16_p32", "b4x16_p64")),
    _no("ldmatrix.sync.aligned.m16n16.num.trans{.ss}.dst_fmt.src_fmt", "d, [p]", MATRIX_B8, "sm_100a", "8.6",
        num=("x1", "x2"), ss=LDSM["ss"], dst_fmt=("b8x16",), src_fmt=("b6x16_p32", "b4x16_p64")),
    _r("stmatrix.sync.aligned.shape.num{.trans}{.ss}.type", "-, [p], r", T.stmatrix, "sm_90", "7.8", SHARED, "stsm",
       **STSM),
    _no("stmatrix.sync.aligned.m16n8.num.trans{.ss}.b8", "-, [p], r", MATRIX_B8, "sm_100a", "8.6", num=STSM["num"],
        ss=STSM["ss"]),
    *(_r(op.ptx, "d, a", T.movmatrix, f"sm_{op.min_cc}", "7.8", Status("bit-exact", "movmatrix"))
      for op in REGISTER_OPS.values()),
)

# ---- mma.sync ----------------------------------------------------------------------------------------


ELEMENT_TYPES = ("f16", "bf16", "tf32", "f32", "f64", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "s8", "u8", "s4", "u4",
                 "b1", "s32")


def mma_version(name: str) -> tuple[str, str]:
    """(target, PTX ISA version) of the mma.sync form ``name`` (the spelling after mma.sync.aligned.), from
    the ISA's notes (/work/notes/ptx_facts.md section 10)."""
    t = name.split(".")
    shape = t[0]
    d, a = [x for x in t if x in ELEMENT_TYPES][:2]           # .dtype.atype.btype.ctype: A's type second
    if "kind::f8f6f4" in t:
        return "sm_120a", "8.7"
    if a == "f16":
        return {"m8n8k4": ("sm_70", "6.4"), "m16n8k8": ("sm_75", "6.5")}.get(shape, ("sm_80", "7.0"))
    if a in ("e4m3", "e5m2"):
        return ("sm_89", "8.4") if shape == "m16n8k32" and d == "f32" else ("sm_89", "8.7")
    if a == "f64":
        return ("sm_80", "7.0") if shape == "m8n8k4" else ("sm_90", "7.8")
    if a == "b1":
        return ("sm_80", "7.1") if "and" in t else ("sm_75" if shape == "m8n8k128" else "sm_80", "7.0")
    if shape.startswith("m8n8"):                     # m8n8k16 .s8/.u8, m8n8k32 .s4/.u4
        return "sm_75", "6.5"
    return "sm_80", "7.0"


def _grouped(names) -> dict[tuple[str, str], tuple[str, ...]]:
    out: dict[tuple[str, str], list[str]] = {}
    for n in names:
        out.setdefault(mma_version(n), []).append(n)
    return {k: tuple(v) for k, v in sorted(out.items(), key=lambda kv: (float(kv[0][1]), kv[0][0]))}


#: the spellings the builder runs: the table's forms and their .rn spellings (f64)
MMA_RUN = tuple(FORMS) + tuple(ALIASES)
MMA_REFUSED = tuple(n for n in PTX_FORMS if n not in MMA_RUN)
MMA_OPERANDS = "d, a, b, c"
MMA_NOT = "a PTX mma.sync form fragsim's table (fragsim.instructions.FORMS) does not model"
MMA: tuple[Row, ...] = (
    *(_r("mma.sync.aligned.form", MMA_OPERANDS, T.mma, target, ptx, Status("bit-exact", "mma"), form=forms)
      for (target, ptx), forms in _grouped(MMA_RUN).items()),
    *(_no("mma.sync.aligned.form", MMA_OPERANDS, MMA_NOT, target, ptx, form=forms)
      for (target, ptx), forms in _grouped(MMA_REFUSED).items()),
)

# ---- wgmma ---------------------------------------------------------------------------------------------
WGMMA_OPERANDS = ("d, a, b_desc, scale_d:pred, {imm_scale_a:imm}, {imm_scale_b:imm}, {imm_trans_a:imm}, "
                  "{imm_trans_b:imm}")
#: the integer forms of mixed signedness (.s8.u8, .u8.s8): PTX 8.4; every other form 8.0
_MIXED = tuple(n for n in WGMMA_FORMS if n.endswith((".s8.u8", ".u8.s8")))
#: the single-bit forms (m64nNk256 .b1 .and.popc), at the integer forms' N
WGMMA_B1 = tuple(f"m64n{n}k256.s32.b1.b1.and.popc" for n in INT_N)
GMMA = Status("bit-exact", "wgmma")
WGMMA: tuple[Row, ...] = (
    _r("wgmma.fence.sync.aligned", "", T.wgmma, "sm_90a", "8.0", K),
    _r("wgmma.commit_group.sync.aligned", "", T.wgmma, "sm_90a", "8.0", K),
    _r("wgmma.wait_group.sync.aligned", "-, n:imm", T.wgmma, "sm_90a", "8.0", K),
    _r("wgmma.mma_async.sync.aligned.form", WGMMA_OPERANDS, T.wgmma, "sm_90a", "8.0", GMMA, "gmma",
       form=tuple(n for n in WGMMA_FORMS if n not in _MIXED)),
    _r("wgmma.mma_async.sync.aligned.form", WGMMA_OPERANDS, T.wgmma, "sm_90a", "8.4", GMMA, "gmma", form=_MIXED),
    _no("wgmma.mma_async.sync.aligned.form", "d, a, b_desc, scale_d:pred", "the single-bit wgmma forms (.b1) are "
        "not modelled", "sm_90a", "8.0", form=WGMMA_B1),
)

# ---- cp.async ------------------------------------------------------------------------------------------
SS = ("shared", "shared::cta")
PF = {"level::prefetch_size": ("L2::64B", "L2::128B", "L2::256B")}
CP_NOTE = "cp-size 4, 8 or 16 (.cg: 16); .level::prefetch_size: PTX 7.4; .shared::cta: 7.8; ignore-src: 7.5"
CP_POLICY = ("the builder reads a fourth operand as src-size: the cache-policy operand of .level::cache_hint is not "
             "handled")
CP_ASYNC: tuple[Row, ...] = (
    _r("cp.async.ca.ss.global{.level::prefetch_size}", "-, [dst], [src], cp_size:imm, {src_size}", T.cp, "sm_80",
       "7.0", K, "ldgsts", note=CP_NOTE, ss=SS, **PF),
    _r("cp.async.cg.ss.global{.level::prefetch_size}", "-, [dst], [src], cp_size:imm, {src_size}", T.cp, "sm_80",
       "7.0", K, "ldgsts", note=CP_NOTE, ss=SS, **PF),
    _no("cp.async.cop.ss.global.level::cache_hint{.level::prefetch_size}",
        "-, [dst], [src], cp_size:imm, {src_size}, cache_policy", CP_POLICY, "sm_80", "7.4", cop=("ca", "cg"), ss=SS,
        **{"level::cache_hint": ("L2::cache_hint",)}, **PF),
    _r("cp.async.commit_group", "", T.cp, "sm_80", "7.0", K),
    _r("cp.async.wait_group", "-, n:imm", T.cp, "sm_80", "7.0", K),
    _r("cp.async.wait_all", "", T.cp, "sm_80", "7.0", K),
)

ROWS: tuple[Row, ...] = MATRIX + MMA + WGMMA + CP_ASYNC
