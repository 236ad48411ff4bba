"""Build a proof certificate from a :class:`~absorb.engine.Decision` and the loaded weights.

A certificate is one JSON document (schema ``absorb-certificate``, integer
``schema_version``) that holds everything a reader — or the independent checker
``absorb verify`` (:mod:`absorb.verify.checker`) — needs to re-derive the verdict:

* the verdict, the result used (theorem id and statement, docs/mathematics.md §2) and its hypotheses,
  each with the numbers that confirmed it on these weights;
* the symbolic activation properties with their sympy proof steps (LaTeX strings);
* for ``absorbable``: the witness (index set ``S``, residual, evaluation error, exactness)
  and how to build the residual-free block, with the SHA-256 of each of its arrays;
* for ``not_absorbable``: the argument instantiated on this instance (a nonzero entry of
  ``M``, the degree ``k``, ``g(0)`` and ``g'(0)`` with the Jacobians at 0, the limits of a
  bounded σ, the singular values of a linear block, the index-set search certificate —
  enumeration, dual matrix ``Y = A Bᵀ``, …);
* the SHA-256 of every weight array (convention in :mod:`absorb.certificate._util`), the
  tool and library versions, the seed and the tolerance.

Nothing here decides anything: the builder only records what the engine proved, plus a few
exact small quantities (a nonzero entry of ``M``, exact Jacobians at 0 for small blocks).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as _dt
import json
import math
import platform
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from absorb._errors import InvalidInput
from absorb._validate import float64_rows
from absorb.certificate._theorems import NECESSITY_HYPOTHESES, PAPER, theorem_info
from absorb.certificate._util import HASH_CONVENTION, array_sha256, file_sha256, plain
from absorb.engine.verdict import BlockDecision, Decision, ResidualFreeClass, Theorem
from absorb.model.block import Block, Stack, normalise_value
from absorb.symbolic import facts

SCHEMA = "absorb-certificate"
SCHEMA_VERSION = 1
"""Bumped whenever a field changes meaning; readers refuse versions they do not know."""

EMBED_MAX_DIM = 8
"""Arrays whose every dimension is ≤ 8 are embedded verbatim (exact floats) for printing."""

MAX_SEARCH_ARRAY = 1_000_000
"""Search-certificate arrays larger than this are recorded by shape and hash only."""

_SYMBOLIC_JACOBIAN_MAX = 48
"""Exact sympy Jacobians at 0 are recorded for blocks with d·n ≤ this (they cost seconds)."""


@dataclass(frozen=True)
class Certificate:
    """A versioned proof certificate: a JSON document plus accessors.

    >>> import numpy as np
    >>> from absorb import Block, decide, get_activation
    >>> blk = Block(np.eye(2), -np.eye(2), get_activation("relu"))
    >>> cert = build_certificate(decide(blk), blk, seed=0)
    >>> cert.verdict, cert.schema_version
    ('absorbable', 1)
    """

    document: dict[str, Any] = field(repr=False)

    @property
    def schema_version(self) -> int:
        return int(self.document["schema_version"])

    @property
    def verdict(self) -> str:
        return str(self.document["verdict"])

    @property
    def theorem(self) -> str:
        return str(self.document["theorem"]["id"])

    @property
    def blocks(self) -> list[dict[str, Any]]:
        return list(self.document["blocks"])

    def to_json(self) -> dict[str, Any]:
        """A deep copy of the document (safe to mutate)."""
        return copy.deepcopy(self.document)

    def dumps(self) -> str:
        """The document as JSON text; floats are written with ``repr`` and read back exactly."""
        text = json.dumps(self.document, indent=2, allow_nan=False, ensure_ascii=False)
        # a lone surrogate (a file name that is not UTF-8, as Python reads it) has no UTF-8 form: it is
        # written as its JSON escape \udcXX, which reads back as the same str
        return text.encode("utf-8", "backslashreplace").decode("utf-8") + "\n"

    @classmethod
    def from_json(cls, obj: object, *, source: str = "certificate") -> Certificate:
        """Wrap a parsed document after checking its schema and version (InvalidInput if not)."""
        if not isinstance(obj, dict):
            raise InvalidInput(f"{source}: a certificate is a JSON object, got {type(obj).__name__}")
        if obj.get("schema") != SCHEMA:
            raise InvalidInput(
                f"{source}: not an absorb certificate (schema {obj.get('schema')!r}, expected {SCHEMA!r}); "
                "make one with 'absorb check MODEL --certificate OUT.json'"
            )
        ver = obj.get("schema_version")
        if not isinstance(ver, int) or ver < 1 or ver > SCHEMA_VERSION:
            raise InvalidInput(
                f"{source}: schema_version {ver!r} is not supported (this absorb reads 1..{SCHEMA_VERSION}); "
                "upgrade absorb or regenerate the certificate"
            )
        for key in ("verdict", "theorem", "blocks", "parameters", "input"):
            if key not in obj:
                raise InvalidInput(
                    f"{source}: certificate lacks the key {key!r}; regenerate it with 'absorb check --certificate'"
                )
        return cls(obj)

    @classmethod
    def loads(cls, text: str, *, source: str = "certificate") -> Certificate:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInput(
                f"{source}: not valid JSON ({exc.msg}: line {exc.lineno}, column {exc.colno})"
            ) from None
        except RecursionError:
            raise InvalidInput(f"{source}: nested too deeply to read (absorb writes a few levels); regenerate it") from None
        except ValueError as exc:  # an integer past Python's digit limit
            raise InvalidInput(f"{source}: {exc}; regenerate it with 'absorb check --certificate'") from None
        return cls.from_json(obj, source=source)


# ------------------------------------------------------------------------ building --


def _versions() -> dict[str, str]:
    from absorb import __version__

    out = {"absorb": __version__, "python": platform.python_version(), "platform": platform.platform()}
    for lib in ("numpy", "scipy", "sympy", "z3-solver", "jinja2"):
        try:
            out[lib] = metadata.version(lib)
        except metadata.PackageNotFoundError:
            out[lib] = "not installed"
    return out


def weight_record(a: np.ndarray) -> dict[str, Any]:
    """Shape, SHA-256, norms of one array; its exact values too when it is small (≤ 8 per dim)."""
    a = np.asarray(a)
    if a.dtype != np.float64 and a.ndim == 2:  # a float32 matrix: norms in float64 row blocks, one pass
        sq, top = 0.0, 0.0
        for _sl, b in float64_rows(a):
            sq += float(np.einsum("ij,ij->", b, b))
            top = max(top, float(np.abs(b).max(initial=0.0)))
        fro = math.sqrt(sq)
    else:
        a = np.asarray(a, dtype=np.float64)
        with np.errstate(over="ignore"):  # (finite entries whose norm overflows: recorded as "inf")
            fro = float(np.linalg.norm(a)) if a.size else 0.0
        top = float(np.abs(a).max()) if a.size else 0.0
    rec: dict[str, Any] = {"shape": list(a.shape), "sha256": array_sha256(a), "fro_norm": fro, "max_abs": top}
    if a.ndim <= 2 and all(s <= EMBED_MAX_DIM for s in a.shape):
        rec["values"] = a.tolist()
    return rec


def block_weights(block: Block) -> dict[str, dict[str, Any]]:
    """Records of every array the engine reasoned about (HC blocks: lifted arrays and H_*)."""
    out = {k: weight_record(v) for k, v in block.arrays().items()}
    if block.hc is not None:
        for k in ("H_res", "H_pre", "H_post"):
            out[k] = weight_record(getattr(block.hc, k))
    return out


def _nonzero_entry(M: np.ndarray) -> dict[str, Any] | None:
    idx = np.argwhere(M != 0)
    if idx.size == 0:
        return None
    i, j = (int(v) for v in idx[0])
    return {"row": i, "col": j, "value": float(M[i, j])}


def _prop(bd: BlockDecision, name: str) -> dict[str, Any] | None:
    for p in bd.properties:
        if p.name == name:
            return p.to_json()
    return None


def _hyp(bd: BlockDecision, name: str) -> dict[str, Any] | None:
    for h in bd.hypotheses:
        if h.name == name:
            return h.to_json()
    return None


_SEARCH_FIELDS = {
    "dual": ("kind", "Y", "check"),
    "dual-low-rank": ("kind", "A", "B", "rank", "tol", "bound_abs", "bound_rel", "iterations"),
}
"""What a search certificate keeps, by kind: the fields the checker re-derives (a dual matrix and
the numbers next to it); of the other kinds (enumeration, meet-in-the-middle, z3, an index set)
only the kind, since the checker re-derives infeasibility or the residual by its own route, plus
the portfolio's log (which backends ran, for how long, and what each said)."""


