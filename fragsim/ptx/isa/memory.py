"""Rows: loads, stores and atomics (PTX ISA sections 9.7.9.8-9.7.9.10, 9.7.13.5-9.7.13.6), and the
texture and surface instructions, which fragsim refuses (9.7.10, 9.7.11).  Builders:
``fragsim.ptx.semantics.memory``.

The ISA's lines are split where one slot's spellings depend on another's, so that every form a row
admits is one ptxas takes:

* ``{.vec}.type``: ``.v2``/``.v4`` of the types up to 32 bits, ``.v2`` of the 64-bit ones (``_vec``);
  ``.v8`` of 32-bit and ``.v4`` of 64-bit types (256-bit accesses) are their own sm_100 rows;
* the qualifiers only ``.global`` (or a generic address into it) takes -- ``.level::prefetch_size``,
  ``.level1::eviction_priority``, ``.level::cache_hint`` -- are rows of ``{.global}`` alone;
* ``.cop`` and ``.level1::eviction_priority`` do not go together (ptxas: "cannot be combined").

Refused: ``.shared::cluster`` (the shared memory of another CTA of the cluster), ``.b128``,
``.level::cache_hint`` (its cache-policy operand is not read: the builders take ``d, [a]`` /
``[a], b`` / ``d, [a], b``), and the atomics the builder does not model.
"""

from __future__ import annotations

from ..semantics import memory as M
from .grammar import Syntax
from .row import Row, Status

K = Status("exact", "ptx_kernels")
X = Status("exact")

T32 = ("b8", "b16", "b32", "u8", "u16", "u32", "s8", "s16", "s32", "f32")
T64 = ("b64", "u64", "s64", "f64")
T256_32 = ("b32", "u32", "s32", "f32")          # .v8 (256 bits)
SCOPE = ("cta", "cluster", "gpu", "sys")
LD_SS = ("const", "global", "local", "param", "param::entry", "param::func", "shared", "shared::cta")
ST_SS = ("global", "local", "param", "param::func", "shared", "shared::cta")
SYNC_SS = ("global", "shared", "shared::cta")    # .volatile, .relaxed, .acquire, .release
LD_COP = ("ca", "cg", "cs", "lu", "cv")
NC_COP = ("ca", "cg", "cs")
ST_COP = ("wb", "cg", "cs", "wt")
L1_EVICT = ("L1::evict_normal", "L1::evict_unchanged", "L1::evict_first", "L1::evict_last", "L1::no_allocate")
L2_EVICT = ("L2::evict_normal", "L2::evict_first", "L2::evict_last")
PREFETCH = ("L2::64B", "L2::128B", "L2::256B")
HINT = {"level::cache_hint": ("L2::cache_hint",)}
L1 = {"level1::eviction_priority": L1_EVICT}
L2 = {"level2::eviction_priority": L2_EVICT}
PF = {"level::prefetch_size": PREFETCH}

CLUSTER = ".shared::cluster (the shared memory of another CTA of the cluster) is not modelled"
B128 = "128-bit loads and stores (.b128) are not modelled"
POLICY = ("the cache-policy operand that .level::cache_hint requires is not read (fragsim's {op} takes "
          "{operands} only)")


def _r(text: str, operands: str, run, target: str, ptx: str, status: Status = K, ncu: str | None = None,
       note: str = "", **vocab: tuple[str, ...]) -> Row:
    return Row(Syntax(text, **vocab), operands, run, target, ptx, status, kind="machine", ncu=ncu, note=note)


def _no(text: str, operands: str, why: str, target: str, ptx: str, **vocab: tuple[str, ...]) -> Row:
    return Row(Syntax(text, **vocab), operands, None, target, ptx, Status("refused", why=why), kind="machine")


def _vec(make, text: str, *args, statuses=(K, K), **vocab) -> tuple[Row, ...]:
    """``text`` (ending ``{.vec}.type``) twice: .v2/.v4 of the types up to 32 bits, .v2 of the 64-bit ones."""
    if make is _r:
        return (_r(text, *args, statuses[0], vec=("v2", "v4"), type=T32, **vocab),
                _r(text, *args, statuses[1], vec=("v2",), type=T64, **vocab))
    return (_no(text, *args, vec=("v2", "v4"), type=T32, **vocab), _no(text, *args, vec=("v2",), type=T64, **vocab))


