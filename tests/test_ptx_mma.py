"""mma spellings outside fragsim's table: a valid PTX form is refused as "not modelled by
fragsim", anything else with the PTX ISA rule it breaks (never a rule PTX does not have).

The ptxas tests recheck the table of PTX forms against ptxas when it is on PATH."""

import itertools
import re
import shutil
import subprocess

import pytest

from fragsim import FORMS, lookup
from fragsim.instructions.ptx_mma import PTX_FORMS

VALID_NOT_MODELLED = [
    "m16n8k32.row.col.kind::f8f6f4.f32.e2m1.e3m2.f32",
    "m8n8k16.row.col.s32.s8.u8.s32",
    "m8n8k32.row.col.satfinite.s32.u4.u4.s32",
    "m8n8k128.row.col.s32.b1.b1.s32.xor.popc",
    "mma.sync.aligned.m8n8k16.row.col.satfinite.s32.s8.s8.s32",
]

NOT_PTX = [
    ("m16n8k16.row.col.f32.f16.f16.f16", "D and C types must match"),
    ("m8n8k4.row.col.f16.f16.f16.f32", r"D and C types of m8n8k4 \.f16 must be \.f16\.f16 or \.f32\.f16 or \.f32\.f32"),
    ("m16n8k16.row.col.f16.bf16.bf16.f16", "accumulate in f32 only"),
    ("m16n8k16.row.col.f32.tf32.tf32.f32", r"\.tf32 inputs come in shapes m16n8k4, m16n8k8, not m16n8k16"),
    ("m16n8k8.row.col.s32.s8.s8.s32", r"\.s8 inputs come in shapes m8n8k16, m16n8k16, m16n8k32"),
    ("m16n8k16.col.row.f16.f16.f16.f16", "only .row.col"),
    ("m16n8k16.row.col.f32.f16.bf16.f32", "same type"),
    ("m16n8k16.row.col.f32.e4m3.s8.f32", r"B's type must be one of \.e4m3, \.e5m2"),
    ("m16n8k128.row.col.s32.b1.b1.s32", r"PTX spells this form .*\.and\.popc or .*\.xor\.popc"),
    ("m16n8k32.row.col.f32.e2m1.e2m1.f32", r"PTX spells this form m16n8k32\.row\.col\.kind::f8f6f4\.f32"),
    ("m16n8k16.row.col.satfinite.f32.f16.f16.f32", "modifiers do not fit"),
    ("m16n8k16.row.col.f32.f61.f16.f32", r"\.f61 is not a PTX mma element type"),
    ("m17n8k16.row.col.f32.f16.f16.f32", "PTX mma has no shape m17n8k16"),
    ("m16n8k32", "expected SHAPE.row.col"),
]


@pytest.mark.parametrize("form", VALID_NOT_MODELLED)
def test_valid_ptx_forms_fragsim_lacks_are_refused_as_not_modelled(form):
    with pytest.raises(ValueError, match=r"is a valid PTX form but is not modelled by fragsim \(modelled: m16n8k16"):
        lookup(form)


@pytest.mark.parametrize("form, rule", NOT_PTX)
def test_spellings_ptx_rejects_are_refused_with_the_rule(form, rule):
    with pytest.raises(ValueError, match=rule) as e:
        lookup(form)
    assert "not modelled" not in str(e.value)


@pytest.mark.parametrize("form", ["mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32",
                                  "m16n8k64.row.col.kind::mxf4.block_scale.f32.e2m1.e2m1.f32.ue8m0"])
def test_sparse_and_block_scaled_mma_are_not_modelled(form):
    with pytest.raises(ValueError, match="is not modelled by fragsim"):
        lookup(form)


def test_every_modelled_form_is_a_ptx_form():
    assert set(FORMS) <= set(PTX_FORMS)


@pytest.mark.parametrize("form, pos, code", [
    ("m16n8k16.row.col.f32.f16.f16.f32\u200b", 32, "U+200B ZERO WIDTH SPACE"),
    (" m16n8k16.row.col.f32.f16.f16.f32\u00a0x", 33, "U+00A0 NO-BREAK SPACE"),
    ("m16n8k16 .row.col.f32.f16.f16.f32", 8, "U+0020 SPACE"),
    ("m16n8k16.row.col.f32.f16.f16.f\u04353\u0032", 30, "CYRILLIC SMALL LETTER IE"),
])
def test_a_character_outside_ptx_spellings_is_named_with_its_position(form, pos, code):
    with pytest.raises(ValueError, match=rf"at position {pos} cannot be part of a PTX spelling") as e:
        lookup(form)
    assert code in str(e.value)


