"""The decision engine: which result applies to these weights, and what it proves.

One block: the results of :mod:`absorb.engine.results` are tried in order (the README's
table "Which result applies"); each checks its hypotheses on the weights and the
properties of σ it needs, and answers or passes the block on:

1. ``M = 0``: already residual-free (**trivial**).
2. Bias-free, σ (or gate × value) positively homogeneous of degree k ≠ 1: **degree**.
3. Bias-free, gated, g(0) = 0 and g differentiable at 0: **linearization**.
4. Bias-free, ungated, σ even: **parity** (beyond).
5. Ungated, σ bounded on R: **bounded** (beyond; any biases).
6. Ungated, σ(z) = c·z: **linear**, a rank condition (beyond; any biases).
7. Ungated, σ = A·exp(βz) + C: **exponential** (beyond; any biases).
   Gated with an affine value activation h(z) = c·z + k (c ≠ 0): the same block with h(z) = z,
   ``c·W_up``, ``c·b_up + k``, decided by these results (``results.affine_value``).
8. The **index set** ``D_S U_S = −M/c`` (flip identity): a found S is absorbable once its
   witness checks; its absence is ``not_absorbable`` by result 5 (bias-free ReLU/GELU,
   nondegenerate), by the **canonical form** (bias-free, degenerate weights) or by the
   asymptotic **skeleton** (σ(tz + c)/t → a·ReLU(z) + b·z; any biases); else ``unknown``
   naming what fails.

Stacks: every block absorbable ⇒ the composition is, when the blocks' proved errors composed
through the Lipschitz constants of the later blocks stay within the tolerance (else unknown); every block
flat at 0 (B'(x) = o(|x|)) and ``M_L⋯M_1 ≠ 0`` ⇒ not absorbable (**depth**, result 4);
ReLU with a first block of width < 2d and every M_ℓ + W_down[:, A] W_up[A, :] nonsingular ⇒
not absorbable (**rank**, beyond, :mod:`absorb.plane.rank`); bias-free ReLU in d = 2, widths
≤ 4, F a local homeomorphism with more than 4L kink rays (depth 2: nonzero winding number,
more than 12) ⇒ not absorbable (**kink-count**, beyond, :mod:`absorb.plane.kinks`); bias-free
ReLU in d = 2 with a last block of width ≤ d whose range positively spans the plane ⇒ not
absorbable (**range**, beyond, :mod:`absorb.plane.range`); else unknown (deep ReLU/GELU
stacks are the paper's open problem).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from absorb._errors import InvalidInput
from absorb.engine.results import Ctx, Progress, answer, necessity_sigma
from absorb.engine.verdict import BlockDecision, Decision, Theorem, Verdict, Witness
from absorb.engine.witness import composed_bound, eval_threshold, evaluation_error
from absorb.model.block import FRAME_FREE, Block, Stack, check_decide_inputs, frame_exponent, rescale_inputs
from absorb.rigorous import gamma as _gamma  # Higham's γ_k, shared with the search backends
from absorb.search import Method
from absorb.search._types import DEFAULT_TOL
from absorb.symbolic import _core as props

if TYPE_CHECKING:
    from absorb.io.safetensors import Checkpoint


def decide_block(block: Block, *, tol: float = DEFAULT_TOL, timeout: float = 60.0, seed: int = 0, method: Method = "auto",
                 allow_biases: bool = False, search_progress: Progress | None = None, rescale: bool = True) -> BlockDecision:
    """Decide whether ``f(x) = M x + B(x)`` equals some residual-free block of width n.

    The results are tried in the order of :data:`absorb.engine.results.RESULTS`. With
    ``allow_biases`` the residual-free block may have biases even when f has none (the
    wider question; results that cover bias-free blocks only are then not used).
    ``search_progress`` (optional) is called now and then during a long index-set search
    with a short note, e.g. ``"meet-in-the-middle: 120/2048 regions"``. With ``rescale``, a
    block whose rows' typical size is past 2^±8 — or, for a block that may grow like |x|², is not in [1, 2) — is
    decided as the exactly rescaled block 2^-k·f(2^k·x) of rows of size ~1 (:func:`_in_frame`): the same answer, read
    where σ's shape shows."""
    check_decide_inputs(block, tol=tol, timeout=timeout, seed=seed, method=method)
    from absorb.engine._kept import forget

    forget()  # (the screens' kept answers are for one decision: an array changed in place since reads afresh)
    for act in _activations(block):  # σ's (and a value activation's) properties, within a share of the budget
        props.prepare(act, timeout=props.analysis_budget(timeout))

    def ctx(blk: Block) -> Ctx:
        return Ctx(block=blk, tol=tol, timeout=timeout, seed=seed, method=method, allow_biases=allow_biases,
                   search_progress=search_progress)

    k = frame_exponent(block) if rescale and block.hc is None else 0
    if (abs(k) > FRAME_FREE or k and _grows_quadratically(block, allow_biases)) and (nb := rescale_inputs(block, k)) is not None:
        bd = _in_frame(block, answer(ctx(nb)), k)
        if bd is not None:
            return bd
    return answer(ctx(block))


