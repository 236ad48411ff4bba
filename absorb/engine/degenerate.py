"""A complete decision for bias-free ungated ReLU blocks of any weights, and the analogue
for GELU / SiLU (proof in ``docs/degenerate.md``) **(beyond)**.

Result 5 of the paper needs nondegenerate weights and ``d ≥ 2``. This module drops those
hypotheses. Write ``f(x) = M x + W_down σ(W_up x)`` in its *canonical form*

* ReLU (``family = "relu"``): group the live units (``u_i ≠ 0``, ``w_i ≠ 0``) by line, ``u_i = s_i e_ℓ``
  with ``e_ℓ`` the row scaled so that its first nonzero entry is 1. Since
  ``ReLU(−z) = ReLU(z) − z``, ``f(x) = L₀ x + Σ_ℓ a_ℓ ReLU(e_ℓ·x)`` with
  ``a_ℓ = Σ_{i∈ℓ} |s_i| w_i`` and ``L₀ = M + Σ_{s_i<0} w_i u_iᵀ``.
* GELU, GELU-tanh, SiLU, quick-GELU (``family = "even"``): ``σ(z) = z/2 + h(z)`` with ``h``
  even, so units pair by ``±u`` *exactly* (no scaling symmetry): ``f(x) = L x + Σ_c a_c h(e_c·x)``
  with ``L = M + ½ W_down W_up`` and ``a_c = Σ_{i∈c} w_i``; we use ``L₀ = L − ½ Σ_c a_c e_cᵀ``.

Active lines are those with ``a_ℓ ≠ 0``; there are ``m`` of them. The canonical form of a
function is unique (kink hyperplanes for ReLU; linear independence of the even parts
for the others), so a residual-free block of width ``N`` equals ``f`` iff it has the same
canonical form. Counting its units line by line gives the criterion (Theorem D):

    f is a residual-free block of width N  ⇔  min over (B, δ) of  m + |B| + 2·rank(C_δ P_B) ≤ N,

where ``B`` is a set of active lines with linearly independent ``e_ℓ`` (each taking two units),
``δ ∈ {0,1}`` on the other active lines (one unit each, pointing along ``e_ℓ`` or ``−e_ℓ``),
``C_δ = L₀ + Σ_{ℓ∉B} δ_ℓ a_ℓ e_ℓᵀ`` and ``P_B`` the projector onto ``span(e_ℓ : ℓ ∈ B)^⊥``; the
remaining units form antipodal pairs ``y ReLU(z·x) − y ReLU(−z·x) = y zᵀx`` that realise the
rank. With ``N = n`` and nothing degenerate (``m = n``) the only choice is ``B = ∅`` and
``rank = 0``: result 5's index-set condition again.

Everything is exact: stored floats are dyadic rationals, the canonical form is computed in
``fractions.Fraction``, each candidate's rank is bounded below in floating point with a
rigorous rounding bound (Weyl's inequality), and the ranks that decide the answer are
recomputed exactly. ``absorbable`` comes with the constructed block (width ``N``), checked
by evaluation against ``f`` and, exactly, by comparing canonical forms. ``not_absorbable``
comes with the exact minimum (or the proof that it exceeds ``N``). Past the size or
enumeration budget the answer is ``unknown``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from absorb.engine._exact import (
    _T,
    Mat,
    Q,
    _add,
    _fr,
    _inverse,
    _mm,
    _nullspace,
    _outer,
    _rank,
    _rref,
    _scale,
    _to_float,
    _zeros,
)
from absorb.engine.hypotheses import COLLINEAR_TAU
from absorb.engine.verdict import Verdict, Witness
from absorb.engine.witness import (
    asymptotic_gain,
    dead_cone_gain,
    eval_failure,
    eval_threshold,
    evaluation_error,
    pl_bound,
    rounded_construction_bound,
    sigma_lipschitz,
    unit_difference_bound,
)
from absorb.model.activations import Activation, get_activation, is_builtin
from absorb.model.block import Block
from absorb.rigorous import SAFE_EXPONENT, magnitudes_ok
from absorb.symbolic import facts
from absorb.symbolic._core import get as _analysis  # the property functions' cache, without importing sympy

Family = Literal["relu", "even"]

_EPS = float(np.finfo(float).eps)
_EVEN = ("gelu", "gelu_tanh", "silu", "quick_gelu")
"""σ = z/2 + h(z), h even, real-analytic and not a polynomial: the uniqueness lemma of
docs/degenerate.md (§2) holds for these; other σ are not decided here."""

DEFAULT_BUDGET = 1 << 17
"""Most (B, δ) candidates enumerated (each a small batched SVD)."""
MAX_EXACT_WORK = 400_000
"""Largest n·d (and d²·m) handled in exact rational arithmetic."""
MAX_EXACT_CHECKS = 2000
"""Most candidates whose rank is recomputed exactly."""


# ---- canonical form --------------------------------------------------------------------
@dataclass(frozen=True)
class Line:
    """One active line: ``e`` (first nonzero entry 1 for ReLU; ±u oriented likewise for the
    even family), its coefficient ``a ≠ 0``, and the hidden units on it with their scales."""

    e: tuple[Fraction, ...]
    a: tuple[Fraction, ...]
    units: tuple[int, ...]
    scales: tuple[Fraction, ...]


@dataclass(frozen=True)
class CanonicalForm:
    """``f(x) = L₀ x + Σ_ℓ a_ℓ φ(e_ℓ·x)`` with φ = ReLU (family relu) or φ = σ (family even:
    then ``a σ(e·x) = a h(e·x) + ½ a eᵀx`` and ``L₀`` excludes that ½ term)."""

    family: Family
    d: int
    n: int
    L0: Mat
    lines: tuple[Line, ...]
    inactive: tuple[tuple[int, ...], ...]  # units on lines whose coefficients cancel (a = 0)
    dead: tuple[int, ...]  # u_i = 0 or w_i = 0

    @property
    def m(self) -> int:
        return len(self.lines)

    def key(self) -> tuple[Any, ...]:
        """Equal keys ⇔ equal functions (uniqueness lemma, docs/degenerate.md §2)."""
        return (self.family, tuple(map(tuple, self.L0)), frozenset((ln.e, ln.a) for ln in self.lines))

    def summary(self) -> dict[str, Any]:
        return {"family": self.family, "active_lines": self.m, "dead_units": list(self.dead),
                "inactive_lines": [list(g) for g in self.inactive],
                "lines": [{"units": list(ln.units), "direction": [float(v) for v in ln.e]} for ln in self.lines]}


def is_relu(act: Activation) -> bool:
    """σ equals ReLU at every real z: the built-in, or a user's expression (``(x + Abs(x))/2``)
    proved positively homogeneous of degree 1 (σ(tz) = tσ(z) for t > 0, σ(0) = 0) with σ(1) = 1
    and σ(−1) = 0 exactly — then σ(z) = z·σ(1) = z for z > 0 and σ(z) = |z|·σ(−1) = 0 for z < 0.
    The built-ins are told apart by their keys (read without sympy)."""
    if act.key == get_activation("relu").key:
        return True
    if is_builtin(act):
        return False
    hom = _analysis(act, "homogeneity")
    if not hom.proved or facts.rational(hom.value, "k") != 1:  # (read without sympy: σ = z² decides without it)
        return False
    import sympy as sp

    e = act.expr
    if len(e.free_symbols) != 1:
        return False
    (z,) = e.free_symbols
    return all(sp.simplify(e.subs(z, t) - v) == 0 for t, v in ((1, 1), (-1, 0)))


def family_of(block: Block) -> Family | None:
    """``relu`` or ``even`` when σ is one of the activations the uniqueness lemma covers."""
    if block.gated:
        return None
    if is_relu(block.activation):
        return "relu"
    # srepr keys: equal exactly when the sympy forms are, and read without sympy
    e = block.activation.key
    if any(e == get_activation(n).key for n in _EVEN):
        return "even"
    return None


def _canonical(U: Mat, D: Mat, M: Mat, family: Family) -> CanonicalForm:
    """Canonical form from exact weights (U: n×d rows u_i, D: d×n, M: d×d)."""
    n, d = len(U), len(M)
    half = Q(1, 2)
    groups: dict[tuple[Fraction, ...], list[tuple[int, Fraction]]] = {}
    dead = []
    L0 = [row[:] for row in M]
    for i in range(n):
        u = U[i]
        w = [D[r][i] for r in range(d)]
        if not any(u) or not any(w):
            dead.append(i)
            continue
        j0 = next(j for j, v in enumerate(u) if v != 0)
        if family == "relu":
            s = u[j0]
            e = tuple(v / s for v in u)
            if s < 0:
                L0 = _add(L0, _outer(w, u))
        else:
            s = Q(1) if u[j0] > 0 else Q(-1)
            e = tuple(v * s for v in u)
            L0 = _add(L0, _scale(_outer(w, u), half))
        groups.setdefault(e, []).append((i, s))
    lines, inactive = [], []
    for e, members in groups.items():
        a = [Q(0)] * d
        for i, s in members:
            c = abs(s) if family == "relu" else Q(1)
            a = [x + c * D[r][i] for r, x in enumerate(a)]
        if not any(a):
            inactive.append(tuple(i for i, _ in members))
            continue
        lines.append(Line(e=e, a=tuple(a), units=tuple(i for i, _ in members), scales=tuple(s for _, s in members)))
        if family == "even":
            L0 = _add(L0, _scale(_outer(a, list(e)), -half))
    return CanonicalForm(family, d, n, L0, tuple(lines), tuple(inactive), tuple(dead))


def canonical_form(block: Block) -> CanonicalForm:
    """The exact canonical form of a bias-free ungated block with a supported σ."""
    fam = family_of(block)
    if fam is None or block.has_bias:
        raise ValueError("canonical_form needs a bias-free ungated block with σ = ReLU, GELU, GELU-tanh, SiLU or quick-GELU")
    return _canonical(_fr(block.W_up), _fr(block.W_down), _fr(block.M), fam)


# ---- the search over (B, δ) -------------------------------------------------------------
@dataclass(frozen=True)
class Choice:
    """Lines ``B`` with two units, ``delta`` (0/1 per active line; 0 on B), exact rank."""

    B: tuple[int, ...]
    delta: tuple[int, ...]
    rank: int
    value: int  # m + |B| + 2·rank: the width this choice needs


@dataclass(frozen=True)
class SearchOutcome:
    status: Literal["found", "fits", "none", "budget"]
    cap: int
    best: Choice | None = None  # the minimum-width choice (found); fits: a choice within cap, not proved minimal
    candidates: int = 0
    exact_checks: int = 0
    min_distance: float | None = None  # float distance of the linear parts to feasibility at cap
    near: Choice | None = None  # the choice attaining min_distance (rank: the ⌊(cap − m − |B|)/2⌋ allowed)
    reason: str = ""


def _count(m: int, bmax: int) -> int:
    return sum(math.comb(m, b) * 2 ** (m - b) for b in range(bmax + 1))


def search(cf: CanonicalForm, *, cap: int, budget: int = DEFAULT_BUDGET, scale: float = 1.0) -> SearchOutcome:
    """Minimise ``m + |B| + 2·rank(C_δ P_B)`` over the choices with ``m + |B| ≤ cap``.

    Returns ``found`` with the exact minimiser when the minimum is ≤ cap, ``none`` when it
    is proved > cap, ``budget`` when the enumeration or the exact checks would exceed the
    budget. ``min_distance`` is the smallest Frobenius distance (relative to ``scale``)
    from ``C_δ P_B`` to the matrices of rank ≤ ⌊(cap − m − |B|)/2⌋: how far the linear parts
    are from feasibility (used to flag ill-conditioned ``none`` answers)."""
    m, d = cf.m, cf.d
    if cap < m:
        return SearchOutcome("none", cap, reason=f"f has {m} active lines, each needing its own hidden unit, but the width is {cap}")
    bmax = min(d, m, cap - m)
    total = _count(m, bmax)
    exact_ok = d * d * max(m, 1) <= MAX_EXACT_WORK
    if total > budget:
        why = f"{total} choices (B, δ) exceed the budget of {budget}"
        r0 = _rank(cf.L0) if exact_ok else None
        if r0 is not None and m + 2 * r0 <= cap:  # B = ∅, δ = 0 needs no search: each line's unit kept, rank(L₀) antipodal pairs
            kept = Choice(B=(), delta=(0,) * m, rank=r0, value=m + 2 * r0)
            return SearchOutcome("fits", cap, best=kept, candidates=1, reason=f"{why}; the choice B = ∅, δ = 0 (each line's "
                                 f"unit kept, {r0} antipodal pairs for the linear part L₀) needs {kept.value} units")
        return SearchOutcome("budget", cap, candidates=total, reason=why)
    if not exact_ok:
        return SearchOutcome("budget", cap, reason=f"d²·m = {d * d * m} is too large for exact arithmetic")
    E = [list(ln.e) for ln in cf.lines]
    A = [list(ln.a) for ln in cf.lines]
    records: list[_Record] = []
    min_dist = math.inf
    near: Choice | None = None
    n_cand = 0
    for b in range(bmax + 1):
        for B in itertools.combinations(range(m), b):
            EB = [E[l] for l in B]
            if b and _rank(EB) < b:
                continue  # dominated by an independent subset with the same span
            N = _nullspace(EB, d)  # d×k
            if not (N and N[0]):
                records.append((B, (), None, [], np.zeros((1, 0), dtype=int), np.array([m + b]), np.array([0])))
                min_dist = 0.0
                n_cand += 1
                continue
            rec = _screen(cf, E, A, B, N)
            records.append(rec)
            n_cand += len(rec[4])
            p = (cap - m - b) // 2
            if p >= 0:
                dist, i_min = _distance(cf, E, A, rec, N, p)
                if dist / scale < min_dist:
                    min_dist = dist / scale
                    dl = [0] * m
                    for j, l in enumerate(rec[1]):
                        dl[l] = int(rec[4][i_min, j])
                    near = Choice(B=tuple(B), delta=tuple(dl), rank=p, value=m + b + 2 * p)
    resolved = _resolve(records, m)
    if isinstance(resolved, int):
        return SearchOutcome("budget", cap, candidates=n_cand, exact_checks=resolved,
                             reason=f"more than {MAX_EXACT_CHECKS} ranks needed exact recomputation")
    best, checks = resolved
    dist = None if min_dist == math.inf else min_dist
    if best is not None and best.value <= cap:
        return SearchOutcome("found", cap, best=best, candidates=n_cand, exact_checks=checks, min_distance=dist, near=near)
    return SearchOutcome("none", cap, best=best, candidates=n_cand, exact_checks=checks, min_distance=dist, near=near,
                         reason=f"every one of the {n_cand} choices (B, δ) needs width > {cap}")


# One B's screening: (B, rel, base, terms, bits, value_lo, rho_lo) — the lines ``rel`` outside B
# whose flip changes C_δ P_B, the exact base L0·N and flip terms, every δ on rel as a row of
# ``bits``, and per δ the rigorous float lower bounds on the rank and on the width.
_Record = tuple[tuple[int, ...], tuple[int, ...], "Mat | None", list[Mat], np.ndarray, np.ndarray, np.ndarray]


def _screen(cf: CanonicalForm, E: list[list[Fraction]], A: list[list[Fraction]], B: tuple[int, ...], N: Mat) -> _Record:
    """Float lower bounds on rank(C_δ P_B) for every δ on the lines that matter, with their exact terms."""
    m, d = cf.m, cf.d
    k = len(N[0])
    g = {l: _mm([E[l]], N)[0] for l in range(m) if l not in B}
    rel = tuple(l for l, gl in g.items() if any(gl))
    base = _mm(cf.L0, N)
    terms = [_outer(A[l], g[l]) for l in rel]
    bf = _to_float(base, (d, k))
    tf = np.array([_to_float(t, (d, k)) for t in terms]).reshape(len(rel), d, k)
    R = len(rel)
    bits = ((np.arange(2 ** R)[:, None] >> np.arange(R)) & 1).astype(float)
    X = bf[None] + np.tensordot(bits, tf, axes=1)
    sv = np.linalg.svd(X, compute_uv=False)
    S = np.abs(bf) + np.abs(tf).sum(axis=0)
    dn = 1.01 * (R + 2) * _EPS * float(np.linalg.norm(S))
    thr = dn + 10 * max(d, k) * _EPS * sv[:, 0]
    rho_lo = (sv > thr[:, None]).sum(axis=1)
    return (B, rel, base, terms, bits.astype(int), m + len(B) + 2 * rho_lo, rho_lo)


def _distance(cf: CanonicalForm, E: list[list[Fraction]], A: list[list[Fraction]], rec: _Record, N: Mat,
              p: int) -> tuple[float, int]:
    """(smallest distance of C_δ P_B to rank ≤ p over the δ of ``rec``, the row of ``bits`` attaining it),
    with an orthonormal basis of the same subspace."""
    d = cf.d
    k = len(N[0])
    rel, bits = rec[1], rec[4].astype(float)
    R = len(rel)
    Qb, _ = np.linalg.qr(_to_float(N, (d, k)))
    L0f = _to_float(cf.L0, (d, d))
    Xq = L0f @ Qb + np.tensordot(bits, np.array([np.outer(np.array([float(v) for v in A[l]]), np.array([float(v) for v in E[l]]) @ Qb) for l in rel]).reshape(R, d, k), axes=1)
    svq = np.linalg.svd(Xq, compute_uv=False)
    tail = np.sqrt((svq[:, p:] ** 2).sum(axis=1)) if p < svq.shape[1] else np.zeros(len(svq))
    i_min = int(tail.argmin())
    return float(tail[i_min]), i_min


def _resolve(records: list[_Record], m: int) -> tuple[Choice | None, int] | int:
    """Exact resolution, in increasing order of the rigorous lower bound: (the minimiser, exact
    checks made), or the number of checks when more than MAX_EXACT_CHECKS would be needed."""
    order = sorted(((int(v), ri, ci) for ri, rec in enumerate(records) for ci, v in enumerate(rec[5])), key=lambda t: t[0])
    best: Choice | None = None
    checks = 0
    for v_lo, ri, ci in order:
        if best is not None and v_lo >= best.value:
            break
        B, rel, base, terms, bits, _, rho_lo = records[ri]
        delta_full = [0] * m
        for j, l in enumerate(rel):
            delta_full[l] = int(bits[ci, j])
        if base is None:
            rho = 0
        else:
            X = base
            for j in range(len(rel)):
                if bits[ci, j]:
                    X = _add(X, terms[j])
            checks += 1
            if checks > MAX_EXACT_CHECKS:
                return checks
            rho = _rank(X)
            assert rho >= int(rho_lo[ci]), "rigorous float lower bound exceeded the exact rank"
        ch = Choice(B=tuple(B), delta=tuple(delta_full), rank=rho, value=m + len(B) + 2 * rho)
        if best is None or ch.value < best.value:
            best = ch
    return best, checks


# ---- the constructed block ----------------------------------------------------------------
def construct(cf: CanonicalForm, choice: Choice, width: int) -> tuple[Mat, Mat]:
    """Exact weights ``(W_up, W_down)`` of a residual-free block of ``width`` units equal to f.

    One unit ``(±e_ℓ, a_ℓ)`` per line outside B; ``(e_ℓ, a_ℓ + v_ℓ)`` and ``(−e_ℓ, −v_ℓ)`` on
    each line of B; antipodal pairs ``(z, y), (−z, −y)`` for a rank factorisation
    ``R = Σ y zᵀ`` of ``C_δ P_B``'s part; zero units to pad (docs/degenerate.md §3)."""
    d, m = cf.d, cf.m
    E = [list(ln.e) for ln in cf.lines]
    A = [list(ln.a) for ln in cf.lines]
    C = [row[:] for row in cf.L0]  # C_δ = L0 + Σ_{ℓ ∉ B, δ_ℓ = 1} a_ℓ e_ℓᵀ
    for l in (l for l in range(m) if l not in choice.B and choice.delta[l]):
        C = _add(C, _outer(A[l], E[l]))
    R, V = _split_on_B(C, [E[l] for l in choice.B], d)
    ups, downs = _line_units(E, A, choice, V, d)
    Rr, piv = _rref(R)
    Y = [[R[i][j] for j in piv] for i in range(d)]  # d×ρ, R = Y · Rr
    assert len(piv) == choice.rank, (len(piv), choice.rank)

    def unit(u: list[Fraction], w: list[Fraction]) -> None:
        ups.append(u)
        downs.append(w)

    for j in range(len(piv)):
        z, y = Rr[j], [Y[i][j] for i in range(d)]
        unit(z, y)
        unit([-x for x in z], [-x for x in y])
    assert len(ups) <= width, (len(ups), width)
    while len(ups) < width:
        unit([Q(0)] * d, [Q(0)] * d)
    return ups, _T(downs)


