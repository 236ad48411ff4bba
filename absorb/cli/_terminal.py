"""The terminal's encoding: output it cannot show (✓, σ, ≥ on a cp1252 console) falls back
to ASCII spellings (v, sigma, >=) instead of failing. Importing this module registers the
``absorb-ascii`` codec error handler.
"""

from __future__ import annotations

import codecs
import sys
import unicodedata

#: ASCII spellings of the symbols the reports use, for terminals that cannot show them
ASCII_FALLBACK: dict[str, str] = {
    "✓": "v", "✗": "x", "·": "*", "σ": "sigma", "δ": "delta", "γ": "gamma", "ε": "eps", "λ": "lambda", "μ": "mu",
    "π": "pi", "θ": "theta", "α": "alpha", "β": "beta", "Σ": "Sum", "≥": ">=", "≤": "<=", "≠": "!=", "≈": "~", "±": "+-",
    "‖": "||", "→": "->", "←": "<-", "⇒": "=>", "…": "...", "—": "-", "–": "-", "−": "-", "×": "x", "⊙": "(.)",
    "⊗": "(x)", "∘": "o", "∅": "{}", "√": "sqrt", "∞": "inf", "∈": "in", "∉": "not in", "ᵀ": "^T", "²": "^2", "³": "^3",
    "′": "'", "‘": "'", "’": "'", "“": '"', "”": '"', "⁻": "^-", "¹": "^1", "₁": "_1", "₂": "_2", "ₖ": "_k", "ℝ": "R",
    "\u2009": " ", "\xa0": " ",
}
_SAMPLE = "✓✗σ≥‖→…"


def _ascii_fallback(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for ch in exc.object[exc.start:exc.end]:
        rep = ASCII_FALLBACK.get(ch)
        if rep is None:
            rep = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode("ascii") or "?"
        out.append(rep)
    return "".join(out), exc.end


codecs.register_error("absorb-ascii", _ascii_fallback)


def can_encode(stream: object, text: str = _SAMPLE) -> bool:
    """Whether ``stream``'s encoding can show ``text`` as it is."""
    enc = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(enc)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _ascii_streams() -> None:
    """Let stdout and stderr fall back to ASCII spellings where their encoding cannot encode."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and not can_encode(stream) and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="absorb-ascii")
            except (ValueError, OSError):  # pragma: no cover - a closed or exotic stream
                pass