def _grows_quadratically(block: Block, allow_biases: bool) -> bool:
    """f may grow like |x|² and is decided by a distance (a gated block with biases in its class, σ with a degree-2
    skeleton, or σ = α·ReLU² + β·z): those routes weigh a quadratic part against a linear one, which 2^-k·f(2^k·x) scales apart — such a block
    is decided in its canonical frame (rows of typical size in [1, 2)) at every scale, so that s·f(x/s) gets f's answer
    for every power of two s. (A bias-free gated class is decided by the degree or the linearization: at any scale.)"""
    if block.gated:
        return block.has_bias or allow_biases
    if props.get(block.activation, "quadratic_skeleton").proved:
        return True
    if not block.activation.name.startswith("expr:"):
        return False
    from absorb.engine.relu2_linear import relu2_linear_form  # (σ = α·ReLU² + β·z: quadratic at +∞ only)

    return not isinstance(relu2_linear_form(block.activation), str)


def _in_frame(block: Block, inner: BlockDecision, k: int) -> BlockDecision | None:
    """f's decision from the decision ``inner`` of F(x) = 2^-k·f(2^k·x): F's verdict, theorem and evidence (the
    same answer: g ↦ 2^-k·g(2^k·x) maps residual-free blocks onto residual-free blocks and the tolerance's
    inequality onto itself), its witness G mapped back to g(x) = 2^k·G(2^-k·x), whose proved error
    |f − g|∞ ≤ a|x|∞ + 2^k·e follows from G's a|x|∞ + e. None where g does not map back exactly in float64."""
    w = None if inner.witness is None else inner.witness.in_frame(k)
    if inner.witness is not None and w is None:
        return None
    rows = "W_gate, W_up" if block.gated else "W_up"
    note = (f" (Decided as F(x) = 2^{-k}·f(2^{k}·x), exact in float64 — {rows} times 2^{k}, W_down and b_down times "
            f"2^{-k} — since f's rows have typical size 2^{-k}: F has the same answer at every tolerance.)")
    return dataclasses.replace(inner, block=block, witness=w, reason=inner.reason + note, input_scale=(k, inner))


def _activations(block: Block) -> tuple:
    """The activations whose properties deciding ``block`` may use: σ (the gate), and the value
    activation h of a gated block that has one."""
    return (block.activation,) if block.value_identity else (block.activation, block.value_activation)


def _skip_product_nonzero(blocks: Iterable[Block]) -> tuple[bool, float]:
    """M_L⋯M_1 ≠ 0, with a rigorous rounding account: |fl(AB) − AB| ≤ γ_d |A||B| per step for
    the relative part, plus an absolute part E for products that underflow (each ≤ 2^-1075,
    d an entry, carried through the later factors: E_k = |M_k| E_{k−1}(1 + 2γ) + (d+1)·2^-1074),
    so |P̂ − P| ≤ 2γ·|M_L|⋯|M_1| + E with |M_L|⋯|M_1| ≤ (P̂a + E)(1 + 2γ). A product that lands
    in the subnormals proves nothing (the exact one may be 0). Returns (P ≠ 0, a lower bound of ‖P‖∞)."""
    blocks = list(blocks)
    if all(b.skip is None for b in blocks):
        return True, 1.0
    d = blocks[0].d
    g = _gamma(len(blocks) * (d + 1))
    Pm, Pa, E = np.eye(d), np.eye(d), np.zeros((d, d))
    with np.errstate(over="ignore", invalid="ignore"):
        for b in blocks:
            A = np.abs(b.M)
            Pm, Pa, E = b.M @ Pm, A @ Pa, (A @ E) * (1 + 2 * g) + (d + 1) * 2.0**-1074
        margin = np.abs(Pm) - 2 * g * (Pa + E) * (1 + 2 * g) - E
        low = np.where(np.isfinite(margin) & (margin > 0), margin, 0.0)
        norm = float(np.max(np.sum(low, axis=1))) * (1 - _gamma(d + 2))  # (a row sum of nonnegative lower bounds, rounded down)
    return bool(np.any(low > 0)), norm