def _trim_search_certificate(cert: dict[str, Any] | None) -> dict[str, Any] | None:
    if cert is None:
        return None
    keep = (*_SEARCH_FIELDS.get(str(cert.get("kind")), ("kind",)), "portfolio")
    out: dict[str, Any] = {}
    for k, v in cert.items():
        if k not in keep:
            continue
        if isinstance(v, np.ndarray) and v.size > MAX_SEARCH_ARRAY:
            out[k] = {"omitted": True, "shape": list(v.shape), "sha256": array_sha256(v)}
        elif isinstance(v, list) and len(v) and isinstance(v[0], list) and len(v) * len(v[0]) > MAX_SEARCH_ARRAY:
            arr = np.asarray(v, dtype=float)
            out[k] = {"omitted": True, "shape": list(arr.shape), "sha256": array_sha256(arr)}
        else:
            out[k] = plain(v)
    return out


def _symbolic_jacobian_at_zero(block: Block) -> list[list[str]] | None:
    """Exact J_f(0) computed by sympy from the block's symbolic form (small blocks only)."""
    if block.d * block.n > _SYMBOLIC_JACOBIAN_MAX:
        return None
    import sympy as sp

    xs = sp.symbols(f"x0:{block.d}", real=True)
    f = block.symbolic(xs)
    J = f.jacobian(sp.Matrix(xs)).subs({x: 0 for x in xs})
    J = J.applyfunc(sp.simplify)
    if not all(v.is_Rational for v in J):  # d/dz of z·√|z| at 0 reads 0/0 = nan: no exact value to record
        return None
    return [[str(J[i, j]) for j in range(block.d)] for i in range(block.d)]


def _linearization_value_argument(bd: BlockDecision) -> dict[str, Any]:
    """The linearization argument with a value activation h: the case (``product``: g and h both
    O(|z|) at 0; ``value-flat``: g bounded on R, h = o(|z|); ``gate-flat``: g = o(|z|), h bounded),
    then for each factor either f(0) and its one-sided derivatives at 0 (each rational one; an
    irrational one is null: the argument needs it finite, or 0 where it is o(|z|)) or that it is
    bounded. The handler records the gate's property and then h's, last."""
    b = bd.block
    gate_p, value_p = bd.properties[-2:]
    case = {("vanishing_slopes", "value_vanishing_slopes"): "product", ("bounded", "value_vanishing_slopes"): "value-flat",
            ("bounded_near_zero", "value_vanishing_slopes"): "value-flat",
            ("vanishing_slopes", "value_bounded"): "gate-flat",
            ("vanishing_slopes", "value_bounded_near_zero"): "gate-flat"}[(gate_p.name, value_p.name)]
    out: dict[str, Any] = {"case": case, "value_activation": str(b.value_activation.expr)}
    near = False
    for f, pr in (("g", gate_p), ("h", value_p)):
        if pr.name.endswith("bounded"):
            out[f"{f}_bounded"] = True
            continue
        if pr.name.endswith("bounded_near_zero"):  # finite one-sided limits at 0: bounded on some (−δ, δ)
            out[f"{f}_bounded_near_0"] = True
            near = True
            continue
        out[f"{f}0"] = plain(pr.value["g0"])
        out[f"{f}_slopes"] = [plain(v) if getattr(v, "is_Rational", False) else None for v in (pr.value["right"], pr.value["left"])]
    if case == "product":
        first = (r"|g(z)| \le C|z|,\ |h(z)| \le C|z|\ (|z| \le \delta):\ g(0)=h(0)=0,\ "
                 r"\text{finite one-sided derivatives at } 0")
        unit = (r"|g(t\,w'_{\mathrm{gate},j}\cdot x)\,h(t\,w'_{\mathrm{up},j}\cdot x)| \le C^2 t^2 |w'_{\mathrm{gate},j}|\,"
                r"|w'_{\mathrm{up},j}|\,|x|^2 \;\Rightarrow\; B'(tx)/t \to 0\ (t\to0^+)")
    else:
        small, big = ("h", "g") if case == "value-flat" else ("g", "h")
        where = r"(|z| \le \delta)" if near else r"\forall z"
        first = (rf"|{big}(z)| \le K\ {where},\quad {small}(0)=0,\ {small}'(0^\pm)=0:\ "
                 rf"|{small}(z)| \le \varepsilon|z|\ (|z| \le \delta_\varepsilon)")
        unit = (r"|g(t\,w'_{\mathrm{gate},j}\cdot x)\,h(t\,w'_{\mathrm{up},j}\cdot x)| \le K\varepsilon\,t\,|w'_j|\,|x| "
                r"\;\Rightarrow\; B'(tx)/t \to 0\ (t\to0^+)")
    out["steps"] = [first, unit, r"f(tx)/t = Mx + B(tx)/t \to Mx",
                    r"B' = f \;\Rightarrow\; Mx = 0\ \forall x \;\Rightarrow\; M = 0"]
    return out


