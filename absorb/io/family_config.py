"""What config.json (and the layer's own tensors) say about one block: activation, norm, residual.

Each question is answered from the fields of the block's :class:`~absorb.io.family_table.Family`
(no branch on a family's key): the activation from ``--activation``, else config.json, else
where the original code hard-codes it — never guessed; the norm before the MLP and its
formula (for ``--fold-norm``); and how the layer wires the residual (a sentence for the report).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from absorb._errors import InvalidInput
from absorb.io.family_table import Family, NormSpec, Shapes, When
from absorb.model.activations import get_activation

_HIDDEN_KEYS = ("hidden_size", "n_embd", "d_model", "dim")
_ACT_KEYS_ANY = ("hidden_act", "hidden_activation", "activation_function", "activation")

# Transformers activation names that the registry spells differently.
_HF_ALIASES = {"gelu_python": "gelu", "gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh", "gelu_fast": "gelu_tanh"}

# Norm formulas. Gemma's RMSNorm and Nemotron's LayerNorm1P multiply by (1 + w); the
# others by w. For the LLaMA-style names the model_type decides (Gemma shares them).
_ONE_PLUS = frozenset({"gemma", "gemma2", "gemma3", "gemma3_text", "nemotron"})
_PLAIN_GAIN_LLAMA = frozenset({"llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe",
                               "deepseek_v2", "deepseek_v3", "phi3"})
_LAYER_NORM_TYPES = frozenset({"nemotron"})  # LayerNorm1P without a bias tensor


_SECTIONS = ("text_config", "vision_config", "qformer_config", "llm_config", "audio_config", "encoder", "decoder")
"""The keys of config.json that describe one tower each (:func:`_section_key` picks among them)."""


def config_section(config: Mapping[str, object] | None, tensor: str) -> Mapping[str, object] | None:
    """The part of config.json that describes the tower ``tensor`` belongs to.

    Multimodal configs nest the language model under ``text_config`` and the vision tower
    under ``vision_config``; (vision-, speech-) encoder-decoder configs nest the towers whose
    tensors start ``encoder.`` and ``decoder.`` under ``encoder`` and ``decoder``. The
    section's keys override the top level for that tower.
    """
    if config is None:
        return None
    key = _section_key(tensor, config)
    if key == "text_config" and "text_config" not in config and isinstance(config.get("llm_config"), Mapping):
        key = "llm_config"  # (InternVL: the language model's settings)
    if key == "text_config" and re.match(r"(.*\.)?audio_tower\.", tensor):
        key = "audio_config"  # (Qwen2-Audio, Voxtral)
    sub = config.get(key)
    if isinstance(sub, Mapping):
        return {**config, **sub}
    return config


def _section_key(tensor: str, config: Mapping[str, object] | None = None) -> str:
    mt = _model_type(config)
    if mt is not None and mt.endswith("encoder-decoder") and (m := re.match(r"(encoder|decoder)\.", tensor)):
        return m.group(1)
    if re.match(r"(.*\.)?qformer\.", tensor):  # (BLIP-2 / InstructBLIP: the Q-Former is a BERT under qformer_config)
        return "qformer_config"
    return "vision_config" if re.search(r"(^|\.)(vision|visual|vpm\.)", tensor) else "text_config"


def config_name(cfg: Mapping[str, object] | None) -> str:
    """How messages name the configuration: ``config.json``, or the training checkpoint's entry
    it came from (a Lightning ``hyper_parameters``, fairseq ``args``: key ``__source__``)."""
    src = None if cfg is None else cfg.get("__source__")
    return src if isinstance(src, str) else "config.json"


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



def holds(when: When, cfg: Mapping[str, object] | None, root: str, names: Shapes) -> bool:
    """Whether ``when`` holds for the layer ``root`` of this checkpoint (config section ``cfg``)."""
    if when.model_type is not None:
        mt = _model_type(cfg)
        if mt is None or not re.fullmatch(when.model_type, mt):
            return False
    if not all(f"{root}.{m}.weight" in names for m in when.has) or any(f"{root}.{m}.weight" in names for m in when.lacks):
        return False
    if when.flag is not None:
        value = when.flag_default if cfg is None else bool(cfg.get(when.flag, when.flag_default))
        return value == when.flag_is
    return True


def activation(fam: Family, cfg: Mapping[str, object] | None, *, override: str | None, source: str,
               has_config: bool, example: str) -> tuple[str, str]:
    """(activation name, where it came from) for one family, or a one-line refusal."""
    if override is not None:
        get_activation(override)  # raises InvalidInput with the registry's message
        return override, "--activation"
    if cfg is not None:
        found = _configured_activation(fam, cfg, source=source)
        if found is not None:
            return found
    if fam.hard_coded is not None:
        return fam.hard_coded, f"hard-coded in the original {fam.label.split(' (')[0]} code"
    keys = " or ".join(fam.act_keys) or "an activation key"
    why = ("no config.json beside the checkpoint" if not has_config else "config.json names no activation" if config_name(cfg) == "config.json"
           else f"{config_name(cfg)} names no activation of this layout (its {keys}: a training script's other keys may be "
                "another module's)")
    usual = fam.usual.split(" ")[0]
    if cfg is not None and any(isinstance(cfg.get(k), Mapping) for k in _SECTIONS):
        # (several towers: --activation would name every tower's activation, the other towers' wrongly)
        raise InvalidInput(f"{source}: {why} for the tower of {example} (the {fam.label} layout; usually {fam.usual}), and its "
                           f"section {_section_key(example, cfg)!r} of config.json names none either; add that tower's "
                           f"\"{fam.act_keys[0] if fam.act_keys else 'hidden_act'}\" there (--activation would apply to every tower)")
    raise InvalidInput(f"{source}: {why}, so the activation of the {fam.label} layout (e.g. {example}; usually {fam.usual}) "
                       f"is not known; put the model's config.json beside it or pass --activation {usual}")


def _configured_activation(fam: Family, cfg: Mapping[str, object], *, source: str) -> tuple[str, str] | None:
    """The activation config.json gives (or its class's default for the model_type), or None."""
    if fam.feed_forward_proj:
        return _t5_activation(fam, cfg, source=source)
    where = config_name(cfg)
    for rule in fam.activation_rules:
        if holds(rule.when, cfg, "", {}):
            v = cfg.get(rule.key) if rule.key is not None else None
            if isinstance(v, str) and rule.names is not None:
                if v not in rule.names:
                    raise InvalidInput(f"{source}: {where} {rule.key} = {v!r} is not in {rule.table} "
                                       f"({', '.join(sorted(rule.names))}); fix {rule.key} or pass --activation NAME")
                return rule.names[v], f"{where} {rule.key} = {v!r} ({rule.table} reads it as {rule.names[v]})"
            if isinstance(v, str):
                return _check_activation_name(v, source=source, where=f"{where} {rule.key}"), f"{where} {rule.key} = {v!r}"
            return rule.fixed, rule.why
    # (a configuration stored in a training checkpoint — Lightning's hyper-parameters, fairseq's args, a trainer's
    # 'config' or 'model_config' entry — may name another module's activation, a classifier head's, under a generic key
    # such as 'activation': there only the family's own keys count)
    loose = not isinstance(cfg.get("__source__"), str)
    for key in fam.act_keys + (tuple(k for k in _ACT_KEYS_ANY if k not in fam.act_keys) if loose else ()):
        v = cfg.get(key)
        if isinstance(v, str):
            return _check_activation_name(v, source=source, where=f"{where} {key}"), f"{where} {key} = {v!r}"
    mt = _model_type(cfg)
    if mt in fam.config_default:
        v = fam.config_default[mt]
        return _check_activation_name(v, source=source, where="the config default"), f"transformers' default for model_type {mt!r} ({v})"
    return None


def _t5_activation(fam: Family, cfg: Mapping[str, object], *, source: str) -> tuple[str, str]:
    """T5Config: ``feed_forward_proj`` is ``[gated-]ACT``; ``gated-gelu`` means gelu_new."""
    ffp = cfg.get("feed_forward_proj", "relu")
    if not isinstance(ffp, str):
        raise InvalidInput(f"{source}: config.json feed_forward_proj = {ffp!r} is not a string such as 'relu' or 'gated-gelu'")
    parts = ffp.split("-")
    gated = len(parts) > 1 and parts[0] == "gated"
    if len(parts) > 2 or (len(parts) == 2 and not gated):
        raise InvalidInput(f"{source}: config.json feed_forward_proj = {ffp!r} is not of the form ACT or gated-ACT")
    if gated != fam.gated:
        have = "wi_0/wi_1 (gated)" if fam.gated else "wi (ungated)"
        raise InvalidInput(f"{source}: config.json feed_forward_proj = {ffp!r} but the tensors are {have}; the config does not match the weights")
    act = "gelu_tanh" if ffp == "gated-gelu" else parts[-1]
    note = " (transformers maps it to gelu_new)" if ffp == "gated-gelu" else ""
    dense = cfg.get("dense_act_fn")  # (what T5's layers call; a config may set it apart from feed_forward_proj: Pop2Piano)
    if isinstance(dense, str) and dense != parts[-1] and not (ffp == "gated-gelu" and dense == "gelu_new"):
        return (_check_activation_name(dense, source=source, where="config.json dense_act_fn"),
                f"config.json dense_act_fn = {dense!r} (feed_forward_proj = {ffp!r})")
    return (_check_activation_name(act, source=source, where="config.json feed_forward_proj"),
            f"config.json feed_forward_proj = {ffp!r}" + note)



def residual(fam: Family, cfg: Mapping[str, object] | None, root: str, names: Shapes) -> str:
    """How the transformer wires this MLP's residual (a sentence for the report): the family's
    first wiring rule that holds; one that holds through a config flag without config.json
    says that transformers' default was assumed."""
    for rule in fam.wiring:
        if holds(rule.when, cfg, root, names):
            assumed = cfg is None and rule.when.flag is not None
            return rule.text + (" (no config.json: transformers' default assumed)" if assumed else "")
    raise AssertionError(f"the last wiring rule of {fam.key} always holds")  # pragma: no cover


def norm(fam: Family, cfg: Mapping[str, object] | None, root: str, names: Shapes, *, source: str,
         fold: bool, block: str) -> NormSpec | None:
    """The norm preceding the MLP, or None; with ``fold`` a one-line error when it is not known."""
    rule = next((r for r in fam.norm_rules if holds(r.when, cfg, root, names)), None)
    cands = fam.norms if rule is None else rule.norms
    found = next((c for c in cands if f"{root}.{c}.weight" in names), None)
    if not fold:
        return None
    mt = _model_type(cfg)
    if rule is None and fam.fold_types is not None and (mt is None or not re.fullmatch(fam.fold_types, mt)):
        why = "no config.json gives the model_type" if mt is None else f"model_type {mt!r} is not one absorb knows the wiring of"
        raise InvalidInput(f"{source}: --fold-norm: {why}, and the {fam.label} layout is shared by pre-norm models (the norm "
                           f"{cands[0]} feeds the MLP) and post-norm ones (it follows the MLP); add config.json or drop --fold-norm")
    if found is None:
        looked = ", ".join(f"{root}.{c}.weight" for c in cands)
        raise InvalidInput(f"{source}: --fold-norm: no norm found before {block} (looked for {looked}); drop --fold-norm")
    offset = _gain_offset(mt, source=source) if fam.gain_by_model_type else 0.0
    w = f"{root}.{found}.weight"
    b = f"{root}.{found}.bias"
    has_b = b in names
    kind: Literal["rms", "layer"] = "layer" if (has_b or fam.layer_norm or mt in _LAYER_NORM_TYPES) else "rms"
    return NormSpec(weight=w, bias=b if has_b else None, offset=offset, kind=kind)


def _gain_offset(mt: str | None, *, source: str) -> float:
    """1.0 for the (1 + w) gains of Gemma/Nemotron, 0.0 for LLaMA's w; refused when not known."""
    if mt in _ONE_PLUS:
        return 1.0
    if mt in _PLAIN_GAIN_LLAMA:
        return 0.0
    why = "no config.json gives the model_type" if mt is None else f"model_type {mt!r} is not one absorb knows the norm formula of"
    raise InvalidInput(f"{source}: --fold-norm: {why}, and this naming is shared by norms with gain w (LLaMA) and 1 + w "
                       "(Gemma, Nemotron); add config.json or drop --fold-norm")


__all__ = ["activation", "config_name", "config_section", "holds", "norm", "residual"]