def _stack_within_tolerance(stack: Stack, tol: float, seed: int) -> str | None:
    """Why the stack's exact arguments (depth, rank, kink count, range) would contradict the
    tolerance, or None: a block within the tolerance of a residual-free block of its width, by
    the bounds of :func:`absorb.engine.tolerance.within_tolerance` (a residual-free stack may then
    be within the tolerance of F while none equals it)."""
    from absorb.engine.tolerance import within_margin, within_tolerance

    for k, blk in enumerate(stack.blocks):
        why = within_tolerance(blk, tol, seed)
        if why is not None:
            return (f"Unknown: block {k} ({blk.name}) is within the tolerance of a residual-free block ({why.removeprefix('Unknown: ')}); "
                    "the exact stack arguments rule out an exact residual-free stack only.")
    for k, blk in enumerate(stack.blocks):  # (the screens' candidates are estimates: fitted blocks come several times closer)
        why = within_margin(blk, tol, seed)
        if why is not None:
            return (f"Unknown: block {k} ({blk.name}) is within {why} of a residual-free block found by the screens, and fitted "
                    "blocks come several times closer; the exact stack arguments rule out an exact residual-free stack only.")
    return None


def decide_stack(stack: Stack, *, path: str = "", tol: float = DEFAULT_TOL, timeout: float = 60.0, seed: int = 0,
                 method: Method = "auto", allow_biases: bool = False, progress: Progress | None = None,
                 search_progress: Progress | None = None) -> Decision:
    """Decide a stack ``F = f_L ∘ … ∘ f_1`` (a single block is a stack of one).

    ``progress`` is called with each block's name before it is decided;
    ``search_progress`` with ``"<name>: <note>"`` during a long index-set search."""
    check_decide_inputs(stack, tol=tol, timeout=timeout, seed=seed, method=method)
    for act in {id(a): a for b in stack.blocks for a in _activations(b)}.values():
        props.prepare(act, timeout=props.analysis_budget(timeout))  # once for the stack (each block's search gets a share)
    decisions = []
    for blk in stack.blocks:
        if progress:
            progress(blk.name)
        note = None if search_progress is None else (lambda s, name=blk.name: search_progress(f"{name}: {s}"))
        decisions.append(decide_block(blk, tol=tol, timeout=timeout / max(1, len(stack)), seed=seed, method=method,
                                      allow_biases=allow_biases, search_progress=note, rescale=len(stack) == 1))
    if len(stack) == 1:
        (bd,) = decisions
        return Decision(path=path, verdict=bd.verdict, theorem=bd.theorem, reason=bd.reason, blocks=(bd,), tolerance=tol,
                        structure="block", witness=bd.witness)
    L = len(stack)
    if all(d.verdict is Verdict.ABSORBABLE for d in decisions):
        G = Stack(tuple(d.witness.block for d in decisions))
        thr = eval_threshold(tol, max(b.n for b in stack.blocks))
        # The guarantee: each block's proved error composed through the Lipschitz constants of
        # the blocks after it (composed_bound); the sampled error is a second check.
        bound, alpha, beta, why = composed_bound(list(stack.blocks), list(G.blocks), [d.witness.bound for d in decisions])
        err, m = evaluation_error(stack, G, stack.blocks[0].d, seed=seed)
        how = (f"rigorous bound |F(x) − G(x)|∞ ≤ {alpha:.3g}·|x|∞ + {beta:.3g} ≤ {bound:.3g}·(|F(x)|∞ + |x|∞ + |F(0)|∞) "
               "for every x" if not why else f"no rigorous bound: {why}")
        w = Witness(S=None, block=decisions[0].witness.block, residual=None, eval_error=max(err, bound), n_inputs=m,
                    description="the composition of the blocks' witnesses; " + how, bound=None if why else (alpha, beta))
        if bound <= thr and err <= thr:
            return Decision(path=path, verdict=Verdict.ABSORBABLE, theorem=Theorem.COMPOSITION,
                            reason=f"Every one of the {L} blocks is absorbable; composing their residual-free witnesses gives "
                                   f"{L} residual-free blocks equal to F within the tolerance: {how} (each block's proved error, "
                                   f"carried through the Lipschitz constants of the blocks after it); checked on {m} inputs, random and "
                                   f"on the kink hyperplanes, max relative error {err:.2e}.",
                            blocks=tuple(decisions), tolerance=tol, structure="stack", witness=w)
        return Decision(path=path, verdict=Verdict.UNKNOWN, theorem=Theorem.NONE,
                        reason=f"Unknown: every one of the {L} blocks is absorbable, but the composition of their witnesses is not "
                               f"proved within the tolerance ({how}; threshold {thr:.2e}; sampled error {err:.2e}).",
                        blocks=tuple(decisions), tolerance=tol, structure="stack")
    near = _stack_within_tolerance(stack, tol, seed)
    if all(d.flat_at_zero for d in decisions) and near is None:
        nonzero, norm = _skip_product_nonzero(stack.blocks)
        thr = eval_threshold(tol, max(b.n for b in stack.blocks))
        if nonzero and not norm > thr * (1 + norm):
            # (near 0 the depth argument bounds the ratio below by ‖P‖∞/(1 + ‖P‖∞) only: B_L∘⋯∘B_1 itself errs by P x)
            near = (f"Unknown: each block is o(|x|) at 0 and M_L⋯M_1 ≠ 0, but ‖M_L⋯M_1‖∞ ≥ {norm:.3g} is small for the "
                    f"tolerance: the depth argument bounds the error near 0 below by ‖P‖∞/(1 + ‖P‖∞) only, which is within "
                    f"{thr:.3g}, and the composition of the blocks without their skips errs by about P x there.")
        elif nonzero:
            return Decision(path=path, verdict=Verdict.NOT_ABSORBABLE, theorem=Theorem.DEPTH,
                            reason=f"Depth argument: each of the {L} residual-free blocks is o(|x|) at 0 (homogeneous of degree > 1, or a gate "
                                   "with g(0) = 0 differentiable at 0"
                                   f"{'' if all(b.value_identity for b in stack.blocks) else ', or a gate g and a value activation h with g(0) = h(0) = 0 and finite one-sided derivatives at 0'}"
                                   "), so their composition G has G(tx)/t → 0 as t → 0, while "
                                   f"F(tx)/t → M_L⋯M_1 x ≠ 0, so near 0 every G errs by at least ‖P‖∞/(1 + ‖P‖∞) ≥ "
                                   f"{norm / (1 + norm):.3g} of |F(x)|∞ + |x|∞ > the tolerance (P = M_L⋯M_1).",
                            blocks=tuple(decisions), tolerance=tol, structure="stack")
    # beyond: the stack results of absorb.plane — rank, kink count, range (a late import: absorb.plane uses the engine)
    from absorb.plane.decide import decide_narrow_stack

    if near is None and (narrow := decide_narrow_stack(stack, tuple(decisions), path=path, tol=tol,
                                                       allow_biases=allow_biases)) is not None:
        return narrow
    if near is not None:
        return Decision(path=path, verdict=Verdict.UNKNOWN, theorem=Theorem.NONE, reason=near, blocks=tuple(decisions),
                        tolerance=tol, structure="stack")
    if all(necessity_sigma(b.activation) and not b.gated for b in stack.blocks):
        why = ("whether deep compositions of ReLU/GELU residual blocks can be absorbed is the paper's open problem; "
               "per-block verdicts are for each block in isolation")
    else:
        why = "no depth result covers this stack (it needs every block to be bias-free and flat at 0, e.g. ReLU², ReGLU, SwiGLU, GeGLU)"
    return Decision(path=path, verdict=Verdict.UNKNOWN, theorem=Theorem.NONE, reason=f"Unknown: {why}.",
                    blocks=tuple(decisions), tolerance=tol, structure="stack")


