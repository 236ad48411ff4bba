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
from tests.test_checkpoints import _assert_one_line_exit2, run_cli

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
        t[f"blocks.{i}.misc.weight"] = rng.standard_normal((1, 192)).astype(np.float32)  # a [1, 192] vector: no role
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


def test_no_command_where_the_mlp_module_holds_a_tensor_it_would_not_read(tmp_path: Path) -> None:
    """Advice is a reading: a [1, 192] ff.scale beside the projections (RWKV's receptance, a scale) may change what the
    block computes, so no ready-made command is printed — the refusal names the tensor."""
    t = _custom(np.random.default_rng(2))
    for i in range(L):
        t[f"blocks.{i}.ff.scale.weight"] = t.pop(f"blocks.{i}.misc.weight")
    with pytest.raises(InvalidInput, match=r"fits the shapes, but blocks\.0\.ff holds blocks\.0\.ff\.scale\.weight") as exc:
        open_checkpoint(_save(tmp_path, t))
    assert "--up 'blocks.{i}.ff.proj_in.weight' --down 'blocks.{i}.ff.proj_out.weight' --activation" not in str(exc.value)


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


def _mlp(rng: np.random.Generator, p: str, up: str, down: str, *, biases: bool = False) -> dict[str, np.ndarray]:
    t = {f"{p}.{up}.weight": rng.standard_normal((N, D)).astype(np.float32), f"{p}.{down}.weight": rng.standard_normal((D, N)).astype(np.float32)}
    if biases:
        t |= {f"{p}.{up}.bias": rng.standard_normal(N).astype(np.float32), f"{p}.{down}.bias": rng.standard_normal(D).astype(np.float32)}
    return t


@pytest.mark.parametrize("kind", ["mpt", "neox"])
def test_awq_activation_scales_beside_an_mlp_are_refused_by_name(tmp_path: Path, kind: str) -> None:
    # AutoAWQ's ScaledActivation (act(x) / s, written by llama.cpp's apply_awq or export_compatible) was ignored: the
    # verdict was about down(act(up x)) instead of down(act(up x) / s)
    rng = np.random.default_rng(9)
    if kind == "mpt":
        p, t = "transformer.blocks.0.ffn", _mlp(rng, "transformer.blocks.0.ffn", "up_proj", "down_proj")
        cfg = {"model_type": "mpt", "d_model": D}
    else:
        p, t = "gpt_neox.layers.0.mlp", _mlp(rng, "gpt_neox.layers.0.mlp", "dense_h_to_4h", "dense_4h_to_h", biases=True)
        cfg = {"model_type": "gpt_neox", "hidden_size": D, "hidden_act": "gelu"}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert open_checkpoint(_save(tmp_path, t)).specs[0].name == p  # (without the scales: read as before)
    t[f"{p}.act.scales"] = np.full(N, 2.0, np.float32)
    with pytest.raises(InvalidInput, match=rf"{re.escape(p)} holds {re.escape(p)}\.act\.scales beside .*AutoAWQ's ScaledActivation"):
        open_checkpoint(_save(tmp_path, t))
    _assert_one_line_exit2(run_cli(str(tmp_path)), f"{p}.act.scales beside its up and down projections")


def test_a_tensor_inside_the_mlp_module_that_is_not_read_is_refused_by_name(tmp_path: Path) -> None:
    # an unmerged LoRA adapter (or anything else) inside the MLP's own module changes the block: named, not ignored
    rng = np.random.default_rng(10)
    p = "model.layers.0.mlp"
    t = {**_mlp(rng, p, "up_proj", "down_proj"), f"{p}.gate_proj.weight": rng.standard_normal((N, D)).astype(np.float32),
         f"{p}.up_proj.lora_A.weight": rng.standard_normal((2, D)).astype(np.float32)}
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": D}))
    with pytest.raises(InvalidInput, match=rf"holds {re.escape(p)}\.up_proj\.lora_A\.weight beside .* inside the module of the projection"):
        open_checkpoint(_save(tmp_path, t))
    t[f"{p}.adapter.weight"] = t.pop(f"{p}.up_proj.lora_A.weight")  # (beside the projections, in the MLP's module)
    with pytest.raises(InvalidInput, match=rf"holds {re.escape(p)}\.adapter\.weight beside .* none of the projections"):
        open_checkpoint(_save(tmp_path, t))
    del t[f"{p}.adapter.weight"]
    assert open_checkpoint(_save(tmp_path, t)).specs[0].gated


