"""fragsim.gpu_check: cross-check fragsim's models against a real GPU, bit for bit.

- ``family``    the family protocol and the registry ``fragsim gpu-check --family`` reads
- ``table``, ``movmatrix``, ``wgmma_run``, ``gemm``   the families (mma and shared, movmatrix, wgmma,
  whole GEMMs); ``bulk`` is the table's case-by-case pipeline
- ``prelude``   the one CUDA prelude; ``compile`` the one way CUDA is compiled (NVRTC, nvcc)
- ``runner``    the device: CuPy and device 0 (``GpuUnavailable`` otherwise)
- ``record``    the one record format; ``corpus`` the warp corpora (tests/data/hw/) in it
- ``kernels``, ``generate``  the table's CUDA and its input generators
- ``ncu_*``, ``access_*``    Nsight Compute measurements of the bank model

Installed as ``fragsim.gpu_check`` (pyproject maps the top-level ``gpu_check/`` folder).
"""
