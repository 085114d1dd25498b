"""What the compiler (``program``) and the machine families' builders (``semantics``) share: one
compiled instruction (``Op``), the load-time error, the variables' ``Layout`` and ``Builder``, the
part of the compiler a builder uses.  Both import this module; neither imports the other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from . import ast as A
from .state import State
from .types import PtxType

Reader = Callable[[State, np.ndarray], np.ndarray]
Writer = Callable[[State, np.ndarray, np.ndarray], None]
Run = Callable[[State, np.ndarray], None]


#: External functions a kernel may declare and call that end the launch rather than return:
#: ``assert()`` compiles to a call of ``__assertfail(message, file, line, function, char_size)``.
TRAPPING_EXTERNS = frozenset({"__assertfail"})


class PtxLoadError(ValueError):
    """The kernel cannot be made ready: an unknown instruction or operand, a recursive call, an
    undeclared name; the message names the PTX line."""


@dataclass
class Op:
    """One compiled instruction.  ``run(state, idx)`` executes it for threads ``idx`` (the guard has
    already selected them); unless ``sets_pc``, the machine then advances their PC.  ``collective``:
    a ``.sync``/``.aligned`` warp instruction (its lanes must run it together).  A ``"plain"`` op
    touches neither PCs nor thread states; a ``"branch"`` only moves its threads to ``target`` (the
    machine may do that itself without calling ``run``)."""

    instr: A.Instr
    function: str
    run: Run
    guard: tuple[str, bool] | None = None
    sets_pc: bool = False
    collective: bool = False
    kind: str = "plain"            # "plain" | "barrier" | "exit" | "call" | "ret" | "branch"
    target: int = -1               # branch / call target PC
    extra: dict = field(default_factory=dict)

    @property
    def line(self) -> int:
        return self.instr.line


@dataclass
class Layout:
    """Byte offsets of variables in their state spaces, and the sizes the launch allocates."""

    shared: dict[str, int] = field(default_factory=dict)
    shared_static: int = 0
    dynamic_name: str | None = None
    dynamic_align: int = 16
    local: dict[str, int] = field(default_factory=dict)
    local_bytes: int = 0
    const: dict[str, int] = field(default_factory=dict)
    const_bytes: bytearray = field(default_factory=bytearray)
    globals: dict[str, "A.VarDecl"] = field(default_factory=dict)
    kernel_params: dict[str, int] = field(default_factory=dict)      # offset in the kernel's param bytes
    kernel_param_bytes: int = 0
    thread_params: dict[str, int] = field(default_factory=dict)      # .func params, call arguments
    thread_param_bytes: int = 0


class Builder(Protocol):
    """The compiler as a machine family's builder sees it (``fragsim.ptx.program.Compiler``): how to
    read and write an operand for threads ``idx``, an address and its state space, a variable's place,
    a label's PC, and the module being compiled."""

    module: A.Module
    entry: A.Function
    layout: Layout
    arch: Any                           # the ArchParams row the tensor-core instructions compute with
    starts: dict[str, int]              # function name -> PC of its first instruction
    registers: dict[str, PtxType]       # every register (qualified name -> type)

    def reg(self, name: str, line: int) -> str: ...

    def reader(self, operand: Any, t: PtxType, line: int) -> Reader: ...

    def writer(self, operand: Any, t: PtxType, line: int) -> Writer: ...

    def symbol(self, name: str, line: int) -> tuple[str, int]: ...

    def address_of(self, operand: A.Addr, space: str | None, line: int) -> tuple[Reader, str | None]: ...

    def label(self, name: str, line: int) -> int: ...