@pytest.mark.parametrize("layout", ["dinov2", "timm"])
def test_roles_named_by_hand_refuse_a_branch_scale_at_their_layer(tmp_path: Path, layout: str) -> None:
    # DINOv2 (layer_scale2.lambda1) and timm LayerScale (ls2.gamma) compute h + λ ⊙ B(norm(h)): the unknown-layout refusal
    # printed --up/--down for them, and that command decided x + B(x)
    rng = np.random.default_rng(11)
    root, scale = ("encoder.layer.{i}", "layer_scale2.lambda1") if layout == "dinov2" else ("blocks.{i}", "ls2.gamma")
    t = {"layernorm.weight": np.ones(D, np.float32)}
    for i in range(2):
        t |= _mlp(rng, root.format(i=i) + ".mlp", "fc1", "fc2", biases=True)
        t[f"{root.format(i=i)}.{scale}"] = np.full(D, 0.5, np.float32)
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": D, "hidden_act": "gelu"}))
    p = _save(tmp_path, t)
    with pytest.raises(InvalidInput, match="no known MLP layout") as exc:
        open_checkpoint(p)
    assert "the shapes fit one reading" not in str(exc.value) and f"{root.format(i=0)}.{scale} [{D}] scales the MLP branch" in str(exc.value)
    with pytest.raises(InvalidInput, match=rf"{re.escape(root.format(i=0))}\.{re.escape(scale)} \[{D}\] scales the MLP branch"):
        open_checkpoint(p, up=f"{root}.mlp.fc1.weight", down=f"{root}.mlp.fc2.weight")
    for i in range(2):
        del t[f"{root.format(i=i)}.{scale}"]
    assert len(open_checkpoint(_save(tmp_path, t), up=f"{root}.mlp.fc1.weight", down=f"{root}.mlp.fc2.weight").specs) == 2


def _btlm(tmp_path: Path, *, config: bool) -> tuple[Path, dict[str, np.ndarray]]:
    rng = np.random.default_rng(12)
    p = "transformer.h.0.mlp"
    t = {"transformer.wte.weight": rng.standard_normal((30, D)).astype(np.float32), "transformer.h.0.ln_2.weight": np.ones(D, np.float32)}
    for name, shape in (("c_fc", (D, N)), ("c_fc2", (D, N)), ("c_proj", (N, D))):  # Conv1D [in, out]
        t[f"{p}.{name}.weight"] = rng.standard_normal(shape).astype(np.float32)
        t[f"{p}.{name}.bias"] = rng.standard_normal(shape[1]).astype(np.float32)
    if config:
        (tmp_path / "config.json").write_text(json.dumps({"model_type": "btlm", "activation_function": "swiglu", "n_embd": D}))
    return _save(tmp_path, t), t


