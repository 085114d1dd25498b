"""Layouts: where each element lives.  ``linear`` (linear maps over GF(2), after Triton's
LinearLayout), ``swizzle`` (CUTLASS ``Swizzle<B,M,S>``), ``xor_map`` (any GF(2) swizzle), ``tile`` (a
matrix in shared memory), and ``descriptor`` (wgmma's shared-memory matrix
descriptors)."""