def _ld(text: str, target: str, ptx: str, statuses=(K, K), ncu: str | None = None, note: str = "", **vocab):
    return _vec(_r, text, "d, [a]", M.ld, target, ptx, statuses=statuses, ncu=ncu, note=note, **vocab)


def _st(text: str, target: str, ptx: str, statuses=(K, K), ncu: str | None = None, note: str = "", **vocab):
    return _vec(_r, text, "-, [a], b", M.st, target, ptx, statuses=statuses, ncu=ncu, note=note, **vocab)


LD_POLICY = POLICY.format(op="ld", operands="d, [a]")
ST_POLICY = POLICY.format(op="st", operands="[a], b")

LD: tuple[Row, ...] = (
    *_ld("ld{.weak}{.ss}{.cop}{.vec}.type", "sm_10", "1.0", ncu="ld", ss=LD_SS, cop=LD_COP,
         note=".weak: PTX 6.0, sm_70; generic addressing and .cop: 2.0, sm_20; .shared::cta: 7.8; .f64: sm_13"),
    *_ld("ld{.weak}{.global}{.cop}.level::prefetch_size{.vec}.type", "sm_75", "7.4", (X, X), cop=LD_COP,
         note=".L2::256B: sm_80", **PF),
    *_ld("ld{.weak}{.global}.level1::eviction_priority{.level::prefetch_size}{.vec}.type", "sm_70", "7.4", (X, X),
         **L1, **PF),
    *_ld("ld(.volatile{.ss}){.vec}.type", "sm_10", "1.1", (X, X), ncu="ld", ss=SYNC_SS),
    *_ld("ld.volatile{.global}.level::prefetch_size{.vec}.type", "sm_75", "7.4", (X, X), **PF),
    # ( ): ptxas takes the state space before the ordering too (the ISA's examples write ld.global.relaxed.gpu)
    *_ld("ld(.sem.scope{.ss}){.vec}.type", "sm_70", "6.0", (X, X), ncu="ld", sem=("relaxed", "acquire"), scope=SCOPE,
         ss=SYNC_SS, note=".cluster: PTX 7.8, sm_90"),
    *_ld("ld.sem.scope{.global}.level1::eviction_priority{.level::prefetch_size}{.vec}.type", "sm_70", "7.4",
         (X, X), sem=("relaxed", "acquire"), scope=SCOPE, **L1, **PF),
    *_ld("ld.sem.scope{.global}.level::prefetch_size{.vec}.type", "sm_75", "7.4", (X, X),
         sem=("relaxed", "acquire"), scope=SCOPE, **PF),
    _r("ld.mmio.relaxed.sys{.global}.type", "d, [a]", M.ld, "sm_70", "8.2", X, type=T32 + T64),
    # ld.global.nc: the read-only data cache
    *_ld("ld.global{.cop}.nc{.vec}.type", "sm_32", "3.1", (X, X), cop=NC_COP),
    *_ld("ld.global{.cop}.nc.level::prefetch_size{.vec}.type", "sm_75", "7.4", (X, X), cop=NC_COP, **PF),
    *_ld("ld.global.nc.level1::eviction_priority{.level::prefetch_size}{.vec}.type", "sm_70", "7.4", (X, X),
         **L1, **PF),
    # 256-bit loads: .global only
    _r("ld{.weak}{.global}{.level1::eviction_priority}{.level2::eviction_priority}{.level::prefetch_size}.v8.type",
       "d, [a]", M.ld, "sm_100", "8.8", X, type=T256_32, **L1, **L2, **PF),
    _r("ld{.weak}{.global}{.level1::eviction_priority}{.level2::eviction_priority}{.level::prefetch_size}.v4.type",
       "d, [a]", M.ld, "sm_100", "8.8", X, type=T64, **L1, **L2, **PF),
    # refused
    *_vec(_no, "ld{.weak}.shared::cluster{.cop}{.vec}.type", "d, [a]", CLUSTER, "sm_90", "7.8", cop=LD_COP),
    *_vec(_no, "ld.volatile.shared::cluster{.vec}.type", "d, [a]", CLUSTER, "sm_90", "7.8"),
    *_vec(_no, "ld.sem.scope.shared::cluster{.vec}.type", "d, [a]", CLUSTER, "sm_90", "7.8",
          sem=("relaxed", "acquire"), scope=SCOPE),
    *_vec(_no, "ld{.weak}{.global}{.cop}.level::cache_hint{.level::prefetch_size}{.vec}.type", "d, [a], cache_policy",
          LD_POLICY, "sm_80", "7.4", cop=LD_COP, **HINT, **PF),
    *_vec(_no, "ld{.weak}{.global}.level1::eviction_priority.level::cache_hint{.level::prefetch_size}{.vec}.type",
          "d, [a], cache_policy", LD_POLICY, "sm_80", "7.4", **L1, **HINT, **PF),
    *_vec(_no, "ld.sem.scope{.global}{.level1::eviction_priority}.level::cache_hint{.level::prefetch_size}{.vec}.type",
          "d, [a], cache_policy", LD_POLICY, "sm_80", "7.4", sem=("relaxed", "acquire"), scope=SCOPE, **L1, **HINT,
          **PF),
    *_vec(_no, "ld.global{.cop}.nc.level::cache_hint{.level::prefetch_size}{.vec}.type", "d, [a], cache_policy",
          LD_POLICY, "sm_80", "7.4", cop=NC_COP, **HINT, **PF),
    *_vec(_no, "ld.global.nc.level1::eviction_priority.level::cache_hint{.level::prefetch_size}{.vec}.type",
          "d, [a], cache_policy", LD_POLICY, "sm_80", "7.4", **L1, **HINT, **PF),
    _no("ld{.weak}{.ss}{.cop}.b128", "d, [a]", B128, "sm_70", "8.3", ss=LD_SS + ("shared::cluster",), cop=LD_COP),
    _no("ld.volatile{.ss}.b128", "d, [a]", B128, "sm_70", "8.3", ss=SYNC_SS + ("shared::cluster",)),
    _no("ld.sem.scope{.ss}.b128", "d, [a]", B128, "sm_70", "8.3", sem=("relaxed", "acquire"), scope=SCOPE,
        ss=SYNC_SS + ("shared::cluster",)),
    _no("ld.mmio.relaxed.sys{.global}.b128", "d, [a]", B128, "sm_70", "8.3"),
    _no("ld.global{.cop}.nc.b128", "d, [a]", B128, "sm_70", "8.3", cop=NC_COP),
)

