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
    written = {"maps": [], "pictures": [], "tables": []}
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


# Each step adds one kind of artefact; later capabilities add theirs here.
_STEPS = [_pictures]