@pytest.mark.parametrize("config", [True, False], ids=["config", "no-config"])
def test_btlm_jais_second_input_projection_c_fc2_is_refused_by_name(tmp_path: Path, config: bool) -> None:
    # BTLM / JAIS: c_proj(c_fc(x) ⊙ silu(c_fc2(x))) under GPT-2 names. c_fc2 was ignored; the refusal named a key that does
    # not exist (W_gate) and advised --activation silu (or, without config.json, gelu_new), which decided another f
    p, t = _btlm(tmp_path, config=config)
    for act in (None, "silu"):
        with pytest.raises(InvalidInput, match=r"holds transformer\.h\.0\.mlp\.c_fc2\.(bias|weight) beside .* a second input "
                                               "projection") as exc:
            open_checkpoint(p, activation=act)
        assert "W_gate" not in str(exc.value) and "--activation silu" not in str(exc.value) and "gelu_new" not in str(exc.value)
    cmd = _command(str(exc.value))  # the command it gives reads the gated block: gate c_fc2, value c_fc, Conv1D transposed
    blk = next(open_checkpoint(p, activation="swiglu", **cmd).blocks())
    assert np.array_equal(blk.W_gate, t["transformer.h.0.mlp.c_fc2.weight"].T) and np.array_equal(blk.W_up, t["transformer.h.0.mlp.c_fc.weight"].T)
    assert np.array_equal(blk.W_down, t["transformer.h.0.mlp.c_proj.weight"].T) and np.array_equal(blk.b_gate, t["transformer.h.0.mlp.c_fc2.bias"])


def test_chatglm6b_alpha_scaled_skip_is_refused_not_read_as_the_identity(tmp_path: Path) -> None:
    # ChatGLM-6B / GLM-130B: output = α·mlp_input + mlp(mlp_input), α = √(2·num_layers). It was read as x + B(x) (called a
    # parallel residual), and the refusal for want of an activation advised an --activation that then decided another f
    rng = np.random.default_rng(13)
    t = {"transformer.word_embeddings.weight": rng.standard_normal((30, D)).astype(np.float32)}
    for i in range(2):
        t |= _mlp(rng, f"transformer.layers.{i}.mlp", "dense_h_to_4h", "dense_4h_to_h", biases=True)
        t[f"transformer.layers.{i}.post_attention_layernorm.weight"] = np.ones(D, np.float32)
    cfg = {"model_type": "chatglm", "hidden_size": D, "inner_hidden_size": N, "num_layers": 2, "position_encoding_2d": True}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    p = _save(tmp_path, t)
    for act in (None, "gelu", "gelu_tanh"):
        with pytest.raises(InvalidInput, match=r"model_type 'chatglm'.*scales the MLP's skip.*α = √\(2·num_layers\)") as exc:
            open_checkpoint(p, activation=act)
        assert "--activation" not in str(exc.value) and "parallel residual: the layer computes" not in str(exc.value)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt_neox", "hidden_size": D, "hidden_act": "gelu"}))
    assert len(open_checkpoint(p).specs) == 2  # (GPT-NeoX, the same names: read as before)


