"""Re-check of a canonical-form verdict (docs/degenerate.md, Theorem D), in exact rationals.

* σ: the checker proves ``σ(z) − σ(−z) = z`` (flip constant 1) by its own route, and
  positive homogeneity of degree 1 for the ``relu`` grouping (units ``u = s·e`` with
  ``e``'s first nonzero entry 1, ``w σ(s e·x) = |s| w σ(e·x) + [s<0] w uᵀx``); otherwise
  units group by ``±u`` exactly (``w σ(−e·x) = w σ(e·x) + w uᵀx``).
* The canonical form ``f(x) = L₀x + Σ a_ℓ σ(e_ℓ·x)`` is re-derived here from the weights
  (floats are dyadic rationals) and must equal the recorded one.
* ``absorbable``: the constructed block, recorded in exact rationals, has the same canonical
  form — then it *is* f, by the two identities above alone; its float64 rounding is the
  recorded witness block (hashes) and is evaluated against f. The recorded choice (B, δ)
  must need the recorded width: ``m + |B| + 2·rank(C_δ P_B)``, rank exact.
* ``not_absorbable``: needs uniqueness of the canonical form, so σ must be ReLU, GELU (erf or
  tanh form), SiLU or quick-GELU (compared by the checker's own route); every choice (B, δ)
  is enumerated here and its rank computed exactly; the minimum must exceed the width.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from absorb.model.block import Block
from absorb.verify._numerics import _U, exact_rank
from absorb.verify._pieces import decide_zero, exact_value
from absorb.verify._report import _Ctx, _require
from absorb.verify._symbolic import _same_function, _variable, flip_constant, homogeneous_of_degree
from absorb.verify._weights import _bias_free

Mat = list[list[Fraction]]
_Lines = list[tuple[tuple[Fraction, ...], tuple[Fraction, ...]]]
MAX_CHOICES = 1 << 14
"""Most (B, δ) choices the checker enumerates for a not_absorbable verdict."""
MAX_WORK = 400_000

_Y = sp.Symbol("y", real=True)
_UNIQUE = {  # σ for which the canonical form is unique (docs/degenerate.md, Lemma U)
    "relu": (sp.Max(0, _Y),),
    "even": (_Y * (1 + sp.erf(_Y / sp.sqrt(2))) / 2, _Y / (1 + sp.exp(-_Y)), _Y / (1 + sp.exp(-sp.Rational(1702, 1000) * _Y)),
             _Y * (1 + sp.tanh(sp.sqrt(2 / sp.pi) * (_Y + sp.Rational(44715, 10**6) * _Y**3))) / 2),  # cheapest comparisons first
}


def _q(a: np.ndarray) -> Mat:
    return [[Fraction(float(v)) for v in row] for row in np.atleast_2d(np.asarray(a, dtype=float))]


def _parse(rows: Any) -> Mat:
    return [[Fraction(str(v)) for v in row] for row in rows]


def canonical(U: Mat, D: Mat, M: Mat, family: str) -> tuple[Mat, dict[tuple[Fraction, ...], tuple[Fraction, ...]]]:
    """(L₀, {e: a} over the active lines) of x ↦ Mx + Σ_i w_i σ(u_i·x)."""
    d = len(M)
    L0 = [row[:] for row in M]
    acc: dict[tuple[Fraction, ...], list[Fraction]] = {}
    for i, u in enumerate(U):
        w = [D[r][i] for r in range(d)]
        if not any(u) or not any(w):
            continue  # dead: σ(0) = 0
        s = next(v for v in u if v != 0)
        if family == "relu":
            e, scale = tuple(v / s for v in u), abs(s)
        else:
            e, scale = (tuple(u) if s > 0 else tuple(-v for v in u)), Fraction(1)
        if s < 0:  # w σ(−z) = w σ(z) − w z with z = e·x, so the unit adds w uᵀ (relu: |s| w σ(e·x) + w uᵀ x)
            for r in range(d):
                for c in range(d):
                    L0[r][c] += w[r] * u[c]
        a = acc.setdefault(e, [Fraction(0)] * d)
        for r in range(d):
            a[r] += scale * w[r]
    return L0, {e: tuple(a) for e, a in acc.items() if any(a)}


def _nullspace(E: Mat, d: int) -> Mat:
    """Columns spanning {x : E x = 0} (a d×k matrix, k = d − rank E), exactly."""
    R = [row[:] for row in E]
    piv: list[int] = []
    r = 0
    for c in range(d):
        p = next((i for i in range(r, len(R)) if R[i][c] != 0), None)
        if p is None:
            continue
        R[r], R[p] = R[p], R[r]
        R[r] = [x / R[r][c] for x in R[r]]
        for i in range(len(R)):
            if i != r and R[i][c] != 0:
                f = R[i][c]
                R[i] = [x - f * y for x, y in zip(R[i], R[r])]
        piv.append(c)
        r += 1
    free = [c for c in range(d) if c not in piv]
    cols = []
    for fc in free:
        x = [Fraction(0)] * d
        x[fc] = Fraction(1)
        for i, pc in enumerate(piv):
            x[pc] = -R[i][fc]
        cols.append(x)
    return [[col[i] for col in cols] for i in range(d)]


def _width(L0: Mat, lines: list[tuple[tuple[Fraction, ...], tuple[Fraction, ...]]], B: tuple[int, ...], delta: dict[int, int]) -> int | None:
    """m + |B| + 2·rank(C_δ N_B), or None when the lines of B are dependent."""
    d = len(L0)
    EB = [list(lines[l][0]) for l in B]
    if B and exact_rank(EB) < len(B):
        return None
    C = [row[:] for row in L0]
    for l, (e, a) in enumerate(lines):
        if l not in B and delta.get(l):
            for r in range(d):
                for c in range(d):
                    C[r][c] += a[r] * e[c]
    N = _nullspace(EB, d) if B else [[Fraction(int(i == j)) for j in range(d)] for i in range(d)]
    k = len(N[0]) if N and N[0] else 0
    rank = 0 if k == 0 else exact_rank([[sum((C[r][t] * N[t][j] for t in range(d)), Fraction(0)) for j in range(k)] for r in range(d)])
    return len(lines) + len(B) + 2 * rank


def _check_sigma(ctx: _Ctx, w: str, rec: dict[str, Any], block: Block) -> str:
    """The block's shape and σ's identities; returns the unit grouping ('relu' or 'even')."""
    _require(ctx, not block.gated, w, "the block is ungated")
    _require(ctx, _bias_free(block), w, "the block is bias-free (exact)")
    _require(ctx, block.n * block.d <= MAX_WORK and block.d * block.d <= MAX_WORK, w, "the block is small enough for exact arithmetic")
    act = block.activation.expr
    c = flip_constant(act, False)
    _require(ctx, c is not None and c == 1, w, "σ(z) − σ(−z) = z for all z (exact at 0 and every break point, by pieces)",
             f"flip constant {c}")
    x = _variable(act)
    _require(ctx, decide_zero(exact_value(act, x, sp.Integer(0))) is True, w, "σ(0) = 0 exactly (dead units contribute nothing)")
    family = "relu" if homogeneous_of_degree(act, sp.Integer(1)) else "even"
    _require(ctx, rec.get("family") == family, w, f"the grouping is '{family}' "
             + ("(σ positively homogeneous of degree 1)" if family == "relu" else "(units pair by ±u exactly)"),
             f"recorded {rec.get('family')!r}")
    return family


def _check_recorded_form(ctx: _Ctx, w: str, rec: dict[str, Any], block: Block, family: str) -> tuple[Mat, _Lines, dict]:
    """The recorded canonical form is f's: returns (L₀, the recorded lines in their order, the re-derived lines)."""
    U, D, M = _q(block.W_up), _q(block.W_down), _q(block.M)
    L0, lines_d = canonical(U, D, M, family)
    rec_lines = [(tuple(Fraction(str(v)) for v in ln["e"]), tuple(Fraction(str(v)) for v in ln["a"])) for ln in rec.get("lines", [])]
    _require(ctx, _parse(rec.get("L0", [])) == L0 and dict(rec_lines) == lines_d and len(rec_lines) == len(lines_d), w,
             f"the recorded canonical form is f's, re-derived exactly: m = {len(lines_d)} active lines, L₀ as recorded")
    return L0, rec_lines, lines_d  # the recorded order (the choice refers to it); equal to the re-derived set


