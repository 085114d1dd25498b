"""``--family gemm``: whole mma.sync GEMMs on the GPU against ``fragsim.gemm`` (``family``)."""
