"""Hardware facts, each written once: the warp's physical constants (``hardware``), one arithmetic row
per architecture for mma.sync and wgmma (``arch``), and the number formats' bit codecs (``formats``).
Everything else reads these; a bare 32, 128 or 8 elsewhere means something else."""
