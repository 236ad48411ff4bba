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
from typing import Any

import jinja2

from absorb.certificate._util import tex_escape, tex_matrix, tex_num, tex_tt
from absorb.certificate.build import Certificate

_MARK = {True: r"$\checkmark$", False: r"$\times$", None: r"$\cdot$"}
_PMARK = {"proved": "proved", "refuted": "refuted", "unknown": "undecided"}
_SYMBOL = {"W_up": r"\Wup", "W_down": r"\Wdown", "W_gate": r"\Wgate", "b_up": r"b_{\mathrm{up}}^{\top}",
           "b_gate": r"b_{\mathrm{gate}}^{\top}", "b_down": r"b_{\mathrm{down}}^{\top}", "skip": "M", "H_res": r"H_{\mathrm{res}}",
           "H_pre": r"H_{\mathrm{pre}}^{\top}", "H_post": r"H_{\mathrm{post}}^{\top}"}
_VERDICT_WORDS = {"absorbable": "absorbable", "not_absorbable": "not absorbable", "unknown": "undecided"}
_CLAIM_WORDS = {
    "absorbable": "equals a residual-free MLP of the same kind, activation and width (the explicit block is given below).",
    "not_absorbable": "is not equal to any residual-free MLP of the same kind, activation and width.",
    "unknown": "is left undecided: no result whose hypotheses hold on these weights settles it (the reason is given below).",
}


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The jinja2 environment with LaTeX-safe delimiters and the escaping filters."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("absorb.certificate", "templates"),
        block_start_string=r"\BLOCK{", block_end_string="}",
        variable_start_string=r"\VAR{", variable_end_string="}",
        comment_start_string=r"\#{", comment_end_string="}",
        line_statement_prefix="%%", line_comment_prefix="%#",
        trim_blocks=True, lstrip_blocks=True, autoescape=False, keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(e=tex_escape, tt=tex_tt, num=tex_num)
    return env


def _numbers(value: dict[str, Any]) -> str:
    """A hypothesis's numbers as a compact text line (escaped)."""
    parts = []
    for k, v in value.items():
        if isinstance(v, list):
            if not v:
                continue
            shown = ", ".join(tex_num(x) if isinstance(x, (int, float)) else tex_escape(x) for x in v[:8])
            if len(v) > 8:
                shown += r", \ldots"
            parts.append(rf"{tex_escape(k)} $= [{shown}]$")
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            parts.append(rf"{tex_escape(k)} $= {tex_num(v, 6)}$")
        elif v is not None:
            parts.append(rf"{tex_escape(k)} = {tex_escape(v)}")
    return "; ".join(parts)