def used_properties(theorem_id: str, verdict: str, *, value_activation: bool = False) -> frozenset[str]:
    """The properties of σ a decided verdict of ``theorem_id`` rests on (those in its ``needs``,
    and the gated skeleton's ReLU-like gate); none for ``unknown``. ``value_activation``: a gated
    block with a value activation h (its statement, and so its needs, name h's property too)."""
    if verdict == "unknown":
        return frozenset()
    needs = set(theorem_info(theorem_id, value_activation=value_activation).get("needs") or ())
    if theorem_id == "gated-skeleton":
        needs |= {"relu_like_gate", "flip_identity"}
    if theorem_id == "linear":  # σ(z) = c·z + k (k ≠ 0) rests on σ's affine form instead
        needs |= {"affine"}
    return frozenset(needs)


_FAILURE_WITNESS = {"rows_noncollinear": "collinear_pairs", "gate_rows_noncollinear": "collinear_pairs",
                    "value_not_parallel_to_gate": "units"}
"""For a near-degeneracy recorded as failing: the value key whose first entry names where it fails
(a pair of rows, a unit), recorded so that the checker can re-derive the failure there."""


def _hypothesis_record(h: Any) -> dict[str, Any]:
    """A hypothesis as recorded: name, whether it holds, statement; for a near-degeneracy that
    fails, ``at`` (the first failing pair of rows or unit). The producer's other numbers are not
    recorded: a certificate records only what the checker re-derives."""
    rec = {k: v for k, v in h.to_json().items() if k != "value"}
    key = _FAILURE_WITNESS.get(h.name)
    where = (h.value or {}).get(key) if key and h.holds is False and isinstance(h.value, dict) else None
    if where:
        rec["at"] = plain(where[0])
    return rec


def _witness(bd: BlockDecision) -> dict[str, Any] | None:
    w = bd.witness
    if w is None:
        return None
    out = w.to_json()
    flip = _prop(bd, "flip_identity")
    shifted = _shifted_flip(bd)
    if w.S is not None and flip is not None and shifted is not None:
        out["c"] = shifted["value"].get("c")  # the shifted flip (its s is in the argument)
    elif w.S is not None and flip is not None:
        out["c"] = flip["value"].get("c")
        if bd.theorem.value == Theorem.GATED_SKELETON.value:  # the ReLU-like gate's flip: σ_g(−z) = σ_g(z) − z
            out["formula"] = (
                r"W'_{\mathrm{gate}}[i,:]=-W_{\mathrm{gate}}[i,:],\ b'_{\mathrm{gate},i}=-b_{\mathrm{gate},i},\ "
                r"W'_{\mathrm{up}}[i,:]=-W_{\mathrm{up}}[i,:],\ b'_{\mathrm{up},i}=-b_{\mathrm{up},i},\ "
                r"W'_{\mathrm{down}}[:,i]=-W_{\mathrm{down}}[:,i]\ (i\in S);"
                r"\ b'_{\mathrm{down}}=b_{\mathrm{down}}+\sum_{i\in S}b_{\mathrm{gate},i}b_{\mathrm{up},i}w_i;\ M'=0"
            )
        elif bd.block.gated:
            out["formula"] = (
                r"W'_{\mathrm{gate}}[i,:]=-W_{\mathrm{gate}}[i,:],\ "
                r"W'_{\mathrm{down}}[:,i]=-W_{\mathrm{down}}[:,i]\ (i\in S);"
                r"\ b'_{\mathrm{down}}=b_{\mathrm{down}}+c\,W_{\mathrm{down}}[:,S]\,b_{\mathrm{up}}[S];\ M'=0"
            )
        else:
            out["formula"] = (
                r"W'_{\mathrm{up}}[i,:]=-W_{\mathrm{up}}[i,:]\ (i\in "
                r"S),\ W'_{\mathrm{down}}=W_{\mathrm{down}};"
                r"\ b'_{\mathrm{down}}=b_{\mathrm{down}}+c\,W_{\mathrm{down}}[:,S]\,b_{\mathrm{up}}[S];\ M'=0"
            )
    out["block"] = {"weights": block_weights(w.block)}
    return out


def _shifted_flip(bd: BlockDecision) -> dict[str, Any] | None:
    """The proved shifted-flip property (σ(z) − σ(−z − 2s) = c·(z + s)) of a decision whose witness
    rests on it — σ has no plain flip identity — or None."""
    flip, shifted = _prop(bd, "flip_identity") or {}, _prop(bd, "shifted_flip")
    if bd.witness is None or flip.get("status") == "proved" or shifted is None or shifted.get("status") != "proved":
        return None
    return shifted


