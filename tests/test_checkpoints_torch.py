"""PyTorch state_dict checkpoints (``torch.save``), read with ``torch.load(weights_only=True)``.

The same synthetic tensors (tests/test_checkpoints.py's ``build``) are saved twice: with
``safetensors.numpy.save_file`` and with ``torch.save``. Both must give the same blocks,
orientation, arrays (exactly) and verdicts: the loader's only PyTorch-specific part is
where the tensors come from. Malicious pickles and non-PyTorch files are refused with one
line and exit 2 — and the malicious payload must not run. Without torch the refusal names
``pip install torch``. torch is an optional extra: every test that needs it skips without it.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from absorb._errors import InvalidInput
from absorb.engine import decide_checkpoint
from absorb.io.safetensors import open_checkpoint
from tests.test_checkpoints import CASES, D, _assert_one_line_exit2, build, run_cli, write

TOL = 1e-9


def _torch():
    return pytest.importorskip("torch")


def _to_torch(tensors: dict[str, np.ndarray], dtype: str) -> dict[str, object]:
    """The same stored values as torch tensors: float64 → float32 → the storage dtype (exact,
    the values are already representable in it)."""
    torch = _torch()
    tdt = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}[dtype]
    return {k: torch.from_numpy(np.asarray(v, dtype=np.float64).astype(np.float32)).to(tdt) for k, v in tensors.items()}


def _write_torch(out: Path, sd: dict[str, object], config: dict | None, *, name: str = "pytorch_model.bin",
                 wrap: str | None = None, shards: int = 1, legacy: bool = False) -> Path:
    torch = _torch()
    out.mkdir(parents=True, exist_ok=True)
    if config is not None:
        (out / "config.json").write_text(json.dumps({**config, "hidden_size": D} if "hidden_size" not in config else config))
    if shards <= 1:
        torch.save({wrap: sd} if wrap else sd, out / name, _use_new_zipfile_serialization=not legacy)
        return out / name
    names, wm = sorted(sd), {}
    for k in range(shards):
        fname = f"pytorch_model-{k + 1:05d}-of-{shards:05d}.bin"
        part = {nm: sd[nm] for nm in names[k::shards]}  # round robin: one block's tensors span shards
        torch.save(part, out / fname)
        wm.update({nm: fname for nm in part})
    (out / "pytorch_model.bin.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wm}))
    return out / "pytorch_model.bin.index.json"


_LAYOUTS = [("llama", "F32", "file"), ("llama", "BF16", "index"), ("gpt2", "F32", "dir"), ("gpt2", "BF16", "legacy"),
            ("bert", "F32", "nested"), ("bert", "BF16", "file")]


@pytest.mark.parametrize("family,dtype,layout", _LAYOUTS, ids=[f"{f}-{d}-{lay}" for f, d, lay in _LAYOUTS])
def test_torch_equals_safetensors(tmp_path: Path, family: str, dtype: str, layout: str) -> None:
    """Blocks, roles, orientation, exact arrays (also norm-folded) and verdicts equal safetensors'."""
    case = CASES[family]
    tensors, expected = build(case, dtype=dtype, seed=zlib.crc32(family.encode()))
    st = write(tmp_path / "st", tensors, case.config)
    sd = _to_torch(tensors, dtype)
    tp = _write_torch(tmp_path / "pt", sd, case.config, wrap="state_dict" if layout == "nested" else None,
                      shards=3 if layout == "index" else 1, legacy=layout == "legacy")
    if layout == "dir":
        tp = tp.parent
    for fold in (False, True):
        a, b = open_checkpoint(st, fold_norm=fold), open_checkpoint(tp, fold_norm=fold)
        assert [s.name for s in b.specs] == [s.name for s in a.specs] and len(b) == len(expected)
        assert b.specs == a.specs  # roles, orientation, activation (and its source), norm: one detection
        assert b.describe()[1:] == a.describe()[1:]
        for sa, sb in zip(a.specs, b.specs):
            assert sb.transposed == case.transposed
            ba, bb = a.block(sa), b.block(sb)
            for key in ("W_up", "W_down", "W_gate", "b_up", "b_gate", "b_down"):
                va, vb = getattr(ba, key), getattr(bb, key)
                assert (va is None) == (vb is None), key
                if va is not None:
                    assert vb.dtype == np.float64 and np.array_equal(va, vb), (sb.name, key, fold)
            if not fold:
                assert np.array_equal(bb.W_down, expected[sb.name]["W_down"])
    da = decide_checkpoint(open_checkpoint(st), tol=TOL, timeout=10, seed=0)
    db = decide_checkpoint(open_checkpoint(tp), tol=TOL, timeout=10, seed=0)
    assert [(x.block.name, x.verdict, x.theorem) for x in db.blocks] == [(x.block.name, x.verdict, x.theorem) for x in da.blocks]
    assert db.blocks[0].theorem.value == case.theorem


