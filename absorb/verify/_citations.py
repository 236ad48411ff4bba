"""The results a certificate may cite, and the lists of hypotheses and properties its arguments may
name, as this checker knows them. The results: for each theorem id, the
SHA-256 of its record (title, source, statement, needs, classes; JSON with sorted keys). A
certificate's theorem record is what a reader sees as the result proved: one whose text is not
the cited id's own (another theorem's statement under this id, "at any width" where the result
holds at width n) is rejected. Kept here, apart from the producer's table, and compared with it
by tests/test_verify_citations.py (which prints this table afresh when a statement changes)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

DIGESTS: dict[str, str] = {
    "trivial": "edfa34d91fed9a31bba692f583e1d1544bf19b08fa1332fc03167b1e47d239ff",
    "degree": "f42e31a24fb502e0c9896883bb23d5f78187ddf5042ef66a6241a08d64ec4e4d",
    "linearization": "1390fbcdf2908999cc436c570239a4cd08b47d62c7f70cdc413a80048f8663da",
    "bounded": "c155e8dde9498bb219ff9af35534b2de8e22e8812008b3bd918b7861f664d9bf",
    "linear": "f3c902738b87998ec5b2db83981302698f62cfaa70c8076ab2dc4e3444426ecf",
    "index-set": "9dca01ad4bff7f7190b886b4fe7df9184ec68dac3474150c17bde184fde66ba9",
    "parity": "a473faa3f0c5dce66a7550b616e16887bfb1a2754665209e81b66bad9b5972f4",
    "exponential": "3dd44a5569988a4a01bc36adaaa0ca2978e5f2b17d33518ec7c53bb17d54056f",
    "skeleton": "4d44ea1419abdcb22e2f666756ff10c457f11c78cb6acdd8f68e7a1d7a578474",
    "skeleton2": "ea62c2bd54d6d4da8ef2fd6ec9ea6680e9d2916e857244e48f2a0a2e4a8cb382",
    "relu2-linear": "05fe2a0d6914a052a4d973036c728fbdcdcf958201c6bf471217fba155129eba",
    "gated-skeleton": "818f160acb391d4d9f9a77db9d02fe132d9f7694819447294ea669967f590350",
    "depth": "0e7f0e9299fe9c989f8516831529be3d33585005fe47820e603a25e3100225f3",
    "rank": "231cc65cc921871109a7565ccbe1fb14bfe6f8b81ee1e55a5cdf5af5cbd5add8",
    "kink-count": "f724eb025a137ccd2dca09892a865b5f4aad01d2df3897fca149028ddf202821",
    "range": "18d7761ff2409b7470c78be978000e6cfc4a9ccea3ba7cae7d1eff6a7ce4133d",
    "composition": "feeb58002b5eeac3a11f4e01553d101669386a95244e03cf17a6a008a793ebce",
    "canonical-form": "b55d056b8a867084584d28295ea838ebc1725315787562cabfdc388eec5cd4fc",
    "none": "8651eff568e23476e7bc3622db9ac17aed276b7f6fb1bddd3fc0b15c82099ce2",
}

#: the records of results whose statement names a gated block's value activation h, cited for such a block
VALUE_DIGESTS: dict[str, str] = {
    "degree": "3055f1b61385c112097e5f89512654ae4f6297437b447373395bfee629ea0dee",
    "linearization": "0614e5f5129cf79150c34804c33b3fa46f4e3f8906fb1f469967cf0d82074c2b",
}


def digest(record: dict[str, Any]) -> str:
    """SHA-256 of a theorem record without its id (JSON, sorted keys, UTF-8)."""
    body = {k: v for k, v in record.items() if k != "id"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def citation_ok(record: Any, value: bool = False) -> tuple[bool, str]:
    """Whether ``record`` is exactly the cited theorem's (and why not); ``value``: cited for a
    gated block with a value activation h (the result's statement for such blocks, where it has one)."""
    if not isinstance(record, dict) or not isinstance(record.get("id"), str):
        return False, f"recorded {record!r:.80}"
    want = (VALUE_DIGESTS if value and record["id"] in VALUE_DIGESTS else DIGESTS).get(record["id"])
    if want is None:
        return False, f"unknown theorem id {record['id']!r}"
    try:
        got = digest(record)
    except (TypeError, ValueError) as exc:
        return False, f"{type(exc).__name__}: {exc}"
    return got == want, "" if got == want else f"the record of {record['id']!r} differs from that result's title/statement/needs/classes"


#: the hypothesis lists a theorem's argument may name (the checks re-derive each hypothesis)
HYPOTHESIS_LISTS = frozenset({
    (), ("d_at_least_2", "rows_nonzero", "columns_nonzero", "rows_noncollinear"),
    ("d_at_least_2", "gate_rows_nonzero", "columns_nonzero", "gate_rows_noncollinear", "value_not_parallel_to_gate"),
    ("bias_free", "d_at_least_2", "skip_invertible", "rows_nonzero", "columns_nonzero", "rows_noncollinear"),
})

#: the two properties of g and h each case of the linearization argument with a value activation uses
LINEARIZATION_CASES = {"product": {"vanishing_slopes", "value_vanishing_slopes"},
                       "value-flat": {"bounded", "bounded_near_zero", "value_vanishing_slopes"},
                       "gate-flat": {"vanishing_slopes", "value_bounded", "value_bounded_near_zero"}}

_ANY = {"M_nonzero_entry"}
#: the fields each theorem's argument records (a field outside them is a claim its check does not read)
ARGUMENT_FIELDS: dict[str, set[str]] = {
    "trivial": _ANY, "none": _ANY, "canonical-form": _ANY, "bounded": _ANY | {"steps"},
    "degree": _ANY | {"k", "k_activation", "k_value", "steps", "value_activation"},
    "linearization": _ANY | {"case", "dg0", "g0", "g_bounded", "g_bounded_near_0", "g_slopes", "h0", "h_bounded", "h_bounded_near_0",
                             "h_slopes", "jacobian_f_at_0",
                             "steps", "value_activation"},
    "exponential": _ANY | {"A", "C", "beta", "direction", "ratio", "steps"},
    "parity": _ANY | {"even", "point", "ratio", "steps"},
    "linear": _ANY | {"augmented_lower_bound", "c", "case", "k", "rank_limit", "sigma_lower_bound", "singular_values"},
    "index-set": _ANY | {"c", "necessity_hypotheses", "robust_bar", "s", "target"},
    "skeleton": _ANY | {"L_minus", "L_plus", "a", "b", "c_inf", "case", "nondegeneracy_hypotheses", "robust_bar", "steps", "target"},
    "skeleton2": _ANY | {"alpha", "beta", "case", "mu", "nondegeneracy_hypotheses", "steps"},
    "relu2-linear": _ANY | {"alpha", "beta", "bound", "case", "mu", "nondegeneracy_hypotheses", "route", "scales",
                                     "steps", "Y"},
    "gated-skeleton": _ANY | {"L_minus", "L_plus", "c", "case", "mu", "nondegeneracy_hypotheses", "route", "steps", "target"},
}


def argument_fields(theorem: str, arg: dict[str, Any], value: bool) -> set[str]:
    """The fields result ``theorem``'s argument may record, for this case (``value``: the block has
    a value activation h, whose variant records h's fields); every other field is one no check reads."""
    allowed = set(ARGUMENT_FIELDS.get(theorem, set(arg)))
    if theorem in ("linearization", "degree") and not value:
        allowed -= {"case", "g_bounded", "g_bounded_near_0", "g_slopes", "h0", "h_bounded", "h_bounded_near_0", "h_slopes",
                    "value_activation", "k_value"}
    if "gram" not in (arg.get("case"), arg.get("route")):
        allowed -= {"mu"}
    if theorem == "gated-skeleton" and arg.get("case") == "step":
        allowed -= {"route"}
    return allowed


_PROPERTIES_USED = {
    "degree": {"homogeneous"}, "linearization": {"vanishing_gate"}, "bounded": {"bounded"}, "linear": {"linear", "affine"},
    "index-set": {"flip_identity"}, "parity": {"even"}, "exponential": {"exponential"}, "skeleton": {"asymptotic_slopes"},
    "skeleton2": {"quadratic_skeleton"}, "gated-skeleton": {"gate_limits", "relu_like_gate", "flip_identity"},
    "canonical-form": {"flip_identity"},
}
"""The properties of σ each theorem's check re-derives from σ itself. A certificate may record
these (as proved, for a decided verdict) and no others: a recorded property is a claim."""
_PROPERTIES_USED_WITH_VALUE = {
    "degree": {"homogeneous", "value_homogeneous"},
    "linearization": {"vanishing_slopes", "value_vanishing_slopes", "bounded", "value_bounded"},
    "bounded": {"bounded"},
}
"""The same for a gated block with a value activation h (the checks then re-derive h's property too)."""


def properties_used(th: str, verdict: Any, arg: dict[str, Any], value: bool) -> set[str]:
    """The properties of σ (and h) result ``th``'s check re-derives for this verdict and case: the
    only ones a certificate may record (``value``: the block has a value activation h)."""
    table = _PROPERTIES_USED_WITH_VALUE if value else _PROPERTIES_USED
    used = table.get(th, set()) if verdict in ("absorbable", "not_absorbable") else set()
    if value and th == "linearization":  # the case names the two properties its check re-derives
        used = LINEARIZATION_CASES.get(arg.get("case"), set())
    elif th == "index-set" and used and arg.get("s") is not None:  # the shifted flip's identity
        used = {"shifted_flip"}
    elif th == "gated-skeleton" and used:  # a step gate's limits, or a ReLU-like gate: not both
        used = used - ({"relu_like_gate"} if arg.get("case") == "step" else {"gate_limits"})
    return set(used)
