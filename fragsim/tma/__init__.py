"""The Tensor Memory Accelerator: tensor maps (``TensorMap``, cuTensorMapEncodeTiled's rules) and the
bytes a tiled ``cp.async.bulk.tensor`` load or store moves (``tma_load``, ``tma_store``, ``box_layout``),
plus ``cp.async.bulk`` (``bulk_copy``)."""

from .copy import BoxLayout, box_layout, bulk_copy, load_values, tma_load, tma_store, tma_swizzle
from .tensormap import TensorMap

__all__ = ["TensorMap", "BoxLayout", "box_layout", "bulk_copy", "load_values", "tma_load", "tma_store", "tma_swizzle"]
