"""ONNX models: the MLP blocks found in the graph itself, with the skip the graph wires around them.

Optional (``pip install absorb[onnx]``): the ``onnx`` package parses the file; absorb never
runs the model. A block is a down projection (``MatMul`` or ``Gemm`` with a 2-D weight
initializer, optionally followed by a bias ``Add``) whose input is an elementwise function of
one up projection's output — the activation as a node (``Relu``, ``Gelu``, ``Sigmoid``,
``Tanh``…) or as its usual decomposition (the ``Erf`` form of GELU, the ``Tanh`` form,
``x·Sigmoid(x)``) — or, gated, of a gate projection's output times an up projection's output,
both reading the same input. The activation is named only when the subgraph's operations
are those of a registered activation (each non-arithmetic op once, no more nodes than its
forms have) **and** its values agree with it (relative 2e-7, the rounding of float32
constants, on [-12, 12] and at ±10^k up to 10^300) — with the constants as stored or, for
float16/bfloat16 constants, with some reals that round to them (each within half an ulp);
otherwise the block is refused naming the ops.

The skip is read from the graph: the block's output is followed through the ``Add``/``Sub``
nodes that add a linear map of the block's input to it — the input itself, a multiple (``Mul``
by a scalar or per-channel constant) or a ``MatMul``/``Gemm`` by a d×d initializer — and through ``Neg`` and
``Mul`` by a constant (a scalar, or LayerScale's per-channel vector), as long as each result
feeds only the next; what the last one computes, a ⊙ x + s ⊙ B(x) or x M + s ⊙ B(x), is
f(x) = M x + B(x) with M = diag(a) or that matrix and B's down projection and bias multiplied by s
(``Add(Add(x, B(x)), x)`` is 2x + B(x), ``x − B(x)`` has B negated). When nothing adds a linear
map of the input (a pre-norm layer adds the norm's input, not the MLP's), or the combination is
one absorb does not read (I plus a matrix, a division, a constant or a nonlinear function of the
input added after the skip), the block is analysed as the isolated
block with an identity skip and the report says what the graph does instead.

Weights are initializers: ``MatMul(x, W)`` stores W as [in, out] (transposed here to the
contract's [out, in]); ``Gemm`` with ``transB = 1`` stores [out, in]; a weight reached through a
``Transpose`` of a 2-D initializer (perm [1, 0] or none: torch.onnx's bias-free ``nn.Linear``
without constant folding, ``MatMul(x, Transpose(W))``) is read with the orientation flipped. Initializers are read
one at a time when a block is read (external data too); an inline-data model's protobuf is
in memory while the checkpoint is open (the file's size).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from absorb._errors import InvalidInput
from absorb.io.family_table import BlockSpec, Detection
from absorb.io.sniff import optional_package
from absorb.io.tensor_info import TensorInfo
from absorb.model.activations import get_activation

_DTYPE = {1: "F32", 10: "F16", 11: "F64", 16: "BF16", 2: "U8", 3: "I8", 6: "I32", 7: "I64"}
_ELEMENTWISE = frozenset({"Relu", "Gelu", "Sigmoid", "Tanh", "Erf", "Mul", "Add", "Sub", "Div", "Pow", "Sqrt", "Neg",
                          "Exp", "Log", "Softplus", "LeakyRelu", "Identity", "Cast", "HardSigmoid", "HardSwish", "Abs"})
_ARITH = frozenset({"Mul", "Add", "Sub", "Div", "Pow", "Sqrt", "Neg", "Identity", "Cast"})
# the non-arithmetic ops of a subgraph → the registered activations that have that form
_FORMS: dict[frozenset[str], tuple[str, ...]] = {
    frozenset({"Relu"}): ("relu", "relu2"),
    frozenset({"Gelu"}): ("gelu", "gelu_tanh"),
    frozenset({"Erf"}): ("gelu",),
    frozenset({"Tanh"}): ("gelu_tanh", "tanh"),
    frozenset({"Sigmoid"}): ("silu", "quick_gelu", "sigmoid"),
    frozenset({"Softplus"}): ("softplus",),
    frozenset({"LeakyRelu"}): ("leaky_relu",),
    frozenset({"Exp", "Log"}): ("softplus",),
}
# the most nodes (Identity and Cast not counted) of each activation's forms as exporters write them: a node
# beyond those is refused, whatever the values at the sample points (a term vanishing there is possible)
_MOST_NODES = {"relu": 1, "relu2": 2, "leaky_relu": 1, "tanh": 1, "sigmoid": 1, "silu": 3, "quick_gelu": 3, "softplus": 3,
               "gelu": 5, "gelu_tanh": 9}
# float16 and bfloat16 constants: (significand bits p with the implicit one, least normal exponent); a real c rounds to
# the stored value ĉ when |c − ĉ| ≤ half an ulp of ĉ, 2^(e − p) for 2^e ≤ |ĉ| < 2^(e+1) (half that below a power of two)
_NARROW = {10: (11, -14), 16: (8, -126)}
_QUANT_OPS = frozenset({"QLinearMatMul", "MatMulInteger", "DequantizeLinear", "QuantizeLinear", "MatMulNBits",
                        "DynamicQuantizeLinear", "QGemm"})


# a tensor the blocks read: (initializer, transposed, the scalar c of a skip c·I, a factor (scalar or per row) it is multiplied by)
_Virtual = tuple[str, bool, "float | np.ndarray | None", "np.ndarray | None"]


@dataclass(frozen=True)
class _Linear:
    """y = x Wᵀ + b for one MatMul/Gemm (+ bias Add): the input, the weight initializer and how it is stored."""

    x: str
    weight: str
    out_in: bool  # stored [out, in] (Gemm transB=1); MatMul stores [in, out]
    bias: str | None
    out: str  # the output (after the bias Add when there is one)
    node: str  # the MatMul/Gemm node's name


class _Graph:
    def __init__(self, graph: Any, numpy_helper: Any, path: Path) -> None:
        self.g = graph
        self.nh = numpy_helper
        self.path = path  # the model file: external data is read from its folder
        self._names_defined_once(graph)
        self.init = {t.name: t for t in graph.initializer}
        self.producer: dict[str, Any] = {}
        self.consumers: dict[str, list[Any]] = {}
        self.consts: dict[str, np.ndarray] = {}
        self.const_type: dict[str, int] = {t.name: t.data_type for t in graph.initializer}  # ONNX TensorProto type
        for node in graph.node:
            for o in node.output:
                self.producer[o] = node
            for i in node.input:
                self.consumers.setdefault(i, []).append(node)
            if node.op_type == "Constant":
                for a in node.attribute:
                    if a.name == "value":
                        self.consts[node.output[0]] = numpy_helper.to_array(a.t)
                        self.const_type[node.output[0]] = a.t.data_type
                    elif a.name == "value_float":
                        self.consts[node.output[0]] = np.array(a.f)
                        self.const_type[node.output[0]] = 1

    def _names_defined_once(self, graph: Any) -> None:
        """Bad input when a value's name is defined twice (two initializers, an initializer and a
        sparse one or a node's output, two nodes' outputs): which weights the model holds is then
        undefined (onnx.checker refuses such a graph: it is not in SSA form)."""
        where: dict[str, str] = {}
        defs = [(t.name, "an initializer") for t in graph.initializer]
        defs += [(t.values.name, "a sparse initializer") for t in graph.sparse_initializer]
        defs += [(o, f"the output of node {node.name or node.op_type!r}") for node in graph.node for o in node.output if o]
        for name, what in defs:
            if name in where:
                raise InvalidInput(f"{self.path}: the name {name!r} is defined twice ({where[name]} and {what}), so the "
                                   "model's weights are ambiguous; an ONNX graph defines each name once — fix the export")
            where[name] = what

    def shape(self, name: str) -> tuple[int, ...] | None:
        t = self.init.get(name)
        return tuple(int(x) for x in t.dims) if t is not None else None

    def const(self, name: str) -> np.ndarray | None:
        """A small constant (scalar or vector) by value; None for a variable or a big initializer."""
        if name in self.consts:
            return self.consts[name]
        t = self.init.get(name)
        if t is None or int(np.prod(t.dims, dtype=np.int64)) > 1 << 16:
            return None
        return self.read(name)

    def read(self, name: str) -> np.ndarray:
        """The initializer ``name``'s values (its external data too, from the model's folder); bad input when they cannot be read."""
        try:
            return self.nh.to_array(self.init[name], base_dir=str(self.path.parent))
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - OSError, ValueError, onnx's ValidationError (a location outside the model's folder, a link)
            raise InvalidInput(f"{self.path}: initializer {name!r} cannot be read ({type(exc).__name__}: {str(exc)[:160]}); "
                               "the external data is missing or corrupt — keep the model's .data file next to it") from None

    def is_const(self, name: str) -> bool:
        return name in self.consts or name in self.init

    @staticmethod
    def attr(node: Any, name: str, default: Any) -> Any:
        for a in node.attribute:
            if a.name == name:
                return a.i if a.type == 2 else a.f if a.type == 1 else a.s.decode() if a.type == 3 else default
        return default

    # ---- linear maps ----
    def weight(self, name: str) -> tuple[str, bool] | None:
        """(initializer, transposed) for a weight operand: a 2-D initializer itself, or read
        through a ``Transpose`` of one (perm [1, 0], or no perm: reversed, the same on 2-D), as
        torch.onnx writes a bias-free ``nn.Linear`` without constant folding: MatMul(x, Transpose(W))."""
        shp = self.shape(name)
        if shp is not None:
            return (name, False) if len(shp) == 2 else None
        node = self.producer.get(name)
        if node is None or node.op_type != "Transpose" or len(node.input) != 1:
            return None
        perm = next((list(a.ints) for a in node.attribute if a.name == "perm"), None)
        src = self.shape(node.input[0])
        if src is None or len(src) != 2 or perm not in (None, [1, 0]):
            return None
        return node.input[0], True

    def _bare(self, node: Any) -> _Linear | None:
        """MatMul(x, W) or Gemm(x, W[, C]) with W a 2-D initializer (or a Transpose of one)."""
        if node.op_type == "MatMul" and len(node.input) == 2:
            x, w = node.input
            got = self.weight(w)
            if got is not None and not self.is_const(x):
                return _Linear(x, got[0], got[1], None, node.output[0], node.name)
        if node.op_type == "Gemm" and len(node.input) >= 2:
            if self.attr(node, "alpha", 1.0) != 1.0 or self.attr(node, "beta", 1.0) != 1.0 or self.attr(node, "transA", 0):
                return None
            x, w = node.input[0], node.input[1]
            c = node.input[2] if len(node.input) > 2 and node.input[2] else None
            got = self.weight(w)
            if got is not None and not self.is_const(x):
                bias = c if c is not None and self.shape(c) is not None and len(self.shape(c)) == 1 else None
                if c is not None and bias is None:
                    return None
                return _Linear(x, got[0], bool(self.attr(node, "transB", 0)) != got[1], bias, node.output[0], node.name)
        return None

    def linear_at(self, name: str) -> _Linear | None:
        """The linear map whose output is ``name`` (with its bias Add), or None."""
        node = self.producer.get(name)
        if node is None:
            return None
        if node.op_type == "Add" and len(node.input) == 2:
            for a, b in (node.input, node.input[::-1]):
                inner = self.producer.get(a)
                shp = self.shape(b)
                if inner is not None and shp is not None and len(shp) == 1:
                    lin = self._bare(inner)
                    if lin is not None and lin.bias is None:
                        return _Linear(lin.x, lin.weight, lin.out_in, b, name, lin.node)
            return None
        return self._bare(node)

    def with_bias(self, lin: _Linear) -> _Linear:
        """``lin`` extended by a bias Add that consumes its output alone."""
        users = self.consumers.get(lin.out, [])
        if lin.bias is None and len(users) == 1 and users[0].op_type == "Add":
            add = users[0]
            other = add.input[1] if add.input[0] == lin.out else add.input[0]
            shp = self.shape(other)
            if shp is not None and len(shp) == 1:
                return _Linear(lin.x, lin.weight, lin.out_in, other, add.output[0], lin.node)
        return lin

    # ---- elementwise subgraphs ----
    def leaves(self, name: str, nodes: list[Any], depth: int = 0) -> set[str] | None:
        """The variable inputs of the elementwise subgraph producing ``name`` (its nodes into
        ``nodes``); None when it holds a non-elementwise op or a non-scalar constant."""
        if self.is_const(name):
            c = self.const(name)
            return set() if c is not None and c.size == 1 else None
        node = self.producer.get(name)
        if node is None or node.op_type not in _ELEMENTWISE or depth > 64 or self.linear_at(name) is not None:
            return {name}
        out: set[str] = set()
        if node not in nodes:
            nodes.append(node)
        for i in node.input:
            if not i:
                continue
            sub = self.leaves(i, nodes, depth + 1)
            if sub is None:
                return None
            out |= sub
        return out

    def evaluate(self, name: str, leaf: str, z: np.ndarray, memo: dict[str, np.ndarray] | None = None,
                 subst: Mapping[str, float] | None = None) -> np.ndarray:
        """The subgraph ``leaf → name`` at ``z`` in float64, with the constants in ``subst`` replaced by those values."""
        from scipy.special import erf

        memo = {} if memo is None else memo
        if name == leaf:
            return z
        if name in memo:
            return memo[name]
        if subst is not None and name in subst:
            return np.float64(subst[name])
        if self.is_const(name):
            c = self.const(name)
            assert c is not None
            return np.float64(c.reshape(()).astype(np.float64))
        node = self.producer[name]
        args = [self.evaluate(i, leaf, z, memo, subst) for i in node.input if i]
        op = node.op_type
        ops: dict[str, Callable[..., np.ndarray]] = {
            "Relu": lambda a: np.maximum(a, 0.0), "Sigmoid": lambda a: 1 / (1 + np.exp(-a)), "Tanh": np.tanh, "Erf": erf,
            "Mul": np.multiply, "Add": np.add, "Sub": np.subtract, "Div": np.divide, "Pow": np.power, "Sqrt": np.sqrt,
            "Neg": np.negative, "Exp": np.exp, "Log": np.log, "Softplus": lambda a: np.logaddexp(0.0, a),
            "Identity": lambda a: a, "Cast": lambda a: a, "Abs": np.abs,
            "LeakyRelu": lambda a: np.where(a >= 0, a, self.attr(node, "alpha", 0.01) * a),
            "HardSigmoid": lambda a: np.clip(self.attr(node, "alpha", 0.2) * a + self.attr(node, "beta", 0.5), 0, 1),
            "HardSwish": lambda a: a * np.clip(a / 6 + 0.5, 0, 1),
            "Gelu": lambda a: (get_activation("gelu_tanh" if self.attr(node, "approximate", "none") == "tanh" else "gelu")
                               .np_fn(a)),
        }
        with np.errstate(all="ignore"):
            memo[name] = out = ops[op](*args)
        return out

    def activation(self, out: str, leaf: str, nodes: list[Any]) -> tuple[str, str] | None:
        """(registered name, the form seen) when the subgraph ``leaf → out`` is one; else None.

        The form: its non-arithmetic ops are those of a registered activation's decomposition,
        each once (``Relu(z) + Relu(z − 1000)`` is no ReLU, though equal to it near 0), and no more
        nodes than the activation's forms have (:data:`_MOST_NODES`: ``Relu(z) + (z/13)^400`` is no
        ReLU either); its values agree with the activation's on [−12, 12] and at ±10^k, k = −3…300,
        wherever both are finite there (a naive exp overflows past ~709), to a relative 2·10⁻⁷ —
        with the constants as stored, or, for constants stored in float16 or bfloat16, with some
        real constants each of which rounds to the stored one (:meth:`_unrounded`)."""
        kinds = [n.op_type for n in nodes if n.op_type not in _ARITH]
        size = sum(n.op_type not in ("Identity", "Cast") for n in nodes)
        cands = _FORMS.get(frozenset(kinds), ()) if len(kinds) == len(set(kinds)) else ()
        cands = tuple(c for c in cands if size <= _MOST_NODES.get(c, 0))
        if any(n.op_type == "Cast" and self.attr(n, "to", 0) not in (1, 10, 11, 16) for n in nodes):
            cands = ()  # a Cast to an integer or bool type truncates: read as "no change" it would hide a step function
        if not cands:
            return None
        pts = np.concatenate([np.linspace(-12.0, 12.0, 4801), -np.logspace(-3, 300, 304), np.logspace(-3, 300, 304)])
        near = np.arange(pts.size) < 4801
        # (a Pow's exponent is not a rounded real: x³ is stored as 3.0 exactly, and moving it makes z^3.0004 nan for z < 0)
        narrow = sorted({i for n in nodes for k, i in enumerate(n.input) if i and self.is_const(i) and self.const_type.get(i) in _NARROW
                         and not (n.op_type == "Pow" and k == 1)})
        stored = self._values(out, leaf, pts, None)
        for cand in cands:
            with np.errstate(all="ignore"):
                want = get_activation(cand).np_fn(pts)
            if _agrees(stored, near, want) or (
                    narrow and _agrees(self._values(out, leaf, pts, self._unrounded(out, leaf, narrow, pts, want)), near, want)):
                return cand, "+".join(sorted({n.op_type for n in nodes}))
        return None

    def _values(self, out: str, leaf: str, pts: np.ndarray, subst: Mapping[str, float] | None) -> np.ndarray:
        """The subgraph ``leaf → out`` at ``pts`` (its constants replaced as ``subst`` says), one value per point."""
        with np.errstate(all="ignore"):
            return np.broadcast_to(self.evaluate(out, leaf, pts, subst=subst), pts.shape)

    def _unrounded(self, out: str, leaf: str, names: list[str], pts: np.ndarray, want: np.ndarray) -> dict[str, float]:
        """Constants c_i within the rounding of the float16/bfloat16 constants ``names`` that bring
        the subgraph closest to ``want`` (bounded least squares, Gauss–Newton from the stored ĉ_i).

        An exporter stores the constants of an activation's decomposition in the graph's dtype
        (1/√2 as 0.70703125 in float16), so the graph computes σ with each c_i rounded to ĉ_i:
        |c_i − ĉ_i| ≤ half an ulp of ĉ_i, 2^(e − p) for 2^e ≤ |ĉ_i| < 2^(e+1) (half that below a
        power of two), at most |ĉ_i|·2⁻¹¹ in float16 and |ĉ_i|·2⁻⁸ in bfloat16; that moves the
        value by about |∂g/∂c_i|·|c_i|·2^-p (|c·σ'|·2^-p for a scale inside σ), up to ~10⁻³
        relative in float16, far above the 2·10⁻⁷ a float32 graph is allowed. The caller names σ
        only when the graph with the constants found here agrees with σ to that same 2·10⁻⁷:
        every constant stays inside its own rounding interval, so a constant one ulp or more off
        (0.70 for 1/√2, or 0.7109375 in bfloat16) is refused unless another constant's rounding
        makes up for it exactly, and float32/float64 constants are never moved."""
        from scipy.optimize import lsq_linear

        stored: dict[str, float] = {}
        lo: list[float] = []
        hi: list[float] = []
        for name in names:
            p, emin = _NARROW[self.const_type[name]]
            c_arr = self.const(name)
            assert c_arr is not None
            c = float(c_arr.reshape(()).astype(np.float64))
            if not np.isfinite(c):
                continue
            e = max(int(np.frexp(c)[1]) - 1, emin) if c != 0.0 else emin
            up = 2.0 ** (e - p)
            down = up / 2 if c != 0.0 and abs(c) == 2.0 ** e and e > emin else up
            stored[name] = c
            lo.append(c - (down if c >= 0 else up))
            hi.append(c + (up if c >= 0 else down))
        cur = dict(stored)
        keys = list(stored)
        if not keys:
            return cur
        lo_a, hi_a = np.array(lo), np.array(hi)
        w = 1 + np.abs(pts) + np.abs(want)  # (the fit only searches: rows scaled so that none overflows its squares)
        with np.errstate(all="ignore"):
            for _ in range(4):
                got = self._values(out, leaf, pts, cur)
                cols = []
                for k, name in enumerate(keys):
                    step = (hi_a[k] - lo_a[k]) / 64
                    plus = self._values(out, leaf, pts, {**cur, name: cur[name] + step})
                    minus = self._values(out, leaf, pts, {**cur, name: cur[name] - step})
                    cols.append((plus - minus) / (2 * step) / w)
                J = np.stack(cols, axis=1)
                r = (want - got) / w
                ok = np.isfinite(r) & np.all(np.isfinite(J), axis=1)
                if not np.any(ok):
                    break
                x = np.array([cur[k] for k in keys])
                step_lo, step_hi = lo_a - x, hi_a - x
                fixed = step_hi - step_lo <= 0  # (a zero-width interval cannot happen, but lsq_linear needs lo < hi)
                step_hi = np.where(fixed, step_lo + 1e-300, step_hi)
                dx = lsq_linear(J[ok], r[ok], bounds=(step_lo, step_hi)).x
                x = np.clip(x + dx, lo_a, hi_a)
                cur = {k: float(v) for k, v in zip(keys, x)}
        return cur


def _agrees(got: np.ndarray, near: np.ndarray, want: np.ndarray) -> bool:
    """The subgraph's values ``got`` are ``want`` to a relative 2·10⁻⁷: finite on [−12, 12] (the
    points ``near``), no NaN at the far scales, equal wherever both are finite."""
    with np.errstate(all="ignore"):
        both = np.isfinite(got) & np.isfinite(want)
        return bool(np.all(np.isfinite(got[near])) and not np.any(np.isnan(got))
                    and np.all(np.abs(got[both] - want[both]) <= 2e-7 * (1 + np.abs(want[both])))
                    and np.all(both[near]))


def _common(names: list[str], sep: str) -> str:
    parts = [n.strip(sep).split(sep) for n in names]
    common: list[str] = []
    for comp in zip(*parts):
        if all(c == comp[0] for c in comp):
            common.append(comp[0])
        else:
            break
    return sep.join(common) if all(names) else ""


def _block_name(nodes: list[str], weights: list[str], k: int) -> str:
    """The common prefix of the block's node names (``/encoder/layer.0/mlp/fc1/MatMul``…), else of
    its initializer names (``pre.fc1.weight``…), else ``mlp{k}``."""
    return _common(nodes, "/") or _common([w for w in weights if not w.startswith("onnx::")], ".") or f"mlp{k}"


class OnnxSource:
    """Initializers as numpy arrays, oriented [out, in], read one at a time (external data too)."""

    def __init__(self, graph: _Graph, virtual: Mapping[str, _Virtual]) -> None:
        self.graph = graph
        self.virtual = dict(virtual)  # tensor name → (initializer, transpose, skip diagonal c (c·I or diag c), factor)

    def load(self, info: TensorInfo) -> np.ndarray:
        init, transpose, scalar, factor = self.virtual[info.name]
        if scalar is not None:  # the skip c·I (or diag(c))
            skip = np.zeros(info.shape)
            np.fill_diagonal(skip, scalar)  # (np.eye·c would put 0·c = nan off the diagonal for c = ±inf)
            return skip
        arr = self.graph.read(init)
        if arr.dtype == np.float16:
            arr = arr.astype(np.float32)  # exact
        arr = np.ascontiguousarray(arr.T) if transpose else np.array(arr, copy=True)
        if len(info.shape) == 1 and arr.shape == (1,) and tuple(info.shape) != (1,):  # (a one-element bias, broadcast)
            arr = np.full(tuple(info.shape), arr[0], dtype=arr.dtype)
        if factor is not None:  # the graph scales the block's output: rows (and the bias) times a stored constant,
            # exact in float64 (two float32 or narrower significands fit in 53 bits)
            arr = arr.astype(np.float64) * (factor.reshape(-1, 1) if arr.ndim == 2 and factor.size > 1 else factor)
        return arr


_SINCE = {"Gelu": 20, "HardSwish": 14}  # (default-domain operators younger than opset 1: the version that added them)
_READ_BY_NAME = _ELEMENTWISE | {"MatMul", "Gemm", "Transpose", "Constant"}


def _standard_ops(model: Any, path: Path) -> None:
    """Refuse a node that this reader would interpret by its name but whose meaning is not ONNX's: an operator of a
    custom domain (a runtime supplies its kernel; ``com.microsoft``'s Gelu, the exact GELU, excepted), or a default-domain
    operator the model's opset does not have yet (``Gelu`` before opset 20: onnx.checker refuses such a model)."""
    opset = max((int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), default=None)
    for node in model.graph.node:
        dom, op, name = node.domain or "", node.op_type, node.name or node.op_type
        if op not in _READ_BY_NAME:
            continue
        if dom in ("", "ai.onnx"):
            if opset is not None and opset < _SINCE.get(op, 1):
                raise InvalidInput(f"{path}: node {name!r} is {op}, an ONNX operator since opset {_SINCE[op]}, but the model "
                                   f"imports opset {opset}: not a valid ONNX model; re-export it with opset ≥ {_SINCE[op]}")
        elif not (dom == "com.microsoft" and op == "Gelu"):
            raise InvalidInput(f"{path}: node {name!r} is {op} of the custom domain {dom!r}, whose meaning the file does not "
                               "define (a runtime supplies its kernel); absorb reads standard ONNX operators — export the "
                               "model without custom operators")


def read_onnx(path: Path, *, activation: str | None) -> tuple[dict[str, TensorInfo], OnnxSource, Detection]:
    """Parse ``path`` and find its MLP blocks (see the module docstring)."""
    onnx = optional_package("onnx", path, "an ONNX model")
    from onnx import numpy_helper

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - protobuf raises DecodeError, onnx its own errors
        raise InvalidInput(f"{path}: not a readable ONNX model ({type(exc).__name__}: {str(exc)[:160]}); "
                           "give an ONNX file (.onnx) written by onnx.save or torch.onnx.export") from None
    _standard_ops(model, path)
    g = _Graph(model.graph, numpy_helper, path)
    tensors: dict[str, TensorInfo] = {}
    virtual: dict[str, _Virtual] = {}

    def register(init: str, stored_out_in: bool, scale: tuple[str, np.ndarray] | None = None) -> str:
        shp = g.shape(init)
        assert shp is not None
        key = (f"{scale[0]}·" if scale else "") + (init if stored_out_in else f"{init}ᵀ")
        if key not in tensors:
            t = g.init[init]
            tensors[key] = TensorInfo(key, path, _DTYPE.get(t.data_type, f"ONNX type {t.data_type}"),
                                      shp if stored_out_in else shp[::-1], 0, 0, 0)
            virtual[key] = (init, not stored_out_in, None, scale[1] if scale else None)
        return key

    def vector(init: str, length: int, scale: tuple[str, np.ndarray] | None = None) -> str:
        shp = g.shape(init)
        assert shp is not None
        t = g.init[init]
        key = (f"{scale[0]}·" if scale else "") + init
        if tuple(shp) == (1,) and length != 1:  # (an Add of a one-element bias broadcasts it over every unit)
            shp, key = (length,), f"{key}[broadcast to {length}]"
        tensors.setdefault(key, TensorInfo(key, path, _DTYPE.get(t.data_type, f"ONNX type {t.data_type}"), shp, 0, 0, 0))
        virtual.setdefault(key, (init, False, None, scale[1] if scale else None))
        return key

    specs: list[BlockSpec] = []
    refused: list[str] = []
    for node in model.graph.node:
        down = g._bare(node)
        if down is None:
            continue
        down = g.with_bias(down)
        nodes: list[Any] = []
        lv = g.leaves(down.x, nodes)
        if lv is None or len(lv) not in (1, 2) or not nodes:
            continue
        found = _match_block(g, down, sorted(lv), activation, nodes)
        if found is None:
            continue
        if isinstance(found, str):
            refused.append(found)
            continue
        up, gate, act, form = found
        d_out, n = _dims(g, down)
        if _dims(g, up) != (n, d_out) or (gate is not None and _dims(g, gate) != (n, d_out)):
            continue
        k = len(specs)
        lins = [up, down] + ([gate] if gate else [])
        name = _block_name([lin.node for lin in lins], [lin.weight for lin in lins], k)
        layer = next((int(m) for m in re.findall(r"\d+", name)), k)
        skip_key, residual, scale = _wiring(g, up.x, down, register, tensors, virtual, path, d_out)
        specs.append(BlockSpec(
            name=name, layer=layer, family="onnx", up=register(up.weight, up.out_in),
            down=register(down.weight, down.out_in, scale),
            gate=register(gate.weight, gate.out_in) if gate else None,
            b_up=vector(up.bias, n) if up.bias else None, b_gate=vector(gate.bias, n) if gate and gate.bias else None,
            b_down=vector(down.bias, d_out, scale) if down.bias else None, activation=act,
            activation_source=f"the ONNX graph ({form} after {up.node or up.weight})" if activation is None else "--activation",
            residual=residual, d=d_out, n=n, skip=skip_key))
    if not specs:
        ops = sorted({n.op_type for n in model.graph.node})
        quant = sorted(set(ops) & _QUANT_OPS)
        why = (f"its linear layers are quantised ({', '.join(quant)}); analyse the float model" if quant else
               refused[0] if refused else "no MatMul/Gemm → activation → MatMul/Gemm pattern with weight initializers")
        raise InvalidInput(f"{path}: an ONNX model with no MLP block absorb can read: {why} (ops in the graph: "
                           f"{', '.join(ops[:12])}{', ...' if len(ops) > 12 else ''})")
    seen: dict[str, int] = {}
    for s in specs:
        seen[s.name] = seen.get(s.name, 0) + 1
    if any(v > 1 for v in seen.values()):
        from dataclasses import replace
        specs = [replace(s, name=f"{s.name}[{k}]") for k, s in enumerate(specs)]
    det = Detection(blocks=tuple(specs), families=("onnx",), model_type=None,
                    notes=("ONNX MatMul weights stored [in, out] were transposed to [out, in]",)
                    if any(t.endswith("ᵀ") for s in specs for t in (s.up, s.down)) else ())
    return tensors, OnnxSource(g, virtual), det


def _dims(g: _Graph, lin: _Linear) -> tuple[int, int]:
    """(out, in) of a linear map."""
    shp = g.shape(lin.weight)
    assert shp is not None
    return (shp[0], shp[1]) if lin.out_in else (shp[1], shp[0])


def _match_block(g: _Graph, down: _Linear, leaves: list[str], activation: str | None,
                 nodes: list[Any]) -> tuple[_Linear, _Linear | None, str, str] | str | None:
    """(up, gate, activation, form) for the subgraph feeding ``down``; a reason string when it
    is an MLP whose activation absorb cannot name; None when it is no MLP."""
    lins = [g.linear_at(v) for v in leaves]
    if any(lin is None for lin in lins):
        return None
    if len(leaves) == 1:
        up = lins[0]
        assert up is not None
        if activation is not None:
            return up, None, get_activation(activation).name, "--activation"
        got = g.activation(down.x, leaves[0], nodes)
        if got is None:
            ops = "+".join(sorted({n.op_type for n in nodes}))
            return f"the activation after {up.node or up.weight} ({ops}) is not one absorb names; pass --activation NAME"
        return up, None, got[0], got[1]
    # gated: Mul(σ(z_gate), z_up) with both projections reading the same input
    prod = g.producer.get(down.x)
    if prod is None or prod.op_type != "Mul" or len(prod.input) != 2:
        return None
    a, b = lins
    assert a is not None and b is not None
    if a.x != b.x:
        return None
    for (zg, gate), (zu, up) in (((leaves[0], a), (leaves[1], b)), ((leaves[1], b), (leaves[0], a))):
        if zu not in prod.input:
            continue
        other = prod.input[1] if prod.input[0] == zu else prod.input[0]
        sub: list[Any] = []
        if g.leaves(other, sub) != {zg}:
            continue
        if activation is not None:
            return up, gate, get_activation(activation).name, "--activation"
        got = g.activation(other, zg, sub) if sub else ("identity", "Identity")
        if got is None:
            ops = "+".join(sorted({n.op_type for n in sub}))
            return f"the gate's activation after {gate.node or gate.weight} ({ops}) is not one absorb names; pass --activation NAME"
        return up, gate, got[0], got[1]
    return None


def _x_term(g: _Graph, name: str, x: str, d: int, depth: int = 0) -> float | list[Any] | tuple[_Linear, float] | None:
    """``name`` as a linear map of the block's input ``x``: its coefficient c for c·x (``x`` itself,
    ``Mul`` by a scalar constant, ``Neg``, through ``Identity``), [the vector, its name] for
    x ⊙ c (``Mul`` by a constant d-vector), or (the d×d bias-free MatMul/Gemm of x, 1) for x M; None
    for anything else."""
    if name == x:
        return 1.0
    node = g.producer.get(name)
    if node is None or depth > 64:  # (a malformed graph may loop)
        return None
    if node.op_type == "Identity" and len(node.input) == 1:
        return _x_term(g, node.input[0], x, d, depth + 1)
    if node.op_type == "Neg" and len(node.input) == 1 and node.input[0] == x:
        return -1.0
    if node.op_type == "Mul" and len(node.input) == 2 and x in node.input and node.input[0] != node.input[1]:
        cname = node.input[1] if node.input[0] == x else node.input[0]
        c = g.const(cname)
        if c is not None and c.size == 1:  # (0·x too: the skip M = 0, read as the graph has it)
            return float(c.reshape(()))
        if c is not None and c.ndim == 1 and c.size == d and d > 1:  # x ⊙ c: the skip diag(c)
            return [np.array(c, dtype=np.float64), cname]
        return None
    lin = g.linear_at(name)
    if lin is not None and lin.x == x and lin.bias is None and _dims(g, lin) == (d, d):
        return lin, 1.0
    return None


def _reaches(g: _Graph, name: str, x: str) -> bool:
    """Whether ``x`` is among the values ``name`` is computed from (True past 65 536 values: not known)."""
    seen, todo = set(), [name]
    while todo:
        if len(seen) >= 1 << 16:
            return True
        v = todo.pop()
        if v == x:
            return True
        if v in seen:
            continue
        seen.add(v)
        node = g.producer.get(v)
        if node is not None:
            todo.extend(i for i in node.input if i)
    return False


def _coef(a: np.ndarray, names: list[str]) -> str:
    """The skip's coefficient as the report writes it: ``2.0``, or ``diag([0.5, 1.5, 2.0])`` for a
    per-channel one (``diag(c)`` naming the vectors it is made of when d > 6)."""
    if a.ndim == 0:
        return repr(float(a))
    if a.size <= 6:
        return f"diag([{', '.join(repr(float(v)) for v in a)}])"
    return f"diag(c) (c from {', '.join(repr(n) for n in names)})"


def _wiring(g: _Graph, x: str, down: _Linear, register: Callable[..., str], tensors: dict[str, TensorInfo],
            virtual: dict[str, _Virtual], path: Path, d: int) -> tuple[str | None, str, tuple[str, np.ndarray] | None]:
    """(tensor key of the skip M or None for the identity, the sentence the report gives, the
    factor the graph multiplies the block's output by or None for 1).

    The block's output is followed through the nodes that keep it a linear combination of itself
    and of linear maps of x — ``Add``/``Sub`` of c·x, x ⊙ c or x M (:func:`_x_term`), ``Neg``, ``Identity``, ``Mul`` by
    a constant (a scalar, or a per-channel vector before any skip is added: LayerScale) — as long
    as each result feeds only the next (the first step: the first such consumer, as the residual
    Add is), so ``Add(Add(x, B(x)), x)`` is 2x + B(x) (skip 2·I) and ``x − B(x)`` is x + B'(x) with
    B's down projection and bias negated. The walk ends at a node of any other kind (the next
    layer's norm, an attention output added); what it computes then is f(x) = M x + s ⊙ B(x) with
    M = a·I, diag(a) or one matrix, read from the graph. When nothing adds a linear map of x, or the
    combination is one absorb does not read (I plus a matrix, two scalings, a division, a constant or
    a nonlinear function of x added after the skip), the block
    is analysed with its own identity skip and the sentence says what the graph does instead."""
    a, mats, sign, factor, label = np.array(0.0), [], 1.0, None, ""
    names: list[str] = []  # the per-channel skip vectors added
    t, last, steps, added = down.out, None, 0, False
    outputs = {o.name for o in g.g.output}
    isolated = "the block is analysed with its own identity skip"
    hops, most = 0, len(g.g.node)  # (Identity nodes are free steps; every node at most once: a loop ends)
    while steps < 64 and hops <= most:
        users = list({id(n): n for n in g.consumers.get(t, [])}.values())  # a node reading t twice (t + t) once
        if steps == 0:
            node = next((n for op in ("Add", "Sub") for n in users if n.op_type == op), users[0] if len(users) == 1 else None)
        else:
            node = users[0] if len(users) == 1 and t not in outputs else None
        if node is None or not node.output:
            break
        op, ins = node.op_type, [i for i in node.input]
        where = f"the graph's residual Add {node.name or node.output[0]}" if op == "Add" else f"the graph's {op} {node.name or node.output[0]}"
        if op in ("Add", "Sub") and len(ins) == 2:
            if ins[0] == ins[1]:
                return None, f"{where} combines the block's output with itself, which absorb does not read; {isolated}", None
            other = ins[1] if ins[0] == t else ins[0]
            term = _x_term(g, other, x, d)
            if term is None:
                if steps == 0 and op == "Add":
                    return None, (f"{where} adds {other!r}, not a linear map of the block's input (e.g. the input of a norm "
                                  f"before the MLP); {isolated}"), None
                if steps > 0 and (g.is_const(other) or _reaches(g, other, x)):  # x + B(x) + (a constant, or x + 1, x², …)
                    kind = "a constant" if g.is_const(other) else "a function of the block's input"
                    return None, (f"{where} {'adds' if op == 'Add' else 'subtracts'} {other!r}, {kind} that is not a "
                                  f"linear map of it, to the block's output after its skip; {isolated}"), None
                break  # a term of other inputs (an attention branch beside the MLP): the block's output ends before it
            if op == "Sub" and ins[0] == other:  # other − t: the block's output and what was added change sign
                sign, a, mats = -sign, -a, [(m, -c) for m, c in mats]
                term_sign = 1.0
            else:
                term_sign = -1.0 if op == "Sub" else 1.0
            if isinstance(term, tuple):
                mats.append((term[0], term_sign * term[1]))
            else:
                a = a + term_sign * np.asarray(term[0] if isinstance(term, list) else term, dtype=np.float64)
                names += [term[1]] if isinstance(term, list) else []
            added = True
        elif op == "Identity" and len(ins) == 1:
            pass
        elif op == "Neg" and len(ins) == 1:
            sign, a, mats = -sign, -a, [(m, -c) for m, c in mats]
        elif op == "Mul" and len(ins) == 2 and ins[0] != ins[1]:
            c = g.const(ins[1] if ins[0] == t else ins[0])
            if c is None:
                break  # a product with a variable (a gate): the block's output ends before it
            cname = ins[1] if ins[0] == t else ins[0]
            if (factor is not None or c.size not in (1, d) or (c.size > 1 and (added or c.ndim != 1))
                    or g.const_type.get(cname) not in (1, 10, 16)):
                why = "again" if factor is not None else "after adding a skip" if added and c.size > 1 else "here"
                return None, (f"{where} multiplies the block's output by the constant {cname!r} (shape {tuple(c.shape)}) {why}, "
                              f"which absorb does not read; {isolated}"), None
            factor = np.array(c, dtype=np.float64).reshape(-1) if c.size > 1 else np.array(float(c.reshape(())))
            label = repr(float(factor)) if c.size == 1 else repr(cname)
            if c.size == 1:
                a = a * float(factor)
                mats = [(m, cm * float(factor)) for m, cm in mats]
        elif op == "Div" and len(ins) == 2 and ins[0] == t and g.const(ins[1]) is not None:
            return None, f"{where} divides the block's output by a constant, which absorb does not read exactly; {isolated}", None
        else:
            break
        t, last, hops = node.output[0], node, hops + 1
        steps += op != "Identity"
    if steps >= 64 or hops > most:  # (a chain longer than any exporter writes, or a loop: what follows is not read)
        return None, f"the block's output passes through more than 64 nodes (or a loop) after the block; {isolated}", None
    if not added or last is None:
        return None, "the graph adds no residual around this block (nothing adds a linear map of its input to its output)", None
    name = last.name or last.output[0]
    where = f"the graph's residual Add {name}" if last.op_type == "Add" else f"the graph's residual Add (here the {last.op_type} {name})"
    if mats and (np.any(a != 0.0) or len(mats) > 1):
        return None, (f"{where} makes the block's output a sum of the skips {_coef(a, names)}{'·' if a.ndim == 0 else ' '}x and "
                      f"{', '.join(repr(m.weight) for m, _ in mats)}, which absorb does not read as one; {isolated}"), None
    scale = None
    if factor is not None or sign != 1.0:
        by = ("−" if sign < 0 else "") + (label if factor is not None else "1")
        scale = (f"({by})", (factor if factor is not None else np.array(1.0)) * sign)
    block = ("−" if sign < 0 else "+") + " " + (f"{label} ⊙ " if factor is not None else "") + "B(x)"
    scaled = "" if scale is None else f" with B's down projection and bias multiplied by {scale[0][1:-1]}"
    if mats:
        m, cm = mats[0]
        key = register(m.weight, m.out_in, None if cm == 1.0 else (f"({cm!r})", np.array(cm)))
        what = f"M = {'' if cm == 1.0 else f'{cm!r}·'}the initializer {m.weight!r}"
        return key, f"{where} computes M x {block}, {what}: f(x) = M x + B(x){scaled}, read from the graph", scale
    if np.all(a == 1.0) and scale is None:
        return None, f"{where} adds the block's input: f(x) = x + B(x), read from the graph", None
    if np.all(a == 1.0):
        return None, f"{where} computes x {block}: f(x) = x + B(x){scaled}, read from the graph", scale
    coef = _coef(a, names)
    key = f"{name}: {coef}·I" if a.ndim == 0 else f"{name}: {coef}"
    mx = f"{coef}·x" if a.ndim == 0 else f"{coef} x"
    tensors[key] = TensorInfo(key, path, "F64", (d, d), 0, 0, 0)
    virtual[key] = ("", False, float(a) if a.ndim == 0 else a, None)
    return key, f"{where} computes {mx} {block}: f(x) = {mx} + B(x){scaled}, read from the graph", scale


__all__ = ["OnnxSource", "read_onnx"]