def decide(model: Block | Stack | Checkpoint, *, path: str = "", tol: float = DEFAULT_TOL, timeout: float = 60.0,
           seed: int = 0, method: Method = "auto", allow_biases: bool = False, progress: Progress | None = None,
           search_progress: Progress | None = None) -> Decision:
    """Decide a block, a stack or a checkpoint (whatever :func:`absorb.load` returns).

    ``tol`` is the relative tolerance every verdict names (strictly between 0 and 1),
    ``timeout`` the time budget in seconds (for a checkpoint: per block), ``seed`` (0 to
    2^32 − 1) fixes the random inputs and randomised solvers, ``method`` the search backend
    (``"auto"``: a portfolio). ``allow_biases`` asks about residual-free blocks with biases
    even when f has none (every verdict names its class). ``progress`` is called with each
    block's name before it is decided; ``search_progress`` (blocks and stacks) with notes
    during a long search. A checkpoint is decided a block at a time, each block with its
    own identity skip, holding one layer in memory; ``path`` defaults to its own path. Bad
    arguments raise :class:`~absorb.InvalidInput`.
    """
    if not isinstance(model, (Block, Stack)):  # a checkpoint (its reader imported only here: an .npz run needs none), or bad input
        from absorb.io.safetensors import Checkpoint

        if isinstance(model, Checkpoint):
            dec = decide_checkpoint(model, tol=tol, timeout=timeout, seed=seed, method=method, allow_biases=allow_biases,
                                    progress=progress)
            return dataclasses.replace(dec, path=path) if path else dec
    check_decide_inputs(model, tol=tol, timeout=timeout, seed=seed, method=method)
    stack = model if isinstance(model, Stack) else Stack((model,))
    return decide_stack(stack, path=path, tol=tol, timeout=timeout, seed=seed, method=method, allow_biases=allow_biases,
                        progress=progress, search_progress=search_progress)