def test_encoder_decoder_config_sections_name_each_towers_activation(tmp_path: Path) -> None:
    # VisionEncoderDecoder (ViT + GPT-2 captioners, TrOCR, Donut…) nests the towers' configs under 'encoder' and 'decoder':
    # it was refused as naming no activation (and --activation would have given both towers one)
    rng = np.random.default_rng(14)
    t = {**_mlp(rng, "encoder.encoder.layer.0", "intermediate.dense", "output.dense", biases=True),
         "encoder.encoder.layer.0.layernorm_after.weight": np.ones(D, np.float32),
         "decoder.transformer.h.0.mlp.c_fc.weight": rng.standard_normal((D, N)).astype(np.float32),
         "decoder.transformer.h.0.mlp.c_proj.weight": rng.standard_normal((N, D)).astype(np.float32),
         "decoder.transformer.h.0.ln_2.weight": np.ones(D, np.float32)}
    cfg = {"model_type": "vision-encoder-decoder", "encoder": {"model_type": "vit", "hidden_act": "gelu", "hidden_size": D},
           "decoder": {"model_type": "gpt2", "activation_function": "gelu_new", "n_embd": D}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    specs = {s.name: s for s in open_checkpoint(_save(tmp_path, t)).specs}
    assert specs["encoder.encoder.layer.0"].activation == "gelu" and specs["decoder.transformer.h.0.mlp"].activation == "gelu_tanh"
    assert specs["decoder.transformer.h.0.mlp"].transposed and specs["decoder.transformer.h.0.mlp"].d == D


_BERT_NORMS = {"esm": "LayerNorm", "megatron-bert": "ln", "roberta-prelayernorm": "intermediate.LayerNorm"}


@pytest.mark.parametrize(("model_type", "said"), [
    *((mt, "pre-norm: the layer computes h + B(norm(h))") for mt in _BERT_NORMS),
    ("stablelm", "parallel: the layer computes h + attn(norm(h)) + B(norm(h))"),
    ("glm4", "pre-norm with a post-MLP norm"),
    ("minicpmv", "pre-norm: the layer computes h + B(norm(h))"),
    ("qwen2_moe", "an expert of a mixture-of-experts MLP"),
    ("fsmt", "post-norm: the layer computes norm(h + B(h))"),
])
def test_wiring_sentence_follows_the_model(tmp_path: Path, model_type: str, said: str) -> None:
    # ESM, Megatron-BERT and RoBERTa-PreLayerNorm are pre-LN (were said post-norm); StableLM's use_parallel_residual, GLM-4's
    # post_mlp_layernorm, MiniCPM-V 2.6's Qwen2 LLM (no scaled branch), a router-weighted expert and FSMT (post-LN) were
    # each said to be something they are not (the block decided, x + B(x), is the same: only the sentence was wrong)
    rng = np.random.default_rng(15)
    cfg: dict[str, object] = {"model_type": model_type, "hidden_size": D, "hidden_act": "gelu"}
    if model_type in _BERT_NORMS:
        p = "encoder.layer.0"
        t = {**_mlp(rng, p, "intermediate.dense", "output.dense", biases=True), f"{p}.{_BERT_NORMS[model_type]}.weight": np.ones(D, np.float32)}
    elif model_type == "fsmt":
        p = "model.encoder.layers.0"
        t = {**_mlp(rng, p, "fc1", "fc2", biases=True), f"{p}.final_layer_norm.weight": np.ones(D, np.float32)}
        cfg = {"model_type": "fsmt", "d_model": D, "activation_function": "relu"}
    else:
        p = "model.layers.0.mlp" + (".experts.0" if model_type == "qwen2_moe" else "")
        t = {**_mlp(rng, p, "up_proj", "down_proj"), f"{p}.gate_proj.weight": rng.standard_normal((N, D)).astype(np.float32),
             "model.layers.0.input_layernorm.weight": np.ones(D, np.float32)}
        t |= {"model.layers.0.post_mlp_layernorm.weight": np.ones(D, np.float32)} if model_type == "glm4" else {}
        cfg |= {"use_parallel_residual": True} if model_type == "stablelm" else {}
        cfg |= {"version": 2.6} if model_type == "minicpmv" else {}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert open_checkpoint(_save(tmp_path, t)).specs[0].residual.startswith(said)


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
    # modeling_openai maps afn through its own ACT_FNS, where 'gelu' is gelu_new (the tanh GELU), not ACT2FN's erf GELU
    assert spec.norm.weight == "h.0.ln_1.weight" and spec.activation == "gelu_tanh" and spec.residual.startswith("post-norm")
    assert "ACT_FNS" in spec.activation_source
    for afn, act in (("swish", "silu"), ("relu", "relu")):
        (tmp_path / "config.json").write_text(json.dumps({"model_type": "openai-gpt", "n_embd": D, "afn": afn}))
        assert open_checkpoint(tmp_path).specs[0].activation == act
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "openai-gpt", "n_embd": D}))
    assert open_checkpoint(tmp_path).specs[0].activation == "gelu_tanh"  # (OpenAIGPTConfig's default afn = 'gelu')
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "openai-gpt", "n_embd": D, "afn": "gelu_new"}))
    with pytest.raises(InvalidInput, match="afn = 'gelu_new' is not in modeling_openai's ACT_FNS"):
        open_checkpoint(tmp_path)


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


