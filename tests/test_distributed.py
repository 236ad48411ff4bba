"""``absorb check CKPT --workers N`` / ``--scheduler ADDR`` (absorb/engine/distributed.py): one
layer per dask task, the same decisions as the serial run, certificates built on the workers."""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from absorb._errors import InvalidInput
from absorb.engine import decide_checkpoint, decide_collection
from absorb.engine.decide import collection_decision
from absorb.engine.distributed import _decide_layer, _Wire, decide_checkpoint_dask, layout
from absorb.io.safetensors import open_checkpoint

ROOT = Path(__file__).resolve().parents[1]
distributed = pytest.importorskip("dask.distributed")
pytestmark = pytest.mark.late  # dask's threads outlive the clusters (see conftest)


def _make_checkpoint():
    spec = importlib.util.spec_from_file_location("make_checkpoint", ROOT / "examples" / "make_checkpoint.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """bert: 3 layers (unknown, absorbable with a planted set, unknown); llama: 4 SwiGLU layers
    in 2 shards, each not absorbable."""
    mod = _make_checkpoint()
    root = tmp_path_factory.mktemp("ckpt")
    t, cfg = mod.bert(np.random.default_rng(0))
    mod.write(root / "bert", t, cfg, dtype="BF16")
    t, cfg = mod.llama(np.random.default_rng(1), layers=4)
    mod.write(root / "llama", t, cfg, dtype="F32", shards=2)
    return {"bert": root / "bert", "llama": root / "llama"}


def run_absorb(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "absorb", *args], capture_output=True, text=True, env=env, timeout=120)


def _timeless(obj: object) -> object:
    """The JSON without wall-clock fields (a search's "elapsed" differs from run to run)."""
    if isinstance(obj, dict):
        return {k: _timeless(v) for k, v in obj.items() if k != "elapsed"}
    if isinstance(obj, list):
        return [_timeless(v) for v in obj]
    return obj


@pytest.mark.slow
def test_workers_give_the_serial_json_and_a_certificate_that_verifies(checkpoints: dict[str, Path], tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`absorb check CKPT --workers 2` (worker processes: everything crosses a pickle) prints
    the serial run's JSON, blocks in the serial order, for a checkpoint whose layers are
    not absorbable (the skeleton), absorbable (a witness travels back) and not absorbable;
    the certificate, its entries built on the workers, verifies."""
    from absorb.cli import main

    ckpt = str(checkpoints["bert"])
    assert main(["check", ckpt, "--json"]) == 0
    serial = json.loads(capsys.readouterr().out)
    cert = tmp_path / "C.json"
    spread = run_absorb("check", ckpt, "--json", "--workers", "2", "--certificate", str(cert))
    assert spread.returncode == 0, spread.stderr
    got = json.loads(spread.stdout)
    assert [x["name"] for x in got["blocks"]] == [x["name"] for x in serial["blocks"]]
    assert [x["verdict"] for x in got["blocks"]] == ["not_absorbable", "absorbable", "not_absorbable"]
    assert _timeless(got) == _timeless(serial)
    entries = json.loads(cert.read_text())["blocks"]
    assert [e["name"] for e in entries] == [x["name"] for x in serial["blocks"]]
    assert all("sha256" in e["weights"]["W_up"] for e in entries)  # built while the weights were loaded
    assert main(["verify", str(cert), ckpt]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("accepted:")


def test_scheduler_address_and_layer_subsets_equal_serial(checkpoints: dict[str, Path]) -> None:
    """--scheduler (a running scheduler, here in-process) and subsets of layers, the fold-norm
    option travelling to the tasks: the same Decision as decide_checkpoint (a single block
    too, whose theorem becomes the whole's)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        for name, opts in [("bert", {"layers": "1"}), ("bert", {"layers": "0,2"}), ("llama", {}), ("llama", {"fold_norm": True}),
                           ("llama", {"layers": "3", "activation": "swiglu"})]:
            opts = {"activation": None, **opts}
            ckpt = open_checkpoint(checkpoints[name], **opts)
            serial = decide_checkpoint(ckpt, tol=1e-9, timeout=30, seed=0)
            seen: list[str] = []
            dec, values = decide_checkpoint_dask(ckpt, opts, tol=1e-9, timeout=30, seed=0, scheduler=cluster.scheduler_address,
                                                 progress=lambda n, s, seen=seen: seen.append(n))
            assert values is None and sorted(seen) == sorted(s.name for s in ckpt.specs)
            assert _timeless(dec.to_json()) == _timeless(serial.to_json()), (name, opts)
            assert [bd.block.W_up.strides for bd in dec.blocks] == [(0, 0)] * len(ckpt)  # no weights came back


def test_collection_decision_is_decide_collections(checkpoints: dict[str, Path]) -> None:
    """The whole's verdict, theorem, reason and summary from the blocks' decisions equal
    decide_collection's for every mix of block verdicts the two checkpoints give."""
    bert = list(open_checkpoint(checkpoints["bert"]).blocks())  # unknown, absorbable, unknown
    llama = list(open_checkpoint(checkpoints["llama"]).blocks())[:2]  # not absorbable
    for blocks in ([bert[1]], [bert[0]], [llama[0]], [bert[1], bert[1]], bert, [bert[0], llama[0]], [bert[1]] + llama):
        want = decide_collection(blocks, path="p", tol=1e-9, timeout=30, seed=0)
        got = collection_decision(want.blocks, path="p", tol=1e-9)
        assert _timeless(got.to_json()) == _timeless(want.to_json())
    with pytest.raises(ValueError):
        collection_decision([], path="p", tol=1e-9)


def test_a_decision_crosses_the_wire_without_its_weight_bytes() -> None:
    """Pickle copies a zero-stride placeholder (Block.without_weights) in full — n·d·8 bytes
    per matrix; on the wire it is its value and shape, and comes back as the same placeholder.
    A witness's all-zero skip likewise; an array holding -0.0 travels as it is."""
    import dataclasses

    cloudpickle = pytest.importorskip("cloudpickle")  # what dask falls back to: the activation holds a lambda
    from absorb.model.activations import get_activation
    from absorb.model.block import Block

    rng = np.random.default_rng(0)
    d, n = 48, 96
    U = rng.standard_normal((n, d))
    D = np.zeros((d, n))
    D[:, :d] = -np.linalg.inv(U[:d])  # planted: S = {0..d-1}, absorbable with a witness
    blk = Block(W_up=U, W_down=D, activation=get_activation("relu"), name="b")
    bd = decide_collection([blk], tol=1e-9, timeout=30, seed=0, keep_weights=False).blocks[0]
    assert bd.witness is not None and bd.witness.block.skip is not None and not bd.witness.block.skip.any()
    naive = len(pickle.dumps(bd.block.W_up)) + len(pickle.dumps(bd.block.W_down))
    wire = cloudpickle.dumps(_Wire(bd))
    assert naive > 2 * n * d * 8 and len(wire) < naive / 3, (naive, len(wire))
    back = pickle.loads(wire).decision
    for a, b in [(back.block.W_up, bd.block.W_up), (back.block.W_down, bd.block.W_down), (back.witness.block.W_up, bd.witness.block.W_up),
                 (back.witness.block.skip, bd.witness.block.skip)]:
        assert a.shape == b.shape and a.dtype == b.dtype and a.strides == b.strides and np.array_equal(a, b)
    assert json.dumps(back.to_json(), default=str) == json.dumps(bd.to_json(), default=str)
    neg = dataclasses.replace(bd, witness=dataclasses.replace(bd.witness, block=bd.witness.block.replace(skip=np.full((d, d), -0.0))))
    kept = pickle.loads(cloudpickle.dumps(_Wire(neg))).decision
    assert np.signbit(kept.witness.block.skip).all()


def test_worker_that_sees_another_checkpoint_refuses(checkpoints: dict[str, Path], tmp_path: Path) -> None:
    """A task whose checkpoint at the path differs from the client's (other tensors, or the
    block missing) refuses in one line instead of deciding other weights."""
    ckpt = open_checkpoint(checkpoints["bert"])
    spec = ckpt.specs[0]
    args = (1e-9, 30.0, 0, "auto", False, None)
    wire, value, seconds = _decide_layer(str(checkpoints["bert"]), {}, spec.name, layout(ckpt, spec), *args)
    assert wire.decision.block.name == spec.name and value is None and seconds > 0
    other = open_checkpoint(checkpoints["llama"])
    with pytest.raises(InvalidInput, match="sees another checkpoint there than the client.*same checkpoint files at the same path"):
        _decide_layer(str(checkpoints["bert"]), {}, spec.name, layout(other, other.specs[0]), *args)
    with pytest.raises(InvalidInput, match="block nope is missing"):
        _decide_layer(str(checkpoints["bert"]), {}, "nope", layout(ckpt, spec), *args)
    with pytest.raises(InvalidInput, match="on the worker on .*no such file"):
        _decide_layer(str(tmp_path / "gone"), {}, spec.name, layout(ckpt, spec), *args)


def test_first_failing_layer_in_order_is_raised(tmp_path: Path) -> None:
    """Layers 1 and 3 hold a NaN: like the serial run, the error names layer 1, whichever
    task fails first."""
    mod = _make_checkpoint()
    t, cfg = mod.llama(np.random.default_rng(2), layers=4)
    for i in (1, 3):
        t[f"model.layers.{i}.mlp.up_proj.weight"][0, 0] = np.nan
    mod.write(tmp_path / "nan", t, cfg)
    ckpt = open_checkpoint(tmp_path / "nan")
    with pytest.raises(InvalidInput, match=r"model\.layers\.1\.mlp\.up_proj\.weight' contains NaN"):
        decide_checkpoint(ckpt, tol=1e-9, timeout=30, seed=0)
    with pytest.raises(InvalidInput, match=r"model\.layers\.1\.mlp\.up_proj\.weight' contains NaN"):
        decide_checkpoint_dask(ckpt, {}, tol=1e-9, timeout=30, seed=0, workers=2, processes=False)


def test_cli_refusals(checkpoints: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 2 with one line: --workers on an .npz file, --workers with --scheduler, and
    --workers without dask installed (naming the extra that installs it)."""
    from absorb.cli import main

    assert main(["check", str(ROOT / "examples" / "planted_relu.npz"), "--workers", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "an .npz file is decided in this process" in err
    with pytest.raises(SystemExit) as exc:
        main(["check", str(checkpoints["bert"]), "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"])
    assert exc.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["check", str(checkpoints["bert"]), "--workers", "0"])
    assert exc.value.code == 2 and "must be ≥ 1" in capsys.readouterr().err
    for mod in ("dask", "dask.distributed", "distributed"):
        monkeypatch.setitem(sys.modules, mod, None)  # import dask.distributed → ImportError
    assert main(["check", str(checkpoints["bert"]), "--workers", "2", "--json"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and "pip install 'absorb[montecarlo]'" in out.err


def test_unreachable_scheduler_is_one_line(checkpoints: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    from absorb.cli import main

    assert main(["check", str(checkpoints["llama"]), "--scheduler", "not-an-address::"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--scheduler not-an-address::: cannot connect" in err


def test_local_workers_get_the_serial_runs_blas_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """dask starts workers with one BLAS thread, and a BLAS's roundings depend on its thread
    count (one thread per worker changed the last bit of a 7B layer's search bound): with
    serial_blas (absorb check --workers) the workers get this process's settings — the
    variables as the user set them, or none."""
    import absorb._dask as ad

    monkeypatch.setattr(ad, "_USER_BLAS", {"MKL_NUM_THREADS": "7"})
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # as an earlier dask nanny leaves os.environ
    with ad.dask_client(workers=1, serial_blas=True) as client:
        omp = set(client.run(os.getenv, "OMP_NUM_THREADS").values())
        mkl = set(client.run(os.getenv, "MKL_NUM_THREADS").values())
    assert omp == {None} and mkl == {"7"}
    assert os.environ["OMP_NUM_THREADS"] == "1"


def test_a_cluster_whose_event_loop_did_not_start_is_tried_once_more() -> None:
    """distributed waits 10 s for its IO-loop thread, then fails an internal assertion (seen once
    in a test run on two loaded cores): the cluster is created a second time."""
    import types

    import absorb._dask as ad

    calls = []

    def cluster(**kw):
        calls.append(kw)
        if len(calls) == 1:
            raise AssertionError
        return "cluster"

    assert ad._local_cluster(types.SimpleNamespace(LocalCluster=cluster), n_workers=1) == "cluster"
    assert calls == [{"n_workers": 1}] * 2


@pytest.mark.slow
def test_a_busy_dashboard_port_prints_nothing(checkpoints: dict[str, Path]) -> None:
    """With dask's default port 8787 taken (a notebook's dashboard, another cluster), `absorb
    check --workers` wrote distributed's 3-line "Port 8787 is already in use" warning on stderr;
    the cluster's HTTP server now takes a free port on 127.0.0.1, so stderr stays empty."""
    import socket

    held = socket.socket()
    try:
        held.bind(("0.0.0.0", 8787))
        held.listen(1)
    except OSError:  # taken already: the same situation
        pass
    try:
        out = run_absorb("check", str(checkpoints["llama"]), "--workers", "2", "--layers", "0")
    finally:
        held.close()
    assert out.returncode == 0 and out.stderr == "", out.stderr
