"""Reading a certificate file, finding the model it names, and the model's blocks and structure."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from absorb._errors import InvalidInput
from absorb.model.block import Block, Stack

SCHEMA = "absorb-certificate"
SUPPORTED_VERSIONS = (1,)


def _no_constant(name: str) -> Any:
    raise ValueError(f"the number {name} (JSON has no non-finite numbers, and absorb writes only finite ones)")


_FLOAT_LIMIT = 2**1024
"""No integer absorb writes is this large (exact values are written as strings); past it a
number cannot be compared with a float (OverflowError), so it is refused on reading."""


def _int(text: str) -> int:
    value = int(text)
    if abs(value) >= _FLOAT_LIMIT:
        raise ValueError(f"the integer {text[:12]}… ({len(text)} digits) is past float64's range")
    return value


def _float(text: str) -> float:
    """A JSON number with a fraction or exponent, as float64 — refused where that is not the
    number written: past the range (it would read as ±inf) or a nonzero literal too small for a
    float64 subnormal (it would read as 0). absorb writes every float by repr, which reads back exactly."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:24]} is past float64's range")
    if value == 0 and any(ch in "123456789" for ch in text.lower().split("e")[0]):
        raise ValueError(f"the number {text[:24]} is nonzero but below float64's smallest subnormal (it would read as 0)")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose names are unique: with a repeated name, readers disagree on which value
    counts (Python's json keeps the last, others the first), so a certificate holding one is refused."""
    obj: dict[str, Any] = {}
    for k, v in pairs:
        if k in obj:
            raise ValueError(f"the key {k!r} appears twice in one object (a reader may see either value)")
        obj[k] = v
    return obj


def load_certificate(path: str | Path) -> dict[str, Any]:
    """Read and validate a certificate file (schema, version, required keys) — InvalidInput if bad."""
    p = Path(path)
    if not p.is_file():
        raise InvalidInput(f"{p}: no such certificate file; make one with 'absorb check MODEL --certificate {p.name}'")
    try:
        obj = json.loads(p.read_text(encoding="utf-8"), parse_constant=_no_constant, parse_int=_int, parse_float=_float,
                         object_pairs_hook=_unique_keys)
    except RecursionError:
        raise InvalidInput(f"{p}: nested too deeply to read (absorb writes a few levels); the certificate was edited — "
                           "regenerate it") from None
    except UnicodeDecodeError:
        raise InvalidInput(f"{p}: not a text file; give the .json certificate (not the .pdf or .tex rendering)") from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{p}: not valid JSON ({exc.msg}: line {exc.lineno}); give the .json certificate") from None
    except ValueError as exc:  # a non-finite number, a huge integer, a repeated key, or past Python's digit limit
        why = "it holds an integer of thousands of digits" if "integer string conversion" in str(exc) else str(exc)
        raise InvalidInput(f"{p}: {why}; the certificate was edited — regenerate it") from None
    if not isinstance(obj, dict) or obj.get("schema") != SCHEMA:
        raise InvalidInput(f"{p}: not an absorb certificate (no \"schema\": \"{SCHEMA}\"); make one with 'absorb check MODEL --certificate OUT.json'")
    if obj.get("schema_version") not in SUPPORTED_VERSIONS:
        raise InvalidInput(f"{p}: schema_version {obj.get('schema_version')!r} is not supported (this checker reads {SUPPORTED_VERSIONS}); upgrade absorb")
    for key in ("verdict", "theorem", "blocks", "parameters", "input"):
        if key not in obj:
            raise InvalidInput(f"{p}: certificate lacks the key {key!r}; regenerate it with 'absorb check --certificate'")
    if not isinstance(obj["blocks"], list) or not obj["blocks"]:
        raise InvalidInput(f"{p}: key 'blocks' must be a non-empty list")
    for key in ("parameters", "input", "theorem", "class", "stack"):  # (objects; the last three may be null or absent)
        if not isinstance(obj.get(key), dict) and (key in ("parameters", "input") or obj.get(key) is not None):
            raise InvalidInput(f"{p}: key {key!r} must be a JSON object{'' if key in ('parameters', 'input') else ' or null'}, "
                               f"not {type(obj[key]).__name__}; the certificate was edited — regenerate it")
    for where, key in (("input", "path"), ("parameters", "activation_override")):  # (read before the checker runs)
        v = obj[where].get(key)
        if v is not None and not isinstance(v, str):
            raise InvalidInput(f"{p}: {where}.{key} must be a string or null, not {type(v).__name__}; the certificate "
                               "was edited — regenerate it")
    return obj


def resolve_model_path(cert: dict[str, Any], cert_path: str | Path, model: str | Path | None) -> Path:
    """The model file: ``model`` if given, else the certificate's path (as given, then
    relative to the certificate's folder)."""
    if model is not None:
        return Path(model)
    recorded = cert.get("input", {}).get("path")
    if not recorded:
        raise InvalidInput(f"{cert_path}: the certificate names no model file; pass it: absorb verify {cert_path} MODEL")
    p = Path(recorded)
    if p.exists():
        return p
    alt = Path(cert_path).parent / p.name
    if alt.exists():
        return alt
    raise InvalidInput(f"{cert_path}: the model file {recorded} named in the certificate does not exist; pass it: absorb verify {cert_path} MODEL")


class Widened:
    """A lazy checkpoint's blocks, each with float64 weight matrices (see :func:`model_blocks`)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def __len__(self) -> int:
        return len(self.model)

    def __iter__(self) -> Any:
        return (b.float64() for b in self.model)


def structures(model: Block | Stack | Sequence[Block]) -> tuple[str, ...]:
    """The structures a certificate of ``model`` may record: a block is a ``block``, a stack of
    L > 1 blocks a ``stack`` (its composition is decided), of one block a ``block``; a list
    of blocks (a checkpoint's layers) a ``collection`` (one block: also a ``block``)."""
    if isinstance(model, Block):
        return ("block",)
    if isinstance(model, Stack):
        return ("stack",) if len(model.blocks) > 1 else ("block",)
    return ("collection", "block") if len(model) == 1 else ("collection",)


def model_blocks(model: Block | Stack | Sequence[Block], structure: str) -> Any:
    """The model's blocks, in order (a lazy checkpoint stays lazy), every weight matrix in
    float64: the loaders keep large float32 matrices as float32, and every computation
    here is a float64 one (products of two float32 arrays would round in float32)."""
    if isinstance(model, Stack):
        return [b.float64() for b in model.blocks]
    if isinstance(model, Block):
        return [model.float64()]
    if structure == "collection" and hasattr(model, "__len__") and not isinstance(model, Sequence):
        return Widened(model)  # a lazy checkpoint: read, checked and dropped one block at a time
    return [b.float64() for b in model]


#: the fields of the fixed-shape parts of a certificate (a field outside them is a claim no check reads)
SEARCH_KINDS = ("enumeration", "meet-in-the-middle", "lattice", "lattice-enumeration", "z3-unsat", "index-set")
"""The search certificates' kinds besides the dual ones: each names a route whose conclusion the
checker re-derives its own way (another label is a claim no check reads)."""

_FIELDS = {
    # a block's record: each field is re-derived (or prose, or listed as not a claim in docs/certificates.md)
    "block": {"name", "kind", "activation", "activation_function", "value_activation_function", "d", "n", "skip", "verdict",
              "theorem", "reason", "class", "tolerance", "weights", "hypotheses", "properties", "argument", "witness",
              "canonical_form", "search", "value_normalisation", "input_scale", "width", "min_width"},
    "canonical_form": {"family", "width", "L0", "lines", "dead_units", "inactive_lines", "choice", "min_width", "witness_exact",
                       "near"},
    "": {"schema", "schema_version", "created", "tool", "command", "paper", "input", "parameters", "verdict", "theorem",
         "reason", "class", "blocks", "stack", "summary"},
    "parameters": {"tolerance", "seed", "activation_override", "method", "timeout", "checkpoint"},
    "input": {"path", "structure", "blocks", "hash_convention", "file_sha256"},
    "witness": {"S", "residual", "eval_error", "n_inputs", "exact", "construction", "c", "formula", "block"},
    "hypothesis": {"name", "holds", "statement", "at"},
    "array": {"shape", "sha256", "fro_norm", "max_abs", "values"},
    "function": {"name", "text", "latex", "srepr"},
    "entry": {"row", "col", "value"},
    "search": {"method", "status", "reason", "S", "residual", "bound", "elapsed", "certificate"},
    "line": {"e", "a", "units"},
    "choice": {"B", "delta", "rank", "width"},
    "witness_block": {"weights"},
    "witness_exact": {"W_up", "W_down"},
    "checkpoint": {"layers", "up", "down", "gate", "fold_norm"},
    "portfolio": {"method", "status", "elapsed", "reason"},
}


_REQUIRED = {"block": ("class", "hypotheses", "properties", "argument"), "input": ("structure",)}
"""Fields every certificate writes and the checker reads: a record without one is not the format's."""


def missing_fields(cert: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(where, fields) for the input record and each block's record that lacks a field of :data:`_REQUIRED`."""
    out = []
    parts = [("input", cert.get("input"), "input")] + [(f"blocks.{i}", b, "block") for i, b in enumerate(cert.get("blocks") or [])]
    for where, obj, kind in parts:
        if isinstance(obj, dict) and (gone := [k for k in _REQUIRED[kind] if obj.get(k) is None]):  # (null: as absent)
            out.append((where, gone))
    return out


_WRITTEN = {
    "witness.block": {"weights"},
    "canonical_form": {"family", "width", "L0", "lines", "dead_units", "inactive_lines"},
    "min_width": {"exists", "lower", "upper", "value", "theorem", "reason"},
}
"""Fields the producer writes in every record of these kinds (a record without one was cut: not fully checked)."""
_ARGUMENT = {"index-set": {"c", "target", "necessity_hypotheses"}, "skeleton": {"nondegeneracy_hypotheses", "case", "target"},
             "skeleton2": {"nondegeneracy_hypotheses", "case"}, "gated-skeleton": {"nondegeneracy_hypotheses", "case"},
             "degree": {"k"}, "linearization": set(), "relu2-linear": {"case"}, "canonical-form": set(), "bounded": set()}
"""An exact verdict's argument fields, per theorem (with ``M_nonzero_entry``, which every one of these writes)."""


_NEVER_NULL = frozenset({"block", "weights", "M_nonzero_entry", "choice", "min_width", "c", "name", "statement", "family",
                         "width", "L0", "lines"})
"""Fields of the records above that the producer never writes as null: null there is a record cut short."""


def cut_records(cert: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(where, fields) for records the producer always writes in full that lack a field (:data:`_WRITTEN`,
    :data:`_ARGUMENT`; a flip's constant c; an exact verdict's hypotheses): a record cut short is a claim
    nobody can re-read — reported as not re-checked."""
    out = []

    def need(where: str, obj: Any, fields: set[str]) -> None:
        # (a field the producer never writes as null counts as cut when it is: _NEVER_NULL; a record written as
        # something other than an object — 0, a list — is cut whole)
        if obj is not None and not isinstance(obj, dict):
            out.append((where, [f"(the record, written as {type(obj).__name__})"]))
        elif isinstance(obj, dict) and (gone := sorted(k for k in fields if k not in obj or obj[k] is None and k in _NEVER_NULL)):
            out.append((where, gone))

    for i, b in enumerate(cert.get("blocks") or []):
        if not isinstance(b, dict):
            continue
        th = b.get("theorem") if isinstance(b.get("theorem"), str) else (b.get("theorem") or {}).get("id") if isinstance(b.get("theorem"), dict) else None
        th = th if isinstance(th, str) else None  # (an id written as a list or an object names no theorem)
        wit = b.get("witness")
        if isinstance(wit, dict):
            if not (isinstance(b.get("canonical_form"), dict) and b["canonical_form"].get("near") is not None):
                need(f"blocks.{i}.witness", wit, {"block"})  # (a within-tolerance canonical form records no float block)
            need(f"blocks.{i}.witness.block", wit.get("block"), _WRITTEN["witness.block"])
            if "S" in wit and th in ("index-set", "gated-skeleton"):
                need(f"blocks.{i}.witness", wit, {"c"})
        cf = b.get("canonical_form")  # (an exact form records its choice, and a not_absorbable its minimum width)
        need(f"blocks.{i}.canonical_form", cf, _WRITTEN["canonical_form"] | ({"choice"} if isinstance(cf, dict) and cf.get("near") is None else set())
             | ({"min_width"} if b.get("verdict") == "not_absorbable" else set()))
        need(f"blocks.{i}.min_width", b.get("min_width"), _WRITTEN["min_width"])
        if b.get("verdict") in ("absorbable", "not_absorbable") and th in _ARGUMENT:
            extra = _ARGUMENT[th] if b.get("verdict") == "not_absorbable" or th in ("index-set",) else set()
            need(f"blocks.{i}.argument", b.get("argument"), {"M_nonzero_entry"} | extra)
            if isinstance(b.get("hypotheses"), list) and not b["hypotheses"]:
                out.append((f"blocks.{i}.hypotheses", ["(every hypothesis record)"]))
        for key in ("hypotheses", "properties"):  # (lists the producer always writes: another type is a record cut)
            if key in b and not isinstance(b[key], list):
                out.append((f"blocks.{i}.{key}", [f"(the list, written as {type(b[key]).__name__})"]))
        if "argument" in b and not isinstance(b["argument"], dict):  # (an object the producer always writes)
            out.append((f"blocks.{i}.argument", [f"(the record, written as {type(b['argument']).__name__})"]))
        if b.get("verdict") == "absorbable" and not (isinstance(wit, dict) and wit):  # (every absorbable verdict has its witness)
            out.append((f"blocks.{i}.witness", ["(the witness of an absorbable verdict)"]))
        if th == "index-set" and b.get("verdict") in ("absorbable", "not_absorbable") and not isinstance(b.get("search"), dict):
            out.append((f"blocks.{i}.search", ["(the index-set search record)"]))
        arg = b.get("argument")
        if th == "skeleton" and isinstance(arg, dict) and b.get("verdict") == "not_absorbable":
            # (the producer writes the slopes, a, b and c∞ always; the target and the nondegeneracy hypotheses where the case reads them)
            gone = [k for k in ("L_plus", "L_minus", "a", "b", "c_inf") if arg.get(k) is None]
            if arg.get("case") == "nondegenerate":
                gone += [k for k in ("target", "nondegeneracy_hypotheses") if not arg.get(k)]
            if gone:
                out.append((f"blocks.{i}.argument", gone))
        if th == "gated-skeleton" and isinstance(arg, dict) and arg.get("case") == "step" and b.get("verdict") == "not_absorbable":
            gone = [k for k in ("L_plus", "L_minus", "target", "nondegeneracy_hypotheses") if not arg.get(k) and arg.get(k) != 0]
            if gone:  # (the step case's record is written in full, as the ungated skeleton's)
                out.append((f"blocks.{i}.argument", gone))
        for j, h in enumerate(b.get("hypotheses") if isinstance(b.get("hypotheses"), list) else []):
            need(f"blocks.{i}.hypotheses.{j}", h, {"name", "statement"})
    return out


def unknown_fields(cert: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(where, fields) for every fixed-shape part of ``cert`` holding a field the format does not
    have: the root, ``parameters`` (and its checkpoint options), ``input``, each block's record and in it the witness (and the
    witness block's array records), the hypotheses, the weight and activation records, the
    nonzero entries, the search record and the canonical form (its lines, choices and exact witness)."""
    out = []

    def look(where: str, obj: Any, kind: str) -> None:
        if isinstance(obj, dict) and set(obj) - _FIELDS[kind]:
            out.append((where, sorted(set(obj) - _FIELDS[kind])))

    def form(where: str, cf: Any) -> None:
        look(where, cf, "canonical_form")
        if isinstance(cf, dict):
            for j, ln in enumerate(cf.get("lines") if isinstance(cf.get("lines"), list) else []):
                look(f"{where}.lines.{j}", ln, "line")
            look(f"{where}.choice", cf.get("choice"), "choice")
            look(f"{where}.near", cf.get("near"), "choice")
            look(f"{where}.witness_exact", cf.get("witness_exact"), "witness_exact")

    def witness(where: str, wit: Any) -> None:  # (a witness record, its block and that block's array records)
        look(where, wit, "witness")
        blk = wit.get("block") if isinstance(wit, dict) else None
        look(f"{where}.block", blk, "witness_block")
        recs = blk.get("weights") if isinstance(blk, dict) else None
        for k, rec in (recs.items() if isinstance(recs, dict) else []):
            look(f"{where}.block.weights.{k}", rec, "array")

    look("certificate", cert, "")
    look("parameters", cert.get("parameters"), "parameters")
    look("input", cert.get("input"), "input")
    if isinstance(cert.get("parameters"), dict):
        look("parameters.checkpoint", cert["parameters"].get("checkpoint"), "checkpoint")
    for i, b in enumerate(cert.get("blocks") or []):
        if not isinstance(b, dict):
            continue
        look(f"blocks.{i}", b, "block")
        wit = b.get("witness")
        witness(f"blocks.{i}.witness", wit)
        for j, h in enumerate(b.get("hypotheses") or [] if isinstance(b.get("hypotheses"), list) else []):
            look(f"blocks.{i}.hypotheses.{j}", h, "hypothesis")
        for k, rec in ((b.get("weights") or {}).items() if isinstance(b.get("weights"), dict) else []):
            look(f"blocks.{i}.weights.{k}", rec, "array")
        look(f"blocks.{i}.activation_function", b.get("activation_function"), "function")
        look(f"blocks.{i}.value_activation_function", b.get("value_activation_function"), "function")
        if isinstance(b.get("argument"), dict):
            look(f"blocks.{i}.argument.M_nonzero_entry", b["argument"].get("M_nonzero_entry"), "entry")
        look(f"blocks.{i}.search", b.get("search"), "search")
        sc = b["search"].get("certificate") if isinstance(b.get("search"), dict) else None
        for j, e in enumerate(sc.get("portfolio") if isinstance(sc, dict) and isinstance(sc.get("portfolio"), list) else []):
            look(f"blocks.{i}.search.certificate.portfolio.{j}", e, "portfolio")
        form(f"blocks.{i}.canonical_form", b.get("canonical_form"))
        mw = b.get("min_width") if isinstance(b.get("min_width"), dict) else {}
        for key, rec in (("width", b.get("width")), ("min_width.upper_claim", mw.get("upper_claim")),
                         ("min_width.lower_claim", mw.get("lower_claim"))):
            if isinstance(rec, dict):
                form(f"blocks.{i}.{key}.canonical_form", rec.get("canonical_form"))
                witness(f"blocks.{i}.{key}.witness", rec.get("witness"))
    if isinstance(cert.get("stack"), dict):
        look("stack.skip_product_nonzero_entry", cert["stack"].get("skip_product_nonzero_entry"), "entry")
    return out
