"""fragsim tour [DIR]: the main job on a fresh install -- writes the standard maps, pictures, tables and
the explorer page into a folder and prints where they are."""

from __future__ import annotations

import json
import os

from fragsim.instructions import FORMS
from fragsim.instructions.text import fragment_grid, fragment_json
from . import progress
from .args import writable_dir

NAME = "tour"
HELP = ("write the standard fragment maps, pictures, bank tables and an explorer page (index.html) into a "
        "folder (start here)")
DEFAULT_DIR = "fragsim-tour"


def add_arguments(p):
    p.add_argument("dir", nargs="?", metavar="DIR", help=f"folder to write into (default: ./{DEFAULT_DIR})")
    p.add_argument("--out", metavar="DIR", help="the same as DIR")
    p.add_argument("--no-pictures", action="store_true", help="text and JSON only (no matplotlib)")
    p.add_argument("--jobs", type=int, metavar="N", help="processes that draw the pictures (default: the "
                   "CPU count, at most 8)")
    p.add_argument("--json", action="store_true", help="print the list of written files as JSON")
    progress.add_arguments(p)


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def _folder(args) -> str:
    if args.dir is not None and args.out is not None and args.dir != args.out:
        raise ValueError(f"give the folder once: DIR {args.dir!r} or --out {args.out!r}")
    out = args.out if args.out is not None else args.dir if args.dir is not None else DEFAULT_DIR
    return writable_dir(out, "--out" if args.out is not None else "DIR")


def run(args) -> int:
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
    out = _folder(args)               # before anything is drawn: a bad folder is one line, exit 2
    written: dict[str, list[str]] = {"maps": [], "pictures": [], "tables": [], "explorer": []}
    stages = progress.Stages("fragsim tour", progress.wanted(args))
    stages.stage(f"writing the fragment maps of {len(FORMS)} mma forms (text and JSON)")
    os.makedirs(os.path.join(out, "maps"), exist_ok=True)
    for name, form in FORMS.items():
        for op in "ABCD" if form.layout("C") != form.layout("D") else "ABC":
            stem = os.path.join(out, "maps", f"{name}.{op}")
            written["maps"].append(_write(stem + ".txt", fragment_grid(form, op) + "\n"))
            written["maps"].append(_write(stem + ".json", json.dumps(fragment_json(form, op)) + "\n"))
    stages.stage(f"counting the bank conflicts of {len(CONFLICT_PATTERNS)} access patterns")
    _conflict_table(out, written)
    if not args.no_pictures:
        _pictures(out, written, args.jobs, stages)
    stages.end()
    if args.json:
        print(json.dumps(written))
        return 0
    print(f"fragsim tour: wrote {sum(map(len, written.values()))} files into {os.path.abspath(out)}/")
    for kind, files in written.items():
        if files and kind != "explorer":
            print(f"  {kind:<9} {len(files):>3} files, e.g. {files[0]}")
    print("\nm16n8k16 A fragment (who holds what), as in the PTX ISA figure:\n")
    print("\n".join(fragment_grid("m16n8k16.row.col.f16.f16.f16.f16", "A").splitlines()[:6]) + "\n  ...")
    if written["explorer"]:
        print(f"\nexplorer (open in a browser; hover or click a lane): {os.path.abspath(written['explorer'][0])}")
    return 0


# ---------------------------------------------------------------------------------------------------
# pictures: one task per file, drawn by a pool of processes (matplotlib's text layout is the cost)

