"""The checker on the GPU (``fragsim check --gpu``, ``check_load(..., gpu=True)``).

- ``program``   the GPU machine: a check's program as one kernel (fragsim.check.gpu's door up here)
- ``cases``     the seed documents' address math, right and with each classic mistake injected
- ``record``    records what a GPU does with those cases (tests/data/check/)
"""