def _argument(bd: BlockDecision) -> dict[str, Any]:
    """The result used, instantiated on this block: the numbers a proof reads off."""
    b = bd.block
    th = bd.theorem.value
    arg: dict[str, Any] = {"M_nonzero_entry": _nonzero_entry(b.M)}
    if th == Theorem.DEGREE.value:
        hom = _prop(bd, "homogeneous") or {}
        kg = hom.get("value", {}).get("k")
        arg["k_activation"] = kg
        names = [p.name for p in bd.properties]
        kh = 1 if b.value_identity else bd.properties[names.index("value_homogeneous")].value["k"]
        if not b.value_identity:
            arg["value_activation"] = str(b.value_activation.expr)
            arg["k_value"] = plain(kh)
        arg["k"] = plain(bd.properties[names.index("homogeneous")].value["k"] + (kh if b.gated else 0))
        arg["steps"] = [
            rf"B'(tx) = t^{{k}} B'(x)\ \text{{and}}\ B(tx) = t^{{k}} B(x)\ \text{{for all}}\ t>0\ (k = {arg['k']})",
            r"B'(x) = Mx + B(x)\ \forall x \;\Rightarrow\; t^{k}\big(Mx + B(x)\big) = B'(tx) = tMx + t^{k}B(x)",
            r"\Rightarrow\ (t^{k} - t)\,Mx = 0\ \ \forall t>0,\ \forall x \;\Rightarrow\; Mx = 0\ (t = 2,\ 2^{k}\ne "
            r"2) \;\Rightarrow\; M = 0",
        ]
    elif th == Theorem.LINEARIZATION.value and not b.value_identity:
        arg.update(_linearization_value_argument(bd))
    elif th == Theorem.LINEARIZATION.value:
        vg = _prop(bd, "vanishing_gate") or {}
        arg["g0"] = vg.get("value", {}).get("g0")
        arg["dg0"] = vg.get("value", {}).get("dg0")
        arg["steps"] = [
            r"J_{B'}(0) = W'_{\mathrm{down}}\big(\mathrm{diag}(g(W'_{\mathrm{gate}}0))\,W'_{\mathrm{up}} + "
            r"\mathrm{diag}(W'_{\mathrm{up}}0)\,g'(0)\,W'_{\mathrm{gate}}\big) = "
            r"W'_{\mathrm{down}}\,\mathrm{diag}(g(0))\,W'_{\mathrm{up}} = 0",
            r"J_f(0) = M + W_{\mathrm{down}}\,\mathrm{diag}(g(0))\,W_{\mathrm{up}} = M",
            r"B' = f \;\Rightarrow\; M = J_f(0) = J_{B'}(0) = 0",
        ]
        arg["jacobian_f_at_0"] = _symbolic_jacobian_at_zero(b)
    elif th == Theorem.BOUNDED.value:
        # (σ's bound and limits are not recorded: the checker proves boundedness its own way,
        # and the argument needs no number of it)
        e = arg["M_nonzero_entry"]
        if e is not None:
            # gated (only with a value activation h): each unit is bounded by sup|g|·sup|h|
            unit = r"\sup|g|\,\sup|h|" if b.gated else r"\sup|\sigma|"
            arg["steps"] = [
                rf"|B'(x)| \le \|W'_{{\mathrm{{down}}}}\|\,\sqrt{{n}}\,{unit} + |b'_{{\mathrm{{down}}}}| < "
                r"\infty\ \text{for every residual-free } B'",
                rf"x = t\,e_{{{e['col']}}}:\ |f(x)_{{{e['row']}}}| \ge t\,|M_{{{e['row']},{e['col']}}}| "
                r"- \sup|B| \to \infty\ (t\to\infty)",
            ]
    elif th == Theorem.LINEAR.value:
        lf = _prop(bd, "linear") or {}
        arg["c"] = lf.get("value", {}).get("c")
        af = _prop(bd, "affine")
        if af is not None:  # σ(z) = c·z + k, k ≠ 0: k, and the class answered (its witness and proof differ)
            arg["c"], arg["k"] = af["value"]["c"], af["value"]["k"]
            arg["case"] = "affine-biases" if bd.residual_free_class.biases else "affine-bias-free"
        rank = _hyp(bd, "rank")
        if rank is not None:
            arg["singular_values"] = rank["value"].get("singular_values")
            arg["sigma_lower_bound"] = rank["value"].get("lower_bound")
            if rank["value"].get("augmented_lower_bound") is not None:
                arg["augmented_lower_bound"] = rank["value"]["augmented_lower_bound"]
        arg["rank_limit"] = b.n
    elif th == Theorem.PARITY.value:
        arg["even"] = True
        arg["steps"] = [
            r"\sigma(-z) = \sigma(z)\ \forall z \;\Rightarrow\; B'(-x) = B'(x)\ \text{and}\ B(-x) = "
            r"B(x)\ \text{(bias-free)}",
            r"B' = f \;\Rightarrow\; 0 = B'(x) - B'(-x) = f(x) - f(-x) = 2Mx\ \ \forall x \;\Rightarrow\; M = 0",
        ]
        if bd.direction is not None:  # (within the tolerance: a point where the skip's share of f(x) − f(−x) exceeds τ)
            arg["point"], arg["ratio"] = list(bd.direction[0]), bd.direction[1]
    elif th == Theorem.EXPONENTIAL.value:
        ex = _prop(bd, "exponential") or {}
        for k in ("A", "beta", "C"):
            arg[k] = ex.get("value", {}).get(k)
        if bd.direction is not None:  # (within the tolerance: the ray on which f's units stay bounded, and the skip's share)
            arg["direction"], arg["ratio"] = list(bd.direction[0]), bd.direction[1]
        arg["steps"] = [
            r"g(x) = \sum_j w'_j\,(A e^{\beta b'_j} e^{\beta u'_j\cdot x} + C) + b'_{\mathrm{down}}:\ "
            r"f(x) - g(x) = Mx + \sum_k c_k e^{\beta v_k\cdot x} + c_0",
            r"x = te:\ (Me)\,t + \sum_k c_k e^{\beta (v_k\cdot e) t} + c_0 \equiv 0 \;\Rightarrow\; Me = "
            r"0\ \ \forall e \;\Rightarrow\; M = 0",
        ]
    elif th == Theorem.SKELETON.value:
        arg.update(_skeleton_argument(bd))
    elif th == Theorem.SKELETON2.value:
        arg.update(_skeleton2_argument(bd))
    elif th == Theorem.GATED_SKELETON.value:
        arg.update(_gated_skeleton_argument(bd))
    elif th == Theorem.RELU2_LINEAR.value:
        from absorb.certificate._relu2_linear import relu2_linear_argument

        arg.update(relu2_linear_argument(bd))
    elif th == Theorem.INDEX_SET.value:
        shifted = _shifted_flip(bd)
        if shifted is not None:  # the witness's new biases need s
            arg["c"], arg["s"] = shifted["value"]["c"], shifted["value"]["s"]
        else:
            arg["c"] = (_prop(bd, "flip_identity") or {}).get("value", {}).get("c")
        arg["target"] = "-M/c"
        arg["necessity_hypotheses"] = list(NECESSITY_HYPOTHESES)
    return arg


SKELETON_CASES = ("nondegenerate", "flip-even", "zero", "degenerate-relu")
"""How a skeleton verdict was reached: nondegenerate weights and no index set for −M/c∞;
c∞ = a + 2b = 0 with nondegenerate weights; σ∞ ≡ 0 (a = b = 0); the degenerate ReLU
skeleton ruled out by its canonical form."""

_NONDEGENERACY = ("d_at_least_2", "rows_nonzero", "columns_nonzero", "rows_noncollinear")


