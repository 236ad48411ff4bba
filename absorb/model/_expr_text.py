"""User-defined activations (``expr:…``), the part that needs no sympy: the token list, the
recursive-descent parser over the whitelisted grammar, and the limits on length, size, depth
and the magnitude of constants and exponents, all checked before sympy builds anything.

The parse tree (tuples; numbers as :class:`fractions.Fraction`) is also what identifies an
expression in the persistent analysis cache (:func:`canonical`), so that a run which finds
its expression there never imports sympy. :mod:`absorb.model._expr` builds the sympy form.
"""

from __future__ import annotations

import re
from fractions import Fraction

from absorb._errors import InvalidInput

MAX_TEXT = 400
"""Longest accepted expression text (characters)."""
MAX_NODES = 120
"""Most nodes (numbers, x, operators, calls) an expression may have."""
MAX_DEPTH = 24
"""Deepest nesting of parentheses, calls, signs and powers (``-(-x)``, ``a**b**c``)."""
MAX_EXPONENT = 64
"""Largest |exponent| (and exponent denominator) of a constant power."""
MAX_VARIABLE_POWERS = 2
"""Most powers whose exponent depends on x (a ** b with x in b)."""
MAX_LITERAL = 10**6
"""Largest number literal (larger constants are written as products or powers)."""
MAX_CONSTANT = 1e100
"""Largest magnitude any constant sub-expression may have."""
VALIDATE_SECONDS = 10.0
"""Time budget of proving an expression real and finite (a child process)."""
VALIDATE_MEMORY = 2 << 30
"""Memory budget of that proof (bytes of address space)."""

_EXPR_TOKENS = re.compile(r"\s*(?:(\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|([A-Za-z_][A-Za-z_0-9]*)|(\*\*|\^|[-+*/(),]))", re.ASCII)
UNARY_NAMES = ("exp", "log", "sqrt", "erf", "erfc", "tanh", "sinh", "cosh", "atan", "sin", "cos", "Abs", "abs")
"""The one-argument functions of the grammar (``abs`` is ``Abs``)."""
VARIADIC_NAMES = ("Max", "max", "Min", "min")
CONSTANT_NAMES = ("pi", "E")
_EXPR_FUNCS = frozenset(("x", *UNARY_NAMES, *VARIADIC_NAMES, *CONSTANT_NAMES))
_UNARY_FUNCS, _VARIADIC_FUNCS = frozenset(UNARY_NAMES), frozenset(VARIADIC_NAMES)
_FUNC_LIST = ", ".join(sorted(k for k in _EXPR_FUNCS if k != "x"))
_GRAMMAR_HINT = f"use x, numbers, + - * / ** (or ^) ( ) and {_FUNC_LIST}"


def _tokens(text: str) -> list[tuple[str, str]]:
    """The token list of ``text``: ('num' | 'name' | 'op', string); unknown text is refused."""
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _EXPR_TOKENS.match(text, pos)
        if not m or m.end() == pos:
            rest = text[pos:].strip(" \t\n\r\f\v")  # (ASCII white space only, as in the token pattern)
            if not rest:
                break
            raise InvalidInput(f"activation expression {text!r}: unexpected text {rest[:20]!r}; {_GRAMMAR_HINT}")
        num, ident, op = m.groups()
        if ident is not None and ident not in _EXPR_FUNCS:
            raise InvalidInput(f"activation expression {text!r}: unknown name {ident!r}; the variable is x and the "
                               f"functions are {_FUNC_LIST}")
        op = "**" if op == "^" else op  # ^ is a power, as in the papers (sympy's convert_xor), never XOR
        out.append(("num", num) if num is not None else ("name", ident) if ident is not None else ("op", op))
        pos = m.end()
    return out


