"""The part of :mod:`absorb.symbolic.properties` a run needs for a built-in activation:
:class:`Property`, :class:`Status` and the cache of analyses, without importing sympy.

A built-in's properties come from the shipped table (:mod:`absorb.symbolic.facts`), whose
sympy values stay unparsed until read; sympy (and the analyses of
:mod:`absorb.symbolic.properties` and :mod:`absorb.symbolic.growth`) is imported only when
an analysis must run (a user's ``expr:`` activation, a stale table entry) or a value is read.
"""

from __future__ import annotations

import collections
import enum
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from absorb._errors import InvalidInput

if TYPE_CHECKING:
    from absorb.model.activations import Activation

PREPARE_MEMORY = 2 << 30
"""Memory budget (bytes of address space) of :func:`prepare`'s child process."""


class Status(str, enum.Enum):
    PROVED = "proved"
    REFUTED = "refuted"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Property:
    """The outcome of one analysis: ``proved``, ``refuted`` (with a witness) or ``unknown``."""

    name: str
    status: Status
    statement: str
    value: dict[str, Any] = field(default_factory=dict)
    steps: tuple[str, ...] = ()
    witness: dict[str, Any] | None = None

    @property
    def proved(self) -> bool:
        return self.status is Status.PROVED

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status.value,
            "statement": self.statement,
            "value": {k: _jsonable(v) for k, v in self.value.items()},
            "steps": list(self.steps),
            "witness": None if self.witness is None else {k: _jsonable(v) for k, v in self.witness.items()},
        }


def _jsonable(v: Any) -> Any:
    """``v`` as standard JSON holds it: integers as numbers, rationals and the non-finite (``oo``,
    ``-oo``, ``nan``: RFC 8259 has no such numbers, and strict parsers refuse ``Infinity``) as text."""
    import sympy as sp

    if isinstance(v, sp.Basic):
        if v.is_Integer:
            return int(v)
        if v.is_Rational:
            return str(v)
        if v.is_number and v.is_finite:
            return float(v)
        return str(v)
    return v


def _analyses() -> Any:
    """:mod:`absorb.symbolic.properties`, with the growth analyses registered (imports sympy)."""
    from absorb.symbolic import growth, properties  # noqa: F401 - growth registers its analyses on import

    return properties


def analysis_budget(timeout: float) -> float:
    """The share of a run's ``--timeout`` that the symbolic analysis of a user's activation
    may take (a third, at least a second): the search and the checks get the rest, so that
    a run refused for a hostile expression still ends well within its timeout."""
    return max(1.0, timeout / 3)


_CACHE_SIZE = 256
_cache: collections.OrderedDict[str, dict[str, Property]] = collections.OrderedDict()
_lock = threading.Lock()


def prepare(act: Activation, *, timeout: float = 60.0) -> None:
    """Make every property of ``act`` available to the functions below, within a budget.

    For a user's (``expr:``) activation the results stored by an earlier run are read from
    the persistent analysis cache (:mod:`absorb._analysis_cache`); else every analysis of
    :data:`absorb.symbolic.properties.ANALYSES` runs now, in one child process limited to
    ``timeout`` seconds and :data:`PREPARE_MEMORY` bytes (the child that validated the
    expression, waiting for this, when there is one), and the results are cached here and
    on disk; past either limit, InvalidInput. A built-in's are read from the shipped table (sympy not
    imported); a stale entry's are derived in-process, each analysis the first time it is
    asked for (their cost is known and small), and cached likewise."""
    from absorb.model.activations import is_builtin

    key = act.key
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return
    if is_builtin(act):
        from absorb.symbolic.facts import lookup

        # proved once and shipped (absorb/symbolic/_builtin_facts.py); derived here only if stale
        results: dict[str, Property] = lookup(act.name, key) or {}
    else:
        results = _from_disk(key) or _from_job(act, timeout) or _analyse_budgeted(act, timeout)
    with _lock:
        _cache.setdefault(key, results)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)


# ----- one child process per user expression: validation, then (when asked) the analyses ----
_MAX_WAITING = 4
"""Most validation children kept waiting for their analysis to be asked for; the oldest is ended past it."""
_waiting: collections.OrderedDict[str, Any] = collections.OrderedDict()


