"""Orientation and roles without config.json: d from the tensors that fix it, both readings when none does.

A GPT-2-named checkpoint stored as ``nn.Linear`` (``c_fc`` [n, d]) used to be transposed as if
it were Conv1D, reporting d and n swapped; the embedding ``wte`` [vocab, d] fixes d. The
command suggested for an unknown layout must name the right tensors, with ``{i}``, and read
the layers it names — or be absent, with the readings stated.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from absorb._errors import InvalidInput
from absorb.io.families import suggest_roles
from absorb.io.safetensors import open_checkpoint

D, N, L = 16, 64, 3


def _save(d: Path, t: dict[str, np.ndarray]) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    save_file(t, str(d / "model.safetensors"))
    return d


def _gpt2(rng: np.random.Generator, *, conv1d: bool, wte: bool) -> dict[str, np.ndarray]:
    t = {"transformer.wte.weight": rng.standard_normal((256, D)).astype(np.float32)} if wte else {}
    for i in range(2):
        up, down = rng.standard_normal((N, D)).astype(np.float32), rng.standard_normal((D, N)).astype(np.float32)
        t[f"transformer.h.{i}.mlp.c_fc.weight"] = np.ascontiguousarray(up.T) if conv1d else up
        t[f"transformer.h.{i}.mlp.c_proj.weight"] = np.ascontiguousarray(down.T) if conv1d else down
        t[f"transformer.h.{i}.mlp.c_fc.bias"] = rng.standard_normal(N).astype(np.float32)
        t[f"transformer.h.{i}.mlp.c_proj.bias"] = rng.standard_normal(D).astype(np.float32)
    return t


@pytest.mark.parametrize("conv1d", [False, True], ids=["nn.Linear", "Conv1D"])
def test_gpt2_names_orientation_from_embedding(tmp_path: Path, conv1d: bool) -> None:
    t = _gpt2(np.random.default_rng(0), conv1d=conv1d, wte=True)
    ck = open_checkpoint(_save(tmp_path, t), activation="gelu_tanh")
    assert [(s.d, s.n, s.transposed) for s in ck.specs] == [(D, N, conv1d)] * 2
    blk = ck.block(ck.specs[0])
    up = t["transformer.h.0.mlp.c_fc.weight"]
    assert np.array_equal(blk.W_up, (up.T if conv1d else up).astype(np.float64))


def test_gpt2_names_without_anything_fixing_d_refused_with_both_readings(tmp_path: Path) -> None:
    t = _gpt2(np.random.default_rng(1), conv1d=False, wte=False)
    with pytest.raises(InvalidInput, match=rf"reads two ways .* as Conv1D \[in, out\] \(GPT-2\) d = {N}, n = {D}; "
                                           rf"as nn.Linear \[out, in\] \(GPT-BigCode\) d = {D}, n = {N}"):
        open_checkpoint(_save(tmp_path, t), activation="gelu_tanh")


def _square(conv1d: bool, attn: bool) -> dict[str, np.ndarray]:
    """A GPT-2-named MLP with n = d (both readings fit every shape), stored as Conv1D or as nn.Linear."""
    rng = np.random.default_rng(2)
    up, down = rng.standard_normal((D, D)).astype(np.float32), rng.standard_normal((D, D)).astype(np.float32)
    t = {"transformer.wte.weight": rng.standard_normal((256, D)).astype(np.float32),
         "transformer.h.0.mlp.c_fc.weight": np.ascontiguousarray(up.T) if conv1d else up,
         "transformer.h.0.mlp.c_proj.weight": np.ascontiguousarray(down.T) if conv1d else down}
    if attn:  # (Conv1D [d, 3d]; nn.Linear multi-query [d + 2·head_dim, d])
        t["transformer.h.0.attn.c_attn.weight"] = np.zeros((D, 3 * D) if conv1d else (D + 8, D), np.float32)
    return t


@pytest.mark.parametrize("conv1d", [False, True], ids=["nn.Linear", "Conv1D"])
@pytest.mark.parametrize("told_by", ["model_type", "c_attn"])
def test_square_mlp_orientation_told_by_the_model_type_or_the_attention(tmp_path: Path, conv1d: bool, told_by: str) -> None:
    # a square GPT-BigCode MLP was read as GPT-2's Conv1D and transposed: the verdict was about another f
    t = _square(conv1d, attn=told_by == "c_attn")
    if told_by == "model_type":
        (tmp_path / "config.json").write_text(
            json.dumps({"model_type": "gpt2" if conv1d else "gpt_bigcode", "n_embd": D, "n_inner": D}))
    ck = open_checkpoint(_save(tmp_path, t), activation="gelu_tanh")
    assert [s.transposed for s in ck.specs] == [conv1d]
    up = t["transformer.h.0.mlp.c_fc.weight"]
    assert np.array_equal(ck.block(ck.specs[0]).W_up, (up.T if conv1d else up).astype(np.float64))


def test_square_mlp_with_nothing_telling_the_orientation_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"c_fc.weight \[16, 16\] is square, so it reads both as Conv1D"):
        open_checkpoint(_save(tmp_path, _square(False, attn=False)), activation="gelu_tanh")


def _custom(rng: np.random.Generator, *, gate: bool = False, emb: bool = True) -> dict[str, np.ndarray]:
    t = {"tok.emb.weight": rng.standard_normal((100, D)).astype(np.float32)} if emb else {}
    t["final_norm.weight"] = np.ones(D, dtype=np.float32)
    for i in range(L):
        t[f"blocks.{i}.ff.proj_in.weight"] = rng.standard_normal((N, D)).astype(np.float32)
        t[f"blocks.{i}.ff.proj_out.weight"] = rng.standard_normal((D, N)).astype(np.float32)
        t[f"blocks.{i}.ff.scale.weight"] = rng.standard_normal((1, 192)).astype(np.float32)  # a [1, 192] vector: no role
        t[f"blocks.{i}.attn.qkv.weight"] = rng.standard_normal((3 * D, D)).astype(np.float32)
        t[f"blocks.{i}.attn.out.weight"] = rng.standard_normal((D, D)).astype(np.float32)
        if gate:
            t[f"blocks.{i}.ff.w_gate.weight"] = rng.standard_normal((N, D)).astype(np.float32)
    return t


def _command(msg: str) -> dict[str, str]:
    m = re.search(r"--up '([^']+)' --down '([^']+)'(?: --gate '([^']+)')?", msg)
    assert m, msg
    return {k: v for k, v in zip(("up", "down", "gate"), m.groups()) if v}


@pytest.mark.parametrize("gate", [False, True], ids=["ungated", "gated"])
def test_suggested_command_reads_the_layers_it_names(tmp_path: Path, gate: bool) -> None:
    t = _custom(np.random.default_rng(2), gate=gate)
    p = _save(tmp_path, t)
    with pytest.raises(InvalidInput, match="the shapes fit one reading") as exc:
        open_checkpoint(p)
    roles = _command(str(exc.value))
    assert roles["up"] == "blocks.{i}.ff.proj_in.weight" and roles["down"] == "blocks.{i}.ff.proj_out.weight"
    assert roles.get("gate") == ("blocks.{i}.ff.w_gate.weight" if gate else None)
    ck = open_checkpoint(p, activation="swiglu" if gate else "relu", **roles)
    assert [(s.layer, s.d, s.n) for s in ck.specs] == [(i, D, N) for i in range(L)]
    for spec, blk in zip(ck.specs, ck.blocks()):
        assert np.array_equal(blk.W_up, t[f"blocks.{spec.layer}.ff.proj_in.weight"].astype(np.float64))
        assert np.array_equal(blk.W_down, t[f"blocks.{spec.layer}.ff.proj_out.weight"].astype(np.float64))


def test_no_command_when_the_reading_is_ambiguous() -> None:
    shapes = {k: v.shape for k, v in _custom(np.random.default_rng(3), emb=False).items() if "norm" not in k and "attn" not in k}
    cmd, why = suggest_roles(shapes)
    assert cmd is None and "nothing fixes the hidden size d" in why
    assert f"--up 'blocks.{{i}}.ff.proj_in.weight' --down 'blocks.{{i}}.ff.proj_out.weight' gives d = {D}, n = {N}" in why
    assert f"--up 'blocks.{{i}}.ff.proj_out.weight' --down 'blocks.{{i}}.ff.proj_in.weight' gives d = {N}, n = {D}" in why
    # two [n, d] tensors, neither named a gate: no command
    shapes = {k: v.shape for k, v in _custom(np.random.default_rng(3), gate=True).items()}
    shapes = {k.replace("w_gate", "w_other"): v for k, v in shapes.items()}
    cmd, why = suggest_roles(shapes)
    assert cmd is None and "no name says which is the gate" in why


def test_config_hidden_size_and_activation_used(tmp_path: Path) -> None:
    shapes = {k: v.shape for k, v in _custom(np.random.default_rng(4), emb=False).items() if "norm" not in k and "attn" not in k}
    cmd, _ = suggest_roles(shapes, {"hidden_size": D, "hidden_act": "gelu"})
    assert cmd == "--up 'blocks.{i}.ff.proj_in.weight' --down 'blocks.{i}.ff.proj_out.weight'"
    cmd, why = suggest_roles(shapes, {"hidden_size": N})
    assert cmd == "--up 'blocks.{i}.ff.proj_out.weight' --down 'blocks.{i}.ff.proj_in.weight' --activation NAME", why


@pytest.mark.parametrize("sel", ["halves", "interleaved"])
def test_fused_gate_up_sliced_from_the_command_line(tmp_path: Path, sel: str) -> None:
    """A fused gate/up tensor with custom names: --gate 'W[:half]' --up 'W[half:]' (or [0::2]/[1::2])."""
    rng = np.random.default_rng(5)
    t = {"tok.emb.weight": rng.standard_normal((50, D)).astype(np.float32)}
    for i in range(2):
        t[f"net.{i}.ff.w12.weight"] = rng.standard_normal((2 * N, D)).astype(np.float32)
        t[f"net.{i}.ff.w12.bias"] = rng.standard_normal(2 * N).astype(np.float32)
        t[f"net.{i}.ff.w3.weight"] = rng.standard_normal((D, N)).astype(np.float32)
    p = _save(tmp_path, t)
    g, u = ("[:half]", "[half:]") if sel == "halves" else ("[0::2]", "[1::2]")
    ck = open_checkpoint(p, gate="net.{i}.ff.w12.weight" + g, up="net.{i}.ff.w12.weight" + u, down="net.{i}.ff.w3",
                         activation="swiglu")
    assert [(s.layer, s.d, s.n) for s in ck.specs] == [(0, D, N), (1, D, N)]
    rows_g, rows_u = (slice(0, N), slice(N, None)) if sel == "halves" else (slice(0, None, 2), slice(1, None, 2))
    for spec, blk in zip(ck.specs, ck.blocks()):
        W, b = t[f"net.{spec.layer}.ff.w12.weight"].astype(np.float64), t[f"net.{spec.layer}.ff.w12.bias"].astype(np.float64)
        assert np.array_equal(blk.W_gate, W[rows_g]) and np.array_equal(blk.W_up, W[rows_u])
        assert np.array_equal(blk.b_gate, b[rows_g]) and np.array_equal(blk.b_up, b[rows_u])
    with pytest.raises(InvalidInput, match=r"rows are selected with \[:half\]"):
        open_checkpoint(p, gate="net.{i}.ff.w12.weight[0:3]", up="net.{i}.ff.w12.weight[half:]", down="net.{i}.ff.w3",
                        activation="swiglu")


def test_fused_layout_named_with_both_slicings_not_guessed() -> None:
    shapes = {"tok.emb.weight": (50, D)}
    for i in range(2):
        shapes |= {f"net.{i}.ff.w12.weight": (2 * N, D), f"net.{i}.ff.w3.weight": (D, N)}
    cmd, why = suggest_roles(shapes)
    assert cmd is None
    assert "--gate 'net.{i}.ff.w12.weight[:half]' --up 'net.{i}.ff.w12.weight[half:]' --down 'net.{i}.ff.w3.weight'" in why
    assert "--gate 'net.{i}.ff.w12.weight[0::2]' --up 'net.{i}.ff.w12.weight[1::2]'" in why


def test_an_ungated_layout_with_a_gate_beside_it_is_refused(tmp_path: Path) -> None:
    # llm-foundry's mptglu MPT stores ffn.gate_proj beside up_proj/down_proj: read as the ungated MPT MLP, the gate was ignored
    rng = np.random.default_rng(3)
    p = "transformer.blocks.0.ffn."
    t = {p + "up_proj.weight": rng.standard_normal((N, D)).astype(np.float32),
         p + "down_proj.weight": rng.standard_normal((D, N)).astype(np.float32),
         p + "gate_proj.weight": rng.standard_normal((N, D)).astype(np.float32)}
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mpt", "d_model": D}))
    with pytest.raises(InvalidInput, match="holds transformer.blocks.0.ffn.gate_proj.weight beside its up and down projections"):
        open_checkpoint(_save(tmp_path, t))


@pytest.mark.parametrize("scale", ["lambda_2", "layer_scale2.lambda1", "gate_ffn"])
def test_a_scaled_mlp_branch_is_refused_not_read_unscaled(tmp_path: Path, scale: str) -> None:
    # BEiT's lambda_2 (h + λ ⊙ B(norm(h))) was ignored: the verdict was about x + B(x)
    rng = np.random.default_rng(4)
    p = "beit.encoder.layer.0."
    t = {p + "intermediate.dense.weight": rng.standard_normal((N, D)).astype(np.float32),
         p + "output.dense.weight": rng.standard_normal((D, N)).astype(np.float32),
         p + "layernorm_after.weight": np.ones(D, np.float32), p + scale: np.full(1 if scale == "gate_ffn" else D, 0.5, np.float32)}
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "beit", "hidden_size": D, "hidden_act": "gelu"}))
    with pytest.raises(InvalidInput, match=f"{re.escape(scale)} .* scales the MLP branch of beit.encoder.layer.0"):
        open_checkpoint(_save(tmp_path, t))


def _fc_post_or_pre(tmp_path: Path, model_type: str | None) -> Path:
    rng = np.random.default_rng(5)
    p = "model.encoder.layers.0."
    t = {"model.shared.weight": rng.standard_normal((40, D)).astype(np.float32),
         p + "fc1.weight": rng.standard_normal((N, D)).astype(np.float32), p + "fc2.weight": rng.standard_normal((D, N)).astype(np.float32)}
    for norm in ("self_attn_layer_norm", "final_layer_norm"):
        t[p + norm + ".weight"], t[p + norm + ".bias"] = np.ones(D, np.float32), np.zeros(D, np.float32)
    tmp_path.mkdir(parents=True, exist_ok=True)
    if model_type is not None:
        (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type, "d_model": D, "activation_function": "relu"}))
    return _save(tmp_path, t)


@pytest.mark.parametrize("model_type", ["fsmt", "time_series_transformer", None])
def test_fold_norm_on_a_layout_shared_by_pre_and_post_norm_models_needs_a_known_model_type(tmp_path: Path, model_type) -> None:
    # FSMT, DETR, the time-series transformers and fairseq's default are post-LN: final_layer_norm follows the MLP,
    # and folding it (as for OPT) gave a verdict about another f
    with pytest.raises(InvalidInput, match="--fold-norm: .* shared by pre-norm models"):
        open_checkpoint(_fc_post_or_pre(tmp_path, model_type), fold_norm=True, activation="relu")
    assert open_checkpoint(_fc_post_or_pre(tmp_path / "m", "mbart"), fold_norm=True).specs[0].norm.weight.endswith("final_layer_norm.weight")


def test_gpt1_is_post_norm_and_names_its_activation_afn(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    t = {"tokens_embed.weight": rng.standard_normal((40, D)).astype(np.float32),
         "h.0.mlp.c_fc.weight": rng.standard_normal((D, N)).astype(np.float32),
         "h.0.mlp.c_proj.weight": rng.standard_normal((N, D)).astype(np.float32)}
    for norm in ("ln_1", "ln_2"):
        t[f"h.0.{norm}.weight"], t[f"h.0.{norm}.bias"] = np.ones(D, np.float32), np.zeros(D, np.float32)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "openai-gpt", "n_embd": D, "afn": "gelu"}))
    spec = open_checkpoint(_save(tmp_path, t), fold_norm=True).specs[0]
    assert spec.norm.weight == "h.0.ln_1.weight" and spec.activation == "gelu" and spec.residual.startswith("post-norm")


def test_t5s_dense_act_fn_names_the_gate_where_it_differs(tmp_path: Path) -> None:
    # Pop2Piano: feed_forward_proj 'gated-gelu' with dense_act_fn 'relu' — its layers call ReLU (was read as gelu_tanh)
    rng = np.random.default_rng(7)
    p = "encoder.block.0.layer.1.DenseReluDense."
    t = {"shared.weight": rng.standard_normal((40, D)).astype(np.float32),
         p + "wi_0.weight": rng.standard_normal((N, D)).astype(np.float32), p + "wi_1.weight": rng.standard_normal((N, D)).astype(np.float32),
         p + "wo.weight": rng.standard_normal((D, N)).astype(np.float32)}
    cfg = {"model_type": "t5", "d_model": D, "feed_forward_proj": "gated-gelu", "dense_act_fn": "relu"}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert open_checkpoint(_save(tmp_path, t)).specs[0].activation in ("relu", "reglu")
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "dense_act_fn": "gelu_new"}))  # (T5's own: unchanged)
    assert open_checkpoint(tmp_path).specs[0].activation in ("gelu_tanh", "geglu_tanh")


def test_olmo2_has_no_norm_before_its_mlp_to_fold(tmp_path: Path) -> None:
    # OLMo 2's post_attention_layernorm normalises the attention's output; its MLP reads h itself
    rng = np.random.default_rng(8)
    p = "model.layers.0."
    t = {"model.embed_tokens.weight": rng.standard_normal((40, D)).astype(np.float32),
         p + "mlp.gate_proj.weight": rng.standard_normal((N, D)).astype(np.float32),
         p + "mlp.up_proj.weight": rng.standard_normal((N, D)).astype(np.float32),
         p + "mlp.down_proj.weight": rng.standard_normal((D, N)).astype(np.float32),
         p + "post_attention_layernorm.weight": np.ones(D, np.float32), p + "post_feedforward_layernorm.weight": np.ones(D, np.float32)}
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "olmo2", "hidden_size": D, "hidden_act": "silu"}))
    ck = open_checkpoint(_save(tmp_path, t))
    assert ck.specs[0].residual.startswith("post-MLP norm only")
    with pytest.raises(InvalidInput, match="--fold-norm: no norm found before"):
        open_checkpoint(tmp_path, fold_norm=True)