def _line_units(E: Mat, A: Mat, choice: Choice, V: Mat | None, d: int) -> tuple[list[list[Fraction]], list[list[Fraction]]]:
    """(up rows, down columns) of the units on the lines: ``(±e_ℓ, a_ℓ)`` outside B, the pair
    ``(e_ℓ, a_ℓ + v_ℓ)``, ``(−e_ℓ, −v_ℓ)`` on each line of B."""
    ups: list[list[Fraction]] = []
    downs: list[list[Fraction]] = []
    for l in range(len(E)):
        if l in choice.B:
            assert V is not None
            v = [V[i][choice.B.index(l)] for i in range(d)]
            ups += [E[l], [-x for x in E[l]]]
            downs += [[x + y for x, y in zip(A[l], v)], [-x for x in v]]
        else:
            ups.append([-x for x in E[l]] if choice.delta[l] else E[l])
            downs.append(A[l])
    return ups, downs


def _split_on_B(C: Mat, EB_rows: list[list[Fraction]], d: int) -> tuple[Mat, Mat | None]:
    """``C = R + V E_Bᵀ`` with R vanishing on span(E_B) and equal to C on its complement N:
    (R, V), V of shape d×|B| (None when B is empty: R = C)."""
    b = len(EB_rows)
    if not b:
        return C, None
    Eb = _T(EB_rows)  # d×b
    N = _nullspace(EB_rows, d)  # d×k
    k = d - b
    T = [Eb[i] + (N[i] if k else []) for i in range(d)]
    CN = _mm(C, N) if k else _zeros(d, 0)
    R = _mm([[Q(0)] * b + CN[i] for i in range(d)], _inverse(T))
    G = _mm(_T(Eb), Eb)
    V = _mm(_mm([[x - y for x, y in zip(r1, r2)] for r1, r2 in zip(C, R)], Eb), _inverse(G))  # d×b
    return R, V


