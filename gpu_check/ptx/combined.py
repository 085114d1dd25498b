"""``fragsim gpu-check --family ptx``: the PTX runner's four families in one command.

The integer, floating-point and conversion semantics (``ptx_int``, ``ptx_float``, ``ptx_cvt``) and the
whole kernels (``ptx_kernels``) run one after another, each with its own default ``--cases`` unless
``--cases`` is given.  Each member records into and replays from a subfolder of its own, named as the
repository keeps them (``tests/data/ptx/int``, ``float``, ``cvt``, ``kernels``): ``--record DIR`` writes
DIR/int ... DIR/kernels, ``--replay DIR`` reads them (``--replay tests/data/ptx`` replays everything the
H100 recorded).  ``--forms`` filters every member by the same strings; a member none of whose variants
matches is left out and the report says so.  One mismatch anywhere makes the command exit 1.
"""

from __future__ import annotations

import argparse
import copy
import os
import time
from typing import Any

from ..family import Report, families, say

#: member family -> its subfolder of --record/--replay DIR
MEMBERS = {"ptx_int": "int", "ptx_float": "float", "ptx_cvt": "cvt", "ptx_kernels": "kernels"}
#: what an option a member does not take is reset to before the member sees the arguments
RESET = {"seed": 0, "keep": None, "jobs": None}


class PtxFamily:
    name = "ptx"
    skipped: dict[str, str] = {}
    summary = "the PTX runner: ptx_int, ptx_float, ptx_cvt and ptx_kernels in one run (subfolders int/ float/ cvt/ kernels/)"
    replay_file = False
    replay_expects = "a folder with the subfolders int, float, cvt and kernels (the repository's tests/data/ptx)"

    @property
    def default_cases(self) -> int:
        return 0                          # 0: each member's own default (the members' defaults differ)

    @property
    def options(self) -> frozenset[str]:
        out: frozenset[str] = frozenset()
        for m in self._members():
            out |= m.options or frozenset()
        return out

    def _members(self) -> list[Any]:
        fams = families()
        return [fams[name] for name in MEMBERS]

    def member_args(self, member: Any, args: argparse.Namespace, create: bool = True) -> argparse.Namespace:
        """``args`` as ``member`` takes them: its default --cases unless given, its subfolder, the
        options it does not take reset."""
        a = copy.copy(args)
        if not args.cases:
            a.cases = member.default_cases
        for opt, value in RESET.items():
            if member.options is not None and opt not in member.options:
                setattr(a, opt, value)
        sub = MEMBERS[member.name]
        if args.record:
            a.record = os.path.join(args.record, sub)
            if create:
                os.makedirs(a.record, exist_ok=True)
        if args.replay:
            a.replay = os.path.join(args.replay, sub)
        return a

    def validate(self, args: argparse.Namespace) -> None:
        if args.replay:
            missing = [s for s in MEMBERS.values() if not os.path.isdir(os.path.join(args.replay, s))]
            if missing:
                raise ValueError(f"--replay {args.replay}: no subfolder {', '.join(missing)}; "
                                 f"expected {self.replay_expects}")
        self.skipped: dict[str, str] = {}
        for m in self._members():
            try:
                m.validate(self.member_args(m, args, create=False))
            except ValueError as e:
                if not (args.forms and str(e).startswith("--forms")):
                    raise
                self.skipped[m.name] = str(e)       # --forms names none of this member's variants
        if len(self.skipped) == len(MEMBERS):
            raise ValueError(f"--forms {' '.join(args.forms)}: no variant or kernel of any PTX family contains "
                             "any of these")

    def source(self, cc: int) -> str:
        return "\n".join(m.source(cc) for m in self._members())

    def compile(self, info: dict[str, Any]) -> Any:
        return [m.compile(info) for m in self._members()]

    def _each(self, args: argparse.Namespace, replay: bool) -> Report:
        t0 = time.time()
        parts: dict[str, Any] = {}
        talk = say(args)
        for m in self._members():
            if m.name in self.skipped:
                continue
            a = self.member_args(m, args)
            try:
                rep = m.replay(a) if replay else m.run(a)
            except ValueError as e:
                if not (args.forms and str(e).startswith("--forms")):
                    raise
                self.skipped[m.name] = str(e)       # found when the member selects its variants
                continue
            talk(rep.text)
            parts[m.name] = rep.json
        if not parts:
            raise ValueError(f"--forms {' '.join(args.forms)}: no variant or kernel of any PTX family contains "
                             "any of these")
        body: dict[str, Any] = {"family": self.name, "members": parts, "skipped": dict(self.skipped),
                "cases": sum(int(p.get("cases", 0)) for p in parts.values()),
                "mismatches": sum(int(p.get("mismatches", 0)) for p in parts.values()),
                "seconds": round(time.time() - t0, 1)}
        return Report(body, self.summarize(body), body["mismatches"])

    def run(self, args: argparse.Namespace) -> Report:
        return self._each(args, replay=False)

    def replay(self, args: argparse.Namespace) -> Report:
        return self._each(args, replay=True)

    def summarize(self, report: dict[str, Any]) -> str:
        lines = [f"{name}: {p.get('cases', 0):,} cases, {p.get('mismatches', 0):,} mismatches"
                 for name, p in report["members"].items()]
        lines += [f"{name}: left out ({why})" for name, why in report.get("skipped", {}).items()]
        lines.append(f"{self.name}: {report['cases']:,} cases, {report['mismatches']:,} mismatches  "
                     f"({report['seconds']:.1f} s)")
        return "\n".join(lines)


FAMILIES = {"ptx": PtxFamily()}
