"""Two-line probes: which words of source line B can share a wavefront with one word of line A?

Run 1 showed that cp.async.ca wavefronts depend on *which* 128-byte source lines a phase reads,
not only on how many (lines 0,1,2,3 share a wavefront; lines 3 and 4 do not; lines 4 KiB + 128
apart never do).  Hypothesis: the L1 stores each line's words in banks permuted by a function of
the line address, so two lines collide where their physical banks do.  These probes find, for a
line pair (A, B), the word w of B whose bank collides with word a of A:

  lane 0 reads (A, a); lanes w in W read (B, w) (lane w, so the destination banks are distinct)
  Z = {0} (read by lane 1), W_j = {w in 1..31 : bit j of w is 1}, j = 0..4

A single colliding word w* gives wf = 2 exactly for the W_j with bit j of w* set (or for Z when
w* = 0); wf = 2 everywhere means the lines never share a wavefront.  The same with 8- and 16-byte
copies (units of 8/16 bytes instead of words) checks the granularity.
"""

from __future__ import annotations

import numpy as np

from cases import LANE, FULL

BITS_4 = 5   # 32 words per line
OPS = ("cp.async.ca.4", "cp.async.ca.8", "cp.async.ca.16", "cp.async.cg.16")


def probe_set(w: int, A: int, a: int, B: int, tag: str):
    """The launches that locate B's colliding unit for unit a of line A (units of w bytes)."""
    n = 128 // w              # units per line = lanes per phase
    nb = n.bit_length() - 1
    out = []
    # destination: lane l writes unit l of a 128-byte row: distinct banks within the phase
    dst = LANE * w

    def launch(label, lanes_units):
        src = np.zeros(32, np.int64)
        m = 0
        for lane, (line, unit) in lanes_units.items():
            src[lane] = line * 128 + unit * w
            m |= 1 << lane
        out.append((f"pair {tag} A={A} a={a} B={B} {label}", dst, m, src))

    # lane 0 holds A's unit; B's unit u sits on lane u (u >= 1) or on lane 1 for u = 0
    launch("Z", {0: (A, a), 1: (B, 0)})
    for j in range(nb):
        lanes = {0: (A, a)}
        for u in range(1, n):
            if u >> j & 1:
                lanes[u] = (B, u)
        launch(f"W{j}", lanes)
    return out


def cases(op: str, seed: int = 0):
    w = int(op.split(".")[-1])
    rng = np.random.default_rng([seed, w, 7])
    out = []
    if w == 4:
        # ground truth for the decoding: every word of B singly, for a few lines
        for B in (1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 33, 66):
            for u in range(32):
                lane = u if u else 1
                src = np.zeros(32, np.int64)
                src[lane] = B * 128 + u * 4
                out.append((f"pair scan A=0 a=0 B={B} u={u}", LANE * 4, 1 | (1 << lane), src))
        Bs = list(range(1, 256)) + [256, 257, 300, 384, 448, 500, 511]
        for B in Bs:
            out += probe_set(4, 0, 0, B, "base")
        # other base lines and a nonzero word of A: additive (rotation) vs XOR (swizzle)
        for A, a in ((1, 5), (3, 0), (4, 9), (5, 17), (33, 3), (100, 30), (7, 12)):
            for B in sorted(set(int(x) for x in rng.integers(0, 256, 8)) - {A}):
                out += probe_set(4, A, a, B, "other")
    elif w == 8:
        for B in range(1, 64):
            out += probe_set(8, 0, 0, B, "base")
        for A, a in ((3, 5), (5, 0)):
            for B in sorted(set(int(x) for x in rng.integers(0, 64, 6)) - {A}):
                out += probe_set(8, A, a, B, "other")
    elif w == 16:
        for B in list(range(1, 64)) + [99, 132, 165, 231]:
            out += probe_set(16, 0, 0, B, "base")
        for A, a in ((3, 5), (33, 2)):
            for B in sorted(set(int(x) for x in rng.integers(0, 64, 6)) - {A}):
                out += probe_set(16, A, a, B, "other")
    return out


if __name__ == "__main__":
    for op in OPS[:3]:
        print(op, len(cases(op)))