def construct_near(cf: CanonicalForm, choice: Choice, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Float weights of a residual-free block of ``width`` units within the tolerance of f, for a
    choice whose linear part ``R = C_δ P_B`` is only *near* rank ``choice.rank``: the units of
    :func:`construct`, with ``V = C_δ E_B (E_Bᵀ E_B)⁻¹`` by least squares and the antipodal pairs
    from the truncated SVD of R (the dropped singular values are f's distance from the block)."""
    d, m = cf.d, cf.m
    E = np.array([[float(v) for v in ln.e] for ln in cf.lines]).reshape(m, d)
    A = np.array([[float(v) for v in ln.a] for ln in cf.lines]).reshape(m, d)
    C = _to_float(cf.L0, (d, d))
    for l in range(m):
        if l not in choice.B and choice.delta[l]:
            C = C + np.outer(A[l], E[l])
    V = None
    if choice.B:
        Eb = E[list(choice.B)].T  # d×b
        V = np.linalg.lstsq(Eb, C.T, rcond=None)[0].T  # (least squares; E_B may be rank-deficient: red team 45c/03)
        R = C - V @ Eb.T
    else:
        R = C
    Ul, s, Vt = np.linalg.svd(R)
    p = choice.rank
    ups, downs = [], []
    for l in range(m):
        if l in choice.B:
            v = V[:, choice.B.index(l)]
            ups += [E[l], -E[l]]
            downs += [A[l] + v, -v]
        else:
            ups.append(-E[l] if choice.delta[l] else E[l])
            downs.append(A[l])
    for k in range(p):
        z, y = Vt[k], Ul[:, k] * s[k]
        ups += [z, -z]
        downs += [y, -y]
    assert len(ups) <= width, (len(ups), width)
    W_up = np.zeros((width, d))
    W_down = np.zeros((d, width))
    if ups:
        W_up[: len(ups)] = np.array(ups)
        W_down[:, : len(ups)] = np.array(downs).T
    return W_up, W_down


# ---- the decision -------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class DegenerateDecision:
    """Verdict of the canonical-form procedure at one width, with its evidence."""

    verdict: Verdict
    reason: str
    width: int
    witness: Witness | None = None
    canonical: CanonicalForm | None = None
    outcome: SearchOutcome | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"verdict": self.verdict.value, "width": self.width, "reason": self.reason}
        if self.canonical is not None:
            out["canonical_form"] = self.canonical.summary()
        if self.outcome is not None:
            o = self.outcome
            out["search"] = {"status": o.status, "candidates": o.candidates, "exact_checks": o.exact_checks,
                             "min_distance": o.min_distance}
            if o.best is not None:
                out["search"]["best"] = {"B": list(o.best.B), "delta": list(o.best.delta), "rank": o.best.rank, "width": o.best.value}
        if self.witness is not None:
            out["witness"] = self.witness.to_json()
        return out


def _unsupported(block: Block) -> str | None:
    if block.gated:
        return "the block is gated"
    if block.has_bias:
        return "the block has biases"
    if family_of(block) is None:
        return f"σ = {block.activation_name} is not ReLU, GELU, GELU-tanh, SiLU or quick-GELU"
    if block.n * block.d > MAX_EXACT_WORK or block.d * block.d > MAX_EXACT_WORK:
        return f"n·d = {block.n * block.d} is too large for exact arithmetic (limit {MAX_EXACT_WORK})"
    if not magnitudes_ok(block.W_up, block.W_down, block.M):
        # the exact canonical form would be fine, but the rank bounds, the float constructed
        # block and its evaluation overflow or underflow out there
        return (f"an entry of W_up, W_down or M is outside [2^-{SAFE_EXPONENT}, 2^{SAFE_EXPONENT}], where the float64 rank "
                "bounds and the witness evaluation hold (products there can overflow or underflow); rescale the weights")
    return None


def _mergeable(cf: CanonicalForm, lip: float | None, eps: float) -> list[str]:
    """Pairs of distinct lines that might merge into one with a change of f below SCREEN_MARGIN·``eps``·|x|∞
    (``eps`` = (τ + allowance)(1 + K)): an estimate from below of the best merge, not a bound — merging onto the
    midpoint halves moving one line onto the other, and the change is read in ℓ2, not ℓ1 (a √d apart). ReLU lines:
    min(|a_i|∞|e_i|₂, |a_j|∞|e_j|₂)·sin θ/4. The even family's atoms (h = σ − z/2 even, Lipschitz L_σ + 1/2), with
    δ = e_i ∓ e_j split along and across the midpoint m: (L_σ + 1/2)·|δ_⊥|₂/4 + |δ_∥|₂²/(16|m|₂) times the smaller
    |a|∞ — rows u and (1 + η)u merge at second order (h((1 + η)s) + h((1 − η)s) − 2h(s) ≈ η²s²h''(s)). A block with the
    lines merged may fit where f does not."""
    from absorb.engine.tolerance import SCREEN_MARGIN

    reach = SCREEN_MARGIN * eps
    es = np.array([[float(v) for v in ln.e] for ln in cf.lines])
    if len(es) < 2:
        return []
    tops = np.array([max(abs(float(v)) for v in ln.a) for ln in cf.lines])
    with np.errstate(all="ignore"):
        nrm = np.sqrt(np.einsum("ij,ij->i", es, es))
        if cf.family == "relu":
            cos = np.clip(np.abs(es @ es.T) / np.outer(nrm, nrm), 0.0, 1.0)
            sin = np.sqrt(np.maximum(0.0, 1 - cos * cos))
            size = tops * nrm
            cost = np.minimum(size[:, None], size[None, :]) * sin / 4
        elif lip is not None:
            cost = np.full((len(es), len(es)), np.inf)
            for sg in (1.0, -1.0):
                dl = es[:, None, :] - sg * es[None, :, :]
                mid = (es[:, None, :] + sg * es[None, :, :]) / 2
                mm = np.einsum("ijk,ijk->ij", mid, mid)
                along = np.einsum("ijk,ijk->ij", dl, mid) / mm
                par = np.abs(along) * np.sqrt(mm)  # |δ_∥|₂
                perp = np.sqrt(np.maximum(0.0, np.einsum("ijk,ijk->ij", dl, dl) - par * par))
                est = (lip + 0.5) * perp / 4 + par * par / (16 * np.sqrt(mm))
                cost = np.fmin(cost, np.where(mm > 0, est, np.inf))
            cost = np.minimum(tops[:, None], tops[None, :]) * cost
        else:
            return []
    np.fill_diagonal(cost, np.inf)
    i, j = np.unravel_index(np.argmin(cost), cost.shape)
    if not cost[i, j] <= reach:
        return []
    return [f"lines {i} and {j} might merge with a change of f near {cost[i, j]:.3g}·|x|∞ (an estimate of the best merge, "
            f"from below), within {SCREEN_MARGIN:g}× the tolerance's {eps:.3g}, and the merged block may fit"]


def _robustness(cf: CanonicalForm, outcome: SearchOutcome, *, tol: float, scale: float,
                lip: float | None = None, eps: float = 0.0) -> list[str]:
    """Why an exact 'none' might not survive a perturbation within the tolerance (``tol``: the distance bar,
    relative to ``scale``; ``eps``: the tolerance per unit of |x|∞ that two lines' merge is measured against, :func:`_mergeable`)."""
    issues = _mergeable(cf, lip, eps)
    if outcome.min_distance is not None and outcome.min_distance <= tol:
        issues.append(f"the linear parts are within relative distance {outcome.min_distance:.2e} ≤ {tol:.3g} of a feasible choice "
                      "(the distance bar max(τ, √d·(τ + allowance)·(1 + K)/max(‖M‖_F, 1)), K ≥ f's gain at infinity)")
    es = [np.array([float(v) for v in ln.e]) for ln in cf.lines]
    for l, ln in enumerate(cf.lines):
        if np.linalg.norm([float(v) for v in ln.a]) * np.linalg.norm(es[l]) <= tol * scale:
            issues.append(f"line {l} (units {list(ln.units)}) has a coefficient within tolerance of zero")
    for i, j in itertools.combinations(range(len(es)), 2):
        if cf.family == "relu":
            c = abs(es[i] @ es[j]) / (np.linalg.norm(es[i]) * np.linalg.norm(es[j]))
            if c >= 1 - COLLINEAR_TAU:
                issues.append(f"lines {i} and {j} are distinct but nearly collinear (|cos| = {c:.12g})")
        elif np.linalg.norm(es[i] - es[j]) <= COLLINEAR_TAU * np.linalg.norm(es[i]):
            issues.append(f"lines {i} and {j} are distinct but nearly equal")
    return issues


def decide_degenerate(block: Block, *, width: int | None = None, tol: float = 1e-9, seed: int = 0,
                      budget: int = DEFAULT_BUDGET) -> DegenerateDecision:
    """Decide whether ``f(x) = M x + W_down σ(W_up x)`` is a residual-free block of ``width``
    units (default: the block's own width n), for any weights (Theorem D, docs/degenerate.md).

    Covers d = 1, zero rows or columns, collinear and antipodal rows, duplicated units and any
    skip M (singular too). ``absorbable`` carries a checked witness of exactly ``width`` units;
    ``not_absorbable`` carries the exact minimum width or the proof that it exceeds ``width``."""
    block = block.float64()  # exact rationals and float64 products below
    N = block.n if width is None else int(width)
    why = _unsupported(block)
    if why is not None:
        return DegenerateDecision(Verdict.UNKNOWN, f"Unknown: the canonical-form procedure does not apply: {why}.", N)
    cf = canonical_form(block)
    # distances relative to ‖M‖_F, but at least 1: a witness's error is per unit of |x| (and |f(x)|), so with
    # M = 0 or tiny a choice 10⁻¹² from fitting is within the tolerance, not "not absorbable"
    scale = max(float(np.linalg.norm(block.M)), 1.0)
    # a near block's error is its dropped linear part R (and dropped lines), accepted by ρ∞ = ‖R‖∞ ≤ τ + allowance;
    # ρ∞ ≥ ‖R‖_F/√d, so 'none within the tolerance' needs every choice farther than √d·(τ + allowance) too
    # (and times 1 + K, K ≥ f's gain at infinity: the error is relative to |f(x)|∞ + |x|∞; σ(z)/z → 1, 0 here)
    gain = asymptotic_gain(block.skip, block.W_up, block.W_down, 1.0, (1.0, 0.0), spread=block.unit_reach)
    bar = max(tol, math.sqrt(block.d) * eval_threshold(tol, N) * (1 + gain) / scale * (1 + 2.0**-20))
    if bar > 1e-3:  # (a cone where every unit is off at infinity often gives far less: one LP)
        gain = min(gain, dead_cone_gain(block.skip, block.W_up))
        bar = max(tol, math.sqrt(block.d) * eval_threshold(tol, N) * (1 + gain) / scale * (1 + 2.0**-20))
    name = "ReLU" if cf.family == "relu" else block.activation_name
    shape = (f"f = L₀x + Σ a_ℓ·{'ReLU' if cf.family == 'relu' else 'σ'}(e_ℓ·x) over m = {cf.m} active lines "
             f"({len(cf.dead)} dead units, {len(cf.inactive)} lines whose units cancel)")
    out = search(cf, cap=N, budget=budget, scale=scale)
    det = {"active_lines": cf.m, "dead_units": len(cf.dead), "spare_units": N - cf.m}
    if out.status == "budget":
        return DegenerateDecision(Verdict.UNKNOWN, f"Unknown: {shape}; the exact search stopped: {out.reason}.", N, canonical=cf, outcome=out, details=det)
    if out.status in ("found", "fits"):
        ch = out.best
        assert ch is not None
        up, down = construct(cf, ch, N)
        exact = _canonical(up, down, _zeros(cf.d, cf.d), cf.family).key() == cf.key()
        wb = block.replace(W_up=_to_float(up, (N, cf.d)), W_down=_to_float(down, (cf.d, N)), skip=np.zeros((cf.d, cf.d)),
                           b_up=None, b_gate=None, b_down=None,  # (f's biases are zero here: stored all-zero arrays have f's width)
                           name=block.name + "'")
        err, m_in = evaluation_error(block, wb, cf.d, seed=seed)
        # The float64 block rounds the exact construction (equal to f when exact): its error
        # is proved from the rounding of each unit's weights; the sampled one is a second check.
        bound = rounded_construction_bound(block, up, down, wb) if exact else math.inf
        how = (f"{cf.m - len(ch.B)} lines with one unit ({sum(ch.delta)} flipped), {len(ch.B)} lines with two units, "
               f"{ch.rank} antipodal pairs for the remaining rank-{ch.rank} linear part, {N - ch.value} zero units")
        how += (f"; rigorous bound |f(x) − g(x)|∞ ≤ {bound:.3g}·(|f(x)|∞ + |x|∞ + |f(0)|∞) for every x (the rounding of the exact weights)"
                if math.isfinite(bound) else "; no rigorous bound on the rounding of the exact weights (σ has no stated Lipschitz constant)")
        w = Witness(S=None, block=wb, residual=None, eval_error=max(err, bound), n_inputs=m_in, exact=exact, description=how,
                    bound=(bound, 0.0) if math.isfinite(bound) else None)
        if exact and bound <= eval_threshold(tol, N) and err <= eval_threshold(tol, N):
            return DegenerateDecision(Verdict.ABSORBABLE,
                                      f"Canonical form ({name}): {shape}; a residual-free block of width {N} needs only {ch.value} units here: "
                                      f"{how}. The constructed block has the same canonical form exactly and matches f on {m_in} inputs (random, and on the kink hyperplanes) "
                                      f"(max relative error {err:.2e}).", N, witness=w, canonical=cf, outcome=out, details=det)
        return DegenerateDecision(Verdict.UNKNOWN, f"Unknown: the constructed block failed its check (exact {exact}, error {w.eval_error:.2e}"
                                  f"{eval_failure(w.eval_error)}).", N,
                                  witness=None, canonical=cf, outcome=out, details=det)
    need = (f"the cheapest of these choices needs {out.best.value} units" if out.best is not None
            else "no choice fits")
    if out.near is not None and out.min_distance is not None and out.min_distance <= bar:
        # One semantics on every route: absorbable *within the tolerance*, with a constructed
        # block and its measured error (``exact`` only when exact) — as the index-set route.
        ch = out.near
        W_up, W_down = construct_near(cf, ch, N)
        wb = block.replace(W_up=W_up, W_down=W_down, skip=np.zeros((cf.d, cf.d)), b_up=None, b_gate=None, b_down=None,
                           name=block.name + "'")
        err, m_in = evaluation_error(block, wb, cf.d, seed=seed)
        # No exact block equals f here: the error is bounded from the exact difference of the
        # two blocks' parameters (unit by unit), or decided exactly where f − g is piecewise
        # linear and small (ReLU, small d and width); else there is no rigorous bound.
        bound = unit_difference_bound(block, wb)
        if not bound <= eval_threshold(tol, N) and block.activation.name == "relu":  # the exact sup costs more: only when needed
            bound = min(bound, pl_bound(block, wb))
        how = (f"{cf.m - len(ch.B)} lines with one unit ({sum(ch.delta)} flipped), {len(ch.B)} lines with two units, "
               f"{ch.rank} antipodal pairs for the rank-{ch.rank} part of the linear part (truncated SVD), {N - ch.value} zero units")
        how += (f"; rigorous bound |f(x) − g(x)|∞ ≤ {bound:.3g}·(|f(x)|∞ + |x|∞ + |f(0)|∞) for every x (exact parameter differences, or the vertices of the kink arrangement)"
                if math.isfinite(bound) else "; no rigorous bound on f − g")
        w = Witness(S=None, block=wb, residual=out.min_distance, eval_error=max(err, bound), n_inputs=m_in, exact=False, description=how,
                    bound=(bound, 0.0) if math.isfinite(bound) else None)
        if bound <= eval_threshold(tol, N) and err <= eval_threshold(tol, N):
            return DegenerateDecision(Verdict.ABSORBABLE,
                                      f"Canonical form ({name}): {shape}; exactly, the stored weights need more than {N} units ({need}), "
                                      f"but they are within relative distance {out.min_distance:.2e} (float64) of a residual-free "
                                      f"block of width {N}: {how}. The constructed block matches f on {m_in} inputs (max relative error "
                                      f"{err:.2e}); absorbable within the tolerance, not exactly.", N, witness=w, canonical=cf,
                                      outcome=out, details=det)
        return DegenerateDecision(Verdict.UNKNOWN,
                                  f"Unknown: exactly, f is not a residual-free block of width {N} ({need}), but it lies within relative "
                                  f"distance {out.min_distance:.2e} ≤ tol of one, and the block constructed there failed its check "
                                  f"(error {w.eval_error:.2e}{eval_failure(w.eval_error)}): {how}.", N, canonical=cf, outcome=out, details=det)
    issues = _robustness(cf, out, tol=bar, scale=scale, lip=sigma_lipschitz(block.activation),
                         eps=eval_threshold(tol, N) * (1 + gain))
    if issues:
        return DegenerateDecision(Verdict.UNKNOWN,
                                  f"Unknown: exactly, f is not a residual-free block of width {N} ({out.reason}; {need}), but the answer is "
                                  f"ill-conditioned at tolerance {tol:g}: {'; '.join(issues)}.", N, canonical=cf, outcome=out, details=det)
    return DegenerateDecision(Verdict.NOT_ABSORBABLE,
                              f"Canonical form ({name}): {shape}. A residual-free block equals f only if it has the same canonical form "
                              f"(uniqueness of kinks / even parts), which needs m + |B| + 2·rank(C_δ P_B) ≤ {N} units for some choice of "
                              f"lines B with two units and flips δ; {out.reason} (proved in exact arithmetic; {need}).",
                              N, canonical=cf, outcome=out, details=det)
