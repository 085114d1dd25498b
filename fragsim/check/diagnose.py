"""The diagnosis: what the received map is, as a known mistake, and the fix in one sentence.

Each recogniser states a mistake, and the fix it names is run through the simulator before it is
said (``recheck``): toggling ``.trans``, reordering the 8x8 matrices of an ``.x4``, the layout the
addresses assume (no swizzle, another swizzle found by a linear solve over GF(2), another pitch).
The recognisers, in the order they are tried after the address problems (which are always listed):

- transposed: ``.trans`` missing or extra (the rows the lanes address hold columns of the fragment),
  and the whole fragment transposed (the tile is stored the other way round);
- the two k-halves swapped; the 8x8 matrices of an ``.x4`` (or whole registers) in the wrong order;
- rows or columns off by a constant (8, a whole fragment ...);
- the layout: swizzle missing, swizzled before the column offset is added, another swizzle,
  another pitch, every address off by a constant;
- otherwise the first mismatching lanes.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fragsim import validate
from fragsim.facts.hardware import MATRIX_ROWS, WARP_LANES
from fragsim.ranges import format_ranges
from fragsim.instructions.shared_ops import SHARED_OPS
from . import layouts as L
from .machine import problem
from .report import Finding
from .runs import NOT_RUN, Evidence, byte_sources

VERB = {"load": "reads", "store": "writes", "copy": "copies"}
NOUN = {"load": "read", "store": "write", "copy": "copy"}
#: Mismatching lanes quoted when nothing known explains them.
QUOTED = 4


def lane_ranges(lanes) -> str:
    """[0, 1, 2, 3, 8, 9] -> "0-3, 8-9"."""
    return format_ranges(lanes, sep=", ")


def _regmap_hint(regmap) -> str:
    return validate.spell(f"regmap={regmap}", "--regmap " + ",".join(f"{f}:{r}" for f, r in regmap))


def toggled(op):
    """The ldmatrix/stmatrix entry with ``.trans`` toggled."""
    name = op.name[:-len(".trans")] if op.trans else op.name + ".trans"
    return SHARED_OPS[name]


class Diagnosis:
    def __init__(self, ev: Evidence, recheck, mismatch_text):
        self.ev = ev
        self.tile = ev.tile
        self.instrs = ev.instrs
        self.recheck = recheck              # recheck(tile=..., instrs=...) -> ok
        self.mismatch_text = mismatch_text  # the first mismatches, as text
        self.verb = VERB[ev.kind]
        self.noun = NOUN[ev.kind]
        self.wide = ev.frags.wide if ev.frags is not None else 1   # registers per unit of the grids

    # ------------------------------------------------------------------------------------------
    def findings(self) -> list[Finding]:
        out = self.address_problems() + list(self.ev.findings)
        if not self.ev.bad.any():
            return out
        if (self.ev.got[self.ev.bad] == NOT_RUN).all():
            # nothing ran wrong, something could not run: only the addresses can say more
            return out + (self.impossible() or self.offset())
        for recognise in (self.transposed, self.k_halves, self.register_order, self.shifted, self.layout,
                          self.offset):
            found = recognise()
            if found:
                return out + found
        if self.ev.findings:          # holes and overlaps say it already
            return out
        return out + [Finding("unexplained", "no known mistake explains the mismatches; the first ones: "
                              + "; ".join(self.mismatch_text(QUOTED)))]

    # ------------------------------------------------------------------------------------------
    # addresses that cannot work

    def address_problems(self) -> list[Finding]:
        out = []
        t = self.tile
        for ins in self.instrs:
            why = problem(ins, t)
            if why:
                out.append(Finding("address", f"{ins.describe()}: {why}; the GPU would fault on it"))
                continue
            use = ins.address_lanes
            nb = ins.op.bytes_per_addr
            idx, off = t.locate(ins.addrs[:, None] + np.arange(nb))
            outside = use & (idx < 0).any(1)
            if outside.any():
                lane = int(np.flatnonzero(outside)[0])
                a = int(ins.addrs[lane])
                rel = a - t.base
                where = ("in the tile's padding" if 0 <= rel < t.span else
                         f"outside the tile (it spans {validate.hex_int(t.base)}..{validate.hex_int(t.base + t.span - 1)})")
                out.append(Finding("address", f"{ins.describe()}: lanes {lane_ranges(np.flatnonzero(outside))} "
                                   f"address bytes that hold no tile element (lane {lane}: "
                                   f"{validate.hex_int(a)} is {where})"))
                continue
            inside = use & (off[:, 0] != 0)
            # a plain access may move part of an element on purpose (two ld.shared.u16 of one f32)
            if inside.any() and ins.op.family not in ("ld.shared", "st.shared"):
                lane = int(np.flatnonzero(inside)[0])
                e = int(idx[lane, 0])
                out.append(Finding("address", f"{ins.describe()}: lane {lane}'s address "
                                   f"{validate.hex_int(ins.addrs[lane])} points inside element "
                                   f"tile({e // t.cols},{e % t.cols}), not at its start"))
        return out

    # ------------------------------------------------------------------------------------------
    # the addresses the instructions should give

    def wanted(self, i: int, fn, op=None):
        """(addresses (32,), constrained (32,) bool) that make instruction i move the bytes it must
        under the layout ``fn`` (element index -> byte address), or None when no address can."""
        op = op or self.instrs[i].op
        el, eb = self.ev.wel[i], self.ev.wby[i]
        s, d = byte_sources(op)
        ok = el >= 0
        a = fn(np.maximum(el, 0)) + eb - d
        ss, aa = s[ok], a[ok]
        lo = np.full(WARP_LANES, np.iinfo(np.int64).max)
        hi = np.full(WARP_LANES, np.iinfo(np.int64).min)
        np.minimum.at(lo, ss, aa)
        np.maximum.at(hi, ss, aa)
        used = np.bincount(ss, minlength=WARP_LANES) > 0
        if (lo[used] != hi[used]).any():
            return None
        return np.where(used, lo, -1), used

    def row_starts(self, i: int):
        """(elements, bytes, lanes): what each constrained address lane must point at."""
        el, eb = self.ev.wel[i], self.ev.wby[i]
        s, d = byte_sources(self.instrs[i].op)
        first = (d == 0) & (el >= 0)
        return el[first], eb[first], s[first]

    def tile_fn(self, elements):
        return self.tile.offset_of(elements)

    # ------------------------------------------------------------------------------------------
    # transposed

    def transposed(self) -> list[Finding]:
        fixes, out = [], []
        new = list(self.instrs)
        for i, ins in enumerate(self.instrs):
            if problem(ins) or self.wanted(i, self.tile_fn) is not None:
                continue
            if ins.op.family not in ("ldmatrix", "stmatrix"):
                out.append(self.not_contiguous(i))
                continue
            op2 = toggled(ins.op)
            w = self.wanted(i, self.tile_fn, op2)
            if w is None:
                out.append(self.not_contiguous(i))
                continue
            addrs, how = self.match(ins, op2, *w)
            new[i] = replace(ins, op=op2, addrs=addrs)
            fixes.append((ins, op2, how))
        if out:
            return out
        if not fixes or not self.recheck(instrs=new):
            return []
        for ins, op2, how in fixes:
            what = ".trans missing" if op2.trans else ".trans extra"
            out.append(Finding("transposed", f"transposed ({what}): {ins.describe()} moves each 8x8 matrix "
                               f"transposed: the rows its lanes address hold columns of the fragment; use "
                               f"{op2.name}{how}"))
        out += self.whole_transpose()
        return out

    def impossible(self) -> list[Finding]:
        """Instructions that no address can make right: their registers need elements that are not
        side by side in shared memory (with .trans toggled neither)."""
        out = []
        for i, ins in enumerate(self.instrs):
            if self.wanted(i, self.tile_fn) is not None:
                continue
            if ins.op.movement is not None and self.wanted(i, self.tile_fn, toggled(ins.op)) is not None:
                continue
            out.append(self.not_contiguous(i))
        return out

    def not_contiguous(self, i: int) -> Finding:
        ins = self.instrs[i]
        el = self.ev.wel[i]
        s, d = byte_sources(ins.op)
        t = self.tile
        a = t.offset_of(np.maximum(el, 0)) + self.ev.wby[i] - d
        # the first lane whose bytes are not one run of memory
        for lane in range(WARP_LANES):
            sel = (s == lane) & (el >= 0)
            vals = a[sel]
            if vals.size and (vals != vals[0]).any():
                e = np.unique(el[sel])
                names = " and ".join(f"tile({x // t.cols},{x % t.cols})" for x in e[:2])
                return Finding("not contiguous", f"{ins.describe()} cannot move these registers from this tile: "
                               f"lane {lane}'s address must reach {names}, which are not next to each other in "
                               f"shared memory (a {t.order}-order tile keeps each {t.order} together); "
                               "transpose on the way (ldmatrix .trans) or store the tile the other way round")
        raise AssertionError("not_contiguous is asked only where wanted() found a lane with no single address")

    def match(self, ins, op, w, used):
        """Addresses for ``op`` that make ``ins`` right, and what to say about them: the user's own
        (nothing), the user's with its 8x8 matrices' lane groups reordered, or the wanted ones."""
        u = ins.addrs
        if (u[used] == w[used]).all():
            return u.copy(), ""
        perm = self.group_permutation(op, u, w, used)
        if perm is not None:
            new = u.copy()
            for k, j in perm.items():
                new[MATRIX_ROWS * k: MATRIX_ROWS * (k + 1)] = u[MATRIX_ROWS * j: MATRIX_ROWS * (j + 1)]
            return new, ", and " + self.permutation_text(perm)
        lanes = np.flatnonzero(used & (u != w))
        return np.where(used, w, u), (f", and change the addresses of lanes {lane_ranges(lanes)} (lane {lanes[0]}: "
                                      f"{validate.hex_int(w[lanes[0]])}, not {validate.hex_int(u[lanes[0]])})")

    @staticmethod
    def group_permutation(op, u, w, used) -> dict | None:
        """{matrix k: matrix j} such that lanes of matrix k should give what lanes of matrix j give
        now, if the user's addresses are the wanted ones with whole 8-lane groups moved."""
        n = op.address_lanes // MATRIX_ROWS
        g = lambda a, k: a[MATRIX_ROWS * k: MATRIX_ROWS * (k + 1)]  # noqa: E731
        perm: dict[int, int] = {}
        for k in range(n):
            m = g(used, k)
            hits = [j for j in range(n) if (g(u, j)[m] == g(w, k)[m]).all() and j not in perm.values()]
            if not hits:
                return None
            perm[k] = hits[0]
        return perm if any(k != j for k, j in perm.items()) else None

    @staticmethod
    def permutation_text(perm: dict) -> str:
        """Lanes of matrix k need the addresses lanes of matrix j give now."""
        def lanes(k):
            return f"{MATRIX_ROWS * k}-{MATRIX_ROWS * k + MATRIX_ROWS - 1}"
        moved = {k: j for k, j in perm.items() if k != j}
        pairs = [(k, j) for k, j in moved.items() if moved.get(j) == k and k < j]
        if len(pairs) * 2 == len(moved):
            return "; ".join(f"swap the addresses of lanes {lanes(k)} and {lanes(j)}" for k, j in pairs)
        return "; ".join(f"lanes {lanes(k)} need the addresses lanes {lanes(j)} give now" for k, j in moved.items())

    def whole_transpose(self) -> list[Finding]:
        """The registers hold the transpose of the fragment: the tile is stored the other way round."""
        fr = self.ev.frags
        if fr is None:
            return []
        r, c = fr.form.matrix_shape(fr.operand)
        if r != c:
            return []
        (wr, wc), (gr, gc) = self.local(self.ev.want), self.local(self.ev.got)
        if not ((self.ev.got >= 0) & (gr == wc) & (gc == wr)).all():
            return []
        t = self.tile
        other = "col" if t.order == "row" else "row"
        text = (f"the registers hold the transpose of the {fr.operand} fragment (tile(c,r) where tile(r,c) is "
                f"needed): the {self.noun}s treat the tile as {other}-major")
        try:
            t2 = type(t)(t.rows, t.cols, t.dtype, other, t.pitch, t.swizzle, t.base)
        except ValueError:
            t2 = None
        if t2 is not None and self.recheck(tile=t2):
            text += f"; if it is, describe it with order='{other}' and these {self.noun}s are right"
        return [Finding("transposed", text)]

    def local(self, elements):
        """(row, col) of elements relative to the origin of the fragment of each slot."""
        fr = self.ev.frags
        org = np.array(fr.origins, np.int64)[fr.regmap[self.ev.reg, 0]]
        r, c = np.divmod(elements, self.tile.cols)
        return r - org[:, 0], c - org[:, 1]

    # ------------------------------------------------------------------------------------------
    # whole registers transformed

    def registers(self):
        """Per stream register: bad (any slot wrong)."""
        ev = self.ev
        bad = ev.grid(ev.bad)
        return bad.any(axis=(0, 2))

    def explained(self, tr, tc) -> np.ndarray:
        """Per stream register: every slot holds the transformed wanted element (tr, tc local)."""
        ev = self.ev
        gr, gc = self.local(ev.got)
        hit = (ev.got >= 0) & (gr == tr) & (gc == tc)
        return np.asarray(ev.grid(hit).all(axis=(0, 2)))

    def k_halves(self) -> list[Finding]:
        fr = self.ev.frags
        if fr is None or fr.operand not in ("A", "B"):
            return []
        K = fr.form.shape[2]
        h = K // 2
        wr, wc = self.local(self.ev.want)
        tr, tc = (wr, (wc + h) % K) if fr.operand == "A" else ((wr + h) % K, wc)
        bad = self.registers()
        exp = self.explained(tr, tc)
        if not bad.any() or (bad != exp).any():
            return []
        unit_frag = fr.regmap[::self.wide, 0]
        frs = sorted({int(f) for f in unit_frag[bad]})
        whole = all(bad[unit_frag == f].all() for f in frs)
        if not whole:
            return []
        which = (f"the {fr.operand} fragment" if len(fr.origins) == 1 else
                 f"{fr.operand} fragment{'s' * (len(frs) > 1)} {', '.join(map(str, frs))}")
        fix = self.reorder_fix()
        return [Finding("k-halves swapped", f"the two k-halves of {which} are swapped: the registers that must hold "
                        f"k 0..{h - 1} hold k {h}..{K - 1} and the other way round{fix}")]

    def register_sources(self) -> dict | None:
        """{bad stream register j: register k whose wanted elements j holds}, or None."""
        ev = self.ev
        if ev.frags is None:
            return None
        got, want = ev.grid(ev.got), ev.grid(ev.want)
        bad = self.registers()
        src: dict[int, int] = {}
        for j in np.flatnonzero(bad):
            hits = [k for k in range(want.shape[1]) if k != j and (got[:, j] == want[:, k]).all()]
            if not hits:
                return None
            src[int(j)] = hits[0]
        if sorted(src.values()) != sorted(src):
            return None
        return src

    def reorder_fix(self) -> str:
        """"; swap the addresses of lanes 0-15 and 16-31"-style text, checked, for a register
        permutation inside ldmatrix/stmatrix instructions ("" when there is none)."""
        fixed = self.reordered()
        if fixed is None:
            return ""
        new, texts = fixed
        return "; " + "; ".join(texts) if self.recheck(instrs=new) else ""

    def reordered(self):
        """The instructions with whole 8-lane groups moved so that each register gets what it needs,
        and what was moved, when the wrong registers are a permutation inside ldmatrix/stmatrix."""
        src = self.register_sources()
        if src is None:
            return None
        offs = np.cumsum([0] + [i.nbytes // 4 for i in self.instrs])
        regs = {j * self.wide: k * self.wide for j, k in src.items()}
        new, texts = list(self.instrs), []
        for i, ins in enumerate(self.instrs):
            pairs = {j - offs[i]: k - offs[i] for j, k in regs.items() if offs[i] <= j < offs[i + 1]}
            if not pairs:
                continue
            if ins.op.family not in ("ldmatrix", "stmatrix") or any(not 0 <= k < ins.op.num for k in pairs.values()):
                return None
            # register j holds what k needs: lanes of matrix k must give what lanes of matrix j give now
            perm = {int(k): int(j) for j, k in pairs.items()}
            u = ins.addrs.copy()
            for k, j in perm.items():
                u[MATRIX_ROWS * k: MATRIX_ROWS * (k + 1)] = ins.addrs[MATRIX_ROWS * j: MATRIX_ROWS * (j + 1)]
            new[i] = replace(ins, addrs=u)
            texts.append(f"{ins.describe()}: {self.permutation_text(perm)}")
        return new, texts

    def register_order(self) -> list[Finding]:
        src = self.register_sources()
        if src is None:
            return []
        fixed = self.reordered()
        fr = self.ev.frags
        assert fr is not None, "register_sources found registers"
        w = self.wide
        regmap = [tuple(int(x) for x in fr.regmap[src.get(r // w, r // w) * w + r % w]) for r in range(len(fr.regmap))]
        regs = ", ".join(f"r{j * w} holds what r{k * w} needs" for j, k in sorted(src.items()))
        if fixed is not None and self.recheck(instrs=fixed[0]):
            return [Finding("matrix order", f"the 8x8 matrices come in the wrong order ({regs}); "
                            + "; ".join(fixed[1]) + "; or, if the registers are meant in this order, say so with "
                            + _regmap_hint(regmap))]
        return [Finding("register order", f"the registers come in the wrong order ({regs}): reorder the "
                        "instructions' addresses, or if the registers are meant that way, say so with "
                        + _regmap_hint(regmap))]

    def shifted(self) -> list[Finding]:
        ev = self.ev
        if ev.frags is None:
            return self.shifted_copies()
        bad = self.registers()
        wr, wc = np.divmod(ev.want, self.tile.cols)
        gr, gc = np.divmod(ev.got, self.tile.cols)
        valid = ev.grid(ev.got >= 0).all(axis=(0, 2))
        if not (valid | ~bad).all():
            return []
        dr, dc = ev.grid(gr - wr), ev.grid(gc - wc)
        deltas: dict = {}
        for j in np.flatnonzero(bad):
            a, b = dr[:, j], dc[:, j]
            if (a != a.flat[0]).any() or (b != b.flat[0]).any():
                return []
            deltas.setdefault((int(a.flat[0]), int(b.flat[0])), []).append(int(j))
        out = []
        fr = ev.frags
        everything = bad.all() and len(deltas) == 1
        for (r, c), regs in deltas.items():
            what = self.shift_name(r, c)
            if everything:
                (r0, c0) = fr.origins[0]
                text = (f"{what}: the {self.noun}s reach the {fr.operand} fragment at tile({r0 + r}, {c0 + c}), "
                        f"not the one at tile({r0}, {c0})")
                if 0 <= r0 + r and 0 <= c0 + c:
                    text += (": if that is the one you mean, say so with "
                             + validate.spell(f"at=({r0 + r}, {c0 + c})", f"--at {r0 + r},{c0 + c}"))
                text += f"; otherwise the addresses point {self.shift_bytes(r, c)}"
            else:
                lanes = self.lanes_of(regs, r, c)
                held = f"tile({'r' + format(r, '+d') if r else 'r'},{'c' + format(c, '+d') if c else 'c'})"
                text = (f"{what}: {', '.join(f'r{j * self.wide}' for j in regs)} hold {held} where tile(r,c) is "
                        f"needed{lanes}")
            out.append(Finding("offset", text))
        return out

    def shifted_copies(self) -> list[Finding]:
        ev = self.ev
        bad = ev.bad
        if not (ev.got[bad] >= 0).all():
            return []
        wr, wc = np.divmod(ev.want[bad], self.tile.cols)
        gr, gc = np.divmod(ev.got[bad], self.tile.cols)
        dr, dc = gr - wr, gc - wc
        if (dr != dr[0]).any() or (dc != dc[0]).any():
            return []
        r, c = int(dr[0]), int(dc[0])
        return [Finding("offset", f"{self.shift_name(r, c)}: {int(bad.sum()):,} copied elements land where the element "
                                  f"{self.shift_name(r, c, short=True)} away belongs; the destination addresses point "
                                  f"{self.shift_bytes(r, c)}")]

    @staticmethod
    def shift_name(r: int, c: int, short: bool = False) -> str:
        if short:
            return " and ".join(x for x in (f"{abs(r)} row{'s' * (abs(r) != 1)}" if r else "",
                                            f"{abs(c)} column{'s' * (abs(c) != 1)}" if c else "") if x)
        if r and not c:
            return f"rows off by {abs(r)}"
        if c and not r:
            return f"cols off by {abs(c)}"
        return f"off by {abs(r)} rows and {abs(c)} cols"

    def shift_bytes(self, r: int, c: int) -> str:
        t = self.tile
        parts = []
        if r:
            parts.append(f"{abs(r)} row{'s' * (abs(r) != 1)} too far {'down' if r > 0 else 'up'}")
        if c:
            parts.append(f"{abs(c)} column{'s' * (abs(c) != 1)} too far {'right' if c > 0 else 'left'}")
        ln, ps = (r, c) if t.order == "row" else (c, r)
        if not t.swizzle:
            return " and ".join(parts) + f" ({validate.hex_int(ln * t.pitch + ps * t.elem_bytes)} bytes)"
        return " and ".join(parts)

    def lanes_of(self, regs, r: int, c: int) -> str:
        """": the addresses of lanes 8-15, 24-31 point 8 rows too far up" (ldmatrix/stmatrix), or of
        the plain instructions that move the registers."""
        offs = np.cumsum([0] + [i.nbytes for i in self.instrs])
        lanes: set = set()
        plain: list = []
        for j in regs:
            b = 4 * self.wide * j                     # the unit's first byte in the stream
            i = int(np.searchsorted(offs, b, side="right") - 1)
            ins = self.instrs[i]
            if ins.op.family in ("ldmatrix", "stmatrix"):
                k = (b - offs[i]) // 4
                lanes.update(range(MATRIX_ROWS * k, MATRIX_ROWS * (k + 1)))
            elif ins.label not in plain:
                plain.append(ins.label)
        who = ([f"lanes {lane_ranges(lanes)}"] if lanes else []) + plain
        return f": the addresses of {' and '.join(who)} point {self.shift_bytes(r, c)}"

    # ------------------------------------------------------------------------------------------
    # the layout the addresses assume

    def pairs(self):
        """(elements, bytes, user addresses) of every constrained address lane, or None when the
        tile's layout leaves some instruction no right address."""
        E, B, U = [], [], []
        for i, ins in enumerate(self.instrs):
            if problem(ins) or self.wanted(i, self.tile_fn) is None:
                return None
            el, eb, lanes = self.row_starts(i)
            E.append(el)
            B.append(eb)
            U.append(ins.addrs[lanes])
        return np.concatenate(E), np.concatenate(B), np.concatenate(U)

    def fits(self, fn) -> bool:
        """The user's addresses are exactly the wanted ones under the layout ``fn``."""
        for i, ins in enumerate(self.instrs):
            w = self.wanted(i, fn)
            if w is None:
                return False
            addr, used = w
            if (ins.addrs[used] != addr[used]).any():
                return False
        return True

    def layout(self) -> list[Finding]:
        p = self.pairs()
        if p is None:
            return []
        E, B, U = p
        t = self.tile
        v = self.noun
        mine = L.name(t.xor_map) if t.xor_map is not None else L.name(t.swizzle)
        if t.swizzle is not None:
            plain = t.with_layout(swizzle=None)
            if self.fits(plain.offset_of) and self.recheck(tile=plain):
                return [Finding("swizzle missing", f"swizzle missing: the {v} addresses apply no swizzle, but the "
                                f"tile is laid out with {mine}: apply it to the whole byte offset "
                                f"(swz(row * pitch + col * {t.elem_bytes})), as the other side does")]

            def early(el):
                line, pos = L.line_pos(t, el)
                return t.base + np.asarray(t.swizzle(line * t.pitch), np.int64) + pos * t.elem_bytes

            if self.fits(early):
                return [Finding("swizzle before offset", f"swizzle before offset: the {v} addresses swizzle "
                                f"the start of the {t.order} ({mine}) and then add the offset inside it; the "
                                f"swizzle must apply to the whole offset: swz({t.order} * pitch + col * "
                                f"{t.elem_bytes}), not swz({t.order} * pitch) + col * {t.elem_bytes}")]
        if (U < t.base).any():
            return []
        for pitch in [t.pitch] + L.candidate_pitches(t):
            x = L.solve_xor(L.unswizzled(t, E, pitch) + B, U - t.base)
            if x is None or not (x.is_identity or L.swizzle_like(x)):
                continue
            if pitch == t.pitch and t.xor_map is not None and x == t.xor_map:
                continue
            try:
                t2 = t.with_layout(pitch=pitch, swizzle=L.as_swizzle(x))
            except ValueError:
                t2 = None
            if t2 is not None and not self.recheck(tile=t2):
                continue
            if t2 is None and not self.fits(lambda el, p=pitch, xm=x: t.base + xm(L.unswizzled(t, el, p))):
                continue
            return [self.layout_finding(pitch, x, mine)]
        return []

    def layout_finding(self, pitch: int, x, mine: str) -> Finding:
        t = self.tile
        v = self.noun
        theirs = L.name(x)
        if pitch == t.pitch:
            return Finding("swizzle differs", f"swizzle differs: the {v} addresses apply {theirs}, but the tile is "
                           f"laid out with {mine}: apply {mine} to the {v} addresses (or lay the tile out with "
                           f"{theirs} on every side)")
        lines = f"{t.order}s"
        text = (f"wrong pitch: the {v} addresses step {pitch} bytes from one {t.order} to the next, but the tile's "
                f"{lines} are {t.pitch} bytes apart: use pitch {t.pitch} ({t.pitch // t.elem_bytes} elements)")
        if theirs != mine:
            text += f", and {mine} (they apply {theirs})"
        return Finding("pitch", text)

    def offset(self) -> list[Finding]:
        """Instructions whose every address is off by one constant (the others right)."""
        t = self.tile
        off = []
        for i, ins in enumerate(self.instrs):
            w = self.wanted(i, self.tile_fn)
            if w is None:
                return []
            addr, used = w
            diff = ins.addrs[used] - addr[used]
            if diff.size and (diff != diff[0]).any():
                return []
            if diff.size and diff[0]:
                off.append((ins, int(diff[0])))
        if not off:
            return []
        stride = self.stride(off)
        if stride:
            return stride
        out: list[Finding] = []
        everything = len(off) == len(self.instrs) and len({d for _, d in off}) == 1
        for ins, d in ([(None, off[0][1])] if everything else off):
            ln, rem = divmod(abs(d), t.pitch)
            what = (f"{ln} {t.order}{'s' * (ln != 1)}" if rem == 0 else f"{abs(d) // t.elem_bytes} elements"
                    if abs(d) % t.elem_bytes == 0 else f"{abs(d)} bytes")
            who = f"every {self.noun} address is" if ins is None else f"every address of {ins.describe()} is"
            if len(out) == QUOTED:
                out.append(Finding("offset", f"and {len(off) - QUOTED} more instructions"))
                break
            out.append(Finding("offset", f"{who} {validate.hex_int(abs(d))} bytes ({what}) "
                                         f"{'past' if d > 0 else 'before'} where it must be"
                                         + (f": check the base (the tile starts at {validate.hex_int(t.base)})"
                                            if ins is None else "")))
        return out

    def stride(self, off) -> list[Finding]:
        """The offsets grow with one variable (a wrong loop stride): d = c * variable, 0 where it is 0."""
        d = {id(ins): dd for ins, dd in off}
        names = set().union(*(ins.values for ins in self.instrs)) - {"warp"} if self.instrs else set()
        for name in sorted(names):
            vals = [ins.values.get(name) for ins in self.instrs]
            if any(v is None for v in vals) or len(set(vals)) < 2:
                continue
            ds = [d.get(id(ins), 0) for ins in self.instrs]
            step = {dd // v for dd, v in zip(ds, vals) if v}
            if len(step) != 1 or any(dd != v * next(iter(step)) for dd, v in zip(ds, vals)):
                continue
            c = next(iter(step))
            t = self.tile
            ln, rem = divmod(abs(c), t.pitch)
            what = f" ({ln} {t.order}{'s' * (ln != 1)})" if rem == 0 else ""
            return [Finding("offset", f"the {self.noun} addresses move {validate.hex_int(abs(c))} bytes{what} too "
                                      f"{'far' if c > 0 else 'little'} per step of {name}: the stride of {name} in "
                                      "the address is off")]
        return []
