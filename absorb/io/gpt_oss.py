"""gpt-oss checkpoints: stacked, interleaved, biased experts with a clamped SwiGLU, MXFP4 or plain.

Layout (Hugging Face ``transformers``' ``GptOssExperts``; E experts, H hidden size, I expert width),
under ``model.layers.{i}.mlp.experts.``:

* plain floats: ``gate_up_proj`` [E, H, 2I] and ``down_proj`` [E, I, H] (stored ``[in, out]``:
  the layer computes ``x @ gate_up_proj[e]``), ``gate_up_proj_bias`` [E, 2I], ``down_proj_bias`` [E, H];
* MXFP4 (the published checkpoints): ``gate_up_proj_blocks`` [E, 2I, H/32, 16] with
  ``gate_up_proj_scales`` [E, 2I, H/32], ``down_proj_blocks`` [E, H, I/32, 16] with
  ``down_proj_scales`` [E, H, I/32] (``[out, in]``, 32 values per scale); the biases stay floats.

The fused projection interleaves its outputs: output ``2j`` is unit j's gate, ``2j + 1`` its value
(``gate = gate_up[..., ::2]``, ``up = gate_up[..., 1::2]``), and the same for ``gate_up_proj_bias``.
Each expert is one gated block (named ``model.layers.{i}.mlp.experts[e]``) whose unit computes

    (clamp(up, −L, L) + 1) · g(gate),   g(z) = min(z, L)·sigmoid(α·min(z, L)),

with ``L = swiglu_limit`` from config.json and ``α = 1.702`` (hard-coded in ``GptOssExperts``): the
gate activation is ``g`` and the value activation ``h(z) = clamp(z, −L, L) + 1``, both built here as
``expr:`` activations, so every property the engine uses (boundedness of both factors) is proved by
the σ analysis from the formulas, not read off the family.

MXFP4 dequantisation is exact: each byte packs two FP4 (e2m1) codes, the low nibble first (element
2k) and the high nibble second (element 2k + 1); code c is ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}[c & 7]
(sign bit 8), and each block of 32 elements is scaled by 2^(s − 127) with s its uint8 (E8M0)
scale. Every such value is a float32 (two significant bits, exponents −128 to 130) unless it
overflows float32, in which case the tensor is kept in float64; the scale 255 (E8M0's NaN) is
refused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from absorb._errors import InvalidInput
from absorb.io.family_table import BlockSpec, Detection
from absorb.io.tensor_info import TensorInfo

ALPHA = "1.702"
"""The gate's sigmoid slope α, hard-coded in transformers' GptOssExperts."""
DEFAULT_LIMIT = 7.0
"""transformers' GptOssConfig default of ``swiglu_limit``."""

FP4_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
"""The FP4 (e2m1) code points: code c is bit 3 the sign, bits 0-2 the magnitude."""

_EXPERTS = re.compile(r"^(?P<root>(?:.+\.)?layers\.(?P<i>\d+)\.mlp\.experts)\.(?P<what>gate_up_proj|down_proj)"
                      r"(?P<suffix>_blocks|_scales|_bias|)$")
_FLOATS = ("F64", "F32", "F16", "BF16")


def is_gpt_oss(names: Mapping[str, object]) -> bool:
    """Whether the checkpoint stores gpt-oss's stacked experts (``…mlp.experts.gate_up_proj[_blocks]``)."""
    return any((m := _EXPERTS.match(n)) is not None and m.group("what") == "gate_up_proj" and m.group("suffix") in ("", "_blocks")
               for n in names)


