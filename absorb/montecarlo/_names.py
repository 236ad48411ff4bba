"""The weight distributions of the Monte Carlo sweep by name, without numpy: the CLI lists
them in its help (``absorb --help`` must not import numpy); their samplers are in
:mod:`absorb.montecarlo._distributions`."""

from __future__ import annotations

T_DF = 3.0  # Student-t degrees of freedom: finite variance, heavy (cubic) tails
SPARSE_DENSITY = 0.3

DESCRIPTIONS: dict[str, str] = {
    "gaussian": "N(0, 1)",
    "uniform": "U(−√3, √3), unit variance",
    "xavier": "Glorot uniform ±√(6/(fan_in+fan_out))",
    "kaiming": "He normal, std √(2/fan_in)",
    "student_t": f"Student t, {int(T_DF)} degrees of freedom, unit variance",
    "sparse": f"N(0, 1) with density {SPARSE_DENSITY}",
    "fp16": "Kaiming rounded to IEEE float16",
    "bf16": "Kaiming rounded to bfloat16 (ml_dtypes)",
    "int8": "Kaiming, symmetric int8 quantised with a per-matrix scale",
    "ternary": "uniform on {−1, 0, 1}",
}
"""name → description, in the order the help lists them."""

DISCRETE = frozenset({"sparse", "fp16", "bf16", "int8", "ternary"})
"""The distributions that put mass on exact coincidences (degenerate weights)."""
