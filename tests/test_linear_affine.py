"""Ungated affine σ(z) = c·z + k with k ≠ 0 (docs/results/linear.md): with biases the rank of
A = M + c·W_down W_up decides (the constant moves into b'_down); bias-free, g = f iff
W'_down [c·W'_up | k·1] = [A | k·v] (v = W_down 1). Every certificate is verified (`absorb
verify` exit 0), tampering k, c or the class breaks it, and a witness is re-evaluated in exact
rationals."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from absorb import Block, decide, get_activation
from absorb.certificate import build_certificate
from absorb.cli import main
from absorb.io.npz import save_npz
from absorb.verify.checker import verify_certificate

ACT = "expr:2*x + 1"


def _block(d: int, n: int, *, seed: int = 0, bias: bool = False, act: str = ACT, skip: np.ndarray | None = None,
           D: np.ndarray | None = None, U: np.ndarray | None = None) -> Block:
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((n, d)) if U is None else U
    D = rng.standard_normal((d, n)) if D is None else D
    return Block(U, D, get_activation(act), b_up=rng.standard_normal(n) if bias else None,
                 b_down=rng.standard_normal(d) if bias else None, skip=np.eye(d) if skip is None else skip, name="block")


def _planted(d: int, n: int, how: str, seed: int = 1) -> Block:
    """M chosen so that A = M + 2·W_down W_up is (up to rounding) P·Q: rank n − 1 (``low``), rank n
    with v = W_down 1 in its column space (``in``: P = W_down), rank n with v outside it (``out``)."""
    rng = np.random.default_rng(seed)
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    r = n - 1 if how == "low" else n
    P = D if how == "in" else rng.standard_normal((d, r))
    A = P @ rng.standard_normal((r, d))
    return _block(d, n, U=U, D=D, skip=A - 2.0 * (D @ U))


def _paired(d: int, n: int) -> Block:
    """W_down = [D0, −D0]: v = W_down 1 = 0 exactly."""
    rng = np.random.default_rng(5)
    D0 = rng.standard_normal((d, n // 2))
    return _block(d, n, seed=5, D=np.hstack([D0, -D0]))


# name: (block, allow_biases, verdict, case)
CASES: dict[str, tuple[Callable[[], Block], bool, str, str]] = {
    "wide-bias-free": (lambda: _block(3, 5), False, "absorbable", "affine-bias-free"),
    "wide-allow-biases": (lambda: _block(3, 5), True, "absorbable", "affine-biases"),
    "wide-biased": (lambda: _block(3, 5, bias=True), False, "absorbable", "affine-biases"),
    "square-bias-free": (lambda: _block(4, 4), False, "absorbable", "affine-bias-free"),
    "narrow-generic": (lambda: _block(5, 3), False, "not_absorbable", "affine-bias-free"),
    "narrow-generic-allow-biases": (lambda: _block(5, 3), True, "not_absorbable", "affine-biases"),
    "narrow-generic-biased": (lambda: _block(5, 3, bias=True), False, "not_absorbable", "affine-biases"),
    "narrow-rank-n-1": (lambda: _planted(5, 3, "low"), False, "absorbable", "affine-bias-free"),
    "narrow-rank-n-v-in": (lambda: _planted(5, 3, "in"), False, "absorbable", "affine-bias-free"),
    "narrow-rank-n-v-out": (lambda: _planted(5, 3, "out"), False, "not_absorbable", "affine-bias-free"),
    "narrow-rank-n-v-out-allow-biases": (lambda: _planted(5, 3, "out"), True, "absorbable", "affine-biases"),
    "square-v-zero": (lambda: _paired(4, 4), False, "not_absorbable", "affine-bias-free"),
    # absorbable, but f(0) = 0 while b'_down = k·(v − W'_down 1) rounds: no relative bound on the constant
    "square-v-zero-allow-biases": (lambda: _paired(4, 4), True, "unknown", "affine-biases"),
    "minus-third": (lambda: _block(3, 5, act="expr:x - 1/3"), False, "absorbable", "affine-bias-free"),
    "pieces": (lambda: _block(5, 3, act="expr:Max(0,x) + Min(0,x) + 1"), False, "not_absorbable", "affine-bias-free"),
}


def _cert(blk: Block, allow: bool) -> dict[str, Any]:
    return build_certificate(decide(blk, seed=0, timeout=30, allow_biases=allow), blk, seed=0).to_json()


def _accepted(doc: dict[str, Any], blk: Block) -> tuple[bool, list[str]]:
    rep = verify_certificate(doc, blk)
    bad = [f"{f.status}: {f.claim} — {f.detail}" for f in rep.findings if f.status != "ok"]
    return rep.accepted and not rep.not_rechecked, bad


@pytest.mark.parametrize("name", list(CASES))
def test_affine_block_is_decided_and_its_certificate_verifies(name: str) -> None:
    make, allow, verdict, case = CASES[name]
    blk = make()
    doc = _cert(blk, allow)
    b = doc["blocks"][0]
    assert (b["verdict"], b["theorem"]["id"], b["argument"]["case"]) == (verdict, "linear", case), b["reason"]
    assert b["class"]["biases"] is (case == "affine-biases")
    assert [p["name"] for p in b["properties"]] == ([] if verdict == "unknown" else ["affine"])
    ok, bad = _accepted(doc, blk)
    assert ok, bad


def test_cli_check_and_verify_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, cert = tmp_path / "m.npz", tmp_path / "c.json"
    save_npz(model, _planted(5, 3, "in"))
    assert main(["check", str(model), "--certificate", str(cert)]) == 0
    assert json.loads(cert.read_text())["verdict"] == "absorbable"
    capsys.readouterr()
    assert main(["verify", str(cert), str(model)]) == 0


def _edit(doc: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    b = out["blocks"][0]
    for k in path[:-1]:
        b = b[k]
    b[path[-1]] = value
    return out


@pytest.mark.parametrize("name, path, value, claim", [
    ("wide-bias-free", ("argument", "k"), "2", "recorded k"),
    ("wide-bias-free", ("argument", "c"), "3", "recorded c"),
    ("narrow-rank-n-v-in", ("argument", "k"), "-1", "recorded k"),
    ("narrow-rank-n-v-out", ("argument", "case"), "affine-biases", "recorded case"),
    # the class widened to "with biases": there rank A = n ≤ n, so not_absorbable is false
    ("narrow-rank-n-v-out", ("class", "biases"), True, ""),
    # the class narrowed to "bias-free": there v ∉ col A, so absorbable is false
    ("narrow-rank-n-v-out-allow-biases", ("class", "biases"), False, ""),
    # a recorded rank bound is a claim: raised above the singular value it bounds, refused
    ("narrow-rank-n-v-out", ("argument", "augmented_lower_bound"), 1e6, "augmented_lower_bound"),
    ("narrow-rank-n-v-out", ("argument", "sigma_lower_bound"), 0.3, "sigma_lower_bound"),
    ("narrow-generic", ("argument", "augmented_lower_bound"), 1e6, "augmented_lower_bound"),
    # an absorbable witness's recorded residual and exactness are claims re-derived here
    ("wide-bias-free", ("witness", "residual"), 1.0, "recorded residual"),
    ("narrow-rank-n-1", ("witness", "residual"), -1.0, "recorded residual"),
    ("narrow-rank-n-v-out-allow-biases", ("witness", "residual"), 1.0, "recorded residual"),
    ("narrow-rank-n-v-out-allow-biases", ("witness", "exact"), True, "recorded exactness"),
])
def test_tampering_k_c_or_the_class_is_rejected(name: str, path: tuple[str, ...], value: Any, claim: str) -> None:
    make, allow, _verdict, _case = CASES[name]
    blk = make()
    doc = _cert(blk, allow)
    assert _accepted(doc, blk)[0]
    ok, bad = _accepted(_edit(doc, path, value), blk)
    assert not ok and any(claim in f for f in bad), bad


@pytest.mark.parametrize("name, biases, claim", [
    # a bias-free not_absorbable (v ∉ col A) restated for the class with biases: there rank A = n ≤ n
    ("narrow-rank-n-v-out", True, "rests on a rank bound"),
    # the absorbable answer with biases restated for bias-free blocks: there rank [A | k·v] > n
    ("narrow-rank-n-v-out-allow-biases", False, "follows from result"),
])
def test_the_class_case_and_statement_edited_together_are_rejected(name: str, biases: bool, claim: str) -> None:
    make, allow, _v, _c = CASES[name]
    blk = make()
    doc = _cert(blk, allow)
    doc = _edit(_edit(doc, ("class", "biases"), biases), ("argument", "case"), "affine-biases" if biases else "affine-bias-free")
    words = ("bias-free", "with any biases (b_up, b_down)")
    cls = doc["blocks"][0]["class"]
    cls["statement"] = cls["statement"].replace(*(words if biases else words[::-1]))
    doc["class"]["biases"] = biases
    doc["class"]["statement"] = doc["class"]["statement"].replace(*(words if biases else words[::-1]))
    ok, bad = _accepted(doc, blk)
    assert not ok and any(claim in f for f in bad), bad


def _exact_eval(blk: Block, x: list[Fraction], c: Fraction, k: Fraction, residual: bool) -> list[Fraction]:
    F = Fraction
    U, D = [[F(float(v)) for v in r] for r in blk.W_up], [[F(float(v)) for v in r] for r in blk.W_down]
    bu = [F(0)] * blk.n if blk.b_up is None else [F(float(v)) for v in blk.b_up]
    bd = [F(0)] * blk.d if blk.b_down is None else [F(float(v)) for v in blk.b_down]
    h = [c * (sum((u * xi for u, xi in zip(U[i], x)), F(0)) + bu[i]) + k for i in range(blk.n)]
    y = [sum((D[r][i] * h[i] for i in range(blk.n)), F(0)) + bd[r] for r in range(blk.d)]
    if residual:
        M = [[F(float(v)) for v in r] for r in blk.M]
        y = [y[r] + sum((M[r][j] * x[j] for j in range(blk.d)), F(0)) for r in range(blk.d)]
    return y


@pytest.mark.parametrize("name", ["wide-bias-free", "wide-biased", "narrow-rank-n-v-in", "narrow-rank-n-1"])
def test_witness_in_exact_rationals(name: str) -> None:
    """The witness g re-evaluated in exact Fractions at a few points (σ(z) = 2z + 1 exactly): within its
    recorded rigorous bound ε·(|f(x)|∞ + |x|∞ + |f(0)|∞)."""
    make, allow, _v, case = CASES[name]
    blk = make()
    dec = decide(blk, seed=0, timeout=30, allow_biases=allow)
    wb = dec.witness.block
    assert (wb.b_down is None) is (case == "affine-bias-free")
    eps = dec.witness.eval_error
    assert eps < 1e-9
    c, k = Fraction(2), Fraction(1)
    rng = np.random.default_rng(7)
    f0 = _exact_eval(blk, [Fraction(0)] * blk.d, c, k, True)
    for _ in range(3):
        x = [Fraction(float(v)) for v in rng.standard_normal(blk.d) * 10]
        fx, gx = _exact_eval(blk, x, c, k, True), _exact_eval(wb, x, c, k, False)
        err = max(abs(a - b) for a, b in zip(fx, gx))
        scale = max(map(abs, fx)) + max(map(abs, x)) + max(map(abs, f0))
        assert err <= Fraction(eps) * scale


def test_plain_linear_sigma_is_unchanged() -> None:
    """σ(z) = 2z (k = 0) records no k and no case, as before."""
    blk = _block(3, 5, act="expr:2*x")
    b = _cert(blk, False)["blocks"][0]
    assert b["verdict"] == "absorbable" and "k" not in b["argument"] and "case" not in b["argument"]
    assert [p["name"] for p in b["properties"]] == ["linear"]


@pytest.mark.parametrize("name, words", [
    ("narrow-rank-n-v-out", r"\mathrm{rank}[A \mid kv] > n"),
    ("square-v-zero", r"independent columns summing to $0$"),
    ("narrow-generic-allow-biases", "the output bias takes up the constant"),
    ("narrow-rank-n-v-in", r"W'_{\mathrm{down}}[c\,W'_{\mathrm{up}} \mid k\mathbf 1] = [A \mid kv]"),
])
def test_latex_states_k_and_the_class_argument(name: str, words: str, tmp_path: Path) -> None:
    """The LaTeX view names k and the class's argument, and pdflatex compiles it."""
    import shutil
    import subprocess

    from absorb.certificate import Certificate
    from absorb.certificate.latex import render_latex

    make, allow, _v, _c = CASES[name]
    tex = render_latex(Certificate(_cert(make(), allow)))
    assert r"\sigma(z) = cz + k" in tex and words in tex
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not installed")
    (tmp_path / "c.tex").write_text(tex)
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "c.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]


