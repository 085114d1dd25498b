"""Cache stamps of the numba kernels: one registry, one stamp name, one restamp command.

numba's on-disk cache (``@njit(cache=True)``) keys a compiled function on the content of the
file that defines it (and numba's version), nothing else.  A kernel that compiles in code from
another module -- intrinsics, inlined functions, compiled functions it calls, global constants
numba freezes into the machine code -- would keep running the old code after that module
changes.  So such a kernel file carries a stamp, one line ``INLINED_SOURCE_HASH = "<sha256>"``
holding the hash of every source it compiles in: editing a source means restamping, which
changes the kernel file's content and so numba's key.

``KERNELS`` names every fragsim module that compiles with ``cache=True`` and the sources it
compiles in (the fragsim modules it imports at module level, transitively); a kernel with no
such source carries no stamp.  Edit a source, then::

    python -m fragsim.arith.stamps            # restamp every kernel, in dependency order
    python -m fragsim.arith.stamps --check    # report only (exit 1 when a stamp is stale)

tests/test_numba_cache_key.py fails while a stamp is stale or the registry misses a kernel.
"""

from __future__ import annotations

import hashlib
import re
import sys
from graphlib import TopologicalSorter
from pathlib import Path

__all__ = ["STAMP", "KERNELS", "ROOT", "COMMAND", "path", "source_hash", "read_stamp", "check", "restamp",
           "order", "stale", "restamp_all", "main"]

STAMP = "INLINED_SOURCE_HASH"
COMMAND = "python -m fragsim.arith.stamps"
ROOT = Path(__file__).resolve().parents[2]      # the folder holding the fragsim package

# kernel module -> the modules it compiles in, hashed in this order
KERNELS: dict[str, tuple[str, ...]] = {
    "fragsim.arith.kernel": ("fragsim.arith.simd", "fragsim.facts.hardware"),
    "fragsim.arith.kernel_exact": ("fragsim.arith.simd", "fragsim.facts.hardware"),
    "fragsim.arith.kernel_fp8": ("fragsim.arith.simd", "fragsim.arith.simd16", "fragsim.arith.kernel",
                                 "fragsim.facts.hardware"),
    "fragsim.arith.kernel_gemm": ("fragsim.arith.simd", "fragsim.arith.simd16", "fragsim.arith.kernel",
                                  "fragsim.facts.hardware"),
    "fragsim.arith.kernel16": ("fragsim.arith.simd", "fragsim.arith.simd16", "fragsim.arith.kernel",
                               "fragsim.facts.hardware"),
    "fragsim.arith.kernel_wgmma": ("fragsim.arith.simd", "fragsim.arith.simd16", "fragsim.arith.kernel",
                                   "fragsim.arith.kernel16", "fragsim.facts.hardware"),
    "fragsim.arith.kernel_chain": (),
    # generated with everything it compiles written into it (fragsim.banks.generate); its
    # staleness against the rules is tests/test_banks_generated.py's
    "fragsim.banks.kernel_generated": (),
    # tables and constants come in as arguments: the file alone is the key
    "fragsim.sfu.kernel": (),
}


def path(module: str, root: Path = ROOT) -> Path:
    """The source file of ``module`` (a dotted name) under ``root``."""
    return root.joinpath(*module.split(".")).with_suffix(".py")


def source_hash(*paths) -> str:
    """sha256 over the bytes of ``paths``, in order (each prefixed by its length)."""
    h = hashlib.sha256()
    for p in paths:
        data = Path(p).read_bytes()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


_LINE = re.compile(rf'^{STAMP} = "([0-9a-f]*)"$', re.M)


def read_stamp(target) -> str | None:
    """The hash held by the line ``INLINED_SOURCE_HASH = "..."`` of the file ``target``; None if it has none."""
    found = _LINE.findall(Path(target).read_text())
    if len(found) > 1:
        raise ValueError(f"{target}: {len(found)} lines '{STAMP} = \"<sha256>\"', expected one")
    return found[0] if found else None


def check(target, *sources) -> str | None:
    """None when the stamp of ``target`` matches ``sources`` (and a kernel with no sources has none), else why not."""
    name, have = Path(target).name, read_stamp(target)
    if not sources:
        return None if have is None else f"{name}: has a {STAMP} line but compiles in no other source"
    if have is None:
        return f"{name}: no line '{STAMP} = \"<sha256>\"' (it compiles in {', '.join(Path(s).name for s in sources)})"
    want = source_hash(*sources)
    if want == have:
        return None
    return (f"{name}: {STAMP} is {have[:12]}..., but the hash of {', '.join(Path(s).name for s in sources)} is "
            f"now {want[:12]}...: numba's cache would return code compiled from the old source; run `{COMMAND}`")


def restamp(target, *sources) -> bool:
    """Write the current hash of ``sources`` into ``target``'s stamp line; True if it changed."""
    if read_stamp(target) is None:
        raise ValueError(f"{target}: no line '{STAMP} = \"<sha256>\"' to restamp")
    text = Path(target).read_text()
    new = _LINE.sub(f'{STAMP} = "{source_hash(*sources)}"', text)
    if new == text:
        return False
    Path(target).write_text(new)
    return True


def order(kernels: dict[str, tuple[str, ...]] = KERNELS) -> list[str]:
    """The kernels, each after every kernel among its sources (restamping one changes its bytes)."""
    graph = {k: [s for s in srcs if s in kernels] for k, srcs in kernels.items()}
    return list(TopologicalSorter(graph).static_order())


def stale(kernels: dict[str, tuple[str, ...]] = KERNELS, root: Path = ROOT) -> list[str]:
    """Why each stale kernel is stale (empty when every stamp is current)."""
    whys = (check(path(k, root), *(path(s, root) for s in kernels[k])) for k in order(kernels))
    return [w for w in whys if w]


def restamp_all(kernels: dict[str, tuple[str, ...]] = KERNELS, root: Path = ROOT) -> list[str]:
    """Restamp every kernel with sources, in dependency order; the kernels whose stamp changed."""
    return [k for k in order(kernels)
            if kernels[k] and restamp(path(k, root), *(path(s, root) for s in kernels[k]))]


def main(argv: list[str] | None = None) -> int:
    """Restamp; with ``--check`` only report (exit 1 when a stamp is stale)."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--check"]:
        whys = stale()
        for w in whys:
            print(w, file=sys.stderr)
        if not whys:
            print(f"{len(KERNELS)} kernels: every {STAMP} is current")
        return 1 if whys else 0
    if args:
        print(f"usage: {COMMAND} [--check]", file=sys.stderr)
        return 2
    changed = restamp_all()
    print(f"restamped: {', '.join(changed)}" if changed else f"{len(KERNELS)} kernels: every {STAMP} already current")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
