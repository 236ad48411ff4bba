"""Value activations and gpt-oss: the clamped SwiGLU unit, its stacked interleaved experts, MXFP4.

The reference formulas here are typed from transformers' ``GptOssExperts`` and its MXFP4
dequantiser, not read back from absorb: ``gate = gate_up[..., ::2]``, ``up = gate_up[..., 1::2]``,
``gate = gate.clamp(max=L)``, ``up = up.clamp(-L, L)``, ``(up + 1) * gate * sigmoid(1.702 * gate)``;
an MXFP4 byte holds element 2k in its low nibble and 2k + 1 in its high nibble, each block of 32
scaled by 2^(scale − 127).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from absorb import Block, decide, get_activation
from absorb._errors import InvalidInput
from absorb.io.gpt_oss import dequantize_mxfp4
from absorb.io.npz import load_npz, save_npz
from absorb.io.safetensors import open_checkpoint
from tests.test_checkpoints import _assert_one_line_exit2, run_absorb, run_cli

ROOT = Path(__file__).resolve().parents[1]
L = 7.0
GATE = get_activation("expr:Min(x, 7)/(1 + exp(-1.702*Min(x, 7)))")
VALUE = get_activation("expr:Max(-7, Min(x, 7)) + 1")


def _mc():
    spec = importlib.util.spec_from_file_location("make_checkpoint", ROOT / "examples" / "make_checkpoint.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MC = _mc()


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _reference_unit(gate: np.ndarray, up: np.ndarray, limit: float = L) -> np.ndarray:
    """transformers' GptOssExperts._apply_gate, in numpy."""
    gate = np.minimum(gate, limit)
    up = np.clip(up, -limit, limit)
    return (up + 1) * gate * _sigmoid(gate * 1.702)


def _reference_expert(x: np.ndarray, gate_up: np.ndarray, gate_up_bias: np.ndarray, down: np.ndarray, down_bias: np.ndarray) -> np.ndarray:
    """One expert as transformers computes it: ``gate_up`` [H, 2I] and ``down`` [I, H], ``x @ W + b``."""
    gu = x @ gate_up + gate_up_bias
    return _reference_unit(gu[..., ::2], gu[..., 1::2]) @ down + down_bias


# ------------------------------------------------------------------ MXFP4 dequantisation --
def test_mxfp4_by_hand() -> None:
    """Two bytes, one block of 32 values, typed out: low nibble first, the sign in bit 3, scale 2^(s − 127)."""
    blocks = np.zeros((2, 1, 16), dtype=np.uint8)
    blocks[0, 0, 0] = 0x21  # element 0: code 1 (0.5), element 1: code 2 (1.0)
    blocks[0, 0, 1] = 0xF8  # element 2: code 8 (−0), element 3: code 15 (−6)
    blocks[1, 0, 15] = 0x7B  # element 30: code 11 (−1.5), element 31: code 7 (6)
    scales = np.array([[128], [0]], dtype=np.uint8)  # ×2 and ×2^−127
    out = dequantize_mxfp4(blocks, scales)
    assert out.shape == (2, 32) and out.dtype == np.float32
    assert out[0, :4].tolist() == [1.0, 2.0, -0.0, -12.0] and np.signbit(out[0, 2])
    assert not np.any(out[0, 4:]) and not np.any(out[1, :30])
    assert out[1, 30] == np.float32(-1.5 * 2.0**-127) and out[1, 31] == np.float32(6 * 2.0**-127)  # subnormal, exact
    big = dequantize_mxfp4(np.full((1, 1, 16), 0x77, dtype=np.uint8), np.array([[254]], dtype=np.uint8))
    assert big.dtype == np.float64 and big[0, 0] == 6 * 2.0**127  # overflows float32: kept exact in float64
    with pytest.raises(InvalidInput, match="scale 255"):
        dequantize_mxfp4(blocks, np.array([[255], [1]], dtype=np.uint8))
    with pytest.raises(InvalidInput, match="do not fit"):
        dequantize_mxfp4(blocks[:, :, :8], scales)


