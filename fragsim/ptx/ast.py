"""The parsed form of a PTX module: what ``fragsim.ptx.parse`` returns and the machine runs.

Every node is a frozen dataclass.  Names are as PTX writes them (``%r1``, ``$L__BB0_2``,
``_Z6kernelPfS_i``), except registers, variables and labels declared in a nested ``{ ... }`` block
of a body: the block's braces disappear and such a name that is already taken in the function is
renamed ``name%k`` (``%`` cannot occur inside a PTX identifier, so the new name collides with
nothing), every use inside the block renamed with it.  A body is therefore flat, with unique names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# --------------------------------------------------------------------------------------- operands


@dataclass(frozen=True)
class Reg:
    """A register or predicate (``%r1``, ``%p2``, ``p``); ``negated`` for ``!%p`` (guards and the
    predicate sources of ``setp``/``selp``/``vote`` ...)."""

    name: str
    negated: bool = False


@dataclass(frozen=True)
class Imm:
    """An immediate.  ``kind`` "int": ``value`` is the literal's integer (hex ``0x``, octal ``0``,
    binary ``0b``, decimal, may be negative; a ``U`` suffix is dropped).  ``kind`` "f32"/"f64":
    ``value`` is the raw IEEE bits of ``0fXXXXXXXX``/``0dXXXXXXXXXXXXXXXX``; a decimal float literal
    (``1.0``, ``1e-3``) is an f64 and its bits."""

    value: int
    kind: str


@dataclass(frozen=True)
class Special:
    """A special register: ``%tid.x`` -> ``Special("tid", "x")``, ``%laneid`` -> ``("laneid", None)``."""

    name: str
    component: str | None


@dataclass(frozen=True)
class Symbol:
    """A variable, parameter or function name used as a value (its address): ``mov.u64 %rd1, smem``,
    ``cvta.shared.u64 %rd2, buf``.  ``generic``: written ``generic(name)`` (initializers only)."""

    name: str
    generic: bool = False


@dataclass(frozen=True)
class Addr:
    """A memory operand ``[base+offset]``: ``[%rd1+16]`` -> ``Addr(Reg("%rd1"), 16)``, ``[smem+8]``
    -> ``Addr(Symbol("smem"), 8)``, ``[64]`` -> ``Addr(None, 64)``.  In an initializer, ``name+8``
    (an address plus a byte offset) is also an ``Addr``."""

    base: Reg | Symbol | None
    offset: int


@dataclass(frozen=True)
class Label:
    """A branch or call target."""

    name: str


@dataclass(frozen=True)
class Sink:
    """``_``: a destination whose value is discarded, or an unused vector element."""


@dataclass(frozen=True)
class Vec:
    """A brace list ``{%r1, %r2, _, %r4}`` (vector loads/stores, mma fragments, ``mov.b64 {a, b}``)."""

    items: tuple


@dataclass(frozen=True)
class ParamList:
    """A parenthesised list of ``call``: ``call.uni (retval0), f, (param0, param1);`` has a
    ``ParamList`` of returns (a destination), the target, and a ``ParamList`` of arguments."""

    items: tuple


@dataclass(frozen=True)
class TexAddr:
    """A texture/surface operand ``[tex, {x, y}]`` or ``[tex, sampler, {x, y}]``: parsed so the
    machine can refuse ``tex``/``suld``/``sust`` by name."""

    items: tuple


Operand = Reg | Imm | Special | Symbol | Addr | Label | Vec | Sink | ParamList | TexAddr

# ------------------------------------------------------------------------------------ statements


@dataclass(frozen=True)
class SourceLoc:
    """The ``.loc file line column`` in force at an instruction; ``inlined_at``: the call site's
    location of the extended form ``.loc 1 25 3, function_name $L__info_string0, inlined_at 1 30 5``.
    ``asm``: the instruction is one of an inline-asm statement's (between nvcc's ``// begin inline asm``
    and ``// end inline asm``), whose ``.loc`` nvcc puts at the statement's last operand -- on its
    last line when it spans several; ``fragsim.ptx.inline_asm`` moves it to the statement's first."""

    file: int
    line: int
    column: int
    inlined_at: SourceLoc | None = None
    asm: bool = False