def skeleton_block(block: Block) -> Block:
    """The bias-free ReLU skeleton (M, W_up, W_down) of an asymptotically ReLU-like block."""
    from absorb.model.activations import get_activation

    return block.replace(activation=get_activation("relu"), b_up=None, b_gate=None, b_down=None, name=block.name + "∞")


def _skeleton_argument(bd: BlockDecision) -> dict[str, Any]:
    """The skeleton's numbers: L±, a, b, c∞ = a + 2b, the target −M/c∞, the case, and the
    nondegeneracy hypotheses the case used (docs/results/skeleton.md)."""
    val = (_prop(bd, "asymptotic_slopes") or {}).get("value", {})
    a, b_ = val.get("a"), val.get("b")
    out: dict[str, Any] = {k: val.get(k) for k in ("L_plus", "L_minus", "a", "b")}
    from fractions import Fraction

    try:
        fa, fb = Fraction(str(a)), Fraction(str(b_))
    except (TypeError, ValueError, ZeroDivisionError):
        return out
    c = fa + 2 * fb
    out["c_inf"] = str(c) if c.denominator != 1 else int(c)
    nondeg = all((_hyp(bd, h) or {}).get("holds") is True for h in _NONDEGENERACY)
    if fa == 0 and fb == 0:
        case = "zero"
    elif c == 0:
        case = "flip-even"
    elif nondeg:
        case = "nondegenerate"
    else:
        case = "degenerate-relu"
    out["case"] = case
    out["target"] = None if c == 0 else "-M/c_inf"
    out["nondegeneracy_hypotheses"] = list(_NONDEGENERACY) if case in ("nondegenerate", "flip-even") else []
    out["steps"] = [
        r"\frac{\sigma(tz+c)}{t} \to \sigma_\infty(z) = a\,\mathrm{ReLU}(z) + b\,z\quad (t\to\infty,\ z, c \in "
        r"\mathbb{R})",
        r"\frac{f(tv)}{t} \to Mv + W_{\mathrm{down}}\sigma_\infty(W_{\mathrm{up}}v),\qquad "
        r"\frac{g(tv)}{t} \to W'_{\mathrm{down}}\sigma_\infty(W'_{\mathrm{up}}v)",
        {
            "nondegenerate": r"\text{kinks identify the units} \;\Rightarrow\; M + c_\infty "
            r"W_{\mathrm{down}}[:,S]\,W_{\mathrm{up}}[S,:] = 0"
            r"\ \text{for some } S",
            "flip-even": r"c_\infty = a + 2b = 0:\ \text{the linear parts match only if } M = 0",
            "zero": r"\sigma_\infty \equiv 0:\ Mv = 0\ \forall v \;\Rightarrow\; M = 0",
            "degenerate-relu": r"\sigma_\infty = \mathrm{ReLU}:\ \text{the canonical form decides the bias-free ReLU "
            r"skeleton}",
        }[case],
    ]
    return out


def _gram_mu(bd: BlockDecision) -> str | None:
    """The Gram route's μ (a rational, λ_min(QᵀQ) ≥ μ): the checker proves QᵀQ − μI positive
    definite by its own argument, so an overstated μ is refuted."""
    return None if bd.search is None else (bd.search.certificate or {}).get("mu")


def _skeleton2_argument(bd: BlockDecision) -> dict[str, Any]:
    """The degree-2 skeleton's numbers: α, β (re-derived by the checker from σ), the case (how
    the verdict was reached: the rank route, the enumeration route, the degree-2 flip) and the
    nondegeneracy hypotheses it used. The search's bound is not recorded: the checker proves
    infeasibility itself (docs/results/skeleton2.md)."""
    val = (_prop(bd, "quadratic_skeleton") or {}).get("value", {})
    method = None if bd.search is None else bd.search.method
    case = "relu2-flip" if bd.verdict.value == "absorbable" else {"rank": "rank", "enumerate": "enumerate",
                                                                    "gram": "gram", "linear": "linear"}.get(str(method), _lifted(bd))
    return {
        "alpha": val.get("alpha"),
        "beta": val.get("beta"),
        "case": case,
        **({"mu": _gram_mu(bd)} if case == "gram" else {}),
        "nondegeneracy_hypotheses": list(_NONDEGENERACY),
        "steps": [
            r"\sigma(tz+c) = [z>0]\,\big(\alpha t^2z^2 + t(2\alpha c+\beta)z\big) + o(t)\quad (t\to\infty)",
            r"t^2:\ \text{Hessian jumps identify } u'_i = \lambda_i u_i;\ S = \{i : \lambda_i < 0\}:\ "
            r"\sum_{i\in S} w_i\otimes u_iu_i^{\mathsf T} = 0",
            r"t:\ M = -\sum_{i\in S} (2\alpha c_i + \beta)\, w_i u_i^{\mathsf T}",
            {"rank": r"\text{the (Q) columns are independent: only } S=\emptyset,\ \text{which needs } M = 0",
             "enumerate": r"\text{every } S \text{ checked with rounding bounds: none satisfies (Q) and (L)}",
             "gram": r"\lambda_{\min}(Q^{\mathsf T}Q) \ge \mu > \bar\tau^2\|M\|_F^2:\ \text{only } S=\emptyset,\ "
             r"\text{which needs } M = 0",
             "linear": r"\text{the index-set search for } (u_i \mapsto (2\alpha c_i+\beta)u_i,\ w_i,\ -M) \text{ proves "
             r"every } S \text{ farther than } \bar\tau = \max(\tau, \sqrt{d}(\tau + \epsilon_n)/\|M\|_F) \text{ from (L) alone, so from (Q) and (L)}",
             "index-set": r"\text{the index-set search over the lifted columns } (\mathrm{vec}(u_iu_i^{\mathsf T}),\,"
             r"(2\alpha c_i+\beta)u_i) \text{ proves every } S \text{ farther than } \bar\tau = \max(\tau, \sqrt{d}(\tau + \epsilon_n)/\|M\|_F)",
             "relu2-flip": r"\sigma(z) + \sigma(-z) = \alpha z^2 + k\ \forall z \in \mathbb{R}\ (\mathrm{ReLU}^2:\ "
             r"\alpha = 1,\ k = 0):\ \text{the flip of } S \text{ equals } f \text{ up to a constant}"}.get(str(case), ""),
        ],
    }


def _lifted(bd: BlockDecision) -> str | None:
    """``index-set`` when a degree-2 / gated not_absorbable verdict rests on the index-set
    engine's proof over the lifted columns (a search method other than the skeleton's own
    rank, Gram, enumeration and linear routes); None otherwise."""
    method = None if bd.search is None else bd.search.method
    if bd.verdict.value != "not_absorbable" or method in (None, "rank", "enumerate", "gram", "linear"):
        return None
    return "index-set"


