"""Nsight Compute measurements of the bank model (``fragsim.banks``): wavefronts and bank conflicts as the
GPU counts them.

- ``measure``         one instruction at a time (``fragsim conflicts --ncu-measure``): record and compare
- ``probe``, ``probe.cu``  its probe program, one kernel per shared-memory instruction, and the SASS check
- ``cases``, ``cp_async_cases``  its address sets (cp.async: the families of the H100 study)
- ``access``          whole access sets (``fragsim.access``), one CTA kernel each (``access_kernels``)
- ``ncu``             Nsight Compute itself: the metrics read, running ncu, reading its CSV
"""
