"""examples/make_checkpoint.py writes every family the loader knows, and `absorb check` detects each.

The expectations below are typed from the transformers modeling/configuration files, not
read back from the script: which absorb family the names select, how many MLP blocks the
layout has, d and n of each, gated or not, and the activation config.json implies.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from absorb.cli import main as absorb_main
from absorb.io import open_checkpoint

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("make_checkpoint", ROOT / "examples" / "make_checkpoint.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MC = _module()
E = MC.EXPERTS

# key: (absorb family, blocks at the default sizes, d, {block n}, kind, activation as reported);
# two-tower checkpoints whose towers differ are in EXPECT_MIXED
EXPECT: dict[str, tuple[str, int, int, set[int], str, str]] = {
    "llama": ("llama", 4, 16, {48}, "gated", "swiglu"),
    "meta": ("meta", 2, 8, {32}, "gated", "swiglu"),
    "gemma": ("llama", 2, 8, {32}, "gated", "geglu_tanh"),  # hidden_activation wins over the legacy hidden_act gelu
    "gemma2": ("llama", 2, 8, {32}, "gated", "geglu_tanh"),
    "phi3": ("phi3", 2, 8, {32}, "gated", "swiglu"),
    "mixtral": ("mixtral", 2 * E, 8, {32}, "gated", "swiglu"),
    "qwen_moe": ("moe", 2 * (E + 1), 8, {32, 128}, "gated", "swiglu"),
    "nemotron": ("nemotron", 2, 8, {32}, "ungated", "relu2"),
    "persimmon": ("neox", 2, 8, {32}, "ungated", "relu2"),
    "gpt2": ("gpt2", 2, 8, {32}, "ungated", "gelu_tanh"),
    "gpt_bigcode": ("gpt2", 2, 8, {32}, "ungated", "gelu_tanh"),
    "starcoder2": ("starcoder2", 2, 8, {32}, "ungated", "gelu_tanh"),
    "opt": ("opt", 2, 8, {32}, "ungated", "relu"),
    "neox": ("neox", 2, 8, {32}, "ungated", "gelu"),
    "falcon": ("falcon", 2, 8, {32}, "ungated", "gelu"),
    "bloom": ("falcon", 2, 8, {32}, "ungated", "gelu_tanh"),
    "phi": ("phi", 2, 8, {32}, "ungated", "gelu_tanh"),
    "bert": ("bert", 3, 2, {8}, "ungated", "gelu"),
    "vit": ("bert", 2, 8, {32}, "ungated", "gelu"),
    "t5": ("t5", 4, 8, {32}, "ungated", "relu"),
    "t5_gated": ("t5_gated", 4, 8, {32}, "gated", "geglu_tanh"),
    "clip": ("phi", 4, 8, {32}, "ungated", "quick_gelu"),
    "whisper": ("opt", 4, 8, {32}, "ungated", "gelu"),
    "bart": ("opt", 4, 8, {32}, "ungated", "gelu"),
    "distilbert": ("distilbert", 2, 8, {32}, "ungated", "gelu"),
    "albert": ("albert", 1, 8, {32}, "ungated", "gelu_tanh"),
    "gptj": ("gptj", 2, 8, {32}, "ungated", "gelu_tanh"),
    "mpt": ("mpt", 2, 8, {32}, "ungated", "gelu"),
    "biased_swiglu": ("llama", 2, 8, {32}, "gated", "swiglu"),
    # GptOssExperts: gate min(z, 7)·sigmoid(1.702·min(z, 7)), value clamp(z, −7, 7) + 1 (swiglu_limit 7.0)
    "gpt_oss": ("gpt_oss", 2 * E, 32, {32}, "gated",
                "glu[expr:Min(7, x)/(1 + exp(-851*Min(7, x)/500))] with value activation expr:Max(-7, Min(7, x)) + 1"),
}
# (families, blocks, {d}, {n}, {kind}, {activation}): Gemma 3's GeGLU language model (text_config) and
# its SigLIP vision tower (vision_config, hidden 12, MLP 48, gelu_pytorch_tanh)
EXPECT_MIXED: dict[str, tuple[list[str], int, set[int], set[int], set[str], set[str]]] = {
    "gemma3": (["llama", "phi"], 4, {8, 12}, {32, 48}, {"gated", "ungated"}, {"geglu_tanh", "gelu_tanh"}),
}

# the residual wiring the report names (transformers' decoder-layer forward)
RESIDUAL = {
    "bloom": "pre-norm: the layer computes h + B(norm(h))",
    "falcon": "parallel attention/MLP",
    "neox": "parallel residual",
    "phi": "parallel residual",
    "bert": "post-norm",
    "vit": "pre-norm",
    "clip": "pre-norm",
    "whisper": "pre-norm",
    "bart": "post-norm: the layer computes norm(h + B(h))",
    "gemma2": "post-MLP norm",
    "distilbert": "post-norm",
    "albert": "stands for every layer",
    "gptj": "parallel residual",
    "mpt": "pre-norm",
}


def _check_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    """`absorb check ARGS --json`, in process (the CLI's own entry point)."""
    capsys.readouterr()
    rc = absorb_main(["check", *args, "--json"])
    out = capsys.readouterr()
    assert out.err == "", out.err
    return rc, json.loads(out.out)


def _write(tmp_path: Path, family: str, **kw: object) -> Path:
    dtype, shards = kw.pop("dtype", "F32"), kw.pop("shards", 1)
    tensors, cfg, extra = MC.make(family, **kw)
    out = tmp_path / family
    MC.write(out, tensors, cfg, dtype=dtype, shards=shards, extra=extra)
    return out


def test_every_loader_family_is_written() -> None:
    """Every layout in absorb's family table has a synthetic checkpoint here."""
    from absorb.io.families import FAMILIES

    assert {f.key for f in FAMILIES} <= {v[0] for v in EXPECT.values()}
    assert set(EXPECT) | set(EXPECT_MIXED) == set(MC.SYNTHETIC)


def _expected(family: str) -> tuple[list[str], int, set[int], set[int], set[str], set[str]]:
    if family in EXPECT_MIXED:
        return EXPECT_MIXED[family]
    fam, blocks, d, ns, kind, act = EXPECT[family]
    return [fam], blocks, {d}, ns, {kind}, {act}


@pytest.mark.parametrize("family", sorted(MC.SYNTHETIC))
def test_family_detected(tmp_path: Path, capsys: pytest.CaptureFixture[str], family: str) -> None:
    fams, blocks, ds, ns, kinds, acts = _expected(family)
    ckpt = _write(tmp_path, family)
    rc, js = _check_json(capsys, str(ckpt))
    assert rc in (0, 3), js
    assert js["checkpoint"]["families"] == fams
    assert len(js["blocks"]) == blocks
    assert {b["d"] for b in js["blocks"]} == ds
    assert {b["n"] for b in js["blocks"]} == ns
    assert {b["kind"] for b in js["blocks"]} == kinds
    assert {b["activation"] for b in js["blocks"]} == acts
    assert all(b["verdict"] in ("absorbable", "not_absorbable", "unknown") for b in js["blocks"])
    if family == "gemma3":  # each tower reads its own config section (width and activation)
        by_tower = {(b["name"].split(".")[0], b["d"], b["n"], b["kind"], b["activation"]) for b in js["blocks"]}
        assert by_tower == {("language_model", 8, 32, "gated", "geglu_tanh"), ("vision_tower", 12, 48, "ungated", "gelu_tanh")}
    if family in RESIDUAL:
        assert all(RESIDUAL[family] in b["analysed"] for b in js["blocks"]), js["blocks"][0]["analysed"]


def test_bloom_activation_and_residual() -> None:
    """BLOOM's config.json names no activation (BloomMLP hard-codes the tanh GELU) and its layer is
    sequential pre-LN; the Falcon names it shares were refused for want of an activation, and a
    parallel-attention wiring would have been reported."""
    tensors, cfg, _ = MC.make("bloom")
    shapes = {k: v.shape for k, v in tensors.items()}
    from absorb.io.families import detect

    det = detect(shapes, cfg, source="bloom")
    assert [b.name for b in det.blocks] == ["h.0.mlp", "h.1.mlp"]
    assert {b.activation for b in det.blocks} == {"gelu_tanh"}
    assert all("hard-codes" in b.activation_source for b in det.blocks)
    assert all(b.residual == "pre-norm: the layer computes h + B(norm(h))" for b in det.blocks)
    post = detect(shapes, {**cfg, "apply_residual_connection_post_layernorm": True}, source="bloom")
    assert post.blocks[0].residual.endswith("norm(h) + B(norm(h))")
    assert all(b.b_up and b.b_down for b in det.blocks)


FLIP = sorted(k for k, s in MC.SYNTHETIC.items() if s.flip)


@pytest.mark.parametrize("family", FLIP)
def test_planted_layer_is_absorbable(tmp_path: Path, capsys: pytest.CaptureFixture[str], family: str) -> None:
    """--planted 1 makes layer 1 (of the first tower) absorbable with exactly the planted S, after
    BF16 storage over 2 shards (GPT-2's Conv1D transposed back)."""
    ckpt = _write(tmp_path, family, planted=1, dtype="BF16", shards=2)
    rc, js = _check_json(capsys, str(ckpt), "--layers", "1")
    tower = {"t5": "encoder.", "whisper": "model.encoder.", "bart": "model.encoder.", "clip": "text_model."}.get(family, "")
    first = [b for b in js["blocks"] if b["name"].startswith(tower)]
    assert len(first) == 1, [b["name"] for b in js["blocks"]]
    b = first[0]
    assert b["verdict"] == "absorbable", b["reason"]
    assert b["witness"]["S"] == MC.planted_units(b["n"], b["d"])
    assert b["witness"]["residual"] == 0.0
    others = [x for x in js["blocks"] if x is not b]
    assert all(x["verdict"] != "absorbable" for x in others)  # the second tower's layer 1 is not planted


def test_sizes_dtype_and_shards(tmp_path: Path) -> None:
    """--d --n --layers apply to every family; --shards writes an index; shapes are as stored."""
    for family in ("gpt2", "t5_gated", "mixtral", "clip"):
        ckpt = _write(tmp_path, family, d=4, n=12, layers=3, dtype="F16", shards=3)
        assert (ckpt / "model.safetensors.index.json").is_file()
        specs = open_checkpoint(ckpt).specs
        per_layer = {"mixtral": E, "clip": 2, "t5_gated": 2}.get(family, 1)
        assert len(specs) == 3 * per_layer
        assert {(s.d, s.n) for s in specs} == {(4, 12)}
    gpt2 = open_checkpoint(tmp_path / "gpt2")
    assert gpt2.tensors["h.0.mlp.c_fc.weight"].shape == (4, 12)  # Conv1D [in, out]
    assert all(s.transposed for s in gpt2.specs)


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    MC.main(["--list"])
    listed = capsys.readouterr().out.split("\n")
    assert {ln.split()[0] for ln in listed if ln} == set(MC.SYNTHETIC)
    # the old command lines keep working
    MC.main([str(tmp_path / "b"), "--shards", "2"])
    MC.main([str(tmp_path / "l"), "--family", "llama", "--dtype", "BF16", "--d", "4", "--n", "8", "--layers", "1"])
    assert "wrote" in capsys.readouterr().out
    assert [s.name for s in open_checkpoint(tmp_path / "l").specs] == ["model.layers.0.mlp"]
    assert [s.layer for s in open_checkpoint(tmp_path / "b").specs] == [0, 1, 2]
    MC.main([str(tmp_path / "m"), "--family", "meta"])
    assert not (tmp_path / "m" / "config.json").exists() and (tmp_path / "m" / "params.json").is_file()
    MC.main([str(tmp_path / "nb"), "--family", "nemotron", "--mlp-bias"])
    assert all(s.b_up and s.b_down for s in open_checkpoint(tmp_path / "nb").specs)
    assert json.loads((tmp_path / "nb" / "config.json").read_text())["mlp_bias"] is True
    for bad in (["--family", "llama", "--planted", "0"], ["--family", "gpt2", "--mlp-bias"],
                ["--family", "opt", "--planted", "x"], ["--family", "opt", "--d", "0"],
                ["--family", "opt", "--d", "8", "--n", "4", "--planted", "0"], ["--family", "opt", "--planted", "2"]):
        with pytest.raises(SystemExit) as exc:
            MC.main([str(tmp_path / "x"), *bad])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err.startswith("make_checkpoint.py: error:") or "error:" in err, err


def test_bert_planted_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """bert plants layer 1 by default (the documented demo); --planted none leaves every layer random."""
    MC.main([str(tmp_path / "b"), "--planted", "none"])
    rc, js = _check_json(capsys, str(tmp_path / "b"))
    assert all(b["verdict"] != "absorbable" for b in js["blocks"])
    assert rc == (3 if any(b["verdict"] == "unknown" for b in js["blocks"]) else 0)


def _table_module():
    spec = importlib.util.spec_from_file_location("family_table", ROOT / "examples" / "family_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_family_table_verdict_cells() -> None:
    ft = _table_module()
    blocks = [{"name": f"model.{t}.layers.{i}", "layer": i, "verdict": v}
              for t, vs in (("decoder", ("unknown", "unknown")), ("encoder", ("unknown", "absorbable"))) for i, v in enumerate(vs)]
    assert ft.verdicts_by_layer(blocks) == "decoder: L0 unknown · L1 unknown; encoder: L0 unknown · L1 absorbable"
    experts = [{"name": f"model.layers.0.mlp.experts.{e}", "layer": 0, "verdict": "not_absorbable"} for e in range(3)]
    experts.append({"name": "model.layers.0.mlp.shared_expert", "layer": 0, "verdict": "unknown"})
    assert ft.verdicts_by_layer(experts) == "L0 not_absorbable ×3, unknown"
    t5 = [{"name": f"{t}.block.{i}.layer.{k}.DenseReluDense", "layer": i, "verdict": "absorbable"}
          for t, k in (("encoder", 1), ("decoder", 2)) for i in range(2)]
    assert ft.verdicts_by_layer(t5) == "encoder: L0 absorbable · L1 absorbable; decoder: L0 absorbable · L1 absorbable"
    assert ft.verdicts_by_layer([{"name": "h.1.mlp", "layer": 1, "verdict": "unknown"}]) == "L1 unknown"


@pytest.mark.slow
def test_family_table_runs_check_and_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The table is computed from `absorb check --json` (and `absorb verify` with --certificate)."""
    ft = _table_module()
    assert ft.main(["--families", "falcon,t5_gated", "--certificate", "--dir", str(tmp_path), "--out", str(tmp_path / "t.md")]) == 0
    out = capsys.readouterr().out
    assert out == (tmp_path / "t.md").read_text()
    rows = [ln for ln in out.splitlines() if ln.startswith("| `")]
    assert len(rows) == 2
    falcon, t5g = (r.split(" | ") for r in rows)
    assert falcon[0] == "| `falcon` (falcon)" and falcon[3] == "none" and "L1 absorbable" in falcon[4]
    assert t5g[4] == "decoder: L0 not_absorbable · L1 not_absorbable; encoder: L0 not_absorbable · L1 not_absorbable"
    assert t5g[5] == "linearization" and all(r.rstrip(" |").split(" | ")[-1].startswith("accepted (") for r in rows)
    assert "`falcon`: `--family falcon --planted 1`" in out


@pytest.mark.parametrize("family, norms", [
    ("bart", {"model.encoder.layers.0": "model.encoder.layers.0.self_attn_layer_norm",
              "model.decoder.layers.0": "model.decoder.layers.0.encoder_attn_layer_norm"}),
    ("whisper", {"model.encoder.layers.0": "model.encoder.layers.0.final_layer_norm",
                 "model.decoder.layers.0": "model.decoder.layers.0.final_layer_norm"}),
])
def test_fold_norm_takes_the_norm_that_feeds_the_mlp(tmp_path: Path, family: str, norms: dict[str, str]) -> None:
    """BART is post-LN: its MLP reads the attention's norm (the cross-attention's in the decoder) and
    final_layer_norm comes after the MLP; Whisper, with the same names, is pre-LN. Folding BART's
    final_layer_norm (as was done) analysed a map the model does not compute."""
    ckpt = _write(tmp_path, family)
    specs = {s.name: s for s in open_checkpoint(ckpt, fold_norm=True, layers="0").specs}
    assert {name: specs[name].norm.weight.rsplit(".", 1)[0] for name in norms} == norms


@pytest.mark.parametrize("family, transposed", [("gpt2", True), ("gpt_bigcode", False)])
def test_gpt2_orientation_without_config(tmp_path: Path, family: str, transposed: bool) -> None:
    """GPT-2 (Conv1D [in, out]) and GPT-BigCode (nn.Linear [out, in]) share every name; without config.json
    ln_2's length gives the hidden size. GPT-BigCode was read as Conv1D and refused over its c_fc bias."""
    ckpt = _write(tmp_path, family)
    (ckpt / "config.json").unlink()
    specs = open_checkpoint(ckpt, activation="gelu_tanh").specs
    assert {(s.d, s.n, s.transposed) for s in specs} == {(8, 32, transposed)}


def test_fc_layout_without_config_says_its_wiring_is_assumed(tmp_path: Path) -> None:
    """fc1/fc2 names are shared by pre-LN (OPT, Whisper, mBART) and post-LN (BART, Marian) models, so
    without config.json the report says the pre-LN wiring is assumed, as it does for NeoX and Falcon."""
    ckpt = _write(tmp_path, "bart")
    (ckpt / "config.json").unlink()
    specs = open_checkpoint(ckpt, activation="gelu").specs
    assert all(s.residual.endswith("(no config.json: transformers' default assumed)") for s in specs)


def test_biased_swiglu_checkpoint_is_decided_and_verified(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--family llama --mlp-bias``: a fused, biased SwiGLU checkpoint (gate, up and down biases);
    the gated skeleton decides every layer and `absorb verify` accepts the certificate."""
    MC.main([str(tmp_path / "lb"), "--family", "llama", "--mlp-bias", "--d", "4", "--n", "8", "--layers", "2"])
    assert json.loads((tmp_path / "lb" / "config.json").read_text())["mlp_bias"] is True
    capsys.readouterr()
    cert = tmp_path / "c.json"
    assert absorb_main(["check", str(tmp_path / "lb"), "--json", "--certificate", str(cert)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(b["verdict"], b["theorem"]) for b in doc["blocks"]] == [("not_absorbable", "gated-skeleton")] * 2
    assert all("b_gate" in next(h["statement"] for h in b["hypotheses"] if h["name"] == "bias_free") for b in doc["blocks"])
    assert absorb_main(["verify", str(cert), str(tmp_path / "lb")]) == 0