def dequantize_mxfp4(blocks: np.ndarray, scales: np.ndarray, *, where: str = "MXFP4 tensor") -> np.ndarray:
    """MXFP4 ``blocks`` [..., G, 16] (uint8, two FP4 codes a byte, low nibble first) and ``scales``
    [..., G] (uint8 E8M0, bias 127) → the exact values [..., G·32]: float32 when every value is
    one (always, unless it overflows float32), else float64."""
    blocks = np.asarray(blocks)
    scales = np.asarray(scales)
    if blocks.dtype != np.uint8 or scales.dtype != np.uint8:
        raise InvalidInput(f"{where}: MXFP4 blocks and scales must be uint8 (U8), got {blocks.dtype} and {scales.dtype}")
    if blocks.ndim < 2 or blocks.shape[-1] != 16 or blocks.shape[:-1] != scales.shape:
        raise InvalidInput(f"{where}: MXFP4 blocks of shape {list(blocks.shape)} and scales of shape {list(scales.shape)} do not "
                           "fit [..., G, 16] and [..., G] (16 bytes = 32 FP4 values per scale)")
    if np.any(scales == 255):
        idx = tuple(int(i) for i in np.argwhere(scales == 255)[0])
        raise InvalidInput(f"{where}: scale 255 (NaN in E8M0) at index {idx}; the weights must be finite")
    shape = blocks.shape[:-2] + (blocks.shape[-2] * 32,)
    with np.errstate(over="ignore"):  # a product is exact in float32 unless it overflows (checked below)
        out = (_PAIRS32[blocks].reshape(blocks.shape[:-1] + (32,)) * _POW2_32[scales][..., None]).reshape(shape)
    if np.all(np.isfinite(out)):
        return out
    return (_PAIRS[blocks].reshape(blocks.shape[:-1] + (32,)) * _POW2[scales][..., None]).reshape(shape)  # float64: exact


_PAIRS = np.stack([FP4_VALUES[np.arange(256) & 0x0F], FP4_VALUES[np.arange(256) >> 4]], axis=1)
"""Byte → (its low-nibble value, its high-nibble value): elements 2k and 2k + 1."""
_PAIRS32 = _PAIRS.astype(np.float32)
_POW2 = np.ldexp(1.0, np.arange(255) - 127)
"""Scale s → 2^(s − 127), s = 0 … 254 (255 is E8M0's NaN); exact in float32 too (2^-127 is a subnormal)."""
_POW2_32 = _POW2.astype(np.float32)


@dataclass(frozen=True)
class _Ref:
    """One expert's matrix or bias: a row/column selection of a stacked tensor, or dequantised MXFP4."""

    base: str  # the stacked tensor (for MXFP4: the _blocks tensor)
    expert: int
    part: str  # "gate", "up" (interleaved halves of gate_up), "all"
    transpose: bool  # stored [in, out]: return the transpose
    scales: str | None = None


class GptOssSource:
    """An expert's tensors from the stacked ones, read through another source (safetensors or torch)."""

    def __init__(self, inner: Any, base: Mapping[str, TensorInfo], refs: Mapping[str, _Ref]) -> None:
        self.inner = inner
        self.base = dict(base)
        self.refs = dict(refs)
        self._last: tuple[tuple[str, int], np.ndarray] | None = None
        """The last expert matrix read: the gate and the up rows of one expert come from one read."""

    def _item(self, name: str, e: int) -> np.ndarray:
        """Expert ``e`` of the stacked tensor ``name`` (only that slice where the source can)."""
        info = self.base[name]
        load_item = getattr(self.inner, "load_item", None)
        return load_item(info, e) if load_item is not None else self.inner.load(info)[e]

    def _expert(self, ref: _Ref) -> np.ndarray:
        key = (ref.base, ref.expert)
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        if ref.scales is not None:
            arr = dequantize_mxfp4(self._item(ref.base, ref.expert), self._item(ref.scales, ref.expert),
                                   where=f"{self.base[ref.base].file}: tensor {ref.base!r} (expert {ref.expert})")
        else:
            arr = self._item(ref.base, ref.expert)
        self._last = (key, arr)
        return arr

    def load(self, info: TensorInfo) -> np.ndarray:
        ref = self.refs[info.name]
        arr = self._expert(ref)
        if ref.transpose:
            arr = arr.T
        if ref.part != "all":  # interleaved outputs: even = gate, odd = up (rows once [out, in])
            arr = arr[0::2] if ref.part == "gate" else arr[1::2]
        return np.array(arr, order="C")  # always a copy: the caller owns it (the read expert stays cached)


