"""The decision engine: which result applies to these weights, and what it proves.

Flow for one block (theory.md §2–3), each step only when its hypotheses were checked:

1. ``M = 0``: already residual-free (trivial).
2. Bias-free and σ (or the gate times the linear value) positively homogeneous of degree
   k ≠ 1: the **degree** argument — not absorbable for every ``M ≠ 0``, singular or not.
3. Bias-free, gated, g(0) = 0 and g differentiable at 0: **linearization** — not absorbable.
4. Ungated, σ bounded: B' is bounded while ``M x + B(x)`` is not — not absorbable (beyond).
5. Ungated identity σ: ``f`` is linear; a **rank** condition decides (beyond).
6. σ with the flip identity (σ(z) − σ(−z) = c z, or g(z) + g(−z) = c when gated): search
   an **index set** with ``D_S U_S = −M/c``. A found S is absorbable once its witness block
   checks; a proved absence is ``not_absorbable`` only under result 5's hypotheses (σ is
   ReLU or GELU, ungated, bias-free, d ≥ 2, M invertible — result 1's reduction —, weights
   nondegenerate); otherwise ``unknown`` naming the hypothesis that fails.
7. Anything else: ``unknown``.

Stacks: every block absorbable ⇒ the composition is (checked by evaluation); every block
flat at 0 (B'(x) = o(|x|)) and ``M_L⋯M_1 ≠ 0`` ⇒ not absorbable (**depth**, result 4);
else unknown (deep ReLU/GELU stacks are the paper's open problem).
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Callable, Iterable

import numpy as np
import sympy as sp

from absorb.engine import hypotheses as hyp
from absorb.engine.degenerate import decide_degenerate, family_of
from absorb.engine.verdict import BlockDecision, Decision, Hypothesis, Theorem, Verdict, Witness
from absorb.engine.witness import check_flip_witness, evaluation_error, eval_threshold
from absorb.model.activations import X, get_activation
from absorb.model.block import Block, Stack, check_decide_inputs
from absorb.search import SAFE_EXPONENT, find_index_set, magnitudes_ok
from absorb.search import gamma as _gamma  # Higham's γ_k, shared with the search backends
from absorb.search._types import DEFAULT_TOL, SearchStatus
from absorb.symbolic import properties as props

_NECESSITY = ("relu", "gelu")  # result 5's necessity is the paper's for these σ only
_EPS = np.finfo(float).eps

Progress = Callable[[str], None]


def _necessity_activation(block: Block) -> bool:
    return any(block.activation.expr == get_activation(n).expr for n in _NECESSITY)


def _sympy_fraction(v: sp.Expr) -> Fraction | None:
    return Fraction(int(v.p), int(v.q)) if isinstance(v, sp.Rational) else None


def decide_block(block: Block, *, tol: float = DEFAULT_TOL, timeout: float = 60.0, seed: int = 0, method: str = "auto",
                 search_progress: Progress | None = None) -> BlockDecision:
    """Decide whether ``f(x) = M x + B(x)`` equals some residual-free block of width n.

    ``search_progress`` (optional) is called now and then during a long index-set search
    with a short note, e.g. ``"meet-in-the-middle: 120/2048 regions"``."""
    check_decide_inputs(block, tol=tol, timeout=timeout, seed=seed, method=method)
    H: list[Hypothesis] = []
    P: list[props.Property] = []

    def done(verdict: Verdict, theorem: Theorem, reason: str, **kw: object) -> BlockDecision:
        return BlockDecision(block=block, verdict=verdict, theorem=theorem, reason=reason, tolerance=tol,
                             hypotheses=tuple(H), properties=tuple(P), **kw)

    act, gated = block.activation, block.gated
    nz = hyp.skip_nonzero(block)
    H.append(nz)
    if not nz.holds:
        w = _trivial_witness(block, seed=seed, tol=tol)
        return done(Verdict.ABSORBABLE, Theorem.TRIVIAL, "The skip matrix is zero: the block is already residual-free (B' = B).", witness=w)
    bf = hyp.bias_free(block)
    H.append(bf)

    # Flat at 0: every residual-free block of this kind is o(|x|) at 0 (used for stacks).
    flat = False
    if bf.holds:
        hom = props.homogeneity(act)
        P.append(hom)
        if hom.proved:
            k = hom.value["k"] + (1 if gated else 0)
            if k.is_positive and k != 1:
                flat = bool(k > 1)
                kind = "g(W_gate x) ⊙ (W_up x)" if gated else "σ"
                return done(Verdict.NOT_ABSORBABLE, Theorem.DEGREE,
                            f"Degree argument: {kind} is positively homogeneous of degree {k} ≠ 1, so every residual-free block B' is too, "
                            f"and t^{k}·B'(x) = t·M x + t^{k}·B(x) for all t > 0 forces M = 0; but M ≠ 0.",
                            flat_at_zero=flat)
        if gated:
            vg = props.vanishing_gate(act)
            P.append(vg)
            if vg.proved:
                return done(Verdict.NOT_ABSORBABLE, Theorem.LINEARIZATION,
                            f"Linearization: g(0) = 0 and g is differentiable at 0 (g'(0) = {vg.value['dg0']}), so every residual-free "
                            "block has Jacobian 0 at the origin, while f has Jacobian M ≠ 0 there.", flat_at_zero=True)
    if not gated:
        bd = props.bounded(act)
        P.append(bd)
        if bd.proved:
            return done(Verdict.NOT_ABSORBABLE, Theorem.BOUNDED,
                        "Boundedness: σ is bounded, so every residual-free block is bounded, while M x + B(x) is unbounded because "
                        "B is bounded and M ≠ 0.")
        if act.expr == X:
            return _decide_linear(block, H, P, tol=tol, seed=seed)

    flip = props.flip_identity(act, gated=gated)
    P.append(flip)
    if not flip.proved:
        why = "no result of the paper (or beyond it) covers this activation"
        missing = [p.statement for p in P if not p.proved]
        return done(Verdict.UNKNOWN, Theorem.NONE, f"Unknown: {why} ({'; '.join(missing)})." if missing else f"Unknown: {why}.")
    c = _sympy_fraction(flip.value["c"])
    if c is None:
        return done(Verdict.UNKNOWN, Theorem.NONE, f"Unknown: the flip constant c = {flip.value['c']} is not rational, so the index-set witness cannot be checked exactly.")

    # Result 5's hypotheses (necessity), checked before the search so the report shows them.
    d2 = hyp.dimension(block)
    inv = hyp.skip_invertible(block)
    nd = hyp.nondegenerate(block)
    H.extend([d2, inv, *nd])
    failing = []
    if gated:
        failing.append("the block is gated (necessity is proved for ungated ReLU and GELU only)")
    elif not _necessity_activation(block):
        failing.append(f"σ = {block.activation_name} is not ReLU or GELU (necessity is proved for those only)")
    failing += [h.statement for h in (bf, d2, inv, *nd) if not h.holds]

    def degenerate_or(fallback: BlockDecision) -> BlockDecision:
        # beyond (docs/degenerate.md): result 5's hypotheses fail, but for bias-free ungated
        # ReLU/GELU/SiLU the canonical-form procedure decides any weights, exactly.
        if gated or not bf.holds or not failing or family_of(block) is None:
            return fallback
        dd = decide_degenerate(block, tol=tol, seed=seed)
        if dd.verdict is Verdict.UNKNOWN:
            return fallback
        return done(dd.verdict, Theorem.CANONICAL_FORM, dd.reason, witness=dd.witness, search=fallback.search)

    T = -block.M / float(c)
    res = find_index_set(block.W_up, block.W_down, T, tol=tol, timeout=timeout, method=method, seed=seed,
                         progress=search_progress)
    if res.status is SearchStatus.FOUND:
        w, ok = check_flip_witness(block, res.S, c, tol=tol, seed=seed)
        if ok:
            sz = f"|S| = {len(res.S)}"
            return done(Verdict.ABSORBABLE, Theorem.INDEX_SET,
                        f"Index set found ({sz}) with W_down[:,S] W_up[S,:] = {'-M' if c == 1 else f'-M/c (c = {c})'} "
                        f"(relative residual {w.residual:.2e}); flipping those units gives a residual-free block equal to f "
                        f"(checked on {w.n_inputs} random inputs, max relative error {w.eval_error:.2e}).",
                        witness=w, search=res)
        return done(Verdict.UNKNOWN, Theorem.INDEX_SET,
                    f"Unknown: {res.method} proposed an index set but its witness failed the independent check "
                    f"(residual {w.residual:.2e}, evaluation error {w.eval_error:.2e}).", search=res)
    if res.status is SearchStatus.INFEASIBLE:
        if not failing:
            return done(Verdict.NOT_ABSORBABLE, Theorem.INDEX_SET,
                        f"No index set S has W_down[:,S] W_up[S,:] = -M (proved by {res.method}: every S is at relative distance "
                        f"≥ {res.bound:.3g} > tolerance); by result 5 (with result 1's reduction of the invertible skip), "
                        "for nondegenerate ReLU/GELU weights absorption holds only with such an S.", search=res)
        return degenerate_or(done(Verdict.UNKNOWN, Theorem.INDEX_SET,
                    f"Unknown: no index set exists (proved by {res.method}, relative distance ≥ {res.bound:.3g}), but result 5's "
                    f"necessity does not apply: {'; '.join(failing)}.", search=res))
    return degenerate_or(done(Verdict.UNKNOWN, Theorem.INDEX_SET, f"Unknown: the index-set search did not decide: {res.reason}", search=res))


def _trivial_witness(block: Block, *, seed: int, tol: float) -> Witness:
    wb = block.as_residual_free()
    err, m = evaluation_error(block, wb, block.d, seed=seed)
    assert err <= eval_threshold(tol, block.n), err
    return Witness(S=(), block=wb, residual=0.0, eval_error=err, n_inputs=m, exact=True, description="B' = B")


def _decide_linear(block: Block, H: list[Hypothesis], P: list[props.Property], *, tol: float, seed: int) -> BlockDecision:
    """Identity σ: f(x) = A x + b with A = M + D U. A residual-free block realises exactly
    the maps of rank ≤ n, so absorbable iff rank A ≤ n (within tolerance)."""
    d, n = block.d, block.n
    U, D, M = block.W_up, block.W_down, block.M

    def done(verdict: Verdict, reason: str, witness: Witness | None = None) -> BlockDecision:
        return BlockDecision(block=block, verdict=verdict, theorem=Theorem.LINEAR, reason=reason, tolerance=tol,
                             hypotheses=tuple(H), properties=tuple(P), witness=witness)

    if not magnitudes_ok(U, D, M):  # the rank bound below models relative rounding only
        return done(Verdict.UNKNOWN, f"Unknown: σ is the identity, but an entry of W_up, W_down or M is outside "
                    f"[2^-{SAFE_EXPONENT}, 2^{SAFE_EXPONENT}], where the float64 rank bound holds (products there "
                    "can underflow or overflow); rescale the weights.")
    A = M + D @ U
    b = (D @ block.b_up if block.b_up is not None else 0) + (block.b_down if block.b_down is not None else 0)
    bvec = None if np.isscalar(b) else np.asarray(b, dtype=float)
    Ul, s, Vt = np.linalg.svd(A)
    r = min(n, d)
    W_up = np.zeros((n, d))
    W_down = np.zeros((d, n))
    W_up[:r] = Vt[:r]
    W_down[:, :r] = Ul[:, :r] * s[:r]
    if n >= d:
        W_up[:d], W_down[:, :d] = np.eye(d), A
    wb = block.replace(W_up=W_up, W_down=W_down, b_up=None, b_gate=None, b_down=bvec, skip=np.zeros((d, d)), name=block.name + "'")
    if n >= d:
        err, m = evaluation_error(block, wb, d, seed=seed)
        w = Witness(S=None, block=wb, residual=0.0, eval_error=err, n_inputs=m, description="W'_up = [I; 0], W'_down = [M + W_down W_up, 0]")
        if err <= eval_threshold(tol, n):
            return done(Verdict.ABSORBABLE, f"σ is the identity, so f(x) = (M + W_down W_up) x + b is linear and n = {n} ≥ d = {d}: "
                        "a residual-free linear block of width n realises it.", w)
        return done(Verdict.UNKNOWN, f"Unknown: the linear witness failed its check (error {err:.2e}).")
    # Rigorous lower bound on σ_{n+1}(A): rounding of A (γ_{n+1}|D||U|) plus SVD backward error.
    err_A = _gamma(n + 2) * float(np.linalg.norm(np.abs(M) + np.abs(D) @ np.abs(U)))
    err_svd = 10 * d * _EPS * float(s[0])
    tail = float(np.sqrt(np.sum(s[n:] ** 2)))
    lower = max(0.0, float(s[n]) - err_A - err_svd)
    scale = float(np.linalg.norm(M))
    H.append(Hypothesis("rank", None, f"σ_{n + 1}(M + W_down W_up) = {s[n]:.3g} (rigorous lower bound {lower:.3g})",
                        {"singular_values": s[: n + 2].tolist(), "lower_bound": lower}))
    if lower > tol * scale:
        return done(Verdict.NOT_ABSORBABLE, f"σ is the identity, so f(x) = (M + W_down W_up) x + b is linear of rank > n = {n}: "
                    f"σ_{n + 1} ≥ {lower:.3g} > tolerance, while a residual-free block of width n has rank ≤ n.")
    if tail <= tol * scale:
        err, m = evaluation_error(block, wb, d, seed=seed)
        w = Witness(S=None, block=wb, residual=tail / scale, eval_error=err, n_inputs=m, description="truncated SVD of M + W_down W_up")
        if err <= eval_threshold(tol, n):
            return done(Verdict.ABSORBABLE, f"σ is the identity and M + W_down W_up has rank ≤ n = {n} (tail {tail:.2e}): its truncated SVD is a residual-free block equal to f.", w)
    return done(Verdict.UNKNOWN, f"Unknown: σ_{n + 1}(M + W_down W_up) = {s[n]:.3g} is within rounding of the tolerance.")


def _skip_product_nonzero(blocks: Iterable[Block]) -> tuple[bool, float]:
    """M_L⋯M_1 ≠ 0, with a rigorous rounding account (|fl(AB) − AB| ≤ γ_d |A||B| per step)."""
    blocks = list(blocks)
    if all(b.skip is None for b in blocks):
        return True, 1.0
    d = blocks[0].d
    Pm, Pa = np.eye(d), np.eye(d)
    for b in blocks:
        Pm, Pa = b.M @ Pm, np.abs(b.M) @ Pa
    margin = np.abs(Pm) - 2 * _gamma(len(blocks) * (d + 1)) * Pa
    return bool(np.any(margin > 0)), float(np.abs(Pm).max())


def decide_stack(stack: Stack, *, path: str = "", tol: float = DEFAULT_TOL, timeout: float = 60.0, seed: int = 0,
                 method: str = "auto", progress: Progress | None = None,
                 search_progress: Progress | None = None) -> Decision:
    """Decide a stack ``F = f_L ∘ … ∘ f_1`` (a single block is a stack of one).

    ``progress`` is called with each block's name before it is decided;
    ``search_progress`` with ``"<name>: <note>"`` during a long index-set search."""
    check_decide_inputs(stack, tol=tol, timeout=timeout, seed=seed, method=method)
    decisions = []
    for blk in stack.blocks:
        if progress:
            progress(blk.name)
        note = None if search_progress is None else (lambda s, name=blk.name: search_progress(f"{name}: {s}"))
        decisions.append(decide_block(blk, tol=tol, timeout=timeout / max(1, len(stack)), seed=seed, method=method,
                                      search_progress=note))
    if len(stack) == 1:
        (bd,) = decisions
        return Decision(path=path, verdict=bd.verdict, theorem=bd.theorem, reason=bd.reason, blocks=(bd,), tolerance=tol,
                        structure="block", witness=bd.witness)
    L = len(stack)
    if all(d.verdict is Verdict.ABSORBABLE for d in decisions):
        G = Stack(tuple(d.witness.block for d in decisions))
        err, m = evaluation_error(stack, G, stack.blocks[0].d, seed=seed)
        w = Witness(S=None, block=decisions[0].witness.block, residual=None, eval_error=err, n_inputs=m,
                    description="the composition of the blocks' witnesses")
        if err <= eval_threshold(tol, max(b.n for b in stack.blocks)) * L:
            return Decision(path=path, verdict=Verdict.ABSORBABLE, theorem=Theorem.COMPOSITION,
                            reason=f"Every one of the {L} blocks is absorbable; composing their residual-free witnesses gives "
                                   f"{L} residual-free blocks equal to F (checked on {m} random inputs, max relative error {err:.2e}).",
                            blocks=tuple(decisions), tolerance=tol, structure="stack", witness=w)
    if all(d.flat_at_zero for d in decisions):
        nonzero, _ = _skip_product_nonzero(stack.blocks)
        if nonzero:
            return Decision(path=path, verdict=Verdict.NOT_ABSORBABLE, theorem=Theorem.DEPTH,
                            reason=f"Depth argument: each of the {L} residual-free blocks is o(|x|) at 0 (homogeneous of degree > 1, or a gate "
                                   "with g(0) = 0 differentiable at 0), so their composition G has G(tx)/t → 0 as t → 0, while "
                                   "F(tx)/t → M_L⋯M_1 x ≠ 0.", blocks=tuple(decisions), tolerance=tol, structure="stack")
    if all(b.activation.expr in (get_activation("relu").expr, get_activation("gelu").expr) and not b.gated for b in stack.blocks):
        why = ("whether deep compositions of ReLU/GELU residual blocks can be absorbed is the paper's open problem; "
               "per-block verdicts are for each block in isolation")
    else:
        why = "no depth result covers this stack (it needs every block to be bias-free and flat at 0, e.g. ReLU², ReGLU, SwiGLU, GeGLU)"
    return Decision(path=path, verdict=Verdict.UNKNOWN, theorem=Theorem.NONE, reason=f"Unknown: {why}.",
                    blocks=tuple(decisions), tolerance=tol, structure="stack")


def decide(model: Block | Stack, *, path: str = "", tol: float = DEFAULT_TOL, timeout: float = 60.0, seed: int = 0,
           method: str = "auto", progress: Progress | None = None, search_progress: Progress | None = None) -> Decision:
    """Decide a block or a stack. ``tol`` is the relative tolerance every verdict names."""
    check_decide_inputs(model, tol=tol, timeout=timeout, seed=seed, method=method)
    stack = model if isinstance(model, Stack) else Stack((model,))
    return decide_stack(stack, path=path, tol=tol, timeout=timeout, seed=seed, method=method, progress=progress,
                        search_progress=search_progress)


def decide_collection(blocks: Iterable[Block], *, path: str = "", tol: float = DEFAULT_TOL, timeout: float = 60.0,
                      seed: int = 0, method: str = "auto", progress: Progress | None = None,
                      keep_weights: bool = True, on_block: Callable[[BlockDecision], None] | None = None) -> Decision:
    """Decide independent blocks (the MLP blocks of a checkpoint, each with its own skip).

    The whole is absorbable when every block is; it is not when at least one block is
    proved not absorbable; otherwise unknown. With ``keep_weights=False`` each decided
    block (and its witness) is kept without its weight matrices, so that deciding a lazy
    stream of layers holds one layer in memory at a time; ``on_block`` is then the place
    to use the weights (it is called with each block's decision while they are loaded,
    e.g. to build its certificate entry).
    """
    check_decide_inputs(None, tol=tol, timeout=timeout, seed=seed, method=method)
    decisions = []
    for blk in blocks:
        if progress:
            progress(blk.name)
        bd = decide_block(blk, tol=tol, timeout=timeout, seed=seed, method=method)
        if on_block is not None:
            on_block(bd)
        if not keep_weights:
            w = bd.witness
            bd = dataclasses.replace(bd, block=blk.without_weights(),
                                     witness=None if w is None else dataclasses.replace(w, block=w.block.without_weights()))
        del blk  # drop the layer before the generator reads the next one: one layer in memory
        decisions.append(bd)
    if not decisions:
        raise ValueError("decide_collection needs at least one block")
    verdicts = [d.verdict for d in decisions]
    n_not = sum(v is Verdict.NOT_ABSORBABLE for v in verdicts)
    n_abs = sum(v is Verdict.ABSORBABLE for v in verdicts)
    L = len(decisions)
    if n_abs == L:
        verdict, reason = Verdict.ABSORBABLE, f"Every one of the {L} blocks is absorbable."
    elif n_not:
        verdict, reason = Verdict.NOT_ABSORBABLE, f"{n_not} of the {L} blocks are proved not absorbable, so not every skip can be absorbed."
    else:
        verdict, reason = Verdict.UNKNOWN, f"Unknown: {L - n_abs} of the {L} blocks are undecided and none is proved not absorbable."
    return Decision(path=path, verdict=verdict, theorem=Theorem.NONE if verdict is Verdict.UNKNOWN else decisions[0].theorem if L == 1 else Theorem.NONE,
                    reason=reason, blocks=tuple(decisions), tolerance=tol, structure="collection",
                    extra={"summary": {v.value: sum(x is v for x in verdicts) for v in Verdict}})