class _Parser:
    """expr := term (('+'|'-') term)* ; term := unary (('*'|'/') unary)* ;
    unary := ('+'|'-') unary | power ; power := atom ['**' unary] ;
    atom := number | x | pi | E | name '(' expr (',' expr)* ')' | '(' expr ')'.

    The result is a tree of tuples (no sympy object yet); ``-x**2`` is ``-(x**2)`` and
    ``2**-1`` is allowed, as in Python."""

    def __init__(self, text: str) -> None:
        self.text, self.toks, self.i, self.nodes = text, _tokens(text), 0, 0

    def fail(self, why: str) -> InvalidInput:
        return InvalidInput(f"activation expression {self.text!r}: {why}")

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, op: str) -> bool:
        if self.peek() == ("op", op):
            self.i += 1
            return True
        return False

    def node(self, depth: int, *tree: object) -> tuple:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.fail(f"more than {MAX_NODES} operations and operands; too large to analyse, write a smaller expression")
        return tree

    def check_depth(self, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self.fail(f"nested more than {MAX_DEPTH} levels deep; too large to analyse, write a flatter expression")

    def parse(self) -> tuple:
        if not self.toks:
            raise self.fail("is empty; write a function of x such as 'x*(1+erf(x/sqrt(2)))/2'")
        tree = self.expr(0)
        if self.i != len(self.toks):
            raise self.fail(f"unexpected {self.toks[self.i][1]!r} after a complete expression; {_GRAMMAR_HINT}")
        return tree

    def expr(self, depth: int) -> tuple:
        self.check_depth(depth)
        tree = self.term(depth)
        while True:
            if self.take("+"):
                tree = self.node(depth, "add", tree, self.term(depth))
            elif self.take("-"):
                tree = self.node(depth, "sub", tree, self.term(depth))
            else:
                return tree

    def term(self, depth: int) -> tuple:
        tree = self.unary(depth)
        while True:
            if self.take("*"):
                tree = self.node(depth, "mul", tree, self.unary(depth))
            elif self.take("/"):
                tree = self.node(depth, "div", tree, self.unary(depth))
            else:
                return tree

    def unary(self, depth: int) -> tuple:
        self.check_depth(depth)
        if self.take("-"):
            return self.node(depth, "neg", self.unary(depth + 1))
        if self.take("+"):
            return self.unary(depth + 1)
        base = self.atom(depth)
        if self.take("**"):
            return self.node(depth, "pow", base, self.unary(depth + 1))
        return base

    def atom(self, depth: int) -> tuple:
        tok = self.peek()
        if tok is None:
            raise self.fail(f"ends too early; {_GRAMMAR_HINT}")
        kind, s = tok
        self.i += 1
        if kind == "num":
            if len(s) > 20:
                raise self.fail(f"number {s[:24]!r} has more than 20 characters; write it shorter")
            mant, _, ex = s.lower().partition("e")
            if ex and abs(int(ex)) > 30:  # checked before Rational builds 10**|ex|
                raise self.fail(f"number {s!r} has a decimal exponent beyond ±30; write it as a product of smaller numbers")
            v = Fraction(s)
            if abs(v) > MAX_LITERAL:
                raise self.fail(f"number {s!r} is larger than {MAX_LITERAL:g}; write large constants as products")
            return self.node(depth, "num", v)
        if kind == "name":
            if s in _UNARY_FUNCS or s in _VARIADIC_FUNCS:
                if not self.take("("):
                    raise self.fail(f"{s} must be called, as in {s}(x)")
                args = [] if self.peek() == ("op", ")") else [self.expr(depth + 1)]
                while self.take(","):
                    args.append(self.expr(depth + 1))
                if not self.take(")"):
                    raise self.fail(f"{s}( is not closed or has a stray token; {_GRAMMAR_HINT}")
                if s in _UNARY_FUNCS and len(args) != 1:
                    raise self.fail(f"{s} takes exactly one argument, got {len(args)}")
                if not args:
                    raise self.fail(f"{s}() needs at least one argument, as in {s}(0, x)")
                return self.node(depth, "call", s, tuple(args))
            if self.peek() == ("op", "("):
                raise self.fail(f"{s} is not a function; the functions are {_FUNC_LIST}")
            return self.node(depth, "x") if s == "x" else self.node(depth, "const", s)
        if s == "(":
            tree = self.expr(depth + 1)
            if not self.take(")"):
                raise self.fail(f"a '(' is not closed; {_GRAMMAR_HINT}")
            return tree
        raise self.fail(f"unexpected {s!r}; {_GRAMMAR_HINT}")


def _check_limits(text: str, tree: tuple) -> None:
    """Refuse constants too large to build and powers too large to analyse, before sympy
    sees them: every constant sub-expression is evaluated in mpmath (which cannot
    overflow) and bounded by MAX_CONSTANT; constant exponents by MAX_EXPONENT."""
    import mpmath

    def fail(why: str) -> InvalidInput:
        return InvalidInput(f"activation expression {text!r}: {why}")

    variable_powers = 0

    def walk(t: tuple) -> object:
        """The value (mpmath) of a constant sub-tree, None when it depends on x."""
        nonlocal variable_powers
        kind = t[0]
        if kind == "num":
            return mpmath.mpf(t[1].numerator) / t[1].denominator
        if kind == "x":
            return None
        if kind == "const":
            return +mpmath.pi if t[1] == "pi" else +mpmath.e  # (unary + : an mpf, not mpmath's lazy constant)
        if kind == "call":
            vals = [walk(a) for a in t[2]]
            if any(v is None for v in vals):
                return None
            name = t[1]
            if name in _UNARY_FUNCS and ((name == "log" and vals[0] <= 0) or (name == "sqrt" and vals[0] < 0)):
                raise fail(f"{name}({mpmath.nstr(vals[0], 6)}) is not a finite real number; the expression must be real "
                           "and finite for every real x")
            try:
                if name in _VARIADIC_FUNCS:
                    v = (max if name.lower() == "max" else min)(vals)
                else:
                    v = {"abs": abs, "Abs": abs}.get(name) or getattr(mpmath, name)
                    v = v(vals[0])
            except (OverflowError, ValueError, ZeroDivisionError):
                raise fail(f"the constant {name}(…) cannot be evaluated; write a smaller constant") from None
            return check(v)
        vals = [walk(a) for a in t[1:]]
        if kind == "pow":
            b, e = vals
            if e is None:
                variable_powers += 1
                if variable_powers > MAX_VARIABLE_POWERS:
                    raise fail(f"more than {MAX_VARIABLE_POWERS} powers with x in the exponent; too large to analyse")
                return None
            q = mpmath.mpf(e)
            if abs(q) > MAX_EXPONENT:
                raise fail(f"exponent {mpmath.nstr(q, 6)} is larger than {MAX_EXPONENT} in magnitude; too large to analyse")
            num = t[2]
            if num[0] == "num" and num[1].denominator > MAX_EXPONENT:
                raise fail(f"exponent {num[1]} has a denominator larger than {MAX_EXPONENT}; too large to analyse")
            if b is None:
                return None
            if b == 0 and q < 0:
                raise fail("0 raised to a negative power is not a number; the expression must be finite for every real x")
            if b != 0 and abs(q * mpmath.log(abs(b))) > mpmath.log(MAX_CONSTANT):
                raise fail(f"a constant power exceeds {MAX_CONSTANT:g} in magnitude; too large to analyse")
            if b < 0 and q != int(q):
                raise fail("a negative number raised to a fractional power is not real; the expression must be real for every real x")
            return check(b**q if b != 0 else mpmath.mpf(1 if q == 0 else 0))
        if any(v is None for v in vals):
            return None
        if kind == "neg":
            return -vals[0]
        a, b = vals
        if kind == "div" and b == 0:
            raise fail("division by zero; the expression must be finite for every real x")
        return check({"add": a + b, "sub": a - b, "mul": a * b}[kind] if kind != "div" else a / b)

    def check(v: object) -> object:
        if not isinstance(v, mpmath.mpf) or not mpmath.isfinite(v):
            raise fail("a constant in it is not a finite real number; the expression must be real and finite for every real x")
        if abs(v) > MAX_CONSTANT:
            raise fail(f"a constant exceeds {MAX_CONSTANT:g} in magnitude; too large to analyse")
        return v

    with mpmath.workdps(20):
        walk(tree)


def parse(text: str, *, check_constants: bool = True) -> tuple:
    """The parse tree of a user expression in ``x``, within the limits above (InvalidInput
    else). Pure Python: no sympy, no child process. ``check_constants=False`` checks the
    length, size and depth only, not the constants and exponents (:func:`_check_limits`,
    which imports mpmath): for a lookup in the analysis cache, whose entries exist only for
    expressions that passed every check."""
    if len(text) > MAX_TEXT:
        raise InvalidInput(f"activation expression {text[:30]!r}… has {len(text)} characters, more than {MAX_TEXT}; "
                           "too large to analyse, write a shorter expression")
    tree = _Parser(text).parse()
    if check_constants:
        _check_limits(text, tree)
    return tree


def canonical(tree: tuple) -> str:
    """A text that identifies a parse tree (spacing and ``^`` vs ``**`` do not matter; ``abs``
    and ``Abs`` differ, harmlessly): the key of the persistent analysis cache."""
    return repr(tree)
