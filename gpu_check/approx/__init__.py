"""The approx family: the MUFU forms (``ex2``, ``lg2``, ``rcp``, ``rsqrt``, ``sqrt``, ``sin``, ``cos``,
``tanh``, ``div``) on the GPU against fragsim's hardware model, every input of every unary form."""
