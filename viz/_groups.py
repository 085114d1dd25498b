"""Forms that share a picture: the instruction table has dozens of forms (every sign pair of the
integer mma, .satfinite or not ...) whose fragment maps are identical; the tour and the explorer
draw each distinct picture once and say which forms it serves."""

from __future__ import annotations

from . import _blocks


def operand_key(form, op):
    """Forms with equal keys have the same map of ``op`` (cells, names, registers, matrices)."""
    return op, form.matrix_shape(op), form.layout(op), form.fmt(op).storage_bits


def view_key(form):
    """Forms with equal keys have the same combined view (A, B, C/D)."""
    return form.shape, tuple(operand_key(form, op) for op in "ABCD")


def flow_key(form, op):
    """Forms whose operand one ldmatrix moves the same way, with the same element names."""
    st = _blocks.storages(form, op)[0]
    return op, st.op_name(), st.major, st.elem_bits, form.layout(op)


def group(forms, key) -> dict:
    """key -> the forms that have it, in table order."""
    out: dict = {}
    for f in forms:
        out.setdefault(key(f), []).append(f)
    return out


def types(forms, op) -> str:
    """The element types of ``op`` across ``forms``: "f16-bf16", "s8-u8", "tf32"."""
    return "-".join(dict.fromkeys(f.types[op] for f in forms))


def others(forms) -> str:
    """ "" for one form; else a line naming how many more forms the picture serves."""
    rest = forms[1:]
    if not rest:
        return ""
    shown = ", ".join(f.name for f in rest[:2])
    return f"the same for {len(rest)} more form{'s' if len(rest) > 1 else ''}: {shown}" + \
        (f" and {len(rest) - 2} more" if len(rest) > 2 else "")