def _number(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v)) else None


def gate_activation(limit: float) -> str:
    """``g(z) = min(z, L)·sigmoid(α·min(z, L))`` as an ``expr:`` activation."""
    L = repr(float(limit))
    return f"expr:Min(x, {L})/(1 + exp(-{ALPHA}*Min(x, {L})))"


def value_activation(limit: float) -> str:
    """``h(z) = clamp(z, −L, L) + 1`` as an ``expr:`` activation."""
    L = repr(float(limit))
    return f"expr:Max(-{L}, Min(x, {L})) + 1"


def _limit(config: Mapping[str, Any] | None, *, source: str, cfg_path: Path) -> tuple[float, str]:
    if config is None:
        raise InvalidInput(f"{source}: gpt-oss experts, but no config.json beside the checkpoint: the clamp swiglu_limit of the "
                           "unit is not known; put the model's config.json beside it")
    if "swiglu_limit" not in config:
        return DEFAULT_LIMIT, f"transformers' GptOssConfig default swiglu_limit = {DEFAULT_LIMIT} (config.json omits it)"
    L = _number(config.get("swiglu_limit"))
    # (the unit's expression writes L out: its grammar takes exponents within ±30, and past about 1e5 the
    # analysis of exp(−1.702·L) no longer fits its budget; gpt-oss uses 7.0)
    if L is None or not 1e-30 <= L <= 1e4:
        raise InvalidInput(f"{cfg_path}: swiglu_limit = {config.get('swiglu_limit')!r} is not a number in [1e-30, 1e4]; "
                           "gpt-oss uses 7.0")
    return L, f"config.json swiglu_limit = {L}"


def read_gpt_oss(path: Path, tensors: Mapping[str, TensorInfo], config: Mapping[str, Any] | None, *, inner: Any, cfg_path: Path,
                 activation: str | None) -> tuple[dict[str, TensorInfo], GptOssSource, Detection]:
    """The experts of every layer as blocks (see the module docstring); one-line refusals otherwise."""
    src = str(path)
    if activation is not None:
        raise InvalidInput(f"{src}: a gpt-oss checkpoint: its clamped SwiGLU unit is read from config.json (swiglu_limit); "
                           "drop --activation")
    qc = None if config is None else config.get("quantization_config")
    if qc and not (isinstance(qc, dict) and qc.get("quant_method") == "mxfp4"):
        method = qc.get("quant_method", "?") if isinstance(qc, dict) else "?"
        raise InvalidInput(f"{cfg_path}: the model is quantised with quant_method {method!r}; absorb dequantises only gpt-oss's "
                           "MXFP4 experts — analyse the unquantised checkpoint")
    mt = None if config is None else config.get("model_type")
    if mt is not None and mt != "gpt_oss":
        name = next(n for n in sorted(tensors) if _EXPERTS.match(n))
        what = "quantised (MXFP4) experts" if name.endswith(("_blocks", "_scales")) else "stacked experts"
        raise InvalidInput(f"{tensors[name].file}: tensor {name!r} marks gpt-oss's {what}, but config.json gives model_type "
                           f"{mt!r}; absorb reads this layout only in gpt_oss checkpoints (fix config.json or the tensors)")
    L, l_src = _limit(config, source=src, cfg_path=cfg_path)
    layers: dict[str, dict[str, str]] = {}
    for name in tensors:
        m = _EXPERTS.match(name)
        if m:
            layers.setdefault(m.group("root"), {})[m.group("what") + m.group("suffix")] = name
    hidden = None if config is None else config.get("hidden_size")
    hidden = hidden if isinstance(hidden, int) and not isinstance(hidden, bool) else None
    out: dict[str, TensorInfo] = dict(tensors)
    refs: dict[str, _Ref] = {}
    specs: list[BlockSpec] = []
    quantised = False
    for root in sorted(layers, key=lambda r: int(_EXPERTS.match(r + ".down_proj").group("i"))):  # type: ignore[union-attr]
        have = layers[root]
        i = int(_EXPERTS.match(root + ".down_proj").group("i"))  # type: ignore[union-attr]
        gu, dn = _matrix(have, "gate_up_proj", root, tensors, src), _matrix(have, "down_proj", root, tensors, src)
        quantised |= gu[1] is not None or dn[1] is not None
        E, n, d = _dims(gu, dn, root, tensors, src, hidden=hidden)
        bias = {k: have.get(f"{k}_bias") for k in ("gate_up_proj", "down_proj")}
        for k, want in (("gate_up_proj", (E, 2 * n)), ("down_proj", (E, d))):
            b = bias[k]
            if b is not None:
                _float(tensors[b], src)
                if tensors[b].shape != want:
                    raise InvalidInput(f"{tensors[b].file}: tensor {b!r} has shape {list(tensors[b].shape)}, expected {list(want)} "
                                       f"(E = {E} experts, I = {n}, H = {d})")
        for e in range(E):
            specs.append(_expert(f"{root}[{e}]", e, i, gu, dn, bias, tensors, out, refs, n=n, d=d, L=L, l_src=l_src))
    if not specs:  # pragma: no cover - is_gpt_oss found a gate_up_proj
        raise InvalidInput(f"{src}: no gpt-oss expert tensors found")
    notes = ["gpt-oss: each expert is one block (clamped SwiGLU with biases; gate = even outputs of gate_up_proj, value = odd)"]
    if quantised:
        notes.append("MXFP4 expert weights are dequantised exactly (FP4 e2m1 × 2^(scale − 127)); every verdict is about those values")
    return out, GptOssSource(inner, tensors, refs), Detection(blocks=tuple(specs), families=("gpt_oss",),
                                                             model_type=mt if isinstance(mt, str) else None, notes=tuple(notes))


