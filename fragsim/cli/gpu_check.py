"""fragsim gpu-check: run every modelled instruction on the GPU and compare bit for bit.

The model follows the device: sm_80 on compute capability 8.x, sm_90 on 9.x.  Exit code
0 when every case agrees, 1 on any mismatch, 2 when nothing could be checked (no CuPy,
no GPU, no NVRTC, an unsupported GPU, bad arguments).

``--family`` picks what is checked, one of the families registered in fragsim.gpu_check.family
(default: the instruction table's mma forms and shared-memory ops together); this module only
reads the registry: the choices and their help, each family's default --cases, the options it
takes, what its --replay names, its run and its replay.
"""

from __future__ import annotations

import json
import os
import sys

from fragsim.facts.arch import ARCHS, DEFAULT_ARCH

# fragsim.gpu_check (every family's module) loads when this subcommand is parsed or run, not for
# every fragsim command
from . import progress
from .args import readable_dir, writable_dir, writable_file

NAME = "gpu-check"
HELP = ("cross-check fragsim against the GPU: run N random cases of every mma form and shared-memory "
        "instruction on the device and on fragsim, and compare bit for bit")
#: the command's option defaults, which a family that does not take the option may still see
DEFAULTS = {"arch": DEFAULT_ARCH, "seed": 0}


def add_arguments(p):
    from fragsim.gpu_check.family import families
    from fragsim.gpu_check.table.family import GROUPS

    fams = families()
    p.add_argument("--family", choices=tuple(fams),
                   help="what to check (default: mma and shared): "
                        + "; ".join(f"{k}: {f.summary}" for k, f in fams.items()))
    p.add_argument("--cases", type=int, default=None, metavar="N",
                   help="cases per form / address sets per shared-memory variant (default 100,000; "
                        "see --family for the others)")
    p.add_argument("--forms", nargs="+", metavar="OP",
                   help="what to check: mma forms (m16n8k16.row.col.f32.f16.f16.f32 ...), shared ops "
                        f"(ldmatrix.x4.trans, st.shared.v2.b32, cp.async.cg.16 ...) or groups ({', '.join(GROUPS)}); "
                        "default all the device has; with --family gemm: forms whose name contains one of these")
    p.add_argument("--record", metavar="DIR", help="write what the hardware said as compressed corpora into DIR "
                   "(movmatrix: DIR/movmatrix.trans.npz; wgmma: the run's summary.json, fuzz.npz, corpus_*.npz; "
                   "gemm: DIR/gemm.json)")
    p.add_argument("--record-cases", type=int, default=None, metavar="K",
                   help="cases per op kept in the corpus (default 20,000; mismatching cases always)")
    p.add_argument("--keep", type=int, metavar="N",
                   help="with --record: shrink each recorded corpus to its probe cases, the cases that mismatched "
                        "and N others drawn evenly across the input classes (seeded by --seed); the rule is "
                        "written into the corpus's metadata; movmatrix: the first N cases (default 2,000)")
    p.add_argument("--record-only", action="store_true",
                   help="run on the GPU and record, without comparing to fragsim")
    p.add_argument("--probes", action="store_true",
                   help="also run the named probe cases (open questions of the arithmetic reference) "
                        "and the overlapping-store probes, and print what the hardware gave")
    p.add_argument("--seed", type=int, default=0, help="seed of the input generators (default 0)")
    p.add_argument("--chunk", type=int, default=None, metavar="N", help="cases per launch (default 65536)")
    p.add_argument("--jobs", type=int, default=None, metavar="J",
                   help="worker processes for input generation and per-warp models (default: half the cores, <= 8)")
    p.add_argument("--details", type=int, default=None, metavar="K",
                   help="mismatches shown in detail per op (default 5)")
    p.add_argument("--dry-run", action="store_true",
                   help="no GPU: fragsim stands in for the device (checks the pipeline, not the model)")
    p.add_argument("--arch", choices=tuple(ARCHS), default=DEFAULT_ARCH,
                   help="model for --dry-run (on a GPU the device decides)")
    p.add_argument("--replay", metavar="PATH", nargs="?", const=True,
                   help="no GPU: take inputs and hardware outputs from recordings: without PATH the sample of the "
                        "H100/H200 recordings installed with fragsim; PATH a folder of recorded corpora (the "
                        "repository's tests/data/hw holds them all) or, for --family gemm, the recording's .json "
                        "file (tests/data/gemm/gemm_h100.json)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    progress.add_arguments(p, quiet=False)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--json-file", metavar="PATH", help="also write the JSON report to PATH")


def replay_command(fam) -> str:
    """The command that replays ``fam``'s recordings without a GPU."""
    from fragsim.gpu_check.family import default
    from fragsim.gpu_check.recordings import DEFAULTS as DEFAULT_REPLAYS

    family = f" --family {fam.name}" if fam is not default() else ""
    return f"fragsim gpu-check{family} --replay" + ("" if fam.name in DEFAULT_REPLAYS else " PATH")


def run(args) -> int:
    from fragsim.gpu_check.family import default, families, refuse_options
    from fragsim.gpu_check.recordings import default_replay
    from fragsim.gpu_check.runner import GpuUnavailable

    fam = families()[args.family] if args.family else default()
    if args.cases is None:
        args.cases = fam.default_cases
    if args.replay is True:              # --replay without a path: the recordings installed with fragsim
        args.replay = default_replay(fam.name)
    refuse_options(fam, args, DEFAULTS)
    fam.validate(args)
    # progress lines go to stderr (the families print them with --json too): off unless wanted
    args.quiet = not progress.wanted(args)
    # files before the run, which can take hours
    if args.replay:
        if not fam.replay_file:
            readable_dir(args.replay, "--replay", fam.replay_expects)
        elif not os.path.isfile(args.replay):
            problem = "is a folder" if os.path.isdir(args.replay) else "no such file"
            raise ValueError(f"--replay {args.replay}: {problem}; expected {fam.replay_expects}")
    if args.record:
        writable_dir(args.record, "--record")
    if args.json_file:
        writable_file(args.json_file, "--json-file")
    try:
        report = fam.replay(args) if args.replay else fam.run(args)
    except GpuUnavailable as e:
        hint = "" if args.replay else f"; without a GPU, replay what H100/H200 GPUs recorded: {replay_command(fam)}"
        sys.stderr.write(f"fragsim gpu-check: {e}{hint}\n")
        return 2
    if args.json_file:
        with open(args.json_file, "w") as f:
            json.dump(report.json, f, indent=1)
    print(json.dumps(report.json, indent=1) if args.json else report.text)
    return 1 if report.mismatches else 0
