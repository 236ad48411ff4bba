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

from absorb.model.activations import get_activation
from absorb.model.block import Block
from absorb.verify._compose import LIPSCHITZ, prove
from absorb.verify._numerics import _U, _huge_exponent, exact_rank, rounding_allowance
from absorb.verify._pieces import decide_zero, exact_value
from absorb.verify._report import _Ctx, _require
from absorb.verify._symbolic import _same_function, _sigma_lipschitz, _variable, flip_constant, homogeneous_of_degree
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
    """Recorded rational strings as Fractions; a string past 1000 characters or with a decimal exponent past ±10000
    ('1e999999999' would build a billion-digit integer) is a malformed record (ValueError), refused at once."""
    out = []
    for row in rows:
        texts = [str(v) for v in row]
        if any(len(t) > 1000 or _huge_exponent(t) for t in texts):
            raise ValueError("a recorded rational is too long or has a decimal exponent past ±10000")
        out.append([Fraction(t) for t in texts])
    return out


def canonical(U: Mat, D: Mat, M: Mat, family: str,
              units: dict[Any, list[int]] | None = None) -> tuple[Mat, dict[tuple[Fraction, ...], tuple[Fraction, ...]]]:
    """(L₀, {e: a} over the active lines) of x ↦ Mx + Σ_i w_i σ(u_i·x). ``units``, when given, is
    filled with the hidden units of each line ``e`` (in order) and the dead ones under ``"dead"``."""
    d = len(M)
    L0 = [row[:] for row in M]
    acc: dict[tuple[Fraction, ...], list[Fraction]] = {}
    groups: dict[Any, list[int]] = {"dead": []} if units is None else units
    groups.setdefault("dead", [])
    for i, u in enumerate(U):
        w = [D[r][i] for r in range(d)]
        if not any(u) or not any(w):
            groups["dead"].append(i)
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
        groups.setdefault(e, []).append(i)
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


def _c_delta(L0: Mat, lines: _Lines, B: tuple[int, ...], delta: dict[int, int]) -> Mat:
    """C_δ = L0 + Σ over the lines l ∉ B with δ_l = 1 of a_l e_lᵀ (exact rationals)."""
    d = len(L0)
    C = [row[:] for row in L0]
    for l, (e, a) in enumerate(lines):
        if l not in B and delta.get(l):
            for r in range(d):
                for c in range(d):
                    C[r][c] += a[r] * e[c]
    return C


def _width(L0: Mat, lines: list[tuple[tuple[Fraction, ...], tuple[Fraction, ...]]], B: tuple[int, ...], delta: dict[int, int]) -> int | None:
    """m + |B| + 2·rank(C_δ N_B), or None when the lines of B are dependent."""
    d = len(L0)
    EB = [list(lines[l][0]) for l in B]
    if B and exact_rank(EB) < len(B):
        return None
    C = _c_delta(L0, lines, B, delta)
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
    groups: dict[Any, list[int]] = {}
    L0, lines_d = canonical(U, D, M, family, groups)
    rec_lines = [(tuple(Fraction(str(v)) for v in ln["e"]), tuple(Fraction(str(v)) for v in ln["a"])) for ln in rec.get("lines", [])]
    _require(ctx, _parse(rec.get("L0", [])) == L0 and dict(rec_lines) == lines_d and len(rec_lines) == len(lines_d), w,
             f"the recorded canonical form is f's, re-derived exactly: m = {len(lines_d)} active lines, L₀ as recorded")
    inactive = sorted(units for e, units in groups.items() if e != "dead" and e not in lines_d)
    _require(ctx, all(list(ln.get("units", [])) == groups[e] for ln, (e, _) in zip(rec["lines"], rec_lines))
             and list(rec.get("dead_units", [])) == groups["dead"]
             and sorted(list(g) for g in rec.get("inactive_lines", [])) == inactive, w,
             "the recorded units of each line, dead units and lines whose units cancel are f's (exact)",
             f"re-derived dead {groups['dead']}, inactive {inactive}")
    return L0, rec_lines, lines_d  # the recorded order (the choice refers to it); equal to the re-derived set


