"""Write the counterexample catalog: one small ``.npz`` per entry, ``expected.json``, README table.

    python counterexamples/make_catalog.py

Deterministic: every array is written out literally or drawn from ``default_rng`` with a
fixed seed, and each ``.npz`` member has a fixed timestamp, so a rerun on the same machine
writes the same bytes. Arrays computed by linear algebra (``pinv``, ``null_space``, products)
may differ in their last bits under another BLAS build; the shipped files are the reference. Each entry states what it shows, the verdict the *current* engine is expected
to give (hand-written, with the reason; ``tests/test_catalog.py`` compares it with
``absorb check --json``), and the mathematically true answer. Where the truth is
"absorbable" the entry carries an explicit residual-free block, and this script checks
numerically that it equals ``f`` before writing anything. An engine that improves on a
case (say, decides a degenerate block) updates ``expected`` here and re-runs the script;
the test only ever insists that no verdict contradicts the truth.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from absorb.io import load_npz  # noqa: E402
from absorb.model import Block, get_activation  # noqa: E402

A, N, O = "absorbable", "not_absorbable", "open"


@dataclass
class Entry:
    name: str
    arrays: dict[str, np.ndarray]
    shows: str
    expected: str  # the current engine's verdict
    theorem: str  # the current engine's theorem id
    engine_why: str
    truth: str  # absorbable | not_absorbable | open
    truth_why: str
    witness: dict[str, np.ndarray] | None = None  # a residual-free block (W_up, W_down[, b_up, b_down, W_gate, b_gate]) equal to f
    flip: list[int] | None = None  # or: the units whose flip gives one (built here, in the loaded, lifted space)
    extra: dict[str, Any] = field(default_factory=dict)
    options: list[str] = field(default_factory=list)  # extra `absorb check` options, e.g. ["--allow-biases"]


def _planted(rng: np.random.Generator, n: int, d: int, S: list[int], *, c: float = 1.0, M: np.ndarray | None = None):
    U = rng.standard_normal((n, d))
    D = rng.standard_normal((d, n))
    T = np.eye(d) if M is None else M
    D[:, S] = -(T / c) @ np.linalg.pinv(U[S])
    return U, D


def _flip(U: np.ndarray, S: list[int]) -> np.ndarray:
    V = U.copy()
    V[S] *= -1
    return V


def entries() -> list[Entry]:
    out: list[Entry] = []
    relu = np.array("relu")

    # --- anchors: result 5 in its own setting -------------------------------------------
    rng = np.random.default_rng(101)
    U, D = rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    out.append(Entry("generic_relu", dict(W_up=U, W_down=D, activation=relu),
                     "Anchor: Gaussian ReLU weights, d = 3, n = 6. Result 5 applies and no index set exists.",
                     N, "index-set", "exhaustive search proves no S; every hypothesis of result 5 holds",
                     N, "result 5 (necessity): nondegenerate ReLU weights are absorbable only with an index set"))
    rng = np.random.default_rng(102)
    U, D = _planted(rng, 6, 3, [0, 2, 3, 5])
    out.append(Entry("planted_relu", dict(W_up=U, W_down=D, activation=relu),
                     "Anchor: planted S = {0, 2, 3, 5} with W_down[:,S] = −pinv(W_up[S,:]).",
                     A, "index-set", "the search finds S and the flipped block checks", A,
                     "result 5 (sufficiency): σ(z) − σ(−z) = z; negate the rows in S",
                     witness=dict(W_up=_flip(U, [0, 2, 3, 5]), W_down=D)))

    # --- where the "iff" stops -----------------------------------------------------------
    U, D = np.array([[1.0], [2.0]]), np.array([[0.5, 3.0]])
    out.append(Entry("d1_relu", dict(W_up=U, W_down=D, activation=relu),
                     "d = 1: every ReLU block with n ≥ 2 is absorbable, yet no index set exists here (sums of "
                     "{0.5, 6} never reach −1). Result 5 needs d ≥ 2.",
                     A, "canonical-form", "no S exists and result 5 needs d ≥ 2, but the canonical-form procedure "
                     "(docs/degenerate.md) builds a width-2 residual-free block and checks it",
                     A, "f(x) = x + 6.5·ReLU(x) = 7.5·ReLU(x) − ReLU(−x) (docs/degenerate.md)",
                     witness=dict(W_up=np.array([[1.0], [-1.0]]), W_down=np.array([[7.5, -1.0]]))))
    U = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    D = np.array([[2.0, 5.0, 0.0], [3.0, 7.0, -1.0]])
    out.append(Entry("collinear_antipodal", dict(W_up=U, W_down=D, activation=relu),
                     "Antipodal rows e1, −e1 (and e2), W_down columns (2,3), (5,7), (0,−1): absorbable, but no index set "
                     "exists — the engine must not answer not_absorbable.",
                     A, "canonical-form", "no S exists and rows 0, 1 are collinear, so result 5 says nothing; the "
                     "canonical-form procedure (docs/degenerate.md) finds the three-unit block and checks it",
                     A, "f = (3,3)ReLU(x1) + (4,7)ReLU(−x1) − e2·ReLU(−x2): units e1, −e1, −e2 (docs/degenerate.md)",
                     witness=dict(W_up=np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, -1.0]]),
                                  W_down=np.array([[3.0, 4.0, 0.0], [3.0, 7.0, -1.0]]))))
    U = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    D = np.array([[1.0, 3.0, 0.0], [2.0, -1.0, 0.0]])
    out.append(Entry("dead_unit", dict(W_up=U, W_down=D, activation=relu),
                     "A dead unit (zero column of W_down) is a spare unit: result 5's necessity is not proved. Here the "
                     "spare unit does not help.",
                     N, "canonical-form", "no S exists and column 2 of W_down is zero, so result 5 says nothing; the "
                     "canonical-form procedure (docs/degenerate.md) proves every choice of lines needs more than 3 units",
                     N, "line counting (docs/degenerate.md, beyond the paper): f has kinks on x1 = 0 and x2 = 0 only, so a residual-free "
                     "block has one unit on each line and a third that is dead or shares a line; the linear parts reachable are "
                     "{0, −w1e1ᵀ} + {0, −w2e2ᵀ} or v·e1ᵀ + {0, −w2e2ᵀ} or v·e2ᵀ + {0, −w1e1ᵀ}, and none is I since "
                     "w1 = (1,2) ≠ −e1 and w2 = (3,−1) ≠ −e2"))
    U = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    D = np.array([[-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
    out.append(Entry("dead_unit_planted", dict(W_up=U, W_down=D, activation=relu),
                     "Degenerate weights (a dead unit) that do have an index set: sufficiency needs no hypothesis.",
                     A, "index-set", "S = {0, 1}: W_down[:,S] W_up[S,:] = −I exactly", A, "flip units 0 and 1",
                     witness=dict(W_up=_flip(U, [0, 1]), W_down=D)))

    rng = np.random.default_rng(103)
    V, D = _planted(rng, 4, 2, [0, 1, 3])
    G = rng.standard_normal((4, 2))
    out.append(Entry("glu_planted", dict(W_up=V, W_gate=G, W_down=D, activation=np.array("glu")),
                     "Sigmoid-gated GLU (g(0) = 1/2, outside result 3): g(z) + g(−z) = 1, so negating the gate rows and "
                     "down columns in S adds −D_S V_S x = x (beyond the paper).",
                     A, "index-set", "the gated flip identity is proved (c = 1) and S = {0, 1, 3} is found",
                     A, "g(z) + g(−z) = 1 for the sigmoid gate: flip the gate rows and down columns in S (docs/results/index-set.md)", flip=[0, 1, 3]))

    rng = np.random.default_rng(104)
    Ub, Db = _planted(rng, 3, 2, [0, 1, 2])
    hc = dict(H_res=np.full((2, 2), 0.5), H_pre=np.array([1.0, 1.0]), H_post=np.array([0.5, 0.5]))
    out.append(Entry("singular_mhc_planted", dict(W_up=Ub, W_down=Db, activation=relu, **hc),
                     "mHC with 2 streams and the singular doubly stochastic H_res = [[1/2, 1/2], [1/2, 1/2]]: result 1's "
                     "reduction fails, but H_post H_preᵀ = H_res and a planted base set give D_S U_S = −M in the lifted space.",
                     A, "index-set", "the search with T = −M finds S; the witness check does not need M invertible",
                     A, "sufficiency holds for any skip M: flipping S adds −D_S U_S x = M x", flip=[0, 1, 2]))
    rng = np.random.default_rng(105)
    out.append(Entry("singular_mhc_generic", dict(W_up=rng.standard_normal((3, 2)), W_down=rng.standard_normal((2, 3)),
                                                  activation=relu, **hc),
                     "The same singular mHC skip with Gaussian weights: no index set, and result 5 (which needs an "
                     "invertible skip) says nothing.",
                     N, "canonical-form", "result 5 needs an invertible skip, but the canonical-form procedure "
                     "(docs/degenerate.md, Theorem D) holds for any M and proves no width-3 block fits",
                     N, "Theorem D (docs/degenerate.md, beyond the paper): a residual-free block equal to f has f's kinks, "
                     "hence exactly one unit on each of its 3 kink lines, and none of the 2³ choices of flips cancels the linear part M "
                     "(checked in exact arithmetic)"))

    rng = np.random.default_rng(106)
    U, D = _planted(rng, 5, 2, [1, 2, 4])
    b_up, b_down = rng.standard_normal(5), rng.standard_normal(2)
    wb = D[:, [1, 2, 4]] @ b_up[[1, 2, 4]]
    b_flip = b_up.copy()
    b_flip[[1, 2, 4]] *= -1
    out.append(Entry("biases_planted", dict(W_up=U, W_down=D, b_up=b_up, b_down=b_down, activation=relu),
                     "Biases: σ(z + b) − σ(−z − b) = z + b, so the flip still works and the constant Σ_{i∈S} w_i b_i moves "
                     "into b_down (beyond the paper, which is bias-free).",
                     A, "index-set", "S = {1, 2, 4} is found; the witness moves D_S b_S into b_down",
                     A, "flip the rows (and b_up entries) in S; b_down ← b_down + D_S b_S",
                     witness=dict(W_up=_flip(U, [1, 2, 4]), W_down=D, b_up=b_flip, b_down=b_down + wb)))

    rng = np.random.default_rng(107)
    U, D = _planted(rng, 5, 2, [0, 2, 3], c=1.01)
    leaky = np.array("leaky_relu")
    out.append(Entry("leaky_relu_planted", dict(W_up=U, W_down=D, activation=leaky),
                     "Leaky ReLU (slope 0.01): σ(z) − σ(−z) = 1.01·z, so the flip identity holds with c = 101/100 "
                     "(not c = 1 as for ReLU) and D_S U_S = −I/1.01 is absorbable.",
                     A, "index-set", "flip identity proved with c = 101/100; S = {0, 2, 3} found with target −I/c",
                     A, "flipping S adds −1.01·D_S U_S x = x", flip=[0, 2, 3]))
    rng = np.random.default_rng(108)
    out.append(Entry("leaky_relu_generic", dict(W_up=rng.standard_normal((5, 2)), W_down=rng.standard_normal((2, 5)), activation=leaky),
                     "Generic leaky ReLU: no index set, and result 5's necessity is the paper's for ReLU and GELU only; "
                     "the leaky reduction (beyond the paper) decides it.",
                     N, "skeleton", "the skeleton of a leaky block is itself: for nondegenerate weights it is absorbable iff "
                     "(1 + α)·D_S U_S = −M for some S, and the search proves no S exists",
                     N, "leaky = (1 − α)·ReLU + α·id: the kink lines fix every unit up to sign and scale, and matching linear "
                     "parts needs M + (1 + α)·D_S U_S = 0 (docs/results/skeleton.md)"))

    # --- biases and the class of residual-free blocks (docs/results/skeleton.md) ---------
    rng = np.random.default_rng(111)
    U, D = rng.standard_normal((5, 3)), rng.standard_normal((3, 5))
    out.append(Entry("biased_gelu_generic", dict(W_up=U, W_down=D, b_up=rng.standard_normal(5), b_down=rng.standard_normal(3),
                                                 activation=np.array("gelu")),
                     "BERT-like: GELU with biases, Gaussian weights. Result 5 is bias-free; the asymptotic skeleton covers biases "
                     "in f and in the residual-free block.",
                     N, "skeleton", "GELU(tz + c)/t → ReLU(z), so the bias-free ReLU skeleton (M, W_up, W_down) would be absorbable; "
                     "it is nondegenerate and has no index set",
                     N, "skeleton theorem: f(tv)/t → v + W_down ReLU(W_up v) whatever the biases, and so for any g"))
    rng = np.random.default_rng(112)
    U, D = rng.standard_normal((5, 3)), rng.standard_normal((3, 5))
    elu = np.array("expr:Max(0, x) + Min(0, exp(x) - 1)")
    out.append(Entry("elu_biased_generic", dict(W_up=U, W_down=D, b_up=rng.standard_normal(5), activation=elu),
                     "ELU with biases: no flip identity (ELU(z) − ELU(−z) ≠ c·z), so no witness could be built from an index "
                     "set, but the skeleton still proves necessity.",
                     N, "skeleton", "ELU has slopes 1 and 0 at ±∞: skeleton ReLU; no index set exists",
                     N, "skeleton theorem (docs/results/skeleton.md)"))
    # x + (x1², x2²): not absorbable by bias-free ReLU² blocks, absorbable by a biased one.
    U2 = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    D2 = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    relu2 = np.array("relu2")
    biased_g = dict(W_up=U2, W_down=D2, b_up=np.array([0.5, -0.5, 0.5, -0.5]), b_down=np.array([-0.25, -0.25]))
    out.append(Entry("relu2_bias_free_class", dict(W_up=U2, W_down=D2, activation=relu2),
                     "f(x) = x + (x1², x2²) as a bias-free ReLU² block: no bias-free residual-free ReLU² block equals it.",
                     N, "degree", "bias-free and σ homogeneous of degree 2: the degree argument, about bias-free blocks",
                     N, "a bias-free ReLU² block is homogeneous of degree 2, f is not"))
    out.append(Entry("relu2_biased_g", dict(W_up=U2, W_down=D2, activation=relu2),
                     "The same f asked with --allow-biases: ReLU(y)² + ReLU(−y)² = y², so rows e1, −e1, e2, −e2 with biases "
                     "(½, −½, ½, −½) and b_down = −(¼, ¼) equal f. The degree argument must not be reused for this class.",
                     "unknown", "none", "the degree argument covers bias-free residual-free blocks only; nothing else applies",
                     A, "(x1 + ½)² − ¼ = x1² + x1: the biased block above", witness=biased_g, options=["--allow-biases"]))
    # σ(z) = z² has no finite slopes: the skeleton's hypothesis matters. M = 2·D diag(β) U makes
    # g(x) = D (U x + β)² − D β² equal f, although the ReLU "skeleton" (M, U, D) has no index set.
    rng = np.random.default_rng(113)
    U3, D3, beta = rng.standard_normal((3, 2)), rng.standard_normal((2, 3)), rng.standard_normal(3)
    M3 = 2 * D3 @ np.diag(beta) @ U3
    out.append(Entry("square_biased_g", dict(W_up=U3, W_down=D3, skip=M3, activation=np.array("expr:x**2")),
                     "σ(z) = z² is not asymptotically piecewise linear (σ(s)/s → ∞): its would-be ReLU skeleton (M, W_up, W_down) "
                     "is nondegenerate with no index set, yet a biased residual-free block equals f. The skeleton argument "
                     "needs finite slopes.",
                     "unknown", "none", "no finite slopes (no skeleton), and the degree argument is about bias-free blocks",
                     A, "D (U x + β)² − D β² = D (U x)² + 2 D diag(β) U x = f(x)",
                     witness=dict(W_up=U3, W_down=D3, b_up=beta, b_down=-D3 @ beta**2), options=["--allow-biases"]))

    # --- the degree-2 skeleton (docs/results/skeleton2.md) ----------------------------------
    # Units e1, e2, (1,1), (1,−1) with down columns w, w, −w/2, −w/2: Σ_S w_i ⊗ u_i u_iᵀ = 0 for
    # S = {0,1,2,3}; M = −2 Σ_S c_i w_i u_iᵀ. Dyadic, so every identity is exact in float64.
    Uq = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, -1.0], [2.0, 3.0]])
    wq = np.array([1.0, 2.0])
    Dq = np.column_stack([wq, wq, -wq / 2, -wq / 2, [3.0, 1.0]])
    cq = np.array([0.5, -1.0, 0.25, 2.0, 1.5])
    bq = np.array([0.125, -0.25])
    Sq = [0, 1, 2, 3]
    Mq = -sum(2 * cq[i] * np.outer(Dq[:, i], Uq[i]) for i in Sq)
    Uf, Df, cf = Uq.copy(), Dq.copy(), cq.copy()
    Uf[Sq] *= -1
    Df[:, Sq] *= -1
    cf[Sq] *= -1
    out.append(Entry("relu2_biased_planted", dict(W_up=Uq, W_down=Dq, b_up=cq, b_down=bq, skip=Mq, activation=relu2),
                     "A biased ReLU² block whose units satisfy the degree-2 skeleton's (Q) and (L) for S = {0,1,2,3}: "
                     "negating (u_i, c_i, w_i) on S and moving Σ_S c_i² w_i into b_down gives a residual-free block.",
                     A, "skeleton2", "the enumeration finds S; the ReLU² flip witness checks exactly",
                     A, "ReLU(z)² + ReLU(−z)² = z²: the flip of S changes f by −Mx − Σ_S w_i(u_i·x + c_i)², a constant by (Q), (L)",
                     witness=dict(W_up=Uf, W_down=Df, b_up=cf, b_down=bq + Dq[:, Sq] @ cq[Sq] ** 2)))
    rng = np.random.default_rng(114)
    out.append(Entry("relu2_biased_generic", dict(W_up=rng.standard_normal((6, 3)), W_down=rng.standard_normal((3, 6)),
                                                  b_up=rng.standard_normal(6), b_down=rng.standard_normal(3), activation=relu2),
                     "A generic biased ReLU² block (n = 6 ≤ d·d(d+1)/2 = 18): the vectors w_i ⊗ u_i u_iᵀ are independent, so "
                     "only S = ∅ solves (Q), and (L) then needs M = 0.",
                     N, "skeleton2", "the rank route: QᵀQ − μI positive definite in exact rationals",
                     N, "degree-2 skeleton (docs/results/skeleton2.md)"))
    rng = np.random.default_rng(115)
    gelu2 = np.array("expr:(x*(1 + erf(x/sqrt(2)))/2)**2")
    out.append(Entry("gelu2_bias_free_generic", dict(W_up=rng.standard_normal((5, 3)), W_down=rng.standard_normal((3, 5)),
                                                     activation=gelu2),
                     "A bias-free GELU² block (the squared-activation literature's choice): not homogeneous, so the degree "
                     "argument is silent; the degree-2 skeleton decides it, for biased residual-free blocks too.",
                     N, "skeleton2", "GELU² = s² + o(s) at +∞, o(s) at −∞ (the calculus); the rank route",
                     N, "degree-2 skeleton (docs/results/skeleton2.md)"))
    out.append(Entry("relu2_bias_free_allow_biases", dict(W_up=Uq, W_down=Dq, activation=relu2),
                     "A bias-free ReLU² block whose units do satisfy (Q) for S = {0,1,2,3}, asked with --allow-biases: with "
                     "c = 0, (L) reads M = 0, so no biased residual-free block equals it (nondegenerate weights).",
                     N, "skeleton2", "the enumeration proves every S at distance > τ: (Q) holds for S, (L) fails",
                     N, "degree-2 skeleton with c = 0, β = 0: M = 0 is needed", options=["--allow-biases"]))
    out.append(Entry("gelu2_biased_planted", dict(W_up=Uq, W_down=Dq, b_up=cq, b_down=bq, skip=Mq, activation=gelu2),
                     "The planted weights above with GELU²: (Q) and (L) hold, so the degree-2 skeleton proves nothing, and "
                     "GELU² has no flip identity to build a witness from S.",
                     "unknown", "none", "S satisfies the skeleton's conditions; no witness for σ ≠ ReLU²",
                     O, "not known: the skeleton's necessary condition holds and no construction is known"))

    # --- the gated skeleton, step-like gates (docs/results/gated-skeleton.md) ---------------
    glu = np.array("glu")
    rng = np.random.default_rng(116)
    Gg, Ug, Dg = rng.standard_normal((5, 3)), rng.standard_normal((5, 3)), rng.standard_normal((3, 5))
    out.append(Entry("glu_generic", dict(W_up=Ug, W_down=Dg, W_gate=Gg, activation=glu),
                     "A generic bias-free sigmoid-GLU block: g(0) = ½ ≠ 0, so linearization is silent; along rays the "
                     "gate becomes a step and its jumps identify the units, so an index set is necessary — and none exists.",
                     N, "gated-skeleton", "the search proves no S; the gate's limits (1, 0) and the gated nondegeneracy hold",
                     N, "gated skeleton, step-like gate (docs/results/gated-skeleton.md)"))
    bg, bu, bd = rng.standard_normal(5), rng.standard_normal(5), rng.standard_normal(3)
    out.append(Entry("glu_biased_generic", dict(W_up=Ug, W_down=Dg, W_gate=Gg, b_gate=bg, b_up=bu, b_down=bd, activation=glu),
                     "The same weights with biases: the biases vanish along rays, so the same argument covers biased f and "
                     "biased residual-free blocks.",
                     N, "gated-skeleton", "the search proves no S; the argument holds for any biases",
                     N, "gated skeleton, step-like gate (docs/results/gated-skeleton.md)"))
    Dp = Dg.copy()
    Dp[:, [0, 1, 3]] = -np.linalg.pinv(Ug[[0, 1, 3]])
    Gf = Gg.copy()
    Gf[[0, 1, 3]] *= -1
    bgf = bg.copy()
    bgf[[0, 1, 3]] *= -1
    Dpf = Dp.copy()
    Dpf[:, [0, 1, 3]] *= -1
    out.append(Entry("glu_biased_planted", dict(W_up=Ug, W_down=Dp, W_gate=Gg, b_gate=bg, b_up=bu, b_down=bd, activation=glu),
                     "A biased sigmoid-GLU block with an index set S = {0, 1, 3}: negating the gate rows, gate biases and "
                     "down columns of S, and moving Σ_S w_i e_i into b_down, gives a residual-free block.",
                     A, "index-set", "the search finds S; the gated flip witness checks",
                     A, "σ(z) + σ(−z) = 1: the flip changes f by −Mx − Σ_S w_i (u_i·x + e_i), a constant",
                     witness=dict(W_up=Ug, W_down=Dpf, W_gate=Gf, b_gate=bgf, b_up=bu, b_down=bd + Dp[:, [0, 1, 3]] @ bu[[0, 1, 3]])))

    # --- the gated skeleton, ReLU-like gates (docs/results/gated-skeleton.md) ---------------
    # Units (g, u) = (e1, e2) and (e2, −e1) with the same w: Σ_S w ⊗ sym(g uᵀ) = 0 for S = {0, 1};
    # M = −Σ_S w_i (c_i u_i + e_i g_i)ᵀ. Dyadic, so every identity is exact in float64.
    swiglu = np.array("swiglu")
    Gs = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, -1.0]])
    Us = np.array([[0.0, 1.0], [-1.0, 0.0], [1.0, -2.0], [0.5, 3.0]])
    ws = np.array([1.0, -2.0])
    Ds = np.column_stack([ws, ws, [3.0, 1.0], [-1.0, 0.5]])
    cs, es, bs = np.array([0.5, -1.0, 0.25, 1.5]), np.array([2.0, 0.75, -0.5, 1.0]), np.array([0.125, -0.5])
    Ms = -sum(np.outer(Ds[:, i], cs[i] * Us[i] + es[i] * Gs[i]) for i in (0, 1))
    flip2 = lambda a: np.where(np.arange(len(a))[:, None] < 2, -a, a) if a.ndim == 2 else np.where(np.arange(len(a)) < 2, -a, a)  # noqa: E731
    out.append(Entry("swiglu_biased_planted", dict(W_up=Us, W_down=Ds, W_gate=Gs, b_gate=cs, b_up=es, b_down=bs, skip=Ms,
                                                   activation=swiglu),
                     "A biased SwiGLU block whose units satisfy the gated skeleton's (Qg) and (Lg) for S = {0, 1}: negating "
                     "the gate rows and biases, value rows and biases and down columns of S, and moving Σ_S c_i e_i w_i into "
                     "b_down, gives a residual-free block (SiLU(−z) = SiLU(z) − z).",
                     A, "gated-skeleton", "enumeration finds S = {0, 1}; the flip witness checks exactly",
                     A, "the flip of S changes f by −Mx − Σ_S w_i (g_i·x + c_i)(u_i·x + e_i), a constant by (Qg), (Lg)",
                     witness=dict(W_up=flip2(Us), W_down=flip2(Ds.T).T, W_gate=flip2(Gs), b_gate=flip2(cs), b_up=flip2(es),
                                  b_down=bs + Ds[:, :2] @ (cs[:2] * es[:2]))))
    # --- planted in float64 (a null space by SVD): the conditions hold only up to rounding ------------
    def null_space(A: np.ndarray) -> np.ndarray:
        _, sv, Vt = np.linalg.svd(A)
        return Vt[int(np.sum(sv > sv[0] * 1e-12)):].T

    rng = np.random.default_rng(130)
    k = 7  # d = 3: 6 symmetric matrices u uᵀ, so 7 units are dependent
    Ur = rng.standard_normal((9, 3))
    Wr = (null_space(np.array([np.outer(u, u)[np.triu_indices(3)] for u in Ur[:k]]).T) @ rng.standard_normal((1, 3))).T
    Dr2 = np.hstack([Wr, rng.standard_normal((3, 2))])
    cr, br = rng.standard_normal(9), rng.standard_normal(3)
    Mr = -2 * (Wr * cr[:k]) @ Ur[:k]
    fk = np.arange(9) < k
    out.append(Entry("relu2_rounded_planted", dict(W_up=Ur, W_down=Dr2, b_up=cr, b_down=br, skip=Mr, activation=relu2),
                     "A biased ReLU² block planted the way users plant one: 7 random directions u_i, the w_i from the null "
                     "space of [vech(u_i u_iᵀ)] (float64 SVD), M = −2 Σ_S c_i w_i u_iᵀ in float64, so (Q) and (L) hold for "
                     "S = {0..6} only up to rounding.",
                     "unknown", "none", "the enumeration finds S, but the flip's quadratic residual (the planted weights' rounding) "
                     "is not exactly 0: an error of a few ulps·|x|² is not within τ(|f(x)| + |x| + |f(0)|) wherever f grows "
                     "only linearly, and no lower bound of f's growth is proved, so the witness proves nothing",
                     O, "the flip of S changes f by −Mx − Σ_S w_i(u_i·x + c_i)², a constant up to the rounding of the planted "
                     "weights: within the tolerance if f grows quadratically in every direction, which is not proved",
                     witness=dict(W_up=np.where(fk[:, None], -Ur, Ur), W_down=np.where(fk[None, :], -Dr2, Dr2),
                                  b_up=np.where(fk, -cr, cr), b_down=br + Wr @ cr[:k] ** 2)))
    rng = np.random.default_rng(132)
    out.append(Entry("relu2_wide_generic", dict(W_up=rng.standard_normal((20, 2)), W_down=rng.standard_normal((2, 20)),
                                                b_up=rng.standard_normal(20), b_down=rng.standard_normal(2), activation=relu2),
                     "A generic biased ReLU² block too wide for the degree-2 skeleton's own routes (n = 20 > 16 and "
                     "> d·d(d+1)/2 = 6: the columns w_i ⊗ u_i u_iᵀ are dependent, 2^20 sets).",
                     N, "skeleton2", "the lifted index-set route: the engine proves no S over the columns "
                     "(vec(u_i u_iᵀ), 2c_i u_i) ⊗ w_i against [0 | −M]; the checker re-checks that proof",
                     N, "degree-2 skeleton (docs/results/skeleton2.md)"))
    rng = np.random.default_rng(131)
    Gw, Uw = rng.standard_normal((9, 3)), rng.standard_normal((9, 3))
    Ww = (null_space(np.array([(np.outer(g, u) + np.outer(u, g))[np.triu_indices(3)] for g, u in zip(Gw[:k], Uw[:k])]).T)
          @ rng.standard_normal((1, 3))).T
    Dw = np.hstack([Ww, rng.standard_normal((3, 2))])
    cw, ew, bw = rng.standard_normal(9), rng.standard_normal(9), rng.standard_normal(3)
    Mw = -sum(np.outer(Ww[:, i], cw[i] * Uw[i] + ew[i] * Gw[i]) for i in range(k))
    out.append(Entry("swiglu_rounded_planted", dict(W_up=Uw, W_down=Dw, W_gate=Gw, b_gate=cw, b_up=ew, b_down=bw, skip=Mw,
                                                    activation=swiglu),
                     "A biased SwiGLU block planted in float64: the w_i from the null space of [vech(g_i u_iᵀ + u_i g_iᵀ)] "
                     "(SVD), M = −Σ_S w_i (c_i u_i + e_i g_i)ᵀ, so (Qg) and (Lg) hold for S = {0..6} only up to rounding.",
                     "unknown", "none", "enumeration finds S, but the flip's quadratic residual (the planted weights' rounding) is "
                     "not exactly 0, which is no error within the tolerance's measure where f grows only linearly",
                     O, "the flip of S changes f by −Mx − Σ_S w_i (g_i·x + c_i)(u_i·x + e_i), a constant up to the rounding "
                     "of the planted weights: within the tolerance if f grows quadratically in every direction, not proved",
                     witness=dict(W_up=np.where(fk[:, None], -Uw, Uw), W_down=np.where(fk[None, :], -Dw, Dw),
                                  W_gate=np.where(fk[:, None], -Gw, Gw), b_gate=np.where(fk, -cw, cw), b_up=np.where(fk, -ew, ew),
                                  b_down=bw + Ww @ (cw[:k] * ew[:k]))))
    rng = np.random.default_rng(117)
    Gr, Ur, Dr = rng.standard_normal((6, 3)), rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    out.append(Entry("swiglu_biased_generic", dict(W_up=Ur, W_down=Dr, W_gate=Gr, b_gate=rng.standard_normal(6),
                                                   b_up=rng.standard_normal(6), b_down=rng.standard_normal(3), activation=swiglu),
                     "A generic fused, biased SwiGLU block (as in small published models): linearization covers bias-free "
                     "blocks only; along rays the biases vanish at order t², the units are identified, and (Qg) has only "
                     "S = ∅ for generic weights, leaving M = 0.",
                     N, "gated-skeleton", "the rank route: the (Qg) columns are independent in exact rationals",
                     N, "gated skeleton, ReLU-like gate (docs/results/gated-skeleton.md)"))
    out.append(Entry("swiglu_bias_free_allow_biases", dict(W_up=Ur, W_down=Dr, W_gate=Gr, activation=swiglu),
                     "The bias-free SwiGLU block asked with --allow-biases: linearization is about bias-free residual-free "
                     "blocks; the gated skeleton's (Lg) with c = e = 0 reads M = 0, for biased blocks too.",
                     N, "gated-skeleton", "the rank route (any biases in the residual-free block)",
                     N, "gated skeleton with c = e = 0: M = 0 is needed", options=["--allow-biases"]))
    mish = np.array("expr:x*tanh(log(1 + exp(x)))")
    out.append(Entry("mish_gated_biased_planted", dict(W_up=Us, W_down=Ds, W_gate=Gs, b_gate=cs, b_up=es, b_down=bs, skip=Ms,
                                                       activation=mish),
                     "The planted SwiGLU weights with a Mish gate (as an ungated σ in the gate slot): (Qg) and (Lg) hold, but "
                     "Mish has no flip identity, so the skeleton proves nothing and no witness is known.",
                     "unknown", "none", "S satisfies the conditions; Mish(−z) ≠ Mish(z) − z",
                     O, "not known: the necessary condition holds and no construction is known"))

    # Ternary weights with an exact index set, found by a seeded search ("by chance").
    rng = np.random.default_rng(109)
    from absorb.engine.hypotheses import nondegenerate
    from absorb.montecarlo import enumerate_batch
    for _ in range(100_000):  # in 2-D, ternary rows have 4 directions: n = 4 can be nondegenerate
        U = rng.integers(-1, 2, (4, 2)).astype(float)
        D = rng.integers(-1, 2, (2, 4)).astype(float)
        blk = Block(U, D, get_activation("relu"))
        if all(h.holds for h in nondegenerate(blk)) and enumerate_batch(U[None], D[None]).status[0] == 0:
            break
    else:  # pragma: no cover - the seed is fixed
        raise AssertionError("no ternary instance with an index set found")
    S = [int(i) for i in np.flatnonzero(enumerate_batch(U[None], D[None]).S[0])]
    out.append(Entry("ternary_chance", dict(W_up=U, W_down=D, activation=relu),
                     f"Ternary weights {{−1, 0, 1}}: discrete distributions put positive probability on exact index sets "
                     f"(here S = {S}); 'probability zero' in result 5 needs a continuous distribution.",
                     A, "index-set", "S found; D_S U_S = −I holds exactly in rational arithmetic", A, f"flip the rows in S = {S}",
                     witness=dict(W_up=_flip(U, S), W_down=D), extra={"S": S}))

    out += _value_activation_entries()
    out += _shifted_flip_entries()
    out += _relu2_linear_entries()

    # --- depth ---------------------------------------------------------------------------
    rng = np.random.default_rng(110)
    stack2 = {}
    for i in range(2):
        stack2[f"blocks.{i}.W_up"] = rng.standard_normal((4, 2))
        stack2[f"blocks.{i}.W_down"] = rng.standard_normal((2, 4))
    out.append(Entry("relu2_stack", {**stack2, "activation": np.array("relu2")},
                     "Two ReLU² blocks: each residual-free block is homogeneous of degree 2, so the composition G has "
                     "G(tx)/t → 0 while F(tx)/t → x.",
                     N, "depth", "every block is flat at 0 and the skip product is I ≠ 0", N, "result 4 (depth)"))
    out.append(Entry("relu_stack_generic", {**stack2, "activation": relu},
                     "Two generic ReLU blocks: each is not absorbable on its own, but whether the composition of two "
                     "residual blocks equals two residual-free blocks is the paper's open problem.",
                     "unknown", "none", "no depth result covers ReLU stacks", O, "the open problem of arXiv 2604.23705 (docs/open-problem.md)"))
    return out


def _value_activation_entries() -> list[Entry]:
    """Gated blocks with a value activation h: W_down (g(W_gate x + b_gate) ⊙ h(W_up x + b_up)) + b_down."""
    out = []
    rng = np.random.default_rng(120)
    d, n = 3, 4
    out.append(Entry("gpt_oss_expert", dict(W_up=rng.standard_normal((n, d)), W_gate=rng.standard_normal((n, d)),
                                            W_down=rng.standard_normal((d, n)), b_up=rng.standard_normal(n),
                                            b_gate=rng.standard_normal(n), b_down=rng.standard_normal(d),
                                            activation=np.array("expr:Min(x, 7)/(1 + exp(-1.702*Min(x, 7)))"),
                                            value_activation=np.array("expr:Max(-7, Min(x, 7)) + 1")),
                     "gpt-oss's clamped unit (clamp(up, −7, 7) + 1)·g(gate), g(z) = min(z, 7)·sigmoid(1.702·min(z, 7)), "
                     "with biases: the gate and the value activation h are both bounded, so every unit is.",
                     N, "bounded", "g and h are each proved bounded on R by the σ analysis, so B is bounded and f = x + B(x) "
                     "is not", N, "every residual-free block of this kind is bounded (|B'| ≤ ‖W'_down‖·√n·sup|g|·sup|h| + "
                     "|b'_down|), while |f(t·e_j)| ≥ t − sup|B| → ∞"))
    U, G, D = rng.standard_normal((n, d)), rng.standard_normal((n, d)), rng.standard_normal((d, n))
    S = [0, 2, 3]
    D[:, S] = -np.linalg.pinv(G[S])  # D_S G_S = −I: the planted set is in the gate
    Gf = G.copy()
    Gf[S] *= -1
    out.append(Entry("value_constant_planted", dict(W_up=U, W_gate=G, W_down=D, activation=np.array("swiglu"),
                                                    value_activation=np.array("expr:1")),
                     "A SiLU gate with the constant value activation h ≡ 1 (bias-free): g(0) = 0, yet the linearization "
                     "argument is false here (J(0) = W_down diag(g'(0)·h(0)) W_gate ≠ 0), and the block is absorbable. "
                     "Every result that assumes h(z) = z must stay silent.",
                     "unknown", "none", "h(0) = 1 ≠ 0, so the linearization argument (g(0) = h(0) = 0) does not apply; degree "
                     "needs h homogeneous, the index set assumes h(z) = z; the gate is unbounded, so boundedness does not apply "
                     "either", A, f"silu(−z) = silu(z) − z: negating the gate rows in S = {S} adds "
                     "−D_S G_S x = x", witness=dict(W_up=U, W_gate=Gf, W_down=D)))
    rng = np.random.default_rng(121)
    out.append(Entry("swiglu_value_relu", dict(W_up=rng.standard_normal((n, d)), W_gate=rng.standard_normal((n, d)),
                                               W_down=rng.standard_normal((d, n)), activation=np.array("swiglu"),
                                               value_activation=np.array("relu")),
                     "A SiLU gate with the value activation h = ReLU (bias-free): g(0) = h(0) = 0 and both have finite "
                     "one-sided derivatives at 0, so every unit silu(w_g·x)·relu(w_u·x) is O(|x|²) at 0.",
                     N, "linearization", "g(0) = h(0) = 0 with finite one-sided derivatives (|g(z)|, |h(z)| ≤ C|z| near 0): "
                     "every bias-free residual-free block is O(|x|²) at 0, while f(tx)/t → x", N,
                     "the linearization argument with a value activation (docs/mathematics.md): B'(tx)/t → 0 for every bias-free "
                     "residual-free block of this kind, f(tx)/t → x ≠ 0"))
    rng = np.random.default_rng(122)
    d, n = 3, 6
    out.append(Entry("swiglu_affine_value_generic", dict(W_up=rng.standard_normal((n, d)), W_gate=rng.standard_normal((n, d)),
                                                         W_down=rng.standard_normal((d, n)), b_up=rng.standard_normal(n),
                                                         b_gate=rng.standard_normal(n), b_down=rng.standard_normal(d),
                                                         activation=np.array("swiglu"), value_activation=np.array("expr:x + 1")),
                     "A biased SwiGLU block with the affine value activation h(z) = z + 1: the same function as the block with "
                     "h(z) = z and b_up + 1, whose float64 value rounds here.",
                     N, "gated-skeleton", "h is proved affine, so the normalised block (W_up, b_up + 1, h(z) = z) is decided: "
                     "only S = ∅ meets (Qg) (the rank route, which reads W_gate, W_up and W_down only — so the rounding of b_up + 1 "
                     "does not matter) and S = ∅ leaves M = 0", N,
                     "the gated skeleton (docs/mathematics.md) on the normalised block, whose residual-free blocks with any biases "
                     "are exactly those with h under the same map"))
    return out


def _shifted_flip_entries() -> list[Entry]:
    """σ(z) = τ(z + s) with τ's flip identity: σ(z) − σ(−z − 2s) = c·(z + s) for every z."""
    rng = np.random.default_rng(130)
    d, n, S, s = 2, 5, [0, 1], -1.5
    U, D = _planted(rng, n, d, S)
    b = np.array([2.25, -0.75, 1.0, 2.5, -1.25])  # units 0 and 3 active at x = 0: f(0) ≠ 0
    Wf = _flip(U, S)
    bf = b.copy()
    bf[S] = -b[S] - 2 * s
    return [Entry("shifted_relu_planted", dict(W_up=U, W_down=D, b_up=b, activation=np.array("expr:Max(0, x - 3/2)")),
                  "A ReLU shifted by 3/2 (σ(z) = ReLU(z − 3/2)), with biases and a planted S: the plain flip identity fails, "
                  "the shifted one σ(z) − σ(−z − 2s) = z + s (s = −3/2) holds.",
                  A, "index-set", "S found with W_down[:,S] W_up[S,:] = −M; the shifted identity is proved exactly, and flipping S "
                  "with the new biases −b_up,i − 2s gives a residual-free block with biases equal to f (checked, proved bound)",
                  A, f"negate the rows of W_up in S = {S}, set their biases to −b_up,i + 3 and b'_down = D_S(b_S − 3/2)",
                  witness=dict(W_up=Wf, W_down=D, b_up=bf, b_down=D[:, S] @ (b[S] + s)))]


