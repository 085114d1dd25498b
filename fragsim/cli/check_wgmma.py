"""``fragsim check --wgmma``: the command line of ``check_wgmma`` (fragsim/cli/check.py hands over here)."""

from __future__ import annotations

import json
import re

_DESC_KEYS = {"start": "start_address", "lbo": "leading_byte_offset", "sbo": "stride_byte_offset",
              "base": "base_offset", "swizzle": "swizzle", "start_address": "start_address",
              "leading_byte_offset": "leading_byte_offset", "stride_byte_offset": "stride_byte_offset",
              "base_offset": "base_offset"}
_SHORT = {"start_address": "start", "leading_byte_offset": "lbo", "stride_byte_offset": "sbo"}
_FIELD = re.compile(r"(?<![\w=!<>])(" + "|".join(sorted(_DESC_KEYS, key=len, reverse=True)) + r")\s*=(?!=)")
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|\d+")
EXIT_WRONG = 1


def descriptor(text: str):
    """--wgmma: a value or a C expression in k, or 'start=EXPR lbo=N sbo=N swizzle=MODE [base=N]'."""
    keys = list(_FIELD.finditer(text))
    if not keys:
        t = text.strip()
        if not t:
            raise ValueError("--wgmma '': expected a descriptor value, an expression in k, or "
                             "'start=EXPR lbo=N sbo=N swizzle=128B'")
        return int(t, 0) if _NUMBER.fullmatch(t) else t
    head = text[:keys[0].start()].strip(" ,;")
    if head:
        raise ValueError(f"--wgmma {text!r}: unexpected {head!r} before the fields (expected "
                         "'start=EXPR lbo=N sbo=N swizzle=128B [base=N]')")
    out: dict = {}
    for i, m in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(text)
        name, value = _DESC_KEYS[m.group(1)], text[m.end():end].strip().rstrip(",;").strip()
        if name in out:
            raise ValueError(f"--wgmma {text!r}: field {m.group(1)} is given twice")
        if not value:
            raise ValueError(f"--wgmma {text!r}: field {m.group(1)} has no value")
        out[name] = value if name == "swizzle" or not _NUMBER.fullmatch(value) else int(value, 0)
    for need, short in _SHORT.items():
        if need not in out:
            raise ValueError(f"--wgmma {text!r}: field {short} is missing (expected 'start=EXPR lbo=N sbo=N "
                             "swizzle=128B [base=N]')")
    return out


def report_of(args):
    """The WgmmaReport the arguments ask for."""
    from fragsim.check.wgmma import check_wgmma
    from . import args as args_

    for opt in ("src", "mask", "fragment", "regmap", "threads", "global_pitch"):
        if getattr(args, opt, None) is not None:
            raise ValueError(f"--{opt.replace('_', '-')} is not for --wgmma (it takes one descriptor per k-step)")
    if getattr(args, "gpu", False):
        raise ValueError("--gpu is not for --wgmma (gpu-check runs wgmma on the hardware)")
    if not args.form or not args.operand:
        raise ValueError("--wgmma needs --form (a wgmma form, e.g. m64n64k16.f32.bf16.bf16) and --operand A or B")
    descs = [descriptor(d) for d in args.wgmma]
    at = args_.pair(args.at, "--at") if args.at else None
    if at is not None and not all(isinstance(v, int) for v in at):
        raise ValueError(f"--at {args.at!r}: --wgmma takes integers ROW,COL")
    return check_wgmma(args.form, args.operand, args.tile, descs[0] if len(descs) == 1 else descs,
                       major=args.major or "K", at=at, steps=args.steps,
                       variables=args_.one_value_each(args.var, "--wgmma checks one set of descriptors"))


def run(args, pictures) -> int:
    report = report_of(args)
    print(json.dumps(report.to_dict()) if args.json else report)
    if pictures:
        from fragsim.viz.canonical import draw_check
        for path in pictures:
            draw_check(report, args.tile, path)
            if not args.json:
                print(f"wrote {path}")
    return 0 if report.ok else EXIT_WRONG