LDU: tuple[Row, ...] = (
    _r("ldu{.ss}.type", "d, [a]", M.ld, "sm_20", "2.0", X, ss=("global",), type=T32 + T64,
       note="the ISA names no base target (ldu.f64: sm_13)"),
    _r("ldu{.ss}.vec.type", "d, [a]", M.ld, "sm_20", "2.0", X, ss=("global",), vec=("v2", "v4"), type=T32),
    _r("ldu{.ss}.vec.type", "d, [a]", M.ld, "sm_20", "2.0", X, ss=("global",), vec=("v2",), type=T64),
    _no("ldu{.ss}.b128", "d, [a]", B128, "sm_70", "8.3", ss=("global",)),
)

ST: tuple[Row, ...] = (
    *_st("st{.weak}{.ss}{.cop}{.vec}.type", "sm_10", "1.0", ncu="st", ss=ST_SS, cop=ST_COP,
         note=".weak: PTX 6.0, sm_70; generic addressing and .cop: 2.0, sm_20; .shared::cta: 7.8; .f64: sm_13"),
    *_st("st{.weak}{.global}.level1::eviction_priority{.vec}.type", "sm_70", "7.4", (X, X), **L1),
    *_st("st(.volatile{.ss}){.vec}.type", "sm_10", "1.1", (X, X), ncu="st", ss=SYNC_SS),
    *_st("st(.sem.scope{.ss}){.vec}.type", "sm_70", "6.0", (X, X), ncu="st", sem=("relaxed", "release"), scope=SCOPE,
         ss=SYNC_SS, note=".cluster: PTX 7.8, sm_90"),
    *_st("st.sem.scope{.global}.level1::eviction_priority{.vec}.type", "sm_70", "7.4", (X, X),
         sem=("relaxed", "release"), scope=SCOPE, **L1),
    _r("st.mmio.relaxed.sys{.global}.type", "-, [a], b", M.st, "sm_70", "8.2", X, type=T32 + T64),
    _r("st{.weak}{.global}{.level1::eviction_priority}{.level2::eviction_priority}.v8.type", "-, [a], b", M.st,
       "sm_100", "8.8", X, type=T256_32, **L1, **L2),
    _r("st{.weak}{.global}{.level1::eviction_priority}{.level2::eviction_priority}.v4.type", "-, [a], b", M.st,
       "sm_100", "8.8", X, type=T64, **L1, **L2),
    # refused
    *_vec(_no, "st{.weak}.shared::cluster{.cop}{.vec}.type", "-, [a], b", CLUSTER, "sm_90", "7.8", cop=ST_COP),
    *_vec(_no, "st.volatile.shared::cluster{.vec}.type", "-, [a], b", CLUSTER, "sm_90", "7.8"),
    *_vec(_no, "st.sem.scope.shared::cluster{.vec}.type", "-, [a], b", CLUSTER, "sm_90", "7.8",
          sem=("relaxed", "release"), scope=SCOPE),
    *_vec(_no, "st{.weak}{.global}{.cop}.level::cache_hint{.vec}.type", "-, [a], b, cache_policy", ST_POLICY,
          "sm_80", "7.4", cop=ST_COP, **HINT),
    *_vec(_no, "st{.weak}{.global}.level1::eviction_priority.level::cache_hint{.vec}.type", "-, [a], b, cache_policy",
          ST_POLICY, "sm_80", "7.4", **L1, **HINT),
    *_vec(_no, "st.sem.scope{.global}{.level1::eviction_priority}.level::cache_hint{.vec}.type",
          "-, [a], b, cache_policy", ST_POLICY, "sm_80", "7.4", sem=("relaxed", "release"), scope=SCOPE, **L1, **HINT),
    _no("st{.weak}{.ss}{.cop}.b128", "-, [a], b", B128, "sm_70", "8.3", ss=ST_SS + ("shared::cluster",), cop=ST_COP),
    _no("st.volatile{.ss}.b128", "-, [a], b", B128, "sm_70", "8.3", ss=SYNC_SS + ("shared::cluster",)),
    _no("st.sem.scope{.ss}.b128", "-, [a], b", B128, "sm_70", "8.3", sem=("relaxed", "release"), scope=SCOPE,
        ss=SYNC_SS + ("shared::cluster",)),
    _no("st.mmio.relaxed.sys{.global}.b128", "-, [a], b", B128, "sm_70", "8.3"),
)