# ------------------------------------------------------------------ value activations --
def test_value_activation_block_and_npz(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    U, G, D = rng.standard_normal((3, 2)), rng.standard_normal((3, 2)), rng.standard_normal((2, 3))
    bu, bg = rng.standard_normal(3), rng.standard_normal(3)
    b = Block(U, D, GATE, W_gate=G, b_up=bu, b_gate=bg, value_activation=VALUE)
    X = 6 * rng.standard_normal((50, 2))
    ref = X + _reference_unit(X @ G.T + bg, X @ U.T + bu) @ D.T
    np.testing.assert_allclose(b(X), ref, rtol=1e-12, atol=1e-12)
    save_npz(tmp_path / "b.npz", b)
    with np.load(tmp_path / "b.npz") as z:
        assert str(z["value_activation"]) == VALUE.name
    b2 = load_npz(tmp_path / "b.npz")
    assert not b2.value_identity and np.array_equal(b2(X), b(X))
    # without the key (or h = identity) nothing changes
    plain = Block(U, D, GATE, W_gate=G, value_activation=get_activation("identity"))
    assert plain.value_identity and np.array_equal(plain(X), Block(U, D, GATE, W_gate=G)(X))


def test_value_activation_bad_input(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    arrs = {"W_up": rng.standard_normal((3, 2)), "W_down": rng.standard_normal((2, 3)), "activation": np.array("relu"),
            "value_activation": np.array("expr:Max(-7, Min(x, 7)) + 1")}
    np.savez(tmp_path / "ungated.npz", **arrs)
    _assert_one_line_exit2(run_cli(str(tmp_path / "ungated.npz")), "key 'value_activation' is given but the block is ungated")
    arrs.update(W_gate=rng.standard_normal((3, 2)), value_activation=np.array("expr:__import__('os')"))
    np.savez(tmp_path / "bad.npz", **arrs)
    _assert_one_line_exit2(run_cli(str(tmp_path / "bad.npz")), "key 'value_activation'")


def test_results_that_assume_a_linear_value_answer_nothing() -> None:
    """SiLU gate, bias-free: linearization decides h = id, but with h(z) = clamp(z) + 1 (h(0) = 1, so
    J(0) = W_down diag(g'(0) h(0)) W_gate ≠ 0) no result covers the block: unknown, naming h."""
    rng = np.random.default_rng(2)
    U, G, D = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.standard_normal((3, 4))
    silu = get_activation("swiglu")
    assert decide(Block(U, D, silu, W_gate=G)).verdict.value == "not_absorbable"
    dec = decide(Block(U, D, silu, W_gate=G, value_activation=VALUE))
    assert dec.verdict.value == "unknown" and "value branch carries the activation h" in dec.reason
    assert "h(0) = 1 ≠ 0" in dec.reason  # the failed hypothesis of the linearization argument, named
    # a bounded value with an unbounded gate: boundedness does not apply; bias-free, g(0) = h(0) = 0
    # with finite slopes: the linearization argument does; with biases nothing does
    reglu_tanh = Block(U, D, get_activation("reglu"), W_gate=G, value_activation=get_activation("expr:tanh(x)"))
    assert decide(reglu_tanh).theorem.value == "linearization"
    dec = decide(reglu_tanh.replace(b_up=rng.standard_normal(4)))
    assert dec.verdict.value == "unknown" and "not proved" in dec.reason
    # both factors bounded, proved: not absorbable by boundedness, biases or not
    dec = decide(Block(U, D, GATE, W_gate=G, value_activation=VALUE, b_up=rng.standard_normal(4)))
    assert dec.verdict.value == "not_absorbable" and dec.theorem.value == "bounded"
    assert {p.name for p in dec.blocks[0].properties if p.proved} >= {"bounded", "value_bounded"}


# ------------------------------------------------------------------ the plain (unquantised) layout --
def _plain_oss(tmp_path: Path, *, config: dict | None, E: int = 2, H: int = 3, I: int = 4, seed: int = 3) -> tuple[Path, dict]:
    rng = np.random.default_rng(seed)
    t = {"model.layers.0.mlp.experts.gate_up_proj": rng.standard_normal((E, H, 2 * I)),
         "model.layers.0.mlp.experts.gate_up_proj_bias": rng.standard_normal((E, 2 * I)),
         "model.layers.0.mlp.experts.down_proj": rng.standard_normal((E, I, H)),
         "model.layers.0.mlp.experts.down_proj_bias": rng.standard_normal((E, H)),
         "model.layers.0.mlp.router.weight": rng.standard_normal((E, H))}
    out = tmp_path / "plain"
    out.mkdir(exist_ok=True)
    save_file({k: v.astype(np.float32) for k, v in t.items()}, str(out / "model.safetensors"))
    if config is not None:
        (out / "config.json").write_text(json.dumps(config))
    return out, {k: v.astype(np.float32).astype(np.float64) for k, v in t.items()}


def test_plain_layout_interleaved_experts(tmp_path: Path) -> None:
    path, t = _plain_oss(tmp_path, config={"model_type": "gpt_oss", "hidden_size": 3, "swiglu_limit": 7.0})
    ck = open_checkpoint(path)
    assert [s.name for s in ck.specs] == ["model.layers.0.mlp.experts[0]", "model.layers.0.mlp.experts[1]"]
    X = 4 * np.random.default_rng(4).standard_normal((40, 3))
    p = "model.layers.0.mlp.experts."
    for e, blk in enumerate(ck.blocks()):
        gu = t[p + "gate_up_proj"][e]
        assert np.array_equal(blk.W_gate, gu[:, 0::2].T) and np.array_equal(blk.W_up, gu[:, 1::2].T)
        assert np.array_equal(blk.b_gate, t[p + "gate_up_proj_bias"][e][0::2])
        ref = X + _reference_expert(X, gu, t[p + "gate_up_proj_bias"][e], t[p + "down_proj"][e], t[p + "down_proj_bias"][e])
        np.testing.assert_allclose(blk(X), ref, rtol=1e-10, atol=1e-10)


def test_gpt_oss_config_and_refusals(tmp_path: Path) -> None:
    path, _ = _plain_oss(tmp_path, config={"model_type": "gpt_oss"})  # no swiglu_limit: GptOssConfig's default 7.0
    ck = open_checkpoint(path)
    assert "default swiglu_limit = 7.0" in ck.specs[0].activation_source
    assert "Min(x, 7.0)" in ck.specs[0].activation and "Max(-7.0, Min(x, 7.0)) + 1" == ck.specs[0].value_activation[5:]
    path, _ = _plain_oss(tmp_path, config={"model_type": "gpt_oss", "swiglu_limit": 2.5})
    blk = next(open_checkpoint(path).blocks())
    z = np.linspace(-10, 10, 81)
    np.testing.assert_allclose(blk.value_activation(z), np.clip(z, -2.5, 2.5) + 1)
    _assert_one_line_exit2(run_cli(str(path), "--activation", "silu"), "drop --activation")
    for cfg, needle in (({"model_type": "gpt_oss", "swiglu_limit": -1}, "swiglu_limit = -1 is not a number in [1e-30, 1e4]"),
                        ({"model_type": "gpt_oss", "swiglu_limit": 1e-300}, "swiglu_limit = 1e-300 is not a number in"),
                        ({"model_type": "gpt_oss", "swiglu_limit": 1e6}, "swiglu_limit = 1000000.0 is not a number in"),
                        ({"model_type": "gpt_oss", "hidden_size": 5}, "config.json gives hidden_size 5"),
                        (None, "no config.json beside the checkpoint")):
        path, _ = _plain_oss(tmp_path, config=cfg)
        if cfg is None:
            (path / "config.json").unlink(missing_ok=True)
        _assert_one_line_exit2(run_cli(str(path)), needle)


def test_mxfp4_checkpoint_refusals(tmp_path: Path) -> None:
    tensors, cfg, extra = MC.make("gpt_oss", layers=1)
    del tensors["model.layers.0.mlp.experts.down_proj_scales"]
    MC.write(tmp_path / "noscales", tensors, cfg, extra=extra)
    _assert_one_line_exit2(run_cli(str(tmp_path / "noscales")), "has no model.layers.0.mlp.experts.down_proj_scales beside it")
    tensors, cfg, extra = MC.make("gpt_oss", layers=1)
    cfg["quantization_config"] = {"quant_method": "gptq"}
    MC.write(tmp_path / "gptq", tensors, cfg, extra=extra)
    _assert_one_line_exit2(run_cli(str(tmp_path / "gptq")), "quant_method 'gptq'")
    with pytest.raises(SystemExit):
        MC.main([str(tmp_path / "x"), "--family", "gpt-oss", "--d", "8"])  # MXFP4 needs multiples of 32


# ------------------------------------------------------------------ the MXFP4 checkpoint, end to end --
def _independent_dequant(blocks: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """A second dequantiser, byte by byte (the reference's loop, not absorb's vectorised one)."""
    lut = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]
    rows, groups, _ = blocks.shape
    out = np.zeros((rows, groups * 32))
    for r in range(rows):
        for g in range(groups):
            for k in range(16):
                byte = int(blocks[r, g, k])
                s = 2.0 ** (int(scales[r, g]) - 127)
                out[r, g * 32 + 2 * k] = lut[byte & 15] * s
                out[r, g * 32 + 2 * k + 1] = lut[byte >> 4] * s
    return out


def test_gpt_oss_mxfp4_checkpoint_decided_certified_and_tamper_evident(tmp_path: Path) -> None:
    tensors, cfg, extra = MC.make("gpt_oss", layers=1, seed=5)
    raw = {k: v.copy() for k, v in tensors.items()}
    MC.write(tmp_path / "oss", tensors, cfg, dtype="BF16", extra=extra)
    ck = open_checkpoint(tmp_path / "oss")
    assert len(ck.specs) == MC.EXPERTS and {(s.d, s.n) for s in ck.specs} == {(32, 32)}
    q = "model.layers.0.mlp.experts."
    X = 3 * np.random.default_rng(6).standard_normal((30, 32))
    import ml_dtypes

    bf = lambda a: a.astype(ml_dtypes.bfloat16).astype(np.float64)  # noqa: E731 - the biases are stored BF16
    for e, blk in enumerate(ck.blocks()):
        gu = _independent_dequant(raw[q + "gate_up_proj_blocks"][e], raw[q + "gate_up_proj_scales"][e])  # [2I, H]
        dn = _independent_dequant(raw[q + "down_proj_blocks"][e], raw[q + "down_proj_scales"][e])  # [H, I]
        assert np.array_equal(blk.W_gate, gu[0::2]) and np.array_equal(blk.W_up, gu[1::2]) and np.array_equal(blk.W_down, dn)
        ref = X + _reference_expert(X, gu.T, bf(raw[q + "gate_up_proj_bias"][e]), dn.T, bf(raw[q + "down_proj_bias"][e]))
        np.testing.assert_allclose(blk(X), ref, rtol=1e-10, atol=1e-10)
    cert = tmp_path / "c.json"
    out = run_cli(str(tmp_path / "oss"), "--json", "--certificate", str(cert))
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["verdict"] == "not_absorbable"
    assert [(b["verdict"], b["theorem"]) for b in res["blocks"]] == [("not_absorbable", "bounded")] * MC.EXPERTS
    ver = run_absorb("verify", str(cert), str(tmp_path / "oss"))
    assert ver.returncode == 0 and "the value activation h is continuous" in ver.stdout, ver.stdout[-2000:] + ver.stderr
    doc = json.loads(cert.read_text())
    for i, tamper in enumerate((lambda b: b.pop("value_activation_function"),
                                lambda b: b["value_activation_function"].update(text="x + 1"),
                                lambda b: b["theorem"].update(id="linearization"))):
        bad = json.loads(json.dumps(doc))
        tamper(bad["blocks"][0])
        (tmp_path / f"t{i}.json").write_text(json.dumps(bad))
        ver = run_absorb("verify", str(tmp_path / f"t{i}.json"), str(tmp_path / "oss"))
        assert ver.returncode != 0 and "rejected" in ver.stdout, (i, ver.stdout[-1500:])


def test_biased_swiglu_checkpoint_every_block_answered(tmp_path: Path) -> None:
    """Biased SwiGLU blocks: whatever the engine proves, each block answers with a reason (unknown names what is missing)."""
    MC.main([str(tmp_path / "bs"), "--family", "biased-swiglu"])
    ck = open_checkpoint(tmp_path / "bs")
    assert all(s.gated and s.b_up and s.b_gate and s.b_down and s.value_activation is None for s in ck.specs)
    out = run_cli(str(tmp_path / "bs"), "--json")
    assert out.returncode in (0, 3), out.stderr
    for b in json.loads(out.stdout)["blocks"]:
        assert b["activation"] == "swiglu" and b["reason"]
        assert b["verdict"] != "absorbable" or b["witness"]


def test_zero_skip_with_a_value_activation_is_trivial_and_certified(tmp_path: Path) -> None:
    """M = 0: the block is its own witness, evaluated with h by the engine and by the checker."""
    rng = np.random.default_rng(7)
    b = Block(rng.standard_normal((3, 2)), rng.standard_normal((2, 3)), get_activation("swiglu"), W_gate=rng.standard_normal((3, 2)),
              value_activation=VALUE, skip=np.zeros((2, 2)))
    save_npz(tmp_path / "z.npz", b)
    out = run_cli(str(tmp_path / "z.npz"), "--json", "--certificate", str(tmp_path / "z.json"))
    assert out.returncode == 0 and json.loads(out.stdout)["theorem"] == "trivial", out.stderr
    ver = run_absorb("verify", str(tmp_path / "z.json"), str(tmp_path / "z.npz"))
    assert ver.returncode == 0 and "the value activation is the model's" in ver.stdout, ver.stdout[-1500:]


@pytest.mark.parametrize("h", ["expr:1", "expr:tanh(x)", "expr:x**2"])
def test_value_activation_verdicts_are_sound(h: str) -> None:
    """With h ≠ id only M = 0, boundedness, the degree and the linearization arguments may conclude:
    over gates with and without g(0) = 0, flip identities or homogeneity, a verdict is bounded (g and
    h bounded on a wide grid, a sanity check of the proof), degree or linearization (|g(z)·h(z)| ≪ |z|
    on a grid near 0: the same sanity check), or unknown. The planted SiLU
    block with h ≡ 1 (an ungated SiLU MLP in disguise, absorbable by flipping units 0–2) is never
    called not absorbable."""
    rng = np.random.default_rng(8)
    z = np.linspace(-1e3, 1e3, 20001)
    near = np.linspace(-1e-3, 1e-3, 2001)
    near = near[near != 0]
    hv = get_activation(h)
    for gate in ("swiglu", "glu", "reglu", "bilinear"):
        U, G, D = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.standard_normal((3, 4))
        D[:, [0, 1, 2]] = -np.linalg.pinv(G[[0, 1, 2]])  # D_S G_S = −I: absorbable when h ≡ 1 and g = SiLU
        g = get_activation(gate)
        dec = decide(Block(U, D, g, W_gate=G, value_activation=hv), timeout=20)
        if dec.verdict.value == "not_absorbable":
            assert dec.theorem.value in ("bounded", "degree", "linearization"), (gate, h, dec.reason)
            if dec.theorem.value == "bounded":
                assert np.abs(g(z)).max() < 1e3 and np.abs(hv(z)).max() < 1e3
            else:  # each unit o(|x|) at 0: g(z)·h(z)/z small near 0 (O(z²), or a bounded factor times o(z))
                assert np.all(np.abs(g(near) * hv(near)) <= 1e-2 * np.abs(near)), (gate, h)
        else:
            assert dec.verdict.value == "unknown", (gate, h, dec.reason)
        if h == "expr:1" and gate == "swiglu":  # the planted absorbable block
            assert dec.verdict.value == "unknown" and "h(0) = 1 ≠ 0" in dec.reason, (gate, dec.reason)


@pytest.mark.slow
def test_gpt_oss_on_a_local_dask_worker(tmp_path: Path) -> None:
    """A worker analyses the expr: activations in sandboxed children (non-daemonic workers)."""
    pytest.importorskip("distributed")
    MC.main([str(tmp_path / "oss"), "--family", "gpt-oss", "--layers", "1"])
    out = run_cli(str(tmp_path / "oss"), "--json", "--workers", "1")
    assert out.returncode == 0, out.stderr[-2000:]
    assert [b["theorem"] for b in json.loads(out.stdout)["blocks"]] == ["bounded"] * MC.EXPERTS
