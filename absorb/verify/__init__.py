"""Independent re-checks of the claims the search backends make (docs/mathematics.md §5).

Modules here import nothing from ``absorb.search`` or ``absorb.engine``: a verdict is only
as trustworthy as a check that does not share code with the route that produced it.
"""

DEFAULT_SEED = 20260430
"""Seed of the fresh random inputs ``absorb verify`` evaluates witnesses on (a constant, so a
verification is reproducible; ``--seed`` changes it)."""
