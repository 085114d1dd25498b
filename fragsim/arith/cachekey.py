"""Restamp the mma kernels after editing what they inline: ``python -m fragsim.arith.cachekey``
(``--check`` only reports).

``kernel.py`` and ``kernel_exact.py`` inline the intrinsics of ``simd.py``; each holds a line
``SIMD_SOURCE_HASH = "..."`` with their hash, so that numba's cache (keyed on the kernel file's
content) changes with them.  See ``fragsim.arith.stamps``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .stamps import check, restamp

HERE = Path(__file__).resolve().parent
KERNELS = (HERE / "kernel.py", HERE / "kernel_exact.py")
STAMP = "SIMD_SOURCE_HASH"
SOURCES = (HERE / "simd.py",)


def stale() -> str | None:
    """None when every kernel's stamp is current, else why not."""
    whys = [w for w in (check(k, STAMP, *SOURCES) for k in KERNELS) if w]
    return "; ".join(whys) or None


def main(argv=None) -> int:
    """Restamp; with ``--check`` only report (exit 1 when stale)."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--check"]:
        why = stale()
        print(why or f"{', '.join(k.name for k in KERNELS)}: {STAMP} is current",
              file=sys.stderr if why else sys.stdout)
        return 1 if why else 0
    if args:
        print("usage: python -m fragsim.arith.cachekey [--check]", file=sys.stderr)
        return 2
    for k in KERNELS:
        changed = restamp(k, STAMP, *SOURCES)
        print(f"{k.name}: {STAMP} {'updated' if changed else 'already current'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
