"""Write a small synthetic Hugging Face style checkpoint to try ``absorb check`` on.

Usage: ``python examples/make_checkpoint.py OUT_DIR [--family NAME] [--dtype F32|F16|BF16] [--shards K]
[--d D --n N --layers L] [--planted LAYER|none] [--mlp-bias] [--seed S]``;
``python examples/make_checkpoint.py --list`` prints the families. E.g. ``--family llama
--d 4096 --n 11008`` is LLaMA-7B's MLP.

Every family the loader recognises is written with its model's tensor names, shapes and
``config.json`` fields (following the transformers modeling and configuration files),
including the tensors around the MLP (attention, norms, embeddings, routers) that
detection must leave alone. ``--d`` is the model dimension, ``--n`` the MLP width (of each
expert for the MoE families), ``--layers`` the number of layers (per tower for
encoder-decoder and two-tower models). Defaults are small (d = 8, n = 32, 2 layers), except:

* ``llama``: 4 layers, d = 16, n = 48, of ``model.layers.{i}.mlp.{gate,up,down}_proj`` (SwiGLU,
  no bias), an RMSNorm ``post_attention_layernorm`` per layer, ``hidden_act: silu``.
* ``gpt_oss`` (or ``gpt-oss``): d = n = 32, 4 MXFP4 experts a layer (``--d``/``--n`` multiples of
  32), with ``swiglu_limit: 7.0``; ``biased_swiglu`` (or ``biased-swiglu``): the LLaMA layout with
  biases on every MLP projection.
* ``bert``: 3 layers, d = 2, n = 8, of ``bert.encoder.layer.{i}.intermediate.dense`` /
  ``output.dense`` (GELU, with biases), ``hidden_act: gelu``, entries dyadic (multiples of
  1/64, |x| < 4: exact in F32, F16 and BF16); layer 1 is planted (below).

``--planted LAYER`` (ungated families whose activation satisfies σ(z) − σ(−z) = z: ReLU and
the GELU family) plants an index set in that layer: for d units S spread over the width,
``W_up[S, :] = A`` and ``W_down[:, S] = −A⁻¹`` with A block-diagonal of 2×2 blocks
[[2, 1], [0, 1/2]] (a 1 for odd d), so every entry of A and A⁻¹ is ±2^k and the relation
survives F32/F16/BF16 storage exactly; ``absorb check`` finds S and proves the layer
absorbable. In encoder-decoder and two-tower models the first tower's (encoder's, text
model's) layer is planted. The other weights are random (``numpy.random.default_rng(seed)``).

Tensors are written with ``safetensors.numpy.save_file``; with ``--shards K`` they are spread
over K shards (round robin, so one layer spans shards) and a ``model.safetensors.index.json``
maps each tensor to its shard.
"""

from __future__ import annotations

import argparse
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
from safetensors.numpy import save_file

Tensors = dict[str, np.ndarray]


def _cast(a: np.ndarray, dtype: str) -> np.ndarray:
    if not np.issubdtype(a.dtype, np.floating):
        return a  # integer buffers (CLIP's position_ids) keep their dtype
    if dtype == "F32":
        return a.astype(np.float32)
    if dtype == "F16":
        return a.astype(np.float16)
    import ml_dtypes

    return a.astype(ml_dtypes.bfloat16)


# ----------------------------------------------------------------------------------------
# building blocks
# ----------------------------------------------------------------------------------------

def planted_units(n: int, d: int) -> list[int]:
    """The d units of the planted index set, spread over the width n ({1, 5} for d = 2, n = 8)."""
    if n < d:
        raise ValueError(f"--planted needs n >= d (an index set has at least d units); got d = {d}, n = {n}")
    step = n // d
    return sorted((1 + k * step) % n for k in range(d))


def plant(U: np.ndarray, D: np.ndarray, S: list[int] | None = None) -> list[int]:
    """Make ``D[:, S] U[S, :] = −I`` exactly, in place (U is [n, d], D is [d, n]); returns S."""
    n, d = U.shape
    S = planted_units(n, d) if S is None else S
    A = np.eye(d)
    for k in range(0, d - 1, 2):
        A[k:k + 2, k:k + 2] = [[2.0, 1.0], [0.0, 0.5]]  # det 1; inverse [[0.5, -1], [0, 2]]
    U[S] = A
    D[:, S] = -np.linalg.inv(A)  # entries 0, ±1/2, ±1, ±2: the float64 inverse is exact
    return S


