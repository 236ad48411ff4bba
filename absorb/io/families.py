"""Which tensors of a checkpoint form which MLP block: family detection by tensor names.

A checkpoint is a flat map from tensor names to arrays. Each model family names its MLP
projections in its own way (the table "Families" of docs/checkpoints.md lists what this
module implements): LLaMA's ``layers.{i}.mlp.gate_proj``, GPT-2's ``h.{i}.mlp.c_fc`` stored
transposed (``Conv1D`` is ``[in, out]``), T5's ``DenseReluDense.wi_0``/``wi_1``, Phi-3's
fused ``gate_up_proj``, Mixtral's ``block_sparse_moe.experts.{e}.w1``… Prefixes vary
(``model.``, ``transformer.``, ``bert.``, ``language_model.``, none), so every rule matches
by *suffix* and a regular expression on the module path that holds the projections.

Only names and shapes are used here; no weight is read. The result is a tuple of
:class:`BlockSpec` — which tensor plays which role, the orientation, the activation and
where it came from, the norm that precedes the MLP (for ``--fold-norm``) and how the
transformer wires its residual — validated so that the loader can read layer by layer
without further surprises. The family table is :mod:`absorb.io.family_table`; what
config.json says about a block (activation, norm, residual) is :mod:`absorb.io.family_config`.

The activation is **never guessed**: it comes from ``--activation``, else from
``config.json`` (``hidden_act``, ``hidden_activation``, ``activation_function``,
``activation``, ``feed_forward_proj``), else — only where the original code hard-codes it
(Meta's LLaMA ``feed_forward.w1/w2/w3``: SiLU) — from the layout; otherwise the input is
refused with the usual value named. Several families share names with different
activations (LLaMA's SiLU and Gemma's tanh-GELU; GPT-NeoX's GELU and Persimmon's ReLU²), so
a wrong guess would decide a different function.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, replace

from absorb._errors import InvalidInput
from absorb.io import family_config as fc
from absorb.io.family_config import (
    _ACT_KEYS_ANY,
    _check_activation_name,
    _hidden_size,
    _model_type,
    _section_key,
    config_section,
)
from absorb.io.family_table import (
    _EXPECTED,
    FAMILIES,
    FAMILY_BY_KEY,
    BlockSpec,
    Detection,
    Family,
    ManualRoles,
    NormSpec,
    Role,
    Shapes,
)
from absorb.model.activations import get_activation

# ----------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------

def _natural_key(name: str) -> tuple[object, ...]:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


@dataclass(frozen=True)
class LayerRanges:
    """The layer numbers ``--layers`` selects, kept as ranges: ``0-99999999999`` costs what ``0-2`` does."""

    ranges: tuple[range, ...]

    def __contains__(self, layer: object) -> bool:
        return any(layer in r for r in self.ranges)


def _layer_number(digits: str) -> int:
    """A layer number; past 18 digits (beyond any model, and past Python's 4300-digit int() for some) 10^18."""
    return int(digits) if len(digits.lstrip("0")) <= 18 else 10**18


def parse_layers(text: str) -> LayerRanges:
    """``"0-3,7"`` → the layers 0, 1, 2, 3 and 7 (a :class:`LayerRanges`); a one-line error on anything else."""
    out: list[range] = []
    for part in str(text).split(","):
        part = part.strip()
        m = re.fullmatch(r"([0-9]+)(?:\s*-\s*([0-9]+))?", part)  # ASCII digits only (re's \d takes any script's)
        if not m:
            raise InvalidInput(f"--layers {text!r}: {part!r} is not a layer number or range; write e.g. 0-3,7")
        a = _layer_number(m.group(1))
        b = _layer_number(m.group(2)) if m.group(2) is not None else a
        if b < a:
            raise InvalidInput(f"--layers {text!r}: range {part!r} runs backwards; write {b}-{a}")
        out.append(range(a, b + 1))
    spans = sorted(out, key=lambda r: r.start)  # (a layer named twice reads once: the recorded text would overstate)
    for r, nxt in zip(spans, spans[1:]):
        if nxt.start < r.stop:
            raise InvalidInput(f"--layers {text!r}: layer {nxt.start} is named twice; name each layer once")
    return LayerRanges(tuple(out))


def _shape_error(source: str, tensor: str, shape: tuple[int, ...], want: str) -> InvalidInput:
    return InvalidInput(f"{source}: tensor {tensor!r} has shape {list(shape)}, expected {want}")


def _orientation(transposed: bool, shp: tuple[int, ...], *, hidden: int | None, by_shape: bool) -> bool:
    """Whether the up projection ``shp`` is stored ``[in, out]``: the family's ``transposed``,
    unless ``by_shape`` and exactly one side of ``shp`` is the hidden size."""
    if hidden is None or not by_shape:
        return transposed
    d_linear, d_conv = shp[1], shp[0]
    if d_conv == hidden and d_linear != hidden:
        return True
    if d_linear == hidden and d_conv != hidden:
        return False
    return transposed


def _dims(spec: BlockSpec, names: Shapes, *, source: str, hidden: int | None, by_shape: bool) -> BlockSpec:
    """Check the shapes of every role (no data read) and fix ``d``, ``n`` and the orientation.

    ``by_shape``: the orientation is told by the hidden size where it can be (see :func:`_orientation`).
    """
    up_t = spec.up if spec.up is not None else spec.gate_up
    assert up_t is not None
    shp = names[up_t]
    dshp = names[spec.down]
    if len(shp) != 2 or len(dshp) != 2:
        bad, s = (up_t, shp) if len(shp) != 2 else (spec.down, dshp)
        raise _shape_error(source, bad, s, "a 2-D weight matrix")
    transposed = _orientation(spec.transposed, shp, hidden=hidden, by_shape=by_shape)
    if hidden is not None and (shp[0] if transposed else shp[1]) != hidden:
        raise InvalidInput(f"{source}: tensor {up_t!r} has shape {list(shp)} but config.json gives hidden size {hidden}; "
                           "the weights do not match the config (or are stored transposed)")
    rows, cols = (shp[1], shp[0]) if transposed else shp
    if spec.gate_up is not None and rows % 2:
        raise _shape_error(source, up_t, shp, "[2·I, H] with an even number of rows (gate rows 0:I, up rows I:2I)")
    n, d = (rows // 2 if spec.gate_up is not None else rows), cols
    want_down = (n, d) if transposed else (d, n)
    if tuple(dshp) != want_down:
        hint = " (it looks transposed)" if tuple(dshp) == want_down[::-1] and n != d else ""
        raise _shape_error(source, spec.down, dshp, f"{list(want_down)} to match {up_t!r} {list(shp)}{hint}")
    _check_vectors(spec, names, source=source, up_t=up_t, n=n, d=d)
    return replace(spec, transposed=transposed, d=d, n=n)


def _check_vectors(spec: BlockSpec, names: Shapes, *, source: str, up_t: str, n: int, d: int) -> None:
    """The gate has the up projection's shape; biases and the norm's vectors have n or d entries."""
    shp = names[up_t]
    if spec.gate is not None and tuple(names[spec.gate]) != tuple(shp):
        raise _shape_error(source, spec.gate, names[spec.gate], f"{list(shp)} (the shape of {up_t!r})")
    b_up = spec.b_up if spec.gate_up is None else None  # a fused bias has 2·n entries (checked below)
    for t, k in ((b_up, n), (spec.b_gate, n), (spec.b_down, d)):
        if t is not None and tuple(names[t]) != (k,):
            raise _shape_error(source, t, names[t], f"[{k}]")
    if spec.gate_up is not None and spec.b_up is not None and tuple(names[spec.b_up]) != (2 * n,):
        raise _shape_error(source, spec.b_up, names[spec.b_up], f"[{2 * n}] (fused gate/up bias)")
    if spec.norm is not None:
        for t in (spec.norm.weight, spec.norm.bias):
            if t is not None and tuple(names[t]) != (d,):
                raise _shape_error(source, t, names[t], f"[{d}] (one gain per model dimension, d = {d})")


def _hidden_from_norm(names: Shapes, root: str, up: str, norm: str) -> int | None:
    """Without config.json, the norm's length tells GPT-2's Conv1D ``c_fc`` [H, I] from GPT-BigCode's
    ``nn.Linear`` [I, H] (same names); None unless it matches exactly one side of ``up``."""
    ln = names.get(f"{root}.{norm}.weight")
    shp = names[up]
    if ln is None or len(ln) != 1 or len(shp) != 2 or (ln[0] == shp[0]) == (ln[0] == shp[1]):
        return None
    return int(ln[0])


# Tensors whose shape fixes the hidden size d without config.json: embeddings [vocab, d],
# norms [d], square attention projections [d, d]. (Per-head q/k norms have the head size.)
_EMBED = re.compile(r"(^|\.)(\w*embed\w*|\w*emb|wte|wpe|shared)\.weight$", re.I)
_NORM = re.compile(r"(^|\.)(ln_\w*|\w*norm\w*)\.weight$", re.I)
_HEAD_NORM = re.compile(r"(^|\.)(q|k|query|key|q_a|kv_a)_?(norm|layernorm)\w*\.weight$", re.I)
_SQUARE_ATTN = re.compile(r"(attn|attention)\w*\.(\w+\.)?(q_proj|o_proj|out_proj|c_proj|dense|query|wq|o)\.weight$", re.I)


def hidden_evidence(names: Shapes) -> dict[int, str]:
    """Sizes that tensors other than the MLP's fix as the hidden size d → one such tensor.

    Several sizes (a vision and a text tower) are kept apart: :func:`hidden_for` takes the
    one that fits a given weight's shape.
    """
    out: dict[int, str] = {}
    for name, shp in sorted(names.items(), key=lambda kv: _natural_key(kv[0])):
        if len(shp) == 2 and _EMBED.search(name) and shp[1] > 1:
            out.setdefault(int(shp[1]), f"{name} {list(shp)}")
        elif len(shp) == 1 and shp[0] > 1 and _NORM.search(name) and not _HEAD_NORM.search(name):
            out.setdefault(int(shp[0]), f"{name} {list(shp)}")
        elif len(shp) == 2 and shp[0] == shp[1] > 1 and _SQUARE_ATTN.search(name):
            out.setdefault(int(shp[0]), f"{name} {list(shp)}")
    return out


def hidden_for(shp: tuple[int, ...], evidence: Mapping[int, str]) -> int | None:
    """The side of the 2-D ``shp`` that the evidence names as d, when exactly one does."""
    if len(shp) != 2:
        return None
    sides = {int(x) for x in shp if x in evidence}
    return sides.pop() if len(sides) == 1 else None


# Row selections of a fused tensor in a role pattern: NAME[:half], NAME[half:] (gate_up halves),
# NAME[0::2], NAME[1::2] (interleaved rows). Rows are the stored tensor's first axis (nn.Linear's outputs).
SLICES = (":half", "half:", "0::2", "1::2")
_SLICE = re.compile(r"^(?P<base>.*)\[(?P<sel>:half|half:|0::2|1::2)\]$")


def split_slice(name: str) -> tuple[str, str | None]:
    """(tensor name, row selection or None) of a name or pattern that may end in ``[:half]`` etc."""
    m = _SLICE.match(name)
    return (m.group("base"), m.group("sel")) if m else (name, None)


def _bias(names: Shapes, weight: str | None) -> str | None:
    if weight is None:
        return None
    weight, sel = split_slice(weight)
    b = weight[: -len(".weight")] + ".bias" if weight.endswith(".weight") else weight + ".bias"
    b = b if sel is None else f"{b}[{sel}]"
    return b if b in names else None


def _common_prefix(tensors: list[str]) -> str:
    parts = [t.split(".") for t in tensors]
    out = []
    for comp in zip(*parts):
        if all(c == comp[0] for c in comp):
            out.append(comp[0])
        else:
            break
    return ".".join(out)


# ----------------------------------------------------------------------------------------
# detection
# ----------------------------------------------------------------------------------------

def _mlp_looking(names: Shapes) -> list[str]:
    pat = re.compile(r"(mlp|ffn|feed_?forward|fc|dense|intermediate|expert|proj|wi|wo|w[123])", re.I)
    skip = re.compile(r"(attn|attention|embed|norm|ln_|lm_head|wte|wpe|q_proj|k_proj|v_proj|o_proj|query|key|value)", re.I)
    return sorted((n for n, s in names.items() if len(s) == 2 and pat.search(n) and not skip.search(n)), key=_natural_key)


_LAYER_NUM = re.compile(r"(?<![0-9])[0-9]+(?![0-9])")


def _layer_patterns(names: Shapes) -> dict[str, dict[int, tuple[int, ...]]]:
    """``pattern with {i}`` → layer → shape, for every 2-D ``.weight`` whose first number is the layer.

    Only patterns whose shape is the same in every layer, with no dimension of 1 (a [1, d]
    vector is no projection), are kept."""
    out: dict[str, dict[int, tuple[int, ...]]] = {}
    for name, shp in names.items():
        if len(shp) != 2 or 1 in shp or not name.endswith(".weight"):
            continue
        m = _LAYER_NUM.search(name)
        if m is None:
            continue
        pat = name[: m.start()] + "{i}" + name[m.end():]
        out.setdefault(pat, {})[int(m.group())] = tuple(int(x) for x in shp)
    return {p: by for p, by in out.items() if len(set(by.values())) == 1}


_MLP_HINT = re.compile(r"(mlp|ffn|feed_?forward|fc|dense|intermediate|expert|up|down|gate|w[123]|wi|wo|in|out)", re.I)


def suggest_roles(names: Shapes, config: Mapping[str, object] | None = None) -> tuple[str | None, str]:
    """(a ``--up … --down … [--gate …]`` command, why) from shape consistency, or (None, why not).

    Per layer, an up projection [n, d] and a down projection [d, n] (``nn.Linear`` [out, in],
    as roles named by hand are read), the same n and d in every layer, d fixed by config.json
    or by another tensor (:func:`hidden_evidence`). A third [n, d] tensor is the gate when
    its name says so. The command is given only when exactly one reading fits; otherwise the
    readings are named and no command is.
    """
    pats = _layer_patterns(names)
    hidden = _hidden_size(config)
    evidence = {hidden: "config.json"} if hidden is not None else hidden_evidence(names)
    pairs = []
    for up, by_u in pats.items():
        (a, b), = set(by_u.values())
        if a == b:
            continue
        for down, by_d in pats.items():
            if down != up and set(by_d) == set(by_u) and set(by_d.values()) == {(b, a)}:
                pairs.append((up, down, a, b))
    if not pairs:
        fused = [(f, dn) for f, by_f in pats.items() for dn, by_d in pats.items() if f != dn and set(by_f) == set(by_d)
                 for (r, c) in set(by_f.values()) for (dr, dc) in set(by_d.values())
                 if r == 2 * dc and c == dr and dr != dc and dr in evidence]
        if len(fused) == 1:
            f, dn = fused[0]
            return None, (f"{f} and {dn} fit a fused gate/up projection [2n, d] and a down projection [d, n], but which rows "
                          f"are the gate is not in the file: for halves (gate first) --gate '{f}[:half]' --up '{f}[half:]' "
                          f"--down '{dn}', for interleaved rows --gate '{f}[0::2]' --up '{f}[1::2]' --down '{dn}'")
        return None, "no two tensors per layer have transposed shapes [n, d] and [d, n]"
    # d must be the side the evidence names; the up projection is the [n, d] one (nn.Linear [out, in])
    fits = [(u, dn, n, d) for u, dn, n, d in pairs if d in evidence and n not in evidence]
    if not fits and not evidence:
        shown = "; ".join(f"--up '{u}' --down '{dn}' gives d = {d}, n = {n}" for u, dn, n, d in pairs[:4])
        return None, (f"nothing fixes the hidden size d (no config.json hidden size, no embedding, norm or square attention "
                      f"tensor), so which tensor is up is not known: read as nn.Linear [out, in], {shown}")
    if not fits:
        sizes = ", ".join(f"{k} ({v})" for k, v in list(evidence.items())[:3])
        shown = "; ".join(f"{u} {[n, d]} / {dn}" for u, dn, n, d in pairs[:4])
        return None, f"the tensor pairs that fit an MLP ({shown}) do not match the hidden size the checkpoint fixes: {sizes}"
    downs = sorted({dn for _, dn, _, _ in fits})
    if len(downs) > 1:
        hinted = [dn for dn in downs if _MLP_HINT.search(dn)]
        downs = hinted if len(hinted) == 1 else downs
    if len(downs) != 1:
        shown = "; ".join(f"{u} / {dn}" for u, dn, _, _ in fits[:4])
        return None, f"several tensor pairs fit an MLP ({shown})"
    down = downs[0]
    ups = [(u, n, d) for u, dn, n, d in fits if dn == down]
    n, d = ups[0][1], ups[0][2]
    gates = [u for u, _, _ in ups if re.search("gate", u, re.I)]
    if len(ups) == 1:
        cmd = f"--up '{ups[0][0]}' --down '{down}'"
    elif len(ups) == 2 and len(gates) == 1:
        up = next(u for u, _, _ in ups if u != gates[0])
        cmd = f"--up '{up}' --down '{down}' --gate '{gates[0]}'"
    else:
        return None, (f"{', '.join(u for u, _, _ in ups)} all have the up projection's shape [{n}, {d}] and no name says "
                      "which is the gate")
    blocked = _suggestion_unread(names, cmd)
    if blocked is not None:
        return None, f"{cmd} fits the shapes, but {blocked}"
    act = next((v for k in _ACT_KEYS_ANY if config is not None and isinstance(v := config.get(k), str)), None)
    cmd += "" if act is not None else " --activation NAME"
    layers = len(pats[down])
    why = f"d = {d} ({evidence[d]}), n = {n}, {layers} layer{'s' if layers != 1 else ''}"
    return cmd, why


def _suggestion_unread(names: Shapes, cmd: str) -> str | None:
    """Why the roles-by-hand path would refuse the command ``cmd`` (a LayerScale beside the MLP), or None."""
    rx = [_role_regex(p, f"--{role}") for role, p in re.findall(r"--(up|down|gate) '([^']+)'", cmd)]
    layers: dict[str, list[str]] = {}
    for name in names:
        m = next((m for r in rx if (m := r.fullmatch(name))), None)
        if m is not None:
            layers.setdefault(m.group("i"), []).append(name)
    near = Neighbours(names)
    for i, used in sorted(layers.items(), key=lambda kv: int(kv[0])):
        module = _common_prefix(used)
        why = unread(near, root=_layer_root(module, i), container=module, used=used, ungated=False, label="roles named by hand",
                     own_module=True)  # (advice: a module with a tensor the command would not read gets none)
        if why is not None:
            return why
    return None


def unknown_layout(names: Shapes, *, source: str, config: Mapping[str, object] | None = None) -> InvalidInput:
    """The one-line refusal for an unrecognised layout, with a command that reads it when the
    shapes fix one (:func:`suggest_roles`), else the readings and what is missing."""
    mlp = _mlp_looking(names)
    cmd, why = suggest_roles(names, config)
    shown = ", ".join(f"{n} {list(names[n])}" for n in mlp[:4]) + (f" (and {len(mlp) - 4} more)" if len(mlp) > 4 else "")
    seen = f"MLP-looking tensors: {shown}" if mlp else \
        f"no MLP-looking tensor among {len(names)} tensors ({sum(1 for s in names.values() if len(s) == 2)} of them 2-D)"
    if cmd is not None:
        return InvalidInput(f"{source}: no known MLP layout; {seen}; the shapes fit one reading ({why}): name the roles "
                            f"by hand with {cmd} ({{i}} stands for the layer number)")
    return InvalidInput(f"{source}: no known MLP layout; {seen}; {why}; name the roles by hand with --up, --down [--gate] "
                        "patterns ({i} for the layer) and --activation NAME")


def select_layers(specs: list[BlockSpec], layers: Container[int] | None, *, source: str) -> list[BlockSpec]:
    """The blocks whose layer number is in ``layers`` (all when None); a one-line error when none is."""
    if layers is None:
        return specs
    present = sorted({s.layer for s in specs})
    out = [s for s in specs if s.layer in layers]
    span = f"{present[0]}-{present[-1]}" if present else "none"
    gone = [r.start for r in getattr(layers, "ranges", ()) if len(r) == 1 and r.start not in present]  # (a range may overreach)
    if gone:
        raise InvalidInput(f"{source}: --layers names layer {gone[0]}, which has no MLP block in this checkpoint "
                           f"(its MLP layers are {span})")
    if not out:
        raise InvalidInput(f"{source}: --layers selects no block; the checkpoint's MLP layers are {span}")
    return out


def detect(names: Shapes, config: Mapping[str, object] | None, *, source: str, activation: str | None = None,
           manual: ManualRoles | None = None, layers: Container[int] | None = None, fold_norm: bool = False) -> Detection:
    """Find every MLP block in a checkpoint from its tensor names and shapes.

    ``names`` maps each tensor name to its shape; ``config`` is config.json (or None).
    ``manual`` overrides detection with role patterns; ``layers`` keeps only those layer
    numbers; ``fold_norm`` also locates (and requires) the norm before each MLP. Every
    problem is a one-line :class:`InvalidInput` raised before any weight is read.
    """
    if manual is not None:
        specs = _manual(names, config, manual, source=source, activation=activation, fold_norm=fold_norm)
        fams: tuple[str, ...] = ("manual",)
    else:
        specs, fams = _by_family(names, config, source=source, activation=activation, fold_norm=fold_norm)
    elsewhere = _outside_layers(names, specs) if manual is None else []
    specs = select_layers(specs, layers, source=source)
    specs.sort(key=lambda s: _natural_key(s.name))
    notes = []
    if any(s.transposed for s in specs):
        notes.append("Conv1D weights stored [in, out] were transposed to [out, in]")
    if any(s.gate_up for s in specs):
        notes.append("fused gate_up_proj split: rows 0:I are the gate, rows I:2I the up projection")
    if elsewhere:
        notes.append(f"not analysed: {len(elsewhere)} MLP-looking tensor(s) in layers of another stack (a tower or a layout "
                     f"absorb does not read), e.g. {', '.join(elsewhere[:3])}; the verdict covers the blocks read only (name "
                     "their roles with --up/--down to decide them)")
    return Detection(blocks=tuple(specs), families=fams, model_type=_model_type(config), notes=tuple(notes))


def _outside_layers(names: Shapes, specs: list[BlockSpec]) -> list[str]:
    """MLP-looking 2-D tensors (:func:`_mlp_looking`) of numbered layers none of whose roots — the name up to the
    layer number — holds a block read (a vision tower beside the language model's layers, a layout not known)."""
    def root(name: str) -> str | None:
        m = _LAYER_NUM.search(name)
        return None if m is None else name[: m.end()]

    read = {root(s.name) for s in specs}
    return [t for t in _mlp_looking(names) if (r := root(t)) is not None and r not in read]




Found = dict[tuple[str, str], dict[Role, str]]


def _match_roles(names: Shapes) -> tuple[Found, dict[tuple[str, str], re.Match[str]]]:
    """(family key, container) → role → tensor, for every weight whose name fits a family's role."""
    patterns = [(f, f.pattern()) for f in FAMILIES]
    found: Found = {}
    matches: dict[tuple[str, str], re.Match[str]] = {}
    for name in names:
        if not name.endswith(".weight"):
            continue
        stem = name[: -len(".weight")]
        for fam, pat in patterns:
            for role, suffix in fam.roles:
                if not stem.endswith("." + suffix):
                    continue
                container = stem[: -len(suffix) - 1]
                m = pat.fullmatch(container)
                if m:
                    found.setdefault((fam.key, container), {})[role] = name
                    matches[(fam.key, container)] = m
    return found, matches


def _choose(found: Found, *, source: str) -> list[tuple[Family, str]]:
    """Per container: the complete family with the most roles (gate+up+down beats up+down)."""
    by_container: dict[str, list[str]] = {}
    for fkey, container in found:
        by_container.setdefault(container, []).append(fkey)
    chosen: list[tuple[Family, str]] = []
    lone: list[tuple[Family, str, InvalidInput]] = []
    for container, fkeys in by_container.items():
        complete = [FAMILY_BY_KEY[k] for k in fkeys if len(found[(k, container)]) == len(FAMILY_BY_KEY[k].roles)]
        if not complete:
            k = max(fkeys, key=lambda k: len(found[(k, container)]))
            fam = FAMILY_BY_KEY[k]
            have = sorted(found[(k, container)].values())
            missing = [f"{container}.{suf}.weight" for r, suf in fam.roles if r not in found[(k, container)]]
            error = InvalidInput(f"{source}: incomplete MLP block {container}: has {', '.join(have)} but no {', '.join(missing)}; "
                                 "a tensor or shard is missing from the checkpoint")
            if fam.lone_role_elsewhere and len(have) == 1:
                lone.append((fam, container, error))  # a lone fc1/output.dense elsewhere (an attention output, a head) is no MLP…
                continue
            raise error
        complete.sort(key=lambda f: -len(f.roles))
        if len(complete) > 1 and len(complete[0].roles) == len(complete[1].roles):
            raise InvalidInput(f"{source}: {container} fits both the {complete[0].label} and the {complete[1].label} layouts; "
                               "name the roles by hand with --up/--down/--gate")
        chosen.append((complete[0], container))
    # … unless it sits where the complete blocks do (the same name but for the layer number): then it
    # is a block whose other weight is missing, and leaving it out would decide the checkpoint without it
    where = {(fam.key, re.sub(r"\d+", "#", container)) for fam, container in chosen}
    for fam, container, error in lone:
        if (fam.key, re.sub(r"\d+", "#", container)) in where:
            raise error
    return chosen


def _by_family(names: Shapes, config: Mapping[str, object] | None, *, source: str, activation: str | None,
               fold_norm: bool) -> tuple[list[BlockSpec], tuple[str, ...]]:
    found, matches = _match_roles(names)
    chosen = _choose(found, source=source)
    if not chosen:
        raise unknown_layout(names, source=source, config=config)
    specs: list[BlockSpec] = []
    act_cache: dict[tuple[str, str], tuple[str, str]] = {}
    near = Neighbours(names)
    for fam, container in chosen:
        roles = found[(fam.key, container)]
        cfg = config_section(config, container)
        mt = _model_type(cfg)
        if mt in _EXPECTED and fam.key not in _EXPECTED[mt]:
            raise InvalidInput(f"{source}: {fc.config_name(cfg)} says model_type {mt!r} but {container} has the {fam.label} layout; "
                               "the config does not match the weights (or a tensor is missing)")
        refusal = next((r for r in fam.refusals if fc.holds(r.when, cfg, matches[(fam.key, container)].group("root"), names)), None)
        if refusal is not None:
            raise InvalidInput(f"{source}: {fc.config_name(cfg)} says model_type {mt!r}, and {container} has the {fam.label} "
                               f"layout: {refusal.why}; {refusal.fix}")
        sparse = None if cfg is None else cfg.get("activation_sparsity_pattern")
        layer = int(matches[(fam.key, container)].group("i"))
        if isinstance(sparse, list) and layer < len(sparse) and isinstance(sparse[layer], (int, float)) and sparse[layer] > 0:
            raise InvalidInput(f"{source}: {fc.config_name(cfg)} gives activation_sparsity_pattern {sparse[layer]} for layer {layer} "
                               f"({container}): Gemma 3n keeps only the gate's top activations there (a Gaussian top-k), so the "
                               "block is not σ(gate)·up; absorb does not read it")
        refuse_unread(near, root=matches[(fam.key, container)].group("root"), container=container, used=roles.values(),
                      ungated=not fam.gated, label=fam.label, source=source)
        ck = (fam.key, _section_key(container, config))
        if ck not in act_cache:
            act_cache[ck] = fc.activation(fam, cfg, override=activation, source=source, has_config=config is not None,
                                          example=roles["down"])
        specs.append(_family_spec(fam, container, matches[(fam.key, container)], roles, names, cfg, act_cache[ck],
                                  source=source, fold_norm=fold_norm))
    fams = tuple(sorted({s.family for s in specs}, key=lambda k: [f.key for f in FAMILIES].index(k)))
    return specs, fams


def _family_spec(fam: Family, container: str, m: re.Match[str], roles: dict[Role, str], names: Shapes,
                 cfg: Mapping[str, object] | None, act: tuple[str, str], *, source: str, fold_norm: bool) -> BlockSpec:
    """The checked :class:`BlockSpec` of one container that ``fam`` fits."""
    root = m.group("root")
    spec = BlockSpec(
        name=container, layer=int(m.group("i")), family=fam.key, down=roles["down"], up=roles.get("up"),
        gate=roles.get("gate"), gate_up=roles.get("gate_up"),
        b_up=_bias(names, roles.get("up") or roles.get("gate_up")), b_gate=_bias(names, roles.get("gate")),
        b_down=_bias(names, roles["down"]), transposed=fam.transposed, activation=act[0], activation_source=act[1],
        norm=fc.norm(fam, cfg, root, names, source=source, fold=fold_norm, block=container),
        residual=fc.residual(fam, cfg, root, names))
    if fam.orientation_by_shape and len(shp := names[roles["up"]]) == 2 and shp[0] == shp[1]:
        spec = replace(spec, transposed=_square_orientation(fam, cfg, names, root, roles["up"], source=source))
    hidden = _hidden_size(cfg)
    if hidden is None and fam.hidden_from_norm is not None:
        hidden = _hidden_from_norm(names, root, roles["up"], fam.hidden_from_norm)
    if hidden is None and fam.orientation_by_shape:
        shp = names[roles["up"]]
        evidence = hidden_evidence(names)
        hidden = hidden_for(shp, evidence)
        if hidden is None and len(shp) == 2 and shp[0] != shp[1]:
            a, b = shp
            raise InvalidInput(f"{source}: {roles['up']} {list(shp)} reads two ways and nothing fixes the hidden size d "
                               f"(no config.json hidden size; no embedding, norm or square attention tensor of size {a} or {b}): "
                               f"as Conv1D [in, out] (GPT-2) d = {a}, n = {b}; as nn.Linear [out, in] (GPT-BigCode) d = {b}, "
                               f"n = {a}; put the model's config.json (n_embd) beside it rather than have absorb guess")
    return _dims(spec, names, source=source, hidden=hidden, by_shape=fam.orientation_by_shape)


# Where a square up projection (n = d) cannot tell GPT-2's Conv1D [in, out] from GPT-BigCode's nn.Linear [out, in]
_SQUARE_ORIENTATION = {"gpt2": True, "imagegpt": True, "openai-gpt": True, "gpt_bigcode": False, "gpt_neo": False}


def _square_orientation(fam: Family, cfg: Mapping[str, object] | None, names: Shapes, root: str, up: str, *,
                        source: str) -> bool:
    """Whether a square up projection (n = d: both readings fit every shape) is stored ``[in, out]``: by config.json's
    model_type where it names one reading, else by the attention's fused ``c_attn`` ([d, 3d] as Conv1D; [3d, d] or,
    multi-query, [d + 2·head_dim, d] as nn.Linear); with neither, refused — a transposed reading is another f."""
    mt = _model_type(cfg)
    if mt in _SQUARE_ORIENTATION:
        return _SQUARE_ORIENTATION[mt]
    attn = names.get(f"{root}.attn.c_attn.weight")
    if attn is not None and len(attn) == 2 and attn[1] == 3 * attn[0] != 0:
        return True
    if attn is not None and len(attn) == 2 and attn[0] > attn[1] > 0:
        return False
    raise InvalidInput(f"{source}: {up} {list(names[up])} is square, so it reads both as Conv1D [in, out] (GPT-2) and as "
                       f"nn.Linear [out, in] (GPT-BigCode), and nothing tells which (no config.json model_type 'gpt2' or "
                       f"'gpt_bigcode', no attn.c_attn tensor beside it); put the model's config.json beside the weights "
                       f"rather than have absorb guess")


# A layer's own factor on its MLP branch: BEiT/Data2Vec lambda_2, DINOv2 layer_scale2, timm ls2, Mllama gate_ffn
_BRANCH_SCALE = re.compile(r"(lambda_?2|layer_?scale(_?2|_parameter)?|ls_?2|gamma_?2|gamma|res_scale_?2|gate_ffn|cross_attn_mlp_gate)"
                           r"(\.(lambda1|gamma|scale|weight))?")
"""The last components of a layer's factor on its MLP branch (or its skip), anywhere under the layer: BEiT/Data2Vec
lambda_2, DINOv2 layer_scale2, HF ConvNeXt layer_scale_parameter, timm ls2 / ls_2 / ConvNeXt gamma / MetaFormer
res_scale2, mmpretrain ffn.gamma2, InternViT ls2, Mllama gate_ffn / cross_attn_mlp_gate (a norm's TF-style .gamma is not one)."""


def _branch_scale(rel: str) -> bool:
    return (bool(re.search(r"(^|\.)(" + _BRANCH_SCALE.pattern + ")$", rel)) and not re.search(r"(norm|ln)[^.]*\.gamma$", rel, re.I)
            and not re.search(r"(^|\.)\w*(attn|attention)\w*\.", rel, re.I))  # (the attention's own scale is not the MLP's)

# Tensors of a layer (names relative to the layer root) that change what its MLP block computes, though
# they are none of the projections absorb reads: (pattern, what the block then computes, what would fix it)
_NPZ_FIX = "write the block as an .npz (docs/user-guide.md) with this factor folded in"
_ALTERS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"(.+\.)?(\w*act\w*|gelu_impl)\.scales"),
     "AutoAWQ's ScaledActivation: the block computes down(act(up·x) / s), the activation's output divided by these scales",
     "divide the down projection's columns by the scales (an .npz of the block), or analyse the checkpoint from before AWQ"),
    (re.compile(r"(.+\.)?c_fc2\.(weight|bias)"),
     "a second input projection (BTLM / JAIS SwiGLU: c_proj(c_fc(x) ⊙ silu(c_fc2(x)))), a gated MLP, which absorb does not "
     "read in this layout",
     "name the roles by hand, with the gate: --up '{u}' --down '{d}' --gate '{g}' --activation swiglu"),
    (re.compile(r"(.+\.)?ffn_layernorm\.(weight|bias)"),
     "a LayerNorm between the activation and the down projection (fairseq NormFormer's scale_fc: "
     "B(x) = fc2(LN(act(fc1·x))))", "absorb decides blocks down(act(up·x)) with no norm inside, from any format, so "
     "this model's MLP is not one it can decide; analyse a model trained without scale_fc"),
    (re.compile(r"w_resid"),
     "a factor on the MLP's residual (fairseq NormFormer's scale_resids: w ⊙ x + B(x)), not the identity skip",
     _NPZ_FIX + " as the skip matrix diag(w)"),
)


