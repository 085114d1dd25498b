"""fragsim.gpu_check: cross-check fragsim's models against a real GPU, bit for bit.

- ``kernels``   CUDA source generated from the instruction table (one kernel per instruction)
- ``generate``  vectorized input generators (mma classes, probes, shared-memory address sets)
- ``runner``    CuPy/NVRTC launch on the device (``GpuRunner``; ``GpuUnavailable`` otherwise)
- ``bulk``      the bulk check behind ``fragsim gpu-check``
- ``corpus``    recorded hardware corpora (tests/data/hw/) and their loader

Installed as ``fragsim.gpu_check`` (pyproject maps the top-level ``gpu_check/`` folder).
"""
