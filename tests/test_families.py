"""Family detection details that the checkpoint tests do not reach."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from absorb._errors import InvalidInput
from absorb.io.families import detect
from absorb.io.safetensors import open_checkpoint

H, I = 4, 6


def _phi3(bias_rows: int) -> dict[str, tuple[int, ...]]:
    return {"model.layers.0.mlp.gate_up_proj.weight": (2 * I, H), "model.layers.0.mlp.gate_up_proj.bias": (bias_rows,),
            "model.layers.0.mlp.down_proj.weight": (H, I)}


def test_fused_gate_up_bias_has_two_rows_per_unit() -> None:
    """A fused gate_up_proj's bias has 2·I entries (gate, then up); it was refused as "expected [I]"."""
    det = detect(_phi3(2 * I), {"model_type": "phi3"}, source="x")
    (spec,) = det.blocks
    assert spec.b_up == "model.layers.0.mlp.gate_up_proj.bias" and (spec.n, spec.d) == (I, H)
    with pytest.raises(InvalidInput, match=r"gate_up_proj.bias' has shape \[6\], expected \[12\] \(fused gate/up bias\)"):
        detect(_phi3(I), {"model_type": "phi3"}, source="x")


def test_fused_gate_up_bias_is_split_when_read(tmp_path) -> None:
    rng = np.random.default_rng(0)
    fused_w = rng.standard_normal((2 * I, H)).astype(np.float32)
    fused_b = rng.standard_normal(2 * I).astype(np.float32)
    save_file({"model.layers.0.mlp.gate_up_proj.weight": fused_w, "model.layers.0.mlp.gate_up_proj.bias": fused_b,
               "model.layers.0.mlp.down_proj.weight": rng.standard_normal((H, I)).astype(np.float32)},
              str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "phi3", "hidden_act": "silu"}))
    (blk,) = list(open_checkpoint(tmp_path))
    assert np.array_equal(blk.b_gate, fused_b[:I].astype(np.float64)) and np.array_equal(blk.b_up, fused_b[I:].astype(np.float64))
    assert np.array_equal(blk.W_gate, fused_w[:I].astype(np.float64)) and np.array_equal(blk.W_up, fused_w[I:].astype(np.float64))


# ----------------------------------------------------------------------------------------
# families the table gained: ALBERT (one shared layer), GPT-J, MPT, DistilBERT
# ----------------------------------------------------------------------------------------

def _lin(t: dict, rng: np.random.Generator, name: str, rows: int, cols: int, bias: bool = True) -> None:
    t[f"{name}.weight"] = rng.standard_normal((rows, cols)).astype(np.float32)
    if bias:
        t[f"{name}.bias"] = rng.standard_normal(rows).astype(np.float32)


def _ln(t: dict, name: str, d: int, bias: bool = True) -> None:
    t[f"{name}.weight"] = np.full(d, 1.5, dtype=np.float32)
    if bias:
        t[f"{name}.bias"] = np.full(d, 0.25, dtype=np.float32)


def _albert(rng: np.random.Generator) -> tuple[dict, dict]:
    t: dict = {"albert.embeddings.word_embeddings.weight": rng.standard_normal((30, 2)).astype(np.float32)}
    _lin(t, rng, "albert.encoder.embedding_hidden_mapping_in", H, 2)
    p = "albert.encoder.albert_layer_groups.0.albert_layers.0"
    for m in ("query", "key", "value", "dense"):
        _lin(t, rng, f"{p}.attention.{m}", H, H)
    _ln(t, f"{p}.attention.LayerNorm", H)
    _lin(t, rng, f"{p}.ffn", I, H)
    _lin(t, rng, f"{p}.ffn_output", H, I)
    _ln(t, f"{p}.full_layer_layer_norm", H)
    return t, {"model_type": "albert", "hidden_size": H, "num_hidden_layers": 12, "hidden_act": "gelu_new"}


