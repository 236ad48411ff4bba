"""Blocks, stacks, skips and activations: the objects every result talks about."""

from absorb.model.activations import Activation, get_activation
from absorb.model.block import Block, HyperConnection, Stack, lift_hyper_connection, sinkhorn

__all__ = ["Activation", "Block", "HyperConnection", "Stack", "get_activation", "lift_hyper_connection", "sinkhorn"]
