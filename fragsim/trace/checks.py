"""The checks of ``fragsim.trace_fragments`` (``fragsim.trace``) on what the passes found
(``fragsim.trace.passes``), for every warp (warpgroup) of every CTA run:

- every row of the A fragment holds one row of A, every column of the B fragment one column of B,
  none of them twice (*rows*, *cols*);
- each k slot holds one k in A and the same k in B (*k*), no k twice in one mma;
- over the whole run every D element is summed over each k of A exactly once (*k coverage*);
- every D element the epilogue stores lands at its row and column of the output (*stores*:
  ``fragsim.trace.stores``).

Assumption: one CTA computes each D element over all of K (split-K across CTAs or warps traces as
missing k).
"""

from __future__ import annotations

import numpy as np

from .ids import NONE, combine
from .passes import Tracing
from .stores import placement

__all__ = ["Analysis", "local_bad", "repeated"]


#: Coverage: at most this many (D element, k) pairs are followed to find the first k summed twice.
COVERAGE_PAIRS = 1 << 24


def repeated(v: np.ndarray, axis: int) -> np.ndarray:
    """Whether some valid value occurs twice along ``axis``."""
    s = np.sort(np.where(v >= 0, v, -1), axis)
    a, b = np.take(s, np.arange(s.shape[axis] - 1), axis), np.take(s, np.arange(1, s.shape[axis]), axis)
    return ((a == b) & (a >= 0)).any(axis)


