"""``--family movmatrix``: ``movmatrix`` on the GPU against ``fragsim.movmatrix`` (``family``)."""