class Neighbours:
    """A checkpoint's tensor names, indexed for :func:`refuse_unread`: sorted (the tensors inside a
    module are a slice), and the few whose name ends as a branch factor or a :data:`_ALTERS` tensor."""

    _TAIL = re.compile(r"(^|\.)(" + _BRANCH_SCALE.pattern + "|" + "|".join(rx.pattern for rx, _, _ in _ALTERS) + ")$")

    def __init__(self, names: Shapes) -> None:
        self.names = names
        self.order = sorted(names)
        self.suspects = [t for t in self.order if self._TAIL.search(t)]

    def inside(self, module: str) -> list[str]:
        """The tensors whose name starts with ``module.`` ('/' sorts right after '.')."""
        return self.order[bisect.bisect_left(self.order, module + "."):bisect.bisect_left(self.order, module + "/")]


def refuse_unread(near: Neighbours, *, root: str | None, container: str, used: Iterable[str | None], ungated: bool, label: str,
                  source: str, own_module: bool = True) -> None:
    """Refuse (one line naming the tensor, :func:`unread`) a layer whose MLP block computes more than absorb reads of it."""
    why = unread(near, root=root, container=container, used=used, ungated=ungated, label=label, own_module=own_module)
    if why is not None:
        raise InvalidInput(f"{source}: {why}")