def _whole(ctx: _Ctx, w: str, values: Any, what: str) -> tuple[int, ...]:
    """``values`` (a list) as whole numbers — JSON integers, not 0.5, True or a string: a recorded
    index or count is taken as written or the certificate is rejected (never rounded)."""
    _require(ctx, isinstance(values, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in values), w,
             "every recorded index and count of the canonical form is a whole number", f"{what}: recorded {values!r}")
    return tuple(values)


def _check_choice(ctx: _Ctx, w: str, choice: dict[str, Any], L0: Mat, lines: _Lines) -> None:
    """The recorded choice (B, δ) needs the recorded width."""
    B = _whole(ctx, w, choice.get("B", []), "the choice's lines B")
    delta = dict(enumerate(_whole(ctx, w, choice.get("delta", []), "the choice's flips δ")))
    _require(ctx, all(0 <= l < len(lines) for l in B) and len(set(B)) == len(B), w, "the recorded lines B are active lines")
    need = _width(L0, lines, B, delta)
    rank = None if need is None else (need - len(lines) - len(B)) // 2
    _require(ctx, need is not None and need == choice.get("width") and rank == choice.get("rank")
             and len(choice.get("delta", [])) == len(lines) and set(delta.values()) <= {0, 1} and not any(delta[l] for l in B), w,
             f"the recorded choice (B = {list(B)}, δ) has rank(C_δ P_B) = {choice.get('rank')} and needs m + |B| + 2·rank = "
             f"{choice.get('width')} units (exact rank)", f"re-computed width {need}, rank {rank}")


def _lipschitz(ctx: _Ctx, w: str, block: Block, family: str) -> float:
    """L with |σ(a) − σ(b)| ≤ L|a − b| for all real a, b, derived for this σ: this checker's constant
    (:func:`absorb.verify._symbolic._sigma_lipschitz`: the built-ins' table, a piecewise-linear σ's
    exact max |slope|); else, for the relu family, whose σ is σ(1)·z on z > 0 and −σ(−1)·z on z < 0,
    L = max(|σ(1)|, |σ(−1)|) exactly (rounded up); else, for the even family, a built-in's constant
    when σ is that activation (the same sympy form: a user's expr: of the same function counts too);
    else the witness's rounding cannot be bounded here (an unchecked claim: inf)."""
    L = _sigma_lipschitz(block)
    if L is not None:
        return L
    act = block.activation.expr
    if family == "relu":
        x = _variable(act)
        vals = [exact_value(act, x, sp.Integer(t)) for t in (1, -1)]
        if all(v is not None and v.is_Rational for v in vals):
            return float(max(abs(v) for v in vals)) * (1 + 4 * _U)
    else:
        for name in ("gelu", "gelu_tanh", "silu", "quick_gelu"):
            if block.activation.key == get_activation(name).key:
                return LIPSCHITZ[name]
    ctx.report.unchecked(w, "σ has a Lipschitz constant this checker derives (the witness's rounding is bounded with it)",
                         f"σ = {act}")
    return math.inf


def _choice_of(Up: Mat, Dp: Mat, lines: _Lines, family: str) -> tuple[list[int], list[int]]:
    """The choice (B, δ) the exact witness ``(Up, Dp)`` makes, read off its live units: a line ℓ
    is in B when it holds units u = s·e_ℓ of both signs, δ_ℓ = 1 when all of its units have s < 0.
    In the relu family a line is a ray pair (any s ≠ 0); in the even family it is e_ℓ itself, so
    s = ±1 (2·e_ℓ is another line: σ(2z) is not a multiple of σ(z))."""
    B, delta = [], []
    for l, (e, _a) in enumerate(lines):
        k = next(i for i, v in enumerate(e) if v != 0)
        signs = set()
        for j, u in enumerate(Up):
            if any(Dp[r][j] != 0 for r in range(len(Dp))) and u[k] != 0:
                s = u[k] / e[k]
                if (family == "relu" or abs(s) == 1) and all(ui == s * ei for ui, ei in zip(u, e)):
                    signs.add(s > 0)
        if signs == {True, False}:
            B.append(l)
        delta.append(1 if signs == {False} else 0)
    return B, delta


