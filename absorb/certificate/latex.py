"""Render a certificate as a short, self-contained LaTeX document (jinja2 templates).

The templates live in ``absorb/certificate/templates/`` and use LaTeX-safe delimiters —
``\\VAR{expr}`` for values, ``\\BLOCK{stmt}`` and ``%%`` line statements for control flow —
so TeX braces never clash with Jinja's. Every string that comes from a user or a file
(paths, block names, activation names, engine sentences) goes through
:func:`~absorb.certificate._util.tex_escape`; only LaTeX produced by this package or by
sympy (theorem statements, proof steps, matrices) is inserted raw.

Matrices larger than 8×8 are not printed: they are summarised by shape, Frobenius norm and
SHA-256, while the exact small quantities (S, residuals, bounds, nonzero entries of M) are
always shown.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import jinja2

from absorb.certificate._util import tex_escape, tex_matrix, tex_num, tex_prose, tex_tt
from absorb.certificate.build import Certificate
from absorb.report.text import readable

_MARK = {True: r"$\checkmark$", False: r"$\times$", None: r"$\cdot$"}
_PMARK = {"proved": "proved", "refuted": "refuted", "unknown": "undecided"}
_SYMBOL = {
    "W_up": r"\Wup",
    "W_down": r"\Wdown",
    "W_gate": r"\Wgate",
    "b_up": r"b_{\mathrm{up}}^{\top}",
    "b_gate": r"b_{\mathrm{gate}}^{\top}",
    "b_down": r"b_{\mathrm{down}}^{\top}",
    "skip": "M",
    "H_res": r"H_{\mathrm{res}}",
    "H_pre": r"H_{\mathrm{pre}}^{\top}",
    "H_post": r"H_{\mathrm{post}}^{\top}",
}
_VERDICT_WORDS = {"absorbable": "absorbable", "not_absorbable": "not absorbable", "unknown": "undecided"}
_CLAIM_WORDS = {
    "absorbable": "equals a residual-free MLP of the same kind, activation and width (the explicit block is given "
    "below).",
    "not_absorbable": "is not equal to any residual-free MLP of the same kind, activation and width.",
    "unknown": "is left undecided: no result whose hypotheses hold on these weights settles it (the reason is given "
    "below).",
}


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The jinja2 environment with LaTeX-safe delimiters and the escaping filters."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("absorb.certificate", "templates"),
        block_start_string=r"\BLOCK{",
        block_end_string="}",
        variable_start_string=r"\VAR{",
        variable_end_string="}",
        comment_start_string=r"\#{",
        comment_end_string="}",
        line_statement_prefix="%%",
        line_comment_prefix="%#",
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(e=lambda t: tex_escape(readable(t)), tt=tex_tt, num=tex_num,
                       prose=lambda t: tex_prose(readable(t)), math=tidy_math)
    return env


_TIDY = (
    (re.compile(r"-\s*-\s*1\s*\\,\s*(?=\\sigma)"), "+ "),  # σ(-1) - -1\,σ(1) → σ(-1) + σ(1)
    (re.compile(r"-\s*-\s*(?=[\d.])"), "+ "),  # a - -2 → a + 2
    (re.compile(r"\+\s*-\s*(?=[\d.\\a-zA-Z])"), "- "),  # a + -2 → a - 2
    (re.compile(r"(?<=\()\s*0\s*\+\s*(?=[a-zA-Z])"), ""),  # σ(0+k+1) → σ(k+1)
)


def tidy_math(step: object) -> str:
    r"""A LaTeX formula (a proof step) with the artefacts of substituting numbers into a
    pattern removed: ``- -1\,\sigma(1)`` reads ``+ \sigma(1)``, ``\sigma(0+k+1)`` reads
    ``\sigma(k+1)``; ``oo`` is ``\infty``."""
    s = str(step)
    for pattern, repl in _TIDY:
        s = pattern.sub(repl, s)
    return re.sub(r"(?<![\w\\])oo(?![\w])", r"\\infty", s)


_LABELS = {
    "nonzero_entries": "nonzero entries of $M$",
    "fro_norm": r"$\|M\|_F$",
    "nonzero_biases": "nonzero biases",
    "d": "dimension $d$",
    "cond": r"condition number of $M$",
    "sigma_min": r"smallest singular value of $M$",
    "sigma_max": r"largest singular value of $M$",
    "zero_rows": r"zero rows of $W_{\mathrm{up}}$",
    "min_row_norm": r"smallest row norm of $W_{\mathrm{up}}$",
    "zero_columns": r"zero columns of $W_{\mathrm{down}}$",
    "min_column_norm": r"smallest column norm of $W_{\mathrm{down}}$",
    "tau": "collinearity tolerance",
    "collinear_pairs": r"collinear row pairs of $W_{\mathrm{up}}$",
    "max_abs_cos": r"largest $|\cos|$ between rows of $W_{\mathrm{up}}$",
    "c": "flip constant $c$",
    "singular_values": "singular values",
    "lower_bound": "rigorous lower bound",
}
"""Human labels of the numbers recorded with a hypothesis (``Hypothesis.value`` keys)."""


def hypothesis_label(key: str) -> str:
    """The label of a hypothesis value key; an unknown key reads as its words (``a_b`` → ``a b``)."""
    return _LABELS.get(key) or tex_escape(str(key).replace("_", " "))


def _numbers(value: dict[str, Any]) -> str:
    """A hypothesis's numbers as a compact text line, each under its human label."""
    parts = []
    for key, v in value.items():
        k = hypothesis_label(key)
        if isinstance(v, list):
            if not v:
                continue
            shown = ", ".join(tex_num(x) if isinstance(x, (int, float)) else tex_escape(x) for x in v[:8])
            if len(v) > 8:
                shown += r", \ldots"
            parts.append(rf"{k} $= [{shown}]$")
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            parts.append(rf"{k} $= {tex_num(v, 6)}$")
        elif v is not None:
            parts.append(rf"{k} = {tex_escape(v)}")
    return "; ".join(parts)


