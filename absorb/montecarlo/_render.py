"""The sweep as a terminal table, a JSON document, and a plot (matplotlib, Agg backend)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from absorb.montecarlo._distributions import DISCRETE, DISTRIBUTIONS
from absorb.montecarlo._sweep import CellResult


def _ci_text(r: CellResult) -> str:
    lo, hi = r.ci
    if r.ci_kind == "upper":
        return f"< {hi:.2g}"
    if r.ci_kind == "lower":
        return f"> {lo:.3g}"
    return f"[{lo:.3g}, {hi:.3g}]"


def _planted_text(r: CellResult) -> str:
    p = r.planted
    if not p.get("samples"):
        return "n/a"
    return f"{p['detected']}/{p['samples']}"


def render_table(results: Sequence[CellResult], *, seed: int, tol: float) -> str:
    """One line per cell: counts, fraction absorbable with its 95% Clopper–Pearson interval,
    degenerate fraction, distance quantiles, planted detection, time per sample."""
    head = ["d", "n", "distribution", "σ", "N", "absorbable", "95% CI", "not_abs", "no_S", "undec", "degen",
            "dist q05", "median", "q95", "planted", "µs/sample"]
    rows = []
    for r in results:
        c, k, dist = r.cell, r.counts, r.distance
        mark = "≥" if r.distance_kind == "lower_bound" else ""
        rows.append([str(c.d), str(c.n), c.distribution + ("*" if c.distribution in DISCRETE else ""), c.activation, str(c.samples),
                     f"{k['absorbable']} ({r.fraction:.3g})", _ci_text(r), str(k["not_absorbable"]), str(k["no_index_set"]),
                     str(k["undecided"]), f"{r.degenerate_fraction:.3g}", f"{mark}{dist.get('q05', float('nan')):.3f}",
                     f"{mark}{dist.get('q50', float('nan')):.3f}", f"{mark}{dist.get('q95', float('nan')):.3f}", _planted_text(r),
                     f"{r.per_sample_s * 1e6:.1f}"])
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    fmt = lambda row: "  ".join(v.rjust(w) if i not in (2, 3) else v.ljust(w) for i, (v, w) in enumerate(zip(row, widths)))  # noqa: E731
    lines = [f"absorb montecarlo  (seed {seed}, tolerance {tol:g}; distance = min_S ‖D_S U_S + I‖_F/√d)", "", fmt(head),
             "  ".join("-" * w for w in widths)]
    lines += [fmt(row) for row in rows]
    lines += ["",
              "absorbable: an index set S with W_down[:,S] W_up[S,:] = −I found and re-checked by the engine (always a true absorption).",
              "not_abs: no S and result 5 applies (ReLU/GELU, nondegenerate weights, d ≥ 2). no_S: no S but the weights are degenerate",
              "(zero/collinear rows, dead units, d = 1) or σ is not ReLU/GELU — result 5's necessity does not apply; the truth is open there.",
              "* discrete distribution: coincidences (degenerate weights, exact index sets) have positive probability.",
              "≥: n too large to enumerate; the distance is the rigorous least-squares dual lower bound (docs/mathematics.md §4).",
              "95% CI: exact Clopper–Pearson; '< x' is the one-sided upper bound when nothing hit."]
    recheck_failed = sum(r.recheck["recheck_failed"] for r in results)
    if recheck_failed:
        lines.append(f"WARNING: {recheck_failed} vectorised hits failed the engine's re-check (counted as undecided).")
    return "\n".join(lines) + "\n"


def to_json(results: Sequence[CellResult], *, seed: int, tol: float, command: str | None = None) -> dict[str, Any]:
    return {
        "seed": seed,
        "tolerance": tol,
        "command": command,
        "distributions": {k: v[1] for k, v in DISTRIBUTIONS.items()},
        "cells": [r.to_json() for r in results],
    }


def plot(results: Sequence[CellResult], path: str, *, title: str | None = None) -> None:
    """Two panels per cell: fraction absorbable with its 95% interval (a downward marker at
    the upper bound when nothing hit), and the distance quantiles (q05–q95 whisker, q25–q75
    box, median tick)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m = len(results)
    labels = [f"{r.cell.distribution}{'*' if r.cell.distribution in DISCRETE else ''}\nd={r.cell.d} n={r.cell.n}"
              + (f"\n{r.cell.activation}" if len({x.cell.activation for x in results}) > 1 else "") for r in results]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(6.0, 0.3 * m + 2), 7.0), sharex=True, constrained_layout=True)
    xs = range(m)
    for x, r in zip(xs, results):
        lo, hi = r.ci
        color = "tab:red" if r.counts["absorbable"] else "tab:blue"
        if r.ci_kind == "upper":
            ax1.plot([x, x], [0, hi], color=color, lw=1.5)
            ax1.plot(x, hi, marker="v", color=color, ms=6)
            ax1.plot(x, 0, marker="o", color=color, ms=4)
        else:
            ax1.errorbar(x, r.fraction, yerr=[[r.fraction - lo], [hi - r.fraction]], fmt="o", color=color, capsize=3, ms=4)
        ax1.plot(x, r.degenerate_fraction, marker="x", color="0.45", ms=5, ls="none")
    ax1.set_yscale("symlog", linthresh=1e-3)
    ax1.set_ylim(0, 1.3)
    ax1.set_ylabel("fraction absorbable\n(95% Clopper–Pearson)")
    ax1.plot([], [], "x", color="0.45", label="degenerate fraction")
    # a legend entry only for a series the plot holds
    if any(r.ci_kind == "upper" for r in results):
        ax1.plot([], [], "v", color="tab:blue", label="none hit: upper bound")
    if any(r.ci_kind != "upper" for r in results):
        ax1.plot([], [], "o", color="tab:red", label="hits: two-sided interval")
    ax1.legend(fontsize=7, loc="upper left")
    ax1.grid(axis="y", alpha=0.3)
    for x, r in zip(xs, results):
        q = r.distance
        if not q:
            continue
        style = dict(color="tab:green" if r.distance_kind == "exact" else "tab:orange")
        ax2.plot([x, x], [q["q05"], q["q95"]], lw=1, **style)
        ax2.add_patch(matplotlib.patches.Rectangle((x - 0.25, q["q25"]), 0.5, max(q["q75"] - q["q25"], 1e-3), alpha=0.35, **style))
        ax2.plot([x - 0.25, x + 0.25], [q["q50"], q["q50"]], lw=2, **style)
    kinds = {r.distance_kind for r in results if r.distance}
    if "exact" in kinds:
        ax2.plot([], [], color="tab:green", lw=2, label="exact (enumeration)")
    if kinds - {"exact"}:
        ax2.plot([], [], color="tab:orange", lw=2, label="lower bound (LS dual)")
    ax2.add_patch(matplotlib.patches.Rectangle((0, 0), 0, 0, color="0.5", alpha=0.35, label="box: quartiles q25–q75"))
    ax2.plot([], [], color="0.5", lw=2, label="tick: median")
    ax2.plot([], [], color="0.5", lw=1, label="whisker: q05–q95")
    ax2.legend(fontsize=7, loc="lower left", ncol=2)
    ax2.set_ylabel("distance to absorbability\n" r"$\min_S\,\Vert D_S U_S + I\Vert_F\,/\,\sqrt{d}$")  # mathtext
    ax2.set_ylim(bottom=0)
    ax2.grid(axis="y", alpha=0.3)
    ax2.set_xticks(list(xs))
    ax2.set_xticklabels(labels, fontsize=7, rotation=90)
    fig.suptitle(title or "Monte Carlo: is a random block absorbable?  (* discrete distribution)", fontsize=10)
    fig.savefig(path, dpi=110)
    plt.close(fig)