def _check_absorbable(ctx: _Ctx, w: str, b: dict[str, Any], rec: dict[str, Any], block: Block, choice: Any, N: int,
                      L0: Mat, lines_d: dict, family: str, lines: _Lines) -> tuple[str, Block | None, float]:
    """The exact witness has f's canonical form; its float64 rounding is the recorded witness block."""
    _require(ctx, isinstance(choice, dict) and _whole(ctx, w, [choice.get("width")], "the choice's width")[0] <= N, w,
             f"the recorded choice fits in width {N}")
    if rec.get("min_width") is not None:  # the choice's width is the claim; a recorded minimum is re-derived
        m = len(lines_d)
        bmax = min(block.d, m, N - m)
        if sum(math.comb(m, k) * 2 ** (m - k) for k in range(bmax + 1)) > MAX_CHOICES:
            ctx.report.unchecked(w, "the recorded minimum width is the true one", "too many choices to enumerate")
        else:
            lines_o = list(lines_d.items())
            best = _min_width(L0, lines_o, bmax)
            _require(ctx, rec["min_width"] == best, w, "the recorded minimum width is the true one",
                     f"recorded {rec['min_width']!r}, re-computed {best}")
    wx = rec.get("witness_exact") or {}
    Up, Dp = _parse(wx.get("W_up", [])), _parse(wx.get("W_down", []))
    _require(ctx, len(Up) == N and all(len(r) == block.d for r in Up) and len(Dp) == block.d and all(len(r) == N for r in Dp), w,
             f"the exact witness has {N} units of dimension {block.d}")
    L0w, lines_w = canonical(Up, Dp, [[Fraction(0)] * block.d for _ in range(block.d)], family)
    _require(ctx, L0w == L0 and lines_w == lines_d, w,
             "the exact residual-free witness has f's canonical form, so it equals f (exact rationals)")
    B, delta = _choice_of(Up, Dp, lines, family)
    same = sorted(choice.get("B", [])) == B and list(choice.get("delta", [])) == delta
    # (a pair realising L₀ along a line's direction puts units of both signs on it: the witness then reads as another
    # choice of the same form; the recorded one is re-derived on its own, and the witness is checked in full below)
    extra = set(B) - set(choice.get("B", []))  # (lines the L₀ pairs landed on: their δ reads 0 with both signs)
    rec_delta = list(choice.get("delta", []))
    landed = (set(choice.get("B", [])) <= set(B) and len(rec_delta) == len(delta)
              and all(rec_delta[l] == delta[l] for l in range(len(delta)) if l not in extra))
    _require(ctx, same or landed, w,
             "the recorded choice (B, δ) is the exact witness's: the lines with units of both signs, the lines flipped",
             f"recorded B = {choice.get('B')!r}, δ = {choice.get('delta')!r}; the witness makes B = {B}, δ = {delta}")
    Wu = np.array([[float(v) for v in r] for r in Up]).reshape(N, block.d)
    Wd = np.array([[float(v) for v in r] for r in Dp]).reshape(block.d, N)
    wb = block.replace(W_up=Wu, W_down=Wd, skip=np.zeros((block.d, block.d)), b_up=None, b_down=None, name=block.name + "'")  # (f bias-free: zero arrays, if stored, are no biases)
    from absorb.verify._theorems import check_witness_block

    check_witness_block(ctx, w, b.get("witness") or {}, wb, "the float64 rounding of the exact witness")
    # rounding the exact witness to float64: each entry moves by ≤ u relatively; σ is L-Lipschitz
    allowed = 4 * _U * float(np.sum(np.linalg.norm(Wd, axis=0) * np.linalg.norm(Wu, axis=1))) * _lipschitz(ctx, w, block, family)
    # |f − g|_∞ ≤ ‖f − g‖₂ ≤ allowed·‖x‖₂ ≤ allowed·√d·|x|_∞, and that ε is within the tolerance plus the
    # rounding allowance (the guarantee an absorbable verdict states); the samples are a second check
    eps = allowed * math.sqrt(block.d) * (1 + 8 * _U)
    allowance = rounding_allowance(N)
    _require(ctx, eps <= ctx.tol + allowance, w,
             f"the float64 witness's error is within τ + {allowance:.2g} per unit of |x|∞ (√d times its ‖·‖₂ bound: the "
             "rounding of the exact witness's weights through σ's Lipschitz constant)", f"ε ≤ {eps:.3g}")
    prove(wb, eps, 0.0)
    return "absorbable", wb, allowed