def _gated_skeleton_argument(bd: BlockDecision) -> dict[str, Any]:
    """The gated skeleton's numbers: the case (``step`` — a step-like gate, the search's proof
    recorded; ``relu-like`` — a ReLU-like gate, the route the checker re-does itself;
    ``relu-like-flip`` — its flip witness), the gate's limits for ``step``, the nondegeneracy
    hypotheses (docs/results/gated-skeleton.md)."""
    hyps = ["d_at_least_2", "gate_rows_nonzero", "columns_nonzero", "gate_rows_noncollinear", "value_not_parallel_to_gate"]
    if _prop(bd, "gate_limits") is not None:
        val = (_prop(bd, "gate_limits") or {}).get("value", {})
        return {
            "case": "step", "L_plus": val.get("L_plus"), "L_minus": val.get("L_minus"), "target": "-M/L_plus",
            "nondegeneracy_hypotheses": hyps,
            "steps": [
                r"\sigma_g(tz+c) \to L_+\,H(z)\quad (z\ne0,\ t\to\infty;\ L_-=0)",
                r"\frac{f(tx)}{t} \to Mx + L_+\sum_i w_i\,H(g_i\cdot x)\,(u_i\cdot x)\quad\text{off the gate hyperplanes}",
                r"\text{jumps } L_+ w_i (u_i\cdot x) \text{ across } g_i^\perp \text{ identify the units} \;\Rightarrow\; "
                r"M + L_+ W_{\mathrm{down}}[:,S]\,W_{\mathrm{up}}[S,:] = 0 \text{ for some } S",
            ],
        }
    method = None if bd.search is None else bd.search.method
    case = "relu-like-flip" if bd.verdict.value == "absorbable" else "relu-like"
    flip = (_prop(bd, "flip_identity") or {}).get("value", {})
    return {
        "case": case, "route": None if case == "relu-like-flip" else (_lifted(bd) or method), "nondegeneracy_hypotheses": hyps,
        **({"mu": _gram_mu(bd)} if case == "relu-like" and method == "gram" else {}),
        **({"c": flip.get("c")} if case == "relu-like-flip" else {}),
        "steps": [
            r"\sigma_g(tz+c)\,(ty+e) = [z>0]\,\big(t^2zy + t(cy+ez)\big) + o(t)\quad (t\to\infty)",
            r"t^2:\ \text{gradient jumps identify } g'_i=\lambda_ig_i,\ \text{kinks force } \theta_i=0:\ "
            r"\sum_{i\in S} w_i\otimes\mathrm{sym}(g_iu_i^{\mathsf T}) = 0",
            r"t:\ M = -\sum_{i\in S} w_i\,(c_iu_i + e_ig_i)^{\mathsf T}",
        ],
    }


def _canonical_record(bd: BlockDecision, block: Block | None = None) -> dict[str, Any] | None:
    """What the checker needs for a canonical-form verdict (docs/degenerate.md): the exact
    canonical form, the chosen (B, δ) with its width, and for ``absorbable`` the constructed
    block in exact rationals (its float64 rounding is the recorded witness block). ``block``
    (default the decided block) is the one whose canonical form decides: for a skeleton
    verdict, the bias-free ReLU skeleton."""
    return canonical_parts(bd, block)[0]


def canonical_parts(bd: BlockDecision, block: Block | None = None, *, width: int | None = None,
                    verdict: str | None = None) -> tuple[dict[str, Any] | None, Any]:
    """:func:`_canonical_record` and the canonical-form decision it records (its witness block).
    ``width`` (default n) and ``verdict`` (default the decision's): the question at another width
    (``absorb check --width``)."""
    from absorb.engine.degenerate import decide_degenerate

    dd = decide_degenerate(bd.block if block is None else block, tol=bd.tolerance, width=width)
    return _canonical_from(bd, dd, verdict), dd


def _canonical_from(bd: BlockDecision, dd: Any, verdict: str | None) -> dict[str, Any] | None:
    from absorb.engine.degenerate import construct

    cf, out = dd.canonical, dd.outcome
    if cf is None or out is None or dd.verdict.value != (bd.verdict.value if verdict is None else verdict):
        return None
    q = lambda v: str(v)  # noqa: E731  (Fraction → "p/q", read back exactly with Fraction(str))
    rec: dict[str, Any] = {
        "family": cf.family,
        "width": dd.width,
        "L0": [[q(v) for v in row] for row in cf.L0],
        "lines": [{"e": [q(v) for v in ln.e], "a": [q(v) for v in ln.a], "units": list(ln.units)} for ln in cf.lines],
        "dead_units": list(cf.dead),
        "inactive_lines": [list(g) for g in cf.inactive],
    }
    if dd.verdict.value == "absorbable" and out.status not in ("found", "fits"):
        # absorbable within the tolerance, not exactly: the choice whose linear part is within
        # τ·‖M‖_F of the rank it is allowed (the checker re-derives the distance and builds its
        # own block); no exact choice or minimum is claimed
        ch = out.near
        if ch is None or out.min_distance is None:
            return None
        rec["near"] = {"B": list(ch.B), "delta": list(ch.delta), "rank": ch.rank, "width": ch.value}
        return rec
    if dd.verdict.value == "not_absorbable":
        rec["min_width"] = None if out.best is None else out.best.value
    if out.best is not None:
        ch = out.best
        rec["choice"] = {"B": list(ch.B), "delta": list(ch.delta), "rank": ch.rank, "width": ch.value}
        if out.status == "found" or out.status == "fits" and dd.verdict.value == "absorbable":
            up, down = construct(cf, ch, dd.width)
            rec["witness_exact"] = {
                "W_up": [[q(v) for v in row] for row in up],
                "W_down": [[q(v) for v in row] for row in down],
            }
    return rec


def _class(bd: BlockDecision) -> dict[str, Any]:
    """Which residual-free blocks the verdict is about (bias-free, or with any biases)."""
    rf = bd.residual_free_class
    if rf is not None:
        return rf.to_json()
    b = bd.block
    return ResidualFreeClass(biases=b.has_bias, width=b.n, kind=b.kind, activation=b.activation_name).to_json()


