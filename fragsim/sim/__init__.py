"""The simulated instructions, one module per function: ``registers`` (matrix <-> per-lane registers),
``mma`` (``fragsim.mma``), ``wgmma`` (``fragsim.wgmma``), ``gemm`` (``fragsim.gemm``), ``movmatrix``
(``fragsim.movmatrix``) and ``smem`` (ldmatrix, stmatrix, ld/st.shared, cp.async)."""