def _near_parts(L0: Mat, lines: _Lines, B: tuple[int, ...], delta: dict[int, int]) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """(C_δ in float, V, R = C_δ P_B in float): R exact in rationals (P_B = I − E_B(E_BᵀE_B)⁻¹E_Bᵀ by
    exact elimination), then rounded once; V = C_δ E_B (E_BᵀE_B)⁻¹ in float (it only builds the witness)."""
    d = len(L0)
    C = _c_delta(L0, lines, B, delta)
    Cf = np.array([[float(v) for v in row] for row in C]).reshape(d, d)
    if not B:
        return Cf, None, Cf
    N = _nullspace([list(lines[l][0]) for l in B], d)  # d×k, exact; P_B = N (NᵀN)⁻¹ Nᵀ
    k = len(N[0]) if N and N[0] else 0
    if k == 0:
        R = [[Fraction(0)] * d for _ in range(d)]
    else:
        G = [[sum((N[t][i] * N[t][j] for t in range(d)), Fraction(0)) for j in range(k)] for i in range(k)]
        Gi = _inverse(G)
        CN = [[sum((C[r][t] * N[t][j] for t in range(d)), Fraction(0)) for j in range(k)] for r in range(d)]
        CNG = [[sum((CN[r][t] * Gi[t][j] for t in range(k)), Fraction(0)) for j in range(k)] for r in range(d)]
        R = [[sum((CNG[r][t] * N[c][t] for t in range(k)), Fraction(0)) for c in range(d)] for r in range(d)]
    Eb = np.array([[float(v) for v in lines[l][0]] for l in B]).T.reshape(d, len(B))
    V = Cf @ Eb @ np.linalg.inv(Eb.T @ Eb)
    return Cf, V, np.array([[float(v) for v in row] for row in R]).reshape(d, d)


def _tail(s: np.ndarray, p: int, R: np.ndarray) -> tuple[float, float]:
    """(the Frobenius distance of R to the matrices of rank ≤ p computed from R's singular values
    ``s``, its rounding margin). dist(·, rank ≤ p) is 1-Lipschitz in ‖·‖_F: rounding the exact R to
    float moves it by ≤ u‖R‖_F; the SVD is backward stable (the computed values are exact for
    R + ΔR, ‖ΔR‖_F ≤ 20·d²·u‖R‖_F); the sum of squares and the square root add ≤ (d + 2)u relatively."""
    d = R.shape[0]
    tail = float(np.sqrt(np.sum(s[p:] ** 2)))
    return tail, (1 + 20 * d * d) * _U * float(np.linalg.norm(R)) * 1.01 + (d + 2) * _U * tail + 2.0**-1000


