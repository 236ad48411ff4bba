"""Independent re-checks of the claims the search backends make (theory.md §5).

Modules here import nothing from ``absorb.search`` or ``absorb.engine``: a verdict is only
as trustworthy as a check that does not share code with the route that produced it.
"""