def header_class(entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The certificate's class: the blocks' when they agree (``biases`` true when any block's is)."""
    classes = [e.get("class") for e in entries if isinstance(e.get("class"), dict)]
    if not classes:
        return None
    biases = any(c.get("biases") for c in classes)
    word = "with any biases (b_up, b_down)" if biases else "bias-free"
    return {"biases": biases, "statement": f"residual-free blocks of each block's kind, activation and width, {word}"}


def _search_used(bd: BlockDecision, arg: dict[str, Any]) -> bool:
    """Whether the verdict's argument reads the index-set search (so the checker re-checks it):
    result 5, the skeleton's nondegenerate case, the step-gate case and the degree-2 / gated
    skeletons' lifted ``index-set`` and ``linear`` routes; an unknown verdict claims nothing, and records none (its
    reason says what the search found)."""
    th = bd.theorem.value
    if bd.verdict.value == "unknown":
        return False
    return (th == Theorem.INDEX_SET.value
            or th == Theorem.SKELETON.value and arg.get("case") == "nondegenerate"
            or th == Theorem.GATED_SKELETON.value and arg.get("case") == "step"
            or th == Theorem.SKELETON2.value and arg.get("case") in ("index-set", "linear")
            or th == Theorem.GATED_SKELETON.value and arg.get("route") in ("index-set", "linear"))


def block_entry(bd: BlockDecision) -> dict[str, Any]:
    """One block's part of a certificate.  It needs the block's weights (for their hashes):
    for a checkpoint decided a layer at a time, build it in ``decide_collection``'s
    ``on_block`` and pass the entries to :func:`build_certificate`."""
    if bd.input_scale is not None:  # decided as F(x) = 2^-k·f(2^k·x): F's entry, with f's identity and k
        k, inner = bd.input_scale
        entry = block_entry(inner)
        if isinstance(entry.get("witness"), dict) and "construction" in entry["witness"]:  # (red team 48c/02: say which frame)
            entry["witness"]["construction"] += (f" [the witness block is F's, F(x) = 2^{-k}·f(2^{k}·x) (input_scale); f's own is "
                                                 f"2^{k}·G(2^{-k}·x)]")
        entry.update(plain({"name": bd.block.name, "reason": bd.reason, "weights": block_weights(bd.block),
                            "input_scale": {"exponent": k, "statement": f"checked as F(x) = 2^{-k}·f(2^{k}·x): rows times "
                                            f"2^{k}, W_down and b_down times 2^{-k}, exact in float64"}}))
        return entry
    normalised = _normalised_entry(bd)
    if normalised is not None:
        return normalised
    b = bd.block
    act = b.activation
    entry: dict[str, Any] = {
        "name": b.name,
        "kind": b.kind,
        "activation": b.activation_name,
        "activation_function": {"name": act.name, "text": str(act.expr), "latex": act.latex, "srepr": act.key},
        **({} if b.value_identity else {"value_activation_function": {
            "name": b.value_activation.name, "text": str(b.value_activation.expr), "latex": b.value_activation.latex,
            "srepr": b.value_activation.key}}),
        "d": b.d,
        "n": b.n,
        "skip": (
            {"kind": "hyper_connection", "streams": b.hc.s}
            if b.hc is not None
            else {"kind": "identity"}
            if b.skip is None
            else {"kind": "matrix"}
        ),
        "verdict": bd.verdict.value,
        "theorem": theorem_info(bd.theorem.value, value_activation=not b.value_identity),
        "reason": bd.reason,
        "class": _class(bd),
        "tolerance": bd.tolerance,
        "weights": block_weights(b),
        # each hypothesis with whether it holds (the checker re-derives that); the producer's own
        # numbers behind it are not recorded: a certificate records only what the checker re-derives
        "hypotheses": [_hypothesis_record(h) for h in bd.hypotheses],
        # σ's properties the verdict's theorem uses (name, status, statement, proof steps), each
        # re-derived from σ itself by the checker; the others are left out (the checker has no
        # route for them, and a certificate records only what it re-derives), and so is one that
        # failed (the gated skeleton's flip identity, tried for a witness: the verdict does not rest on it)
        "properties": [{k: v for k, v in p.to_json().items() if k not in ("value", "witness")} for p in bd.properties
                       if p.proved and p.name in used_properties(bd.theorem.value, bd.verdict.value, value_activation=not b.value_identity)],
        "argument": _argument(bd),
    }
    if bd.robust_bar is not None:  # (the robust skeleton bound: the verdict covers every block within τ; re-derived by the checker)
        entry["argument"]["robust_bar"] = bd.robust_bar
    if entry["argument"].get("s") is not None:  # a shifted flip rests on the shifted identity, not the plain one
        entry["properties"] = [{k: v for k, v in p.to_json().items() if k not in ("value", "witness")} for p in bd.properties
                               if p.name == "shifted_flip"]
    w = _witness(bd)
    if w is not None:
        entry["witness"] = w
    if bd.theorem.value == "canonical-form":
        cf = _canonical_record(bd)
        if cf is not None:
            entry["canonical_form"] = cf
            if "near" in cf and "witness" in entry:
                # a float SVD construction whose distance is float noise: the checker re-derives the
                # distance and builds and evaluates its own block
                entry["witness"].pop("block", None)
                entry["witness"]["residual"] = None
    if bd.theorem.value == "skeleton" and entry["argument"].get("case") == "degenerate-relu":
        cf = _canonical_record(bd, skeleton_block(b))
        if cf is not None:
            entry["canonical_form"] = cf
    if bd.search is not None and _search_used(bd, entry["argument"]):
        s = bd.search
        entry["search"] = {
            "method": s.method,
            "status": s.status.value,
            "reason": s.reason,
            # a found S is the witness's (the checker compares them); an S whose witness failed
            # (an unknown verdict) claims nothing and is not recorded
            "S": None if s.S is None or bd.witness is None else [int(i) for i in s.S],
            "residual": s.residual if bd.witness is not None or s.S is None else None,
            "bound": s.bound,
            "elapsed": round(float(s.elapsed), 6),
            "certificate": _trim_search_certificate(s.certificate),
        }
    return plain(entry)


def _normalised_entry(bd: BlockDecision) -> dict[str, Any] | None:
    """A gated block with an affine value activation h(z) = c·z + k, decided as the block with
    h(z) = z, ``c·W_up``, ``c·b_up + k`` (:func:`absorb.engine.results.affine_value`): the entry
    of that normalised block (argument, hypotheses, witness, search), with f's own identity
    (name, activations, weights' hashes) and ``value_normalisation`` (c, k exact, and h's proof)
    from which the checker rebuilds the normalised block itself. None for any other decision."""
    af = next((p for p in bd.properties if p.name == "value_affine"), None)
    if af is None:
        return None
    b = bd.block
    c, k = facts.rational(af.value, "c"), facts.rational(af.value, "k")
    nb = normalise_value(b, c, k)[0]
    rf = bd.residual_free_class
    inner = block_entry(dataclasses.replace(
        bd, block=nb, properties=tuple(p for p in bd.properties if p is not af),
        residual_free_class=None if rf is None else dataclasses.replace(rf, activation=nb.activation_name)))
    if isinstance(inner.get("witness"), dict) and "construction" in inner["witness"]:  # (red team 48c/02: say which block)
        inner["witness"]["construction"] += (" [the witness block is the normalised block's (value_normalisation: h(z) = c·z + k "
                                             "written as h(z) = z, c into W_up and b_up, k into b_up)" + (
                                                 ", built in f's own class" if bd.witness is not None and bd.witness.block is not None
                                                 and bd.witness.block.value_activation is not None else "") + "]")
    if bd.witness is not None and bd.witness.block is not None and bd.witness.block.value_activation is not None:
        inner["witness"]["formula"] = (  # the flip built in f's own class (c·b_up + k rounds; absorb.engine.results)
            r"W'_{\mathrm{gate}}[i,:]=-W_{\mathrm{gate}}[i,:],\ b'_{\mathrm{gate},i}=-b_{\mathrm{gate},i},\ "
            r"W'_{\mathrm{down}}[:,i]=-W_{\mathrm{down}}[:,i]\ (i\in S),\ W_{\mathrm{up}},\ b_{\mathrm{up}},\ h\ \mathrm{kept};"
            r"\ b'_{\mathrm{down}}=b_{\mathrm{down}}+c\,W_{\mathrm{down}}[:,S]\,h(b_{\mathrm{up}}[S])\ \mathrm{(exact,\ rounded\ once)};\ M'=0")
    va = b.value_activation
    inner.update(plain({
        "activation": b.activation_name,
        "value_activation_function": {"name": va.name, "text": str(va.expr), "latex": va.latex, "srepr": va.key},
        "class": _class(bd),
        "weights": block_weights(b),
        "value_normalisation": {"c": str(c), "k": str(k), "statement": af.statement.removeprefix("value activation h: "),
                                "steps": list(af.steps)},
    }))
    return inner


def _stack_entry(decision: Decision) -> dict[str, Any] | None:
    if decision.structure != "stack":
        return None
    blocks = [bd.block for bd in decision.blocks]
    P = np.eye(blocks[0].d)
    for blk in blocks:
        P = blk.M @ P
    # a nonzero entry of the skip product M_L⋯M_1 (the checker re-derives it with its rounding
    # bound); the whole float product is not recorded
    out: dict[str, Any] = {
        "layers": len(blocks),  # (each layer's flatness at 0 is re-derived by the checker, not recorded)
        "skip_product_nonzero_entry": _nonzero_entry(P),
    }
    if "range_certificate" in decision.extra:  # Theorem R (absorb.plane.range): points and weights, exact rationals
        out["range_certificate"] = decision.extra["range_certificate"]
    if "kink_certificate" in decision.extra:  # Theorem H (absorb.plane.kinks): F's breakpoint rays, exact rationals
        out["kink_certificate"] = decision.extra["kink_certificate"]
    if decision.witness is not None:
        out["composition_witness"] = {
            "eval_error": decision.witness.eval_error,
            "n_inputs": decision.witness.n_inputs,
            "construction": decision.witness.description,
        }
    return plain(out)


def build_certificate(
    decision: Decision,
    model: Block | Stack | Iterable[Block] | None,
    *,
    seed: int,
    path: str | None = None,
    activation: str | None = None,
    method: str = "auto",
    timeout: float | None = None,
    entries: list[dict[str, Any]] | None = None,
    checkpoint: dict[str, Any] | None = None,
) -> Certificate:
    """Make the certificate of ``decision`` for the loaded ``model``.

    ``seed``, ``activation`` (the ``--activation`` override, if any), ``method`` and
    ``timeout`` are the options the decision was made with; ``path`` (default
    ``decision.path``) names the model file, whose byte hash is recorded when it exists.
    ``entries`` (from :func:`block_entry`, one per decided block, in order) replaces
    ``model`` when the weights are no longer in memory; ``checkpoint`` records the options
    a checkpoint was opened with (``layers``, ``up``, ``down``, ``gate``, ``fold_norm``),
    so that ``absorb verify`` reads the same blocks.
    Raises ``ValueError`` if ``model`` (or ``entries``) does not hold the blocks the
    decision is about.
    """
    if entries is None:
        blocks = (
            list(model.blocks)
            if isinstance(model, Stack)
            else [model]
            if isinstance(model, Block)
            else list(model or ())
        )
        if len(blocks) != len(decision.blocks) or any(
            a is not bd.block and a.name != bd.block.name for a, bd in zip(blocks, decision.blocks, strict=True)
        ):
            raise ValueError("build_certificate: the model's blocks are not the ones the decision is about")
        entries = [block_entry(bd) for bd in decision.blocks]
    elif [e.get("name") for e in entries] != [bd.block.name for bd in decision.blocks]:
        raise ValueError("build_certificate: the entries are not the blocks the decision is about")
    path = decision.path if path is None else path
    src: dict[str, Any] = {
        "path": path,
        "structure": decision.structure,
        "blocks": len(entries),
        "hash_convention": HASH_CONVENTION,
    }
    if path and Path(path).is_file():
        src["file_sha256"] = file_sha256(path)
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "created": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
        "tool": _versions(),
        "command": " ".join(sys.argv) if sys.argv and sys.argv[0] else None,
        "paper": PAPER,
        "input": src,
        "parameters": {
            "tolerance": decision.tolerance,
            "seed": int(seed),
            "activation_override": activation,
            "method": method,
            "timeout": timeout,
            **({"checkpoint": checkpoint} if checkpoint else {}),
        },
        "verdict": decision.verdict.value,
        # a single block's own record (its statement names a value activation h when it has one)
        "theorem": (entries[0]["theorem"] if len(entries) == 1 and entries[0]["theorem"]["id"] == decision.theorem.value
                    else theorem_info(decision.theorem.value)),
        "reason": decision.reason,
        "class": header_class(entries),
        "blocks": entries,
    }
    st = _stack_entry(decision)
    if st is not None:
        doc["stack"] = st
    if decision.extra:
        doc["summary"] = plain(decision.extra.get("summary"))
    return Certificate(plain(doc))