def _merge_cost(ctx: _Ctx, w: str, block: Block, family: str, lines: _Lines) -> tuple[float, int, int] | None:
    """(an estimate from below of the least change of f per unit of |x|∞ that merges two lines into one, the pair):
    the midpoint halves moving one line onto the other, and the change is read in ℓ2. ReLU: the smaller |a|∞·|e|₂ times
    sin θ/4 (sin²θ = 1 − (e·e')²/(|e|²|e'|²), exact in rationals). The even family (h = σ − z/2 even, Lipschitz ≤ L + 1/2):
    with δ = e ∓ e' and the midpoint c = (e ± e')/2, (L + 1/2)·|δ − δ_c|₂/4 + |δ_c|₂²/(16|c|₂), δ_c = (δ·c/|c|²)·c — two
    parallel rows u, (1 + η)u merge at second order — times the smaller |a|∞."""
    m = len(lines)
    if m < 2:
        return None
    tops = [max(abs(float(v)) for v in a) for _, a in lines]
    lip = None if family == "relu" else _lipschitz(ctx, w, block, family) + 0.5
    if lip is not None and not math.isfinite(lip):
        return None
    sq = [sum((v * v for v in e), Fraction(0)) for e, _ in lines]
    best: tuple[float, int, int] | None = None
    for i, j in itertools.combinations(range(m), 2):
        ei, ej = lines[i][0], lines[j][0]
        if family == "relu":
            dot = sum((a * b for a, b in zip(ei, ej)), Fraction(0))
            sin2 = 1 - dot * dot / (sq[i] * sq[j])  # ≥ 0 exactly
            cost = min(tops[i] * math.sqrt(float(sq[i])), tops[j] * math.sqrt(float(sq[j]))) * math.sqrt(float(sin2)) / 4
        else:
            cost = math.inf
            for sg in (1, -1):
                dl = [a - sg * b for a, b in zip(ei, ej)]
                c = [(a + sg * b) / 2 for a, b in zip(ei, ej)]
                cc = sum((v * v for v in c), Fraction(0))
                if cc == 0:
                    continue
                t = sum((a * b for a, b in zip(dl, c)), Fraction(0)) / cc
                par2 = t * t * cc  # |δ_c|²
                perp2 = sum((v * v for v in dl), Fraction(0)) - par2
                cost = min(cost, lip * math.sqrt(float(perp2)) / 4 + float(par2) / (16 * math.sqrt(float(cc))))
            cost *= min(tops[i], tops[j])
        cost *= 1 - 1e-9  # (an estimate: read low, so a pair at the edge is reported)
        if best is None or cost < best[0]:
            best = (cost, i, j)
    return best


