"""Prove 'relu2_linear' with sympy on symbolic weights and write its LaTeX proof.

Usage: python proofs/relu2_linear.py [--out DIR] [--pdf]   (same as: absorb prove relu2_linear --out DIR)
Exits non-zero when sympy cannot close a step. The logic lives in
absorb/certificate/proofs.py (prove_relu2_linear), shared with 'absorb prove'.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from absorb.certificate.proofs import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("relu2_linear"))