def _relu2_linear_entries() -> list[Entry]:
    """σ = ReLU² + x (linear at −∞, so not the degree-2 skeleton): a linear program over the units' scales."""
    act = np.array("expr:Max(0, x)**2 + x")
    rng = np.random.default_rng(140)
    d, n = 3, 6
    U, D, c, bd = rng.standard_normal((n, d)), rng.standard_normal((d, n)), rng.standard_normal(n), rng.standard_normal(d)
    mu = np.array([0.5, 2.0, 4.0, 0.25, 2.0, 1.0])  # powers of two: the witness below is exact in float64
    M = sum((mu[i] - 1) * np.outer(D[:, i], U[i]) for i in range(n))
    wit = dict(W_up=U / mu[:, None], W_down=D * mu**2, b_up=c / mu, b_down=bd + D @ ((1 - mu) * c))
    rng = np.random.default_rng(141)
    G = dict(W_up=rng.standard_normal((5, 3)), W_down=rng.standard_normal((3, 5)), b_up=rng.standard_normal(5),
             b_down=rng.standard_normal(3), skip=rng.standard_normal((3, 3)), activation=act)
    return [
        Entry("relu2_linear_planted", dict(W_up=U, W_down=D, b_up=c, b_down=bd, skip=M, activation=act),
              "σ = ReLU² + x with biases and M = Σ_i (μ_i − 1) w_i u_iᵀ for planted scales μ > 0: rescaling each unit "
              "(u_i/μ_i, b_up,i/μ_i, μ_i²w_i) changes only its linear part, by (μ_i − 1) w_i u_iᵀ.",
              A, "relu2-linear", "the linear program Σ μ_i w_i u_iᵀ = M + Σ w_i u_iᵀ finds μ > 0, powers of two here, so the "
              "rescaled units are exact in float64 and the quadratic part of f − g is 0; the rescaled block is checked (error "
              "bounded in exact rationals). With other scales u_i/μ_i rounds, and that witness is no answer (unknown)",
              A, "u'_i = u_i/μ_i, b'_up,i = b_up,i/μ_i, w'_i = μ_i² w_i, b'_down = b_down + Σ(1 − μ_i) b_up,i w_i, "
              "μ = (1/2, 2, 4, 1/4, 2, 1)", witness=wit),
        Entry("relu2_linear_generic", G,
              "σ = ReLU² + x with biases, generic weights, d = 3, n = 5 < d²: M is generically outside the cone of the w_i u_iᵀ.",
              N, "relu2-linear", "the (Q) columns are independent (no unit can be flipped) and a Farkas matrix Y "
              "(⟨Y, w_i u_iᵀ⟩ ≤ 0, ⟨Y, M + Σ w_i u_iᵀ⟩ > 0, exact) excludes every μ ≥ 0",
              N, "relu2-linear necessity (docs/results/skeleton2.md): g's units are f's rescaled by λ_i > 0, so "
              "Σ λ_i⁻¹ w_i u_iᵀ = M + Σ w_i u_iᵀ, which Y excludes"),
    ]