# ---- atom / red -----------------------------------------------------------------------------------
#: atom/red's spaces (.shared::cluster at this CTA's own addresses: fragsim runs clusters of one CTA)
ATOM_SPACE = ("global", "shared", "shared::cta", "shared::cluster")
ATOM_SEM = ("relaxed", "acquire", "release")
RED_SEM = ("relaxed", "release")
#: (op or slot, ops, types) of the scalar integer and .f32 atomics the builder runs, as ptxas pairs them
GROUPS = (("op", ("and", "or", "xor"), ("b32", "b64")),
          ("add", (), ("u32", "s32", "u64", "f32")),
          ("op", ("inc", "dec"), ("u32",)),
          ("op", ("min", "max"), ("u32", "s32", "u64", "s64")))
EXCH = ("op", ("exch",), ("b32", "b64"))
#: the groups the ptx_kernels corpus runs (reduce_shfl: atomicAdd of u32 and f32, atomicMax of s32)
KERNEL_GROUPS = (GROUPS[1], GROUPS[3])
ATOM_NOTE = ("atom.global 32-bit: PTX 1.1, sm_11; .shared: 1.2, sm_12; 64-bit .add/.exch: 1.2 (.shared 2.0, sm_20); "
             "64-bit .and/.or/.xor/.min/.max: 3.1, sm_32; .add.f32: 2.0, sm_20; .scope: 5.0, sm_60; .sem: 6.0, "
             "sm_70; .cluster: 7.8, sm_90")
RED_NOTE = ("red.global 32-bit: PTX 1.2, sm_11; .shared: sm_12; the rest as atom's: .add.f32 2.0, sm_20; .scope 5.0, "
            "sm_60; .sem 6.0, sm_70; .cluster 7.8, sm_90")
ACQ_REL = ("atom.acq_rel is not read by the builder (fragsim.ptx.semantics.memory.NO_EFFECT lists the other "
           ".sem qualifiers, which order nothing in a program-order simulation, but not .acq_rel)")
