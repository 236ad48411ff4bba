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