def test_surrounding_whitespace_is_ignored():
    assert lookup("  m16n8k16.row.col.f32.f16.f16.f32\n") is FORMS["m16n8k16.row.col.f32.f16.f16.f32"]


# -- against ptxas -------------------------------------------------------------------------------

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")
BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f64": 64, "e4m3": 8, "e5m2": 8, "e3m2": 8, "e2m3": 8, "e2m1": 8,
        "s8": 8, "u8": 8, "s4": 4, "u4": 4, "b1": 1}


def _instruction(name, shape, d, a, c):
    """One mma line with operand vectors sized as the PTX ISA's fragments."""
    m, n, k = (int(x) for x in re.fullmatch(r"m(\d+)n(\d+)k(\d+)", shape).groups())
    per = 8 if (shape == "m8n8k4" and a == "f16") else 32   # m8n8k4 .f16: one product per quad pair
    regs = itertools.count()

    def vec(t, elems, packed_bits=32):
        cls, count = {"f64": ("%d", elems), "f32": ("%f", elems), "f16": ("%r", elems // 2)}.get(
            t, ("%r", max(1, elems * packed_bits // 32)))
        return "{" + ",".join(f"{cls}{next(regs)}" for _ in range(count)) + "}"

    ab = "f64" if a == "f64" else "x"
    return (f"mma.sync.aligned.{name} {vec(d, m * n // per)}, {vec(ab, m * k // per, BITS[a])}, "
            f"{vec(ab, k * n // per, BITS[a])}, {vec(c, m * n // per)};")


def _ptxas_rejects(lines, arch, tmp_path) -> set[int]:
    """Indices of the lines ptxas reports an error on."""
    head = (f".version 9.0\n.target {arch}\n.address_size 64\n.visible .entry k()\n{{\n"
            ".reg .b32 %r<64>;\n.reg .f32 %f<64>;\n.reg .f64 %d<64>;\n")
    first = head.count("\n") + 1
    src = tmp_path / "forms.ptx"
    src.write_text(head + "\n".join(lines) + "\nret;\n}\n")
    out = subprocess.run(["ptxas", f"-arch={arch}", str(src), "-o", str(tmp_path / "forms.cubin")],
                         capture_output=True, text=True)
    return {int(x) - first for x in re.findall(r"line (\d+); error", out.stderr)}


@needs_ptxas
@pytest.mark.parametrize("arch, kind", [("sm_90", False), ("sm_120a", True)])
def test_ptxas_assembles_every_ptx_form(arch, kind, tmp_path):
    forms = [f for f in PTX_FORMS.values() if ("kind::f8f6f4" in f.pre) == kind]
    bad = _ptxas_rejects([_instruction(f.name, f.shape, f.d, f.a, f.c) for f in forms], arch, tmp_path)
    assert not bad, [forms[i].name for i in sorted(bad)]


@needs_ptxas
def test_ptxas_rejects_the_spellings_refused_with_a_rule(tmp_path):
    """Every shape and type combination without modifiers, in .row.col and .col.col: where
    fragsim quotes a rule, ptxas refuses too (except m16n8k16 .tf32, which ptxas takes though
    the ISA has no such form)."""
    types, accs = [t for t in BITS if t not in ("e3m2", "e2m3", "e2m1")], ["f16", "f32", "f64", "s32"]
    shapes = sorted({f.shape for f in PTX_FORMS.values()})
    names = []
    for shape, (la, lb), d, a, b, c in itertools.product(shapes, [("row", "col"), ("col", "col")],
                                                         accs, types, types, accs):
        name = f"{shape}.{la}.{lb}.{d}.{a}.{b}.{c}"
        if name not in PTX_FORMS and name != "m16n8k16.row.col.f32.tf32.tf32.f32":
            names.append((name, shape, d, a, c))
    rejected = set()
    for i in range(0, len(names), 20000):
        chunk = names[i:i + 20000]
        rejected |= {i + j for j in _ptxas_rejects([_instruction(*x) for x in chunk], "sm_90", tmp_path)}
    assert [names[i][0] for i in range(len(names)) if i not in rejected] == []