def test_mlp_tensors_of_another_stack_are_named_as_not_analysed() -> None:
    """BridgeTower: the text tower (BERT names) is read, the vision tower's CLIP resblocks are not — the verdict
    covered the text MLP only, without a word about the others; now a note names them. Layers of the stack read
    (a MoE router beside its experts) raise no note."""
    from absorb.io.families import detect

    d, n = 6, 12
    names = {}
    for i in range(2):
        p = f"bridgetower.text_model.encoder.layer.{i}"
        names.update({f"{p}.intermediate.dense.weight": (n, d), f"{p}.intermediate.dense.bias": (n,),
                      f"{p}.output.dense.weight": (d, n), f"{p}.output.dense.bias": (d,), f"{p}.output.LayerNorm.weight": (d,)})
        q = f"bridgetower.vision_model.visual.transformer.resblocks.{i}.mlp"
        names.update({f"{q}.c_fc.weight": (n, d), f"{q}.c_proj.weight": (d, n)})
    det = detect(names, {"model_type": "bert", "hidden_act": "gelu", "hidden_size": d}, source="m")
    note = next((x for x in det.notes if x.startswith("not analysed")), None)
    assert note is not None and "resblocks.0.mlp.c_fc.weight" in note and "4 MLP-looking" in note, det.notes
    moe = {f"model.layers.0.block_sparse_moe.experts.{e}.{w}.weight": s for e in range(2)
           for w, s in (("w1", (n, d)), ("w2", (d, n)), ("w3", (n, d)))}
    moe["model.layers.0.block_sparse_moe.gate.weight"] = (2, d)
    det = detect(moe, {"model_type": "mixtral", "hidden_act": "silu", "hidden_size": d}, source="m")
    assert not any(x.startswith("not analysed") for x in det.notes), det.notes


def test_starcoder2_is_read_with_its_own_layout(tmp_path: Path) -> None:
    """StarCoder2: model.layers.{i}.mlp.c_fc / c_proj are nn.Linear ([out, in]) with biases, σ = hidden_act
    (gelu_pytorch_tanh); it was refused as an unknown layout though the printed command read it."""
    import json

    rng = np.random.default_rng(4)
    t = {}
    for i in range(2):
        p = f"model.layers.{i}"
        t.update({f"{p}.mlp.c_fc.weight": rng.standard_normal((N, D)).astype(np.float32),
                  f"{p}.mlp.c_fc.bias": rng.standard_normal(N).astype(np.float32),
                  f"{p}.mlp.c_proj.weight": rng.standard_normal((D, N)).astype(np.float32),
                  f"{p}.mlp.c_proj.bias": rng.standard_normal(D).astype(np.float32),
                  f"{p}.post_attention_layernorm.weight": np.ones(D, dtype=np.float32),
                  f"{p}.post_attention_layernorm.bias": np.zeros(D, dtype=np.float32)})
    d = _save(tmp_path / "sc2", t)
    (d / "config.json").write_text(json.dumps({"model_type": "starcoder2", "hidden_act": "gelu_pytorch_tanh", "hidden_size": D}))
    ck = open_checkpoint(d)
    for spec, blk in zip(ck.specs, ck.blocks()):
        assert blk.activation_name == "gelu_tanh"
        assert np.array_equal(blk.W_up, t[f"model.layers.{spec.layer}.mlp.c_fc.weight"].astype(np.float64))
        assert np.array_equal(blk.b_down, t[f"model.layers.{spec.layer}.mlp.c_proj.bias"].astype(np.float64))


