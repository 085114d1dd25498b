"""``--family tma``: ``cuTensorMapEncodeTiled`` and tiled ``cp.async.bulk.tensor`` against ``fragsim.tma``.

- ``family``   the family: cases, the worker processes, the comparison, recording and replay
- ``cases``    its cases and what fragsim says of each
- ``device``   the GPU side: the CUDA kernels, the driver's encode through ctypes, the worker
"""
