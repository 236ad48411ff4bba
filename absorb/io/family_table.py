"""The family table: how each model family names its MLP, and how its layers differ, as data.

One :class:`Family` per naming scheme of MLP projections (the table "Families" of docs/checkpoints.md).
Everything that differs between families — which config.json keys name the activation,
model types whose code hard-codes one, where the norm before the MLP sits and which formula
it has, how the layer wires its residual, the orientation of the stored weights — is a field
of the family, read by :mod:`absorb.io.family_config` and :mod:`absorb.io.families`; no code
branches on a family's key. The result types of detection (:class:`BlockSpec`,
:class:`NormSpec`, :class:`Detection`, :class:`ManualRoles`) live here too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Role = Literal["up", "down", "gate", "gate_up"]
Shapes = Mapping[str, tuple[int, ...]]

# ``container`` fullmatches the module path that holds the projections; its group ``root``
# is the transformer layer (where the norms live), ``i`` the layer index and ``e`` the
# expert index where there is one.
_PRE = r"(?:.+\.)?"
_LAYERS = _PRE + r"layers\.(?P<i>\d+)"


@dataclass(frozen=True)
class When:
    """A condition on one layer of a checkpoint; every part given must hold.

    ``model_type`` fullmatches config.json's ``model_type`` (none: never holds); ``has`` and
    ``lacks`` name modules (relative to the layer root) with / without a ``.weight``;
    ``flag`` is a config.json key whose truth must be ``flag_is`` — ``flag_default`` when
    config.json omits it or there is no config.json.
    """

    model_type: str | None = None
    has: tuple[str, ...] = ()
    lacks: tuple[str, ...] = ()
    flag: str | None = None
    flag_default: bool = True
    flag_is: bool = True


@dataclass(frozen=True)
class Wiring:
    """How a layer wires its MLP's residual (a sentence for the report), when ``when`` holds.

    A rule that holds through a ``flag`` without config.json says that the default was assumed.
    """

    text: str
    when: When = When()


@dataclass(frozen=True)
class ActivationRule:
    """Model types whose code fixes the activation: config.json ``key`` (if a string), else ``fixed``."""

    when: When
    key: str | None
    fixed: str
    why: str
    names: Mapping[str, str] | None = None
    """The model's own table from ``key``'s values to activations (GPT-1's ``ACT_FNS``), where it has
    one instead of transformers' ``ACT2FN``; a value outside it is refused (the model would not load)."""
    table: str = ""
    """How reports name that table."""


@dataclass(frozen=True)
class Refusal:
    """A model sharing these names whose layer wires its MLP into a block absorb does not read from this
    format (``why``), when ``when`` holds: refused, with ``fix``, rather than decided as x + B(x)."""

    when: When
    why: str
    fix: str


@dataclass(frozen=True)
class NormRule:
    """Where the norm that feeds the MLP sits when ``when`` holds (instead of the family's ``norms``)."""

    when: When
    norms: tuple[str, ...]


PRE_NORM = "pre-norm: the layer computes h + B(norm(h))"
POST_NORM_OF_NORM = "post-norm: the layer computes norm(h + B(h)), h itself the output of a norm"
_POST_MLP_NORM = "pre-norm with a post-MLP norm: the layer computes h + norm_post(B(norm_pre(h)))"
# (Gemma 2/3's post_feedforward_layernorm; GLM-4's post_mlp_layernorm)
DEFAULT_WIRING = (Wiring(_POST_MLP_NORM, When(has=("post_feedforward_layernorm",))),
                  Wiring(_POST_MLP_NORM, When(has=("post_mlp_layernorm",))),
                  Wiring(PRE_NORM))
# A routed expert (or a gated shared expert) is one weighted term of the layer's MLP
_ROUTED = (Wiring("an expert of a mixture-of-experts MLP: the layer computes h + Σₑ pₑ(norm(h))·Bₑ(norm(h)) (pₑ the router's "
                  "weights; a shared expert, where there is one, under its own gate or none), so this block is one weighted "
                  "term of the layer's MLP"),)

_SCALED_BRANCH = ("pre-norm with a scaled branch: the layer computes h + m·B(norm(h)), m its config's residual_multiplier "
                  "(Granite) or scale_depth/√layers (MiniCPM)")

# fc1/fc2 encoder-decoders whose layers are post-LN, as in BART: the MLP reads the output of the
# attention's norm (the cross-attention's in a decoder layer) and final_layer_norm follows the MLP.
# (mBART, Pegasus, M2M100/NLLB, Blenderbot, Whisper and OPT by default are pre-LN.)
_POST_LN_FC = frozenset({"bart", "marian", "blenderbot-small", "plbart", "mvp", "led"})
_POST_LN_FC_TYPES = "|".join(re.escape(t) for t in sorted(_POST_LN_FC))
# fc1/fc2 models known to be pre-LN (final_layer_norm feeds the MLP); others (FSMT, DETR, the time-series
# transformers, fairseq's post-LN default, TrOCR…) are post-LN or unknown: --fold-norm is refused there
_PRE_LN_FC_TYPES = "|".join(re.escape(t) for t in sorted({"opt", "mbart", "pegasus", "pegasus_x", "m2m_100", "blenderbot",
                                                          "whisper", "xglm", "biogpt", "speech_to_text"}))


@dataclass(frozen=True)
class Family:
    """One naming scheme of MLP projections (a row of the table "Families" in docs/checkpoints.md)."""

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
    feed_forward_proj: bool = False
    """The activation is T5's ``feed_forward_proj`` (``[gated-]ACT``), which must agree with the gate."""
    activation_rules: tuple[ActivationRule, ...] = ()
    """Model types sharing these names whose code fixes the activation (tried before ``act_keys``)."""
    wiring: tuple[Wiring, ...] = DEFAULT_WIRING
    """How the layer wires the residual: the first rule that holds (the last always holds)."""
    norm_rules: tuple[NormRule, ...] = ()
    """Layers whose MLP is fed by another norm than ``norms`` (the first rule that holds)."""
    refusals: tuple[Refusal, ...] = ()
    """Models with these names whose block is not x + B(x): refused (the first rule that holds)."""
    fold_types: str | None = None
    """A layout shared by pre- and post-norm models: ``--fold-norm`` takes ``norms`` only where config.json's
    ``model_type`` fullmatches this (or a norm rule holds); None: wherever the layout is found."""
    gain_by_model_type: bool = False
    """The norm names are shared by gains w (LLaMA) and 1 + w (Gemma, Nemotron): the model_type decides."""
    layer_norm: bool = False
    """The norm before the MLP is a LayerNorm (otherwise an RMSNorm unless it has a bias)."""
    orientation_by_shape: bool = False
    """The same names are stored ``[in, out]`` or ``[out, in]`` (GPT-2 / GPT-BigCode): the hidden size decides."""
    hidden_from_norm: str | None = None
    """Without config.json, this norm's length gives the hidden size (to tell the orientation)."""
    lone_role_elsewhere: bool = False
    """One of these names alone (an attention output, a head) is no MLP: skipped, not refused as incomplete."""

    @property
    def gated(self) -> bool:
        return any(r in ("gate", "gate_up") for r, _ in self.roles)

    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.container)


