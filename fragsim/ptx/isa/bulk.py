"""Rows: bulk and tensor copies (the Tensor Memory Accelerator), bulk reductions, their groups, and the
prefetches (PTX ISA sections 9.7.9.12-9.7.9.16, 9.7.9.24-9.7.9.27).  Builders:
``fragsim.ptx.semantics.bulk`` -- ``cp`` for the copies and groups, ``nothing`` for the prefetches (no
effect on data).  ``cp.async`` and ``cp.async.mbarrier.arrive`` are isa/tensor.py's and isa/mbarrier.py's.

The ISA's own notation: ``.dst.src.completion_mechanism`` are slots of one spelling each (the ISA gives a
syntax line per direction).  An operand ``[tensorMap]`` stands for the ISA's ``[tensorMap, tensorCoords]``.
``.multicast::cluster`` runs with a ctaMask that names CTA 0 only: fragsim runs clusters of one CTA.
"""

from __future__ import annotations

from ..semantics import bulk as B
from .grammar import Syntax
from .row import Row, Status

K = Status("exact", "ptx_kernels")
X = Status("exact")
TMA = Status("bit-exact", "tma")
#: the same load into .shared::cta (PTX 8.6): the tma family's kernels write .shared::cluster
TMA_CTA = Status("unvalidated", "tma", why="its kernels load into .shared::cluster")

LOAD = {"completion_mechanism": ("mbarrier::complete_tx::bytes",)}
STORE = {"completion_mechanism": ("bulk_group",)}
HINT = {"level::cache_hint": ("L2::cache_hint",)}
DIMS = ("1d", "2d", "3d", "4d", "5d")
IM2COL_DIMS = ("3d", "4d", "5d")
REDUCE_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor")


def _r(text: str, operands: str, run, target: str, ptx: str, status: Status = K, note: str = "",
       **vocab: tuple[str, ...]) -> Row:
    return Row(Syntax(text, **vocab), operands, run, target, ptx, status, kind="machine", note=note)


def _no(text: str, operands: str, why: str, target: str, ptx: str, **vocab: tuple[str, ...]) -> Row:
    return Row(Syntax(text, **vocab), operands, None, target, ptx, Status("refused", why=why), kind="machine")


CLUSTER = ("a copy into the shared memory of another CTA of the cluster (.shared::cluster from .shared::cta) is "
           "not modelled: fragsim runs clusters of one CTA")
MODE = "only the .tile load mode is modelled (not .im2col, .im2col::w, .tile::gather4/scatter4)"
CTA_GROUP = ".cta_group (a CTA pair's shared memory, sm_100) is not modelled"

