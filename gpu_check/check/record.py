"""Record what a GPU does with the checker's seed cases: ``python -m fragsim.gpu_check.check.record OUT``.

Every case of ``cases.CASES`` (the seeds' address math, right and with each mistake injected)
runs through ``fragsim.check_*(..., gpu=...)`` on this machine's GPU; what the hardware did goes
into ``OUT/<device>_<arch>.npz`` (``fragsim.check.gpu``'s recording format, for
tests/data/check/) and a line per case into ``OUT/<device>_<arch>.txt``.  Exit code 0 when the
hardware agrees with fragsim on every case and every verdict is the expected one, 1 otherwise, 2
without a usable GPU.
"""

from __future__ import annotations

import datetime
import os
import re
import sys

import fragsim.check as C
from fragsim.check.gpu import Recording

from .cases import CASES
from .program import GpuMachine
from ..runner import GpuUnavailable


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        sys.stderr.write("usage: python -m fragsim.gpu_check.check.record OUT_DIR\n")
        return 2
    out = args[0]
    os.makedirs(out, exist_ok=True)
    try:
        machine = GpuMachine()
    except GpuUnavailable as e:
        sys.stderr.write(f"check_record: {e}\n")
        return 2
    rec = Recording(machine)
    info = machine.info
    stem = re.sub(r"[^0-9a-z]+", "_", f"{info['device']} {info['arch']}".lower()).strip("_")
    lines, good = [], True
    for case in CASES:
        rec.name = case.name
        r = getattr(C, "check_" + case.check)(**case.args, gpu=rec)
        g = r.gpu
        assert g is not None
        right = g.agrees and g.ok == r.ok == case.ok and (case.mistake is None or case.mistake in r.kinds)
        good &= right
        lines.append(f"{'ok ' if right else 'BAD'} {case.name}: fragsim {'OK' if r.ok else 'WRONG'}, GPU "
                     f"{'OK' if g.ok else 'WRONG'}, agree {g.agrees} ({g.compared:,} bytes)"
                     + ("" if g.agrees else " -- " + "; ".join(g.differences)))
        print(lines[-1], flush=True)
    meta = {**{k: info.get(k) for k in ("device", "cc", "arch", "driver", "cuda_runtime", "nvrtc", "cupy")},
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "cases": len(CASES)}
    rec.save(os.path.join(out, stem + ".npz"), meta)
    with open(os.path.join(out, stem + ".txt"), "w") as f:
        f.write("\n".join([f"{k}: {v}" for k, v in meta.items()] + lines) + "\n")
    print(f"{len(CASES)} cases on {info['device']}: {'all agree' if good else 'SOME DISAGREE'}; wrote {out}/{stem}.npz")
    return 0 if good else 1


if __name__ == "__main__":
    raise SystemExit(main())