def _w(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    return rng.standard_normal((rows, cols)) / np.sqrt(cols)


def _b(rng: np.random.Generator, k: int) -> np.ndarray:
    return 0.1 * rng.standard_normal(k)


def _linear(t: Tensors, rng: np.random.Generator, name: str, rows: int, cols: int, *, bias: bool) -> None:
    t[f"{name}.weight"] = _w(rng, rows, cols)
    if bias:
        t[f"{name}.bias"] = _b(rng, rows)


def _norm(t: Tensors, rng: np.random.Generator, name: str, d: int, *, bias: bool = True) -> None:
    t[f"{name}.weight"] = 1 + 0.1 * rng.standard_normal(d)
    if bias:
        t[f"{name}.bias"] = 0.1 * rng.standard_normal(d)


def _mlp(t: Tensors, rng: np.random.Generator, *, d: int, n: int, up: str, down: str, gate: str | None = None,
         bias: bool = False, planted: bool = False, conv1d: bool = False) -> None:
    """One MLP block: ``up`` [n, d], ``down`` [d, n] (``nn.Linear``), or [in, out] (``conv1d``)."""
    if gate is not None:
        t[f"{gate}.weight"] = _w(rng, n, d)
    U, D = _w(rng, n, d), _w(rng, d, n)
    if planted:
        plant(U, D)
    t[f"{up}.weight"] = np.ascontiguousarray(U.T) if conv1d else U
    t[f"{down}.weight"] = np.ascontiguousarray(D.T) if conv1d else D
    if bias:
        t[f"{up}.bias"], t[f"{down}.bias"] = _b(rng, n), _b(rng, d)


def _attn(t: Tensors, rng: np.random.Generator, prefix: str, d: int, names: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj"),
          *, bias: bool = False) -> None:
    for nm in names:
        _linear(t, rng, f"{prefix}.{nm}", d, d, bias=bias)


# ----------------------------------------------------------------------------------------
# the families (tensor names and config fields as in transformers)
# ----------------------------------------------------------------------------------------

def llama(rng: np.random.Generator, *, d: int = 16, n: int = 48, layers: int = 4, planted: int | None = None,
          mlp_bias: bool = False) -> tuple[Tensors, dict]:
    del planted  # SwiGLU: no index-set relation to plant
    t: Tensors = {"model.embed_tokens.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"model.layers.{i}"
        t[f"{p}.mlp.gate_proj.weight"] = rng.standard_normal((n, d)) / np.sqrt(d)
        t[f"{p}.mlp.up_proj.weight"] = rng.standard_normal((n, d)) / np.sqrt(d)
        t[f"{p}.mlp.down_proj.weight"] = rng.standard_normal((d, n)) / np.sqrt(n)
        t[f"{p}.post_attention_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(d)
        t[f"{p}.input_layernorm.weight"] = np.ones(d)
        if mlp_bias:  # LlamaConfig(mlp_bias=True): fused, biased SwiGLU (drawn last: the bias-free weights stay the same)
            for name, k in (("gate_proj", n), ("up_proj", n), ("down_proj", d)):
                t[f"{p}.mlp.{name}.bias"] = _b(rng, k)
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": d, "intermediate_size": n,
           "num_hidden_layers": layers, "hidden_act": "silu", **({"mlp_bias": True} if mlp_bias else {})}
    return t, cfg


def bert(rng: np.random.Generator, *, d: int = 2, n: int = 8, layers: int = 3, planted: int | None = 1) -> tuple[Tensors, dict]:
    t: Tensors = {"bert.embeddings.word_embeddings.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"bert.encoder.layer.{i}"
        # dyadic entries (multiples of 1/64, |x| < 4) so that F32, F16 and BF16 storage are exact
        U = np.round(rng.standard_normal((n, d)) * 64) / 64
        D = np.round(rng.standard_normal((d, n)) * 64) / 64
        if i == planted:
            plant(U, D)  # d = 2, n = 8: S = {1, 5}, U[S] = [[2, 1], [0, 0.5]], D[:, S] = [[-0.5, 1], [0, -2]]
        t[f"{p}.intermediate.dense.weight"] = U
        t[f"{p}.intermediate.dense.bias"] = np.round(rng.standard_normal(n) * 64) / 64
        t[f"{p}.output.dense.weight"] = D
        t[f"{p}.output.dense.bias"] = np.round(rng.standard_normal(d) * 64) / 64
        t[f"{p}.attention.output.dense.weight"] = rng.standard_normal((d, d))
        t[f"{p}.attention.output.LayerNorm.weight"] = np.ones(d)
        t[f"{p}.attention.output.LayerNorm.bias"] = np.zeros(d)
        t[f"{p}.output.LayerNorm.weight"] = np.ones(d)
        t[f"{p}.output.LayerNorm.bias"] = np.zeros(d)
    cfg = {"model_type": "bert", "architectures": ["BertModel"], "hidden_size": d, "intermediate_size": n,
           "num_hidden_layers": layers, "hidden_act": "gelu"}
    return t, cfg


def meta(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, None]:
    """Meta's original LLaMA release: ``layers.{i}.feed_forward.w1/w2/w3``, no config.json (params.json)."""
    del planted
    t: Tensors = {"tok_embeddings.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"layers.{i}"
        _attn(t, rng, f"{p}.attention", d, ("wq", "wk", "wv", "wo"))
        _mlp(t, rng, d=d, n=n, gate=f"{p}.feed_forward.w1", up=f"{p}.feed_forward.w3", down=f"{p}.feed_forward.w2")
        _norm(t, rng, f"{p}.attention_norm", d, bias=False)
        _norm(t, rng, f"{p}.ffn_norm", d, bias=False)
    _norm(t, rng, "norm", d, bias=False)
    t["output.weight"] = _w(rng, 32, d)
    return t, None


def meta_params(d: int, layers: int) -> dict:
    return {"dim": d, "n_layers": layers, "n_heads": 2, "multiple_of": 8, "norm_eps": 1e-5, "vocab_size": 32}


def _llama_like(rng: np.random.Generator, *, d: int, n: int, layers: int, post_ffn_norm: bool = False) -> Tensors:
    t: Tensors = {"model.embed_tokens.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"model.layers.{i}"
        _attn(t, rng, f"{p}.self_attn", d)
        _mlp(t, rng, d=d, n=n, gate=f"{p}.mlp.gate_proj", up=f"{p}.mlp.up_proj", down=f"{p}.mlp.down_proj")
        _norm(t, rng, f"{p}.input_layernorm", d, bias=False)
        _norm(t, rng, f"{p}.post_attention_layernorm", d, bias=False)
        if post_ffn_norm:
            _norm(t, rng, f"{p}.pre_feedforward_layernorm", d, bias=False)
            _norm(t, rng, f"{p}.post_feedforward_layernorm", d, bias=False)
    _norm(t, rng, "model.norm", d, bias=False)
    return t


def gemma(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """Gemma 1: LLaMA's names; the legacy ``hidden_act: gelu`` is overridden by ``hidden_activation``."""
    del planted
    t = _llama_like(rng, d=d, n=n, layers=layers)
    cfg = {"model_type": "gemma", "architectures": ["GemmaForCausalLM"], "hidden_size": d, "intermediate_size": n,
           "num_hidden_layers": layers, "num_attention_heads": 2, "head_dim": d // 2, "hidden_act": "gelu",
           "hidden_activation": "gelu_pytorch_tanh", "rms_norm_eps": 1e-6}
    return t, cfg


def gemma2(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """Gemma 2: pre- and post-feed-forward RMSNorms (gain 1 + w) around the MLP."""
    del planted
    t = _llama_like(rng, d=d, n=n, layers=layers, post_ffn_norm=True)
    cfg = {"model_type": "gemma2", "architectures": ["Gemma2ForCausalLM"], "hidden_size": d, "intermediate_size": n,
           "num_hidden_layers": layers, "num_attention_heads": 2, "head_dim": d // 2, "hidden_act": "gelu_pytorch_tanh",
           "hidden_activation": "gelu_pytorch_tanh", "rms_norm_eps": 1e-6}
    return t, cfg


def gemma3(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """Gemma 3 (Gemma3ForConditionalGeneration): the language model ``language_model.model.layers.{i}.mlp`` (GeGLU)
    and a SigLIP vision tower ``vision_tower.vision_model.encoder.layers.{i}.mlp.fc1``/``fc2`` of its own width
    (hidden 3d/2, MLP 3n/2), each with its own ``text_config``/``vision_config``."""
    del planted
    dv, nv = d + d // 2, n + n // 2
    lm = _llama_like(rng, d=d, n=n, layers=layers, post_ffn_norm=True)
    t: Tensors = {f"language_model.{k}": v for k, v in lm.items()}
    t["vision_tower.vision_model.embeddings.patch_embedding.weight"] = rng.standard_normal((dv, 3, 2, 2))
    t["vision_tower.vision_model.embeddings.position_embedding.weight"] = 0.1 * rng.standard_normal((4, dv))
    for i in range(layers):
        p = f"vision_tower.vision_model.encoder.layers.{i}"
        _attn(t, rng, f"{p}.self_attn", dv, ("k_proj", "v_proj", "q_proj", "out_proj"), bias=True)
        _norm(t, rng, f"{p}.layer_norm1", dv)
        _mlp(t, rng, d=dv, n=nv, up=f"{p}.mlp.fc1", down=f"{p}.mlp.fc2", bias=True)
        _norm(t, rng, f"{p}.layer_norm2", dv)
    _norm(t, rng, "vision_tower.vision_model.post_layernorm", dv)
    t["multi_modal_projector.mm_input_projection_weight"] = _w(rng, dv, d)  # no ".weight" suffix, as stored
    t["multi_modal_projector.mm_soft_emb_norm.weight"] = 0.1 * rng.standard_normal(dv)
    cfg = {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"], "mm_tokens_per_image": 4,
           "text_config": {"model_type": "gemma3_text", "hidden_size": d, "intermediate_size": n, "num_hidden_layers": layers,
                           "num_attention_heads": 2, "head_dim": d // 2, "hidden_activation": "gelu_pytorch_tanh"},
           "vision_config": {"model_type": "siglip_vision_model", "hidden_size": dv, "intermediate_size": nv,
                             "num_hidden_layers": layers, "num_attention_heads": 2, "hidden_act": "gelu_pytorch_tanh",
                             "image_size": 4, "patch_size": 2}}
    return t, cfg


def phi3(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """Phi-3: fused ``gate_up_proj`` [2I, H] (rows 0:I the gate, I:2I the up projection), fused ``qkv_proj``."""
    del planted
    t: Tensors = {"model.embed_tokens.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"model.layers.{i}"
        t[f"{p}.self_attn.qkv_proj.weight"] = _w(rng, 3 * d, d)
        t[f"{p}.self_attn.o_proj.weight"] = _w(rng, d, d)
        t[f"{p}.mlp.gate_up_proj.weight"] = _w(rng, 2 * n, d)
        t[f"{p}.mlp.down_proj.weight"] = _w(rng, d, n)
        _norm(t, rng, f"{p}.input_layernorm", d, bias=False)
        _norm(t, rng, f"{p}.post_attention_layernorm", d, bias=False)
    _norm(t, rng, "model.norm", d, bias=False)
    t["lm_head.weight"] = _w(rng, 32, d)
    cfg = {"model_type": "phi3", "architectures": ["Phi3ForCausalLM"], "hidden_size": d, "intermediate_size": n,
           "num_hidden_layers": layers, "num_attention_heads": 2, "hidden_act": "silu"}
    return t, cfg


EXPERTS = 4
"""Experts per MoE layer in the synthetic Mixtral and Qwen-MoE checkpoints."""


def mixtral(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """Mixtral: ``block_sparse_moe.experts.{e}.w1`` (gate), ``w3`` (up), ``w2`` (down); router ``block_sparse_moe.gate``."""
    del planted
    t: Tensors = {"model.embed_tokens.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"model.layers.{i}"
        _attn(t, rng, f"{p}.self_attn", d)
        t[f"{p}.block_sparse_moe.gate.weight"] = _w(rng, EXPERTS, d)
        for e in range(EXPERTS):
            q = f"{p}.block_sparse_moe.experts.{e}"
            _mlp(t, rng, d=d, n=n, gate=f"{q}.w1", up=f"{q}.w3", down=f"{q}.w2")
        _norm(t, rng, f"{p}.input_layernorm", d, bias=False)
        _norm(t, rng, f"{p}.post_attention_layernorm", d, bias=False)
    _norm(t, rng, "model.norm", d, bias=False)
    cfg = {"model_type": "mixtral", "architectures": ["MixtralForCausalLM"], "hidden_size": d, "intermediate_size": n,
           "num_hidden_layers": layers, "num_attention_heads": 2, "num_local_experts": EXPERTS, "num_experts_per_tok": 2,
           "hidden_act": "silu"}
    return t, cfg


def qwen_moe(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """Qwen1.5/2-MoE: ``mlp.experts.{e}.*_proj`` of width n, a shared expert ``mlp.shared_expert.*_proj`` of
    width 4n, the router ``mlp.gate`` [E, H] and the shared expert's gate ``mlp.shared_expert_gate`` [1, H]."""
    del planted
    t: Tensors = {"model.embed_tokens.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"model.layers.{i}"
        _attn(t, rng, f"{p}.self_attn", d)
        t[f"{p}.mlp.gate.weight"] = _w(rng, EXPERTS, d)
        for e in range(EXPERTS):
            q = f"{p}.mlp.experts.{e}"
            _mlp(t, rng, d=d, n=n, gate=f"{q}.gate_proj", up=f"{q}.up_proj", down=f"{q}.down_proj")
        q = f"{p}.mlp.shared_expert"
        _mlp(t, rng, d=d, n=4 * n, gate=f"{q}.gate_proj", up=f"{q}.up_proj", down=f"{q}.down_proj")
        t[f"{p}.mlp.shared_expert_gate.weight"] = _w(rng, 1, d)
        _norm(t, rng, f"{p}.input_layernorm", d, bias=False)
        _norm(t, rng, f"{p}.post_attention_layernorm", d, bias=False)
    _norm(t, rng, "model.norm", d, bias=False)
    cfg = {"model_type": "qwen2_moe", "architectures": ["Qwen2MoeForCausalLM"], "hidden_size": d, "intermediate_size": 4 * n,
           "moe_intermediate_size": n, "shared_expert_intermediate_size": 4 * n, "num_hidden_layers": layers,
           "num_attention_heads": 2, "num_experts": EXPERTS, "num_experts_per_tok": 2, "decoder_sparse_step": 1,
           "mlp_only_layers": [], "hidden_act": "silu"}
    return t, cfg


def nemotron(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None,
             mlp_bias: bool = False) -> tuple[Tensors, dict]:
    """Nemotron: ungated ``mlp.up_proj``/``down_proj`` with ReLU², LayerNorm1P (gain 1 + w, with bias)."""
    del planted  # relu2 has no flip identity
    t: Tensors = {"model.embed_tokens.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"model.layers.{i}"
        _attn(t, rng, f"{p}.self_attn", d)
        _mlp(t, rng, d=d, n=n, up=f"{p}.mlp.up_proj", down=f"{p}.mlp.down_proj", bias=mlp_bias)
        _norm(t, rng, f"{p}.input_layernorm", d)
        _norm(t, rng, f"{p}.post_attention_layernorm", d)
    _norm(t, rng, "model.norm", d)
    cfg = {"model_type": "nemotron", "architectures": ["NemotronForCausalLM"], "hidden_size": d, "intermediate_size": n,
           "num_hidden_layers": layers, "num_attention_heads": 2, "hidden_act": "relu2", "mlp_bias": mlp_bias,
           "attention_bias": False, "norm_eps": 1e-5}
    return t, cfg


def gpt2(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """GPT-2: ``Conv1D`` weights stored [in, out] (``c_fc`` [H, 4H]), biases, ``attn.bias`` the causal mask."""
    ctx = 16
    t: Tensors = {"wte.weight": rng.standard_normal((32, d)), "wpe.weight": 0.1 * rng.standard_normal((ctx, d))}
    for i in range(layers):
        p = f"h.{i}"
        _norm(t, rng, f"{p}.ln_1", d)
        t[f"{p}.attn.c_attn.weight"], t[f"{p}.attn.c_attn.bias"] = _w(rng, d, 3 * d), _b(rng, 3 * d)
        t[f"{p}.attn.c_proj.weight"], t[f"{p}.attn.c_proj.bias"] = _w(rng, d, d), _b(rng, d)
        t[f"{p}.attn.bias"] = np.tril(np.ones((ctx, ctx)))[None, None]  # a mask buffer, not a bias
        _norm(t, rng, f"{p}.ln_2", d)
        _mlp(t, rng, d=d, n=n, up=f"{p}.mlp.c_fc", down=f"{p}.mlp.c_proj", bias=True, planted=i == planted, conv1d=True)
    _norm(t, rng, "ln_f", d)
    cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": d, "n_inner": n, "n_layer": layers,
           "n_head": 2, "n_positions": ctx, "activation_function": "gelu_new"}
    return t, cfg


def gpt_bigcode(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """GPT-BigCode (StarCoder): GPT-2's names but ``nn.Linear`` [out, in]; multi-query ``c_attn``."""
    t: Tensors = {"transformer.wte.weight": rng.standard_normal((32, d)), "transformer.wpe.weight": 0.1 * rng.standard_normal((16, d))}
    for i in range(layers):
        p = f"transformer.h.{i}"
        _norm(t, rng, f"{p}.ln_1", d)
        _linear(t, rng, f"{p}.attn.c_attn", d + 2 * (d // 2), d, bias=True)
        _linear(t, rng, f"{p}.attn.c_proj", d, d, bias=True)
        _norm(t, rng, f"{p}.ln_2", d)
        _mlp(t, rng, d=d, n=n, up=f"{p}.mlp.c_fc", down=f"{p}.mlp.c_proj", bias=True, planted=i == planted)
    _norm(t, rng, "transformer.ln_f", d)
    cfg = {"model_type": "gpt_bigcode", "architectures": ["GPTBigCodeForCausalLM"], "n_embd": d, "n_inner": n, "n_layer": layers,
           "n_head": 2, "multi_query": True, "activation_function": "gelu_pytorch_tanh"}
    return t, cfg


def starcoder2(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """StarCoder2: ``model.layers.{i}.mlp.c_fc``/``c_proj`` (``nn.Linear``, biases), tanh GELU, pre-LN."""
    t: Tensors = {"model.embed_tokens.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"model.layers.{i}"
        _norm(t, rng, f"{p}.input_layernorm", d)
        _attn(t, rng, f"{p}.self_attn", d, ("q_proj", "k_proj", "v_proj", "o_proj"), bias=True)
        _norm(t, rng, f"{p}.post_attention_layernorm", d)
        _mlp(t, rng, d=d, n=n, up=f"{p}.mlp.c_fc", down=f"{p}.mlp.c_proj", bias=True, planted=i == planted)
    _norm(t, rng, "model.norm", d)
    cfg = {"model_type": "starcoder2", "architectures": ["Starcoder2ForCausalLM"], "hidden_size": d, "intermediate_size": n,
           "num_hidden_layers": layers, "num_attention_heads": 2, "hidden_act": "gelu_pytorch_tanh", "use_bias": True}
    return t, cfg


def opt(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """OPT: ``model.decoder.layers.{i}.fc1``/``fc2`` with biases, ReLU, pre-LN ``final_layer_norm``."""
    t: Tensors = {"model.decoder.embed_tokens.weight": rng.standard_normal((32, d)),
                  "model.decoder.embed_positions.weight": 0.1 * rng.standard_normal((18, d))}
    for i in range(layers):
        p = f"model.decoder.layers.{i}"
        _attn(t, rng, f"{p}.self_attn", d, ("k_proj", "v_proj", "q_proj", "out_proj"), bias=True)
        _norm(t, rng, f"{p}.self_attn_layer_norm", d)
        _mlp(t, rng, d=d, n=n, up=f"{p}.fc1", down=f"{p}.fc2", bias=True, planted=i == planted)
        _norm(t, rng, f"{p}.final_layer_norm", d)
    _norm(t, rng, "model.decoder.final_layer_norm", d)
    cfg = {"model_type": "opt", "architectures": ["OPTForCausalLM"], "hidden_size": d, "ffn_dim": n, "word_embed_proj_dim": d,
           "num_hidden_layers": layers, "num_attention_heads": 2, "activation_function": "relu", "do_layer_norm_before": True,
           "enable_bias": True}
    return t, cfg


def neox(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """GPT-NeoX / Pythia: ``gpt_neox.layers.{i}.mlp.dense_h_to_4h``/``dense_4h_to_h`` with biases, GELU, parallel residual."""
    t: Tensors = {"gpt_neox.embed_in.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"gpt_neox.layers.{i}"
        _norm(t, rng, f"{p}.input_layernorm", d)
        _norm(t, rng, f"{p}.post_attention_layernorm", d)
        _linear(t, rng, f"{p}.attention.query_key_value", 3 * d, d, bias=True)
        _linear(t, rng, f"{p}.attention.dense", d, d, bias=True)
        _mlp(t, rng, d=d, n=n, up=f"{p}.mlp.dense_h_to_4h", down=f"{p}.mlp.dense_4h_to_h", bias=True, planted=i == planted)
    _norm(t, rng, "gpt_neox.final_layer_norm", d)
    t["embed_out.weight"] = _w(rng, 32, d)
    cfg = {"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"], "hidden_size": d, "intermediate_size": n,
           "num_hidden_layers": layers, "num_attention_heads": 2, "hidden_act": "gelu", "use_parallel_residual": True,
           "rotary_pct": 0.25}
    return t, cfg


def persimmon(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """Persimmon / Fuyu's language model: NeoX's MLP names under ``model.layers``, ReLU², pre-norm."""
    del planted
    t: Tensors = {"model.embed_tokens.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"model.layers.{i}"
        _linear(t, rng, f"{p}.self_attn.query_key_value", 3 * d, d, bias=True)
        _linear(t, rng, f"{p}.self_attn.dense", d, d, bias=True)
        _norm(t, rng, f"{p}.self_attn.q_layernorm", d // 2)
        _norm(t, rng, f"{p}.self_attn.k_layernorm", d // 2)
        _mlp(t, rng, d=d, n=n, up=f"{p}.mlp.dense_h_to_4h", down=f"{p}.mlp.dense_4h_to_h", bias=True)
        _norm(t, rng, f"{p}.input_layernorm", d)
        _norm(t, rng, f"{p}.post_attention_layernorm", d)
    _norm(t, rng, "model.final_layernorm", d)
    cfg = {"model_type": "persimmon", "architectures": ["PersimmonForCausalLM"], "hidden_size": d, "intermediate_size": n,
           "num_hidden_layers": layers, "num_attention_heads": 2, "hidden_act": "relu2", "qk_layernorm": True}
    return t, cfg


def falcon(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None,
           mlp_bias: bool = False) -> tuple[Tensors, dict]:
    """Falcon-7B: ``transformer.h.{i}.mlp.dense_h_to_4h``/``dense_4h_to_h``, no biases (``bias: false``), GELU
    (config.json names no activation: FalconConfig's default), parallel attention, one ``input_layernorm``."""
    t: Tensors = {"transformer.word_embeddings.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"transformer.h.{i}"
        _norm(t, rng, f"{p}.input_layernorm", d)
        _linear(t, rng, f"{p}.self_attention.query_key_value", d + 2 * (d // 2), d, bias=mlp_bias)
        _linear(t, rng, f"{p}.self_attention.dense", d, d, bias=mlp_bias)
        _mlp(t, rng, d=d, n=n, up=f"{p}.mlp.dense_h_to_4h", down=f"{p}.mlp.dense_4h_to_h", bias=mlp_bias, planted=i == planted)
    _norm(t, rng, "transformer.ln_f", d)
    t["lm_head.weight"] = _w(rng, 32, d)
    cfg = {"model_type": "falcon", "architectures": ["FalconForCausalLM"], "hidden_size": d, "ffn_hidden_size": n,
           "num_hidden_layers": layers, "num_attention_heads": 2, "multi_query": True, "parallel_attn": True,
           "new_decoder_architecture": False, "bias": mlp_bias}
    return t, cfg


def bloom(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """BLOOM: ``h.{i}.mlp.dense_h_to_4h``/``dense_4h_to_h`` with biases (no ``transformer.`` prefix, as BloomModel
    saves them); the tanh GELU is hard-coded (config.json names no activation); sequential pre-LN.
    BloomMLP's width is 4 · hidden_size (the default n = 32 = 4 · 8); other widths are not loadable by transformers."""
    t: Tensors = {"word_embeddings.weight": rng.standard_normal((32, d))}
    _norm(t, rng, "word_embeddings_layernorm", d)
    for i in range(layers):
        p = f"h.{i}"
        _norm(t, rng, f"{p}.input_layernorm", d)
        _linear(t, rng, f"{p}.self_attention.query_key_value", 3 * d, d, bias=True)
        _linear(t, rng, f"{p}.self_attention.dense", d, d, bias=True)
        _norm(t, rng, f"{p}.post_attention_layernorm", d)
        _mlp(t, rng, d=d, n=n, up=f"{p}.mlp.dense_h_to_4h", down=f"{p}.mlp.dense_4h_to_h", bias=True, planted=i == planted)
    _norm(t, rng, "ln_f", d)
    cfg = {"model_type": "bloom", "architectures": ["BloomForCausalLM"], "n_embed": d, "n_layer": layers, "n_head": 2,
           "apply_residual_connection_post_layernorm": False, "layer_norm_epsilon": 1e-5}
    return t, cfg


def phi(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """Phi-1/1.5/2: ``model.layers.{i}.mlp.fc1``/``fc2`` with biases, ``gelu_new``, parallel attention and MLP
    on one ``input_layernorm``."""
    t: Tensors = {"model.embed_tokens.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"model.layers.{i}"
        _attn(t, rng, f"{p}.self_attn", d, ("q_proj", "k_proj", "v_proj", "dense"), bias=True)
        _norm(t, rng, f"{p}.input_layernorm", d)
        _mlp(t, rng, d=d, n=n, up=f"{p}.mlp.fc1", down=f"{p}.mlp.fc2", bias=True, planted=i == planted)
    _norm(t, rng, "model.final_layernorm", d)
    t["lm_head.weight"], t["lm_head.bias"] = _w(rng, 32, d), _b(rng, 32)
    cfg = {"model_type": "phi", "architectures": ["PhiForCausalLM"], "hidden_size": d, "intermediate_size": n,
           "num_hidden_layers": layers, "num_attention_heads": 2, "hidden_act": "gelu_new", "partial_rotary_factor": 0.5}
    return t, cfg


def vit(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """ViT: BERT's ``intermediate.dense``/``output.dense`` names, pre-LN (``layernorm_before``/``layernorm_after``)."""
    patches = 4
    t: Tensors = {"vit.embeddings.cls_token": rng.standard_normal((1, 1, d)),
                  "vit.embeddings.position_embeddings": rng.standard_normal((1, patches + 1, d)),
                  "vit.embeddings.patch_embeddings.projection.weight": rng.standard_normal((d, 3, 2, 2)),
                  "vit.embeddings.patch_embeddings.projection.bias": _b(rng, d)}
    for i in range(layers):
        p = f"vit.encoder.layer.{i}"
        _attn(t, rng, f"{p}.attention.attention", d, ("query", "key", "value"), bias=True)
        _linear(t, rng, f"{p}.attention.output.dense", d, d, bias=True)
        _mlp(t, rng, d=d, n=n, up=f"{p}.intermediate.dense", down=f"{p}.output.dense", bias=True, planted=i == planted)
        _norm(t, rng, f"{p}.layernorm_before", d)
        _norm(t, rng, f"{p}.layernorm_after", d)
    _norm(t, rng, "vit.layernorm", d)
    cfg = {"model_type": "vit", "architectures": ["ViTModel"], "hidden_size": d, "intermediate_size": n,
           "num_hidden_layers": layers, "num_attention_heads": 2, "hidden_act": "gelu", "image_size": 4, "patch_size": 2}
    return t, cfg


def distilbert(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """DistilBERT: ``distilbert.transformer.layer.{i}.ffn.lin1``/``lin2`` with biases, GELU, post-LN
    (``sa_layer_norm`` before the MLP, ``output_layer_norm`` after it)."""
    t: Tensors = {"distilbert.embeddings.word_embeddings.weight": rng.standard_normal((32, d)),
                  "distilbert.embeddings.position_embeddings.weight": rng.standard_normal((16, d))}
    for i in range(layers):
        p = f"distilbert.transformer.layer.{i}"
        _attn(t, rng, f"{p}.attention", d, ("q_lin", "k_lin", "v_lin", "out_lin"), bias=True)
        _norm(t, rng, f"{p}.sa_layer_norm", d)
        _mlp(t, rng, d=d, n=n, up=f"{p}.ffn.lin1", down=f"{p}.ffn.lin2", bias=True, planted=i == planted)
        _norm(t, rng, f"{p}.output_layer_norm", d)
    cfg = {"model_type": "distilbert", "architectures": ["DistilBertModel"], "dim": d, "hidden_dim": n, "n_layers": layers,
           "n_heads": 2, "activation": "gelu"}
    return t, cfg


def albert(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 1, planted: int | None = None) -> tuple[Tensors, dict]:
    """ALBERT: one shared layer (``albert_layer_groups.0.albert_layers.0``: ``ffn``, ``ffn_output``), applied
    ``num_hidden_layers`` times; factorised embeddings (size 4, mapped to d)."""
    t: Tensors = {"albert.embeddings.word_embeddings.weight": rng.standard_normal((32, 4))}
    _linear(t, rng, "albert.encoder.embedding_hidden_mapping_in", d, 4, bias=True)
    for i in range(layers):
        p = f"albert.encoder.albert_layer_groups.0.albert_layers.{i}"
        _attn(t, rng, f"{p}.attention", d, ("query", "key", "value", "dense"), bias=True)
        _norm(t, rng, f"{p}.attention.LayerNorm", d)
        _mlp(t, rng, d=d, n=n, up=f"{p}.ffn", down=f"{p}.ffn_output", bias=True, planted=i == planted)
        _norm(t, rng, f"{p}.full_layer_layer_norm", d)
    cfg = {"model_type": "albert", "architectures": ["AlbertModel"], "hidden_size": d, "intermediate_size": n,
           "embedding_size": 4, "num_hidden_layers": 12, "num_hidden_groups": 1, "inner_group_num": layers,
           "hidden_act": "gelu_new"}
    return t, cfg


def gptj(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """GPT-J: ``transformer.h.{i}.mlp.fc_in``/``fc_out`` (``nn.Linear``) with biases, ``gelu_new``,
    attention and MLP in parallel on ``ln_1``."""
    t: Tensors = {"transformer.wte.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"transformer.h.{i}"
        _norm(t, rng, f"{p}.ln_1", d)
        _attn(t, rng, f"{p}.attn", d, ("q_proj", "k_proj", "v_proj", "out_proj"))
        _mlp(t, rng, d=d, n=n, up=f"{p}.mlp.fc_in", down=f"{p}.mlp.fc_out", bias=True, planted=i == planted)
    _norm(t, rng, "transformer.ln_f", d)
    cfg = {"model_type": "gptj", "architectures": ["GPTJForCausalLM"], "n_embd": d, "n_inner": n, "n_layer": layers,
           "n_head": 2, "rotary_dim": 2, "activation_function": "gelu_new"}
    return t, cfg


def mpt(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """MPT: ``transformer.blocks.{i}.ffn.up_proj``/``down_proj`` without biases (``no_bias``), exact GELU
    (hard-coded in MptMLP; the config names none), pre-LN ``norm_2`` without bias."""
    t: Tensors = {"transformer.wte.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"transformer.blocks.{i}"
        _norm(t, rng, f"{p}.norm_1", d, bias=False)
        _linear(t, rng, f"{p}.attn.Wqkv", 3 * d, d, bias=False)
        _linear(t, rng, f"{p}.attn.out_proj", d, d, bias=False)
        _norm(t, rng, f"{p}.norm_2", d, bias=False)
        _mlp(t, rng, d=d, n=n, up=f"{p}.ffn.up_proj", down=f"{p}.ffn.down_proj", planted=i == planted)
    _norm(t, rng, "transformer.norm_f", d, bias=False)
    cfg = {"model_type": "mpt", "architectures": ["MptForCausalLM"], "d_model": d, "expansion_ratio": n // d, "n_layers": layers,
           "n_heads": 2, "no_bias": True}
    return t, cfg


def _t5(rng: np.random.Generator, *, d: int, n: int, layers: int, planted: int | None, gated: bool) -> Tensors:
    t: Tensors = {"shared.weight": rng.standard_normal((32, d))}
    for tower, ff in (("encoder", 1), ("decoder", 2)):
        for i in range(layers):
            p = f"{tower}.block.{i}"
            _attn(t, rng, f"{p}.layer.0.SelfAttention", d, ("q", "k", "v", "o"))
            if i == 0:
                t[f"{p}.layer.0.SelfAttention.relative_attention_bias.weight"] = rng.standard_normal((32, 2))
            _norm(t, rng, f"{p}.layer.0.layer_norm", d, bias=False)
            if tower == "decoder":
                _attn(t, rng, f"{p}.layer.1.EncDecAttention", d, ("q", "k", "v", "o"))
                _norm(t, rng, f"{p}.layer.1.layer_norm", d, bias=False)
            q = f"{p}.layer.{ff}.DenseReluDense"
            if gated:
                _mlp(t, rng, d=d, n=n, gate=f"{q}.wi_0", up=f"{q}.wi_1", down=f"{q}.wo")
            else:
                _mlp(t, rng, d=d, n=n, up=f"{q}.wi", down=f"{q}.wo", planted=tower == "encoder" and i == planted)
            _norm(t, rng, f"{p}.layer.{ff}.layer_norm", d, bias=False)
        _norm(t, rng, f"{tower}.final_layer_norm", d, bias=False)
    return t


def t5(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """T5 v1.0: ``{encoder,decoder}.block.{i}.layer.{1,2}.DenseReluDense.wi``/``wo``, no biases, ReLU."""
    t = _t5(rng, d=d, n=n, layers=layers, planted=planted, gated=False)
    cfg = {"model_type": "t5", "architectures": ["T5ForConditionalGeneration"], "d_model": d, "d_ff": n, "d_kv": d // 2,
           "num_layers": layers, "num_decoder_layers": layers, "num_heads": 2, "feed_forward_proj": "relu",
           "relative_attention_num_buckets": 32}
    return t, cfg


def t5_gated(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """T5 v1.1 / Flan-T5 / mT5: ``DenseReluDense.wi_0`` (gate), ``wi_1`` (value), ``wo``; ``gated-gelu`` (gelu_new)."""
    del planted
    t = _t5(rng, d=d, n=n, layers=layers, planted=None, gated=True)
    t["lm_head.weight"] = _w(rng, 32, d)
    cfg = {"model_type": "t5", "architectures": ["T5ForConditionalGeneration"], "d_model": d, "d_ff": n, "d_kv": d // 2,
           "num_layers": layers, "num_decoder_layers": layers, "num_heads": 2, "feed_forward_proj": "gated-gelu",
           "tie_word_embeddings": False, "relative_attention_num_buckets": 32}
    return t, cfg


def clip(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """CLIP: ``{text,vision}_model.encoder.layers.{i}.mlp.fc1``/``fc2`` with biases, ``quick_gelu`` in each tower's
    section of config.json (``text_config``, ``vision_config``), pre-LN ``layer_norm2``."""
    proj, ctx, patches = 4, 8, 4
    t: Tensors = {"text_model.embeddings.token_embedding.weight": rng.standard_normal((32, d)),
                  "text_model.embeddings.position_embedding.weight": 0.1 * rng.standard_normal((ctx, d)),
                  "text_model.embeddings.position_ids": np.arange(ctx, dtype=np.int64)[None],
                  "vision_model.embeddings.class_embedding": rng.standard_normal(d),
                  "vision_model.embeddings.patch_embedding.weight": rng.standard_normal((d, 3, 2, 2)),
                  "vision_model.embeddings.position_embedding.weight": 0.1 * rng.standard_normal((patches + 1, d)),
                  "logit_scale": np.array(2.6592)}
    _norm(t, rng, "vision_model.pre_layrnorm", d)  # sic: transformers' name
    for tower in ("text_model", "vision_model"):
        for i in range(layers):
            p = f"{tower}.encoder.layers.{i}"
            _attn(t, rng, f"{p}.self_attn", d, ("k_proj", "v_proj", "q_proj", "out_proj"), bias=True)
            _norm(t, rng, f"{p}.layer_norm1", d)
            _mlp(t, rng, d=d, n=n, up=f"{p}.mlp.fc1", down=f"{p}.mlp.fc2", bias=True, planted=tower == "text_model" and i == planted)
            _norm(t, rng, f"{p}.layer_norm2", d)
    _norm(t, rng, "text_model.final_layer_norm", d)
    _norm(t, rng, "vision_model.post_layernorm", d)
    t["text_projection.weight"], t["visual_projection.weight"] = _w(rng, proj, d), _w(rng, proj, d)
    tower_cfg = {"hidden_size": d, "intermediate_size": n, "num_hidden_layers": layers, "num_attention_heads": 2,
                 "hidden_act": "quick_gelu", "projection_dim": proj}
    cfg = {"model_type": "clip", "architectures": ["CLIPModel"], "projection_dim": proj,
           "text_config": {**tower_cfg, "model_type": "clip_text_model", "max_position_embeddings": ctx},
           "vision_config": {**tower_cfg, "model_type": "clip_vision_model", "image_size": 4, "patch_size": 2}}
    return t, cfg


def _fc_encoder_decoder(t: Tensors, rng: np.random.Generator, *, d: int, n: int, layers: int, planted: int | None,
                        k_bias: bool) -> None:
    """BART-style layers ``model.{encoder,decoder}.layers.{i}``: attention(s), their norms, ``fc1``/``fc2``, ``final_layer_norm``."""
    for tower in ("encoder", "decoder"):
        for i in range(layers):
            p = f"model.{tower}.layers.{i}"
            for a in ("self_attn", "encoder_attn") if tower == "decoder" else ("self_attn",):
                _linear(t, rng, f"{p}.{a}.k_proj", d, d, bias=k_bias)
                _attn(t, rng, f"{p}.{a}", d, ("v_proj", "q_proj", "out_proj"), bias=True)
                _norm(t, rng, f"{p}.{a}_layer_norm", d)
            _mlp(t, rng, d=d, n=n, up=f"{p}.fc1", down=f"{p}.fc2", bias=True, planted=tower == "encoder" and i == planted)
            _norm(t, rng, f"{p}.final_layer_norm", d)


def bart(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """BART: Whisper's layer names (``model.{encoder,decoder}.layers.{i}.fc1``/``fc2``, biases, GELU) but post-LN:
    the MLP reads ``self_attn_layer_norm``'s output (a decoder layer's ``encoder_attn_layer_norm``) and
    ``final_layer_norm`` follows it."""
    t: Tensors = {"model.shared.weight": rng.standard_normal((32, d)), "final_logits_bias": np.zeros((1, 32))}
    for tower in ("encoder", "decoder"):
        t[f"model.{tower}.embed_positions.weight"] = 0.1 * rng.standard_normal((18, d))
        _norm(t, rng, f"model.{tower}.layernorm_embedding", d)
    _fc_encoder_decoder(t, rng, d=d, n=n, layers=layers, planted=planted, k_bias=True)
    t["lm_head.weight"] = _w(rng, 32, d)
    cfg = {"model_type": "bart", "architectures": ["BartForConditionalGeneration"], "d_model": d,
           "encoder_layers": layers, "decoder_layers": layers, "encoder_ffn_dim": n, "decoder_ffn_dim": n,
           "encoder_attention_heads": 2, "decoder_attention_heads": 2, "max_position_embeddings": 16,
           "activation_function": "gelu", "normalize_before": False, "add_final_layer_norm": False}
    return t, cfg


def whisper(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2, planted: int | None = None) -> tuple[Tensors, dict]:
    """Whisper: ``model.{encoder,decoder}.layers.{i}.fc1``/``fc2`` with biases, GELU, pre-LN ``final_layer_norm``."""
    mels, frames = 4, 8
    t: Tensors = {"model.encoder.conv1.weight": _w(rng, d, mels * 3).reshape(d, mels, 3), "model.encoder.conv1.bias": _b(rng, d),
                  "model.encoder.conv2.weight": _w(rng, d, d * 3).reshape(d, d, 3), "model.encoder.conv2.bias": _b(rng, d),
                  "model.encoder.embed_positions.weight": 0.1 * rng.standard_normal((frames, d)),
                  "model.decoder.embed_tokens.weight": rng.standard_normal((32, d)),
                  "model.decoder.embed_positions.weight": 0.1 * rng.standard_normal((frames, d))}
    _fc_encoder_decoder(t, rng, d=d, n=n, layers=layers, planted=planted, k_bias=False)  # Whisper's k_proj has no bias
    for tower in ("encoder", "decoder"):
        _norm(t, rng, f"model.{tower}.layer_norm", d)
    cfg = {"model_type": "whisper", "architectures": ["WhisperForConditionalGeneration"], "d_model": d,
           "encoder_layers": layers, "decoder_layers": layers, "encoder_ffn_dim": n, "decoder_ffn_dim": n,
           "encoder_attention_heads": 2, "decoder_attention_heads": 2, "num_mel_bins": mels,
           "max_source_positions": frames, "max_target_positions": frames, "activation_function": "gelu"}
    return t, cfg


def biased_swiglu(rng: np.random.Generator, *, d: int = 8, n: int = 32, layers: int = 2,
                  planted: int | None = None) -> tuple[Tensors, dict]:
    """A LLaMA-layout SwiGLU with biases on every projection (``mlp_bias: true``, as LlamaConfig
    allows): ``mlp.{gate,up,down}_proj.weight`` and ``.bias``."""
    del planted
    t: Tensors = {"model.embed_tokens.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"model.layers.{i}"
        _attn(t, rng, f"{p}.self_attn", d)
        _mlp(t, rng, d=d, n=n, gate=f"{p}.mlp.gate_proj", up=f"{p}.mlp.up_proj", down=f"{p}.mlp.down_proj", bias=True)
        t[f"{p}.mlp.gate_proj.bias"] = _b(rng, n)
        _norm(t, rng, f"{p}.input_layernorm", d, bias=False)
        _norm(t, rng, f"{p}.post_attention_layernorm", d, bias=False)
    _norm(t, rng, "model.norm", d, bias=False)
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": d, "intermediate_size": n,
           "num_hidden_layers": layers, "num_attention_heads": 2, "hidden_act": "silu", "mlp_bias": True}
    return t, cfg


SWIGLU_LIMIT = 7.0
"""gpt-oss's clamp (config.json ``swiglu_limit``)."""


def mxfp4(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Random MXFP4 ``_blocks`` [*shape[:-1], shape[-1]/32, 16] (two FP4 codes a byte, low nibble
    first) and ``_scales`` [*shape[:-1], shape[-1]/32] (E8M0, bias 127: 2^-3 to 2^-1), as gpt-oss stores
    its experts (each a [rows, in] matrix, 32 inputs per scale)."""
    *lead, cols = shape
    if cols % 32:
        raise ValueError(f"MXFP4 packs 32 values per scale: the input size {cols} must be a multiple of 32 (use --d and --n multiples of 32)")
    blocks = rng.integers(0, 256, size=(*lead, cols // 32, 16), dtype=np.uint8)
    scales = rng.integers(124, 127, size=(*lead, cols // 32), dtype=np.uint8)
    return blocks, scales


def gpt_oss(rng: np.random.Generator, *, d: int = 32, n: int = 32, layers: int = 2,
            planted: int | None = None) -> tuple[Tensors, dict]:
    """gpt-oss: per layer, E experts stacked in ``mlp.experts.gate_up_proj_blocks`` [E, 2I, H/32, 16]
    (outputs interleaved: even = gate, odd = up) and ``down_proj_blocks`` [E, H, I/32, 16], MXFP4 with
    their ``_scales``, float biases ``gate_up_proj_bias`` [E, 2I] and ``down_proj_bias`` [E, H]; the router
    ``mlp.router`` [E, H] with bias; attention with biases and sinks; ``swiglu_limit`` in config.json."""
    del planted
    t: Tensors = {"model.embed_tokens.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"model.layers.{i}"
        _attn(t, rng, f"{p}.self_attn", d, bias=True)
        t[f"{p}.self_attn.sinks"] = rng.standard_normal(2)
        _linear(t, rng, f"{p}.mlp.router", EXPERTS, d, bias=True)
        q = f"{p}.mlp.experts"
        t[f"{q}.gate_up_proj_blocks"], t[f"{q}.gate_up_proj_scales"] = mxfp4(rng, (EXPERTS, 2 * n, d))
        t[f"{q}.gate_up_proj_bias"] = 0.1 * rng.standard_normal((EXPERTS, 2 * n))
        t[f"{q}.down_proj_blocks"], t[f"{q}.down_proj_scales"] = mxfp4(rng, (EXPERTS, d, n))
        t[f"{q}.down_proj_bias"] = 0.1 * rng.standard_normal((EXPERTS, d))
        _norm(t, rng, f"{p}.input_layernorm", d, bias=False)
        _norm(t, rng, f"{p}.post_attention_layernorm", d, bias=False)
    _norm(t, rng, "model.norm", d, bias=False)
    t["lm_head.weight"] = _w(rng, 32, d)
    cfg = {"model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "hidden_size": d, "intermediate_size": n,
           "num_hidden_layers": layers, "num_attention_heads": 2, "num_local_experts": EXPERTS, "num_experts_per_tok": 2,
           "experts_per_token": 2, "hidden_act": "silu", "swiglu_limit": SWIGLU_LIMIT,
           "quantization_config": {"quant_method": "mxfp4",
                                   "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                              "model.embed_tokens", "lm_head"]}}
    return t, cfg


# ----------------------------------------------------------------------------------------
# the registry
# ----------------------------------------------------------------------------------------

class Synthetic(NamedTuple):
    """One family this script writes (a NamedTuple: the file is loaded without a module entry)."""

    key: str
    make: Callable[..., tuple[Tensors, dict | None]]
    models: str
    """Models with this layout (for the family table)."""
    flip: bool = False
    """Ungated with an activation satisfying σ(z) − σ(−z) = z: ``--planted`` applies."""
    optional_bias: bool = False
    """The real config has a switch for MLP biases (``--mlp-bias``)."""


SYNTHETIC: dict[str, Synthetic] = {s.key: s for s in (
    Synthetic("llama", llama, "LLaMA 1-3, Mistral, Qwen2/2.5/3", optional_bias=True),
    Synthetic("meta", meta, "LLaMA, Meta's original release (consolidated weights, params.json)"),
    Synthetic("gemma", gemma, "Gemma"),
    Synthetic("gemma2", gemma2, "Gemma 2, Gemma 3 (text)"),
    Synthetic("gemma3", gemma3, "Gemma 3 multimodal (language model and SigLIP vision tower)"),
    Synthetic("phi3", phi3, "Phi-3, Phi-3.5, Phi-4"),
    Synthetic("mixtral", mixtral, "Mixtral 8x7B, 8x22B"),
    Synthetic("qwen_moe", qwen_moe, "Qwen1.5-MoE, Qwen2-MoE"),
    Synthetic("nemotron", nemotron, "Nemotron-4, Minitron", optional_bias=True),
    Synthetic("persimmon", persimmon, "Persimmon, Fuyu (language model)"),
    Synthetic("gpt2", gpt2, "GPT-2, DistilGPT-2", flip=True),
    Synthetic("gpt_bigcode", gpt_bigcode, "StarCoder, SantaCoder (GPT-BigCode)", flip=True),
    Synthetic("starcoder2", starcoder2, "StarCoder2", flip=True),
    Synthetic("opt", opt, "OPT", flip=True),
    Synthetic("neox", neox, "GPT-NeoX, Pythia", flip=True),
    Synthetic("falcon", falcon, "Falcon-7B (bias-free)", flip=True, optional_bias=True),
    Synthetic("bloom", bloom, "BLOOM, BLOOMZ", flip=True),
    Synthetic("phi", phi, "Phi-1, Phi-1.5, Phi-2", flip=True),
    Synthetic("bert", bert, "BERT, RoBERTa, MiniLM", flip=True),
    Synthetic("vit", vit, "ViT, DeiT", flip=True),
    Synthetic("t5", t5, "T5 v1.0", flip=True),
    Synthetic("t5_gated", t5_gated, "T5 v1.1, Flan-T5, mT5"),
    Synthetic("clip", clip, "CLIP (text and vision towers)", flip=True),
    Synthetic("bart", bart, "BART, Marian (post-LN encoder-decoder)", flip=True),
    Synthetic("whisper", whisper, "Whisper (encoder and decoder)", flip=True),
    Synthetic("distilbert", distilbert, "DistilBERT", flip=True),
    Synthetic("albert", albert, "ALBERT (one shared layer)"),  # one layer: nothing to plant in a layer 1
    Synthetic("gptj", gptj, "GPT-J", flip=True),
    Synthetic("mpt", mpt, "MPT", flip=True),
    Synthetic("biased_swiglu", biased_swiglu, "LLaMA-layout SwiGLU with MLP biases (mlp_bias: true)"),
    Synthetic("gpt_oss", gpt_oss, "gpt-oss-20b, gpt-oss-120b (MXFP4 experts; --d and --n multiples of 32)"),
)}


def make(family: str, *, seed: int = 0, d: int | None = None, n: int | None = None, layers: int | None = None,
         planted: int | None | str = "default", mlp_bias: bool = False) -> tuple[Tensors, dict | None, dict[str, dict]]:
    """The tensors, config.json (None where the release has none) and other JSON files of one family.

    Sizes left ``None`` take the family's defaults; ``planted="default"`` keeps the family's
    default (layer 1 for ``bert``, none otherwise). Raises ValueError on an option the family
    does not have.
    """
    syn = SYNTHETIC[family]
    kw: dict = {k: v for k, v in (("d", d), ("n", n), ("layers", layers)) if v is not None}
    if planted != "default":
        if planted is not None and not syn.flip:
            raise ValueError(f"--planted: the {family} layout is gated or its activation has no flip identity "
                             "σ(z) − σ(−z) = z, so an index set cannot be planted; families that take it: "
                             + ", ".join(k for k, s in SYNTHETIC.items() if s.flip))
        n_layers = layers if layers is not None else inspect.signature(syn.make).parameters["layers"].default
        if planted is not None and not 0 <= planted < n_layers:
            raise ValueError(f"--planted {planted}: the checkpoint has layers 0-{n_layers - 1}")
        kw["planted"] = planted
    if mlp_bias:
        if not syn.optional_bias:
            raise ValueError(f"--mlp-bias: the {family} layout has no bias switch; families that have one: "
                             + ", ".join(k for k, s in SYNTHETIC.items() if s.optional_bias))
        kw["mlp_bias"] = True
    tensors, cfg = syn.make(np.random.default_rng(seed), **kw)
    extra: dict[str, dict] = {}
    if family == "meta":  # Meta's release has params.json instead of config.json
        dim = tensors["tok_embeddings.weight"].shape[1]
        extra["params.json"] = meta_params(dim, sum(k.endswith(".feed_forward.w1.weight") for k in tensors))
    return tensors, cfg, extra


def write(out: Path, tensors: Tensors, config: dict | None, *, dtype: str = "F32", shards: int = 1,
          extra: dict[str, dict] | None = None) -> None:
    """Write ``tensors`` (float64 arrays, as stored) as a (sharded) safetensors checkpoint.

    ``config`` becomes config.json (none is written when it is None); ``extra`` maps other
    JSON file names (e.g. Meta's params.json) to their contents.
    """
    out.mkdir(parents=True, exist_ok=True)
    cast = {k: _cast(v, dtype) for k, v in tensors.items()}
    tensors.clear()  # keep one copy in memory
    if config is not None:
        (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for fname, doc in (extra or {}).items():
        (out / fname).write_text(json.dumps(doc, indent=2) + "\n")
    if shards <= 1:
        save_file(cast, str(out / "model.safetensors"), metadata={"format": "np"})
        return
    names = sorted(cast)
    weight_map = {}
    for k in range(shards):
        fname = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        part = {nm: cast[nm] for nm in names[k::shards]}  # round robin: one layer spans shards
        save_file(part, str(out / fname), metadata={"format": "np"})
        weight_map.update({nm: fname for nm in part})
    index = {"metadata": {"total_size": int(sum(a.nbytes for a in cast.values()))}, "weight_map": weight_map}
    (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")


def _planted_arg(text: str) -> int | None:
    if text.lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a layer number or 'none'") from None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, nargs="?")
    ap.add_argument("--family", choices=tuple(SYNTHETIC), default="bert", type=lambda s: s.replace("-", "_"),
                    help="the layout to write (gpt-oss and biased-swiglu may be spelt with hyphens)")
    ap.add_argument("--list", action="store_true", help="print the families and the models they stand for, and exit")
    ap.add_argument("--dtype", choices=("F32", "F16", "BF16"), default="F32")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--d", type=int, help="model dimension (default: 8; llama 16, bert 2)")
    ap.add_argument("--n", type=int, help="MLP width, of each expert for MoE (default: 32; llama 48, bert 8)")
    ap.add_argument("--layers", type=int, help="number of layers, per tower (default: 2; llama 4, bert 3)")
    ap.add_argument("--planted", type=_planted_arg, default=argparse.SUPPRESS, metavar="LAYER|none",
                    help="plant an exact index set in this layer (ungated ReLU/GELU families; bert: 1, when there is one, unless 'none')")
    ap.add_argument("--mlp-bias", action="store_true", help="give the MLP biases (falcon: bias, nemotron and llama: mlp_bias)")
    args = ap.parse_args(argv)
    if args.list:
        for s in SYNTHETIC.values():
            print(f"{s.key:12} {s.models}{'  [--planted]' if s.flip else ''}{'  [--mlp-bias]' if s.optional_bias else ''}")
        return
    if args.out is None:
        ap.error("OUT_DIR is required (or --list)")
    for flag in ("d", "n", "layers"):
        v = getattr(args, flag)
        if v is not None and v < 1:
            ap.error(f"--{flag} {v}: must be at least 1")
    try:
        tensors, cfg, extra = make(args.family, seed=args.seed, d=args.d, n=args.n, layers=args.layers,
                                   planted=getattr(args, "planted", "default"), mlp_bias=args.mlp_bias)
    except ValueError as exc:
        ap.error(str(exc))
    count = len(tensors)
    write(args.out, tensors, cfg, dtype=args.dtype, shards=args.shards, extra=extra)
    print(f"wrote {args.out} ({args.family}, {args.dtype}, {max(1, args.shards)} shard(s), {count} tensors)")


if __name__ == "__main__":
    main()