def unread(near: Neighbours, *, root: str | None, container: str, used: Iterable[str | None], ungated: bool, label: str,
           own_module: bool = True) -> str | None:
    """Why the block ``container`` computes more than absorb reads of it (naming the tensor), or None.

    The block is read as ``down(act(up·x) [⊙ gate]) + biases`` with the identity skip. Named:
    a factor on the MLP branch at the layer ``root`` (LayerScale), a tensor of the layer known to
    change the block (:data:`_ALTERS`), a gate-named weight beside an ungated layout, and any other
    tensor inside the MLP's own module ``container`` (when it is not the whole layer) that is none
    of the projections read nor their biases: ignored, it would make the verdict one about another f.
    Roles named by hand (``own_module`` False) skip the last two: the user chose what the block reads.
    """
    names = near.names
    read = {split_slice(t)[0] for t in used if t}
    read |= {t[: -len(".weight")] + ".bias" for t in read if t.endswith(".weight")}
    for t in (t for t in near.suspects if root is not None and t.startswith(f"{root}.") and t not in read):
        rel = t[len(f"{root}."):]
        if _branch_scale(rel):  # (h + λ ⊙ B(norm(h)): decided without λ, the verdict would be about another f)
            return (f"{t} {list(names[t])} scales the MLP branch of {root} (LayerScale or a gate: h + λ·B(norm(h))), which "
                    "absorb does not fold from this format; multiply it into the down projection's rows and bias (an .npz of "
                    "the block), or export the model to ONNX, whose reader folds it")
        alter = next(((why, fix) for rx, why, fix in _ALTERS if rx.fullmatch(rel)), None)
        if alter is not None:
            return _beside(t, container, root, alter)
    for w in sorted(t for t in read if t.endswith(".weight")):  # (a projection's own module: W x + b and nothing else)
        extra = next((t for t in near.inside(w[: -len(".weight")]) if split_slice(t)[0] not in read), None)
        if extra is not None:
            return _beside(extra, container, root, ("a tensor inside the module of the projection " + w + " (an unmerged LoRA "
                                                    "adapter, a quantisation scale), so the projection computes more than "
                                                    "W x + b", "merge it into the weight it modifies (or write the block as "
                                                    "an .npz of what it computes)"))
    for t in near.inside(container) if own_module else ():
        if split_slice(t)[0] in read:
            continue
        if ungated and len(names[t]) == 2 and "gate" in t[len(container) + 1:].lower():
            return _beside(t, container, root, (f"a gated MLP (llm-foundry's mptglu, say), which the {label} layout reads as "
                                                "ungated", "name the roles with --up, --down and --gate (and the activation "
                                                "with --activation)"))
        if container != root:
            return _beside(t, container, root, ("a tensor inside the MLP's own module that is none of the projections absorb "
                                                f"reads ({', '.join(sorted(read))}), so the block may compute more than "
                                                "down(act(up·x))", "merge or fold it into the weights it modifies (an .npz "
                                                "of what the block computes) — dropping it would decide another f"))
    return None