F64 = "float atomics other than add.f32 are not modelled"
HALF = "the .noftz half-precision atomics (.f16, .bf16, .f16x2, .bf16x2) are not modelled"
VECTOR = "vector atomics (.v2, .v4, .v8) are not modelled"


def _atomic(opcode: str, sems: tuple[str, ...], head: str, ops: tuple[str, ...], types: tuple[str, ...],
            operands: str, run, status: Status, note: str = "", ncu: str | None = "atom",
            space: tuple[str, ...] = ATOM_SPACE, level: str = "") -> Row:
    """``opcode{.sem}{.scope}{.space}.<head>{level}.type`` where head is ``op`` (a slot of ``ops``) or a literal."""
    text = f"{opcode}{{.sem}}{{.scope}}{{.space}}.{head}{level}.type"
    vocab = {"sem": sems, "scope": SCOPE, "space": space, "type": types}
    if head == "op":
        vocab["op"] = ops
    if level:
        vocab.update(HINT)
    if run is None:
        return Row(Syntax(text, **vocab), operands, None, "sm_80" if level else "sm_11", "7.4" if level else "1.1",
                   status, kind="machine")
    ptx = "1.1" if opcode == "atom" else "1.2"
    return Row(Syntax(text, **vocab), operands, run, "sm_11", ptx, status, kind="machine", ncu=ncu, note=note)


def _atom_rows() -> tuple[Row, ...]:
    out = [_atomic("atom", ATOM_SEM, h, o, t, "d, [a], b", M.atom, K if (h, o, t) in KERNEL_GROUPS else X, ATOM_NOTE)
           for h, o, t in GROUPS + (EXCH,)]
    out.append(_r("atom{.sem}{.scope}{.space}.cas.type", "d, [a], b, c", M.atom, "sm_11", "1.1", X, ncu="atom",
                  note="atom.cas.b16: PTX 6.3, sm_70; " + ATOM_NOTE, sem=ATOM_SEM, scope=SCOPE, space=ATOM_SPACE,
                  type=("b16", "b32", "b64")))
    # refused: .acq_rel, .level::cache_hint
    out += [Row(Syntax(f"atom.acq_rel{{.scope}}{{.space}}.{h}.type", scope=SCOPE, space=ATOM_SPACE, type=t,
                       **({"op": o} if h == "op" else {})), "d, [a], b", None, "sm_70", "6.0",
                Status("refused", why=ACQ_REL), kind="machine") for h, o, t in GROUPS + (EXCH,)]
    out.append(_no("atom.acq_rel{.scope}{.space}.cas.type", "d, [a], b, c", ACQ_REL, "sm_70", "6.0", scope=SCOPE,
                   space=ATOM_SPACE, type=("b16", "b32", "b64")))
    policy = Status("refused", why=POLICY.format(op="atom", operands="d, [a], b"))
    out += [_atomic("atom", ATOM_SEM + ("acq_rel",), h, o, t, "d, [a], b, cache_policy", None, policy,
                    space=("global",), level=".level::cache_hint") for h, o, t in GROUPS + (EXCH,)]
    out += [
        _no("atom{.sem}{.scope}{.space}.add.f64", "d, [a], b", F64, "sm_60", "5.0", sem=ATOM_SEM + ("acq_rel",),
            scope=SCOPE, space=ATOM_SPACE),
        _no("atom{.sem}{.scope}{.space}.cas.b128", "d, [a], b, c", B128, "sm_90", "8.3", sem=ATOM_SEM + ("acq_rel",),
            scope=SCOPE, space=ATOM_SPACE),
        _no("atom{.sem}{.scope}{.space}.exch.b128", "d, [a], b", B128, "sm_90", "8.3", sem=ATOM_SEM + ("acq_rel",),
            scope=SCOPE, space=ATOM_SPACE),
        _no("atom{.sem}{.scope}{.global}.exch.level::cache_hint.b128", "d, [a], b, cache_policy", B128, "sm_90",
            "8.3", sem=ATOM_SEM + ("acq_rel",), scope=SCOPE, **HINT),
        _no("atom{.sem}{.scope}{.space}.add.noftz.type", "d, [a], b", HALF, "sm_60", "6.2",
            sem=ATOM_SEM + ("acq_rel",), scope=SCOPE, space=ATOM_SPACE, type=("f16", "f16x2", "bf16", "bf16x2")),
        _no("atom{.sem}{.scope}{.global}.add.noftz.level::cache_hint.type", "d, [a], b, cache_policy", HALF,
            "sm_80", "7.4", sem=ATOM_SEM + ("acq_rel",), scope=SCOPE, type=("f16", "f16x2", "bf16", "bf16x2"),
            **HINT),
        _no("atom{.sem}{.scope}{.global}.add{.level::cache_hint}.vec.f32", "d, [a], b, {cache_policy}", VECTOR,
            "sm_90", "8.1", sem=ATOM_SEM + ("acq_rel",), scope=SCOPE, vec=("v2", "v4"), **HINT),
        _no("atom{.sem}{.scope}{.global}.op.noftz{.level::cache_hint}.vec.type", "d, [a], b, {cache_policy}", VECTOR,
            "sm_90", "8.1", sem=ATOM_SEM + ("acq_rel",), scope=SCOPE, op=("add", "min", "max"),
            vec=("v2", "v4", "v8"), type=("f16", "bf16"), **HINT),
        _no("atom{.sem}{.scope}{.global}.op.noftz{.level::cache_hint}.vec.type", "d, [a], b, {cache_policy}", VECTOR,
            "sm_90", "8.1", sem=ATOM_SEM + ("acq_rel",), scope=SCOPE, op=("add", "min", "max"), vec=("v2", "v4"),
            type=("f16x2", "bf16x2"), **HINT),
    ]
    return tuple(out)