def _check_choice(ctx: _Ctx, w: str, choice: dict[str, Any], L0: Mat, lines: _Lines) -> None:
    """The recorded choice (B, δ) needs the recorded width."""
    B = tuple(int(l) for l in choice.get("B", []))
    delta = {l: int(v) for l, v in enumerate(choice.get("delta", []))}
    _require(ctx, all(0 <= l < len(lines) for l in B) and len(set(B)) == len(B), w, "the recorded lines B are active lines")
    need = _width(L0, lines, B, delta)
    _require(ctx, need is not None and need == choice.get("width"), w,
             f"the recorded choice (B = {list(B)}, δ) needs m + |B| + 2·rank(C_δ P_B) = {choice.get('width')} units (exact rank)",
             f"re-computed {need}")


def _check_absorbable(ctx: _Ctx, w: str, b: dict[str, Any], rec: dict[str, Any], block: Block, choice: Any, N: int,
                      L0: Mat, lines_d: dict, family: str) -> tuple[str, Block | None, float]:
    """The exact witness has f's canonical form; its float64 rounding is the recorded witness block."""
    _require(ctx, choice is not None and int(choice["width"]) <= N, w, f"the recorded choice fits in width {N}")
    wx = rec.get("witness_exact") or {}
    Up, Dp = _parse(wx.get("W_up", [])), _parse(wx.get("W_down", []))
    _require(ctx, len(Up) == N and all(len(r) == block.d for r in Up) and len(Dp) == block.d and all(len(r) == N for r in Dp), w,
             f"the exact witness has {N} units of dimension {block.d}")
    L0w, lines_w = canonical(Up, Dp, [[Fraction(0)] * block.d for _ in range(block.d)], family)
    _require(ctx, L0w == L0 and lines_w == lines_d, w,
             "the exact residual-free witness has f's canonical form, so it equals f (exact rationals)")
    Wu = np.array([[float(v) for v in r] for r in Up]).reshape(N, block.d)
    Wd = np.array([[float(v) for v in r] for r in Dp]).reshape(block.d, N)
    wb = block.replace(W_up=Wu, W_down=Wd, skip=np.zeros((block.d, block.d)), name=block.name + "'")
    from absorb.verify._theorems import check_witness_block

    check_witness_block(ctx, w, b.get("witness") or {}, wb, "the float64 rounding of the exact witness")
    # rounding the exact witness to float64: each entry moves by ≤ u relatively; σ is 1.2-Lipschitz
    allowed = 4 * _U * float(np.sum(np.linalg.norm(Wd, axis=0) * np.linalg.norm(Wu, axis=1))) * 1.2
    return "absorbable", wb, allowed