@pytest.mark.parametrize(("vision_type", "act"), [("clip_vision_model", "quick_gelu"), ("siglip_vision_model", "gelu_tanh"), (None, None)])
def test_a_vision_tower_left_at_its_class_default_activation(tmp_path: Path, vision_type: str | None, act: str | None) -> None:
    """LLaVA / PaliGemma / Gemma 3 configs leave the vision tower's hidden_act out (the class default: CLIP quick_gelu,
    SigLIP gelu_pytorch_tanh); they were refused, with advice (--activation) that would name every tower's activation.
    Without the section's model_type the refusal asks for the section's key, never --activation."""
    import json

    rng = np.random.default_rng(6)
    t = {}
    for i in range(2):
        p = f"vision_tower.vision_model.encoder.layers.{i}"
        t.update({f"{p}.mlp.fc1.weight": rng.standard_normal((N, D)).astype(np.float32),
                  f"{p}.mlp.fc2.weight": rng.standard_normal((D, N)).astype(np.float32),
                  f"{p}.layer_norm2.weight": np.ones(D, dtype=np.float32)})
        q = f"language_model.model.layers.{i}.mlp"
        t.update({f"{q}.gate_proj.weight": rng.standard_normal((N, D)).astype(np.float32),
                  f"{q}.up_proj.weight": rng.standard_normal((N, D)).astype(np.float32),
                  f"{q}.down_proj.weight": rng.standard_normal((D, N)).astype(np.float32)})
    d = _save(tmp_path / "mm", t)
    vision = {"hidden_size": D} | ({"model_type": vision_type} if vision_type else {})
    (d / "config.json").write_text(json.dumps({"model_type": "llava", "vision_config": vision,
                                               "text_config": {"model_type": "llama", "hidden_size": D}}))
    if act is None:
        with pytest.raises(InvalidInput, match="section 'vision_config' of config.json names none") as exc:
            open_checkpoint(d)
        assert "--activation would apply to every tower" in str(exc.value)
        return
    ck = open_checkpoint(d)
    got = {s.name.split(".")[0]: b.activation_name for s, b in zip(ck.specs, ck.blocks())}
    assert got == {"vision_tower": act, "language_model": "swiglu"}, got