def _red_rows() -> tuple[Row, ...]:
    out = [_atomic("red", RED_SEM, h, o, t, "-, [a], b", M.red, X, RED_NOTE) for h, o, t in GROUPS]
    policy = Status("refused", why=POLICY.format(op="red", operands="[a], b"))
    out += [_atomic("red", RED_SEM, h, o, t, "-, [a], b, cache_policy", None, policy, space=("global",),
                    level=".level::cache_hint") for h, o, t in GROUPS]
    out += [
        _no("red{.sem}{.scope}{.space}.add.f64", "-, [a], b", F64, "sm_60", "5.0", sem=RED_SEM, scope=SCOPE,
            space=ATOM_SPACE),
        _no("red{.sem}{.scope}{.space}.add.noftz.type", "-, [a], b", HALF, "sm_60", "6.2", sem=RED_SEM, scope=SCOPE,
            space=ATOM_SPACE, type=("f16", "f16x2", "bf16", "bf16x2")),
        _no("red{.sem}{.scope}{.global}.add.noftz.level::cache_hint.type", "-, [a], b, cache_policy", HALF, "sm_80",
            "7.4", sem=RED_SEM, scope=SCOPE, type=("f16", "f16x2", "bf16", "bf16x2"), **HINT),
        _no("red{.sem}{.scope}{.global}.add{.level::cache_hint}.vec.f32", "-, [a], b, {cache_policy}", VECTOR,
            "sm_90", "8.1", sem=RED_SEM, scope=SCOPE, vec=("v2", "v4"), **HINT),
        _no("red{.sem}{.scope}{.global}.op.noftz{.level::cache_hint}.vec.type", "-, [a], b, {cache_policy}", VECTOR,
            "sm_90", "8.1", sem=RED_SEM, scope=SCOPE, op=("add", "min", "max"), vec=("v2", "v4", "v8"),
            type=("f16", "bf16"), **HINT),
        _no("red{.sem}{.scope}{.global}.op.noftz{.level::cache_hint}.vec.type", "-, [a], b, {cache_policy}", VECTOR,
            "sm_90", "8.1", sem=RED_SEM, scope=SCOPE, op=("add", "min", "max"), vec=("v2", "v4"),
            type=("f16x2", "bf16x2"), **HINT),
    ]
    return tuple(out)


ATOM = _atom_rows()
RED = _red_rows()

# ---- textures and surfaces: refused (fragsim has no texture unit) ---------------------------------
TEX = "textures and surfaces are not modelled"
TEX_NOTE = "target/PTX version from the ISA's notes as recalled, not from /work/notes/ptx_facts.md (unconfirmed)"
GEOM = ("1d", "2d", "3d", "a1d", "a2d")
CLAMP = ("trap", "clamp", "zero")


