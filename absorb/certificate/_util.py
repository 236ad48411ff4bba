"""Small shared pieces of the certificate package: array hashing, JSON plainness, LaTeX
escaping and number formatting.

Hash convention (documented in ``docs/certificates.md``): the SHA-256 of an array is the
digest of its values as IEEE-754 binary64, little-endian, C (row-major) order — exactly
``np.ascontiguousarray(a, dtype="<f8").tobytes()``. The shape is recorded next to the
digest (the bytes alone do not fix it). Loaders store weights as float64 (large float32,
bfloat16 and float16 matrices as float32, exactly), so the digest is that of the values
the engine reasoned about; a float32 or bfloat16 file hashes to the digest of its exact
float64 widening.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

import numpy as np

from absorb._validate import float64_rows

HASH_CONVENTION = (
    "sha256 of the float64 little-endian C-contiguous bytes (np.ascontiguousarray(a, dtype='<f8').tobytes())"
)


def array_sha256(a: np.ndarray) -> str:
    """Hex SHA-256 of ``a`` as float64 little-endian C-contiguous bytes (see module doc),
    fed in row blocks (the same digest; a float32 matrix is never widened whole)."""
    a = np.asarray(a)
    if a.ndim < 2:
        return hashlib.sha256(np.ascontiguousarray(a, dtype="<f8").tobytes()).hexdigest()
    h = hashlib.sha256()
    for _sl, blk in float64_rows(a.reshape(a.shape[0], -1)):
        h.update(np.ascontiguousarray(blk, dtype="<f8").tobytes())
    return h.hexdigest()


def file_sha256(path: str) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def plain(obj: Any) -> Any:
    """A JSON-friendly copy: numpy arrays/scalars to lists/numbers, sympy to str/number,
    tuples to lists, non-finite floats to strings (JSON has no NaN/Infinity)."""
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return plain(obj.tolist())
    if isinstance(obj, np.generic):
        return plain(obj.item())
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else repr(obj)
    if isinstance(obj, (bool, int, str)) or obj is None:
        return obj
    try:  # sympy numbers and expressions, enums, anything else printable
        import sympy as sp

        if isinstance(obj, sp.Basic):
            if obj.is_Integer:
                return int(obj)
            if obj.is_Rational:
                return str(obj)
            return str(obj)
    except ImportError:  # pragma: no cover - sympy is a dependency
        pass
    value = getattr(obj, "value", None)
    return value if isinstance(value, str) else str(obj)


# ---------------------------------------------------------------------------- LaTeX --

_TEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "#": r"\#",
    "%": r"\%",
    "_": r"\_",
    "^": r"\textasciicircum{}",
    "~": r"\textasciitilde{}",
    "<": r"\ensuremath{<}",
    ">": r"\ensuremath{>}",
    "|": r"\ensuremath{|}",
}
# Unicode the engine writes in its sentences (σ, ≥, ‖, ⊙, …) → LaTeX that pdflatex knows
# without extra packages. Anything else non-ASCII becomes ``?`` rather than a compile error.
_TEX_UNICODE = {
    "σ": r"\ensuremath{\sigma}",
    "τ": r"\ensuremath{\tau}",
    "γ": r"\ensuremath{\gamma}",
    "ε": r"\ensuremath{\varepsilon}",
    "η": r"\ensuremath{\eta}",
    "λ": r"\ensuremath{\lambda}",
    "μ": r"\ensuremath{\mu}",
    "⟨": r"\ensuremath{\langle}",
    "⟩": r"\ensuremath{\rangle}",
    "δ": r"\ensuremath{\delta}",
    "Σ": r"\ensuremath{\Sigma}",
    "≥": r"\ensuremath{\ge}",
    "≤": r"\ensuremath{\le}",
    "≠": r"\ensuremath{\ne}",
    "≈": r"\ensuremath{\approx}",
    "‖": r"\ensuremath{\|}",
    "⊙": r"\ensuremath{\odot}",
    "⊗": r"\ensuremath{\otimes}",
    "→": r"\ensuremath{\to}",
    "⇒": r"\ensuremath{\Rightarrow}",
    "⇔": r"\ensuremath{\Leftrightarrow}",
    "∘": r"\ensuremath{\circ}",
    "⋯": r"\ensuremath{\cdots}",
    "…": r"\ldots{}",
    "·": r"\ensuremath{\cdot}",
    "×": r"\ensuremath{\times}",
    "−": r"\ensuremath{-}",
    "–": "--",
    "—": "---",
    "∞": r"\ensuremath{\infty}",
    "±": r"\ensuremath{\pm}",
    "∈": r"\ensuremath{\in}",
    "⊆": r"\ensuremath{\subseteq}",
    "ᵀ": r"\ensuremath{^{\top}}",
    "√": r"\ensuremath{\surd}",
    "²": r"\ensuremath{^2}",
    "³": r"\ensuremath{^3}",
    "¹": r"\ensuremath{^1}",
    "⁻": r"\ensuremath{^-}",
    "₀": r"\ensuremath{_0}",
    "₁": r"\ensuremath{_1}",
    "₂": r"\ensuremath{_2}",
    "ℓ": r"\ensuremath{\ell}",
    "’": "'",
    "‘": "`",
    "“": "``",
    "”": "''",
    "✓": "yes",
    "✗": "no",
    "′": "'",
    "α": r"\ensuremath{\alpha}",
    "β": r"\ensuremath{\beta}",
    "≡": r"\ensuremath{\equiv}",
    "₊": r"\ensuremath{_+}",
    "₋": r"\ensuremath{_-}",
    "∀": r"\ensuremath{\forall}",
}


def tex_escape(text: object) -> str:
    """Escape a user- or engine-provided string for LaTeX text mode.

    Every character special to TeX is escaped, known Unicode symbols become math, and any
    other non-ASCII character becomes ``?`` so a file name can never break compilation or
    inject TeX commands.
    """
    out = []
    for ch in str(text):
        if ch in _TEX_SPECIAL:
            out.append(_TEX_SPECIAL[ch])
        elif ch in _TEX_UNICODE:
            out.append(_TEX_UNICODE[ch])
        elif ord(ch) < 128:
            out.append(ch if ch.isprintable() else " ")
        else:
            out.append("?")
    return "".join(out)


def tex_tt(text: object) -> str:
    """Escape for ``\\texttt{}`` and allow line breaks after separators (long hashes, paths)."""
    s = tex_escape(text)
    return re.sub(r"([/._-]|\\_)", lambda m: m.group(1) + r"\allowbreak{}", s)


def tex_num(x: object, digits: int = 4) -> str:
    """A float for math mode: ``1.23 \\times 10^{-5}``; ints and strings pass through."""
    if x is None:
        return r"\text{--}"
    if isinstance(x, bool):
        return r"\text{" + ("true" if x else "false") + "}"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, str):
        try:
            x = float(x)
        except ValueError:
            return r"\text{" + tex_escape(x) + "}"
    v = float(x)
    if math.isnan(v):
        return r"\mathrm{NaN}"
    if math.isinf(v):
        return r"\infty" if v > 0 else r"-\infty"
    if v == 0:
        return "0"
    if 1e-3 <= abs(v) < 1e4:
        s = f"{v:.{digits}g}"
        return s
    mant, exp = f"{v:.{max(digits - 1, 0)}e}".split("e")
    mant = mant.rstrip("0").rstrip(".") if "." in mant else mant
    return rf"{mant} \times 10^{{{int(exp)}}}"


def tex_matrix(rows: list[list[float]], digits: int = 4) -> str:
    """A small matrix as ``\\begin{pmatrix}…\\end{pmatrix}`` (entries via :func:`tex_num`)."""
    body = r" \\ ".join(" & ".join(tex_num(v, digits) for v in row) for row in rows)
    return r"\begin{pmatrix}" + body + r"\end{pmatrix}"


# Engine sentences (reasons, hypothesis statements) are free text with a few formula
# patterns in them. Known patterns are typeset in math mode; everything else is escaped.
_SUBSCRIPT_WORDS = {"up", "down", "gate", "res", "pre", "post", "min", "max", "inf"}
_UNICODE_MATH = {"ℓ": r"\ell", "δ": r"\delta", "σ": r"\sigma", "∞": r"\infty"}
_PROSE_PATTERN = re.compile(
    r"(?P<sci>(?<![\w.])[-+]?\d+(?:\.\d+)?[eE][-+]?\d+(?![\w.]))"
    r"|(?P<flip>(?:\((?P<cfrac>\d+/\d+)\)·)?W_down\[:,S\] W_up\[S,:\] = -M(?P<overc>/c)?)"
    r"|(?P<w>\bW_(?P<wname>up|down|gate)(?P<widx>\[[^\]\s]{1,12}\])?)"
    r"|(?P<sinf>σ∞)"
    r"|(?P<abs>\|(?P<absarg>[A-Za-z]{1,3})\|)"
    r"|(?P<pow>(?<![\w\\])(?P<base>[A-Za-z])\^(?P<exp>\d{1,3})(?!\w))"
    r"|(?P<sub>(?<![\w\\])(?P<sym>[A-Za-zσ])_(?P<idx>[A-Za-z0-9ℓδ]{1,4}|\{[A-Za-z0-9+ ]{1,8}\})(?![\w]))"
)


def _math_sub(idx: str) -> str:
    idx = idx.strip("{}")
    if idx in _SUBSCRIPT_WORDS:
        return r"\mathrm{" + idx + "}"
    return "".join(_UNICODE_MATH.get(ch, ch) for ch in idx)


def _prose_math(m: re.Match[str]) -> str:
    if m["sci"]:
        mant, exp = re.split("[eE]", m["sci"])
        if float(mant) == 0:
            return "$0$"
        return rf"${mant}\times10^{{{int(exp)}}}$"
    if m["flip"]:
        lhs = r"\tfrac{" + m["cfrac"].replace("/", "}{") + r"}\," if m["cfrac"] else ""
        rhs = "-M/c" if m["overc"] else "-M"
        return rf"${lhs}W_{{\mathrm{{down}}}}[:,S]\,W_{{\mathrm{{up}}}}[S,:] = {rhs}$"
    if m["w"]:
        return rf"$W_{{\mathrm{{{m['wname']}}}}}{m['widx'] or ''}$"
    if m["sinf"]:
        return r"$\sigma_\infty$"
    if m["abs"]:
        return rf"$|{m['absarg']}|$"
    if m["pow"]:
        return rf"${m['base']}^{{{m['exp']}}}$"
    sym = _UNICODE_MATH.get(m["sym"], m["sym"])
    return rf"${sym}_{{{_math_sub(m['idx'])}}}$"


def tex_prose(text: object) -> str:
    """Typeset an engine sentence for LaTeX text mode.

    The formula patterns the engine writes (``W_down[:,S] W_up[S,:] = -M``, ``W_up``,
    ``σ∞``, ``|S|``, ``t^2``, ``a_ℓ``, scientific numbers such as ``8.20e-17``) become math
    (``$8.20\\times10^{-17}$``); everything else goes through :func:`tex_escape`, so any
    text compiles and no TeX command can be injected.
    """
    s = str(text)
    out, pos = [], 0
    for m in _PROSE_PATTERN.finditer(s):
        out.append(tex_escape(s[pos : m.start()]))
        out.append(_prose_math(m))
        pos = m.end()
    out.append(tex_escape(s[pos:]))
    return "".join(out)