def _robust(ctx: _Ctx, w: str, block: Block, family: str, N: int, L0: Mat, lines: _Lines, bmax: int) -> None:
    """'Not absorbable' at the tolerance, as the verdict claims: no choice's linear part is within
    τ·s of the rank it is allowed, no line's coefficient is within τ·s of zero (s = max(‖M‖_F, 1)), no two lines
    nearly coincide (|cos| ≥ 1 − 10⁻¹⁰, or ±u within 10⁻¹⁰ relatively): otherwise a block within the
    tolerance might fit, and the answer is unknown."""
    m, d = len(lines), block.d
    Mf = np.asarray(block.M, dtype=np.float64)
    top = float(np.max(np.abs(Mf))) if Mf.size else 0.0
    # ‖M‖_F from M scaled by its largest entry (no square under- or overflows; a tiny M once gave τ = 0)
    mn = top * float(np.linalg.norm(Mf / top)) * (1 + (d * d + 4) * _U) if top > 0 else 0.0
    # the scale is ‖M‖_F but at least 1: a witness's error is measured per unit of |x| (and of |f(x)|), so
    # with M = 0 or tiny a choice 10⁻¹² from fitting is within the tolerance however small ‖M‖ is
    # and at least √d·(τ + allowance): a block within the tolerance has its dropped linear part R (or line) at
    # ‖R‖∞ ≤ τ + allowance, and ‖R‖∞ ≥ ‖R‖_F/√d (|a|∞‖e‖₁ ≥ ‖a‖₂‖e‖₂/√d for a line)
    # — times 1 + K, K ≥ f's gain at infinity (σ(z)/z → 1, 0): the tolerance is relative to |f(x)|∞ + |x|∞ too
    from absorb.verify._infeasible import cone_gain, gain_at_infinity

    K = gain_at_infinity(block, 1.0, (1.0, 0.0))
    K = min(K, cone_gain(block)) if math.sqrt(d) * (ctx.tol + rounding_allowance(N)) * (1 + K) > 1e-3 else K
    tau = max(ctx.tol * max(mn, 1.0), math.sqrt(d) * (ctx.tol + rounding_allowance(N)) * (1 + K) * (1 + 2.0**-40))
    es = [np.array([float(v) for v in e]) for e, _ in lines]
    small = [l for l, (e, a) in enumerate(lines) if float(np.linalg.norm([float(v) for v in a])) * float(np.linalg.norm(es[l])) * (1 - 4 * d * _U) <= tau]
    _require(ctx, not small, w, f"no line's coefficient is within max(τ·max(‖M‖_F, 1), √d·(τ + allowance)·(1 + K)) = {tau:.3g} of zero",
             f"lines {small}")
    near = []
    sq = [sum((v * v for v in e), Fraction(0)) for e, _ in lines]  # (in exact rationals: no norm under- or overflows)
    for i, j in itertools.combinations(range(m), 2):
        ei, ej = lines[i][0], lines[j][0]
        if family == "relu":
            dot = sum((a * b for a, b in zip(ei, ej)), Fraction(0))
            close = dot * dot >= Fraction(1 - 1e-10) ** 2 * sq[i] * sq[j]  # |cos| ≥ 1 − 10⁻¹⁰
        else:
            close = sum(((a - b) ** 2 for a, b in zip(ei, ej)), Fraction(0)) <= Fraction(1e-10) ** 2 * sq[i]
        if close:
            near.append((i, j))
    _require(ctx, not near, w, "no two distinct lines nearly coincide (relative 10⁻¹⁰)", f"lines {near}")
    merge = _merge_cost(ctx, w, block, family, lines)
    reach = 4 * (ctx.tol + rounding_allowance(N)) * (1 + K)
    if merge is not None and merge[0] <= reach:
        ctx.report.unchecked(w, "no two lines might merge within 4× the tolerance (a block with them merged may fit)",
                             f"lines {merge[1]} and {merge[2]}: a merge may change f by as little as {merge[0]:.3g}·|x|∞, "
                             f"4·(τ + allowance)·(1 + K) = {reach:.3g}")
    if m > N:
        return
    worst = math.inf
    for k in range(bmax + 1):
        p = (N - m - k) // 2
        for B in itertools.combinations(range(m), k):
            if k and exact_rank([list(lines[l][0]) for l in B]) < k:
                continue
            rest = [l for l in range(m) if l not in B]
            for bits in itertools.product((0, 1), repeat=len(rest)):
                _, _, R = _near_parts(L0, lines, B, dict(zip(rest, bits)))
                tail, margin = _tail(np.linalg.svd(R, compute_uv=False), p, R)
                worst = min(worst, tail - margin)
    _require(ctx, worst > tau, w, f"every choice's linear part is farther than max(τ·max(‖M‖_F, 1), √d·(τ + allowance)·(1 + K)) = {tau:.3g} "
             "from the rank its width allows",
             f"the closest is within {worst:.3g}")


def _inverse(G: Mat) -> Mat:
    """The inverse of a nonsingular square rational matrix (Gauss–Jordan, exact)."""
    k = len(G)
    A = [row[:] + [Fraction(int(i == j)) for j in range(k)] for i, row in enumerate(G)]
    for c in range(k):
        p = next(i for i in range(c, k) if A[i][c] != 0)
        A[c], A[p] = A[p], A[c]
        A[c] = [x / A[c][c] for x in A[c]]
        for i in range(k):
            if i != c and A[i][c] != 0:
                f = A[i][c]
                A[i] = [x - f * y for x, y in zip(A[i], A[c])]
    return [row[k:] for row in A]


