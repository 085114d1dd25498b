"""Physical facts of the warp and its shared-memory path, named once and cited.

Everything else (the instruction table, the shared-memory and bank models, the probes) reads these
names; a bare 32, 4 or 128 elsewhere means something else.
"""

from __future__ import annotations

#: Threads per warp (CUDA C++ Programming Guide, "SIMT Architecture").
WARP_LANES = 32

#: A warpgroup, which issues wgmma together, is four contiguous warps (PTX ISA, "Asynchronous
#: Warpgroup Level Matrix Multiply-Accumulate Instructions"); its threads are
#: ``fragsim.instructions.wgmma.THREADS``.
WARPGROUP_WARPS = 4

#: Shared memory has 32 banks, each 4 bytes wide, for every compute capability since 5.0
#: (CUDA C++ Programming Guide, "Shared Memory" of each compute capability).
NUM_BANKS = 32
BANK_BYTES = 4

#: One wavefront reads or writes at most one 4-byte word per bank: 128 bytes.  Wider accesses are
#: split into phases of 128 bytes' worth of lanes (reference/shared-memory-banks.md).
WAVEFRONT_BYTES = NUM_BANKS * BANK_BYTES

#: cp.async data arrives from L1 in 128-byte cache lines; the H200/H100 measurements group a
#: copy's lanes by the 128-byte line of their *source* address (tests/data/banks/).
SOURCE_LINE_BYTES = 128

#: ldmatrix/stmatrix move 8x8 matrices of 16-bit elements: one 16-byte row per address lane
#: (PTX ISA, "Warp-level matrix load instruction: ldmatrix").  wgmma's shared-memory layouts are
#: built of the same core matrix, 8 rows of 16 bytes (PTX ISA, "Shared Memory Matrix Layout").
MATRIX_ROWS = 8
MATRIX_ROW_BYTES = 16

#: cp.async source lines fall into 4 classes, a XOR hash of the line's global address: class bit i =
#: parity(address & SOURCE_LINE_CLASS_MASK<i>).  Two different lines of one class never share a
#: wavefront (H100 two-line probes, docs/research/cp_async/NOTES.md; bits 7..21 measured, so the hash
#: is known below SOURCE_LINE_HASH_BITS only).
SOURCE_LINE_CLASS_MASK0 = sum(1 << b for b in (7, 9, 11, 12, 14, 16, 18, 19, 20, 21))
SOURCE_LINE_CLASS_MASK1 = sum(1 << b for b in (8, 10, 11, 13, 14, 15, 17, 19))
SOURCE_LINE_HASH_BITS = 22
