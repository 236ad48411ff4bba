"""The scaffolding every machine-checked proof uses: the proof record, the symbols, and
the helpers that make SymPy close (or refuse) a step. See :mod:`absorb.certificate.proofs`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import sympy as sp


class ProofError(AssertionError):
    """SymPy could not close a step of a proof."""


@dataclass(frozen=True)
class Step:
    """One step: a sentence, the LaTeX of the equation sympy closed, how it closed it."""

    text: str
    latex: str
    check: str


@dataclass
class Proof:
    name: str
    title: str
    source: str
    statement: str
    setting: str
    steps: list[Step] = field(default_factory=list)
    conclusion: str = ""

    def add(self, text: str, latex: str, check: str) -> None:
        self.steps.append(Step(text, latex, check))


P = sp.Symbol("p", positive=True)
T = sp.Symbol("t", positive=True)
Z = sp.Symbol("z", real=True)


def _zero(expr: sp.Expr | sp.MatrixBase, what: str) -> None:
    """Require sympy to reduce ``expr`` (scalar or matrix) to 0, else raise ProofError."""
    items = list(expr) if isinstance(expr, sp.MatrixBase) else [expr]
    for e in items:
        s = sp.simplify(sp.expand(e))
        if s != 0:
            raise ProofError(f"sympy could not close the step '{what}': residual {s}")


def _equal(lhs: sp.Expr | sp.MatrixBase, rhs: sp.Expr | sp.MatrixBase, what: str) -> str:
    _zero(lhs - rhs, what)
    return "simplify(lhs - rhs) = 0"


def _mat(name: str, rows: int, cols: int) -> sp.Matrix:
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i + 1}{j + 1}", real=True))


def _vec(name: str, k: int) -> sp.Matrix:
    return sp.Matrix(k, 1, lambda i, _: sp.Symbol(f"{name}_{i + 1}", real=True))


def _apply(fn: Callable[[sp.Expr], sp.Expr], v: sp.Matrix) -> sp.Matrix:
    return v.applyfunc(fn)


def _homogeneous_rule(fn: sp.FunctionClass, k: sp.Expr, t: sp.Symbol) -> Callable[[sp.Expr], sp.Expr]:
    """Rewrite fn(t^a·y) → t^{a·k} fn(y): the hypothesis 'fn is positively homogeneous of
    degree k', applied to every occurrence whose argument carries a power of t."""

    def rule(expr: sp.Expr) -> sp.Expr:
        def repl(*args: sp.Expr) -> sp.Expr:
            arg = sp.expand(args[0])
            base = sp.expand(arg.subs(t, 1))
            if base == 0:
                return fn(arg)
            ratio = sp.simplify(arg / base)
            if ratio.free_symbols - {t} - set(sp.sympify(k).free_symbols) or not ratio.has(t):
                return fn(arg)
            return sp.powsimp(ratio**k, force=True) * fn(base)

        return expr.replace(lambda e: isinstance(e, sp.Function) and e.func == fn, lambda e: repl(*e.args))

    return rule


def _fail(what: str) -> str:
    raise ProofError(f"sympy could not close the step '{what}'")