def test_tower_sections_of_blip2_and_minicpm_v() -> None:
    """BLIP-2's Q-Former (qformer.encoder.layer.{i}) is described by qformer_config, MiniCPM-V's SigLIP tower (vpm.*) by
    vision_config: both were checked against the language model's section and refused as mismatched."""
    from absorb.io.family_config import config_section

    cfg = {"model_type": "blip-2", "qformer_config": {"hidden_act": "gelu", "hidden_size": 8},
           "text_config": {"model_type": "opt", "hidden_size": 6}, "vision_config": {"hidden_size": 4}}
    assert config_section(cfg, "qformer.encoder.layer.0.intermediate.dense.weight")["hidden_size"] == 8
    assert config_section(cfg, "language_model.model.decoder.layers.0.fc1.weight")["hidden_size"] == 6
    mini = {"model_type": "minicpmv", "hidden_size": 6, "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 4}}
    assert config_section(mini, "vpm.encoder.layers.0.mlp.fc1.weight")["model_type"] == "siglip_vision_model"
    assert config_section(mini, "llm.model.layers.0.mlp.up_proj.weight")["hidden_size"] == 6


@pytest.mark.parametrize(("layout", "extra"), [
    ("internvit", "ls2"),                      # InternViT's bare LayerScale (gguf-py lists it for InternVL)
    ("internvit", "mlp.gamma2.weight"),        # mmpretrain's ffn.gamma2 (a prefix before the scale's name)
    ("internvit", "layer_scale_parameter"),    # HF ConvNeXt
    ("internvit", "ls_2.gamma"),               # open_clip
    ("internvit", "res_scale2.scale"),         # timm MetaFormer: a factor on the skip
    ("opt", "fc2.lora_A.weight"),              # an unmerged loralib adapter inside a projection's module
])
def test_scales_and_adapters_under_more_names_are_refused(tmp_path: Path, layout: str, extra: str) -> None:
    """Branch and skip factors under the names other codebases give them, anywhere under the layer, and tensors inside
    a projection's own module (the projection is then more than W x + b) were read past: a witness 0.36–1.18 off the
    block the layer computes. A norm's TF-style .gamma and the attention's own scale are not such factors."""
    import json

    rng = np.random.default_rng(7)
    t = {}
    for i in range(2):
        if layout == "opt":
            root = f"model.decoder.layers.{i}"
            t |= _mlp(rng, root, "fc1", "fc2", biases=True)
            t[f"{root}.final_layer_norm.weight"] = np.ones(D, dtype=np.float32)
            cfg = {"model_type": "opt", "activation_function": "relu", "hidden_size": D, "do_layer_norm_before": True}
        else:
            root = f"vision_model.encoder.layers.{i}"
            t |= _mlp(rng, root + ".mlp", "fc1", "fc2", biases=True)
            t[f"{root}.norm2.weight"] = np.ones(D, dtype=np.float32)
            cfg = {"model_type": "intern_vit_6b", "hidden_act": "gelu", "hidden_size": D}
        t[f"{root}.{extra}"] = rng.standard_normal((1, D) if "lora" not in extra else (4, N)).astype(np.float32)
        t[f"{root}.attn.layer_scale"] = np.ones(D, dtype=np.float32)   # (the attention's: not the MLP's)
        t[f"{root}.norm1.gamma"] = np.ones(D, dtype=np.float32)          # (a norm's gain, TF naming)
    d = _save(tmp_path / "m", t)
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(InvalidInput, match=re.escape(f"{root.rsplit('.', 1)[0]}.0.{extra}")):
        open_checkpoint(d)
    if layout == "opt":  # (the adapter inside fc2 is refused with roles named by hand too)
        with pytest.raises(InvalidInput, match="lora_A"):
            open_checkpoint(d, up="model.decoder.layers.{i}.fc1.weight", down="model.decoder.layers.{i}.fc2.weight",
                            activation="relu")


def test_gemma3n_activation_sparsity_is_refused(tmp_path: Path) -> None:
    """Gemma 3n keeps only the gate's top activations in layers with activation_sparsity_pattern > 0 (a Gaussian top-k):
    such a layer was decided as a plain GeGLU block."""
    import json

    rng = np.random.default_rng(8)
    t = {}
    for i in range(2):
        q = f"model.language_model.layers.{i}.mlp"
        t |= {f"{q}.{r}.weight": rng.standard_normal((N, D) if r != "down_proj" else (D, N)).astype(np.float32)
              for r in ("gate_proj", "up_proj", "down_proj")}
    d = _save(tmp_path / "g3n", t)
    (d / "config.json").write_text(json.dumps({"model_type": "gemma3n_text", "hidden_activation": "gelu_pytorch_tanh",
                                               "hidden_size": D, "activation_sparsity_pattern": [0.95, 0.0]}))
    with pytest.raises(InvalidInput, match="activation_sparsity_pattern 0.95 for layer 0"):
        open_checkpoint(d)


def test_tower_sections_of_internvl_and_audio_towers() -> None:
    """InternVL keeps its language model under llm_config (it was refused with advice, --activation silu, that named the
    GELU vision tower's activation too); Qwen2-Audio / Voxtral keep their audio tower under audio_config."""
    from absorb.io.family_config import config_section

    cfg = {"model_type": "internvl_chat", "llm_config": {"model_type": "qwen2", "hidden_act": "silu", "hidden_size": 6},
           "vision_config": {"hidden_act": "gelu", "hidden_size": 4}}
    assert config_section(cfg, "language_model.model.layers.0.mlp.up_proj.weight")["hidden_act"] == "silu"
    assert config_section(cfg, "vision_model.encoder.layers.0.mlp.fc1.weight")["hidden_act"] == "gelu"
    audio = {"model_type": "qwen2_audio", "audio_config": {"activation_function": "gelu", "d_model": 4},
             "text_config": {"model_type": "qwen2", "hidden_size": 6}}
    assert config_section(audio, "audio_tower.layers.0.fc1.weight")["d_model"] == 4