@pytest.mark.parametrize("act", ["expr:2*x", "expr:2*x + 1"])
def test_narrow_certificate_with_d_above_n_plus_2_verifies(act: str) -> None:
    """The certificate records A's first n + 2 singular values; the checker once compared them with all
    d of them, rejecting every honest narrow linear certificate with d > n + 2."""
    blk = _block(8, 3, act=act)
    doc = _cert(blk, True)
    assert doc["blocks"][0]["verdict"] == "not_absorbable" and len(doc["blocks"][0]["argument"]["singular_values"]) == 5
    ok, bad = _accepted(doc, blk)
    assert ok, bad


def test_wide_affine_block_past_256_units_is_proved() -> None:
    """|f(0)|'s lower bound comes from the same exact rationals as the constant error: a user's σ is
    evaluated in sympy at ≤ 256 units only, which once left every such witness unknown."""
    blk = _block(4, 300)
    dec = decide(blk, seed=0, timeout=30)
    assert dec.verdict.value == "absorbable", dec.reason


@pytest.mark.parametrize("act, biased", [("expr:2*x", True), ("expr:2*x", False), ("expr:2*x + 1", True), ("expr:2*x + 1", False)])
def test_an_exactly_low_rank_integer_block_gets_its_witness(act: str, biased: bool) -> None:
    """A = M + 2·W_down W_up is exactly of rank 1 (integers, d = 4, n = 3); its float SVD has noise
    singular values 2.6e-17 and 2.1e-48, which put entries near 1e-64 into the truncated-SVD witness,
    past the range where f − g is evaluated: `unknown`. Noise singular values are zero now (both sides)."""
    U = np.array([[-1, 1, 0, -2], [2, 2, 2, -1], [-2, 1, -2, 2]], float)
    D = np.array([[1, 1, 2], [0, -1, 0], [2, -2, 0], [-1, 1, 2]], float)
    M = np.array([[7, -11, 4, -1], [3, 5, 4, -3], [12, 4, 8, 4], [3, -7, 4, -9]], float)
    kw = dict(b_up=np.array([2.0, 1, -1]), b_down=np.array([0.0, -2, -1, 1])) if biased else {}
    blk = Block(U, D, get_activation(act), skip=M, **kw)
    doc = _cert(blk, False)
    assert doc["blocks"][0]["verdict"] == "absorbable", doc["blocks"][0]["reason"]
    assert _accepted(doc, blk)[0]


