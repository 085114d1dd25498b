"""The ``.approx`` functions -- ``ex2``, ``lg2``, ``rsqrt``, ``sin``, ``cos``, ``tanh`` -- and the
``.approx``/``.full`` forms of ``div``, ``rcp`` and ``sqrt``.

On the GPU these are the MUFU unit's approximations (a few ulp, by table), not IEEE results, and
their bits are not modelled: a kernel using one is refused, naming the instruction, unless the user
opts into IEEE stand-ins (``run_kernel(..., approx="ieee")``, ``fragsim run --approx ieee``).  Then
``ex2``/``lg2``/``rsqrt``/``sin``/``cos``/``tanh`` compute the exact function in float64 and round it to
nearest even to the instruction's type (``.ftz``: subnormal inputs and results flushed to signed
zero), ``div``/``rcp``/``sqrt`` the correctly rounded ``.rn`` result; the run lists the lines that did
(``Run.approximate``): their values are plausible, not the hardware's bits.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import Semantic, Spec, UnsupportedInstruction

#: function -> its float64 implementation (the forms each has are the instruction table's rows)
FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "ex2": np.exp2, "lg2": np.log2, "rsqrt": lambda x: 1.0 / np.sqrt(x), "sin": np.sin, "cos": np.cos,
    "tanh": np.tanh,
}
#: what a user adds to run such a kernel anyway
OPT_IN = "run_kernel(..., approx='ieee') or fragsim run --approx ieee computes IEEE stand-ins, flagged as not bit-exact"


def refusal(spec: Spec) -> UnsupportedInstruction:
    return UnsupportedInstruction(f"{spec.text}: the hardware's MUFU approximation is not modelled bit for bit; "
                                  f"{OPT_IN}")


def _float_type(name: str):
    return {"f32": np.float32, "f64": np.float64, "f16": np.float16}.get(name)


def function(spec: Spec) -> Semantic:
    impl = FUNCTIONS[spec.opcode]
    if not spec.approx:
        raise refusal(spec)
    t, ftz = spec.types[-1], "ftz" in spec.flags
    if t not in ("f32", "f64", "f16"):
        raise UnsupportedInstruction(f"{spec.text}: IEEE stand-ins are modelled for .f32, .f64 and .f16 only")
    ft = _float_type(t)
    assert ft is not None
    bits = {np.float32: np.uint32, np.float64: np.uint64, np.float16: np.uint16}[ft]
    tiny = np.finfo(ft).tiny

    def fn(a: np.ndarray) -> tuple[np.ndarray]:
        x = a.view(ft).astype(np.float64)
        if ftz:
            x = np.where(np.abs(x) < tiny, np.copysign(0.0, x), x)
        with np.errstate(all="ignore"):
            y = impl(x).astype(ft)
        if ftz:
            y = np.where(np.abs(y) < tiny, np.copysign(ft(0), y), y)
        return (np.ascontiguousarray(y).view(bits),)
    return Semantic(fn, (t,), (t,))