def decide_collection(blocks: Iterable[Block], *, path: str = "", tol: float = DEFAULT_TOL, timeout: float = 60.0,
                      seed: int = 0, method: Method = "auto", allow_biases: bool = False, progress: Progress | None = None,
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
        bd = decide_block(blk, tol=tol, timeout=timeout, seed=seed, method=method, allow_biases=allow_biases)
        if on_block is not None:
            on_block(bd)
        if not keep_weights:
            w = bd.witness
            bd = dataclasses.replace(bd, block=blk.without_weights(),
                                     witness=None if w is None else dataclasses.replace(w, block=w.block.without_weights()))
        del blk  # drop the layer before the generator reads the next one: one layer in memory
        decisions.append(bd)
    return collection_decision(decisions, path=path, tol=tol)


def collection_decision(decisions: Sequence[BlockDecision], *, path: str, tol: float) -> Decision:
    """The whole of independent blocks: absorbable when every block is, not absorbable when
    at least one is proved not absorbable, otherwise unknown (also for blocks decided
    elsewhere, e.g. on dask workers)."""
    if not decisions:
        raise InvalidInput("deciding a collection of blocks needs at least one block")
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
    theorem = decisions[0].theorem if L == 1 and verdict is not Verdict.UNKNOWN else Theorem.NONE
    return Decision(path=path, verdict=verdict, theorem=theorem, reason=reason, blocks=tuple(decisions), tolerance=tol,
                    structure="collection", extra={"summary": {v.value: sum(x is v for x in verdicts) for v in Verdict}})


def decide_checkpoint(ckpt: Checkpoint, *, tol: float = DEFAULT_TOL, timeout: float = 60.0, seed: int = 0,
                      method: Method = "auto", allow_biases: bool = False, progress: Progress | None = None,
                      on_block: Callable[[BlockDecision], None] | None = None) -> Decision:
    """Decide every MLP block of an opened checkpoint with :func:`decide_collection`, one layer
    at a time (the loaders only read and validate: deciding is the engine's job).

    Each block is the isolated MLP with its own identity skip (see
    :meth:`absorb.io.Checkpoint.analysed`); ``timeout`` is the budget of each block.
    ``progress`` (optional) is called with each block's name before it is decided;
    ``on_block`` with each block's decision while its weights are still loaded.
    """
    from absorb.io.safetensors import Checkpoint

    if not isinstance(ckpt, Checkpoint):
        raise InvalidInput(f"decide_checkpoint needs a Checkpoint (absorb.load or open_checkpoint), got a {type(ckpt).__name__}")
    return decide_collection(ckpt.blocks(), path=str(ckpt.path), tol=tol, timeout=timeout, seed=seed, method=method,
                             allow_biases=allow_biases, progress=progress, keep_weights=False, on_block=on_block)
