"""Prove 'skeleton2' with sympy on symbolic weights and write its LaTeX proof.

Usage: python proofs/skeleton2.py [--out DIR] [--pdf]   (same as: absorb prove skeleton2 --out DIR)
Exits non-zero when sympy cannot close a step. The logic lives in
absorb/certificate/proofs.py (prove_skeleton2), shared with 'absorb prove'.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from absorb.certificate.proofs import script_main

if __name__ == "__main__":
    raise SystemExit(script_main("skeleton2"))
