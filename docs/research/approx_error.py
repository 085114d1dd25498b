"""The MUFU forms' error against the exact function, measured on fragsim's model (bit for bit the
H100's, every input: --family approx), for docs/approx.md: the table it prints and
docs/img/approx-error.png.

    python docs/research/approx_error.py
"""

from __future__ import annotations

import numpy as np

import fragsim


def words(lo: float, hi: float) -> np.ndarray:
    a, b = np.array([lo, hi], np.float32).view(np.uint32)
    return np.arange(a, b, dtype=np.uint32) if a < b else np.arange(b, a, dtype=np.uint32)


def ulp_of(exact: np.ndarray) -> np.ndarray:
    return 2.0 ** (np.maximum(np.floor(np.log2(np.abs(exact))), -126) - 23)


#: 2^22 inputs drawn evenly from [-pi, pi] (every float there would be 2 billion)
TURN = np.random.default_rng(0).uniform(-np.pi, np.pi, 1 << 22).astype(np.float32).view(np.uint32)
CASES = [  # form, inputs, exact, error measure
    ("rcp.approx.ftz.f32", words(1, 2), lambda x: 1 / x, "ulp"),
    ("rsqrt.approx.ftz.f32", words(1, 4), lambda x: 1 / np.sqrt(x), "ulp"),
    ("sqrt.approx.ftz.f32", words(1, 4), np.sqrt, "ulp"),
    ("ex2.approx.ftz.f32", words(1, 2), np.exp2, "ulp"),
    ("ex2.approx.ftz.f32", words(-2, -1), np.exp2, "ulp"),
    ("lg2.approx.ftz.f32", words(0.5, 2), np.log2, "abs"),
    ("sin.approx.ftz.f32", TURN, np.sin, "abs"),
    ("cos.approx.ftz.f32", TURN, np.cos, "abs"),
]


def main() -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []
    fig, axes = plt.subplots(2, 4, figsize=(16, 7))
    for ax, (form, w, fn, kind) in zip(axes.flat, CASES):
        x = w.view(np.float32).astype(np.float64)
        r = fragsim.approx(form, w).view(np.float32).astype(np.float64)
        exact = fn(x)
        if kind == "ulp":
            e = (r - exact) / ulp_of(exact)
            cr = np.mean(r == exact.astype(np.float32))
            rows.append(f"| `{form}` | [{x.min():.3g}, {x.max():.3g}] | {len(w):,} | {np.abs(e).max():.3f} ulp | "
                        f"{e.mean():+.3f} ulp | {100 * cr:.1f}% |")
            ax.set_ylabel("error (ulp)")
        else:
            e = r - exact
            rows.append(f"| `{form}` | [{x.min():.3g}, {x.max():.3g}] | {len(w):,} | 2^{np.log2(np.abs(e).max()):.2f} "
                        f"absolute | {e.mean():+.2e} | -- |")
            ax.set_ylabel("absolute error")
        step = max(1, len(x) // 4000)
        order = np.argsort(x)
        ax.plot(x[order][::step], e[order][::step], ",", alpha=0.6)
        ax.set_title(form, fontsize=10)
        ax.set_xlabel("x")
    fig.suptitle("MUFU results minus the exact function (fragsim's model = the H100's bits)")
    fig.tight_layout()
    fig.savefig("docs/img/approx-error.png", dpi=80)
    print("| form | inputs | count | max error | mean error | correctly rounded |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