@dataclass(frozen=True)
class Instr:
    """One instruction.  ``opcode``/``mods``: the name split at dots (``ld.global.nc.v4.u32`` ->
    ``"ld"``, ``("global", "nc", "v4", "u32")``); ``operands`` in the order written, a ``p|q`` pair
    as two operands; ``ndst``: how many leading operands are destinations (``destination_count``);
    ``guard``: the ``@%p``/``@!%p`` predicate; ``line``: 1-based line in the PTX text; ``loc``: the
    ``.loc`` in force."""

    opcode: str
    mods: tuple[str, ...]
    operands: tuple
    guard: Reg | None
    line: int
    loc: SourceLoc | None
    ndst: int = 1
    column: int = 1

    @property
    def text(self) -> str:
        """The opcode as written, ``ld.global.nc.v4.u32``."""
        return ".".join((self.opcode, *self.mods))


@dataclass(frozen=True)
class LabelDef:
    """A label's position in a body."""

    name: str
    line: int


@dataclass(frozen=True)
class VarDecl:
    """A variable: ``.shared .align 16 .b8 smem[4096];`` (count 4096, dims (4096,)), ``.extern .shared
    .align 16 .b8 dyn[];`` (count None, dims (None,), extern), ``.global .u32 g = 5;`` (init
    ``(Imm(5, "int"),)``), ``.const .f32 c[4] = {1.0, ...};``, ``.local .align 8 .b8 depot[32];``,
    ``.param .b32 param0;`` in a body (a call's argument).  ``count``: the number of elements (the
    product of ``dims``; 1-element scalars have count None and dims ()); ``init``: the initializer's
    values, flattened in row-major order (nested braces of a multi-dimensional array are flattened).
    ``vector``: 2 or 4 for a ``.v2``/``.v4`` variable, else 1.  ``linkage``: "visible", "extern",
    "weak", "common" or ""."""

    space: str
    type: str
    name: str
    count: int | None
    align: int | None
    init: tuple | None
    line: int
    extern: bool = False
    dims: tuple = ()
    vector: int = 1
    linkage: str = ""


@dataclass(frozen=True)
class RegDecl:
    """``.reg .b32 %r<10>;`` (names %r0..%r9), ``.reg .pred p, q;``; ``vector`` for ``.reg .v2 .b32``."""

    type: str
    names: tuple[str, ...]
    line: int
    vector: int = 1


@dataclass(frozen=True)
class Param:
    """An entry or function parameter: ``.param .u64 .ptr .global .align 16 p0`` (type "u64",
    ptr_space "global", align None: that ``.align`` is the pointee's), ``.param .align 8 .b8 p1[16]``
    (a struct by value: type "b8", count 16).  ``ptr_space`` "generic" for ``.ptr`` without a space;
    ``space`` "reg" for an old-style ``.reg`` parameter of a ``.func``; type "texref"/"samplerref"/
    "surfref" for opaque handles."""

    name: str
    type: str
    count: int | None
    align: int | None
    ptr_space: str | None
    space: str = "param"


@dataclass(frozen=True)
class Function:
    """A ``.entry`` (kind "entry") or ``.func`` (kind "func").  ``body``: instructions and label
    positions in order; ``labels``: label name -> its index in ``body``; ``directives``: performance
    directives (``.maxntid``, ``.reqntid``, ``.minnctapersm``, ``.maxnreg``, ``.explicitcluster``,
    ``.reqnctapercluster``, ``.maxclusterrank``, ``.pragma``) name without the dot -> tuple of values.
    ``defined``: False for a declaration without body (``.extern .func vprintf(...)`` or a forward
    declaration).  ``tables``: labelled ``.branchtargets``/``.calltargets`` lists (name -> the
    targets' names, for ``brx.idx`` and indirect ``call``) and ``.callprototype`` (name -> ())."""

    name: str
    kind: str
    params: tuple[Param, ...]
    returns: tuple[Param, ...]
    body: tuple
    regs: tuple[RegDecl, ...]
    vars: tuple[VarDecl, ...]
    directives: dict
    line: int
    visible: bool
    weak: bool = False
    extern: bool = False
    noreturn: bool = False
    defined: bool = True
    labels: dict = field(default_factory=dict)
    tables: dict = field(default_factory=dict)

    @property
    def instructions(self) -> tuple[Instr, ...]:
        return tuple(s for s in self.body if isinstance(s, Instr))