def _without_physical_units() -> None:
    """In the analysis child only: two sympy modules imported on first use, just to ask whether
    an expression holds an object of one of their classes, are replaced by stand-ins whose
    classes no expression is an instance of — the answer is no, as it is for the real classes,
    since an expression of the activation grammar holds neither:

    - the first ``sympy.simplify`` imports ``sympy.physics.units`` (0.25–0.3 s of a cold run's
      ~0.7 s: its unit systems) to ask ``expr.has(Quantity)``;
    - the first ``Add`` of non-numbers imports ``sympy.tensor.tensor`` (~0.03 s, with
      ``sympy.combinatorics``) to ask ``isinstance(term, TensExpr)``.

    The analyses of expressions of the docs and catalog compare equal with and without them
    (tests/test_symbolic_child.py). The parent process and every other caller keep sympy's own
    modules."""
    import sys
    import types

    def no_instances(name: str, doc: str) -> type:
        return type(name, (), {"__doc__": doc})

    stand_ins = {"sympy.physics.units": {"Quantity": no_instances("Quantity", "No sympy expression is a Quantity of this stand-in.")},
                 "sympy.tensor.tensor": {"TensExpr": no_instances("TensExpr", "No sympy expression is a TensExpr of this stand-in."),
                                         "TensAdd": no_instances("TensAdd", "Never built: no term is a TensExpr.")}}
    for name, members in stand_ins.items():
        if name in sys.modules:
            continue
        module = types.ModuleType(name, "absorb: a stand-in whose classes nothing is an instance of (see absorb.symbolic._core)")
        for attr, cls in members.items():
            setattr(module, attr, cls)
        sys.modules[name] = module


def _validate_then_analyse(text: str, tree: tuple) -> Any:
    """The stages of a user expression's child process (a generator, run by
    :func:`absorb._sandbox.start_limited`): first the proof that it is real and finite (its
    srepr and its text), then every analysis — as table literals when they read back
    exactly as computed (:func:`_round_trips`; the parent then needs no sympy), else as
    Properties."""
    from absorb.model._expr_text import _check_limits

    _check_limits(text, tree)  # (here, not in the parent: mpmath's import, 0.05 s, then overlaps the parent's work)
    import sympy as sp

    from absorb.model._expr import _validate

    _without_physical_units()
    expr = _validate(text, tree)
    srepr = sp.srepr(expr)
    yield (srepr if sp.sympify(srepr) == expr else expr), str(expr)  # the text, when it reads back as the same expression
    from absorb.symbolic.facts import dump

    results = _analyses().analyse(expr)
    dumped = {k: dump(pr) for k, pr in results.items()}
    yield ("literals", dumped) if all(_round_trips(results[k], d) for k, d in dumped.items()) else ("properties", results)


def start_analysis(text: str, tree: tuple) -> Any:
    """Start the child process of the user expression ``text`` (parsed as ``tree``): read its
    first stage (the validation: σ's srepr, or its sympy form should that not read back, and
    its text) with ``job.next(seconds)``; :func:`keep_analysis` then keeps
    it for :func:`prepare`."""
    from absorb._sandbox import start_limited
    from absorb.model._expr_text import VALIDATE_MEMORY

    # ahead: the analyses run as soon as the expression is validated, while this process reads the
    # rest of the file and imports the engine; prepare then finds them done or nearly so
    return start_limited(_validate_then_analyse, text, tree, memory=max(VALIDATE_MEMORY, PREPARE_MEMORY), ahead=True)


def keep_analysis(key: str, job: Any) -> None:
    """Keep the validated child ``job`` of the activation ``key``; it runs the analyses at once
    and holds them until :func:`prepare` asks. Past :data:`_MAX_WAITING` the oldest is ended
    (prepare then analyses in a new child)."""
    with _lock:
        old = _waiting.pop(key, None)
        _waiting[key] = job
        drop = [_waiting.popitem(last=False)[1] for _ in range(max(0, len(_waiting) - _MAX_WAITING))]
    for j in ([old] if old is not None else []) + drop:
        j.close()


