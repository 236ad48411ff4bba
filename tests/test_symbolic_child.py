"""The analysis child's stand-ins for sympy.physics.units and sympy.tensor.tensor
(absorb.symbolic._core._without_physical_units) change no analysis: the same expressions analysed
with sympy's own modules and with the stand-ins, each in a fresh process, give the same records —
and the stand-ins spare the unit systems' and the tensor module's imports."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = r"""
import json, sys
stub = sys.argv[1] == "1"
from absorb.symbolic import _core
from absorb.model._expr_text import parse
if stub:
    _core._without_physical_units()
else:
    import sympy.physics.units  # noqa: F401  (sympy's own, as any other process has it)
    import sympy.tensor.tensor  # noqa: F401
out = {}
for text in ["x**2", "x*tanh(log(1+exp(x)))", "Max(0, x) + Min(0, exp(x) - 1)", "x*Abs(x)/2 + x**2/2", "sin(x)",
             "x*(1+erf(x/sqrt(2)))/2", "Max(0,x)*erfc(x/10**35-10)/10**8 + Min(0,x)*(1-(1-erf(-x/10**35-10))/10**8)"]:
    gen = _core._validate_then_analyse(text, parse(text, check_constants=False))
    next(gen)
    out[text] = repr(next(gen))
out["units systems imported"] = "sympy.physics.units.systems" in sys.modules
out["combinatorics imported"] = "sympy.combinatorics" in sys.modules
print(json.dumps(out))
"""


def _run(stub: bool) -> dict:
    r = subprocess.run([sys.executable, "-c", SCRIPT, "1" if stub else "0"], capture_output=True, text=True, timeout=300, check=True)
    return json.loads(r.stdout)


def test_the_stand_ins_change_no_analysis_and_skip_their_imports() -> None:
    real, light = _run(False), _run(True)
    assert real.pop("units systems imported") is True and light.pop("units systems imported") is False
    assert real.pop("combinatorics imported") is True and light.pop("combinatorics imported") is False
    assert real == light