def test_cli_json_on_torch_file(tmp_path: Path) -> None:
    _torch()
    case = CASES["llama"]
    tensors, _ = build(case)
    tp = _write_torch(tmp_path / "pt", _to_torch(tensors, "F32"), case.config, name="model.pt")
    out = run_cli(str(tmp_path / "pt"), "--json", "--layers", "1")
    assert out.returncode == 0, out.stderr
    js = json.loads(out.stdout)
    assert js["verdict"] == "not_absorbable" and [b["name"] for b in js["blocks"]] == ["model.layers.1.mlp"]
    assert tp.name == "model.pt"


class _Evil:
    """Unpickling this calls os.system — weights_only=True must refuse it before it runs."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("how", ["torch.save", "pickle"])
def test_malicious_pickle_refused_and_not_run(tmp_path: Path, how: str) -> None:
    torch = _torch()
    marker = tmp_path / "pwned"
    payload = {"model.layers.0.mlp.up_proj.weight": _Evil(marker), "model.layers.0.mlp.down_proj.weight": torch.zeros(D, 6)}
    f = tmp_path / "pytorch_model.bin"
    if how == "torch.save":
        torch.save(payload, f)
    else:
        f.write_bytes(pickle.dumps(payload, protocol=2))
    out = run_cli(str(f))
    _assert_one_line_exit2(out, "torch.load(weights_only=True) refused the file")
    assert "posix.system" in out.stderr or "os.system" in out.stderr, out.stderr
    with pytest.raises(InvalidInput, match="refused the file"):
        open_checkpoint(f)
    assert not marker.exists()


def test_not_torch_files_refused(tmp_path: Path) -> None:
    _torch()
    (tmp_path / "notes.pt").write_text("these are not weights\n")
    _assert_one_line_exit2(run_cli(str(tmp_path / "notes.pt")), "refused the file")
    # a safetensors file renamed .pth is told by its content and read as safetensors
    st = write(tmp_path / "st", build(CASES["llama"])[0], None) / "model.safetensors"
    (tmp_path / "st.pth").write_bytes(st.read_bytes())
    ck = open_checkpoint(tmp_path / "st.pth", activation="swiglu")
    assert ck.source.__class__.__name__ == "SafetensorsSource" and len(ck) > 0
    (tmp_path / "trunc.bin").write_bytes((_write_torch(tmp_path / "t", _to_torch(build(CASES["llama"])[0], "F32"), None)
                                         ).read_bytes()[:300])
    with pytest.raises(InvalidInput, match="refused the file"):
        open_checkpoint(tmp_path / "trunc.bin")


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch deprecates quantize_per_tensor
def test_not_a_state_dict_or_not_float(tmp_path: Path) -> None:
    torch = _torch()
    case = CASES["llama"]
    tensors, _ = build(case)
    sd = _to_torch(tensors, "F32")
    cases = {
        "list": ([sd["model.layers.0.mlp.up_proj.weight"]], "holds a list, not a state_dict"),
        "two": ({"encoder": sd, "ema": sd}, "several entries hold weights"),
        "value": ({**sd, "epoch": 3}, "entry 'epoch' is a int, not a tensor"),
        "fp8": ({**sd, "model.layers.0.mlp.up_proj.weight": sd["model.layers.0.mlp.up_proj.weight"].to(torch.float8_e4m3fn)},
                "is F8_E4M3, not a plain float"),
        "qint8": ({**sd, "model.layers.1.mlp.down_proj.weight":
                   torch.quantize_per_tensor(sd["model.layers.1.mlp.down_proj.weight"], 0.1, 0, torch.qint8)},
                  "is quantised qint8, not a plain float"),
        "int": ({**sd, "model.layers.0.mlp.gate_proj.weight": torch.zeros(6, D, dtype=torch.int32)}, "is I32, not a plain float"),
    }
    for key, (obj, msg) in cases.items():
        d = tmp_path / key
        d.mkdir()
        (d / "config.json").write_text(json.dumps({**case.config, "hidden_size": D}))
        torch.save(obj, d / "pytorch_model.bin")
        with pytest.raises(InvalidInput, match=msg):
            open_checkpoint(d)
    _assert_one_line_exit2(run_cli(str(tmp_path / "fp8")), "not a plain float")
    # non-float tensors that are not block weights (position ids, masks) are fine
    d = tmp_path / "ids"
    d.mkdir()
    torch.save({**sd, "model.embed_positions.ids": torch.arange(4)}, d / "pytorch_model.bin")
    assert len(open_checkpoint(d, activation="silu")) == 2


def test_directory_choice_and_index_mismatch(tmp_path: Path) -> None:
    torch = _torch()
    case = CASES["llama"]
    tensors, _ = build(case)
    sd = _to_torch(tensors, "F32")
    d = tmp_path / "trainer"
    _write_torch(d, sd, case.config)
    (d / "training_args.bin").write_bytes(b"not weights")  # a Trainer's pickle: not loaded
    torch.save({"step": torch.tensor(3)}, d / "optimizer.pt")
    ck = open_checkpoint(d)
    assert len(ck) == 2 and [f.name for f in ck.files] == ["pytorch_model.bin"]
    # safetensors beside PyTorch files win (the existing behaviour)
    write(d, tensors, case.config)
    assert [f.name for f in open_checkpoint(d).files] == ["model.safetensors"]
    # an index naming a tensor its shard lacks
    idx = _write_torch(tmp_path / "sh", sd, case.config, shards=2)
    js = json.loads(idx.read_text())
    js["weight_map"]["model.layers.0.mlp.up_proj.weight"] = "pytorch_model-00002-of-00002.bin"
    js["weight_map"]["model.layers.0.mlp.gate_proj.weight"] = "pytorch_model-00002-of-00002.bin"
    idx.write_text(json.dumps(js))
    with pytest.raises(InvalidInput, match="holds no such tensor"):
        open_checkpoint(idx.parent)


def test_without_torch_the_refusal_names_pip_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No importorskip: this runs where torch is absent too (CI), and simulates its absence here."""
    f = tmp_path / "pytorch_model.bin"
    f.write_bytes(b"\x80\x02}q\x00.")  # an empty pickled dict: the content is never looked at
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    with pytest.raises(InvalidInput, match=r"torch is not installed; pip install torch \(the optional extra absorb\[torch\]\)"):
        open_checkpoint(f)
    with pytest.raises(InvalidInput, match="pip install torch"):
        open_checkpoint(tmp_path)  # a directory holding only the .bin
    # the CLI, in a fresh process where `import torch` fails: one line, exit 2. (An import
    # hook, not sys.modules["torch"] = None: scipy's array-API helpers getattr that entry.)
    code = ("import sys\n"
            "class Hide:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'torch':\n"
            "            raise ImportError('torch hidden')\n"
            "sys.meta_path.insert(0, Hide())\n"
            "from absorb.cli import main\n"
            "raise SystemExit(main(sys.argv[1:]))")
    out = subprocess.run([sys.executable, "-c", code, "check", str(f)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    _assert_one_line_exit2(out, "pip install torch")
