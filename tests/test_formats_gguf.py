"""GGUF files (llama.cpp): blocks from blk.{i}.ffn_* and the metadata; quantised weights dequantised.

Files are written here with ``gguf.GGUFWriter``, quantised with ``gguf.quants.quantize``. The
blocks must carry the architecture's activation (llama.cpp's graph), the dequantised weights
exactly as ``gguf.quants.dequantize`` gives them, the quantisation type in the report, and
decide like the same (dequantised) arrays. Skips cleanly without the gguf package.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from absorb._errors import InvalidInput
from absorb.engine import decide, decide_checkpoint
from absorb.io._validate import build_block
from absorb.io.safetensors import open_checkpoint
from absorb.model.activations import get_activation
from tests.test_checkpoints import _assert_one_line_exit2, run_absorb, run_cli

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as Q  # noqa: E402
from gguf import quants  # noqa: E402

D, N, E = 32, 64, 3  # 32: the quantised block sizes (32, 256 for the K types) divide the rows


def _write(path: Path, arch: str, tensors: dict[str, tuple[np.ndarray, str]]) -> Path:
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(2)
    w.add_embedding_length(D)
    w.add_feed_forward_length(N)
    for name, (arr, qt) in tensors.items():
        if qt == "F32":
            w.add_tensor(name, arr.astype(np.float32))
        elif qt == "F16":
            w.add_tensor(name, arr.astype(np.float16))
        else:
            q = quants.quantize(arr.astype(np.float32), Q[qt])
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=Q[qt])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _deq(arr: np.ndarray, qt: str) -> np.ndarray:
    if qt in ("F32", "F16"):
        return arr.astype(np.float32 if qt == "F32" else np.float16).astype(np.float64)
    return quants.dequantize(quants.quantize(arr.astype(np.float32), Q[qt]), Q[qt]).astype(np.float64)


@pytest.mark.parametrize("qt", ["F32", "F16", "Q8_0", "Q4_0", "Q5_1"])
def test_llama_gguf_gated_blocks_dequantised(tmp_path: Path, qt: str) -> None:
    rng = np.random.default_rng(0)
    t, want = {}, []
    for i in range(2):
        arrs = {"W_gate": rng.standard_normal((N, D)), "W_up": rng.standard_normal((N, D)), "W_down": rng.standard_normal((D, N))}
        t[f"blk.{i}.ffn_gate.weight"] = (arrs["W_gate"], qt)
        t[f"blk.{i}.ffn_up.weight"] = (arrs["W_up"], qt)
        t[f"blk.{i}.ffn_down.weight"] = (arrs["W_down"], "F32")
        t[f"blk.{i}.attn_norm.weight"] = (np.ones(D), "F32")
        want.append({k: _deq(v, qt if k != "W_down" else "F32") for k, v in arrs.items()})
    f = _write(tmp_path / "m.gguf", "llama", t)
    ck = open_checkpoint(f)
    assert [s.name for s in ck.specs] == ["blk.0.ffn", "blk.1.ffn"] and ck.detection.model_type == "llama"
    for spec, blk, w in zip(ck.specs, ck.blocks(), want):
        assert spec.activation == "silu" and "llama.cpp" in spec.activation_source and (spec.d, spec.n) == (D, N)
        assert blk.W_gate is not None
        for k, v in w.items():
            assert np.array_equal(getattr(blk, k), v), k
        assert f"weights stored {', '.join(sorted({qt, 'F32'}))}" in spec.residual
    if qt.startswith("Q"):
        assert any(qt in n and "dequantised" in n for n in ck.detection.notes)
    dec = decide_checkpoint(ck, tol=1e-9, timeout=10, seed=0)
    for bd, w in zip(dec.blocks, want):
        assert bd.verdict == decide(build_block(w, source="x", activation=get_activation("silu")), tol=1e-9, timeout=10, seed=0).verdict


def test_gpt2_gguf_biases_quantised_and_certificate(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    t = {}
    for i in range(2):
        t[f"blk.{i}.ffn_up.weight"] = (rng.standard_normal((N, D)), "Q8_0")
        t[f"blk.{i}.ffn_up.bias"] = (rng.standard_normal(N), "F32")
        t[f"blk.{i}.ffn_down.weight"] = (rng.standard_normal((D, N)), "Q8_0")
        t[f"blk.{i}.ffn_down.bias"] = (rng.standard_normal(D), "F32")
    f = _write(tmp_path / "g.gguf", "gpt2", t)
    ck = open_checkpoint(f)
    assert all(s.activation == "gelu_tanh" and s.b_up and s.b_down and not s.gated for s in ck.specs)
    out = run_cli(str(f), "--json", "--certificate", str(tmp_path / "c.json"))
    assert out.returncode in (0, 3), out.stderr
    res = json.loads(out.stdout)
    assert "dequantised" in res["blocks"][0]["analysed"] and "Q8_0" in res["blocks"][0]["analysed"]
    ver = run_absorb("verify", str(tmp_path / "c.json"), str(f))
    assert ver.returncode == 0, ver.stdout[-2000:] + ver.stderr


def test_moe_experts_one_block_each(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    gate, up, down = rng.standard_normal((E, N, D)), rng.standard_normal((E, N, D)), rng.standard_normal((E, D, N))
    t = {"blk.0.ffn_gate_exps.weight": (gate, "Q8_0"), "blk.0.ffn_up_exps.weight": (up, "Q8_0"),
         "blk.0.ffn_down_exps.weight": (down, "F16"), "blk.0.ffn_gate_inp.weight": (rng.standard_normal((E, D)), "F32")}
    ck = open_checkpoint(_write(tmp_path / "moe.gguf", "qwen2moe", t))
    assert [s.name for s in ck.specs] == [f"blk.0.ffn_exps[{e}]" for e in range(E)]
    for e, blk in enumerate(ck.blocks()):
        assert np.array_equal(blk.W_up, _deq(up[e], "Q8_0")) and np.array_equal(blk.W_down, _deq(down[e], "F16"))


def test_gguf_refusals(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    t = {"blk.0.ffn_up.weight": (rng.standard_normal((N, D)), "F32"), "blk.0.ffn_down.weight": (rng.standard_normal((D, N)), "F32")}
    f = _write(tmp_path / "x.gguf", "rwkv7", t)
    _assert_one_line_exit2(run_cli(str(f)), "a GGUF file of architecture 'rwkv7', whose MLP activation absorb does not know")
    assert open_checkpoint(f, activation="relu").specs[0].activation == "relu"
    (tmp_path / "trunc.gguf").write_bytes(f.read_bytes()[:40])
    with pytest.raises(InvalidInput, match="a GGUF file that cannot be read"):
        open_checkpoint(tmp_path / "trunc.gguf")
    g = _write(tmp_path / "noffn.gguf", "llama", {"token_embd.weight": (rng.standard_normal((10, D)), "F32")})
    with pytest.raises(InvalidInput, match=r"no blk.\{i\}.ffn_up/ffn_down tensors"):
        open_checkpoint(g)


def test_arcee_is_ungated_relu2(tmp_path: Path) -> None:
    # llama.cpp's arcee graph is ReLU², ungated: it was read as SiLU (a verdict about another f)
    rng = np.random.default_rng(4)
    t = {"blk.0.ffn_up.weight": (rng.standard_normal((N, D)), "F32"), "blk.0.ffn_down.weight": (rng.standard_normal((D, N)), "F32")}
    assert [s.activation for s in open_checkpoint(_write(tmp_path / "a.gguf", "arcee", t)).specs] == ["relu2"]
    t["blk.0.ffn_gate.weight"] = (rng.standard_normal((N, D)), "F32")
    with pytest.raises(InvalidInput, match="architecture 'arcee' is ungated in llama.cpp, but blk.0.ffn has an ffn_gate"):
        open_checkpoint(_write(tmp_path / "b.gguf", "arcee", t))


def test_malformed_or_unread_mlp_tensors_refused(tmp_path: Path) -> None:
    """A gated architecture's block without ffn_gate, a 3-D ffn_up, expert stacks of different sizes and MPT's AWQ
    activation scales (blk.{i}.ffn.act.scales: the graph divides σ's output by them) are refused, not read as another f."""
    rng = np.random.default_rng(5)
    up, down = (rng.standard_normal((N, D)), "F32"), (rng.standard_normal((D, N)), "F32")
    cases = [("llama", {"blk.0.ffn_up.weight": up, "blk.0.ffn_down.weight": down}, "is gated in llama.cpp, but blk.0.ffn has no ffn_gate"),
             ("llama", {"blk.0.ffn_up.weight": (rng.standard_normal((2, N, D)), "F32"), "blk.0.ffn_down.weight": down},
              "tensor blk.0.ffn_up.weight has 3 dimensions"),
             ("qwen2moe", {"blk.0.ffn_gate_exps.weight": (rng.standard_normal((2, N, D)), "F32"),
                           "blk.0.ffn_up_exps.weight": (rng.standard_normal((3, N, D)), "F32"),
                           "blk.0.ffn_down_exps.weight": (rng.standard_normal((3, D, N)), "F32")}, "experts but"),
             ("mpt", {"blk.0.ffn_up.weight": up, "blk.0.ffn_down.weight": down, "blk.0.ffn.act.scales": (np.ones(N), "F32")},
              r"activation or weight scales or a norm inside it \(blk.0.ffn.act.scales\)")]
    for k, (arch, t, msg) in enumerate(cases):
        with pytest.raises(InvalidInput, match=msg):
            open_checkpoint(_write(tmp_path / f"{k}.gguf", arch, t))


@pytest.mark.parametrize("qt,block_bytes,scale_at", [("Q4_K", 144, (0, 2)), ("Q6_K", 210, (208,))])
def test_k_quant_types_dequantised(tmp_path: Path, qt: str, block_bytes: int, scale_at: tuple[int, ...]) -> None:
    """K-quant tensors (gguf's Python side cannot quantise them): raw blocks with set f16 scales,
    read back exactly as gguf.quants.dequantize gives them."""
    d = 256  # one 256-value super-block per row
    rng = np.random.default_rng(4)
    raw = rng.integers(0, 256, size=(N, block_bytes), dtype=np.uint8)
    for k in scale_at:  # the f16 scale(s) of each block: 0.5 (random bytes could be NaN/Inf)
        raw[:, k:k + 2] = np.frombuffer(np.float16(0.5).tobytes(), dtype=np.uint8)
    w = gguf.GGUFWriter(str(tmp_path / "k.gguf"), "llama")
    w.add_embedding_length(d)
    w.add_tensor("blk.0.ffn_up.weight", raw, raw_shape=raw.shape, raw_dtype=Q[qt])
    w.add_tensor("blk.0.ffn_gate.weight", raw[::-1].copy(), raw_shape=raw.shape, raw_dtype=Q[qt])
    w.add_tensor("blk.0.ffn_down.weight", rng.standard_normal((d, N)).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    ck = open_checkpoint(tmp_path / "k.gguf")
    (spec,) = ck.specs
    assert (spec.d, spec.n) == (d, N) and qt in spec.residual and "dequantised" in spec.residual
    blk = ck.block(spec)
    assert np.array_equal(blk.W_up, quants.dequantize(raw, Q[qt]).astype(np.float64))
    assert np.array_equal(blk.W_gate, quants.dequantize(raw[::-1].copy(), Q[qt]).astype(np.float64))


@pytest.mark.parametrize(("arch", "extra", "said"), [
    ("gptj", {}, "parallel residual"),
    ("phi2", {}, "parallel residual"),
    ("gemma2", {"blk.0.ffn_norm.weight": (np.ones(D), "F32"), "blk.0.post_ffw_norm.weight": (np.ones(D), "F32")},
     "pre-norm with a post-MLP norm, h + norm_post(B(norm(h)))"),
    ("llama", {"blk.0.ffn_norm.weight": (np.ones(D), "F32")}, "pre-norm, h + B(norm(h))"),
])
def test_gguf_wiring_sentence_follows_llama_cpps_graph(tmp_path: Path, arch: str, extra: dict, said: str) -> None:
    # gptj (and phi2, falcon, command-r) add attention and MLP of the same normed input; gemma2 norms the MLP's output:
    # every architecture was said to be 'pre-norm, h + B(norm(h))'
    rng = np.random.default_rng(8)
    t = {"blk.0.ffn_up.weight": (rng.standard_normal((N, D)), "F32"), "blk.0.ffn_down.weight": (rng.standard_normal((D, N)), "F32"),
         **extra}
    if arch in ("gemma2", "llama"):
        t["blk.0.ffn_gate.weight"] = (rng.standard_normal((N, D)), "F32")
    spec = open_checkpoint(_write(tmp_path / "m.gguf", arch, t)).specs[0]
    assert spec.residual.startswith(f"llama.cpp's {arch} layer ({said}")


@pytest.mark.parametrize("extra", ["ffn_sub_norm.weight", "ffn_up.scale", "ffn_down.scale"])
def test_gguf_norm_or_scales_inside_the_mlp_are_refused_before_any_advice(tmp_path: Path, extra: str) -> None:
    """BitNet's ffn_sub_norm (a norm before the down projection) and per-projection .scale tensors: the file was first
    refused for its unknown activation with advice to pass --activation, which then decided the block without them."""
    rng = np.random.default_rng(9)
    t = {}
    for i in range(2):
        t |= {f"blk.{i}.ffn_up.weight": (rng.standard_normal((N, D)), "F32"),
              f"blk.{i}.ffn_gate.weight": (rng.standard_normal((N, D)), "F32"),
              f"blk.{i}.ffn_down.weight": (rng.standard_normal((D, N)), "F32"),
              f"blk.{i}.{extra}": (rng.standard_normal(N if "sub_norm" in extra else 1), "F32")}
    p = _write(tmp_path / "b.gguf", "bitnet", t)
    for kw in ({}, {"activation": "swiglu"}):
        with pytest.raises(InvalidInput, match=re.escape(f"blk.0.{extra}")):
            open_checkpoint(p, **kw)