def _check_near(ctx: _Ctx, w: str, b: dict[str, Any], near: Any, block: Block, N: int, L0: Mat,
                lines: _Lines, family: str) -> tuple[str, Block | None, float]:
    """Absorbable *within the tolerance*: the recorded choice (B, δ, p) fits in width N, the
    linear part R = C_δ P_B is within τ·max(‖M‖_F, 1) of rank ≤ p (Frobenius, re-derived with a rounding
    account), and the checker's own width-N block — the units of the choice with the truncated SVD
    of R for the antipodal pairs — equals f up to that distance (evaluated against f)."""
    _require(ctx, isinstance(near, dict), w, "the within-tolerance choice is an object")
    d, m = block.d, len(lines)
    B = _whole(ctx, w, near.get("B", []), "the within-tolerance lines B")
    dl = list(_whole(ctx, w, near.get("delta", []), "the within-tolerance flips δ"))
    p = near.get("rank")
    _require(ctx, all(0 <= l < m for l in B) and len(set(B)) == len(B) and len(dl) == m and set(dl) <= {0, 1}
             and isinstance(p, int) and not isinstance(p, bool) and p >= 0 and not any(dl[l] for l in B), w,
             "the within-tolerance choice names active lines B, a flip δ ∈ {0,1} per line (0 on B) and a rank p ≥ 0")
    _require(ctx, not B or exact_rank([list(lines[l][0]) for l in B]) == len(B), w, "the lines of B are independent (exact rank)")
    width = m + len(B) + 2 * p
    _require(ctx, near.get("width") == width and width <= N, w,
             f"the within-tolerance choice needs m + |B| + 2p = {width} ≤ {N} units", f"recorded {near.get('width')!r}")
    delta = dict(enumerate(dl))
    Cf, V, R = _near_parts(L0, lines, B, delta)
    Ul, s, Vt = np.linalg.svd(R)
    tail, margin = _tail(s, p, R)
    mn = max(float(np.linalg.norm(block.M)) * (1 - (d * d + 2) * _U), 1.0)  # (the scale is ‖M‖_F, at least 1: as _robust's)
    dist_hi = (tail + margin) / mn if mn > 0 else math.inf
    from absorb.verify._infeasible import gain_at_infinity

    K = gain_at_infinity(block, 1.0, (1.0, 0.0)) * (1 + 1e-9)
    bar = max(ctx.tol, math.sqrt(d) * (ctx.tol + rounding_allowance(N)) * (1 + K) / mn * (1 + 2.0**-20) * (1 + 1e-9))  # (≥ the producer's)
    _require(ctx, dist_hi <= bar, w, f"C_δ P_B is near rank ≤ {p}: relative distance ≤ {dist_hi:.3g} ≤ max(τ, √d·(τ + allowance)/max(‖M‖_F, 1))"
             f" = {bar:.3g}",
             f"tail of the singular values {tail:.3g}, rounding margin {margin:.3g}")
    wit = b.get("witness") or {}
    _require(ctx, "distance" not in near and wit.get("residual") is None and wit.get("exact") is False and wit.get("S") is None
             and "block" not in wit, w, "the within-tolerance record claims no distance (re-derived here), no residual, no exactness, no S "
             "and no float block to hash (the checker builds its own)")
    ups: list[np.ndarray] = []
    downs: list[np.ndarray] = []
    for l, (e, a) in enumerate(lines):
        ef, af = np.array([float(v) for v in e]), np.array([float(v) for v in a])
        if l in B:
            assert V is not None
            v = V[:, B.index(l)]
            ups += [ef, -ef]
            downs += [af + v, -v]
        else:
            ups.append(-ef if dl[l] else ef)
            downs.append(af)
    for j in range(p):
        ups += [Vt[j], -Vt[j]]
        downs += [Ul[:, j] * s[j], -Ul[:, j] * s[j]]
    Wu, Wd = np.zeros((N, d)), np.zeros((d, N))
    if ups:
        Wu[: len(ups)] = np.array(ups)
        Wd[:, : len(ups)] = np.array(downs).T
    wb = block.replace(W_up=Wu, W_down=Wd, skip=np.zeros((d, d)), b_up=None, b_down=None, name=block.name + "'")
    # f − g = (R − R_p)x + the float error of V (‖(C_δ − V E_Bᵀ) − R‖) + rounding of the units; generous factor 4
    Eb = np.array([[float(x) for x in lines[l][0]] for l in B]).reshape(len(B), d)
    VE = V @ Eb if B else np.zeros((d, d))
    v_err = float(np.linalg.norm(Cf - VE - R)) if B else 0.0
    units = 4 * _U * float(np.sum(np.linalg.norm(Wd, axis=0) * np.linalg.norm(Wu, axis=1))) * _lipschitz(ctx, w, block, family)
    allowed = tail + margin + 4 * v_err + units
    # The guarantee is absolute in |x|∞ (not relative to ‖M‖), and that ε must be within the tolerance plus the
    # rounding allowance; the samples are a second check. With the units' exact lines and coefficients, the pairs
    # make f − g = A x, A = C_δ − V E_Bᵀ − Σ_{j<p} s_j u_j v_jᵀ (V, u_j, s_j, v_j the floats the block holds): so
    # |f − g|∞ ≤ ‖A‖_∞|x|∞ (largest absolute row sum), A's float evaluation bounded entrywise (each of its
    # ≤ |B| + p + 2 products and sums, the roundings of C_δ and E_B, generously doubled); the units' own rounding
    # (through σ's Lipschitz constant, a ‖·‖₂ bound) adds √d times its part of ``allowed``.
    USV = (Ul[:, :p] * s[:p]) @ Vt[:p] if p else np.zeros((d, d))
    A = Cf - VE - USV
    absVE = np.abs(V) @ np.abs(Eb) if B else np.zeros((d, d))
    absUSV = (np.abs(Ul[:, :p]) * s[:p]) @ np.abs(Vt[:p]) if p else np.zeros((d, d))
    err = 2 * (len(B) + p + 8) * _U * (np.abs(Cf) + absVE + absUSV)
    lin_inf = float(np.max(np.sum(np.abs(A) + err, axis=1))) * (1 + (d + 4) * _U)
    eps = min(allowed * math.sqrt(d), lin_inf + units * math.sqrt(d)) * (1 + 8 * _U)
    allowance = rounding_allowance(N)
    _require(ctx, eps <= ctx.tol + allowance, w,
             f"the within-tolerance witness's error is within τ + {allowance:.2g} per unit of |x|∞ (the lesser of √d times its "
             "‖·‖₂ bound — the dropped singular values, the SVD's and V's rounding, the units' rounding — and the largest "
             "row sum of its linear part, rounding bounded, plus √d times the units' rounding)", f"ε ≤ {eps:.3g}")
    prove(wb, eps, 0.0)
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
    _require(ctx, rec_min is None if best == math.inf else rec_min in (None, best), w, "the recorded minimum width is the true one",
             f"recorded {rec_min!r}, re-computed {best}")
    _robust(ctx, w, block, family, N, L0, lines, min(d, m, max(N - m, 0)))
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
    N = _whole(ctx, w, [rec.get("width")], "the width")[0]
    _require(ctx, N == block.n, w, f"the width is the block's own, n = {block.n}", f"recorded {rec.get('width')!r}")
    verdict = b.get("verdict")
    choice = rec.get("choice")
    if choice is not None:
        _check_choice(ctx, w, choice, L0, lines)
    if verdict == "absorbable" and rec.get("near") is not None:
        _require(ctx, choice is None and rec.get("witness_exact") is None and rec.get("min_width") is None, w,
                 "a within-tolerance record claims no exact choice, exact witness or minimum width")
        return _check_near(ctx, w, b, rec["near"], block, N, L0, lines, family)
    if verdict == "absorbable":
        return _check_absorbable(ctx, w, b, rec, block, choice, N, L0, lines_d, family, lines)
    if verdict != "not_absorbable":
        return "unknown", None, 0.0
    return _check_not_absorbable(ctx, w, rec, block, family, N, L0, lines)
