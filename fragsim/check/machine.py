"""Running the instructions on a tagged tile, and reading back what they did.

Every element of the tile holds a tag, ``its row-major index + 1`` (0 is "no element": padding
and every byte outside the tile); a tag wider than the element is written in digits of the
element's width, one run (*pass*) per digit.  The instructions run in order on that shared memory,
through fragsim's simulator (``Simulator``) or on a GPU (``fragsim.check.gpu``); both take the
same program: the instructions, the initial shared memory of each pass and each instruction's
payload (the registers a store writes, the bytes a copy brings), and return what each load
delivered and the shared memory after the last instruction.

An instruction that cannot run -- an address that is negative, misaligned or past the shared
memory a CTA can have -- would fault on the GPU; it is left out (``problem`` says why) and what
it would have moved counts as unknown.
"""

from __future__ import annotations

import numpy as np

from fragsim import validate
from fragsim.facts.hardware import BANK_BYTES
from fragsim.facts.smem import beyond_smem, smem_per_cta
from .program import Instr

#: Shared memory is sized to whole 128-byte lines past the highest byte the program touches.
SMEM_ROUND = 128


def problem(ins: Instr, tile=None) -> str | None:
    """Why ``ins`` cannot run (the first bad lane, in the simulator's words), or None; ``tile``: the
    tile it accesses, whose pitch may be what misaligns it."""
    op = ins.op
    use = ins.address_lanes
    a = ins.addrs
    # an address past the shared memory a CTA can have is a fault, not a read of another tile
    align = op.bytes_per_addr
    misaligned = f"is not {align}-byte aligned" + (pitch_hint(tile, align, op.what)
                                                   or validate.element_units_hint(a[use], align))
    for bad, why in ((use & (a < 0), "is negative"), (use & (a > smem_per_cta() - op.bytes_per_addr), ""),
                     (use & (a % op.bytes_per_addr != 0), misaligned)):
        if bad.any():
            lane = int(np.flatnonzero(bad)[0])
            if not why:
                return f"lane {lane}: {beyond_smem(int(a[lane]), op.bytes_per_addr, op.what)}"
            return f"lane {lane}: {op.what} {validate.hex_int(a[lane])} {why}"
    return None