def _from_job(act: Activation, timeout: float) -> dict[str, Property] | None:
    """The analyses of ``act`` by the child that validated it, within ``timeout`` seconds
    (None when there is no such child any more); stored on disk for later runs."""
    from absorb._sandbox import BudgetExceeded

    with _lock:
        job = _waiting.pop(act.key, None)
    if job is None:
        return None
    if not job.alive and not job.ready:  # it died with no answer (killed from outside, say): analysed in a new child instead
        job.close()
        return None
    try:
        kind, out = job.next(timeout)
    except BudgetExceeded as exc:
        raise _over_budget(act, timeout, exc) from None
    finally:
        job.close()
    if kind == "properties":
        return out
    from absorb import _analysis_cache as disk
    from absorb.symbolic.facts import load

    disk.store(act.key, out)
    return {k: load(d) for k, d in out.items()}


def _over_budget(act: Activation, timeout: float, exc: Exception) -> InvalidInput:
    return InvalidInput(f"activation expression {act.name[5:] if act.name.startswith('expr:') else act.name!r}: too large "
                        f"to analyse within {timeout:g} s / {PREPARE_MEMORY / 2**30:g} GiB ({exc}); write a simpler "
                        "expression or raise --timeout")


def _from_disk(key: str) -> dict[str, Property] | None:
    """The properties of a user's activation stored by an earlier run with the same analysis
    code (:mod:`absorb._analysis_cache`), or None."""
    from absorb import _analysis_cache as disk

    stored = disk.facts_for(key)
    if stored is None:
        return None
    with _lock:
        idle = _waiting.pop(key, None)  # stored meanwhile by another run: its waiting child is not needed
    if idle is not None:
        idle.close()
    from absorb.symbolic.facts import load

    return {k: load(d) for k, d in stored.items()}


def _analyse_budgeted(act: Activation, timeout: float) -> dict[str, Property]:
    """Every analysis of ``act``, in a child process within the budget, stored on disk for
    later runs (when the cache is on and writable; a failure to store is silent)."""
    from absorb import _analysis_cache as disk
    from absorb._sandbox import BudgetExceeded, run_limited

    analyse = _analyses().analyse
    try:
        results: dict[str, Property] = run_limited(analyse, act.expr, timeout=timeout, memory=PREPARE_MEMORY)
    except BudgetExceeded as exc:
        raise _over_budget(act, timeout, exc) from None
    if disk.enabled():
        from absorb.symbolic.facts import dump

        try:
            dumped = {k: dump(pr) for k, pr in results.items()}
            if all(_round_trips(results[k], d) for k, d in dumped.items()):
                disk.store(act.key, dumped)
        except Exception:  # noqa: BLE001 - a value the table format cannot hold: not stored, never a failed run
            pass
    return results


def _round_trips(pr: Property, dumped: dict[str, Any]) -> bool:
    """What a later run would read back is what this run has: the same JSON and, value by
    value, equal objects of the same types (else the entry is not stored)."""
    from absorb.symbolic.facts import load

    back = load(dumped)
    if back.to_json() != pr.to_json():
        return False
    for mine, theirs in ((pr.value, back.value), (pr.witness or {}, back.witness or {})):
        if set(mine) != set(theirs):
            return False
        for k, v in mine.items():
            w = theirs[k]
            if type(v) is not type(w) or not (v == w or (v != v and w != w)):
                return False
    return True


def get(act: Activation, analysis: str) -> Property:
    """The analysis named ``analysis`` (a cache name of ``ANALYSES``) of ``act``, from the
    cache (:func:`prepare` first when nobody did)."""
    from absorb.model.activations import is_builtin

    with _lock:
        hit = _cache.get(act.key)
    if hit is None:
        prepare(act)
        with _lock:
            hit = _cache.get(act.key)
        if hit is None:  # evicted meanwhile by other threads
            hit = {}
    if analysis not in hit and is_builtin(act):
        hit[analysis] = _analyses().analyse(act.expr, only=analysis)[analysis]
    return hit[analysis] if analysis in hit else _analyses()._unknown_all("not analysed")[analysis]


def clear_cache() -> None:
    """Forget every cached analysis (tests)."""
    with _lock:
        _cache.clear()