COPIES: tuple[Row, ...] = (
    _r("cp.async.bulk.dst.src.completion_mechanism{.multicast}{.level::cache_hint}",
       "-, [dstMem], [srcMem], size, [mbar], {ctaMask}, {cache_policy}", B.cp, "sm_90", "8.0",
       note=".multicast::cluster: advised on sm_90a", dst=("shared::cluster",), src=("global",),
       multicast=("multicast::cluster",), **LOAD, **HINT),
    _r("cp.async.bulk.dst.src.completion_mechanism{.level::cache_hint}", "-, [dstMem], [srcMem], size, [mbar], "
       "{cache_policy}", B.cp, "sm_90", "8.6", X, dst=("shared::cta",), src=("global",), **LOAD, **HINT),
    _no("cp.async.bulk.dst.src.completion_mechanism", "-, [dstMem], [srcMem], size, [mbar]", CLUSTER, "sm_90",
        "8.0", dst=("shared::cluster",), src=("shared::cta",), **LOAD),
    _r("cp.async.bulk.dst.src.completion_mechanism{.level::cache_hint}", "-, [dstMem], [srcMem], size, "
       "{cache_policy}", B.cp, "sm_90", "8.0", dst=("global",), src=("shared::cta",), **STORE, **HINT),
    _no("cp.async.bulk.dst.src.completion_mechanism{.level::cache_hint}.cp_mask", "-, [dstMem], [srcMem], size, "
        "{cache_policy}, byteMask", ".cp_mask (a byte mask on a bulk store) is not modelled", "sm_100", "8.6",
        dst=("global",), src=("shared::cta",), **STORE, **HINT),
    _r("cp.async.bulk.commit_group", "", B.cp, "sm_90", "8.0"),
    _r("cp.async.bulk.wait_group{.read}", "-, n:imm", B.cp, "sm_90", "8.0"),
    # tensor copies
    _r("cp.async.bulk.tensor.dim.dst.src{.load_mode}.completion_mechanism{.multicast}{.level::cache_hint}",
       "-, [dstMem], [tensorMap], [mbar], {ctaMask}, {cache_policy}", B.cp, "sm_90", "8.0", TMA, dim=DIMS,
       dst=("shared::cluster",), src=("global",), load_mode=("tile",), multicast=("multicast::cluster",),
       **LOAD, **HINT),
    _r("cp.async.bulk.tensor.dim.dst.src{.load_mode}.completion_mechanism{.level::cache_hint}",
       "-, [dstMem], [tensorMap], [mbar], {cache_policy}", B.cp, "sm_90", "8.6", TMA_CTA, dim=DIMS, dst=("shared::cta",),
       src=("global",), load_mode=("tile",), **LOAD, **HINT),
    _r("cp.async.bulk.tensor.dim.dst.src{.load_mode}.completion_mechanism{.level::cache_hint}",
       "-, [tensorMap], [srcMem], {cache_policy}", B.cp, "sm_90", "8.0", TMA, dim=DIMS, dst=("global",),
       src=("shared::cta",), load_mode=("tile",), **STORE, **HINT),
    _no("cp.async.bulk.tensor.dim.dst.src.load_mode.completion_mechanism{.multicast}{.level::cache_hint}",
        "-, [dstMem], [tensorMap], [mbar], im2colInfo, {ctaMask}, {cache_policy}", MODE, "sm_90", "8.0",
        dim=IM2COL_DIMS, dst=("shared::cluster",), src=("global",), load_mode=("im2col",),
        multicast=("multicast::cluster",), **LOAD, **HINT),
    _no("cp.async.bulk.tensor.dim.dst.src.load_mode.completion_mechanism{.level::cache_hint}",
        "-, [dstMem], [tensorMap], [mbar], im2colInfo, {cache_policy}", MODE, "sm_90", "8.6", dim=IM2COL_DIMS,
        dst=("shared::cta",), src=("global",), load_mode=("im2col",), **LOAD, **HINT),
    _no("cp.async.bulk.tensor.dim.dst.src.load_mode.completion_mechanism{.level::cache_hint}",
        "-, [tensorMap], [srcMem], {cache_policy}", MODE, "sm_90", "8.0", dim=IM2COL_DIMS, dst=("global",),
        src=("shared::cta",), load_mode=("im2col_no_offs",), **STORE, **HINT),
    _no("cp.async.bulk.tensor.dim.dst.src.load_mode.completion_mechanism{.level::cache_hint}",
        "-, [dstMem], [tensorMap], [mbar], {cache_policy}", MODE, "sm_100", "8.6", dim=("2d",),
        dst=("shared::cta",), src=("global",), load_mode=("tile::gather4",), **LOAD, **HINT),
    _no("cp.async.bulk.tensor.dim.dst.src{.load_mode}.completion_mechanism{.multicast}.cta_group"
        "{.level::cache_hint}", "-, [dstMem], [tensorMap], [mbar], {ctaMask}, {cache_policy}", CTA_GROUP,
        "sm_100a", "8.6", dim=DIMS, dst=("shared::cluster",), src=("global",), load_mode=("tile",),
        multicast=("multicast::cluster",), cta_group=("cta_group::1", "cta_group::2"), **LOAD, **HINT),
)

# ---- cp.reduce.async.bulk -------------------------------------------------------------------------
#: (redOp, types) of the integer reductions into global memory, as ptxas pairs them
REDUCE_GROUPS = ((("and", "or", "xor"), ("b32", "b64")),
                 (("add",), ("u32", "s32", "u64")),
                 (("inc", "dec"), ("u32",)),
                 (("min", "max"), ("u32", "s32", "u64", "s64")))
#: the same into another CTA's shared memory (32-bit, and .add.u64)
CLUSTER_GROUPS = ((("and", "or", "xor"), ("b32",)),
                  (("add",), ("u32", "s32", "u64")),
                  (("inc", "dec"), ("u32",)),
                  (("min", "max"), ("u32", "s32")))
FLOAT_REDUCE = "floating-point bulk reductions (.f32, .f64, .f16, .bf16) are not modelled"
TENSOR_REDUCE = "tensor bulk reductions (cp.reduce.async.bulk.tensor) are not modelled"