def _check_witness(e: Entry, path: Path) -> float:
    """max |f(x) − B'(x)| / (|f(x)| + |x|) over seeded inputs: the truth claim, checked."""
    model = load_npz(path)
    assert isinstance(model, Block)
    zero = np.zeros((model.d, model.d))
    if e.flip is not None:
        S = e.flip
        if model.gated:  # g(z) + g(−z) = 1: negate the gate rows and the down columns in S
            Wg, Wd = model.W_gate.copy(), model.W_down.copy()
            Wg[S] *= -1
            Wd[:, S] *= -1
            wb = model.replace(W_gate=Wg, W_down=Wd, skip=zero)
        else:
            wb = model.replace(W_up=_flip(model.W_up, S), skip=zero)
    else:
        w = e.witness
        wb = model.replace(W_up=w["W_up"], W_down=w["W_down"], b_up=w.get("b_up"), b_down=w.get("b_down"), skip=zero,
                           W_gate=w.get("W_gate", model.W_gate), **({"b_gate": w["b_gate"]} if model.gated and "b_gate" in w else {}))
    rng = np.random.default_rng(0)
    worst = 0.0
    for scale in (1e-2, 1.0, 1e2):
        X = rng.standard_normal((64, model.d)) * scale
        fx, gx = model(X), wb(X)
        worst = max(worst, float((np.abs(fx - gx).max(axis=1) / (np.abs(fx).max(axis=1) + np.abs(X).max(axis=1))).max()))
    return worst


