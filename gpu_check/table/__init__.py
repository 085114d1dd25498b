"""The instruction table's families, ``--family mma`` and ``--family shared`` (together the default of
``fragsim gpu-check``): every mma.sync form and shared-memory instruction, one generated kernel each,
checked case by case.

- ``family``          the two families (and ``BOTH``, the default), ``GROUPS``
- ``bulk``            the case-by-case pipeline: inputs in chunks, the GPU (or a stand-in), fragsim, compare
- ``generate``        the inputs, vectorized and seeded (mma matrices by class, shared-memory address sets)
- ``generate_exact``  the inputs of the integer and f64 mma forms
"""
