"""Independent checker of proof certificates (``absorb verify CERT.json [MODEL]``).

It re-derives every claim of a certificate (:mod:`absorb.certificate`) from the
certificate's numbers and the weights themselves. To be independent of the route that
produced the verdict it imports **nothing** from ``absorb.engine``, ``absorb.search``,
``absorb.symbolic`` or ``absorb.certificate`` (a test enforces this); it uses numpy,
``fractions``, sympy, ``hashlib`` and ``json``, plus ``absorb.model``/``absorb.io`` to load
the weights and evaluate ``f``. Every sympy argument and every bound is re-done here from
the mathematics (theory.md §2–5), not copied.

What is re-derived, per block:

* **identity** — the SHA-256 of every weight array (float64 little-endian C order) and the
  embedded small arrays; shapes, kind, the activation's sympy expression.
* **the theorem fits the activation** — homogeneity degree by substituting ``t·p`` on the
  sign cases ``x = p, −p, 0`` (``p, t > 0``); ``g(0) = 0`` and the one-sided difference
  quotients at 0; the flip identity ``σ(z) − σ(−z) = c z`` (``g(z) + g(−z) = c`` gated);
  finite limits at ±∞ and continuity; ReLU/GELU identity for result 5's necessity.
* **hypotheses on the weights** — ``M ≠ 0`` and bias-freeness exactly; invertibility of
  ``M`` (``H_res`` for Hyper-Connections) by exact rational elimination when d ≤ 24, else an
  SVD with a rounding margin; nonzero rows/columns exactly; non-collinearity by a float
  cosine screen whose margin (1e-6) dwarfs its rounding error, with near pairs decided
  exactly in rationals.
* **witnesses** — ``‖D_S U_S + M/c‖_F`` exactly in rationals when ``|S|·d² ≤ 2·10⁵``,
  else in float64 with a rigorous rounding bound; the residual-free block rebuilt here from
  ``S`` and evaluated against ``f`` on fresh random inputs with a derived error bound.
* **impossibility** — dual certificates ``Y = A Bᵀ`` through
  ``absorb.verify.dual_bound.check_dual_bound`` when that module exists, else exactly in
  rationals for small sizes; exhaustive enumeration re-done here for n ≤ 16; rank bounds
  of linear blocks (exact rank in rationals for small d); the skip product of a stack.

Anything that cannot be re-derived (too large, a search certificate of an unknown kind) is
reported as *not re-checked*; ``verify`` accepts such a certificate by default (exit 0,
with the list) and rejects it under ``--strict`` (exit 1).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import sympy as sp

from absorb._errors import InvalidInput
from absorb.model.block import Block, Stack
from absorb.verify import DEFAULT_SEED

SCHEMA = "absorb-certificate"
SUPPORTED_VERSIONS = (1,)

EXACT_WORK = 200_000
"""Largest |S|·d² (or d³ for eliminations) done in exact rational arithmetic."""
EXACT_ELIM_MAX_D = 24
ENUM_MAX_N = 16
"""Exhaustive re-enumeration of index sets up to this width (2^16 sets)."""
ENUM_MAX_ENTRIES = 1 << 24
COLLINEAR_SCREEN = 1e-6
"""Pairs with computed |cos| < 1 − this are non-collinear for sure: the rounding error of a
float64 cosine is below (2d + 8)·2⁻⁵³, far smaller for any d < 10⁸."""
FULL_GRAM_MAX = 2048
"""Up to this many nonzero rows the collinearity screen computes every pair's cosine (and
reports the largest); above, a projection screen finds the candidate pairs in O(n log n)."""
EVAL_INPUTS = 32
EVAL_SCALES = (1e-2, 1.0, 1e2)
"""Seed of the checker's random inputs: fresh, not the seed the certificate was made with."""

_U = 2.0**-53
_RANGE_EXPONENT = 200
"""The checker's float64 rounding bounds (relative errors, Higham's γ) are trusted only when
every nonzero entry involved lies in [2^-200, 2^200]: then products of up to three entries
neither underflow nor overflow. What can still underflow, a square after a cancellation
(≤ 2^-1074 each), gets an explicit absolute term. Outside that range the float paths prove
nothing."""
_P = sp.Symbol("p", positive=True)
_T = sp.Symbol("t", positive=True)


# ------------------------------------------------------------------------- report --


@dataclass(frozen=True)
class Finding:
    """One re-derived claim: ``status`` is ``ok``, ``fail`` or ``unchecked``."""

    status: str
    where: str
    claim: str
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {"status": self.status, "where": self.where, "claim": self.claim, "detail": self.detail}