def _expert(name: str, e: int, i: int, gu: tuple[str, str | None], dn: tuple[str, str | None], bias: Mapping[str, str | None],
            tensors: Mapping[str, TensorInfo], out: dict[str, TensorInfo], refs: dict[str, _Ref], *, n: int, d: int, L: float,
            l_src: str) -> BlockSpec:
    """Register expert ``e``'s tensors (``out``, ``refs``) and return its block."""
    def reg(role: str, ref: _Ref, shape: tuple[int, ...], dtype: str) -> str:
        key = f"{name}.{role}"
        info = tensors[ref.base]
        out[key] = TensorInfo(key, info.file, dtype, shape, info.begin, info.end, info.data_start)
        refs[key] = ref
        return key

    def mat(t: tuple[str, str | None], part: str, shape: tuple[int, int], role: str) -> str:
        base, scales = t
        plain = scales is None
        ref = _Ref(base, e, part, transpose=plain, scales=scales)  # plain floats are stored [in, out]
        return reg(role, ref, shape, tensors[base].dtype if plain else "F32")

    gate = mat(gu, "gate", (n, d), "gate_proj.weight")
    up = mat(gu, "up", (n, d), "up_proj.weight")
    down = mat(dn, "all", (d, n), "down_proj.weight")
    b_gate = b_up = b_down = None
    bt = bias.get("gate_up_proj")
    if bt is not None:
        b_gate = reg("gate_proj.bias", _Ref(bt, e, "gate", False), (n,), tensors[bt].dtype)
        b_up = reg("up_proj.bias", _Ref(bt, e, "up", False), (n,), tensors[bt].dtype)
    bt = bias.get("down_proj")
    if bt is not None:
        b_down = reg("down_proj.bias", _Ref(bt, e, "all", False), (d,), tensors[bt].dtype)
    return BlockSpec(name=name, layer=i, family="gpt_oss", down=down, up=up, gate=gate, b_up=b_up, b_gate=b_gate, b_down=b_down,
                     activation=gate_activation(L), value_activation=value_activation(L),
                     activation_source=f"{l_src}; α = {ALPHA} hard-coded in transformers' GptOssExperts",
                     residual=("pre-norm mixture of experts: the layer computes h + Σ_e r_e(h)·B_e(norm(h)) over the router's "
                               "top-k experts e"), d=d, n=n)


