"""fragsim.gpu_check: cross-check fragsim's models against a real GPU, bit for bit.

One subpackage per family (``fragsim gpu-check --family NAME``), each family's module ``family.py``
(the PTX families: one module each in ``ptx/``); what several families share stays here.

Shared:

- ``family``      the family protocol and the registry ``fragsim gpu-check --family`` reads
- ``prelude``     the one CUDA prelude; ``compile`` the one way CUDA is compiled (NVRTC, nvcc)
- ``kernels``     CUDA of the instruction table's entries (mma forms, shared-memory ops, movmatrix), the
  asm every family that emits a table instruction uses
- ``runner``      the device: CuPy and device 0 (``GpuUnavailable`` otherwise)
- ``record``      the one record format; ``corpus`` the warp corpora (tests/data/hw/) in it
- ``recordings``  the sample of the recordings installed with fragsim (``recordings/``), --replay's default
- ``mmasim_corpus``  MMA-Sim's reference corpus of the mma forms (tests/data/mmasim/ names this command)

Families and tools:

- ``table/``      --family mma and shared (the default): the instruction table case by case (``bulk``, the
  input generators ``generate`` and ``generate_exact``)
- ``movmatrix/``  --family movmatrix
- ``wgmma/``      --family wgmma (its kernels, cases and CI corpora)
- ``gemm/``       --family gemm: whole GEMMs
- ``tma/``        --family tma (its cases and the device side)
- ``ptx/``        --family ptx_int, ptx_cvt, ptx_float, ptx_kernels, ptx_ncu and ptx (all four), and the
  kernels of fragsim's checks under compute-sanitizer
- ``banks/``      Nsight Compute measurements of the bank model: per instruction and per access set
- ``check/``      the GPU machine behind ``fragsim check --gpu`` and the recording of its seed cases

Installed as ``fragsim.gpu_check`` (pyproject maps the top-level ``gpu_check/`` folder).
"""
