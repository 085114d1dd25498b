"""Facts of mbarrier objects and of the tensor maps the PTX runner holds, cited from the PTX ISA
(9.x, "Parallel Synchronization and Communication Instructions: mbarrier") and the CUDA driver API.
"""

from __future__ import annotations

#: An mbarrier object is a .b64 in shared memory, 8-byte aligned ("Size and alignment of mbarrier object").
MBARRIER_BYTES = 8
#: Largest expected arrival count, pending arrival count and |tx-count| ("Contents of the mbarrier
#: object": expected 1 .. 2^20 - 1, pending 0 .. 2^20 - 1, tx-count -(2^20 - 1) .. 2^20 - 1).
MBARRIER_MAX_COUNT = (1 << 20) - 1
#: A ``CUtensorMap`` is 128 opaque bytes, 64-byte aligned (cuda.h: ``CU_TENSOR_MAP_NUM_QWORDS`` 16,
#: ``alignas(64)``); a ``__grid_constant__`` one is a ``.param .align 64 .b8 name[128]``.
TENSORMAP_BYTES = 128
TENSORMAP_ALIGN = 64