@pytest.mark.parametrize("act", ["expr:sqrt(2)*x", "expr:sqrt(2)*x + 1", "expr:x + pi"])
def test_an_irrational_constant_is_unknown_naming_it(act: str) -> None:
    """The rank rule is decided with exact rational c and k; with an irrational one the reason
    says so (it named the index-set route's flip constant) and the certificate verifies."""
    blk = _block(3, 2, act=act)
    doc = _cert(blk, False)
    b = doc["blocks"][0]
    assert b["verdict"] == "unknown" and "not rational" in b["reason"], b["reason"]
    assert _accepted(doc, blk)[0]


@pytest.mark.parametrize("act", ["identity", "expr:3*x"])
def test_linear_absorbable_sigma_bound_is_a_claim_too(act: str) -> None:
    """σ = c·z, rank A ≤ n < d, absorbable: a recorded lower bound on σ_{n+1} raised above σ_{n+1} (0
    here) is refused, as it is on the not_absorbable side and on the affine route."""
    rng = np.random.default_rng(5)
    U, D = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    c = 1.0 if act == "identity" else 3.0
    blk = Block(U, D, get_activation(act), skip=-c * D @ U + np.outer(rng.standard_normal(3), rng.standard_normal(3)))
    doc = _cert(blk, False)
    b = doc["blocks"][0]
    assert b["verdict"] == "absorbable" and b["theorem"]["id"] == "linear", b["reason"]
    assert _accepted(doc, blk)[0]
    ok, bad = _accepted(_edit(doc, ("argument", "sigma_lower_bound"), 1.0), blk)
    assert not ok and any("not overstated" in f for f in bad), bad