@dataclass(frozen=True)
class Module:
    """A whole PTX file.  ``functions``: name -> its definition (or its declaration if never defined);
    ``files``: ``.file`` index -> path; ``aliases``: ``.alias`` name -> aliased function."""

    version: tuple[int, int]
    target: tuple[str, ...]
    address_size: int
    vars: tuple[VarDecl, ...]
    functions: dict
    files: dict
    aliases: dict = field(default_factory=dict)

    @property
    def entries(self) -> dict:
        """The runnable kernels: name -> ``Function`` of every defined ``.entry``."""
        return {n: f for n, f in self.functions.items() if f.kind == "entry" and f.defined}


# ------------------------------------------------------------------------- destination operands

#: How many leading operands each opcode writes, from the PTX ISA's operand descriptions.  Opcodes
#: not named here write one (``d`` or a ``{...}`` vector).  A ``p|q`` pair (setp, shfl.sync,
#: match.sync, elect.sync, tex ...) writes one more: the parser adds it.  Entries are either a count
#: or a function of the modifiers and the first operand.
DESTINATIONS: dict = {
    # memory or control destinations only
    "st": 0, "red": 0, "stmatrix": 0, "prefetch": 0, "prefetchu": 0, "applypriority": 0,
    "discard": 0, "sust": 0, "sured": 0, "stackrestore": 0, "cp": 0, "membar": 0, "fence": 0,
    "bra": 0, "brx": 0, "ret": 0, "exit": 0, "trap": 0, "brkpt": 0, "pmevent": 0, "nanosleep": 0,
    "griddepcontrol": 0, "setmaxnreg": 0, "tensormap": 0,
    # barriers write only in their reduction form: bar.red.popc.u32 d, a, p
    "bar": lambda mods, first: 1 if "red" in mods else 0,
    "barrier": lambda mods, first: 1 if "red" in mods else 0,
    # wgmma.fence / commit_group / wait_group write nothing; wgmma.mma_async writes its d vector
    "wgmma": lambda mods, first: 1 if mods and mods[0].startswith("mma") else 0,
    # wmma.store writes memory; wmma.load and wmma.mma write a fragment
    "wmma": lambda mods, first: 0 if mods and mods[0] == "store" else 1,
    # mbarrier.init/inval/expect_tx/complete_tx take the barrier first; arrive/test_wait write a
    # state or predicate first
    "mbarrier": lambda mods, first: 0 if isinstance(first, (Addr, TexAddr)) else 1,
    # multimem.st / multimem.red write memory; multimem.ld_reduce writes d
    "multimem": lambda mods, first: 0 if mods and mods[0] in ("st", "red") else 1,
    # clusterlaunchcontrol.try_cancel writes memory; query_cancel writes d
    "clusterlaunchcontrol": lambda mods, first: 0 if isinstance(first, Addr) else 1,
    # call: the returns list, if any
    "call": lambda mods, first: 1 if isinstance(first, ParamList) else 0,
}


def destination_count(opcode: str, mods: tuple[str, ...], operands: tuple) -> int:
    """The ``ndst`` of an instruction written without ``|`` (see ``DESTINATIONS``)."""
    if not operands:
        return 0
    rule = DESTINATIONS.get(opcode, 1)
    if callable(rule):
        return int(rule(mods, operands[0]))
    return int(rule)
