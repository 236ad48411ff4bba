"""Write a small synthetic Hugging Face style checkpoint to try ``absorb check`` on.

Usage: ``python examples/make_checkpoint.py OUT_DIR [--family llama|bert] [--dtype F32|F16|BF16] [--shards K]
[--d D --n N --layers L]`` (the sizes for ``llama`` only; e.g. ``--d 4096 --n 11008`` is LLaMA-7B's MLP).

* ``llama``: 4 layers of ``model.layers.{i}.mlp.{gate,up,down}_proj`` (SwiGLU, no bias), an
  RMSNorm ``post_attention_layernorm`` per layer, ``config.json`` with ``hidden_act: silu``.
* ``bert``: 3 layers of ``bert.encoder.layer.{i}.intermediate.dense`` / ``output.dense``
  (GELU, with biases), ``attention.output.LayerNorm``, ``hidden_act: gelu``. Layer 1 is
  *planted*: d = 2, n = 8, and ``W_down[:, S] = −W_up[S, :]⁻¹`` for S = {1, 5}, with entries
  chosen dyadic so that the relation survives storage in F32 exactly; ``absorb check``
  finds S and proves the layer absorbable. The other layers are random (seeded).

Weights are random (``numpy.random.default_rng(seed)``), written with
``safetensors.numpy.save_file``; with ``--shards K`` the tensors are spread over K shards
and a ``model.safetensors.index.json`` maps each tensor to its shard.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file


def _cast(a: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "F32":
        return a.astype(np.float32)
    if dtype == "F16":
        return a.astype(np.float16)
    import ml_dtypes

    return a.astype(ml_dtypes.bfloat16)


def llama(rng: np.random.Generator, *, d: int = 16, n: int = 48, layers: int = 4) -> tuple[dict[str, np.ndarray], dict]:
    t: dict[str, np.ndarray] = {"model.embed_tokens.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"model.layers.{i}"
        t[f"{p}.mlp.gate_proj.weight"] = rng.standard_normal((n, d)) / np.sqrt(d)
        t[f"{p}.mlp.up_proj.weight"] = rng.standard_normal((n, d)) / np.sqrt(d)
        t[f"{p}.mlp.down_proj.weight"] = rng.standard_normal((d, n)) / np.sqrt(n)
        t[f"{p}.post_attention_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(d)
        t[f"{p}.input_layernorm.weight"] = np.ones(d)
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": d, "intermediate_size": n,
           "num_hidden_layers": layers, "hidden_act": "silu"}
    return t, cfg


def bert(rng: np.random.Generator, *, d: int = 2, n: int = 8, layers: int = 3, planted: int = 1) -> tuple[dict[str, np.ndarray], dict]:
    t: dict[str, np.ndarray] = {"bert.embeddings.word_embeddings.weight": rng.standard_normal((32, d))}
    for i in range(layers):
        p = f"bert.encoder.layer.{i}"
        # dyadic entries (multiples of 1/64, |x| < 4) so that F32, F16 and BF16 storage are exact
        U = np.round(rng.standard_normal((n, d)) * 64) / 64
        D = np.round(rng.standard_normal((d, n)) * 64) / 64
        if i == planted:
            S = [1, 5]
            U[S] = [[2.0, 1.0], [0.0, 0.5]]  # det 1: the inverse is dyadic
            D[:, S] = -np.linalg.inv(U[S])  # [[-0.5, 1], [0, -2]]
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


def write(out: Path, tensors: dict[str, np.ndarray], config: dict, *, dtype: str = "F32", shards: int = 1) -> None:
    """Write ``tensors`` (float64 arrays, [out, in]) as a (sharded) safetensors checkpoint."""
    out.mkdir(parents=True, exist_ok=True)
    cast = {k: _cast(v, dtype) for k, v in tensors.items()}
    tensors.clear()  # keep one copy in memory
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--family", choices=("llama", "bert"), default="bert")
    ap.add_argument("--dtype", choices=("F32", "F16", "BF16"), default="F32")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--d", type=int, default=16, help="llama: model dimension")
    ap.add_argument("--n", type=int, default=48, help="llama: MLP width")
    ap.add_argument("--layers", type=int, default=4, help="llama: number of layers")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    if args.family == "llama":
        tensors, cfg = llama(rng, d=args.d, n=args.n, layers=args.layers)
    else:
        tensors, cfg = bert(rng)
    count = len(tensors)
    write(args.out, tensors, cfg, dtype=args.dtype, shards=args.shards)
    print(f"wrote {args.out} ({args.family}, {args.dtype}, {max(1, args.shards)} shard(s), {count} tensors)")


if __name__ == "__main__":
    main()
