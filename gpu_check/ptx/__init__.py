"""The PTX runner's families (``fragsim.ptx``) on the GPU.

- ``integer``          --family ptx_int: integer, bit, predicate and warp-collective semantics
- ``floating``         --family ptx_float: floating-point instructions (its cases: ``floating_cases``)
- ``convert``          --family ptx_cvt: every ``cvt`` with a floating-point type
- ``kernels``          --family ptx_kernels: whole kernels of the PTX corpus (tests/data/ptx)
- ``combined``         --family ptx: the four above in one command
- ``traffic``          --family ptx_ncu: shared-memory traffic of whole kernels under Nsight Compute
  (its one-pattern kernels: ``traffic_kernels``)
- ``sanitizer``        the kernels of fragsim's checks under compute-sanitizer
"""
