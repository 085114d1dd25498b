"""Cache keys for numba kernels that inline code from other files.

numba's on-disk cache (``@njit(cache=True)``) keys a compiled function on the content of the
file that defines it (and numba's version), nothing else.  A kernel that inlines functions
or intrinsics from another module would keep running the old machine code after that module
changes.  So such a kernel file carries a stamp, a line ``NAME = "<sha256>"`` holding the
hash of every source it inlines: editing a source means restamping, which changes the
kernel file's content and so numba's key.  A test per kernel checks that its stamp is
current (``check``); ``python -m fragsim.arith.cachekey`` restamps the mma kernel.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

__all__ = ["source_hash", "read_stamp", "check", "restamp"]


def source_hash(*paths) -> str:
    """sha256 over the bytes of ``paths``, in order (each prefixed by its length)."""
    h = hashlib.sha256()
    for p in paths:
        data = Path(p).read_bytes()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _line(name: str) -> re.Pattern:
    return re.compile(rf'^{re.escape(name)} = "([0-9a-f]*)"$', re.M)


def read_stamp(target, name: str) -> str:
    """The hash held by the line ``name = "..."`` of the file ``target``."""
    found = _line(name).findall(Path(target).read_text())
    if len(found) != 1:
        raise ValueError(f"{target}: expected exactly one line '{name} = \"<sha256>\"', found {len(found)}")
    return found[0]


def check(target, name: str, *sources) -> str | None:
    """None when the stamp ``name`` in ``target`` matches ``sources``, else why not."""
    want, have = source_hash(*sources), read_stamp(target, name)
    if want == have:
        return None
    return (f"{Path(target).name}: {name} is {have[:12]}..., but {', '.join(Path(s).name for s in sources)} "
            f"now hash to {want[:12]}...: numba's cache would return code compiled from the old source")


def restamp(target, name: str, *sources) -> bool:
    """Write the current hash of ``sources`` into ``target``; True if it changed."""
    text = Path(target).read_text()
    read_stamp(target, name)  # exactly one such line
    new = _line(name).sub(f'{name} = "{source_hash(*sources)}"', text)
    if new == text:
        return False
    Path(target).write_text(new)
    return True
