"""Architectures as data: one row per architecture, and the compute capabilities each models.

A row holds every fact fragsim keeps about an architecture: its name and compute capability,
the names users give it (aliases), and the parameters of the tensor-core arithmetic of
``mma.sync`` (``ArchParams``, ``ARCHS``) and of ``wgmma`` (``WgmmaParams``, ``WGMMA_PARAMS``: the
numbers it shares with the mma.sync row are read from that row, not written twice).
``DEFAULT_ARCH`` is the row every function and command uses when given none.  The
arithmetic (``fragsim.arith``) is ONE function, the truncated fused dot-product-add
(products aligned to the largest exponent, truncated to F fraction bits, summed per block of L), over
these numbers.  Which
instructions an architecture has follows from the instruction table (each entry's ``min_cc``).
``COMPUTE_CAPABILITIES`` says which row models a GPU of a given compute capability, or why none
does; gpu_check, the ``--arch`` choices and the dry-run backend read it.  Adding an architecture is
adding a row here (and its compute capabilities).

Where the published sources leave a behaviour open, the row holds it as a single field
(``e_zero_f16``, ``zero_sign``, ``c_subnormal_exp``, ``tf32_nan_low_bits``), so that
hardware corpora can settle it by editing one value.  The values chosen here are those of
MMA-Sim 2.1.1, which was validated bit for bit on A100 and H100 with random bit streams.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from fragsim.facts.formats import FORMATS
from fragsim.validate import show

__all__ = ["ArchParams", "ARCHS", "DEFAULT_ARCH", "ALIASES", "COMPUTE_CAPABILITIES", "get_arch", "arch_for_cc",
           "WgmmaParams", "WGMMA_PARAMS", "get_params"]


@dataclass(frozen=True)
class ArchParams:
    """Arithmetic of ``mma.sync`` on one architecture (see the reference doc's model).

    block_16bit / block_tf32: products per block L (f16/bf16 inputs; tf32 inputs).  K > L
        runs ceil(K/L) blocks in ascending logical k, each block's rounded result being the
        next block's c (C enters the first block).
    frac_bits: F, the fractional bits kept below the largest term's exponent E_max.
    e_zero_f32 / e_zero_f16: the exponent a zero term (zero product, zero c) takes in the
        E_max comparison, for f32 and for f16 accumulators.
    round_f32 / round_f16: rounding of the block sum to the output format ('rz' or 'rne').
        Overflow always gives Inf (also under RZ), subnormal results are produced.
    zero_sign: sign of a zero result.  'positive': always +0 (MMA-Sim).  'ieee': -0 when
        every term is a negative zero, +0 for an exact cancellation, and the sum's sign when a
        nonzero sum rounds to zero.
    c_subnormal_exp: exponent a subnormal c gets for E_max.  'emin': the format's emin, as
        for A and B inputs (MMA-Sim).  'exact': floor(log2|c|).
    tf32_nan_low_bits: False: the low 13 bits of tf32 inputs are dropped before anything,
        so a NaN whose payload lies only there reads as Inf (MMA-Sim).  True: such a word is
        still a NaN.

    The integer and f64 forms are not this model (``fragsim.arith.exact``):
    sat_block_8bit / sat_block_4bit: under .satfinite, products (ascending k) per saturating
        step of the s32 sum, for 8-bit and 4-bit inputs; 0: c plus the exact dot product,
        clamped once.
    f64_order: k order of the chain of fused multiply-adds that c enters first
        ('ascending' or 'descending').
    f64_fused: True: each step is one fma (one rounding); False: the product is rounded first.
    f64_subnormals: 'ieee' (kept) or 'ftz' (subnormal inputs read as zero, results flushed).
    f64_nan_order: which NaN operand of a step's fma(a, b, acc) its result carries (quieted,
        sign and payload kept): the first of this order of 'a', 'b' and 'c' (acc) that is a
        NaN; 'canonical': every NaN result is f64_default_nan.
    f64_default_nan: the NaN an invalid operation (Inf * 0, Inf - Inf) of NaN-free operands
        gives.

    fp8 (e4m3/e5m2) forms (``fragsim.arith.fp8``): the inputs convert exactly to f16 and run as
    f16 mma over chained blocks of this row's 16-bit model (``frac_bits``, ``e_zero_*``, rounding):
    fp8_split: '' (no fp8 mma on this architecture), 'pairs' (two blocks of K/2: first the k with
        k % 4 in {0, 1} -- the low halves of each register --, then k % 4 in {2, 3}), 'halves'
        (k < K/2, then the rest) or 'none' (one block of all K).
    fp8_c: 'add' (the blocks start from c = +0 and C is added last by one IEEE round-to-nearest-even
        addition in the accumulator format) or 'mma' (C enters the first block, as for f16 inputs).

    f16 m8n8k4 forms (``fragsim.arith.chain``): a tree of IEEE binary32 operations per output
    (f16 inputs, exact in binary32, and so are their products), rounded to nearest even into D:
    m884_f32 / m884_f16: the tree for f32 / f16 D, as nested tuples: ``("fma", k, x)`` is
    fma(a_k, b_k, x), ``("mul", k)`` a_k * b_k, ``("add", x, y)`` x + y, ``"c"`` the element of
    C (f16 C widened exactly), ``"+0"`` positive zero.  Every NaN result is the canonical NaN.
    ``()``: not modelled on this architecture.
    """

    name: str
    description: str
    cc: int                     # its own compute capability, major*10 + minor
    aliases: tuple              # other names users give it ("a100", "ampere")
    block_16bit: int
    block_tf32: int
    frac_bits: int
    e_zero_f32: int
    e_zero_f16: int
    round_f32: str = "rz"
    round_f16: str = "rne"
    zero_sign: str = "positive"
    c_subnormal_exp: str = "emin"
    tf32_nan_low_bits: bool = False
    sat_block_8bit: int = 0
    sat_block_4bit: int = 0
    f64_order: str = "ascending"
    f64_fused: bool = True
    f64_subnormals: str = "ieee"
    f64_nan_order: str = "bca"
    f64_default_nan: int = 0xFFF8000000000000
    fp8_split: str = ""
    fp8_c: str = "add"
    m884_f32: tuple = ()
    m884_f16: tuple = ()
    # Bytes of shared memory one CTA can address: the opt-in maximum per thread block (CUDA C++
    # Programming Guide, "Technical Specifications per Compute Capability", maximum shared memory per
    # thread block: 227 KB on 9.0, 163 KB on 8.0 -- cudaDevAttrMaxSharedMemoryPerBlockOptin).  Tiles,
    # smem arrays and lane addresses past it are refused by every shared-memory entry point.
    smem_per_cta: int = 0

    def __post_init__(self):
        for f in fields(self):  # exact types: a string where a bool belongs would act as True
            v = getattr(self, f.name)
            want = {"int": int, "bool": bool, "str": str, "tuple": tuple}[str(f.type)]
            if type(v) is not want:
                raise TypeError(f"arch {self.name}: {f.name} must be {want.__name__}, got {type(v).__name__} {v!r}")
        for f in ("round_f32", "round_f16"):
            if getattr(self, f) not in ("rz", "rne"):
                raise ValueError(f"arch {self.name}: {f} must be 'rz' or 'rne', got {getattr(self, f)!r}")
        if self.zero_sign not in ("positive", "ieee"):
            raise ValueError(f"arch {self.name}: zero_sign must be 'positive' or 'ieee', got {self.zero_sign!r}")
        if self.c_subnormal_exp not in ("emin", "exact"):
            raise ValueError(f"arch {self.name}: c_subnormal_exp must be 'emin' or 'exact', "
                             f"got {self.c_subnormal_exp!r}")
        for f, ok in (("f64_order", ("ascending", "descending")), ("f64_subnormals", ("ieee", "ftz"))):
            if getattr(self, f) not in ok:
                raise ValueError(f"arch {self.name}: {f} must be {' or '.join(map(repr, ok))}, "
                                 f"got {getattr(self, f)!r}")
        if self.f64_nan_order != "canonical" and sorted(self.f64_nan_order) != ["a", "b", "c"]:
            raise ValueError(f"arch {self.name}: f64_nan_order must be an order of 'a', 'b', 'c' (such as 'bca') "
                             f"or 'canonical', got {self.f64_nan_order!r}")
        nan_bits = self.f64_default_nan & 0x7FF0000000000000 == 0x7FF0000000000000 and self.f64_default_nan & ((1 << 52) - 1)
        if not (0 <= self.f64_default_nan < 1 << 64 and nan_bits):
            raise ValueError(f"arch {self.name}: f64_default_nan must be a binary64 NaN word, got {self.f64_default_nan:#x}")
        if self.fp8_split not in ("", "pairs", "halves", "none"):
            raise ValueError(f"arch {self.name}: fp8_split must be '', 'pairs', 'halves' or 'none', "
                             f"got {self.fp8_split!r}")
        if self.fp8_c not in ("add", "mma"):
            raise ValueError(f"arch {self.name}: fp8_c must be 'add' or 'mma', got {self.fp8_c!r}")
        for f in ("m884_f32", "m884_f16"):
            used: set = set()
            why = _tree_error(getattr(self, f), used) or ("" if used == {0, 1, 2, 3} else
                                                         f"the tree must use each k of 0..3 once, uses {sorted(used)}")
            if getattr(self, f) != () and why:
                raise ValueError(f"arch {self.name}: {f}: {why}")
        for f in ("sat_block_8bit", "sat_block_4bit"):   # the kernel sums 8 k per vector
            if not (0 <= getattr(self, f) <= 256 and getattr(self, f) % 8 == 0):
                raise ValueError(f"arch {self.name}: {f} must be a multiple of 8 in 0..256, got {getattr(self, f)}")
        if not 0 < self.smem_per_cta < 1 << 32:     # shared-memory addresses are 32-bit
            raise ValueError(f"arch {self.name}: smem_per_cta must be in 1..2**32-1 bytes, got {self.smem_per_cta}")
        for f in ("block_16bit", "block_tf32"):
            if not 1 <= getattr(self, f) <= 64:
                raise ValueError(f"arch {self.name}: {f} must be in 1..64, got {getattr(self, f)}")
        # The kernel sums up to 65 terms below 2**(F + 2) exactly in float64 (53 bits).
        if not 0 <= self.frac_bits <= 40:
            raise ValueError(f"arch {self.name}: frac_bits must be in 0..40, got {self.frac_bits}")
        # 2**e_zero and 2**(F - E_max) must stay normal float64 numbers.
        for f in ("e_zero_f32", "e_zero_f16"):
            if not -600 <= getattr(self, f) <= 0:
                raise ValueError(f"arch {self.name}: {f} must be in -600..0, got {getattr(self, f)}")

    def block_len(self, input_format: str) -> int:
        """Products per block for an input format name ('f16', 'bf16', 'tf32')."""
        return self.block_tf32 if input_format == "tf32" else self.block_16bit

    def e_zero(self, output_format: str) -> int:
        return self.e_zero_f16 if output_format == "f16" else self.e_zero_f32

    def rounding(self, output_format: str) -> str:
        return self.round_f16 if output_format == "f16" else self.round_f32

    def row(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def with_(self, **changes) -> "ArchParams":
        """A copy with some fields changed (to try an open choice: ``ARCHS['sm_90'].with_(zero_sign='ieee')``)."""
        return replace(self, **changes)


def _tree_error(t, used: set) -> str:
    """Why ``t`` is not an m8n8k4 operation tree ('' if it is one); ``used`` collects its k."""
    if t in ("c", "+0"):
        return ""
    if not isinstance(t, tuple) or not t or t[0] not in ("fma", "mul", "add") \
            or len(t) != {"fma": 3, "mul": 2, "add": 3}[t[0]]:
        return f"{t!r} is not 'c', '+0' or a tuple ('fma', k, x) / ('mul', k) / ('add', x, y)"
    if t[0] == "add":
        return _tree_error(t[1], used) or _tree_error(t[2], used)
    if type(t[1]) is not int or not 0 <= t[1] < 4 or t[1] in used:
        return f"{t!r}: k must be an integer in 0..3 that the tree has not used yet"
    used.add(t[1])
    return _tree_error(t[2], used) if t[0] == "fma" else ""


# sm_90's m8n8k4 .f16 (ptxas 13.0 emulates it: SHFL, f16 -> f32 conversions and this FFMA / FMUL /
# FADD tree, then F2FP.F16.F32.PACK_AB for f16 D).
_M884_F32_SM90 = ("add", "c", ("fma", 3, ("fma", 2, ("fma", 1, ("fma", 0, "+0")))))
_M884_F16_SM90 = ("add", ("add", "c", ("fma", 1, ("mul", 0))), ("fma", 3, ("mul", 2)))

ARCHS: dict[str, ArchParams] = {
    a.name: a
    for a in (
        ArchParams("sm_80", "A100 (Ampere)", cc=80, aliases=("sm80", "80", "a100", "ampere"),
                   block_16bit=8, block_tf32=4, frac_bits=24, e_zero_f32=-132, e_zero_f16=-20,
                   smem_per_cta=163 * 1024),
        ArchParams("sm_90", "H100/H200 (Hopper)", cc=90, aliases=("sm90", "sm_90a", "90", "h100", "h200", "h800",
                                                                  "hopper"),
                   block_16bit=16, block_tf32=8, frac_bits=25, e_zero_f32=-133, e_zero_f16=-21,
                   fp8_split="pairs", m884_f32=_M884_F32_SM90, m884_f16=_M884_F16_SM90,
                   smem_per_cta=227 * 1024),
    )
}

#: The architecture of every ``arch`` argument and ``--arch`` option left out.
DEFAULT_ARCH = "sm_90"

ALIASES = {alias: a.name for a in ARCHS.values() for alias in (a.name, *a.aliases)}

# Compute capability -> (the row that models it, why) or (None, why no row does).
COMPUTE_CAPABILITIES = {
    80: ("sm_80", "A100/A30: the row's own architecture"),
    86: ("sm_80", "GA10x Ampere: MMA-Sim 2.1.1 gives every Ampere GPU these parameters (no GA10x measured here)"),
    87: ("sm_80", "Jetson Orin (Ampere): MMA-Sim 2.1.1 gives every Ampere GPU these parameters (not measured here)"),
    89: ("sm_80", "Ada Lovelace: MMA-Sim 2.1.1 gives it Ampere's f16/bf16/tf32 mma parameters, validated on an "
                  "RTX 4090 (not measured here)"),
    90: ("sm_90", "H100/H200: the row's own architecture"),
    70: (None, "Volta runs no m16n8k* mma.sync form and no ldmatrix"),
    75: (None, "Turing's tensor cores differ from Ampere's (MMA-Sim: 8-byte blocks) and fragsim has no row for them"),
    100: (None, "Blackwell (sm_100) has no row: its mma.sync arithmetic is not modelled or validated here"),
    103: (None, "Blackwell (sm_103) has no row: its mma.sync arithmetic is not modelled or validated here"),
    120: (None, "RTX Blackwell (sm_120) has no row: its mma.sync arithmetic is not modelled or validated here"),
}


def arch_for_cc(major: int, minor: int, name: str = "this GPU") -> str:
    """The row that models a GPU of compute capability ``major.minor``; ValueError naming why if none."""
    row, why = COMPUTE_CAPABILITIES.get(major * 10 + minor, (None, "fragsim knows nothing about it"))
    if row is None:
        modelled = ", ".join(f"{cc // 10}.{cc % 10}" for cc, (r, _) in COMPUTE_CAPABILITIES.items() if r)
        raise ValueError(f"{name} has compute capability {major}.{minor}: {why}; fragsim models compute "
                         f"capabilities {modelled} (rows {', '.join(ARCHS)})")
    return row


def get_arch(name) -> ArchParams:
    """An architecture name or alias ('sm_90', 'H100', 'hopper', ...) -> its ``ArchParams`` row."""
    if isinstance(name, ArchParams):
        return name
    if not isinstance(name, str):
        raise TypeError(f"arch must be a name such as 'sm_90' (str) or an ArchParams row, "
                        f"got {type(name).__name__}")
    key = name.strip().lower().replace("-", "_")
    if key in ALIASES:
        return ARCHS[ALIASES[key]]
    raise ValueError(f"unsupported arch {name!r}; supported: {', '.join(ARCHS)} "
                     f"(aliases: a100/ampere -> sm_80, h100/h200/hopper -> sm_90)")


@dataclass(frozen=True)
class WgmmaParams:
    """Arithmetic of wgmma on one architecture, per input class (16-bit: f16/bf16; tf32; fp8).

    frac_bits_*: F, fractional bits kept below E_max.  block_*: products per block L.
    f32_man_bits_*: mantissa bits of the grid an f32 result is rounded to (23: f32 itself; 13:
        the e8m13 grid, f32 exponent range, subnormals down to 2**-139).
    e_zero_f32 / e_zero_f16: exponent of a zero term (zero product, zero c) in the E_max race.
    round_f32 / round_f16: 'rz' or 'rne' to the output grid.  Overflow gives Inf, NaN results are
        the canonical all-ones NaN (0x7FFFFFFF, 0x7FFF), zero results +0.
    sat_block_int: products per saturating step of .satfinite (0: c plus the exact dot product,
        clamped once).
    """

    name: str
    frac_bits_16bit: int
    block_16bit: int
    frac_bits_tf32: int
    block_tf32: int
    frac_bits_fp8: int
    block_fp8: int
    f32_man_bits_16bit: int
    f32_man_bits_tf32: int
    f32_man_bits_fp8: int
    e_zero_f32: int
    e_zero_f16: int
    round_f32: str
    round_f16: str
    sat_block_int: int

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            want = str if f.name in ("name", "round_f32", "round_f16") else int
            if type(v) is not want:
                raise TypeError(f"wgmma params {self.name}: {f.name} must be {want.__name__}, got {show(v)}")
        for f in ("round_f32", "round_f16"):
            if getattr(self, f) not in ("rz", "rne"):
                raise ValueError(f"wgmma params {self.name}: {f} must be 'rz' or 'rne', got {getattr(self, f)!r}")
        for cls in ("16bit", "tf32", "fp8"):
            if not 0 <= getattr(self, "frac_bits_" + cls) <= 40:
                raise ValueError(f"wgmma params {self.name}: frac_bits_{cls} must be in 0..40")
            if not 1 <= getattr(self, "block_" + cls) <= 32:
                raise ValueError(f"wgmma params {self.name}: block_{cls} must be in 1..32")
            if not 1 <= getattr(self, "f32_man_bits_" + cls) <= 23:
                raise ValueError(f"wgmma params {self.name}: f32_man_bits_{cls} must be in 1..23")
        for f in ("e_zero_f32", "e_zero_f16"):
            if not -600 <= getattr(self, f) <= 0:
                raise ValueError(f"wgmma params {self.name}: {f} must be in -600..0")
        if not 0 <= self.sat_block_int <= 32:
            raise ValueError(f"wgmma params {self.name}: sat_block_int must be in 0..32")

    def with_(self, **changes) -> "WgmmaParams":
        """A copy with some fields changed (to try an alternative: ``.with_(frac_bits_fp8=14)``)."""
        return replace(self, **changes)

    def of(self, in_name: str) -> tuple[int, int, int]:
        """(F, L, f32 mantissa bits) for an input format name."""
        cls = "tf32" if in_name == "tf32" else "fp8" if in_name in ("e4m3", "e5m2") else "16bit"
        return (getattr(self, "frac_bits_" + cls), getattr(self, "block_" + cls), getattr(self, "f32_man_bits_" + cls))


def _wgmma_row(mma: ArchParams, **own) -> WgmmaParams:
    """The wgmma row of ``mma``'s architecture: the tensor core's F, L, rounding, zero exponents and
    saturation step of the mma.sync row (the same numbers for 16-bit and tf32 inputs), their f32
    results on f32's own grid, and ``own``: the fp8 numbers (only wgmma has fp8 blocks of its own)
    and any value where wgmma differs."""
    f32_man = FORMATS["f32"].man_bits
    shared = dict(frac_bits_16bit=mma.frac_bits, block_16bit=mma.block_16bit, frac_bits_tf32=mma.frac_bits,
                  block_tf32=mma.block_tf32, f32_man_bits_16bit=f32_man, f32_man_bits_tf32=f32_man,
                  e_zero_f32=mma.e_zero_f32, e_zero_f16=mma.e_zero_f16,
                  round_f32=mma.round_f32, round_f16=mma.round_f16, sat_block_int=mma.sat_block_8bit)
    return WgmmaParams(mma.name, **{**shared, **own})


# sm_90 (H100/H200).  MMA-Sim 2.1.1's Hopper WGMMA: the mma.sync row's numbers for 16-bit and tf32
# inputs (F = 25, L = 32 bytes of products per block, e_zero -133 / -21, RZ to f32, RNE to f16, one
# clamp under .satfinite), and for fp8 F = 13, one block of 32, f32 results on the e8m13 grid; every
# value then checked on an H100 (docs/validation.md, gpu_check/wgmma/family.py).
WGMMA_PARAMS: dict[str, WgmmaParams] = {
    "sm_90": _wgmma_row(ARCHS["sm_90"], frac_bits_fp8=13, block_fp8=32, f32_man_bits_fp8=13),
}


def get_params(arch) -> WgmmaParams:
    """An architecture name or alias (or a ``WgmmaParams`` row) -> its wgmma row."""
    if isinstance(arch, WgmmaParams):
        return arch
    row = get_arch(arch)           # the names and aliases of ARCHS (refuses unknown ones)
    if row.name not in WGMMA_PARAMS:
        raise ValueError(f"arch {arch!r}: wgmma is an sm_90a instruction; fragsim models it for "
                         f"{', '.join(WGMMA_PARAMS)} only")
    return WGMMA_PARAMS[row.name]