def _min_width(L0: Mat, lines: _Lines, bmax: int) -> float:
    """The fewest units any choice (B, δ) with |B| ≤ bmax needs (∞ when none is independent)."""
    m = len(lines)
    best = math.inf
    for k in range(bmax + 1):
        for B in itertools.combinations(range(m), k):
            rest = [l for l in range(m) if l not in B]
            for bits in itertools.product((0, 1), repeat=len(rest)):
                v = _width(L0, lines, B, dict(zip(rest, bits)))
                if v is not None:
                    best = min(best, v)
    return best


def _check_not_absorbable(ctx: _Ctx, w: str, rec: dict[str, Any], block: Block, family: str, N: int,
                          L0: Mat, lines: _Lines) -> tuple[str, Block | None, float]:
    """σ's canonical form is unique, and every choice (B, δ) needs more than the width."""
    _require(ctx, any(_same_function(block.activation.expr, r) for r in _UNIQUE[family]), w,
             "σ is ReLU, GELU (erf or tanh form), SiLU or quick-GELU: the canonical form is unique (docs/degenerate.md, Lemma U)")
    m, d = len(lines), block.d
    best = math.inf
    if m <= N:
        bmax = min(d, m, N - m)
        count = sum(math.comb(m, k) * 2 ** (m - k) for k in range(bmax + 1))
        if count > MAX_CHOICES:
            ctx.report.unchecked(w, "every choice (B, δ) needs more than the width", f"{count} choices exceed the checker's {MAX_CHOICES}")
            return "not_absorbable", None, 0.0
        best = _min_width(L0, lines, bmax)
    _require(ctx, best > N, w, f"every choice (B, δ) needs more than {N} units (all enumerated, exact ranks)",
             f"m = {m} active lines; the cheapest choice needs {best if best < math.inf else 'more than m'} units")
    rec_min = rec.get("min_width")
    _require(ctx, rec_min is None or best == math.inf or rec_min == best, w, "the recorded minimum width is the true one",
             f"recorded {rec_min!r}, re-computed {best}")
    return "not_absorbable", None, 0.0


def check_canonical_form(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> tuple[str, Block | None, float]:
    """Returns (the verdict the evidence supports, the witness rebuilt here, its allowed
    linear error for the evaluation check)."""
    if b.get("verdict") == "unknown":
        return "unknown", None, 0.0  # claims nothing
    rec = b.get("canonical_form")
    _require(ctx, isinstance(rec, dict), w, "the certificate records the canonical form")
    family = _check_sigma(ctx, w, rec, block)
    L0, lines, lines_d = _check_recorded_form(ctx, w, rec, block, family)
    N = int(rec.get("width", -1))
    _require(ctx, N == block.n, w, f"the width is the block's own, n = {block.n}", f"recorded {rec.get('width')!r}")
    verdict = b.get("verdict")
    choice = rec.get("choice")
    if choice is not None:
        _check_choice(ctx, w, choice, L0, lines)
    if verdict == "absorbable":
        return _check_absorbable(ctx, w, b, rec, block, choice, N, L0, lines_d, family)
    if verdict != "not_absorbable":
        return "unknown", None, 0.0
    return _check_not_absorbable(ctx, w, rec, block, family, N, L0, lines)
