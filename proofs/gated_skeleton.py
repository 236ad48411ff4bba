"""Prove 'gated_skeleton' with sympy on symbolic weights and write its LaTeX proof.

Usage: python proofs/gated_skeleton.py [--out DIR] [--pdf]   (same as: absorb prove gated_skeleton --out DIR)
Exits non-zero when sympy cannot close a step. The logic lives in
absorb/certificate/proofs.py (prove_gated_skeleton), shared with 'absorb prove'.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from absorb.certificate.proofs import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("gated_skeleton"))