FAMILIES: tuple[Family, ...] = (
    Family("llama", "LLaMA / Mistral / Qwen / Gemma (gate_proj, up_proj, down_proj)",
           rf"(?P<root>{_LAYERS})\.mlp", (("gate", "gate_proj"), ("up", "up_proj"), ("down", "down_proj")),
           ("hidden_act",), "silu (Gemma: gelu_pytorch_tanh)", ("pre_feedforward_layernorm", "post_attention_layernorm"),
           config_default={"llama": "silu", "mistral": "silu", "qwen2": "silu", "qwen3": "silu"},
           # transformers' Gemma ignores the legacy hidden_act and uses the tanh GELU
           activation_rules=(ActivationRule(When(model_type="gemma.*"), "hidden_activation", "gelu_tanh",
                                            "Gemma: transformers uses gelu_pytorch_tanh when hidden_activation is absent"),),
           # (what the layer around the MLP computes, said in the report; the block decided is x + B(x) in each case)
           # (MiniCPM-V / -o: the LLM is MiniCPM — scale_depth — in 2.0, Qwen2 or LLaMA 3 since 2.5)
           wiring=(Wiring(_SCALED_BRANCH, When(model_type="granite.*|minicpm|minicpm3")),
                   Wiring(_SCALED_BRANCH, When(model_type="minicpm.*", flag="scale_depth", flag_default=False)),
                   Wiring("parallel: the layer computes h + attn(norm(h)) + B(norm(h))", When(model_type="cohere.*")),
                   Wiring("parallel: the layer computes h + attn(norm(h)) + B(norm(h))",
                          When(model_type="stablelm", flag="use_parallel_residual", flag_default=False)),
                   Wiring("post-MLP norm only: the layer computes h + norm(B(h))", When(model_type="olmo2|olmo3")),
                   *DEFAULT_WIRING),
           # (OLMo 2's post_attention_layernorm normalises the attention's output: no norm feeds its MLP, none is folded)
           norm_rules=(NormRule(When(model_type="olmo2|olmo3"), ()),),
           gain_by_model_type=True),
    Family("meta", "LLaMA, Meta original (feed_forward.w1 gate, w3 up, w2 down)",
           rf"(?P<root>{_LAYERS})\.feed_forward", (("gate", "w1"), ("up", "w3"), ("down", "w2")),
           ("hidden_act",), "silu", ("ffn_norm",), hard_coded="silu"),
    Family("moe", "Qwen-MoE / DeepSeek experts (mlp.experts.{e}, mlp.shared_expert(s))",
           rf"(?P<root>{_LAYERS})\.mlp\.(?:experts\.(?P<e>\d+)|shared_experts?)",
           (("gate", "gate_proj"), ("up", "up_proj"), ("down", "down_proj")),
           ("hidden_act",), "silu", ("post_attention_layernorm",),
           config_default={"qwen2_moe": "silu", "qwen3_moe": "silu", "deepseek_v2": "silu", "deepseek_v3": "silu"},
           wiring=_ROUTED, gain_by_model_type=True),
    Family("mixtral", "Mixtral experts (block_sparse_moe.experts.{e}: w1 gate, w3 up, w2 down)",
           rf"(?P<root>{_LAYERS})\.block_sparse_moe\.experts\.(?P<e>\d+)", (("gate", "w1"), ("up", "w3"), ("down", "w2")),
           ("hidden_act",), "silu", ("post_attention_layernorm",), config_default={"mixtral": "silu"}, wiring=_ROUTED),
    Family("phi3", "Phi-3 (fused gate_up_proj: rows 0:I gate, I:2I up)",
           rf"(?P<root>{_LAYERS})\.mlp", (("gate_up", "gate_up_proj"), ("down", "down_proj")),
           ("hidden_act",), "silu", ("post_attention_layernorm",), config_default={"phi3": "silu"},
           gain_by_model_type=True),
    Family("nemotron", "Nemotron (up_proj, down_proj, ungated)",
           rf"(?P<root>{_LAYERS})\.mlp", (("up", "up_proj"), ("down", "down_proj")),
           ("hidden_act",), "relu2", ("post_attention_layernorm",), config_default={"nemotron": "relu2"},
           gain_by_model_type=True),
    Family("starcoder2", "StarCoder2 (model.layers.{i}.mlp.c_fc, c_proj: nn.Linear)",
           rf"(?P<root>{_LAYERS})\.mlp", (("up", "c_fc"), ("down", "c_proj")),
           ("hidden_act",), "gelu_pytorch_tanh", ("post_attention_layernorm",),
           config_default={"starcoder2": "gelu_pytorch_tanh"}, layer_norm=True),
    Family("gpt2", "GPT-2 (Conv1D c_fc, c_proj stored [in, out])",
           rf"(?P<root>{_PRE}h\.(?P<i>\d+))\.mlp", (("up", "c_fc"), ("down", "c_proj")),
           ("activation_function",), "gelu_new", ("ln_2",), transposed=True,
           config_default={"gpt2": "gelu_new", "gpt_bigcode": "gelu_pytorch_tanh"}, layer_norm=True,
           # GPT-1 (openai-gpt) is post-LN: ln_1 (after the attention) feeds the MLP, ln_2 follows it; its activation is afn
           # (modeling_openai maps afn through its own ACT_FNS, where 'gelu' is gelu_new, the tanh form)
           activation_rules=(ActivationRule(When(model_type="openai-gpt"), "afn", "gelu_tanh",
                                            "GPT-1: OpenAIGPTConfig's afn defaults to 'gelu', which modeling_openai's "
                                            "ACT_FNS maps to gelu_new (the tanh GELU)",
                                            names={"relu": "relu", "silu": "silu", "swish": "silu", "gelu": "gelu_tanh"},
                                            table="modeling_openai's ACT_FNS"),),
           wiring=(Wiring(POST_NORM_OF_NORM, When(model_type="openai-gpt")), Wiring(PRE_NORM)),
           norm_rules=(NormRule(When(model_type="openai-gpt"), ("ln_1",)),),
           fold_types="gpt2|gpt_bigcode|gpt_neo|imagegpt|decision_transformer",
           # GPT-2 stores Conv1D [in, out]; GPT-BigCode uses nn.Linear with the same names
           orientation_by_shape=True, hidden_from_norm="ln_2"),
    Family("neox", "GPT-NeoX / Pythia / Persimmon (dense_h_to_4h, dense_4h_to_h)",
           rf"(?P<root>{_LAYERS})\.mlp", (("up", "dense_h_to_4h"), ("down", "dense_4h_to_h")),
           ("hidden_act",), "gelu (Persimmon: relu2)", ("post_attention_layernorm",),
           config_default={"gpt_neox": "gelu", "persimmon": "relu2"}, layer_norm=True,
           # ChatGLM-6B (v1) / GLM-130B (GLMBlock): output = α·mlp_input + mlp(mlp_input), α = √(2·num_layers);
           # ChatGLM2/3 (ffn_hidden_size, a fused SwiGLU under encoder.layers) add the plain residual
           refusals=(Refusal(When(model_type="chatglm", flag="ffn_hidden_size", flag_default=False, flag_is=False),
                             "ChatGLM-6B / GLM-130B's GLMBlock scales the MLP's skip: the layer computes α·norm(h) + "
                             "B(norm(h)) with α = √(2·num_layers), so the block is f(x) = α·x + B(x), not x + B(x) (and "
                             "not a parallel residual)",
                             "write the block as an .npz with the skip matrix α·I (docs/user-guide.md), which absorb "
                             "decides as it is"),),
           wiring=(Wiring(PRE_NORM, When(model_type="persimmon")),
                   Wiring("parallel residual: the layer computes h + attn(norm₁(h)) + B(norm₂(h))",
                          When(flag="use_parallel_residual")),
                   Wiring(PRE_NORM))),
    Family("falcon", "Falcon / BLOOM (h.{i}.mlp.dense_h_to_4h, dense_4h_to_h)",
           rf"(?P<root>{_PRE}h\.(?P<i>\d+))\.mlp", (("up", "dense_h_to_4h"), ("down", "dense_4h_to_h")),
           ("activation", "hidden_act"), "gelu", ("ln_mlp", "post_attention_layernorm", "input_layernorm"),
           config_default={"falcon": "gelu"}, layer_norm=True,
           # BloomConfig has no activation field: BloomMLP always calls the tanh GELU
           activation_rules=(ActivationRule(When(model_type="bloom"), None, "gelu_tanh",
                                            "BLOOM: transformers hard-codes the tanh GELU (bloom_gelu_forward)"),),
           wiring=(Wiring("pre-norm with the residual taken after the norm: the layer computes norm(h) + B(norm(h))",
                          When(model_type="bloom", flag="apply_residual_connection_post_layernorm", flag_default=False)),
                   Wiring(PRE_NORM, When(model_type="bloom")),
                   Wiring("parallel attention/MLP: the layer computes h + attn(ln_attn(h)) + B(ln_mlp(h))", When(has=("ln_mlp",))),
                   Wiring("parallel attention/MLP: the layer computes h + attn(norm(h)) + B(norm(h))", When(flag="parallel_attn")),
                   Wiring(PRE_NORM))),
    Family("opt", "OPT (layers.{i}.fc1, fc2; also BART, Whisper)",
           rf"(?P<root>{_LAYERS})", (("up", "fc1"), ("down", "fc2")),
           ("activation_function", "hidden_act"), "relu (OPT)", ("final_layer_norm",), config_default={"opt": "relu"},
           layer_norm=True, lone_role_elsewhere=True,
           # without config.json a BART-style post-LN model cannot be told from OPT/Whisper: it is said to be assumed
           wiring=(Wiring(POST_NORM_OF_NORM, When(model_type=_POST_LN_FC_TYPES + "|fsmt")),
                   Wiring(PRE_NORM, When(flag="do_layer_norm_before")),
                   Wiring("post-norm: the layer computes norm(h + B(h))")),
           # BART: a decoder layer's cross-attention norm feeds its MLP; post-LN OPT (350m): the attention's norm
           norm_rules=(NormRule(When(model_type=_POST_LN_FC_TYPES), ("encoder_attn_layer_norm", "self_attn_layer_norm")),
                       NormRule(When(flag="do_layer_norm_before", flag_is=False), ("self_attn_layer_norm",))),
           fold_types=_PRE_LN_FC_TYPES),
    Family("phi", "Phi-1/1.5/2 (mlp.fc1, fc2; also CLIP/SigLIP)",
           rf"(?P<root>{_LAYERS})\.mlp", (("up", "fc1"), ("down", "fc2")),
           ("hidden_act",), "gelu_new (Phi)", ("post_attention_layernorm", "layer_norm2", "input_layernorm"),
           # (CLIPVisionConfig / SiglipVisionConfig: hidden_act left out of a real vision_config is the class default)
           config_default={"phi": "gelu_new", "clip_vision_model": "quick_gelu", "clip_text_model": "quick_gelu",
                           "siglip_vision_model": "gelu_pytorch_tanh", "siglip_text_model": "gelu_pytorch_tanh"},
           layer_norm=True,
           wiring=(Wiring("parallel residual: the layer computes h + attn(norm(h)) + B(norm(h))",
                          When(has=("input_layernorm",), lacks=("post_attention_layernorm",))),
                   Wiring(PRE_NORM))),
    Family("bert", "BERT / RoBERTa / ViT (intermediate.dense, output.dense)",
           rf"(?P<root>{_PRE}layer\.(?P<i>\d+))", (("up", "intermediate.dense"), ("down", "output.dense")),
           ("hidden_act",), "gelu", ("layernorm_after", "attention.output.LayerNorm"),
           config_default={"bert": "gelu", "roberta": "gelu", "vit": "gelu", "xlm-roberta": "gelu"},
           layer_norm=True, lone_role_elsewhere=True,
           # (ESM, Megatron-BERT and RoBERTa-PreLayerNorm are pre-LN: LayerNorm / ln / intermediate.LayerNorm feed the MLP)
           wiring=(Wiring(PRE_NORM, When(has=("layernorm_after",))),
                   Wiring(PRE_NORM, When(model_type="esm|megatron-bert|roberta-prelayernorm")), Wiring(POST_NORM_OF_NORM))),
    Family("distilbert", "DistilBERT (ffn.lin1, lin2)",
           rf"(?P<root>{_PRE}layer\.(?P<i>\d+))\.ffn", (("up", "lin1"), ("down", "lin2")),
           ("activation",), "gelu", ("sa_layer_norm",), config_default={"distilbert": "gelu"}, layer_norm=True,
           wiring=(Wiring(POST_NORM_OF_NORM),)),
    Family("albert", "ALBERT (one shared layer: albert_layers.{i}.ffn, ffn_output)",
           rf"(?P<root>{_PRE}albert_layer_groups\.\d+\.albert_layers\.(?P<i>\d+))", (("up", "ffn"), ("down", "ffn_output")),
           ("hidden_act",), "gelu_new", ("attention.LayerNorm",), config_default={"albert": "gelu_new"}, layer_norm=True,
           wiring=(Wiring(POST_NORM_OF_NORM + "; ALBERT applies this one shared layer num_hidden_layers times, so this block "
                          "stands for every layer"),)),
    Family("gptj", "GPT-J (h.{i}.mlp.fc_in, fc_out)",
           rf"(?P<root>{_PRE}h\.(?P<i>\d+))\.mlp", (("up", "fc_in"), ("down", "fc_out")),
           ("activation_function",), "gelu_new", ("ln_1",), config_default={"gptj": "gelu_new"}, layer_norm=True,
           wiring=(Wiring("parallel residual: the layer computes h + attn(ln_1(h)) + B(ln_1(h))"),)),
    Family("mpt", "MPT (blocks.{i}.ffn.up_proj, down_proj)",
           rf"(?P<root>{_PRE}blocks\.(?P<i>\d+))\.ffn", (("up", "up_proj"), ("down", "down_proj")),
           (), "gelu", ("norm_2",), layer_norm=True,
           # MptConfig names no activation: MptMLP calls nn.GELU(approximate="none")
           activation_rules=(ActivationRule(When(model_type="mpt"), None, "gelu",
                                            "MPT: transformers hard-codes the exact GELU (MptMLP: nn.GELU(approximate='none'))"),)),
    Family("t5", "T5 v1.0 (DenseReluDense.wi, wo)",
           rf"(?P<root>{_PRE}block\.(?P<i>\d+)\.layer\.\d+)\.DenseReluDense", (("up", "wi"), ("down", "wo")),
           ("feed_forward_proj",), "relu", ("layer_norm",), config_default={"t5": "relu"},
           feed_forward_proj=True),
    Family("t5_gated", "T5 v1.1 / Flan-T5 / mT5 (DenseReluDense.wi_0 gate, wi_1 value, wo)",
           rf"(?P<root>{_PRE}block\.(?P<i>\d+)\.layer\.\d+)\.DenseReluDense",
           (("gate", "wi_0"), ("up", "wi_1"), ("down", "wo")),
           ("feed_forward_proj",), "gated-gelu (gelu_new)", ("layer_norm",), config_default={"t5": "relu"},
           feed_forward_proj=True),
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
    ({"starcoder2"}, ("starcoder2",)),
    ({"gpt2"}, ("gpt2", "gpt_bigcode")),
    ({"neox"}, ("gpt_neox", "persimmon")),
    ({"falcon"}, ("falcon", "bloom")),
    ({"opt"}, ("opt",)),
    ({"phi"}, ("phi",)),
    ({"bert"}, ("bert", "roberta", "xlm-roberta", "vit")),
    ({"t5", "t5_gated"}, ("t5", "mt5", "umt5")),
    ({"distilbert"}, ("distilbert",)),
    ({"albert"}, ("albert",)),
    ({"gptj"}, ("gptj",)),
    ({"mpt"}, ("mpt",)),
):
    for _t in _types:
        _EXPECTED[_t] = frozenset(_keys)

# Norm formulas. Gemma's RMSNorm and Nemotron's LayerNorm1P multiply by (1 + w); the


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
    skip: str | None = None
    """A tensor holding the skip matrix M (ONNX graphs that wire one); None: the identity."""
    value_activation: str | None = None
    """The activation h of the value branch (gpt-oss's clamp), or None: h(z) = z."""

    @property
    def gated(self) -> bool:
        return self.gate is not None or self.gate_up is not None

    def tensors(self) -> tuple[str, ...]:
        """Every tensor this block reads (the norm's only when folding)."""
        return tuple(t for t in (self.up, self.gate, self.gate_up, self.down, self.b_up, self.b_gate, self.b_down, self.skip) if t)


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



__all__ = ["DEFAULT_WIRING", "FAMILIES", "FAMILY_BY_KEY", "ActivationRule", "BlockSpec", "Detection", "Family", "ManualRoles",
           "NormRule", "NormSpec", "Refusal", "Role", "Shapes", "When", "Wiring"]