@pytest.mark.parametrize("scaled", ["x", "(Max(0,x) + Min(0,x))", "Max(0,x)", "log(1 + exp(x))"])
def test_a_subnormal_constant_of_sigma_is_unknown_not_an_internal_error(scaled: str) -> None:
    """(red team 45a/01) σ = 10⁻³¹⁰·z (or 10⁻³¹⁰ times ReLU, softplus): a valid expression whose slope is subnormal. The
    linear witness divides by c and the index-set target −M/c overflows: the answer is `unknown` naming the range, not an
    internal error (OverflowError in an exact rational) or a refusal that blames f's finite weights; its certificate verifies."""
    rng = np.random.default_rng(1)
    U, D = rng.standard_normal((8, 3)), rng.standard_normal((3, 8))
    D[:, :3] = -np.linalg.inv(U[:3])
    blk = Block(U, D, get_activation(f"expr:10**-62*10**-62*10**-62*10**-62*10**-62*{scaled}"))
    dec = decide(blk, timeout=30)
    assert dec.verdict.value == "unknown" and ("outside" in dec.blocks[0].reason or "overflows" in dec.blocks[0].reason), dec.blocks[0].reason
    rep = verify_certificate(build_certificate(dec, blk, seed=0).to_json(), blk)
    assert rep.accepted, [f.claim for f in rep.failures]


@pytest.mark.parametrize("act", ["Max(0,x)**2 + 10**-62*10**-62*10**-62*10**-62*10**-62*x",
                                 "10**-62*10**-62*10**-62*10**-62*10**-62*(Max(0,x)**2 + x)"])
def test_a_subnormal_constant_of_relu2_linear_sigma_is_unknown(act: str) -> None:
    """(red team 45a/01) σ = ReLU² + 10⁻³¹⁰·z: the relu2-linear route's linear program reads M/β, which overflows; the
    answer is `unknown` naming the range (its LP was fed inf: an internal error), and its certificate verifies."""
    rng = np.random.default_rng(1)
    U, D = rng.standard_normal((8, 3)), rng.standard_normal((3, 8))
    blk = Block(U, D, get_activation("expr:" + act))
    dec = decide(blk, timeout=30)
    assert dec.verdict.value == "unknown" and "outside" in dec.blocks[0].reason, dec.blocks[0].reason
    assert verify_certificate(build_certificate(dec, blk, seed=0).to_json(), blk).accepted
