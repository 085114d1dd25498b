"""One compiled instruction (``Op``) and the load-time error, below both the compiler
(``program``) and the semantics that build ops, so that neither imports the other at run time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import ast as A
from .state import State

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