@dataclass
class Report:
    """All findings of one verification; ``accepted`` when nothing failed."""

    findings: list[Finding] = field(default_factory=list)

    def add(self, status: str, where: str, claim: str, detail: str = "") -> None:
        self.findings.append(Finding(status, where, claim, detail))

    def ok(self, where: str, claim: str, detail: str = "") -> None:
        self.add("ok", where, claim, detail)

    def fail(self, where: str, claim: str, detail: str = "") -> None:
        self.add("fail", where, claim, detail)

    def unchecked(self, where: str, claim: str, detail: str = "") -> None:
        self.add("unchecked", where, claim, detail)

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.status == "fail"]

    @property
    def not_rechecked(self) -> list[Finding]:
        return [f for f in self.findings if f.status == "unchecked"]

    @property
    def accepted(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        return {"accepted": self.accepted, "complete": not self.not_rechecked,
                "failures": len(self.failures), "not_rechecked": len(self.not_rechecked),
                "findings": [f.to_json() for f in self.findings]}


class _Reject(Exception):
    """Raised inside a block check to stop at the first failed claim of that block."""


# ----------------------------------------------------------------- loading / input --


def load_certificate(path: str | Path) -> dict[str, Any]:
    """Read and validate a certificate file (schema, version, required keys) — InvalidInput if bad."""
    p = Path(path)
    if not p.is_file():
        raise InvalidInput(f"{p}: no such certificate file; make one with 'absorb check MODEL --certificate {p.name}'")
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InvalidInput(f"{p}: not a text file; give the .json certificate (not the .pdf or .tex rendering)") from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{p}: not valid JSON ({exc.msg} at line {exc.lineno}); give the .json certificate") from None
    if not isinstance(obj, dict) or obj.get("schema") != SCHEMA:
        raise InvalidInput(f"{p}: not an absorb certificate (no \"schema\": \"{SCHEMA}\"); make one with 'absorb check MODEL --certificate OUT.json'")
    if obj.get("schema_version") not in SUPPORTED_VERSIONS:
        raise InvalidInput(f"{p}: schema_version {obj.get('schema_version')!r} is not supported (this checker reads {SUPPORTED_VERSIONS}); upgrade absorb")
    for key in ("verdict", "theorem", "blocks", "parameters", "input"):
        if key not in obj:
            raise InvalidInput(f"{p}: certificate lacks the key {key!r}; regenerate it with 'absorb check --certificate'")
    if not isinstance(obj["blocks"], list) or not obj["blocks"]:
        raise InvalidInput(f"{p}: key 'blocks' must be a non-empty list")
    return obj


def resolve_model_path(cert: dict[str, Any], cert_path: str | Path, model: str | Path | None) -> Path:
    """The model file: ``model`` if given, else the certificate's path (as given, then
    relative to the certificate's folder)."""
    if model is not None:
        return Path(model)
    recorded = cert.get("input", {}).get("path")
    if not recorded:
        raise InvalidInput(f"{cert_path}: the certificate names no model file; pass it: absorb verify {cert_path} MODEL")
    p = Path(recorded)
    if p.exists():
        return p
    alt = Path(cert_path).parent / p.name
    if alt.exists():
        return alt
    raise InvalidInput(f"{cert_path}: the model file {recorded} named in the certificate does not exist; pass it: absorb verify {cert_path} MODEL")


# ------------------------------------------------------------------------ numerics --


def sha256_f64(a: np.ndarray) -> str:
    """SHA-256 of the float64 little-endian C-contiguous bytes (the certificate convention)."""
    return hashlib.sha256(np.ascontiguousarray(a, dtype="<f8").tobytes()).hexdigest()


def _gamma(k: int) -> float:
    ku = k * _U
    return ku / (1 - ku) if ku < 0.5 else math.inf


def _frac_matrix(a: np.ndarray) -> list[list[Fraction]]:
    return [[Fraction(float(v)) for v in row] for row in np.atleast_2d(a)]


def exact_rank(rows: list[list[Fraction]]) -> int:
    """Rank over Q by Gaussian elimination (exact)."""
    A = [r[:] for r in rows]
    rank, ncols = 0, len(A[0]) if A else 0
    for col in range(ncols):
        piv = next((i for i in range(rank, len(A)) if A[i][col] != 0), None)
        if piv is None:
            continue
        A[rank], A[piv] = A[piv], A[rank]
        for i in range(rank + 1, len(A)):
            if A[i][col] != 0:
                f = A[i][col] / A[rank][col]
                A[i] = [a - f * b for a, b in zip(A[i], A[rank])]
        rank += 1
    return rank


def _parse_number(v: object) -> sp.Rational | None:
    """A certificate number (int, float or a rational string such as '1/2') as a sympy
    Rational, parsed with :class:`fractions.Fraction` (never by sympy: untrusted input)."""
    if v is None or isinstance(v, bool):
        return None
    try:
        q = Fraction(v) if isinstance(v, (int, float)) else Fraction(str(v).strip())
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    return sp.Rational(q.numerator, q.denominator)


# ------------------------------------------------------------------- symbolic facts --


def _variable(expr: sp.Expr) -> sp.Symbol:
    syms = sorted(expr.free_symbols, key=str)
    return syms[0] if syms else sp.Symbol("x", real=True)


def _zero(e: sp.Expr) -> bool | None:
    """True/False when sympy decides e = 0; None when it cannot."""
    s = sp.simplify(e)
    if s == 0:
        return True
    if s.is_zero is not None:
        return bool(s.is_zero)
    if s.is_number:
        val = sp.N(s, 40)
        if val.is_number and abs(val) > sp.Float(10) ** -20:
            return False
    return None


def homogeneous_of_degree(expr: sp.Expr, k: sp.Rational) -> bool:
    """σ(tx) = t^k σ(x) for all t > 0, x ∈ R — on the cases x = p, −p, 0 (p > 0)."""
    x = _variable(expr)
    if _zero(expr.subs(x, 0)) is not True:
        return False
    return all(_zero(expr.subs(x, s * _T * _P) - _T**k * expr.subs(x, s * _P)) is True for s in (1, -1))


@functools.lru_cache(maxsize=128)
def _gate_derivative_at_zero(expr: sp.Expr) -> sp.Expr | None:
    """g'(0) when g(0) = 0 and g is differentiable at 0 (equal finite one-sided quotients)."""
    x = _variable(expr)
    if _zero(expr.subs(x, 0)) is not True:
        return None
    try:
        right = sp.limit(sp.simplify(expr.subs(x, _P) / _P), _P, 0, "+")
        left = sp.limit(sp.simplify(expr.subs(x, -_P) / (-_P)), _P, 0, "+")
    except Exception:  # sympy's limit raises assorted errors on hard input
        return None
    if not (right.is_finite and left.is_finite) or _zero(right - left) is not True:
        return None
    return sp.simplify(right)


@functools.lru_cache(maxsize=128)
def flip_constant(expr: sp.Expr, gated: bool) -> sp.Expr | None:
    """c with σ(z) − σ(−z) = c z for all z (ungated) or g(z) + g(−z) = c (gated); None if none.

    On z = p > 0 sympy must reduce the left side to a nonzero constant (times p); z = −p is
    the same identity multiplied by −1 (both sides are odd in z, resp. even), z = 0 is trivial.
    """
    x = _variable(expr)
    if gated:
        c = sp.simplify(expr.subs(x, _P) + expr.subs(x, -_P))
    else:
        c = sp.simplify((expr.subs(x, _P) - expr.subs(x, -_P)) / _P)
    if c.free_symbols or _zero(c) is not False:
        return None
    return c


@functools.lru_cache(maxsize=128)
def is_bounded(expr: sp.Expr) -> bool:
    """σ continuous on R with finite limits at ±∞ (hence bounded)."""
    x = _variable(expr)
    try:
        hi = sp.limit(expr.subs(x, _P), _P, sp.oo)
        lo = sp.limit(expr.subs(x, -_P), _P, sp.oo)
        cont = sp.calculus.util.continuous_domain(expr, x, sp.S.Reals)
    except Exception:  # sympy raises assorted errors on hard input
        return False
    return bool(hi.is_finite and lo.is_finite and cont == sp.S.Reals)


def _same_function(a: sp.Expr, b: sp.Expr) -> bool:
    xa, xb = _variable(a), _variable(b)
    return all(_zero(a.subs(xa, v) - b.subs(xb, v)) is True for v in (_P, -_P, sp.Integer(0)))


@functools.lru_cache(maxsize=128)
def is_relu_or_gelu(expr: sp.Expr) -> bool:
    """σ is ReLU or GELU (erf form): result 5's necessity is the paper's for these only."""
    y = sp.Symbol("y", real=True)
    refs = (sp.Max(0, y), y * (1 + sp.erf(y / sp.sqrt(2))) / 2)
    return any(_same_function(expr, r) for r in refs)


def is_identity(expr: sp.Expr) -> bool:
    return _zero(expr - _variable(expr)) is True


# --------------------------------------------------------------------- the checker --


@dataclass
class _Ctx:
    report: Report
    tol: float
    seed: int
    #: the current block's expensive re-derivations (collinearity O(n²d), the skip's SVD),
    #: each computed once per block; emptied when the next block starts
    once: dict[str, Any] = field(default_factory=dict)

    def memo(self, key: str, fn: Callable[[], Any]) -> Any:
        if key not in self.once:
            self.once[key] = fn()
        return self.once[key]


def _where(b: dict[str, Any]) -> str:
    return str(b.get("name", "?")) if isinstance(b, dict) else "?"


def _require(ctx: _Ctx, cond: bool, where: str, claim: str, detail: str = "", *, fail_only: bool = False) -> None:
    """Record ``claim`` as ok when ``cond`` holds, else as failed and stop this block.
    ``detail`` (the numbers) is kept on success too unless ``fail_only``."""
    if cond:
        ctx.report.ok(where, claim, "" if fail_only else detail)
    else:
        ctx.report.fail(where, claim, detail)
        raise _Reject(claim)


def _block_arrays(block: Block) -> dict[str, np.ndarray]:
    out = dict(block.arrays())
    if block.hc is not None:
        out.update(H_res=block.hc.H_res, H_pre=block.hc.H_pre, H_post=block.hc.H_post)
    return out


def _check_identity(ctx: _Ctx, b: dict[str, Any], block: Block) -> None:
    w = _where(b)
    _require(ctx, b.get("name") == block.name, w, "the block name matches the model", f"model has {block.name!r}")
    _require(ctx, (b.get("d"), b.get("n")) == (block.d, block.n), w, "d and n match the model",
             f"certificate d={b.get('d')}, n={b.get('n')}; model d={block.d}, n={block.n}")
    _require(ctx, b.get("kind") == block.kind, w, f"the block is {block.kind}", f"certificate says {b.get('kind')!r}")
    arrays = _block_arrays(block)
    recs = b.get("weights", {})
    _require(ctx, set(recs) == set(arrays), w, "the certificate lists exactly the model's arrays",
             f"certificate {sorted(recs)}, model {sorted(arrays)}")
    for k, a in arrays.items():
        rec = recs[k]
        h = sha256_f64(a)
        _require(ctx, list(rec.get("shape", [])) == list(a.shape) and rec.get("sha256") == h, w, f"SHA-256 of {k} matches",
                 f"model {k} {a.shape} hashes to {h[:16]}…, certificate says {str(rec.get('sha256'))[:16]}…")
        if "values" in rec:
            same = np.array_equal(np.asarray(rec["values"], dtype=float).reshape(a.shape), a)
            _require(ctx, same, w, f"the printed values of {k} are the model's", "embedded values differ from the weights", fail_only=True)
    act = b.get("activation_function", {})
    model_expr = block.activation.expr
    # Compared as strings: a certificate is untrusted input and is never parsed by sympy.
    same = act.get("srepr") == sp.srepr(model_expr) and act.get("text") == str(model_expr)
    _require(ctx, same, w, f"the activation is the model's ({block.activation_name})",
             f"certificate has {act.get('text')!r} ({act.get('srepr')!r}), model has {model_expr}", fail_only=True)


def _skip_nonzero(block: Block) -> bool:
    return bool(np.any(block.M != 0))


def _bias_free(block: Block) -> bool:
    return not any(v is not None and np.any(v != 0) for v in (block.b_up, block.b_gate, block.b_down))


def _invertible(a: np.ndarray) -> tuple[bool | None, str]:
    """Exact for diagonal matrices (the identity skip: all diagonal entries nonzero) and by
    rank over Q for small ones, else σ_min > 10·d·ε·σ_max (backward-stable SVD)."""
    d = a.shape[0]
    diag = np.diagonal(a)
    if np.count_nonzero(a) == np.count_nonzero(diag):  # nothing off the diagonal
        zero = int(d - np.count_nonzero(diag))
        return zero == 0, "diagonal, every diagonal entry nonzero" if zero == 0 else f"diagonal with {zero} zero entries"
    if d <= EXACT_ELIM_MAX_D:
        r = exact_rank(_frac_matrix(a))
        return r == d, f"exact rank {r} of {d}"
    s = np.linalg.svd(a, compute_uv=False)
    if s[-1] > 10 * d * _U * 2 * s[0]:
        return True, f"σ_min = {s[-1]:.3g} > 10·d·ε·σ_max"
    return None, f"σ_min = {s[-1]:.3g} too close to rounding to decide"


def _skip_invertible(ctx: _Ctx, block: Block) -> tuple[bool | None, str]:
    """:func:`_invertible` of the block's skip (H_res for Hyper-Connections), once per block."""
    return ctx.memo("invertible", lambda: _invertible(block.hc.H_res if block.hc is not None else block.M))


def _row_pairs(ctx: _Ctx, block: Block) -> tuple[list[tuple[int, int]], float | None]:
    """:func:`_collinear_pairs` of the block's W_up, once per block."""
    return ctx.memo("collinear", lambda: _collinear_pairs(block.W_up))


def _collinear_pairs(U: np.ndarray) -> tuple[list[tuple[int, int]], float | None]:
    """Exactly collinear pairs of nonzero rows: a float screen, then an exact decision (in ℚ)
    on the pairs it keeps; and the largest float |cos| over all pairs (None when the
    projection screen ran, which looks at only a few pairs).

    Rows are first scaled by exact powers of two (largest entry in [0.5, 1)), so that norms
    of rows near 2^±540 neither underflow nor overflow; an entry that underflows in the
    scaling moves its row's direction by under 2^-1000, far below every margin here.
    Up to ``FULL_GRAM_MAX`` rows every pair's cosine is computed (|cos| ≥ 1 − COLLINEAR_SCREEN
    goes to the exact test). Above, one projection: for exactly collinear rows the unit
    vectors are ±each other, so their projections on a unit vector p have equal |·| up to
    rounding (each computed coordinate is within γ_{d+4} of the exact one, the projection
    within γ_d more): only pairs whose |projection| differ by at most 16·γ_{d+8} can be
    collinear, and a sort finds them in O(n log n) instead of O(n²d)."""
    big = np.abs(U).max(axis=1)
    live = np.flatnonzero(big > 0)
    W = np.ldexp(U[live], -np.frexp(big[live])[1][:, None])
    V = W / np.linalg.norm(W, axis=1)[:, None]
    pairs: list[tuple[int, int]] = []

    def decide(a: np.ndarray, b: np.ndarray) -> None:
        for i, j in zip(a.tolist(), b.tolist()):
            gi, gj = int(live[i]), int(live[j])
            ui, uj = _frac_matrix(U[gi])[0], _frac_matrix(U[gj])[0]
            piv = next(k for k, v in enumerate(ui) if v != 0)
            ratio = uj[piv] / ui[piv]
            if all(y == ratio * x for x, y in zip(ui, uj)):
                pairs.append((min(gi, gj), max(gi, gj)))

    if len(live) <= FULL_GRAM_MAX:
        worst = 0.0
        for a in range(0, len(live), 2048):
            C = np.abs(V[a:a + 2048] @ V[a:].T)  # pairs (a + i, a + j) with j > i only
            for i in range(C.shape[0]):
                C[i, :i + 1] = 0.0
            worst = max(worst, float(C.max(initial=0.0)))
            i, j = np.nonzero(C >= 1.0 - COLLINEAR_SCREEN)
            decide(a + i, a + j)
        return pairs, worst
    p = np.random.default_rng(0).standard_normal(U.shape[1])
    p /= np.linalg.norm(p) * (1 + 4 * _U)  # ‖p‖ ≤ 1
    key = np.abs(V @ p)
    order = np.argsort(key, kind="stable")
    ks = key[order]
    width = 16 * _gamma(U.shape[1] + 8)
    hi = np.searchsorted(ks, ks + width, side="right")  # partners of sorted a: a+1 … hi[a]−1
    cnt = hi - np.arange(ks.size) - 1
    a = np.repeat(np.arange(ks.size), cnt)
    b = a + 1 + (np.arange(a.size) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    a, b = order[a], order[b]
    cos = np.abs(np.einsum("ij,ij->i", V[a], V[b]))
    keep = cos >= 1.0 - COLLINEAR_SCREEN
    decide(a[keep], b[keep])
    return sorted(pairs), None


def _in_range(*arrays: np.ndarray) -> bool:
    """Every entry finite, every nonzero one within [2^-_RANGE_EXPONENT, 2^_RANGE_EXPONENT]."""
    for a in arrays:
        x = np.abs(np.asarray(a, dtype=np.float64))
        nz = x[x != 0]
        if nz.size and not (float(nz.max()) <= 2.0**_RANGE_EXPONENT and float(nz.min()) >= 2.0**-_RANGE_EXPONENT):
            return False
    return True


def _residual(U: np.ndarray, D: np.ndarray, M: np.ndarray, c: Fraction, S: Sequence[int]) -> tuple[float, float, bool | None, float]:
    """‖D_S U_S + M/c‖_F / ‖M/c‖_F: (value, rigorous upper bound, exactly zero?, float64 slack).

    Exact rationals when |S|·d² ≤ EXACT_WORK; else float64 with the bound
    |fl(R) − R| ≤ γ_{|S|+2}(Σ_{i∈S}|w_i||u_i|ᵀ + |T|) entrywise (Higham §3.1), whose
    Frobenius norm is at most γ(Σ‖w_i‖‖u_i‖ + ‖T‖_F). The slack is that bound relative to
    ‖T‖_F: how far any float64 recomputation (the certificate's) may sit from the truth.
    """
    d = U.shape[1]
    idx = list(S)
    T = -M / float(c)
    with np.errstate(over="ignore", invalid="ignore"):  # past 2^±500 the slack is nan: no match
        tn = float(np.linalg.norm(T))
        if tn == 0:
            return math.inf, math.inf, None, 0.0
        sw = float(np.sum(np.linalg.norm(D[:, idx], axis=0) * np.linalg.norm(U[idx], axis=1))) if idx else 0.0
        slack = (_gamma(len(idx) + 2) * (sw + tn) + (2 * _U * tn if c != 1 else 0.0)) / tn * (1 + _gamma(d * d + 2)) + _gamma(d * d + 2)
    if len(idx) * d * d <= EXACT_WORK:
        Uf = _frac_matrix(U[idx]) if idx else []
        Df = _frac_matrix(D[:, idx]) if idx else [[] for _ in range(d)]
        Mf = _frac_matrix(M)
        sq, tsq = Fraction(0), Fraction(0)
        for r in range(d):
            for col in range(d):
                t = Mf[r][col] / c
                acc = sum((Df[r][k] * Uf[k][col] for k in range(len(idx))), Fraction(0)) + t
                sq += acc * acc
                tsq += t * t
        rel = math.sqrt(sq / tsq)
        return rel, math.nextafter(rel, math.inf) * (1 + 4 * _U), sq == 0, slack
    with np.errstate(over="ignore", invalid="ignore"):  # out of range: the bound below is inf
        R = D[:, idx] @ U[idx] - T
        rn = float(np.linalg.norm(R))
    rel = rn / tn
    if not _in_range(D[:, idx], U[idx], T):  # the float bound is not trusted out there
        return rel, math.inf, None, slack
    return rel, (rn * (1 + _gamma(d * d + 2)) / tn + slack * 1.01) / (1 - _gamma(d * d + 2)), None, slack


def _flip_block(block: Block, S: Sequence[int], c: float) -> Block:
    """The residual-free block of result 5's sufficiency, rebuilt here from S."""
    idx = np.asarray(list(S), dtype=int)
    new: dict[str, Any] = {}
    if block.gated:
        G = block.W_gate.copy()
        G[idx] *= -1
        Dn = block.W_down.copy()
        Dn[:, idx] *= -1
        new.update(W_gate=G, W_down=Dn)
        if block.b_gate is not None:
            bg = block.b_gate.copy()
            bg[idx] *= -1
            new["b_gate"] = bg
    else:
        Un = block.W_up.copy()
        Un[idx] *= -1
        new["W_up"] = Un
        if block.b_up is not None:
            bu = block.b_up.copy()
            bu[idx] *= -1
            new["b_up"] = bu
    if block.b_up is not None and idx.size:
        shift = c * (block.W_down[:, idx] @ block.b_up[idx])
        new["b_down"] = shift if block.b_down is None else block.b_down + shift
    return block.replace(**new, skip=np.zeros((block.d, block.d)), name=block.name + "'")


def _round_bound(block: Block, X: np.ndarray) -> np.ndarray:
    """Per-input bound (∞-norm) on the float64 evaluation error of ``f`` at the rows of X.

    Pre-activations carry γ_{d+1}(|W||x| + |b|); the activation adds at most a Lipschitz
    constant (≤ 2 for every registered σ) times that, plus a few ulps of its value; the
    output sums n + d terms: γ_{n+d+2}(|M||x| + |D||h|) + |D| e_h. A factor 4 covers
    the libm error of erf/tanh/exp beyond one ulp.
    """
    A = np.abs(X)
    g = _gamma(block.d + 2)
    pre_u = A @ np.abs(block.W_up).T + (0 if block.b_up is None else np.abs(block.b_up))
    if block.gated:
        pre_g = A @ np.abs(block.W_gate).T + (0 if block.b_gate is None else np.abs(block.b_gate))
        G = X @ block.W_gate.T + (0 if block.b_gate is None else block.b_gate)
        Hv = X @ block.W_up.T + (0 if block.b_up is None else block.b_up)
        gv = np.abs(block.activation(G))
        h = gv * np.abs(Hv)
        e_h = g * (2 * pre_g * (np.abs(Hv) + g * pre_u) + gv * pre_u + 4 * h)
    else:
        Hv = X @ block.W_up.T + (0 if block.b_up is None else block.b_up)
        h = np.abs(block.activation(Hv))
        e_h = g * (2 * pre_u + 4 * h)
    absD = np.abs(block.W_down)
    lin = A @ np.abs(block.M).T + (0 if block.b_down is None else np.abs(block.b_down))
    out = _gamma(block.n + block.d + 4) * (lin + h @ absD.T) + e_h @ absD.T
    return 4.0 * out.max(axis=1)


def _evaluate(f: Callable[[np.ndarray], np.ndarray], g: Callable[[np.ndarray], np.ndarray], blocks_f: Sequence[Block],
              blocks_g: Sequence[Block], d: int, *, seed: int, allowed_lin: float) -> tuple[bool, float, int]:
    """Compare f and g on fresh seeded inputs; allowed error per input: ``allowed_lin·‖x‖₂``
    (the exact difference, from the residual) plus the rounding bounds of both sides
    (single blocks; for stacks, per-layer bounds at each layer's input, summed)."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    ok = True
    for scale in EVAL_SCALES:
        X = rng.standard_normal((EVAL_INPUTS, d)) * scale
        fx, gx = f(X), g(X)
        diff = np.abs(fx - gx).max(axis=1)
        bound = allowed_lin * np.linalg.norm(X, axis=1)
        Xf, Xg = X, X
        for bf, bg in zip(blocks_f, blocks_g):
            bound = bound + _round_bound(bf, Xf) + _round_bound(bg, Xg)
            Xf, Xg = bf(Xf), bg(Xg)
        if len(blocks_f) > 1:  # error amplification through later layers: generous factor
            bound = bound * 10.0 ** len(blocks_f)
        ok = ok and bool(np.all(diff <= bound))
        worst = max(worst, float((diff / (np.abs(fx).max(axis=1) + np.abs(X).max(axis=1) + 1e-300)).max()))
    return ok, worst, EVAL_INPUTS * len(EVAL_SCALES)


# ------------------------------------------------------------ infeasibility checks --


def _enumerate_lower_bound(U: np.ndarray, D: np.ndarray, T: np.ndarray) -> tuple[float, float] | None:
    """(rigorous lower bound, upper bound) on min_S ‖D_S U_S − T‖_F / ‖T‖_F over all 2^n sets.

    Written from scratch: ``a_i = vec(w_i u_iᵀ)`` (rounded products: |â − a| ≤ u|a|), all
    subset sums by doubling, each entry a float sum of ≤ n + 1 terms so
    |r̂_S − r_S| ≤ e := γ_{n+1}(Σ|â_i| + |t|) + u(1+u)Σ|â_i| entrywise; the computed norm
    is within γ_{m+2} relatively. None when n > ENUM_MAX_N, the table is too large, or an
    entry is outside the range of ``_in_range``.
    """
    n, d = U.shape
    m = d * d
    if n > ENUM_MAX_N or (1 << n) * m > ENUM_MAX_ENTRIES or not _in_range(U, D, T):
        return None
    K = (D.T[:, :, None] * U[:, None, :]).reshape(n, m)
    t = T.reshape(-1)
    sums = np.zeros((1, m))
    for i in range(n):
        sums = np.concatenate([sums, sums + K[i]], axis=0)
    norms = np.sqrt(np.einsum("ij,ij->i", sums - t, sums - t))
    absK = np.abs(K).sum(axis=0)
    e = _gamma(n + 1) * (absK + np.abs(t)) + _U * (1 + _U) * absK
    gm = _gamma(m + 2)
    # + √(m·2^-1074): the squares of the m residual entries may underflow, by ≤ 2^-1074 each
    e_norm = float(np.linalg.norm(e)) * (1 + gm) + math.sqrt(m) * 2.0**-537
    tn = float(np.linalg.norm(t))
    t_hi, t_lo = tn * (1 + gm), tn * (1 - gm)
    best = float(norms.min())
    lower = max(0.0, best * (1 - gm) - e_norm) / t_hi
    upper = (best * (1 + gm) + e_norm) / t_lo
    return lower, upper


def _exact_dual_bound(U: np.ndarray, D: np.ndarray, T: np.ndarray, Yq: list[list[Fraction]]) -> tuple[Fraction, Fraction, Fraction]:
    """(numerator, ‖Y‖_F², ‖T‖_F²) of theory.md §4's dual bound in exact rationals, in its
    one-sided (box-aware) form: with c_i = w_iᵀYu_i and τ = ⟨T,Y⟩, ⟨Y, D diag(b) U − T⟩
    = Σ b_i c_i − τ lies in [Σ min(0,c_i) − τ, Σ max(0,c_i) − τ] for b ∈ [0,1]^n, and its
    distance from 0 is the numerator (≥ |τ| − Σ|c_i|, the two-sided form)."""
    Tf = _frac_matrix(T)
    d = len(Yq)
    tau = sum((Tf[i][j] * Yq[i][j] for i in range(d) for j in range(d)), Fraction(0))
    lo = hi = -tau
    for i in range(U.shape[0]):
        u, w = _frac_matrix(U[i])[0], _frac_matrix(D[:, i])[0]
        Yu = [sum((Yq[r][k] * u[k] for k in range(d)), Fraction(0)) for r in range(d)]
        ci = sum((w[r] * Yu[r] for r in range(d)), Fraction(0))
        lo += min(ci, Fraction(0))
        hi += max(ci, Fraction(0))
    num = lo if lo > 0 else (-hi if hi < 0 else Fraction(0))
    ysq = sum((v * v for row in Yq for v in row), Fraction(0))
    tsq = sum((v * v for row in Tf for v in row), Fraction(0))
    return num, ysq, tsq


def _dual_relative(U: np.ndarray, D: np.ndarray, T: np.ndarray, A: np.ndarray, B: np.ndarray) -> tuple[float | None, str]:
    """A rigorous lower bound on min_S ‖D_S U_S − T‖_F / ‖T‖_F from Y = A Bᵀ, or (None, why not).

    Uses ``absorb.verify.dual_bound.check_dual_bound`` (rigorous float64 with a rounding
    account) when that module exists; otherwise, for small instances, the same bound in
    exact rationals with ``Y = A Bᵀ`` formed exactly: rel² = num² / (‖Y‖² ‖T‖²).
    """
    try:
        from absorb.verify.dual_bound import check_dual_bound  # another developer's module; optional
    except ImportError:
        check_dual_bound = None
    if check_dual_bound is not None:
        res = check_dual_bound(U, D, T, A, B)
        return float(res.relative), "absorb.verify.dual_bound.check_dual_bound"
    n, d = U.shape
    r = A.shape[1]
    if (n + d * r) * d * d > EXACT_WORK:
        return None, "absorb.verify.dual_bound is not available and the instance is too large to re-check exactly"
    Af, Bf = _frac_matrix(A), _frac_matrix(B)
    Yq = [[sum((Af[i][k] * Bf[j][k] for k in range(r)), Fraction(0)) for j in range(d)] for i in range(d)]
    num, ysq, tsq = _exact_dual_bound(U, D, T, Yq)
    if num <= 0 or ysq == 0 or tsq == 0:
        return 0.0, "exact rational arithmetic (the dual matrix proves nothing)"
    rel = math.sqrt(num * num / (ysq * tsq))  # float sqrt of an exact ratio: relative error ≤ 2u
    return rel * (1 - 4 * _U), "exact rational arithmetic"


def _array(v: object) -> np.ndarray | None:
    if isinstance(v, dict) and v.get("omitted"):
        return None
    try:
        a = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        return None
    return a if a.ndim == 2 and np.all(np.isfinite(a)) else None


def _check_infeasible(ctx: _Ctx, w: str, block: Block, search: dict[str, Any], T: np.ndarray) -> None:
    """Re-derive 'no index set within tol' and that the recorded bound is not overstated."""
    claimed = search.get("bound")
    _require(ctx, isinstance(claimed, (int, float)) and claimed > ctx.tol, w, "the recorded bound exceeds the tolerance",
             f"bound {claimed!r}, tolerance {ctx.tol:g}")
    cert = search.get("certificate") or {}
    U, D = block.W_up, block.W_down
    done = False
    if cert.get("kind") in ("dual-low-rank", "dual"):
        A = _array(cert.get("A") if cert.get("kind") == "dual-low-rank" else cert.get("Y"))
        B = _array(cert.get("B")) if cert.get("kind") == "dual-low-rank" else (None if A is None else np.eye(block.d))
        if A is None or B is None or A.shape != B.shape or A.shape[0] != block.d:
            ctx.report.unchecked(w, "dual certificate Y = A Bᵀ", "the certificate's A, B (or Y) are missing, omitted or malformed")
        else:
            rel, how = _dual_relative(U, D, T, A, B)
            if rel is None:
                ctx.report.unchecked(w, "dual certificate Y = A Bᵀ", how)
            else:
                _require(ctx, rel > ctx.tol, w, "the dual certificate proves every S is farther than the tolerance",
                         f"re-computed bound {rel:.6g} by {how}")
                _require(ctx, claimed <= rel * (1 + 1e-9) + 1e-300, w, "the recorded bound is not overstated",
                         f"recorded {claimed:.17g}, re-computed {rel:.17g}")
                done = True
    if not done:
        res = _enumerate_lower_bound(U, D, T)
        if res is None:
            why = (f"n = {block.n} is beyond the checker's enumeration (n ≤ {ENUM_MAX_N})" if block.n > ENUM_MAX_N
                   else f"an entry is outside [2^-{_RANGE_EXPONENT}, 2^{_RANGE_EXPONENT}], where the checker's float64 bounds hold")
            ctx.report.unchecked(w, f"infeasibility proved by {search.get('method')}", f"{why} and no dual matrix was recorded")
            return
        lower, upper = res
        _require(ctx, lower > ctx.tol, w, f"re-enumerating all 2^{block.n} index sets: every S is farther than the tolerance",
                 f"min relative distance ≥ {lower:.6g}")
        _require(ctx, claimed <= upper, w, "the recorded bound is not overstated",
                 f"recorded {claimed:.17g}, true minimum ≤ {upper:.17g}")


# -------------------------------------------------------------- per-theorem checks --


def _act(block: Block) -> sp.Expr:
    return block.activation.expr


def _check_nonzero_entry(ctx: _Ctx, w: str, arg: dict[str, Any], M: np.ndarray) -> None:
    e = arg.get("M_nonzero_entry")
    _require(ctx, _skip_nonzero_arr(M), w, "the skip M is nonzero (exact)")
    if e is not None:
        i, j = int(e.get("row", -1)), int(e.get("col", -1))
        okidx = 0 <= i < M.shape[0] and 0 <= j < M.shape[1]
        _require(ctx, okidx and float(M[i, j]) == float(e.get("value", math.nan)) and M[i, j] != 0, w,
                 f"the recorded entry M[{i},{j}] = {e.get('value')} is M's and nonzero")


def _skip_nonzero_arr(M: np.ndarray) -> bool:
    return bool(np.any(M != 0))


def _check_degree(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> None:
    arg = b.get("argument", {})
    _require(ctx, _bias_free(block), w, "the block is bias-free (exact)")
    _check_nonzero_entry(ctx, w, arg, block.M)
    k_act = _parse_number(arg.get("k_activation"))
    k = _parse_number(arg.get("k"))
    _require(ctx, k_act is not None and k is not None and k == k_act + (1 if block.gated else 0), w,
             "the recorded degrees are consistent (k = k_σ, or k_g + 1 gated)", f"k_σ = {arg.get('k_activation')}, k = {arg.get('k')}")
    _require(ctx, homogeneous_of_degree(_act(block), k_act), w,
             f"σ is positively homogeneous of degree {k_act} (sympy, cases x = tp, −tp, 0)")
    _require(ctx, bool(k > 0) and k != 1, w, f"k = {k} > 0 and k ≠ 1")


def _check_linearization(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> None:
    arg = b.get("argument", {})
    _require(ctx, block.gated, w, "the block is gated")
    _require(ctx, _bias_free(block), w, "the block is bias-free (exact)")
    _check_nonzero_entry(ctx, w, arg, block.M)
    dg0 = _gate_derivative_at_zero(_act(block))
    _require(ctx, dg0 is not None, w, "g(0) = 0 and g is differentiable at 0 (sympy one-sided limits)")
    rec = _parse_number(arg.get("dg0"))
    _require(ctx, rec is None or _zero(rec - dg0) is True, w, f"g'(0) = {dg0} as recorded", f"recorded {arg.get('dg0')}")
    jac = arg.get("jacobian_f_at_0")
    if jac is not None:
        Mf = _frac_matrix(block.M)
        try:
            J = [[Fraction(str(v)) for v in row] for row in jac]
        except (ValueError, ZeroDivisionError):
            J = None
        _require(ctx, J == Mf, w, "the recorded exact Jacobian J_f(0) equals M (= M + W_down diag(g(0)) W_up)")


def _check_bounded(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> None:
    _require(ctx, not block.gated, w, "the block is ungated")
    _check_nonzero_entry(ctx, w, b.get("argument", {}), block.M)
    _require(ctx, is_bounded(_act(block)), w, "σ is continuous with finite limits at ±∞ (sympy), hence bounded")


def _check_linear(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> str:
    """Returns the verdict the rank supports ('absorbable' / 'not_absorbable' / 'unknown')."""
    _require(ctx, not block.gated and is_identity(_act(block)), w, "σ is the identity (sympy)")
    d, n = block.d, block.n
    U, D, M = block.W_up, block.W_down, block.M
    if n >= d:
        ctx.report.ok(w, f"n = {n} ≥ d = {d}: every linear map of R^{d} has rank ≤ n")
        return "absorbable"
    A = M + D @ U
    s = np.linalg.svd(A, compute_uv=False)
    err_A = _gamma(n + 2) * float(np.linalg.norm(np.abs(M) + np.abs(D) @ np.abs(U)))
    err_svd = 10 * d * 2 * _U * float(s[0])
    lower = float(s[n]) - err_A - err_svd
    scale = float(np.linalg.norm(M))
    exact = None
    if d <= EXACT_ELIM_MAX_D and n * d * d <= EXACT_WORK:
        Uf, Df, Mf = _frac_matrix(U), _frac_matrix(D), _frac_matrix(M)
        Aq = [[Mf[i][j] + sum((Df[i][k] * Uf[k][j] for k in range(n)), Fraction(0)) for j in range(d)] for i in range(d)]
        exact = exact_rank(Aq)
    if b.get("verdict") == "not_absorbable":
        arg = b.get("argument", {})
        claimed = arg.get("sigma_lower_bound")
        _require(ctx, lower > ctx.tol * scale, w, f"σ_{n + 1}(M + W_down W_up) > τ‖M‖_F: rank > n",
                 f"rigorous lower bound {lower:.6g} (computed {s[n]:.6g}); exact rank {exact}" if exact is not None else f"rigorous lower bound {lower:.6g}")
        _require(ctx, isinstance(claimed, (int, float)) and claimed <= float(s[n]) + err_A + err_svd, w,
                 "the recorded lower bound on σ_{n+1} is not overstated", f"recorded {claimed!r}, computed {s[n]:.17g}")
        if exact is not None:
            _require(ctx, exact > n, w, f"exact rank of M + W_down W_up is {exact} > n = {n}")
        return "not_absorbable"
    tail = float(np.sqrt(np.sum(s[n:] ** 2)))
    if exact is not None and exact <= n:
        ctx.report.ok(w, f"exact rank {exact} ≤ n = {n}")
        return "absorbable"
    if tail + err_A + err_svd <= ctx.tol * scale:
        ctx.report.ok(w, f"M + W_down W_up is within τ of rank ≤ n (tail {tail:.3g})")
        return "absorbable"
    return "unknown"


def _linear_witness(block: Block) -> Block:
    """A residual-free linear block equal to f (n ≥ d: W'_up = [I; 0]; else truncated SVD)."""
    d, n = block.d, block.n
    A = block.M + block.W_down @ block.W_up
    Wu, Wd = np.zeros((n, d)), np.zeros((d, n))
    if n >= d:
        Wu[:d], Wd[:, :d] = np.eye(d), A
    else:
        Ul, s, Vt = np.linalg.svd(A)
        Wu[:n], Wd[:, :n] = Vt[:n], Ul[:, :n] * s[:n]
    b = (0 if block.b_up is None else block.W_down @ block.b_up) + (0 if block.b_down is None else block.b_down)
    return block.replace(W_up=Wu, W_down=Wd, b_up=None, b_gate=None, b_down=None if np.isscalar(b) else np.asarray(b, dtype=float),
                         skip=np.zeros((d, d)), name=block.name + "'")


def _necessity_failures(ctx: _Ctx, block: Block) -> tuple[list[str], str]:
    """Result 5's hypotheses that fail on these weights (re-derived here), and a note."""
    out = []
    if block.gated:
        out.append("the block is gated")
    elif not is_relu_or_gelu(_act(block)):
        out.append("σ is not ReLU or GELU")
    if not _bias_free(block):
        out.append("the block has biases")
    if block.d < 2:
        out.append("d < 2")
    inv, inv_how = _skip_invertible(ctx, block)
    if inv is not True:
        out.append(f"M is not proved invertible ({inv_how})")
    if np.any(~np.any(block.W_up != 0, axis=1)):
        out.append("a row of W_up is zero")
    if np.any(~np.any(block.W_down != 0, axis=0)):
        out.append("a column of W_down is zero")
    pairs, worst = _row_pairs(ctx, block)
    if pairs:
        out.append(f"rows {pairs[0][0]} and {pairs[0][1]} of W_up are collinear")
    rows = (f"max |cos| between rows of W_up {worst:.6g}" if worst is not None
            else "rows of W_up screened by one projection, candidates decided in ℚ")
    return out, f"{'H_res' if block.hc is not None else 'M'}: {inv_how}; {rows}"


def _check_index_set(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> tuple[str, Block | None, float]:
    """Returns (the verdict the evidence supports, the witness rebuilt here or None, the
    allowed linear error ‖c·(D_S U_S + M/c)‖ for the evaluation check)."""
    c = flip_constant(_act(block), block.gated)
    _require(ctx, c is not None, w, ("g(z) + g(−z) = c" if block.gated else "σ(z) − σ(−z) = c·z") + " for all z, with a constant c ≠ 0 (sympy)")
    rec_c = _parse_number(b.get("argument", {}).get("c"))
    _require(ctx, rec_c is not None and _zero(rec_c - c) is True, w, f"the flip constant is c = {c} as recorded",
             f"recorded {b.get('argument', {}).get('c')!r}")
    _require(ctx, isinstance(c, sp.Rational), w, "c is rational (the target −M/c is exact)")
    cq = Fraction(int(c.p), int(c.q))
    if block.hc is not None:
        s = block.hc.s
        _require(ctx, np.array_equal(block.M, np.kron(block.hc.H_res, np.eye(block.d // s))), w, "M = H_res ⊗ I_d (the lifted skip)")
    verdict = b.get("verdict")
    wit = b.get("witness")
    if verdict == "absorbable" or (wit is not None and wit.get("S") is not None):
        _require(ctx, wit is not None and isinstance(wit.get("S"), list), w, "an absorbable verdict comes with an index set S")
        S = wit["S"]
        _require(ctx, all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < block.n for i in S) and len(set(S)) == len(S), w,
                 f"S is a set of distinct hidden units in 0..{block.n - 1}")
        rel, upper, zero, slack = _residual(block.W_up, block.W_down, block.M, cq, S)
        how = ("exactly 0 (rationals)" if zero else f"{rel:.3g}, exact rationals" if zero is False
               else f"{rel:.3g}, rigorous upper bound {upper:.3g} (float64)")
        _require(ctx, upper <= ctx.tol, w, f"‖W_down[:,S] W_up[S,:] + M/c‖_F / ‖M/c‖_F ≤ τ = {ctx.tol:g}", f"relative residual {how}")
        claimed = wit.get("residual")
        _require(ctx, isinstance(claimed, (int, float)) and abs(claimed - rel) <= 1e-6 * rel + 2 * slack + 2 * (upper - rel), w,
                 "the recorded residual matches", f"recorded {claimed!r}, re-computed {rel:.6g}")
        _require(ctx, wit.get("exact") is None or zero is None or wit.get("exact") == zero, w, "the recorded exactness matches",
                 f"recorded {wit.get('exact')!r}, re-derived {zero!r}")
        wb = _flip_block(block, S, float(cq))
        recs = (wit.get("block") or {}).get("weights", {})
        for key in ("W_up", "W_gate", "W_down"):
            a = getattr(wb, key)
            if a is not None and key in recs:
                _require(ctx, recs[key].get("sha256") == sha256_f64(a), w, f"the witness's {key}' is the flip of S (SHA-256)")
        # B'(x) − f(x) = −c (D_S U_S + M/c) x exactly, so |B' − f| ≤ |c| ‖R‖_F ‖x‖₂.
        allowed = abs(float(cq)) * upper * float(np.linalg.norm(block.M)) / abs(float(cq))
        return "absorbable", wb, allowed
    search = b.get("search") or {}
    failing, note = _necessity_failures(ctx, block)
    if verdict == "not_absorbable":
        _require(ctx, not failing, w, "result 5's hypotheses hold: ungated ReLU/GELU, bias-free, d ≥ 2, M invertible, "
                 "rows of W_up nonzero and pairwise non-collinear, columns of W_down nonzero", "; ".join(failing) or note)
        _require(ctx, search.get("status") == "infeasible", w, "the index-set search proved infeasibility",
                 f"search status {search.get('status')!r}")
        _check_infeasible(ctx, w, block, search, -block.M / float(cq))
        return "not_absorbable", None, 0.0
    recorded_all_hold = all(h.get("holds") is not False for h in b.get("hypotheses", []))
    if search.get("status") == "infeasible" and not failing and recorded_all_hold:
        return "not_absorbable", None, 0.0  # the certificate's own evidence proves more than it claims
    return "unknown", None, 0.0


def _check_recorded_hypotheses(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> None:
    """A hypothesis recorded as holding must hold when re-derived (the dangerous direction)."""
    redo: dict[str, Callable[[], bool | None]] = {
        "skip_nonzero": lambda: _skip_nonzero(block),
        "bias_free": lambda: _bias_free(block),
        "d_at_least_2": lambda: block.d >= 2,
        "rows_nonzero": lambda: bool(np.all(np.any(block.W_up != 0, axis=1))),
        "columns_nonzero": lambda: bool(np.all(np.any(block.W_down != 0, axis=0))),
        "skip_invertible": lambda: _skip_invertible(ctx, block)[0],
        "rows_noncollinear": lambda: not _row_pairs(ctx, block)[0],
    }
    for h in b.get("hypotheses", []):
        name = h.get("name")
        if h.get("holds") is True and name in redo:
            mine = redo[name]()
            _require(ctx, mine is True, w, f"hypothesis {name} holds", f"certificate: {h.get('statement')}; re-derived: {mine}")


_BLOCK_THEOREMS = {"trivial", "degree", "linearization", "bounded", "linear", "index-set", "none"}


def check_block(ctx: _Ctx, b: dict[str, Any], block: Block) -> tuple[str | None, Block | None]:
    """Re-derive one block's claims. Returns (the verdict re-derived, or None when a claim
    failed; the witness block rebuilt here for absorbable blocks)."""
    w = _where(b)
    ctx.once.clear()
    try:
        _check_identity(ctx, b, block)
        _require(ctx, b.get("tolerance") == ctx.tol, w, "the block's tolerance is the certificate's")
        th = (b.get("theorem") or {}).get("id")
        verdict = b.get("verdict")
        _require(ctx, th in _BLOCK_THEOREMS, w, f"the theorem id {th!r} is known")
        _require(ctx, verdict in ("absorbable", "not_absorbable", "unknown"), w, f"the verdict {verdict!r} is one of three")
        _check_recorded_hypotheses(ctx, w, b, block)
        witness: Block | None = None
        allowed = 0.0
        if th == "trivial":
            _require(ctx, block.skip is not None and not np.any(block.skip), w, "every entry of M is zero: f = B is residual-free")
            supported, witness = "absorbable", block.as_residual_free()
        elif th == "degree":
            _check_degree(ctx, w, b, block)
            supported = "not_absorbable"
        elif th == "linearization":
            _check_linearization(ctx, w, b, block)
            supported = "not_absorbable"
        elif th == "bounded":
            _check_bounded(ctx, w, b, block)
            supported = "not_absorbable"
        elif th == "linear":
            supported = _check_linear(ctx, w, b, block)
            if supported == "absorbable":
                witness = _linear_witness(block)
                A = block.M + block.W_down @ block.W_up
                # rounding of A itself (γ_{n+2}(|M| + |D||U|)), the SVD, and the tolerated tail
                allowed = (_gamma(block.n + 2) * float(np.linalg.norm(np.abs(block.M) + np.abs(block.W_down) @ np.abs(block.W_up)))
                           + 20 * block.d * _U * float(np.linalg.norm(A))
                           + (ctx.tol * float(np.linalg.norm(block.M)) if block.n < block.d else 0.0))
        elif th == "index-set":
            supported, witness, allowed = _check_index_set(ctx, w, b, block)
        else:
            supported = "unknown"
        if verdict == "unknown":
            _require(ctx, supported != "not_absorbable" and th != "trivial" and (supported == "unknown" or th == "linear"), w,
                     "the verdict 'unknown' is what the evidence supports",
                     f"the evidence for result {th!r} proves {supported!r}: the verdict was changed")
        else:
            _require(ctx, verdict == supported, w, f"the verdict {verdict!r} follows from result {th!r}",
                     f"the evidence supports {supported!r}")
        if verdict == "absorbable" and witness is not None:
            ok, worst, m = _evaluate(block, witness, [block], [witness], block.d, seed=ctx.seed, allowed_lin=allowed)
            _require(ctx, ok, w, f"the residual-free block rebuilt here equals f on {m} fresh random inputs",
                     f"max relative difference {worst:.3g}")
        return verdict, witness
    except _Reject:
        return None, None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:  # a malformed (or forged) document
        ctx.report.fail(w, "the certificate is well-formed", f"{type(exc).__name__}: {exc}")
        return None, None


def verify_certificate(cert: dict[str, Any], model: Block | Stack | Sequence[Block], *, seed: int = DEFAULT_SEED) -> Report:
    """Re-derive every claim of ``cert`` (a parsed certificate) on ``model``; see the module doc."""
    report = Report()
    tol = cert.get("parameters", {}).get("tolerance")
    structure = cert.get("input", {}).get("structure", "block")
    if isinstance(model, Stack):
        blocks: Any = list(model.blocks)
    elif isinstance(model, Block):
        blocks = [model]
    elif structure == "collection" and hasattr(model, "__len__") and not isinstance(model, Sequence):
        blocks = model  # a lazy checkpoint: read, checked and dropped one block at a time
    else:
        blocks = list(model)
    entries = cert["blocks"]
    if not isinstance(tol, (int, float)) or not tol > 0:
        report.fail("certificate", "the tolerance is a positive number", f"got {tol!r}")
        return report
    ctx = _Ctx(report, float(tol), seed)
    if len(entries) != len(blocks):
        report.fail("certificate", "the certificate covers the model's blocks", f"{len(entries)} blocks certified, model has {len(blocks)}")
        return report
    results = []
    for b, blk in zip(entries, blocks):
        verdict, witness = check_block(ctx, b, blk)
        results.append((verdict, None if structure == "collection" else witness))  # (stacks need the witnesses)
        del blk, witness
    verdicts = [v for v, _ in results]
    if any(v is None for v in verdicts):
        return report
    top, th = cert.get("verdict"), (cert.get("theorem") or {}).get("id")
    try:
        if structure == "block" or len(blocks) == 1 and structure != "collection":
            _require(ctx, top == verdicts[0] and th == (entries[0].get("theorem") or {}).get("id"), "certificate",
                     "the overall verdict and theorem are the block's", f"overall {top!r}/{th!r}, block {verdicts[0]!r}")
        elif structure == "collection":
            want = ("absorbable" if all(v == "absorbable" for v in verdicts) else
                    "not_absorbable" if any(v == "not_absorbable" for v in verdicts) else "unknown")
            _require(ctx, top == want, "certificate", "the overall verdict follows from the blocks' (collection rule)",
                     f"overall {top!r}, blocks give {want!r}")
        else:
            _check_stack(ctx, cert, blocks, entries, verdicts, [wb for _, wb in results])
    except _Reject:
        pass
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        report.fail("certificate", "the certificate is well-formed", f"{type(exc).__name__}: {exc}")
    return report


def _check_stack(ctx: _Ctx, cert: dict[str, Any], blocks: list[Block], entries: list[dict[str, Any]], verdicts: list[str | None],
                 witnesses: list[Block | None]) -> None:
    top, th = cert.get("verdict"), (cert.get("theorem") or {}).get("id")
    w = "stack"
    if top == "absorbable":
        _require(ctx, th == "composition" and all(v == "absorbable" for v in verdicts) and all(x is not None for x in witnesses), w,
                 "every block is absorbable, so the stack is (composition)")
        st = Stack(tuple(blocks))
        G = Stack(tuple(witnesses))  # type: ignore[arg-type]
        allowed = ctx.tol * sum(float(np.linalg.norm(b.M)) for b in blocks) * 10
        ok, worst, m = _evaluate(st, G, blocks, list(witnesses), blocks[0].d, seed=ctx.seed, allowed_lin=allowed)  # type: ignore[arg-type]
        _require(ctx, ok, w, f"the composed witnesses equal F on {m} fresh random inputs", f"max relative difference {worst:.3g}")
    elif top == "not_absorbable":
        _require(ctx, th == "depth", w, "a stack is proved not absorbable by the depth result", f"theorem {th!r}")
        for b, blk in zip(entries, blocks):
            bw = _where(b)
            _require(ctx, _bias_free(blk), bw, "bias-free (needed for flatness at 0)")
            act = _act(blk)
            flat = False
            x = _variable(act)
            k_rec = _parse_number((b.get("argument") or {}).get("k_activation"))
            for k in ([k_rec] if k_rec is not None else []) + [sp.Integer(2), sp.Integer(1), sp.Integer(3)]:
                if homogeneous_of_degree(act, k) and (k + (1 if blk.gated else 0)) > 1:
                    ctx.report.ok(bw, f"flat at 0: homogeneous of total degree {k + (1 if blk.gated else 0)} > 1 (sympy)")
                    flat = True
                    break
            if not flat and blk.gated and _gate_derivative_at_zero(act) is not None:
                ctx.report.ok(bw, "flat at 0: gated with g(0) = 0 and g differentiable at 0 (sympy)")
                flat = True
            _require(ctx, flat, bw, "every residual-free block of this layer is o(|x|) at 0", f"activation {x}↦{act}")
        d = blocks[0].d
        if d <= EXACT_ELIM_MAX_D * 2:
            P = [[Fraction(int(i == j)) for j in range(d)] for i in range(d)]
            for blk in blocks:
                Mf = _frac_matrix(blk.M)
                P = [[sum((Mf[i][k] * P[k][j] for k in range(d)), Fraction(0)) for j in range(d)] for i in range(d)]
            nz = any(v != 0 for row in P for v in row)
            _require(ctx, nz, w, "M_L⋯M_1 ≠ 0 (exact rationals)")
        else:
            Pm, Pa = np.eye(d), np.eye(d)
            for blk in blocks:
                Pm, Pa = blk.M @ Pm, np.abs(blk.M) @ Pa
            margin = np.abs(Pm) - 2 * _gamma(len(blocks) * (d + 1)) * Pa
            _require(ctx, bool(np.any(margin > 0)), w, "M_L⋯M_1 ≠ 0 (float64 with rounding margin)")
    else:
        _require(ctx, top == "unknown", w, f"the verdict {top!r} is one of three")
