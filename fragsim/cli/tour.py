"""fragsim tour: the main job on a fresh install — writes the standard maps, pictures and
tables into a folder and prints where they are."""

from __future__ import annotations

import json
import os

from ..instructions import FORMS
from ..textmap import fragment_grid, fragment_json

NAME = "tour"
HELP = "write the standard fragment maps, pictures and tables into a folder (the default command)"

# The pictures people ask for first: the m16n8k16 operands and the tf32 m16n8k8 inputs.
PICTURES = [("m16n8k16.row.col.f16.f16.f16.f16", op) for op in "ABC"] + [
    ("m16n8k16.row.col.f32.f16.f16.f32", "C"),
    ("m16n8k8.row.col.f32.tf32.tf32.f32", "A"), ("m16n8k8.row.col.f32.tf32.tf32.f32", "B")]


def add_arguments(p):
    p.add_argument("--out", default="fragsim-tour", help="folder to write into (default: ./fragsim-tour)")
    p.add_argument("--no-pictures", action="store_true", help="text and JSON only (no matplotlib)")
    p.add_argument("--json", action="store_true", help="print the list of written files as JSON")


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def run(args) -> int:
    out = args.out
    written: dict[str, list[str]] = {"maps": [], "pictures": [], "tables": []}
    os.makedirs(os.path.join(out, "maps"), exist_ok=True)
    for name, form in FORMS.items():
        for op in "ABCD" if form.types["C"] != form.types["D"] else "ABC":
            stem = os.path.join(out, "maps", f"{name}.{op}")
            written["maps"].append(_write(stem + ".txt", fragment_grid(form, op) + "\n"))
            written["maps"].append(_write(stem + ".json", json.dumps(fragment_json(form, op)) + "\n"))
    for step in _STEPS:
        step(args, out, written)
    if args.json:
        print(json.dumps(written))
        return 0
    print(f"fragsim tour: wrote {sum(map(len, written.values()))} files into {os.path.abspath(out)}/")
    for kind, files in written.items():
        if files:
            print(f"  {kind:<9} {len(files):>3} files, e.g. {files[0]}")
    print("\nm16n8k16 A fragment (who holds what), as in the PTX ISA figure:\n")
    print("\n".join(fragment_grid("m16n8k16.row.col.f16.f16.f16.f16", "A").splitlines()[:6]) + "\n  ...")
    return 0


def _pictures(args, out, written):
    if args.no_pictures:
        return
    from fragsim.viz.fragment_map import draw_fragment_map
    os.makedirs(os.path.join(out, "pictures"), exist_ok=True)
    for name, op in PICTURES:
        path = os.path.join(out, "pictures", f"{name}.{op}.png")
        draw_fragment_map(name, op, path)
        written["pictures"].append(path)


# Access patterns kernel writers ask about (the seeds' GEMMs): C address math in `lane`, and an
# optional CUTLASS Swizzle<B,M,S> applied to the byte offsets.  16x16 fp16 A fragments via
# ldmatrix.x4, B via .x2.trans / .x4.trans, the C scatter, cp.async tile fills.
A_ROWS = "(lane % 16) * {pitch} + (lane / 16) * 16"
CONFLICT_PATTERNS = [
    ("A, 128-byte rows (BK=64 fp16), no swizzle", "ldmatrix.x4", A_ROWS.format(pitch=128), None),
    ("A, 128-byte rows, Swizzle<3,4,3>", "ldmatrix.x4", A_ROWS.format(pitch=128), (3, 4, 3)),
    ("A, 128-byte rows padded by 16 bytes", "ldmatrix.x4", A_ROWS.format(pitch=144), None),
    ("A, 64-byte rows (BK=32 bf16), no swizzle", "ldmatrix.x4", A_ROWS.format(pitch=64), None),
    ("A, 64-byte rows, atom ^ (row & 3)", "ldmatrix.x4",
     "(lane % 16) * 64 + (((lane / 16) ^ (lane % 16 & 3)) * 16)", None),
    ("A, 64-byte rows, Swizzle<2,4,3>", "ldmatrix.x4", A_ROWS.format(pitch=64), (2, 4, 3)),
    ("B, 16-byte rows (BN=8 fp16), .x2.trans", "ldmatrix.x2.trans", "(lane % 16) * 16", None),
    ("B, 256-byte rows (BN=128 fp16), .x4.trans", "ldmatrix.x4.trans", A_ROWS.format(pitch=256), None),
    ("B, 256-byte rows, Swizzle<3,4,4>", "ldmatrix.x4.trans", A_ROWS.format(pitch=256), (3, 4, 4)),
    ("C scatter, f32 pairs, 32-byte rows", "st.shared.v2.b32", "(lane / 4) * 32 + (lane % 4) * 8", None),
    ("cp.async 16 B per lane, 128-byte rows", "cp.async.ca.16", "lane * 16", None),
]


def _conflict_table(args, out, written):
    from fragsim.addrexpr import evaluate
    from fragsim.banks import bank_conflicts
    from fragsim.swizzle import Swizzle
    lines = ["| access | instruction | lane byte offset (C) | swizzle | wavefronts | ideal | conflicts |",
             "|---|---|---|---|---|---|---|"]
    for name, op, expr, sw in CONFLICT_PATTERNS:
        addrs = evaluate(expr)
        if sw is not None:
            addrs = Swizzle(*sw)(addrs)
        r = bank_conflicts(op, addrs)
        sw_txt = f"Swizzle<{sw[0]},{sw[1]},{sw[2]}>" if sw else "-"
        lines.append(f"| {name} | `{op}` | `{expr}` | {sw_txt} | {r.wavefronts} | {r.ideal} | {r.conflicts} |")
    os.makedirs(os.path.join(out, "tables"), exist_ok=True)
    path = os.path.join(out, "tables", "bank_conflicts.md")
    _write(path, "# Bank conflicts of common access patterns (sm_90 model, Nsight Compute terms)\n\n"
           + "\n".join(lines) + "\n")
    written["tables"].append(path)


# Each step adds one kind of artefact; later capabilities add theirs here.
_STEPS = [_pictures, _conflict_table]