def _weights_view(weights: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for name, rec in weights.items():
        vals = rec.get("values")
        matrix = None
        if vals is not None:
            rows = vals if rec["shape"] and len(rec["shape"]) == 2 else [vals] if len(rec["shape"]) == 1 else [[vals]]
            matrix = tex_matrix(rows)
        out.append(
            {
                "name": name,
                "symbol": _SYMBOL.get(name, r"\mathrm{" + tex_escape(name) + "}"),
                "shape": r"\times".join(str(s) for s in rec["shape"]) or "1",
                "norm": tex_num(rec.get("fro_norm")),
                "sha256": rec["sha256"],
                "matrix": matrix,
            }
        )
    return out


def _search_cert_lines(cert: dict[str, Any] | None) -> str:
    if not cert:
        return ""
    parts = []
    for k, v in cert.items():
        if k in ("A", "B", "Y", "portfolio"):
            continue
        if isinstance(v, (dict, list)):
            continue
        parts.append(
            rf"{tex_escape(k)} = "
            rf"{tex_escape(v) if not isinstance(v, (int, float)) or isinstance(v, bool) else '$' + tex_num(v, 6) + '$'}"
        )
    return "; ".join(parts)


def _skip_words(b: dict[str, Any]) -> str:
    skip = b["skip"]
    if skip["kind"] == "hyper_connection":
        return (
            rf"Hyper-Connection with {skip.get('streams')} streams, lifted to $\R^{{{b['d']}}}$ "
            r"($M = H_{\mathrm{res}}\otimes I$)"
        )
    return {"identity": "the identity ($M = I_d$)", "matrix": "the stored matrix $M$"}[skip["kind"]]


def _jacobian_tex(jac: list[list[Any]] | None) -> str | None:
    if not jac:
        return None
    import sympy as sp

    return sp.latex(sp.Matrix([[sp.sympify(v) for v in row] for row in jac]))


def _argument_view(b: dict[str, Any]) -> dict[str, Any]:
    arg = dict(b.get("argument", {}))
    if arg.get("singular_values"):
        arg["singular_values"] = [tex_num(v) for v in arg["singular_values"]]
    arg.setdefault("M_nonzero_entry", None)
    arg.setdefault("c", 1)
    arg.setdefault("singular_values", None)  # a wide linear block (n ≥ d) records none
    arg.setdefault("k", None)  # σ(z) = c·z + k: only an affine σ records k (and its case)
    arg.setdefault("augmented_lower_bound", None)
    arg.setdefault("robust_bar", None)  # (the robust skeleton bound, where it concludes)
    return arg


_EXACT_WORDS = {
    True: "exact in rational arithmetic",
    False: "not exact; within the tolerance",
    None: "float64 recomputation",
}


def _witness_view(w: dict[str, Any] | None) -> dict[str, Any] | None:
    if w is None:
        return None
    view = dict(w)
    view.setdefault("S", None)
    S = w.get("S")
    if S is not None:
        view["S_text"] = ", ".join(str(i) for i in S[:40]) + (r", \ldots" if len(S) > 40 else "")
    view["exact_words"] = _EXACT_WORDS[w.get("exact")]
    view.setdefault("formula", tex_escape(w.get("construction", "")))
    view["weights"] = [x for x in _weights_view(w.get("block", {}).get("weights", {})) if x["name"] != "skip"]
    return view


def _dual_view(search: dict[str, Any] | None, d: int) -> dict[str, Any] | None:
    c = (search or {}).get("certificate")
    if not c or c.get("kind") not in ("dual-low-rank", "dual"):
        return None
    A = c.get("A")
    return {"rank": c.get("rank") or (len(A[0]) if isinstance(A, list) and A and isinstance(A[0], list) else d)}


def _block_view(b: dict[str, Any]) -> dict[str, Any]:
    """The template's view of one block entry of the certificate."""
    hyps = [
        {"mark": _MARK[h["holds"]], "statement": tex_prose(h["statement"]), "numbers": _numbers(h.get("value", {}))}
        for h in b["hypotheses"]
    ]
    props = [
        {
            "name": p["name"].replace("_", " "),
            "status": _PMARK.get(p["status"], p["status"]),
            "statement": p["statement"],
            "steps": p.get("steps", []),
        }
        for p in b["properties"]
    ]
    norm = b.get("value_normalisation")
    if norm:  # an affine value activation: the block is decided as its normalisation with h(z) = z
        props.insert(0, {"name": "value affine", "status": _PMARK.get("proved", "proved"),
                         "statement": f"{norm['statement']}; the block is decided as the same function with h(z) = z, "
                                      f"W_up → c·W_up, b_up → c·b_up + k (c = {norm['c']}, k = {norm['k']})",
                         "steps": norm.get("steps", [])})
    arg = _argument_view(b)
    search = b.get("search")
    weights = _weights_view(b["weights"])
    return {
        "name": b["name"],
        "kind": b["kind"],
        "activation": b["activation"],
        "d": b["d"],
        "n": b["n"],
        "gated": b["kind"] == "gated",
        "act_latex": b["activation_function"]["latex"],
        "verdict": b["verdict"],
        "theorem": b["theorem"],
        "reason": b["reason"],
        "skip_words": _skip_words(b),
        "weights": weights,
        "hidden_matrices": any(x["matrix"] is None for x in weights),
        "hypotheses": hyps,
        "properties": props,
        "arg": arg,
        "jacobian": _jacobian_tex(arg.get("jacobian_f_at_0")),
        "witness": _witness_view(b.get("witness")),
        "search": search,
        "search_cert_lines": _search_cert_lines(search.get("certificate") if search else None),
        "dual": _dual_view(search, b["d"]),
        "rf_class": b.get("class"),
        "canonical_lines": len((b.get("canonical_form") or {}).get("lines", [])),
    }


def _by_words(doc: dict[str, Any]) -> str:
    """How the claim names its result: the header theorem, or, for a collection of blocks
    decided one by one, each block's own result."""
    theorem = doc["theorem"]
    if doc["input"].get("structure") == "collection" and theorem["id"] == "none":
        ids = list(dict.fromkeys(str(b["theorem"]["id"]) for b in doc["blocks"]))
        return (
            r"each block by its own result (listed below: "
            + ", ".join(rf"\textbf{{{tex_escape(i)}}}" for i in ids)
            + ")"
        )
    if theorem["id"] == "none":
        return "no applicable result"
    return rf"by the result \textbf{{{tex_escape(theorem['id'])}}} ({tex_escape(theorem['title'])})"


def render_latex(cert: Certificate) -> str:
    """The certificate as a LaTeX document (pdflatex-ready, packages from texlive-latex-base)."""
    doc = cert.document
    tool = doc.get("tool", {})
    versions = ", ".join(f"{k} {v}" for k, v in tool.items() if k != "platform")
    structure = doc["input"].get("structure", "block")
    ctx = {
        "verdict": doc["verdict"],
        "verdict_words": _VERDICT_WORDS.get(doc["verdict"], doc["verdict"]),
        "claim_words": _CLAIM_WORDS.get(doc["verdict"], ""),
        "theorem": doc["theorem"],
        "by_words": _by_words(doc),
        "reason": doc["reason"],
        "tol": doc["parameters"]["tolerance"],
        "params": doc["parameters"],
        "tool": {"absorb": tex_escape(tool.get("absorb", "?"))},
        "schema_version": doc["schema_version"],
        "created": doc.get("created", ""),
        "structure": structure,
        "structure_words": {"stack": "stack of MLP blocks", "collection": "MLP blocks"}.get(structure, "MLP block"),
        "path": doc["input"].get("path") or "(in memory)",
        "file_sha256": doc["input"].get("file_sha256"),
        "blocks": [_block_view(b) for b in doc["blocks"]],
        "stack": doc.get("stack"),
        "versions": versions,
        "paper": doc["paper"],
        "rf_class": doc.get("class"),
        "pdf_subject": tex_escape(f"absorb check {doc['input'].get('path') or '(in memory)'}"),
    }
    return environment().get_template("certificate.tex.j2").render(**ctx)