def _float(info: TensorInfo, src: str) -> None:
    if info.dtype not in _FLOATS:
        raise InvalidInput(f"{info.file}: tensor {info.name!r} is {info.dtype}, not a plain float (F32, F16, BF16)")


def _matrix(have: Mapping[str, str], what: str, root: str, tensors: Mapping[str, TensorInfo], src: str) -> tuple[str, str | None]:
    """(the tensor, its MXFP4 scales or None) of ``gate_up_proj`` or ``down_proj``."""
    if what in have:
        _float(tensors[have[what]], src)
        return have[what], None
    blocks, scales = have.get(f"{what}_blocks"), have.get(f"{what}_scales")
    if blocks is None:
        raise InvalidInput(f"{src}: incomplete gpt-oss layer {root}: no {what} (or {what}_blocks) tensor; the checkpoint is incomplete")
    if scales is None:
        raise InvalidInput(f"{tensors[blocks].file}: tensor {blocks!r} (MXFP4) has no {root}.{what}_scales beside it; "
                           "the checkpoint is incomplete")
    for t in (blocks, scales):
        if tensors[t].dtype != "U8":
            raise InvalidInput(f"{tensors[t].file}: tensor {t!r} is {tensors[t].dtype}, but MXFP4 blocks and scales are U8")
    bs, ss = tensors[blocks].shape, tensors[scales].shape
    if len(bs) != 4 or bs[-1] != 16 or tuple(bs[:-1]) != tuple(ss):
        raise InvalidInput(f"{tensors[blocks].file}: MXFP4 tensor {blocks!r} {list(bs)} with scales {list(ss)}: expected "
                           "[E, rows, G, 16] and [E, rows, G]")
    return blocks, scales


def _dims(gu: tuple[str, str | None], dn: tuple[str, str | None], root: str, tensors: Mapping[str, TensorInfo], src: str, *,
          hidden: int | None) -> tuple[int, int, int]:
    """(E, I, H) from the shapes of gate_up and down, checked against each other and config.json."""
    def logical(t: tuple[str, str | None]) -> tuple[int, int, int]:
        """[E, out, in] of a matrix (plain ones are stored [E, in, out])."""
        s = tensors[t[0]].shape
        if t[1] is not None:
            return s[0], s[1], s[2] * 32
        if len(s) != 3:
            raise InvalidInput(f"{tensors[t[0]].file}: tensor {t[0]!r} has shape {list(s)}, expected a stack [E, in, out]")
        return s[0], s[2], s[1]

    E, two_n, d = logical(gu)
    E2, d2, n = logical(dn)
    where = f"{tensors[gu[0]].file}: gpt-oss layer {root}"
    if two_n % 2 or E2 != E or d2 != d or two_n != 2 * n:
        raise InvalidInput(f"{where}: gate_up {list(tensors[gu[0]].shape)} and down {list(tensors[dn[0]].shape)} do not fit E experts "
                           "of gate_up [E, H, 2I] and down [E, I, H] (MXFP4: [E, 2I, H/32, 16] and [E, H, I/32, 16])")
    if hidden is not None and d != hidden:
        raise InvalidInput(f"{where}: the experts have hidden size {d} but config.json gives hidden_size {hidden}; "
                           "the weights do not match the config")
    if E < 1 or n < 1 or d < 1:
        raise InvalidInput(f"{where}: empty expert tensors (E = {E}, I = {n}, H = {d})")
    return E, n, d


__all__ = ["ALPHA", "DEFAULT_LIMIT", "FP4_VALUES", "GptOssSource", "dequantize_mxfp4", "gate_activation", "is_gpt_oss",
           "read_gpt_oss", "value_activation"]
