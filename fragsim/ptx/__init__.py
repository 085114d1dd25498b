"""Running a kernel's PTX on the CPU, bit for bit (``fragsim.run_kernel``, ``fragsim run``).

``parse`` reads PTX text into a module of entries and functions; ``machine`` runs one entry over
every thread of the chosen CTAs at once (registers are NumPy arrays over the threads, warps in
lockstep with divergence and reconvergence); ``semantics`` holds what each instruction computes,
one module per family, in the PTX ISA's words.
"""