REDUCE: tuple[Row, ...] = (
    *(_r("cp.reduce.async.bulk.dst.src.completion_mechanism{.level::cache_hint}.redOp.type",
         "-, [dstMem], [srcMem], size, {cache_policy}", B.cp, "sm_90", "8.0", K if ops == ("add",) else X,
         dst=("global",), src=("shared::cta",), redOp=ops, type=types, **STORE, **HINT)
      for ops, types in REDUCE_GROUPS),
    _no("cp.reduce.async.bulk.dst.src.completion_mechanism{.level::cache_hint}.redOp.type",
        "-, [dstMem], [srcMem], size, {cache_policy}", FLOAT_REDUCE, "sm_90", "8.0", dst=("global",),
        src=("shared::cta",), redOp=("add",), type=("f32", "f64"), **STORE, **HINT),
    _no("cp.reduce.async.bulk.dst.src.completion_mechanism{.level::cache_hint}.redOp.type",
        "-, [dstMem], [srcMem], size, {cache_policy}", FLOAT_REDUCE, "sm_90", "8.0", dst=("global",),
        src=("shared::cta",), redOp=("min", "max"), type=("f16", "bf16"), **STORE, **HINT),
    _no("cp.reduce.async.bulk.dst.src.completion_mechanism{.level::cache_hint}.add.noftz.type",
        "-, [dstMem], [srcMem], size, {cache_policy}", FLOAT_REDUCE, "sm_90", "8.0", dst=("global",),
        src=("shared::cta",), type=("f16", "bf16"), **STORE, **HINT),
    *(_no("cp.reduce.async.bulk.dst.src.completion_mechanism.redOp.type", "-, [dstMem], [srcMem], size, [mbar]",
          CLUSTER, "sm_90", "8.0", dst=("shared::cluster",), src=("shared::cta",), redOp=ops, type=types, **LOAD)
      for ops, types in CLUSTER_GROUPS),
    _no("cp.reduce.async.bulk.tensor.dim.dst.src.redOp{.load_mode}.completion_mechanism{.level::cache_hint}",
        "-, [tensorMap], [srcMem], {cache_policy}", TENSOR_REDUCE, "sm_90", "8.0", dim=DIMS, dst=("global",),
        src=("shared::cta",), redOp=REDUCE_OPS, load_mode=("tile",), **STORE, **HINT),
    _no("cp.reduce.async.bulk.tensor.dim.dst.src.redOp.load_mode.completion_mechanism{.level::cache_hint}",
        "-, [tensorMap], [srcMem], {cache_policy}", TENSOR_REDUCE, "sm_90", "8.0", dim=IM2COL_DIMS, dst=("global",),
        src=("shared::cta",), redOp=REDUCE_OPS, load_mode=("im2col_no_offs",), **STORE, **HINT),
)

# ---- prefetches: no effect on data ----------------------------------------------------------------
PREFETCH: tuple[Row, ...] = (
    _r("prefetch{.space}.level", "-, [a]", B.nothing, "sm_20", "2.0", X, space=("global", "local"),
       level=("L1", "L2")),
    _r("prefetch.global.level::eviction_priority", "-, [a]", B.nothing, "sm_80", "7.4", X,
       **{"level::eviction_priority": ("L2::evict_last", "L2::evict_normal")}),
    _r("prefetchu.L1", "-, [a]", B.nothing, "sm_20", "2.0", X),
    _r("prefetch{.tensormap_space}.tensormap", "-, [a]", B.nothing, "sm_90", "8.0", tensormap_space=("const", "param")),
    _r("cp.async.bulk.prefetch.L2.src{.level::cache_hint}", "-, [srcMem], size, {cache_policy}", B.nothing, "sm_90",
       "8.0", X, src=("global",), **HINT),
    _r("cp.async.bulk.prefetch.tensor.dim.L2.src{.load_mode}{.level::cache_hint}", "-, [tensorMap], {cache_policy}",
       B.nothing, "sm_90", "8.0", X, dim=DIMS, src=("global",), load_mode=("tile",), **HINT),
    _r("cp.async.bulk.prefetch.tensor.dim.L2.src.load_mode{.level::cache_hint}",
       "-, [tensorMap], im2colInfo, {cache_policy}", B.nothing, "sm_90", "8.0", X, dim=IM2COL_DIMS, src=("global",),
       load_mode=("im2col",), **HINT),
)

ROWS: tuple[Row, ...] = COPIES + REDUCE + PREFETCH