def _beside(t: str, container: str, root: str | None, alter: tuple[str, str]) -> str:
    why, fix = alter
    if "{g}" in fix:  # BTLM / JAIS: the command that reads the gated block
        stem = t[: t.rindex("c_fc2.")]
        fix = fix.format(g=_generic(stem + "c_fc2.weight", root), u=_generic(stem + "c_fc.weight", root),
                         d=_generic(stem + "c_proj.weight", root))
    return f"{container} holds {t} beside its up and down projections: {why}; {fix}"


def _generic(tensor: str, root: str | None) -> str:
    """``tensor`` with the layer number of ``root`` written ``{i}`` (as role patterns take it)."""
    if root is None or not tensor.startswith(f"{root}."):
        return tensor
    m = re.search(r"(\d+)$", root)
    return tensor if m is None else f"{root[: m.start()]}{{i}}{tensor[len(root):]}"


def _role_regex(pattern: str, flag: str) -> re.Pattern[str]:
    if "{i}" not in pattern and "{e}" not in pattern and "{" in pattern:
        raise InvalidInput(f"{flag} {pattern!r}: only {{i}} (layer) and {{e}} (expert) may stand in braces")
    if "[" in pattern and split_slice(pattern)[1] is None:
        raise InvalidInput(f"{flag} {pattern!r}: a fused tensor's rows are selected with [:half], [half:] (halves) or "
                           "[0::2], [1::2] (interleaved) at the end of the pattern")
    pattern, sel = split_slice(pattern)
    rx = re.escape(pattern)
    for key in "ie":  # the first {i} (or {e}) reads the number; a repeated one must be the same number
        first, *rest = rx.split(rf"\{{{key}\}}")
        rx = first + (rf"(?P<{key}>\d+)" + rf"(?P={key})".join(rest) if rest else "")
    if not pattern.endswith(".weight"):
        rx += r"\.weight"
    if sel is not None:
        rx += re.escape(f"[{sel}]")
    return re.compile(rx)