def _save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez`` with a fixed timestamp on every member, so that running the script twice writes the same bytes
    (``np.savez`` stamps each member with the current time)."""
    import io
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        for key, a in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asanyarray(a), allow_pickle=False)
            z.writestr(zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0)), buf.getvalue())


def main() -> None:
    expected: dict[str, Any] = {}
    rows = []
    for e in entries():
        path = HERE / f"{e.name}.npz"
        _save_npz(path, e.arrays)
        if e.truth == A:
            assert e.witness is not None or e.flip is not None, f"{e.name}: a true 'absorbable' needs a witness"
            err = _check_witness(e, path)
            assert err < 1e-9, (e.name, err)
        if e.truth == A and e.expected == N or e.truth == N and e.expected == A:
            raise AssertionError(f"{e.name}: expected engine verdict {e.expected} contradicts the truth {e.truth}")
        expected[e.name] = {"file": path.name, "verdict": e.expected, "theorem": e.theorem, "engine_why": e.engine_why,
                            "truth": e.truth, "truth_why": e.truth_why, **({"options": e.options} if e.options else {}),
                            **e.extra}
        rows.append(e)
    (HERE / "expected.json").write_text(json.dumps(expected, indent=2, ensure_ascii=False) + "\n")
    lines = ["# Counterexample catalog", "",
             "Small `.npz` blocks (the contract's keys) where a hypothesis of the paper matters or where the "
             "\"iff\" of result 5 stops. Generated by `python counterexamples/make_catalog.py` (deterministic); "
             "`tests/test_catalog.py` runs `python -m absorb check --json` on every file and compares the verdict and "
             "theorem with `expected.json`. *Engine* is what the current engine answers (and why); *truth* is the "
             "mathematical answer (for *absorbable*, the script checks an explicit residual-free block against f). "
             "`unknown` against a true `absorbable` is allowed (the engine is incomplete on degenerate weights); a "
             "wrong `absorbable` or `not_absorbable` never is.", "",
             "| file | what it shows | engine (theorem): why | truth: why |", "|---|---|---|---|"]
    for e in rows:
        opts = f" (with `{' '.join(e.options)}`)" if e.options else ""
        lines.append(f"| `{e.name}.npz`{opts} | {e.shows} | **{e.expected}** ({e.theorem}): {e.engine_why} | **{e.truth}**: {e.truth_why} |")
    lines += ["", "Reproduce one entry: `python -m absorb check counterexamples/collinear_antipodal.npz`.", ""]
    (HERE / "README.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
