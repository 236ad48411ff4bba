"""The certificate's argument for σ = α·ReLU² + β·z (theorem ``relu2-linear``, docs/results/skeleton2.md)."""

from __future__ import annotations

from typing import Any

from absorb.engine.verdict import BlockDecision

NONDEGENERACY = ("d_at_least_2", "rows_nonzero", "columns_nonzero", "rows_noncollinear")


def relu2_linear_argument(bd: BlockDecision) -> dict[str, Any]:
    """α, β (re-derived by the checker from σ), the case (``lp``: the witness of μ > 0; ``farkas``:
    the independence of the (Q) columns — the rank route's μ — and the Farkas matrix Y), μ (``scales``) or Y
    as float64 (exact rationals; the checker redoes every inequality in exact arithmetic)."""
    from absorb.engine.relu2_linear import relu2_linear_form

    form = relu2_linear_form(bd.block.activation)
    a, b = (None, None) if isinstance(form, str) else form
    cert = {} if bd.search is None else (bd.search.certificate or {})
    case = "lp" if bd.verdict.value == "absorbable" else "farkas"
    out: dict[str, Any] = {"alpha": None if a is None else str(a), "beta": None if b is None else str(b), "case": case}
    steps = [r"\sigma(z) = \alpha\,\mathrm{ReLU}(z)^2 + \beta z\ \ \forall z\in\mathbb{R}:\ \ "
             r"\mu^2 w\,\sigma(s/\mu) = \alpha w\,\mathrm{ReLU}(s)^2 + \beta\mu\, w\, s\ \ (\mu>0)"]
    if case == "lp":
        out["scales"] = cert.get("mu")
        steps.append(r"g - f = \big(\beta\sum_i(\mu_i-1)A_i - M\big)x + \text{const},\ \ "
                     r"\sum_i \mu_i A_i = T = M/\beta + \sum_i A_i,\ \mu > 0")
    else:
        out["bound"] = cert.get("bound")  # |β|⟨Y, T⟩ / (‖Y‖_F ‖M‖_F), re-derived by the checker from Y
        out["route"] = cert.get("route")  # how the (Q) columns were proved independent: "rank" (exact) or "gram" (with μ)
        if cert.get("route") == "gram":
            out["mu"] = cert.get("mu")
        out["Y"] = cert.get("Y")
        out["nondegeneracy_hypotheses"] = list(NONDEGENERACY)
        steps += [r"\text{Hessian jumps: } u'_i=\lambda_iu_i,\ c'_i=\lambda_ic_i;\ \ w_i\otimes u_iu_i^{\mathsf T}"
                  r"\ \text{independent} \Rightarrow \lambda_i>0",
                  r"\langle Y,A_i\rangle \le 0\ \forall i,\ \langle Y,T\rangle > 0:\ \ "
                  r"\Big\|\sum_i\mu_iA_i - T\Big\|_F \ge \frac{\langle Y,T\rangle}{\|Y\|_F}\ \ \forall\mu\ge0"]
    out["steps"] = steps
    return out