def _manual_activation(cfg: Mapping[str, object] | None, activation: str | None, *, source: str) -> tuple[str, str]:
    """(activation, where it came from) for roles named by hand: --activation, else any config.json key."""
    if activation is not None:
        get_activation(activation)
        return activation, "--activation"
    v = next(((k, cfg[k]) for k in _ACT_KEYS_ANY if cfg is not None and isinstance(cfg.get(k), str)), None)
    if v is None:
        raise InvalidInput(f"{source}: roles named by hand need the activation: pass --activation NAME (config.json names none)")
    return _check_activation_name(v[1], source=source, where=f"config.json {v[0]}"), f"config.json {v[0]} = {v[1]!r}"


def _layer_root(module: str, layer: str | None) -> str | None:
    """The part of ``module`` up to the component that is the layer number (``encoder.layer.0`` of
    ``encoder.layer.0.mlp``), where the layer's own tensors (a LayerScale) sit; None without one."""
    parts = module.split(".")
    at = [k for k, c in enumerate(parts) if layer is not None and c == layer]
    return ".".join(parts[: at[-1] + 1]) if at else None


def _manual(names: Shapes, config: Mapping[str, object] | None, manual: ManualRoles, *, source: str,
            activation: str | None, fold_norm: bool) -> list[BlockSpec]:
    if fold_norm:
        raise InvalidInput(f"{source}: --fold-norm needs a recognised family (it must know which norm precedes the MLP); "
                           "drop --fold-norm when naming roles by hand")
    rx = {role: _role_regex(p, f"--{role}") for role, p in (("up", manual.up), ("down", manual.down), ("gate", manual.gate)) if p}
    groups: dict[tuple[str | None, str | None], dict[str, str]] = {}
    for name in names:
        for role, r in rx.items():
            m = r.fullmatch(name)
            if m:
                gd = m.groupdict()
                groups.setdefault((gd.get("i"), gd.get("e")), {})[role] = name
    for role, r in rx.items():
        if not any(r.fullmatch(nm) for nm in names):
            example = next(iter(sorted(names, key=_natural_key)), "model.layers.0.mlp.up_proj.weight")
            raise InvalidInput(f"{source}: --{role} {getattr(manual, role)!r} matches no tensor; patterns are full tensor names "
                               f"with {{i}} for the layer number (this checkpoint has e.g. {example!r})")
    act, src = _manual_activation(config, activation, source=source)
    evidence = hidden_evidence(names)
    near = Neighbours(names)
    specs = []
    for (i, _e), roles in groups.items():
        missing = [r for r in rx if r not in roles]
        if missing:
            have = ", ".join(sorted(roles.values()))
            raise InvalidInput(f"{source}: {have} matched but no tensor matches --{missing[0]} "
                               f"{getattr(manual, missing[0])!r} for layer {i}; check the pattern")
        tensors = list(roles.values())
        name = _common_prefix(tensors) or roles["up"]
        refuse_unread(near, root=_layer_root(name, i), container=name, used=tensors, ungated=False, label="roles named by hand",
                      source=source, own_module=False)
        spec = BlockSpec(name=name, layer=int(i) if i is not None else 0, family="manual", down=roles["down"], up=roles["up"],
                         gate=roles.get("gate"), b_up=_bias(names, roles["up"]), b_gate=_bias(names, roles.get("gate")),
                         b_down=_bias(names, roles["down"]), activation=act, activation_source=src,
                         residual="roles named by hand: the transformer's residual wiring is not known")
        hidden = _hidden_size(config_section(config, name))
        if hidden is None:
            hidden = hidden_for(names[roles["up"]], evidence)
        specs.append(_dims(spec, names, source=source, hidden=hidden, by_shape=True))
    names_seen = [s.name for s in specs]
    if len(set(names_seen)) != len(names_seen):
        specs = [replace(s, name=f"{s.name}[{s.layer}]") for s in specs]
    return specs


__all__ = ["FAMILIES", "FAMILY_BY_KEY", "BlockSpec", "Detection", "Family", "ManualRoles", "NormSpec", "config_section", "detect",
           "LayerRanges", "SLICES", "hidden_evidence", "hidden_for", "parse_layers", "select_layers", "split_slice", "suggest_roles", "unknown_layout"]