def pitch_hint(tile, align: int, what: str) -> str:
    """When the tile's lines start ``pitch`` bytes apart and ``pitch`` is not a multiple of ``align``
    (136-byte rows read by 16-byte ldmatrix rows), that pitch is why no address of line 1 can be
    aligned: say so, with the pitch that would be ("" otherwise)."""
    if tile is None or tile.lines < 2 or tile.pitch % align == 0:
        return ""
    line = "row" if tile.order == "row" else "column"
    padded = -(-tile.pitch // align) * align
    return (f" (the tile's {line} pitch {tile.pitch} bytes is not a multiple of {align}: {line} 1 starts "
            f"{tile.pitch} bytes after {line} 0, where a {align}-byte {what} cannot be aligned; pad the "
            f"{line}s to a pitch of {padded} bytes)")


def smem_size(tile, instrs) -> int:
    """Bytes of shared memory that hold the tile and every address of the instructions that run."""
    top = tile.size
    for ins in instrs:
        if problem(ins) is None and ins.address_lanes.any():
            top = max(top, int(ins.addrs[ins.address_lanes].max()) + ins.op.bytes_per_addr)
    return -(-top // SMEM_ROUND) * SMEM_ROUND


def passes(tile) -> int:
    """Runs needed to tag every element (tags 1..elements in digits of the element's bits)."""
    bits = 8 * tile.elem_bytes
    return max(1, -(-tile.elements.bit_length() // bits))


def digits(index: np.ndarray, p: int, elem_bytes: int) -> np.ndarray:
    """Digit ``p`` of the tags ``index + 1`` (index -1: no element, tag 0), as uint64."""
    bits = 8 * elem_bytes
    tag = np.where(index >= 0, index + 1, 0).astype(np.uint64)
    if bits >= 64:
        return tag if p == 0 else np.zeros_like(tag)
    return (tag >> np.uint64(bits * p)) & np.uint64((1 << bits) - 1)


def tagged(tile, size: int, npass: int) -> np.ndarray:
    """(passes, size) uint8: zero shared memory with the tile's tags written where the tile says."""
    out = np.zeros((npass, size), np.uint8)
    index = np.arange(tile.elements, dtype=np.int64).reshape(tile.rows, tile.cols)
    for p in range(npass):
        tile.write(out[p], digits(index, p, tile.elem_bytes).astype(tile.bits_dtype))
    return out


def element_bytes(values: np.ndarray, elem_bytes: int) -> np.ndarray:
    """uint64 element values (..., n) -> their little-endian bytes (..., n * elem_bytes)."""
    b = np.ascontiguousarray(values, dtype="<u8").view(np.uint8).reshape(values.shape + (8,))[..., :elem_bytes]
    return b.reshape(values.shape[:-1] + (-1,))


def slot_values(data: np.ndarray, elem_bytes: int) -> np.ndarray:
    """Bytes (..., n * elem_bytes) -> uint64 element values (..., n), little-endian."""
    b = data.reshape(data.shape[:-1] + (-1, elem_bytes)).astype(np.uint64)
    return (b << (np.uint64(8) * np.arange(elem_bytes, dtype=np.uint64))).sum(-1, dtype=np.uint64)


def untag(per_pass: np.ndarray, elem_bytes: int) -> np.ndarray:
    """(passes, ...) digits -> int64 (...) element index (tag - 1), -1 where the tag is 0."""
    bits = 8 * elem_bytes
    tag = np.zeros(per_pass.shape[1:], np.uint64)
    for p in range(per_pass.shape[0]):
        tag |= per_pass[p].astype(np.uint64) << np.uint64(bits * p)
    return tag.astype(np.int64) - 1


def load_bytes(ins: Instr, words: np.ndarray) -> np.ndarray:
    """A load's registers (..., 32, nregs) uint32 -> the bytes each lane received (..., 32, nbytes)."""
    b = np.ascontiguousarray(words, dtype="<u4").view(np.uint8)
    return b.reshape(words.shape[:-1] + (-1,))[..., : ins.nbytes]


def store_words(ins: Instr, data: np.ndarray) -> np.ndarray:
    """The bytes a store moves per lane (..., 32, nbytes) -> its register words (..., 32, nregs)."""
    nb = data.shape[-1]
    if nb < BANK_BYTES:
        data = np.concatenate([data, np.zeros(data.shape[:-1] + (BANK_BYTES - nb,), np.uint8)], -1)
    return np.ascontiguousarray(data).view("<u4").astype(np.uint32)


class Simulator:
    """fragsim's own shared-memory model (``fragsim.sim.smem``)."""

    name = "fragsim"

    def run(self, instrs, smem: np.ndarray, payloads: list) -> tuple[list, np.ndarray]:
        """Run the program on each pass's shared memory ``smem`` (passes, size): the loads' registers
        (passes, 32, nregs) per instruction (None for stores and copies, and for instructions that
        cannot run), and the shared memory after the last instruction."""
        from fragsim.sim import smem as S

        mem = smem.copy()
        outs: list = []
        for ins, pay in zip(instrs, payloads):
            op = ins.op
            if problem(ins) is not None:
                outs.append(None)
                continue
            if op.family == "ldmatrix":
                outs.append(np.stack([S.ldmatrix(m, ins.addrs, op.num, op.trans) for m in mem]))
            elif op.family == "ld.shared":
                outs.append(np.stack([S.ld_shared(m, ins.addrs, op.bytes_per_addr, ins.mask) for m in mem]))
            else:
                for m, v in zip(mem, pay):
                    if op.family == "stmatrix":
                        S.stmatrix(m, ins.addrs, v, op.num, op.trans)
                    elif op.family == "st.shared":
                        S.st_shared(m, ins.addrs, v, op.bytes_per_addr, ins.mask)
                    else:
                        S.cp_async(m, ins.addrs, v, op.bytes_per_addr, ins.mask, op.level)
                outs.append(None)
        return outs, mem