def _weights_view(weights: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for name, rec in weights.items():
        vals = rec.get("values")
        matrix = None
        if vals is not None:
            rows = vals if rec["shape"] and len(rec["shape"]) == 2 else [vals] if len(rec["shape"]) == 1 else [[vals]]
            matrix = tex_matrix(rows)
        out.append({"name": name, "symbol": _SYMBOL.get(name, r"\mathrm{" + tex_escape(name) + "}"),
                    "shape": r"\times".join(str(s) for s in rec["shape"]) or "1",
                    "norm": tex_num(rec.get("fro_norm")), "sha256": rec["sha256"], "matrix": matrix})
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
        parts.append(rf"{tex_escape(k)} = {tex_escape(v) if not isinstance(v, (int, float)) or isinstance(v, bool) else '$' + tex_num(v, 6) + '$'}")
    return "; ".join(parts)


def _block_view(b: dict[str, Any]) -> dict[str, Any]:
    skip = b["skip"]
    skip_words = {"identity": "the identity ($M = I_d$)", "matrix": "the stored matrix $M$",
                  "hyper_connection": rf"Hyper-Connection with {skip.get('streams')} streams, lifted to $\R^{{{b['d']}}}$ "
                                      r"($M = H_{\mathrm{res}}\otimes I$)"}[skip["kind"]]
    hyps = [{"mark": _MARK[h["holds"]], "statement": h["statement"], "numbers": _numbers(h.get("value", {}))}
            for h in b["hypotheses"]]
    props = [{"name": p["name"].replace("_", " "), "status": _PMARK.get(p["status"], p["status"]),
              "statement": p["statement"], "steps": p.get("steps", [])} for p in b["properties"]]
    arg = dict(b.get("argument", {}))
    if arg.get("singular_values"):
        arg["singular_values"] = [tex_num(v) for v in arg["singular_values"]]
    arg.setdefault("M_nonzero_entry", None)
    jac = arg.get("jacobian_f_at_0")
    jac_tex = None
    if jac:
        import sympy as sp

        jac_tex = sp.latex(sp.Matrix([[sp.sympify(v) for v in row] for row in jac]))
    w = b.get("witness")
    wview = None
    if w is not None:
        wview = dict(w)
        wview.setdefault("S", None)
        if w.get("S") is not None:
            S = w["S"]
            wview["S_text"] = ", ".join(str(i) for i in S[:40]) + (r", \ldots" if len(S) > 40 else "")
        wview["exact_words"] = {True: "exact in rational arithmetic", False: "not exact; within the tolerance",
                                None: "float64 recomputation"}[w.get("exact")]
        wview.setdefault("formula", tex_escape(w.get("construction", "")))
        wview["weights"] = [x for x in _weights_view(w.get("block", {}).get("weights", {})) if x["name"] != "skip"]
    search = b.get("search")
    dual = None
    if search and search.get("certificate"):
        c = search["certificate"]
        if c.get("kind") in ("dual-low-rank", "dual"):
            A = c.get("A")
            rank = c.get("rank") or (len(A[0]) if isinstance(A, list) and A and isinstance(A[0], list) else b["d"])
            dual = {"rank": rank}
    weights = _weights_view(b["weights"])
    lim = arg.get("limits") or {}
    bounded_words = (rf"$\sigma(x)\in[{tex_escape(lim['lower'])}, {tex_escape(lim['upper'])}]$ for every real $x$ (interval bound)"
                     if "lower" in lim and "upper" in lim else
                     rf"continuous with limits ${tex_escape(lim['limit_minus'])}$ at $-\infty$ and ${tex_escape(lim['limit_plus'])}$ "
                     r"at $+\infty$" if "limit_plus" in lim and "limit_minus" in lim else None)
    arg.setdefault("c", 1)
    arg.setdefault("singular_values", None)  # a wide linear block (n ≥ d) records none
    return {
        "name": b["name"], "kind": b["kind"], "activation": b["activation"], "d": b["d"], "n": b["n"],
        "gated": b["kind"] == "gated", "act_latex": b["activation_function"]["latex"],
        "verdict": b["verdict"], "theorem": b["theorem"], "reason": b["reason"], "skip_words": skip_words,
        "weights": weights, "hidden_matrices": any(x["matrix"] is None for x in weights),
        "hypotheses": hyps, "properties": props, "arg": arg, "jacobian": jac_tex, "witness": wview,
        "search": search, "search_cert_lines": _search_cert_lines(search.get("certificate") if search else None),
        "dual": dual, "rf_class": b.get("class"), "bounded_words": bounded_words,
        "canonical_lines": len((b.get("canonical_form") or {}).get("lines", [])),
    }


def render_latex(cert: Certificate) -> str:
    """The certificate as a LaTeX document (pdflatex-ready, packages from texlive-latex-base)."""
    doc = cert.document
    tool = doc.get("tool", {})
    versions = ", ".join(f"{k} {v}" for k, v in tool.items() if k != "platform")
    structure = doc["input"].get("structure", "block")
    ctx = {
        "verdict": doc["verdict"], "verdict_words": _VERDICT_WORDS.get(doc["verdict"], doc["verdict"]),
        "claim_words": _CLAIM_WORDS.get(doc["verdict"], ""),
        "theorem": doc["theorem"], "reason": doc["reason"], "tol": doc["parameters"]["tolerance"],
        "params": doc["parameters"], "tool": {"absorb": tex_escape(tool.get("absorb", "?"))},
        "schema_version": doc["schema_version"], "created": doc.get("created", ""),
        "structure": structure,
        "structure_words": {"stack": "stack of MLP blocks", "collection": "MLP blocks"}.get(structure, "MLP block"),
        "path": doc["input"].get("path") or "(in memory)", "file_sha256": doc["input"].get("file_sha256"),
        "blocks": [_block_view(b) for b in doc["blocks"]], "stack": doc.get("stack"),
        "versions": versions, "paper": doc["paper"], "rf_class": doc.get("class"),
    }
    return environment().get_template("certificate.tex.j2").render(**ctx)