def _picture_tasks(out: str) -> tuple[list, dict]:
    """(kind, module, function, args, kwargs, path) of every standard picture, and for each form
    and operand the picture that shows it (forms with the same map share one picture)."""
    from fragsim.viz import _blocks, _groups

    def pic(*parts):
        return os.path.join(out, "pictures", *parts)
    tasks: list[tuple] = []
    index: dict = {name: {} for name in FORMS}
    for op in "ABCD":
        for forms in _groups.group(FORMS.values(), lambda f, op=op: _groups.operand_key(f, op)).values():
            R, C = forms[0].matrix_shape(op)
            path = pic("maps", f"{forms[0].shape_name}.{op}.{_groups.types(forms, op)}.png")
            tasks.append(("pictures", "fragment_map", "draw_fragment_map", (forms[0].name, op),
                          {"also": [f.name for f in forms[1:]]}, path))
            for f in forms:
                index[f.name][op] = path
    flows: dict = {}
    for form in FORMS.values():
        for op in "AB":
            if _blocks.storages(form, op):
                flows.setdefault(_groups.flow_key(form, op), []).append(form)
    for (op, opname, *_), forms in flows.items():
        path = pic("flows", f"{forms[0].shape_name}.{op}.{_groups.types(forms, op)}.{opname}.png")
        tasks.append(("pictures", "flow", "draw_ldmatrix_flow", (), {"form": forms[0].name, "operand": op}, path))
        for f in forms:
            index[f.name][f"{op} flow"] = path
    from fragsim.search import addrexpr
    from fragsim.layout.swizzle import Swizzle
    reads = addrexpr.evaluate(A_ROWS.format(pitch=128))
    sw = Swizzle(3, 4, 3)
    tile = {"rows": 16, "cols": 64, "dtype": "f16"}
    for label, swz in (("", None), (".Swizzle343", sw)):
        addrs = reads if swz is None else swz(reads)
        tasks.append(("pictures", "banks", "draw_bank_map", (), dict(tile, swizzle=swz, access=("ldmatrix.x4", addrs)),
                      pic("banks", f"f16-128B-rows{label}.bank-map.png")))
        tasks.append(("pictures", "banks", "draw_bank_report", ("ldmatrix.x4", addrs), {},
                      pic("banks", f"f16-128B-rows{label}.ldmatrix.x4.png")))
    tasks.append(("pictures", "swizzle", "draw_swizzle", (sw,), {}, pic("swizzle", "Swizzle343.png")))
    return tasks, index


def _draw(task):
    """A picture task in a worker: a file drawn (its path)."""
    import importlib
    _, module, function, fargs, kwargs, path = task
    getattr(importlib.import_module(f"fragsim.viz.{module}"), function)(*fargs, path=path, **kwargs)
    return path


def _pictures(out, written, jobs, stages=None):
    from fragsim.viz import explorer
    stages = stages or progress.Stages("fragsim tour", False)
    tasks, index = _picture_tasks(out)
    for t in tasks:
        os.makedirs(os.path.dirname(t[-1]), exist_ok=True)
    jobs = min(jobs or min(8, os.cpu_count() or 1), len(tasks))
    stages.stage(f"drawing {len(tasks)} pictures with matplotlib"
                 + (f" ({jobs} processes)" if jobs > 1 else ""))
    results = []
    if jobs == 1:
        for t in tasks:
            results.append(_draw(t))
            stages.count(len(results), len(tasks))
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            for path in pool.map(_draw, tasks):
                results.append(path)
                stages.count(len(results), len(tasks))
    written["pictures"].extend(results)
    stages.stage("writing the explorer page (index.html)")
    written["explorer"].append(explorer.write_explorer(out))     # drawn in the browser from its tables
    written["tables"].append(_picture_index(out, index))


def _picture_index(out, index) -> str:
    """tables/pictures.md: for every form, the picture of each operand and of its ldmatrix flows."""
    cols = ["A", "B", "C", "D", "A flow", "B flow"]
    lines = ["# Which picture shows which form", "",
             "Forms with the same map of an operand share its picture (pictures/maps/SHAPE.OPERAND.TYPES.png).",
             "", "| form | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, pics in index.items():
        cells = [f"[{os.path.basename(pics[c])}]({os.path.relpath(pics[c], os.path.join(out, 'tables'))})"
                 if c in pics else "-" for c in cols]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return _write(os.path.join(out, "tables", "pictures.md"), "\n".join(lines) + "\n")


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


def _conflict_table(out, written):
    from fragsim.search.addrexpr import evaluate
    from fragsim.banks import bank_conflicts
    from fragsim.layout.swizzle import Swizzle
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