def _tex(text: str, operands: str, target: str, ptx: str, **vocab) -> Row:
    """A refused texture/surface row; ``[a]`` stands for the ISA's ``[a, b, c]`` tuple (texture, sampler,
    coordinates)."""
    return Row(Syntax(text, **vocab), operands, None, target, ptx, Status("refused", why=TEX), kind="machine",
               note=TEX_NOTE)


TEXTURE: tuple[Row, ...] = (
    *(_tex("tex.geom.v4.dtype.ctype", "d[|p], [a], {e}, {f}", "sm_10", "1.0", geom=g,
           dtype=("u32", "s32", "f16", "f32"), ctype=c)
      for g, c in ((GEOM, ("s32", "f32")), (("cube", "acube"), ("f32",)), (("2dms", "a2dms"), ("s32",)))),
    *(_tex("tex.geom.v2.f16x2.ctype", "d[|p], [a], {e}, {f}", "sm_53", "6.0", geom=g, ctype=c)
      for g, c in ((GEOM, ("s32", "f32")), (("cube", "acube"), ("f32",)), (("2dms", "a2dms"), ("s32",)))),
    _tex("tex.mipmap.geom.v4.dtype.f32", "d[|p], [a], {lod}, {e}, {f}", "sm_20", "2.3", mipmap=("base", "level",
         "grad"), geom=GEOM + ("cube", "acube"), dtype=("u32", "s32", "f16", "f32")),
    _tex("tex.mipmap.geom.v2.f16x2.f32", "d[|p], [a], {lod}, {e}, {f}", "sm_53", "6.0",
         mipmap=("base", "level", "grad"), geom=GEOM + ("cube", "acube")),
    _tex("tld4.comp.geom.v4.dtype.f32", "d[|p], [a], {e}, {f}", "sm_20", "2.2", comp=("r", "g", "b", "a"),
         geom=("2d", "a2d", "cube", "acube"), dtype=("u32", "s32", "f32")),
    _tex("txq.tquery.b32", "d, [a]", "sm_10", "1.5", tquery=("width", "height", "depth", "channel_data_type",
         "channel_order", "normalized_coords", "array_size", "num_mipmap_levels", "num_samples")),
    _tex("txq.level.tlquery.b32", "d, [a], lod", "sm_20", "3.1", tlquery=("width", "height", "depth")),
    _tex("txq.squery.b32", "d, [a]", "sm_10", "1.5", squery=("force_unnormalized_coords", "filter_mode",
         "addr_mode_0", "addr_mode_1", "addr_mode_2")),
    _tex("suld.b.geom{.cop}{.vec}.dtype.clamp", "d, [a]", "sm_20", "2.0", geom=GEOM, cop=("ca", "cg", "cs", "cv"),
         vec=("v2", "v4"), dtype=("b8", "b16", "b32", "b64"), clamp=CLAMP),
    _tex("sust.b.geom{.cop}{.vec}.ctype.clamp", "-, [a], c", "sm_20", "2.0", geom=GEOM,
         cop=("wb", "cg", "cs", "wt"), vec=("v2", "v4"), ctype=("b8", "b16", "b32", "b64"), clamp=CLAMP),
    _tex("sust.p.geom{.vec}.b32.clamp", "-, [a], c", "sm_20", "2.0", geom=("1d", "2d", "3d"), vec=("v2", "v4"),
         clamp=CLAMP),
    _tex("sured.b.op.geom.ctype.clamp", "-, [a], c", "sm_20", "2.0", op=("add", "min", "max", "and", "or"),
         geom=("1d", "2d", "3d"), ctype=("u32", "u64", "s32", "b32", "s64"), clamp=CLAMP),
    _tex("sured.p.op.geom.ctype.clamp", "-, [a], c", "sm_20", "2.0", op=("add", "min", "max", "and", "or"),
         geom=("1d", "2d", "3d"), ctype=("b32", "b64"), clamp=CLAMP),
    _tex("suq.query.b32", "d, [a]", "sm_20", "1.5", query=("width", "height", "depth", "channel_data_type",
         "channel_order", "array_size", "memory_layout")),
    _tex("istypep.type", "p, a", "sm_30", "4.0", type=("texref", "samplerref", "surfref")),
)

ROWS: tuple[Row, ...] = LD + LDU + ST + ATOM + RED + TEXTURE
