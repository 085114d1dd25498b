"""The global address space of a simulated launch: the kernel's buffers at device addresses.

A NumPy array passed to ``run_kernel`` becomes a ``Buffer``: its bytes are placed at a device
address (``cudaMalloc``'s alignment, 256 bytes, or the address the user pins with
``Buffer(array, address=...)``) and every global access of the kernel is checked against the
buffers: an address outside all of them is an error naming the thread and the PTX line, never a
read of junk.  Loads and stores are vectorized: one call moves ``width`` bytes for every thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: cudaMalloc returns addresses aligned to 256 bytes (CUDA C Programming Guide, "Device Memory
#: Accesses": "any address of a variable residing in global memory or returned by one of the memory
#: allocation routines from the driver or runtime API is always aligned to at least 256 bytes").
MALLOC_ALIGN = 256
#: Where the default placement starts: a typical device pointer of a CUDA context (0x7f..., above the
#: 4 GiB shared/local windows), so that absolute-address effects (cp.async source-line classes) see
#: realistic high bits.
DEFAULT_BASE = 0x7F00_0000_0000
#: Gap left between two buffers placed by default (an overrun lands in no buffer and is reported).
GUARD = 1 << 16


@dataclass
class Buffer:
    """A global buffer: ``array`` (any NumPy array, C-contiguous) at device ``address`` (None: placed
    by ``run_kernel``).  After the run the array holds what the kernel wrote, as after a CuPy launch
    and copy back."""

    array: np.ndarray
    address: int | None = None
    name: str = ""
    data: np.ndarray = field(init=False, repr=False)      # the array's bytes (a view: writes go through)

    def __post_init__(self):
        if not isinstance(self.array, np.ndarray):
            raise TypeError(f"Buffer: array must be a NumPy array, got {type(self.array).__name__}")
        if not self.array.flags.c_contiguous:
            raise ValueError("Buffer: the array must be C-contiguous (np.ascontiguousarray), as a device copy is")
        if not self.array.flags.writeable:
            raise ValueError("Buffer: the array is read-only; the kernel may write it")
        if self.address is not None:
            if isinstance(self.address, bool) or not isinstance(self.address, (int, np.integer)):
                raise TypeError(f"Buffer: address must be an integer, got {type(self.address).__name__}")
            if not 0 < int(self.address) < 1 << 64:
                raise ValueError(f"Buffer: address {self.address:#x} is not a 64-bit device address")
            self.address = int(self.address)
        self.data = self.array.reshape(-1).view(np.uint8)

    @property
    def nbytes(self) -> int:
        return int(self.data.size)


class GlobalMemory:
    """The buffers of one launch, sorted by address; ``load``/``store`` over many threads at once."""

    def __init__(self, buffers: list[Buffer]):
        nxt = DEFAULT_BASE
        for b in buffers:
            if b.address is None:
                b.address = nxt
            nxt = max(nxt, -(-(b.address + b.nbytes + GUARD) // MALLOC_ALIGN) * MALLOC_ALIGN)
        self.buffers = sorted(buffers, key=lambda b: b.address or 0)
        for a, b in zip(self.buffers, self.buffers[1:]):
            assert a.address is not None and b.address is not None
            if a.address + a.nbytes > b.address:
                raise ValueError(f"buffers {a.name or hex(a.address)} and {b.name or hex(b.address)} overlap "
                                 f"({a.address:#x} + {a.nbytes} bytes > {b.address:#x})")
        self.starts = np.array([b.address for b in self.buffers], np.uint64)
        self.ends = np.array([int(b.address or 0) + b.nbytes for b in self.buffers], np.uint64)

    def locate(self, addrs: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
        """Per address: the buffer index and the byte offset in it, or -1 / the first bad address when
        ``width`` bytes from it are not inside one buffer."""
        a = addrs.astype(np.uint64, copy=False)
        if len(a) and len(self.buffers):
            first = int(np.searchsorted(self.starts, a.min(), side="right")) - 1
            if first >= 0 and int(a.max()) + width <= int(self.ends[first]):     # all inside one buffer
                return np.full(len(a), first, np.int64), (a - self.starts[first]).astype(np.int64)
        k = np.searchsorted(self.starts, a, side="right").astype(np.int64) - 1
        ok = k >= 0
        kk = np.where(ok, k, 0)
        if len(self.buffers):
            ok &= a + np.uint64(width) <= self.ends[kk]
        else:
            ok[:] = False
        off = np.where(ok, a - self.starts[kk] if len(self.buffers) else a, 0).astype(np.int64)
        return np.where(ok, kk, -1), off

    def load(self, addrs: np.ndarray, width: int, located=None) -> np.ndarray:
        """``width`` bytes at each address -> uint8 (n, width); addresses already checked by ``locate``
        (``located``: its result, if the caller has it)."""
        k, off = self.locate(addrs, width) if located is None else located
        out = np.empty((len(addrs), width), np.uint8)
        for i, sel in _by_buffer(k):
            out[sel] = take_bytes(self.buffers[i].data, off[sel], width)
        return out

    def store(self, addrs: np.ndarray, data: np.ndarray, located=None) -> None:
        """Write ``data`` (uint8 (n, width)) at each address, in thread order (the last writer of a
        byte wins; a race the next issue's checker reports)."""
        width = data.shape[1]
        k, off = self.locate(addrs, width) if located is None else located
        for i, sel in _by_buffer(k):
            put_bytes(self.buffers[i].data, off[sel], data[sel])


def _by_buffer(k: np.ndarray):
    """(buffer, selection) for each buffer the accesses ``k`` touch; one buffer: every access at once."""
    if len(k) and k[0] == k.min() == k.max():
        return [(int(k[0]), slice(None))]
    return [(int(i), k == i) for i in np.unique(k)]


def _unit(data: np.ndarray, off: np.ndarray, width: int) -> int:
    """The widest piece (``width`` itself, else 8, 4, 2 or 1 bytes) that divides ``width``, the size of
    ``data`` and every offset: each access is then whole pieces."""
    if not len(off):
        return 1
    low = int(np.bitwise_or.reduce(off))
    for unit in (width, 8, 4, 2):
        if width % unit == 0 and unit & (unit - 1) == 0 and data.size % unit == 0 and not low & (unit - 1):
            return unit
    return 1


def take_bytes(data: np.ndarray, off: np.ndarray, width: int) -> np.ndarray:
    """``data[off + j]`` for ``j < width`` (uint8 (n, width)), moved as whole pieces where they line up."""
    unit = _unit(data, off, width)
    pieces = data.view(f"V{unit}")
    if unit == width:                     # one piece an access: np.take copies them fastest
        return np.take(pieces, off // unit).view(np.uint8).reshape(len(off), width)
    return pieces[(off // unit)[:, None] + np.arange(width // unit)].view(np.uint8).reshape(len(off), width)


def put_bytes(data: np.ndarray, off: np.ndarray, values: np.ndarray) -> None:
    """``data[off + j] = values[:, j]``, rows in order (a later row wins a byte), as whole pieces where
    they line up."""
    width = values.shape[1]
    unit = _unit(data, off, width)
    pieces = data.view(f"V{unit}")
    v = np.ascontiguousarray(values).view(f"V{unit}")
    if unit == width:
        pieces[off // unit] = v.reshape(-1)
    else:
        pieces[(off // unit)[:, None] + np.arange(width // unit)] = v
