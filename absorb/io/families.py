"""Which tensors of a checkpoint form which MLP block: family detection by tensor names.

A checkpoint is a flat map from tensor names to arrays. Each model family names its MLP
projections in its own way (``/work/shared/checkpoints.md`` is the table this module
implements): LLaMA's ``layers.{i}.mlp.gate_proj``, GPT-2's ``h.{i}.mlp.c_fc`` stored
transposed (``Conv1D`` is ``[in, out]``), T5's ``DenseReluDense.wi_0``/``wi_1``, Phi-3's
fused ``gate_up_proj``, Mixtral's ``block_sparse_moe.experts.{e}.w1``… Prefixes vary
(``model.``, ``transformer.``, ``bert.``, ``language_model.``, none), so every rule matches
by *suffix* and a regular expression on the module path that holds the projections.

Only names and shapes are used here; no weight is read. The result is a tuple of
:class:`BlockSpec` — which tensor plays which role, the orientation, the activation and
where it came from, the norm that precedes the MLP (for ``--fold-norm``) and how the
transformer wires its residual — validated so that the loader can read layer by layer
without further surprises.

The activation is **never guessed**: it comes from ``--activation``, else from
``config.json`` (``hidden_act``, ``hidden_activation``, ``activation_function``,
``activation``, ``feed_forward_proj``), else — only where the original code hard-codes it
(Meta's LLaMA ``feed_forward.w1/w2/w3``: SiLU) — from the layout; otherwise the input is
refused with the usual value named. Several families share names with different
activations (LLaMA's SiLU and Gemma's tanh-GELU; GPT-NeoX's GELU and Persimmon's ReLU²), so
a wrong guess would decide a different function.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Literal, Mapping

from absorb._errors import InvalidInput
from absorb.model.activations import get_activation

Role = Literal["up", "down", "gate", "gate_up"]
Shapes = Mapping[str, tuple[int, ...]]

# ----------------------------------------------------------------------------------------
# Family table (checkpoints.md). ``container`` fullmatches the module path that holds the
# projections; its group ``root`` is the transformer layer (where the norms live), ``i`` the
# layer index and ``e`` the expert index where there is one.
# ----------------------------------------------------------------------------------------

_PRE = r"(?:.+\.)?"
_LAYERS = _PRE + r"layers\.(?P<i>\d+)"


@dataclass(frozen=True)
class Family:
    """One naming scheme of MLP projections (a row of checkpoints.md)."""

    key: str
    label: str
    container: str
    roles: tuple[tuple[Role, str], ...]
    act_keys: tuple[str, ...]
    """config.json keys that name the activation, in order of precedence."""
    usual: str
    """The activation this layout usually has (named in messages, never assumed)."""
    norms: tuple[str, ...]
    """Module paths (relative to the layer root) of the norm that precedes the MLP, in order."""
    transposed: bool = False
    """Stored ``[in, out]`` (GPT-2's ``Conv1D``) instead of ``nn.Linear``'s ``[out, in]``."""
    hard_coded: str | None = None
    """The activation the original code hard-codes (used when there is no config.json)."""
    config_default: Mapping[str, str] = field(default_factory=dict)
    """HF configuration-class defaults by ``model_type``, used when config.json omits the key."""

    @property
    def gated(self) -> bool:
        return any(r in ("gate", "gate_up") for r, _ in self.roles)

    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.container)


FAMILIES: tuple[Family, ...] = (
    Family("llama", "LLaMA / Mistral / Qwen / Gemma (gate_proj, up_proj, down_proj)",
           rf"(?P<root>{_LAYERS})\.mlp", (("gate", "gate_proj"), ("up", "up_proj"), ("down", "down_proj")),
           ("hidden_act",), "silu (Gemma: gelu_pytorch_tanh)", ("pre_feedforward_layernorm", "post_attention_layernorm"),
           config_default={"llama": "silu", "mistral": "silu", "qwen2": "silu", "qwen3": "silu"}),
    Family("meta", "LLaMA, Meta original (feed_forward.w1 gate, w3 up, w2 down)",
           rf"(?P<root>{_LAYERS})\.feed_forward", (("gate", "w1"), ("up", "w3"), ("down", "w2")),
           ("hidden_act",), "silu", ("ffn_norm",), hard_coded="silu"),
    Family("moe", "Qwen-MoE / DeepSeek experts (mlp.experts.{e}, mlp.shared_expert(s))",
           rf"(?P<root>{_LAYERS})\.mlp\.(?:experts\.(?P<e>\d+)|shared_experts?)",
           (("gate", "gate_proj"), ("up", "up_proj"), ("down", "down_proj")),
           ("hidden_act",), "silu", ("post_attention_layernorm",),
           config_default={"qwen2_moe": "silu", "qwen3_moe": "silu", "deepseek_v2": "silu", "deepseek_v3": "silu"}),
    Family("mixtral", "Mixtral experts (block_sparse_moe.experts.{e}: w1 gate, w3 up, w2 down)",
           rf"(?P<root>{_LAYERS})\.block_sparse_moe\.experts\.(?P<e>\d+)", (("gate", "w1"), ("up", "w3"), ("down", "w2")),
           ("hidden_act",), "silu", ("post_attention_layernorm",), config_default={"mixtral": "silu"}),
    Family("phi3", "Phi-3 (fused gate_up_proj: rows 0:I gate, I:2I up)",
           rf"(?P<root>{_LAYERS})\.mlp", (("gate_up", "gate_up_proj"), ("down", "down_proj")),
           ("hidden_act",), "silu", ("post_attention_layernorm",), config_default={"phi3": "silu"}),
    Family("nemotron", "Nemotron (up_proj, down_proj, ungated)",
           rf"(?P<root>{_LAYERS})\.mlp", (("up", "up_proj"), ("down", "down_proj")),
           ("hidden_act",), "relu2", ("post_attention_layernorm",), config_default={"nemotron": "relu2"}),
    Family("gpt2", "GPT-2 (Conv1D c_fc, c_proj stored [in, out])",
           rf"(?P<root>{_PRE}h\.(?P<i>\d+))\.mlp", (("up", "c_fc"), ("down", "c_proj")),
           ("activation_function",), "gelu_new", ("ln_2",), transposed=True,
           config_default={"gpt2": "gelu_new", "gpt_bigcode": "gelu_pytorch_tanh"}),
    Family("neox", "GPT-NeoX / Pythia / Persimmon (dense_h_to_4h, dense_4h_to_h)",
           rf"(?P<root>{_LAYERS})\.mlp", (("up", "dense_h_to_4h"), ("down", "dense_4h_to_h")),
           ("hidden_act",), "gelu (Persimmon: relu2)", ("post_attention_layernorm",),
           config_default={"gpt_neox": "gelu", "persimmon": "relu2"}),
    Family("falcon", "Falcon / BLOOM (h.{i}.mlp.dense_h_to_4h, dense_4h_to_h)",
           rf"(?P<root>{_PRE}h\.(?P<i>\d+))\.mlp", (("up", "dense_h_to_4h"), ("down", "dense_4h_to_h")),
           ("activation", "hidden_act"), "gelu", ("ln_mlp", "post_attention_layernorm", "input_layernorm"),
           config_default={"falcon": "gelu"}),
    Family("opt", "OPT (layers.{i}.fc1, fc2; also BART, Whisper)",
           rf"(?P<root>{_LAYERS})", (("up", "fc1"), ("down", "fc2")),
           ("activation_function", "hidden_act"), "relu (OPT)", ("final_layer_norm",), config_default={"opt": "relu"}),
    Family("phi", "Phi-1/1.5/2 (mlp.fc1, fc2; also CLIP/SigLIP)",
           rf"(?P<root>{_LAYERS})\.mlp", (("up", "fc1"), ("down", "fc2")),
           ("hidden_act",), "gelu_new (Phi)", ("post_attention_layernorm", "layer_norm2", "input_layernorm"),
           config_default={"phi": "gelu_new"}),
    Family("bert", "BERT / RoBERTa / ViT (intermediate.dense, output.dense)",
           rf"(?P<root>{_PRE}layer\.(?P<i>\d+))", (("up", "intermediate.dense"), ("down", "output.dense")),
           ("hidden_act",), "gelu", ("layernorm_after", "attention.output.LayerNorm"),
           config_default={"bert": "gelu", "roberta": "gelu", "vit": "gelu", "xlm-roberta": "gelu"}),
    Family("t5", "T5 v1.0 (DenseReluDense.wi, wo)",
           rf"(?P<root>{_PRE}block\.(?P<i>\d+)\.layer\.\d+)\.DenseReluDense", (("up", "wi"), ("down", "wo")),
           ("feed_forward_proj",), "relu", ("layer_norm",), config_default={"t5": "relu"}),
    Family("t5_gated", "T5 v1.1 / Flan-T5 / mT5 (DenseReluDense.wi_0 gate, wi_1 value, wo)",
           rf"(?P<root>{_PRE}block\.(?P<i>\d+)\.layer\.\d+)\.DenseReluDense",
           (("gate", "wi_0"), ("up", "wi_1"), ("down", "wo")),
           ("feed_forward_proj",), "gated-gelu (gelu_new)", ("layer_norm",), config_default={"t5": "relu"}),
)
FAMILY_BY_KEY = {f.key: f for f in FAMILIES}

# model_type → the layouts such a model may have (a cheap guard against incomplete
# checkpoints: a LLaMA whose gate_proj is missing must not be read as an ungated block).
_EXPECTED: dict[str, frozenset[str]] = {}
for _keys, _types in (
    ({"llama"}, ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "gemma3_text")),
    ({"mixtral"}, ("mixtral",)),
    ({"moe", "llama"}, ("qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3")),
    ({"phi3"}, ("phi3",)),
    ({"nemotron"}, ("nemotron",)),
    ({"gpt2"}, ("gpt2", "gpt_bigcode")),
    ({"neox"}, ("gpt_neox", "persimmon")),
    ({"falcon"}, ("falcon", "bloom")),
    ({"opt"}, ("opt",)),
    ({"phi"}, ("phi",)),
    ({"bert"}, ("bert", "roberta", "xlm-roberta", "vit")),
    ({"t5", "t5_gated"}, ("t5", "mt5", "umt5")),
):
    for _t in _types:
        _EXPECTED[_t] = frozenset(_keys)

# Norm formulas. Gemma's RMSNorm and Nemotron's LayerNorm1P multiply by (1 + w); the
# others by w. For the LLaMA-style names the model_type decides (Gemma shares them).
_ONE_PLUS = frozenset({"gemma", "gemma2", "gemma3", "gemma3_text", "nemotron"})
_PLAIN_GAIN_LLAMA = frozenset({"llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe",
                               "deepseek_v2", "deepseek_v3", "phi3"})
_NEEDS_MODEL_TYPE = frozenset({"llama", "nemotron", "moe", "phi3", "mixtral"})

# fc1/fc2 encoder-decoders whose layers are post-LN, as in BART: the MLP reads the output of the
# attention's norm (the cross-attention's in a decoder layer) and final_layer_norm follows the MLP.
# (mBART, Pegasus, M2M100/NLLB, Blenderbot, Whisper and OPT by default are pre-LN.)
_POST_LN_FC = frozenset({"bart", "marian", "blenderbot-small", "plbart", "mvp", "led"})

_HIDDEN_KEYS = ("hidden_size", "n_embd", "d_model", "dim")
_ACT_KEYS_ANY = ("hidden_act", "hidden_activation", "activation_function", "activation")

# Transformers activation names that the registry spells differently.
_HF_ALIASES = {"gelu_python": "gelu", "gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh", "gelu_fast": "gelu_tanh"}


@dataclass(frozen=True)
class NormSpec:
    """The norm that precedes the MLP: ``y = (offset + w) ⊙ normalise(x) + bias``."""

    weight: str
    bias: str | None
    offset: float
    kind: Literal["rms", "layer"]

    def describe(self) -> str:
        gain = "(1 + w)" if self.offset else "w"
        what = "LayerNorm" if self.kind == "layer" else "RMSNorm"
        return f"{what} {self.weight.rsplit('.', 1)[0]} (gain {gain}{', bias β' if self.bias else ''})"


@dataclass(frozen=True)
class BlockSpec:
    """One MLP block of a checkpoint: which tensor plays which role, and how to read it."""

    name: str
    layer: int
    family: str
    down: str
    up: str | None = None
    gate: str | None = None
    gate_up: str | None = None
    b_up: str | None = None
    b_gate: str | None = None
    b_down: str | None = None
    transposed: bool = False
    activation: str = ""
    activation_source: str = ""
    norm: NormSpec | None = None
    residual: str = ""
    d: int = 0
    n: int = 0

    @property
    def gated(self) -> bool:
        return self.gate is not None or self.gate_up is not None

    def tensors(self) -> tuple[str, ...]:
        """Every tensor this block reads (the norm's only when folding)."""
        return tuple(t for t in (self.up, self.gate, self.gate_up, self.down, self.b_up, self.b_gate, self.b_down) if t)


@dataclass(frozen=True)
class ManualRoles:
    """Roles named by hand: patterns with ``{i}`` (layer) and optionally ``{e}`` (expert)."""

    up: str
    down: str
    gate: str | None = None


@dataclass(frozen=True)
class Detection:
    """The blocks found, with what the report must say about them."""

    blocks: tuple[BlockSpec, ...]
    families: tuple[str, ...]
    model_type: str | None
    notes: tuple[str, ...] = ()


# ----------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------

def _natural_key(name: str) -> tuple[object, ...]:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


def parse_layers(text: str) -> frozenset[int]:
    """``"0-3,7"`` → {0, 1, 2, 3, 7}; a one-line error on anything else."""
    out: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not m:
            raise InvalidInput(f"--layers {text!r}: {part!r} is not a layer number or range; write e.g. 0-3,7")
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) is not None else a
        if b < a:
            raise InvalidInput(f"--layers {text!r}: range {part!r} runs backwards; write {b}-{a}")
        out.update(range(a, b + 1))
    return frozenset(out)


def config_section(config: Mapping[str, object] | None, tensor: str) -> Mapping[str, object] | None:
    """The part of config.json that describes the tower ``tensor`` belongs to.

    Multimodal configs nest the language model under ``text_config`` and the vision tower
    under ``vision_config``; their keys override the top level for that tower.
    """
    if config is None:
        return None
    sub = config.get(_section_key(tensor))
    if isinstance(sub, Mapping):
        return {**config, **sub}
    return config


def _section_key(tensor: str) -> str:
    return "vision_config" if re.search(r"(^|\.)(vision|visual)", tensor) else "text_config"


def _model_type(cfg: Mapping[str, object] | None) -> str | None:
    mt = None if cfg is None else cfg.get("model_type")
    return mt if isinstance(mt, str) else None


def _hidden_size(cfg: Mapping[str, object] | None) -> int | None:
    if cfg is None:
        return None
    for k in _HIDDEN_KEYS:
        v = cfg.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return None


def _check_activation_name(name: str, *, source: str, where: str) -> str:
    canon = _HF_ALIASES.get(name, name)
    try:
        get_activation(canon)
    except InvalidInput:
        raise InvalidInput(f"{source}: {where} names activation {name!r}, which absorb does not know; "
                           "pass --activation NAME (a registered name or 'expr:<sympy expression in x>')") from None
    return canon


def _activation(fam: Family, cfg: Mapping[str, object] | None, *, override: str | None, source: str,
                has_config: bool, example: str) -> tuple[str, str]:
    """(activation name, where it came from) for one family, or a one-line refusal."""
    if override is not None:
        get_activation(override)  # raises InvalidInput with the registry's message
        return override, "--activation"
    mt = _model_type(cfg)
    if cfg is not None:
        if fam.key in ("t5", "t5_gated"):
            return _t5_activation(fam, cfg, source=source)
        if fam.key == "llama" and mt is not None and mt.startswith("gemma"):
            v = cfg.get("hidden_activation")
            if isinstance(v, str):
                return _check_activation_name(v, source=source, where="config.json hidden_activation"), f"config.json hidden_activation = {v!r}"
            # transformers' Gemma ignores the legacy hidden_act and uses the tanh GELU
            return "gelu_tanh", "Gemma: transformers uses gelu_pytorch_tanh when hidden_activation is absent"
        if fam.key == "falcon" and mt == "bloom":
            # BloomConfig has no activation field: BloomMLP always calls the tanh GELU
            return "gelu_tanh", "BLOOM: transformers hard-codes the tanh GELU (bloom_gelu_forward)"
        for key in fam.act_keys + tuple(k for k in _ACT_KEYS_ANY if k not in fam.act_keys):
            v = cfg.get(key)
            if isinstance(v, str):
                return _check_activation_name(v, source=source, where=f"config.json {key}"), f"config.json {key} = {v!r}"
        if mt in fam.config_default:
            v = fam.config_default[mt]
            return _check_activation_name(v, source=source, where="the config default"), f"transformers' default for model_type {mt!r} ({v})"
    if fam.hard_coded is not None:
        return fam.hard_coded, f"hard-coded in the original {fam.label.split(' (')[0]} code"
    why = "no config.json beside the checkpoint" if not has_config else "config.json names no activation"
    usual = fam.usual.split(" ")[0]
    raise InvalidInput(f"{source}: {why}, so the activation of the {fam.label} layout (e.g. {example}; usually {fam.usual}) "
                       f"is not known; put the model's config.json beside it or pass --activation {usual}")


def _t5_activation(fam: Family, cfg: Mapping[str, object], *, source: str) -> tuple[str, str]:
    """T5Config: ``feed_forward_proj`` is ``[gated-]ACT``; ``gated-gelu`` means gelu_new."""
    ffp = cfg.get("feed_forward_proj", "relu")
    if not isinstance(ffp, str):
        raise InvalidInput(f"{source}: config.json feed_forward_proj = {ffp!r} is not a string such as 'relu' or 'gated-gelu'")
    parts = ffp.split("-")
    gated = len(parts) > 1 and parts[0] == "gated"
    if len(parts) > 2 or (len(parts) == 2 and not gated):
        raise InvalidInput(f"{source}: config.json feed_forward_proj = {ffp!r} is not of the form ACT or gated-ACT")
    if gated != (fam.key == "t5_gated"):
        have = "wi_0/wi_1 (gated)" if fam.key == "t5_gated" else "wi (ungated)"
        raise InvalidInput(f"{source}: config.json feed_forward_proj = {ffp!r} but the tensors are {have}; the config does not match the weights")
    act = "gelu_tanh" if ffp == "gated-gelu" else parts[-1]
    return _check_activation_name(act, source=source, where="config.json feed_forward_proj"), f"config.json feed_forward_proj = {ffp!r}" + (" (transformers maps it to gelu_new)" if ffp == "gated-gelu" else "")


def _residual(fam: Family, cfg: Mapping[str, object] | None, root: str, names: Shapes) -> str:
    """How the transformer wires this MLP's residual (a sentence for the report)."""
    has = lambda mod: f"{root}.{mod}.weight" in names  # noqa: E731
    nocfg = " (no config.json: transformers' default assumed)" if cfg is None else ""
    if fam.key == "neox":
        if _model_type(cfg) == "persimmon":
            return "pre-norm: the layer computes h + B(norm(h))"
        par = True if cfg is None else bool(cfg.get("use_parallel_residual", True))
        return ("parallel residual: the layer computes h + attn(norm₁(h)) + B(norm₂(h))" + nocfg) if par else "pre-norm: the layer computes h + B(norm(h))"
    if fam.key == "falcon" and _model_type(cfg) == "bloom":
        if cfg is not None and cfg.get("apply_residual_connection_post_layernorm", False):
            return "pre-norm with the residual taken after the norm: the layer computes norm(h) + B(norm(h))"
        return "pre-norm: the layer computes h + B(norm(h))"
    if fam.key == "falcon":
        if has("ln_mlp"):
            return "parallel attention/MLP: the layer computes h + attn(ln_attn(h)) + B(ln_mlp(h))"
        par = True if cfg is None else bool(cfg.get("parallel_attn", True))
        return ("parallel attention/MLP: the layer computes h + attn(norm(h)) + B(norm(h))" + nocfg) if par else "pre-norm: the layer computes h + B(norm(h))"
    if fam.key == "phi":
        if has("input_layernorm") and not has("post_attention_layernorm"):
            return "parallel residual: the layer computes h + attn(norm(h)) + B(norm(h))"
        return "pre-norm: the layer computes h + B(norm(h))"
    if fam.key == "bert":
        return "pre-norm: the layer computes h + B(norm(h))" if has("layernorm_after") else "post-norm: the layer computes norm(h + B(h)), h itself the output of a norm"
    if fam.key == "opt" and _model_type(cfg) in _POST_LN_FC:
        return "post-norm: the layer computes norm(h + B(h)), h itself the output of a norm"
    if fam.key == "opt":
        pre = True if cfg is None else bool(cfg.get("do_layer_norm_before", True))
        # without config.json a BART-style post-LN model cannot be told from OPT/Whisper: say it is assumed
        return ("pre-norm: the layer computes h + B(norm(h))" + nocfg) if pre else "post-norm: the layer computes norm(h + B(h))"
    if has("post_feedforward_layernorm"):
        return "pre-norm with a post-MLP norm: the layer computes h + norm_post(B(norm_pre(h)))"
    return "pre-norm: the layer computes h + B(norm(h))"


def _norm(fam: Family, cfg: Mapping[str, object] | None, root: str, names: Shapes, *, source: str,
          fold: bool, block: str) -> NormSpec | None:
    """The norm preceding the MLP, or None; with ``fold`` a one-line error when it is not known."""
    cands = list(fam.norms)
    if fam.key == "opt" and cfg is not None and not cfg.get("do_layer_norm_before", True):
        cands = ["self_attn_layer_norm"]  # post-LN OPT (350m): the attention's norm feeds the MLP
    if fam.key == "opt" and _model_type(cfg) in _POST_LN_FC:
        cands = ["encoder_attn_layer_norm", "self_attn_layer_norm"]  # BART: a decoder layer's cross-attention norm feeds its MLP
    found = next((c for c in cands if f"{root}.{c}.weight" in names), None)
    if not fold:
        return None
    if found is None:
        looked = ", ".join(f"{root}.{c}.weight" for c in cands)
        raise InvalidInput(f"{source}: --fold-norm: no norm found before {block} (looked for {looked}); drop --fold-norm")
    mt = _model_type(cfg)
    if fam.key in _NEEDS_MODEL_TYPE and fam.key != "mixtral":
        if mt in _ONE_PLUS:
            offset = 1.0
        elif mt in _PLAIN_GAIN_LLAMA:
            offset = 0.0
        else:
            why = "no config.json gives the model_type" if mt is None else f"model_type {mt!r} is not one absorb knows the norm formula of"
            raise InvalidInput(f"{source}: --fold-norm: {why}, and this naming is shared by norms with gain w (LLaMA) and 1 + w "
                               "(Gemma, Nemotron); add config.json or drop --fold-norm")
    else:
        offset = 0.0
    w = f"{root}.{found}.weight"
    b = f"{root}.{found}.bias"
    has_b = b in names
    kind: Literal["rms", "layer"] = "layer" if (has_b or fam.key in ("gpt2", "neox", "falcon", "opt", "phi", "bert") or mt == "nemotron") else "rms"
    return NormSpec(weight=w, bias=b if has_b else None, offset=offset, kind=kind)


def _shape_error(source: str, tensor: str, shape: tuple[int, ...], want: str) -> InvalidInput:
    return InvalidInput(f"{source}: tensor {tensor!r} has shape {list(shape)}, expected {want}")


def _dims(spec: BlockSpec, names: Shapes, *, source: str, hidden: int | None, fam: Family | None) -> BlockSpec:
    """Check the shapes of every role (no data read) and fix ``d``, ``n`` and the orientation."""
    up_t = spec.up if spec.up is not None else spec.gate_up
    shp = names[up_t]
    dshp = names[spec.down]
    if len(shp) != 2 or len(dshp) != 2:
        bad, s = (up_t, shp) if len(shp) != 2 else (spec.down, dshp)
        raise _shape_error(source, bad, s, "a 2-D weight matrix")
    transposed = spec.transposed
    if hidden is not None:
        d_linear = shp[1]
        d_conv = shp[0]
        if fam is not None and fam.key == "gpt2":
            # GPT-2 stores Conv1D [in, out]; GPT-BigCode uses nn.Linear with the same names.
            if d_conv == hidden and d_linear != hidden:
                transposed = True
            elif d_linear == hidden and d_conv != hidden:
                transposed = False
        elif fam is None:
            transposed = d_conv == hidden and d_linear != hidden
        if (shp[0] if transposed else shp[1]) != hidden:
            raise InvalidInput(f"{source}: tensor {up_t!r} has shape {list(shp)} but config.json gives hidden size {hidden}; "
                               "the weights do not match the config (or are stored transposed)")
    rows, cols = (shp[1], shp[0]) if transposed else shp
    if spec.gate_up is not None:
        if rows % 2:
            raise _shape_error(source, up_t, shp, "[2·I, H] with an even number of rows (gate rows 0:I, up rows I:2I)")
        n, d = rows // 2, cols
    else:
        n, d = rows, cols
    want_down = (n, d) if transposed else (d, n)
    if tuple(dshp) != want_down:
        hint = " (it looks transposed)" if tuple(dshp) == want_down[::-1] and n != d else ""
        raise _shape_error(source, spec.down, dshp, f"{list(want_down)} to match {up_t!r} {list(shp)}{hint}")
    if spec.gate is not None and tuple(names[spec.gate]) != tuple(shp):
        raise _shape_error(source, spec.gate, names[spec.gate], f"{list(shp)} (the shape of {up_t!r})")
    for t, k in ((spec.b_up, n), (spec.b_gate, n), (spec.b_down, d)):
        if t is not None and tuple(names[t]) != (k,):
            raise _shape_error(source, t, names[t], f"[{k}]")
    if spec.gate_up is not None and spec.b_up is not None and tuple(names[spec.b_up]) != (2 * n,):
        raise _shape_error(source, spec.b_up, names[spec.b_up], f"[{2 * n}] (fused gate/up bias)")
    if spec.norm is not None:
        for t in (spec.norm.weight, spec.norm.bias):
            if t is not None and tuple(names[t]) != (d,):
                raise _shape_error(source, t, names[t], f"[{d}] (one gain per model dimension, d = {d})")
    return replace(spec, transposed=transposed, d=d, n=n)


def _gpt2_hidden_from_norm(names: Shapes, root: str, up: str) -> int | None:
    """Without config.json, ``ln_2``'s length tells GPT-2's Conv1D ``c_fc`` [H, I] from GPT-BigCode's
    ``nn.Linear`` [I, H] (same names); None unless it matches exactly one side of ``c_fc``."""
    ln = names.get(f"{root}.ln_2.weight")
    shp = names[up]
    if ln is None or len(ln) != 1 or len(shp) != 2 or (ln[0] == shp[0]) == (ln[0] == shp[1]):
        return None
    return int(ln[0])


def _bias(names: Shapes, weight: str | None) -> str | None:
    if weight is None:
        return None
    b = weight[: -len(".weight")] + ".bias" if weight.endswith(".weight") else weight + ".bias"
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


def unknown_layout(names: Shapes, *, source: str) -> InvalidInput:
    """The one-line refusal for an unrecognised layout, with the roles-by-hand recipe."""
    mlp = _mlp_looking(names)
    if mlp:
        shown = ", ".join(f"{n} {list(names[n])}" for n in mlp[:4]) + (f" (and {len(mlp) - 4} more)" if len(mlp) > 4 else "")
        ex = [re.sub(r"\d+", "{i}", n, count=1) for n in mlp[:2]]
        recipe = f"--up '{ex[0]}' --down '{ex[-1]}' [--gate PATTERN] --activation NAME"
        return InvalidInput(f"{source}: no known MLP layout; MLP-looking tensors: {shown}; name the roles by hand, e.g. {recipe} "
                            "({i} stands for the layer number)")
    two_d = sum(1 for s in names.values() if len(s) == 2)
    return InvalidInput(f"{source}: no known MLP layout and no MLP-looking tensor among {len(names)} tensors ({two_d} of them 2-D); "
                        "name the roles by hand with --up, --down [--gate] patterns ({i} for the layer) and --activation NAME")


def detect(names: Shapes, config: Mapping[str, object] | None, *, source: str, activation: str | None = None,
           manual: ManualRoles | None = None, layers: frozenset[int] | None = None, fold_norm: bool = False) -> Detection:
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
    if layers is not None:
        present = sorted({s.layer for s in specs})
        specs = [s for s in specs if s.layer in layers]
        if not specs:
            span = f"{present[0]}-{present[-1]}" if present else "none"
            raise InvalidInput(f"{source}: --layers selects no block; the checkpoint's MLP layers are {span}")
    specs.sort(key=lambda s: _natural_key(s.name))
    notes = []
    if any(s.transposed for s in specs):
        notes.append("Conv1D weights stored [in, out] were transposed to [out, in]")
    if any(s.gate_up for s in specs):
        notes.append("fused gate_up_proj split: rows 0:I are the gate, rows I:2I the up projection")
    return Detection(blocks=tuple(specs), families=fams, model_type=_model_type(config), notes=tuple(notes))


def _by_family(names: Shapes, config: Mapping[str, object] | None, *, source: str, activation: str | None,
               fold_norm: bool) -> tuple[list[BlockSpec], tuple[str, ...]]:
    patterns = [(f, f.pattern()) for f in FAMILIES]
    found: dict[tuple[str, str], dict[Role, str]] = {}
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
    # Per container: the complete family with the most roles (gate+up+down beats up+down).
    by_container: dict[str, list[str]] = {}
    for fkey, container in found:
        by_container.setdefault(container, []).append(fkey)
    chosen: list[tuple[Family, str]] = []
    for container, fkeys in by_container.items():
        complete = [FAMILY_BY_KEY[k] for k in fkeys if len(found[(k, container)]) == len(FAMILY_BY_KEY[k].roles)]
        if not complete:
            k = max(fkeys, key=lambda k: len(found[(k, container)]))
            fam = FAMILY_BY_KEY[k]
            have = sorted(found[(k, container)].values())
            missing = [f"{container}.{suf}.weight" for r, suf in fam.roles if r not in found[(k, container)]]
            if fam.key in ("opt", "bert") and len(have) == 1:
                continue  # a lone fc1/output.dense elsewhere (an attention output, a head): not an MLP
            raise InvalidInput(f"{source}: incomplete MLP block {container}: has {', '.join(have)} but no {', '.join(missing)}; "
                               "a tensor or shard is missing from the checkpoint")
        complete.sort(key=lambda f: -len(f.roles))
        if len(complete) > 1 and len(complete[0].roles) == len(complete[1].roles):
            raise InvalidInput(f"{source}: {container} fits both the {complete[0].label} and the {complete[1].label} layouts; "
                               "name the roles by hand with --up/--down/--gate")
        chosen.append((complete[0], container))
    if not chosen:
        raise unknown_layout(names, source=source)

    specs: list[BlockSpec] = []
    act_cache: dict[tuple[str, int], tuple[str, str]] = {}
    for fam, container in chosen:
        m = matches[(fam.key, container)]
        roles = found[(fam.key, container)]
        cfg = config_section(config, container)
        mt = _model_type(cfg)
        if mt in _EXPECTED and fam.key not in _EXPECTED[mt]:
            raise InvalidInput(f"{source}: config.json says model_type {mt!r} but {container} has the {fam.label} layout; "
                               "the config does not match the weights (or a tensor is missing)")
        ck = (fam.key, _section_key(container))
        if ck not in act_cache:
            act_cache[ck] = _activation(fam, cfg, override=activation, source=source, has_config=config is not None,
                                        example=roles["down"])
        act, act_src = act_cache[ck]
        root = m.group("root")
        spec = BlockSpec(
            name=container, layer=int(m.group("i")), family=fam.key, down=roles["down"], up=roles.get("up"),
            gate=roles.get("gate"), gate_up=roles.get("gate_up"),
            b_up=_bias(names, roles.get("up") or roles.get("gate_up")), b_gate=_bias(names, roles.get("gate")),
            b_down=_bias(names, roles["down"]), transposed=fam.transposed, activation=act, activation_source=act_src,
            norm=_norm(fam, cfg, root, names, source=source, fold=fold_norm, block=container),
            residual=_residual(fam, cfg, root, names))
        hidden = _hidden_size(cfg)
        if hidden is None and fam.key == "gpt2":
            hidden = _gpt2_hidden_from_norm(names, root, roles["up"])
        specs.append(_dims(spec, names, source=source, hidden=hidden, fam=fam))
    fams = tuple(sorted({s.family for s in specs}, key=lambda k: [f.key for f in FAMILIES].index(k)))
    return specs, fams


def _role_regex(pattern: str, flag: str) -> re.Pattern[str]:
    if "{i}" not in pattern and "{e}" not in pattern and "{" in pattern:
        raise InvalidInput(f"{flag} {pattern!r}: only {{i}} (layer) and {{e}} (expert) may stand in braces")
    rx = re.escape(pattern).replace(r"\{i\}", r"(?P<i>\d+)").replace(r"\{e\}", r"(?P<e>\d+)")
    if not pattern.endswith(".weight"):
        rx += r"\.weight"
    return re.compile(rx)


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
    cfg = config
    if activation is not None:
        get_activation(activation)
        act, src = activation, "--activation"
    else:
        v = next(((k, cfg[k]) for k in _ACT_KEYS_ANY if cfg is not None and isinstance(cfg.get(k), str)), None)
        if v is None:
            raise InvalidInput(f"{source}: roles named by hand need the activation: pass --activation NAME (config.json names none)")
        act, src = _check_activation_name(v[1], source=source, where=f"config.json {v[0]}"), f"config.json {v[0]} = {v[1]!r}"
    specs = []
    for (i, e), roles in groups.items():
        missing = [r for r in rx if r not in roles]
        if missing:
            have = ", ".join(sorted(roles.values()))
            raise InvalidInput(f"{source}: {have} matched but no tensor matches --{missing[0]} "
                               f"{getattr(manual, missing[0])!r} for layer {i}; check the pattern")
        tensors = list(roles.values())
        name = _common_prefix(tensors) or roles["up"]
        spec = BlockSpec(name=name, layer=int(i) if i is not None else 0, family="manual", down=roles["down"], up=roles["up"],
                         gate=roles.get("gate"), b_up=_bias(names, roles["up"]), b_gate=_bias(names, roles.get("gate")),
                         b_down=_bias(names, roles["down"]), activation=act, activation_source=src,
                         residual="roles named by hand: the transformer's residual wiring is not known")
        specs.append(_dims(spec, names, source=source, hidden=_hidden_size(config_section(config, name)), fam=None))
    names_seen = [s.name for s in specs]
    if len(set(names_seen)) != len(names_seen):
        specs = [replace(s, name=f"{s.name}[{s.layer}]") for s in specs]
    return specs


__all__ = ["FAMILIES", "BlockSpec", "Detection", "Family", "ManualRoles", "NormSpec", "config_section", "detect",
           "parse_layers", "unknown_layout"]
