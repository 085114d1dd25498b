"""The swizzle search: ``access`` (what a CTA issues against a tile: presets and ``from_exprs``),
``addrexpr`` (C address expressions, shared with the address checker; ``cparse`` reads them), ``swizzle_search`` (ranked
candidate layouts and the round trip through the simulator) and ``text`` (the ranked table)."""
