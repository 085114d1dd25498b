"""``--family wgmma``: the wgmma cross-check on an sm_90a GPU.

- ``family``       the family and its run (jobs, SASS check, descriptor fuzz, recording)
- ``kernels``      its CUDA, generated from the wgmma table
- ``cases``        its inputs, seeded, and what fragsim says of them
- ``corpus``, ``fuzz_corpus``  the compact corpora CI replays (tests/data/wgmma/)
"""