class Analysis:
    """The checks on the combined identities of every mma of the run (module docstring)."""

    def __init__(self, t: Tracing, outputs: list, lines: list, module):
        self.t, self.lines, self.module = t, lines, module
        self.untraced: list[str] = []
        self.counts = {"mma executions fed wrong elements": 0, "D elements not summed over every k once": 0,
                       "D elements not stored where they belong": 0}
        keys = list(self.counts)
        self.first_local = self.summarize()
        self.counts[keys[0]] = self.n_local
        self.coverage()
        self.counts[keys[1]] = int(self.bad_cov.sum())
        self.placed = placement(t, outputs, self.covered)
        if self.placed.untraced is not None:
            self.untraced.append(self.placed.untraced)
        self.stored = self.placed.stored
        self.counts[keys[2]] = int(self.placed.misplaced.sum() + self.placed.lost.sum())

    # -- per mma --------------------------------------------------------------------------------

    def summarize(self) -> tuple[int, int] | None:
        """``sums``: per event the rows, columns and k (A's, B's) its units' fragments hold, combined
        over the passes, all mma's of one form at once; the first unit fed wrongly (event, unit)."""
        t = self.t
        self.sums: list = [None] * len(t.events)
        groups: dict = {}
        for e, ev in enumerate(t.events):
            groups.setdefault((ev.form.name, ev.threads), []).append(e)
        first, n = None, 0
        for es in groups.values():
            cut = np.cumsum([0] + [len(t.events[e].first) for e in es])
            stacked = []
            for key in ("rows", "cols", "ka", "kb"):
                ps = t.plan.rc() if key in ("rows", "cols") else t.plan.k()
                code = t.ca if key in ("rows", "ka") else t.cb
                stacked.append(combine([np.concatenate([t.events[e].dig[key, p] for e in es]) for p in ps], code.base))
            bad = local_bad(*stacked)
            n += int(bad.sum())
            for i, e in enumerate(es):
                sl = slice(cut[i], cut[i + 1])
                self.sums[e] = tuple(x[sl] for x in stacked)
                if bad[sl].any() and (first is None or e < first[0]):
                    first = (e, int(np.flatnonzero(bad[sl])[0]))
        self.n_local = n
        return first

    # -- k coverage -----------------------------------------------------------------------------

    def hashes(self) -> np.ndarray:
        # a random 64-bit value per k: a D element's sum of them is its k's sum only for the right set
        return np.random.default_rng(0).integers(0, 1 << 63, self.t.K, dtype=np.int64).astype(np.uint64) * 2 + 1

    def contributions(self, e: int):
        """(flat D index (u, M, N), valid (u, M, N), k of each slot (u, K), -1 where not summed)."""
        rows, cols, ka, kb = self.sums[e]
        ok = (rows >= 0)[:, :, None] & (cols >= 0)[:, None, :]
        flat = np.maximum(rows, 0)[:, :, None] * self.t.N + np.maximum(cols, 0)[:, None, :]
        k = np.where((ka >= 0) & (ka == kb), ka, -1)
        return flat, ok, k

    def coverage(self) -> None:
        t = self.t
        H = self.hashes()
        n = t.M * t.N
        self.units = max((len(ev.first) for ev in t.events), default=1)
        flats, nks, hs, whos = [], [], [], []
        for e, ev in enumerate(t.events):
            flat, ok, k = self.contributions(e)
            nk = (k >= 0).sum(1)
            h = np.where(k >= 0, H[np.maximum(k, 0)], np.uint64(0)).sum(1, dtype=np.uint64)
            u = np.broadcast_to(np.arange(len(ev.first))[:, None, None], flat.shape)[ok]
            flats.append(flat[ok])
            nks.append(nk[u])
            hs.append(h[u])
            whos.append(e * self.units + u)
        flat_all = np.concatenate(flats) if flats else np.zeros(0, np.int64)
        count = np.bincount(flat_all, np.concatenate(nks) if nks else None, minlength=n).astype(np.int64)
        hsum = np.zeros(n, np.uint64)
        if flats:
            np.add.at(hsum, flat_all, np.concatenate(hs))
        self.last = np.full(n, -1, np.int64)          # event * units + unit of the last mma computing it
        if flats:
            np.maximum.at(self.last, flat_all, np.concatenate(whos))
        self.covered = count > 0
        self.bad_cov = self.covered & ((count != t.K) | (hsum != H.sum(dtype=np.uint64)))

    def first_coverage(self) -> dict | None:
        """The first mma that sums a k into a D element a second time, or the element missing k."""
        t = self.t
        F = np.flatnonzero(self.bad_cov)
        if not F.size:
            return None
        F = F[:max(1, COVERAGE_PAIRS // t.K)]
        index = np.full(t.M * t.N, -1, np.int64)
        index[F] = np.arange(F.size)
        who = np.full((F.size, t.K), -1, np.int64)
        for e in range(len(t.events)):
            flat, ok, k = self.contributions(e)
            f = np.where(ok, index[flat], -1)                         # (u, M, N)
            sel = (f[..., None] >= 0) & (k[:, None, None, :] >= 0)     # (u, M, N, K)
            if not sel.any():
                continue
            uu, ii, jj, kk = np.nonzero(sel)
            ff, kv = f[uu, ii, jj], k[uu, kk]
            prev = who[ff, kv]
            if (prev >= 0).any():
                j = int(np.flatnonzero(prev >= 0)[0])
                return {"event": e, "unit": int(uu[j]), "element": divmod(int(F[ff[j]]), t.N), "k": int(kv[j]),
                        "before": int(prev[j]) // self.units}
            who[ff, kv] = e * self.units + uu
        summed = np.flatnonzero(who[0] >= 0)
        last = int(who[0].max())
        return {"event": last // self.units, "unit": last % self.units, "element": divmod(int(F[0]), t.N),
                "missing": np.setdiff1d(np.arange(t.K), summed)}

    # -- where D lands --------------------------------------------------------------------------

    def first_store(self) -> tuple[int, int] | None:
        """The first mma (event, unit) computing a D element stored elsewhere or nowhere."""
        pl = self.placed
        who = np.concatenate([self.last[pl.tag[pl.misplaced]], self.last[pl.lost]])
        who = who[who >= 0]
        if not who.size:
            return None
        w = int(who.min())
        return w // self.units, w % self.units


def local_bad(rows, cols, ka, kb) -> np.ndarray:
    """Per unit: its A rows, B columns or k slots are not one element each, or A and B disagree."""
    return ((rows < NONE).any(1) | (cols < NONE).any(1) | repeated(rows, 1) | repeated(cols, 1)
            | (ka < NONE).any(1) | (kb < NONE).any(1) | ((ka >= 0) & (kb >= 0) & (ka != kb)).any(1)
            | repeated(ka, 1) | repeated(kb, 1))