def _gptj(rng: np.random.Generator) -> tuple[dict, dict]:
    t: dict = {"transformer.wte.weight": rng.standard_normal((30, H)).astype(np.float32)}
    for i in range(2):
        p = f"transformer.h.{i}"
        _ln(t, f"{p}.ln_1", H)
        for m in ("q_proj", "k_proj", "v_proj", "out_proj"):
            _lin(t, rng, f"{p}.attn.{m}", H, H, bias=False)
        _lin(t, rng, f"{p}.mlp.fc_in", I, H)
        _lin(t, rng, f"{p}.mlp.fc_out", H, I)
    return t, {"model_type": "gptj", "n_embd": H, "activation_function": "gelu_new"}


def _mpt(rng: np.random.Generator) -> tuple[dict, dict]:
    t: dict = {"transformer.wte.weight": rng.standard_normal((30, H)).astype(np.float32)}
    for i in range(2):
        p = f"transformer.blocks.{i}"
        _ln(t, f"{p}.norm_1", H, bias=False)
        _lin(t, rng, f"{p}.attn.Wqkv", 3 * H, H, bias=False)
        _lin(t, rng, f"{p}.attn.out_proj", H, H, bias=False)
        _ln(t, f"{p}.norm_2", H, bias=False)
        _lin(t, rng, f"{p}.ffn.up_proj", I, H, bias=False)
        _lin(t, rng, f"{p}.ffn.down_proj", H, I, bias=False)
    return t, {"model_type": "mpt", "d_model": H, "expansion_ratio": I / H, "no_bias": True}


def _distilbert(rng: np.random.Generator) -> tuple[dict, dict]:
    t: dict = {"distilbert.embeddings.word_embeddings.weight": rng.standard_normal((30, H)).astype(np.float32)}
    for i in range(2):
        p = f"distilbert.transformer.layer.{i}"
        for m in ("q_lin", "k_lin", "v_lin", "out_lin"):
            _lin(t, rng, f"{p}.attention.{m}", H, H)
        _ln(t, f"{p}.sa_layer_norm", H)
        _lin(t, rng, f"{p}.ffn.lin1", I, H)
        _lin(t, rng, f"{p}.ffn.lin2", H, I)
        _ln(t, f"{p}.output_layer_norm", H)
    return t, {"model_type": "distilbert", "dim": H, "hidden_dim": I, "activation": "gelu"}


_NEW = {  # family → (builder, blocks, activation, words of the residual sentence)
    "albert": (_albert, ["albert.encoder.albert_layer_groups.0.albert_layers.0"], "gelu_tanh", "stands for every layer"),
    "gptj": (_gptj, ["transformer.h.0.mlp", "transformer.h.1.mlp"], "gelu_tanh", "parallel residual"),
    "mpt": (_mpt, ["transformer.blocks.0.ffn", "transformer.blocks.1.ffn"], "gelu", "pre-norm"),
    "distilbert": (_distilbert, ["distilbert.transformer.layer.0.ffn", "distilbert.transformer.layer.1.ffn"], "gelu", "post-norm"),
}


@pytest.mark.parametrize("family", sorted(_NEW))
def test_new_families_detected_read_and_folded(tmp_path, family: str) -> None:
    build, names, act, wiring = _NEW[family]
    t, cfg = build(np.random.default_rng(7))
    save_file(t, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    ck = open_checkpoint(tmp_path)
    assert [s.name for s in ck.specs] == names and {s.family for s in ck.specs} == {family}
    assert all(s.activation == act and (s.d, s.n) == (H, I) and not s.transposed and wiring in s.residual for s in ck.specs)
    blk = ck.block(ck.specs[0])
    up = [k for k in t if k.startswith(names[0]) and k.endswith(".weight") and t[k].shape == (I, H)][0]
    assert np.array_equal(blk.W_up, t[up].astype(np.float64))
    folded = open_checkpoint(tmp_path, fold_norm=True)
    assert np.array_equal(folded.block(folded.specs[0]).W_up, t[up].astype(np.float64) * 1.5)  # the norm's gain 1.5
    if family == "mpt":  # MptConfig names no activation: without model_type it is not guessed
        (tmp_path / "config.json").write_text(json.dumps({"d_model": H}))
        with pytest.raises(InvalidInput, match="activation"):
            open_checkpoint(tmp_path)
