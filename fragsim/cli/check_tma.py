"""``fragsim check --tma SPEC --wgmma DESC``: the command line of ``check_tma_wgmma`` (fragsim/cli/check.py
hands over here when --tma is given)."""

from __future__ import annotations

import json

from . import args as args_
from .check_wgmma import EXIT_WRONG, descriptor

#: --tma's keys -> TensorMap's parameters
_KEYS = {"dtype": "dtype", "dims": "global_dims", "strides": "global_strides", "box": "box_dims",
         "element_strides": "element_strides", "swizzle": "swizzle", "fill": "oob_fill", "oob_fill": "oob_fill",
         "base": "base"}
_LISTS = {"global_dims", "global_strides", "box_dims", "element_strides"}
SPEC = "'dtype=bf16,dims=200x100,box=64x64,swizzle=128B[,strides=400][,fill=zero][,base=0]'"


def tensor_map(text: str):
    """--tma: the map's arguments as KEY=VALUE pairs, lists innermost first with 'x' between values;
    strides default to the dense tensor's."""
    from fragsim.tma import TensorMap

    kw: dict = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, eq, value = (s.strip() for s in item.partition("="))
        if not eq or not value:
            raise ValueError(f"--tma {text!r}: {item.strip()!r} is not KEY=VALUE; expected {SPEC}")
        name = _KEYS.get(key.lower())
        if name is None:
            raise ValueError(f"--tma {text!r}: unknown key {key!r}; the keys are {', '.join(sorted(set(_KEYS)))}")
        if name in kw:
            raise ValueError(f"--tma {text!r}: {key} is given twice")
        if name in _LISTS:
            kw[name] = [args_.integer(v, f"--tma {key}") for v in value.lower().split("x")]
        elif name == "base":
            kw[name] = args_.integer(value, "--tma base")
        else:
            kw[name] = value
    for need in ("dtype", "global_dims", "box_dims"):
        if need not in kw:
            short = next(k for k, v in _KEYS.items() if v == need)
            raise ValueError(f"--tma {text!r}: {short}= is missing; expected {SPEC}")
    if "global_strides" not in kw:
        from fragsim.facts.tma import TMA_TYPES

        t = TMA_TYPES.get(kw["dtype"].strip().lstrip(".").lower())
        if t is None:
            raise ValueError(f"--tma {text!r}: dtype {kw['dtype']!r} is not a tensor-map data type; expected one of "
                             f"{', '.join(TMA_TYPES)}")
        dims, stride = kw["global_dims"], t.bytes
        kw["global_strides"] = []
        for d in dims[:-1]:
            stride *= d
            kw["global_strides"].append(stride)
    return TensorMap(**kw)


def _coords(text: str, option: str) -> tuple[int, ...]:
    return tuple(args_.integer(v, option) for v in text.split(","))


def report_of(args):
    """The TmaWgmmaReport the arguments ask for."""
    from fragsim.check.tma_wgmma import check_tma_wgmma

    for opt in ("tile", "src", "mask", "fragment", "regmap", "threads", "global_pitch"):
        if getattr(args, opt, None) is not None:
            raise ValueError(f"--{opt.replace('_', '-')} is not for --tma (the tensor map says where the operand is)")
    if getattr(args, "gpu", False):
        raise ValueError("--gpu is not for --tma (gpu-check --family ptx_kernels --forms tma_check runs it)")
    if not args.wgmma:
        raise ValueError("--tma needs --wgmma DESC (the descriptor of k-step 0, or one per k-step)")
    if not args.form or not args.operand:
        raise ValueError("--tma needs --form (a wgmma form, e.g. m64n64k16.f32.bf16.bf16) and --operand A or B")
    if not args.dst:
        raise ValueError("--tma needs --dst ADDR: the shared address of the box (once per box)")
    tmap = tensor_map(args.tma)
    descs = [descriptor(d) for d in args.wgmma]
    dsts = [args_.integer(d, "--dst") for d in args.dst]
    coords = [_coords(c, "--coords") for c in args.coords] if args.coords else [None] * len(dsts)
    if len(coords) != len(dsts):
        raise ValueError(f"--coords is given {len(coords)} times for {len(dsts)} --dst: give one box start per "
                         "destination")
    box = dict(dst=dsts[0], coords=coords[0]) if len(dsts) == 1 else \
        dict(boxes=[(c if c is not None else (0,) * tmap.rank, d) for c, d in zip(coords, dsts)])
    at = _coords(args.at, "--at") if args.at else None
    return check_tma_wgmma(tmap, args.form, args.operand, descs[0] if len(descs) == 1 else descs, major=args.major,
                           k_dim=args.k_dim, at=at, steps=args.steps, advance=args.advance,
                           variables=args_.one_value_each(args.var, "--tma checks one set of descriptors"), **box)


def run(args, pictures) -> int:
    report = report_of(args)
    print(json.dumps(report.to_dict()) if args.json else report)
    if pictures:
        from fragsim.viz.canonical import draw_check
        for path in pictures:
            draw_check(report, None, path)
            if not args.json:
                print(f"wrote {path}")
    return 0 if report.ok else EXIT_WRONG
