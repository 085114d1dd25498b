"""Restamp the mma kernel after editing what it inlines: ``python -m fragsim.arith.cachekey``
(``--check`` only reports).

``kernel.py`` inlines the intrinsics of ``simd.py``; its line ``SIMD_SOURCE_HASH = "..."``
holds their hash, so that numba's cache (keyed on kernel.py's content) changes with them.
See ``fragsim._cachekey``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .._cachekey import check, restamp

HERE = Path(__file__).resolve().parent
KERNEL = HERE / "kernel.py"
STAMP = "SIMD_SOURCE_HASH"
SOURCES = (HERE / "simd.py",)


def stale() -> str | None:
    """None when kernel.py's stamp is current, else why not."""
    return check(KERNEL, STAMP, *SOURCES)


def main(argv=None) -> int:
    """Restamp; with ``--check`` only report (exit 1 when stale)."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--check"]:
        why = stale()
        print(why or f"{KERNEL.name}: {STAMP} is current", file=sys.stderr if why else sys.stdout)
        return 1 if why else 0
    if args:
        print("usage: python -m fragsim.arith.cachekey [--check]", file=sys.stderr)
        return 2
    changed = restamp(KERNEL, STAMP, *SOURCES)
    print(f"{KERNEL.name}: {STAMP} {'updated' if changed else 'already current'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
