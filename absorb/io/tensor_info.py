"""Where one tensor of a checkpoint lives (shared by the safetensors and PyTorch readers)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TensorInfo:
    """Where one tensor lives: its shard, dtype, shape and byte range after the header."""

    name: str
    file: Path
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int
    data_start: int  # 8 + header length: absolute offset of byte 0 of the data section


__all__ = ["TensorInfo"]
