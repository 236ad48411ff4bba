"""GGUF files (llama.cpp): blocks from the tensor names and the metadata, quantised weights dequantised per layer.

Optional (``pip install absorb[gguf]``): the ``gguf`` package (llama.cpp's own Python reader)
memory-maps the file; nothing but the metadata and the tensor table is read until a block is.
The architecture (``general.architecture``) and the sizes (``{arch}.embedding_length``,
``{arch}.feed_forward_length``) come from the metadata; the MLP tensors are
``blk.{i}.ffn_gate``/``ffn_up``/``ffn_down`` (``.bias`` beside them where the architecture has
biases), the mixture-of-experts tensors ``blk.{i}.ffn_{gate,up,down}_exps`` ([E, n, d], one
block per expert) and the shared expert ``ffn_*_shexp``.

The activation is what llama.cpp's graph computes for the architecture (it is not in the
metadata): SiLU-gated for the LLaMA family, the tanh GELU (``ggml_gelu``) for Gemma (gated)
and for GPT-2, StarCoder, Phi-2, BLOOM, Falcon, GPT-NeoX, MPT, GPT-J (ungated), ReLU² for Arcee
(ungated). Other architectures are refused unless ``--activation`` names it; so is a gated
architecture's block without ``ffn_gate`` and an ungated one's with it.

Quantised tensors (Q8_0, Q4_K, IQ…) are dequantised with ``gguf.quants.dequantize``, one
tensor (one expert of a stacked tensor) at a time, to float32; every verdict is then about the
**dequantised** weights, and the report names the quantisation types. A type the installed
gguf package cannot dequantise is refused by name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from absorb._errors import InvalidInput
from absorb.io.family_table import BlockSpec, Detection
from absorb.io.sniff import optional_package
from absorb.io.tensor_info import TensorInfo
from absorb.model.activations import get_activation

_SILU = ("llama", "mistral", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "phi3", "deepseek", "deepseek2", "granite",
         "granitemoe", "internlm2", "olmo", "olmo2", "olmoe", "exaone", "command-r", "cohere2", "minicpm", "stablelm",
         "smollm3", "mixtral", "ernie4_5", "refact")
_GELU_GATED = ("gemma", "gemma2", "gemma3")
_GELU = ("gpt2", "starcoder", "phi2", "bloom", "falcon", "gptneox", "mpt", "gptj")
_RELU2 = ("arcee",)  # (ungated ReLU²: llama.cpp's arcee graph, LLM_FFN_RELU_SQR)
_UNGATED = _GELU + _RELU2
ARCH_ACTIVATION: dict[str, tuple[str, str]] = {
    **{a: ("silu", "llama.cpp's graph: SiLU-gated (LLM_FFN_SILU, LLM_FFN_PAR)") for a in _SILU},
    **{a: ("gelu_tanh", "llama.cpp's graph: ggml_gelu (the tanh form), gated") for a in _GELU_GATED},
    **{a: ("gelu_tanh", "llama.cpp's graph: ggml_gelu (the tanh form)") for a in _GELU},
    **{a: ("relu2", "llama.cpp's graph: ReLU², ungated (LLM_FFN_RELU_SQR)") for a in _RELU2},
}
_FLOAT = {"F32": "F32", "F16": "F16", "F64": "F64", "BF16": "BF16"}
_ROLE = re.compile(r"^blk\.(?P<i>\d+)\.ffn_(?P<role>gate|up|down)(?P<kind>_exps|_shexp|)\.weight$")


@dataclass(frozen=True)
class _Ref:
    tensor: Any  # gguf ReaderTensor
    expert: int | None


class GgufSource:
    """Tensors of a GGUF file as float32 numpy arrays [out, in], dequantised one at a time."""

    def __init__(self, refs: Mapping[str, _Ref]) -> None:
        self.refs = dict(refs)

    def load(self, info: TensorInfo) -> np.ndarray:
        from gguf import quants

        ref = self.refs[info.name]
        t = ref.tensor
        data = t.data if ref.expert is None else t.data[ref.expert]
        qtype = t.tensor_type
        if qtype.name in ("F32", "F64"):
            return np.array(data, copy=True)
        if qtype.name == "F16":
            return np.asarray(data, dtype=np.float32)  # exact
        try:
            out = quants.dequantize(np.asarray(data), qtype)
        except (NotImplementedError, ValueError, KeyError) as exc:
            raise InvalidInput(f"{info.file}: tensor {t.name!r} is quantised {qtype.name}, which the installed gguf package "
                               f"cannot dequantise ({type(exc).__name__}: {exc}); upgrade gguf or use a file of another type") from None
        out = np.asarray(out, dtype=np.float32).reshape(info.shape)
        return out


def _field(reader: Any, key: str) -> Any:
    f = reader.fields.get(key)
    if f is None:
        return None
    try:
        return f.contents()
    except AttributeError:  # gguf before contents(): the value is the part that data[0] points at
        pass
    except (IndexError, ValueError):
        return None
    try:
        part = f.parts[f.data[0]]
        if f.types and f.types[0].name == "STRING":
            return bytes(part).decode("utf-8")
        return part[0].item() if len(part) == 1 else None
    except (AttributeError, IndexError, ValueError, UnicodeDecodeError):
        return None


# llama.cpp graphs whose layer feeds the attention and the MLP the same normed input and adds both (parallel residual)
_PARALLEL = ("gptj", "phi2", "falcon", "command-r", "cohere2")


def _wiring(arch: str | None, i: int, tensors_by_name: dict[str, Any], reader: Any) -> str:
    """How llama.cpp's graph for ``arch`` wires layer ``i``'s MLP (a phrase for the report)."""
    has = {k: f"blk.{i}.{k}.weight" in tensors_by_name for k in ("ffn_norm", "post_ffw_norm")}
    par = _field(reader, f"{arch}.use_parallel_residual")
    if arch in _PARALLEL or (arch == "gptneox" and par is not False) or (arch == "stablelm" and not has["ffn_norm"]):
        return "parallel residual, h + attn(norm(h)) + B(norm'(h))"
    if has["post_ffw_norm"]:
        return ("pre-norm with a post-MLP norm, h + norm_post(B(norm(h)))" if has["ffn_norm"] else
                "post-MLP norm only, h + norm(B(h))")
    return "pre-norm, h + B(norm(h))"


def read_gguf(path: Path, *, activation: str | None) -> tuple[dict[str, TensorInfo], GgufSource, Detection]:
    """Parse ``path`` and find its MLP blocks (see the module docstring)."""
    gguf = optional_package("gguf", path, "a GGUF file")
    try:
        reader = gguf.GGUFReader(str(path), "r")
    except Exception as exc:  # noqa: BLE001 - the reader raises ValueError, struct.error, IndexError on damage
        raise InvalidInput(f"{path}: a GGUF file that cannot be read ({type(exc).__name__}: {str(exc)[:160]}); "
                           "the file is truncated or corrupt") from None
    arch = _field(reader, "general.architecture")
    arch = arch if isinstance(arch, str) else None
    # (before the activation: advice to pass --activation must not lead to a block read without these)
    scaled = next((t.name for t in reader.tensors
                   if re.match(r"^blk\.\d+\.ffn[._](act|sub_norm|\w*scale|\w+\.scales?$)", t.name)), None)
    if scaled is not None:
        raise InvalidInput(f"{path}: a GGUF file whose MLP has activation or weight scales or a norm inside it ({scaled}); the "
                           "block is not W_down σ(W_up x + b) and absorb does not read it")
    if activation is not None:
        act, act_src = get_activation(activation).name, "--activation"
    elif arch in ARCH_ACTIVATION:
        act, act_src = ARCH_ACTIVATION[arch]
        act_src = f"{act_src} for architecture {arch!r}"
    else:
        raise InvalidInput(f"{path}: a GGUF file of architecture {arch!r}, whose MLP activation absorb does not know "
                           "(GGUF metadata does not store it); pass --activation NAME")
    d_meta = _field(reader, f"{arch}.embedding_length")
    by_layer: dict[tuple[int, str, int | None], dict[str, Any]] = {}
    n_exps: dict[int, tuple[str, int]] = {}  # (layer → the first stacked tensor's name and expert count)
    tensors_by_name = {t.name: t for t in reader.tensors}
    for t in reader.tensors:
        m = _ROLE.match(t.name)
        if m is None:
            continue
        i, role, kind = int(m.group("i")), m.group("role"), m.group("kind")
        if len(t.shape) != (3 if kind == "_exps" else 2):
            raise InvalidInput(f"{path}: tensor {t.name} has {len(t.shape)} dimensions {[int(x) for x in t.shape]}; "
                               f"an {'expert-stacked ' if kind == '_exps' else ''}MLP weight has "
                               f"{3 if kind == '_exps' else 2}; the file is malformed")
        if kind == "_exps":
            first, count = n_exps.setdefault(i, (t.name, int(t.data.shape[0])))
            if int(t.data.shape[0]) != count:
                raise InvalidInput(f"{path}: {t.name} stacks {int(t.data.shape[0])} experts but {first} stacks {count}; "
                                   "the file is malformed")
            for e in range(int(t.data.shape[0])):
                by_layer.setdefault((i, kind, e), {})[role] = _Ref(t, e)
        else:
            by_layer.setdefault((i, kind, None), {})[role] = _Ref(t, None)
    if not by_layer:
        names = ", ".join(t.name for t in reader.tensors[:6])
        raise InvalidInput(f"{path}: a GGUF file of architecture {arch!r} with no blk.{{i}}.ffn_up/ffn_down tensors "
                           f"(it has {names}{', ...' if len(reader.tensors) > 6 else ''}); absorb reads the MLP blocks of "
                           "llama.cpp's transformer layouts")
    tensors: dict[str, TensorInfo] = {}
    refs: dict[str, _Ref] = {}
    qtypes: set[str] = set()

    def register(ref: _Ref) -> str:
        t = ref.tensor
        shape = tuple(int(x) for x in reversed([int(s) for s in t.shape]))  # ggml ne [in, out(, E)] → [(E,) out, in]
        if ref.expert is not None:
            shape = shape[1:]
        key = t.name if ref.expert is None else f"{t.name}[{ref.expert}]"
        qname = t.tensor_type.name
        if qname not in _FLOAT:
            qtypes.add(qname)
        tensors[key] = TensorInfo(key, path, _FLOAT.get(qname, "F32"), shape, 0, 0, 0)
        refs[key] = _Ref(t, ref.expert)
        return key

    def bias(weight: str) -> str | None:
        b = tensors_by_name.get(weight.removesuffix(".weight") + ".bias")
        return register(_Ref(b, None)) if b is not None else None

    specs: list[BlockSpec] = []
    for (i, kind, e), roles in sorted(by_layer.items(), key=lambda kv: (kv[0][0], kv[0][1], -1 if kv[0][2] is None else kv[0][2])):
        where = f"blk.{i}.ffn{kind}" + (f"[{e}]" if e is not None else "")
        if "up" not in roles or "down" not in roles:
            missing = [r for r in ("up", "down") if r not in roles]
            raise InvalidInput(f"{path}: incomplete MLP block {where}: no ffn_{missing[0]}{kind} tensor; the file is incomplete")
        up, down = register(roles["up"]), register(roles["down"])
        gate = register(roles["gate"]) if "gate" in roles else None
        n, d = tensors[up].shape
        if tensors[down].shape != (d, n) or (gate is not None and tensors[gate].shape != (n, d)):
            raise InvalidInput(f"{path}: {where}: ffn_up {list(tensors[up].shape)}, ffn_down {list(tensors[down].shape)}"
                               f"{f', ffn_gate {list(tensors[gate].shape)}' if gate else ''} do not fit one block [n, d], [d, n]")
        if isinstance(d_meta, int) and d != d_meta:
            raise InvalidInput(f"{path}: {where}: ffn_up has d = {d} but the metadata's {arch}.embedding_length is {d_meta}")
        q = sorted({refs[k].tensor.tensor_type.name for k in (up, down, gate) if k})
        stored = ", ".join(q)
        residual = (f"llama.cpp's {arch} layer ({_wiring(arch, i, tensors_by_name, reader)}); weights stored {stored}"
                    + ("" if all(x in _FLOAT for x in q) else ", dequantised with gguf.quants.dequantize: the verdict is "
                       "about the dequantised weights"))
        specs.append(BlockSpec(name=where, layer=i, family="gguf", up=up, down=down, gate=gate,
                               b_up=bias(roles["up"].tensor.name) if e is None else None,
                               b_gate=bias(roles["gate"].tensor.name) if gate and e is None else None,
                               b_down=bias(roles["down"].tensor.name) if e is None else None,
                               activation=act, activation_source=act_src, residual=residual, d=d, n=n))
    notes = []
    if qtypes:
        notes.append(f"quantised weights ({', '.join(sorted(qtypes))}) are dequantised to float32 one tensor at a time; "
                     "every verdict is about the dequantised weights")
    gated = [s for s in specs if s.gate is not None]
    if activation is None and arch in _UNGATED and gated:
        raise InvalidInput(f"{path}: architecture {arch!r} is ungated in llama.cpp, but {gated[0].name} has an ffn_gate; pass --activation NAME")
    ungated = [s for s in specs if s.gate is None]
    if activation is None and arch not in _UNGATED and ungated:
        raise InvalidInput(f"{path}: architecture {arch!r} is gated in llama.cpp, but {ungated[0].name} has no ffn_gate "
                           "(its ffn_up may hold the gate and up rows together); pass --activation NAME for an ungated block")
    return tensors, GgufSource(refs), Detection(blocks=tuple(specs), families=("gguf",), model_type=arch, notes=tuple(notes))


__all__ = ["ARCH_ACTIVATION", "GgufSource", "read_gguf"]
