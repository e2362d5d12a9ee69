"""Building blocks shared by several methods: GNN backbones and MLPs (``gnn``)."""

from .gnn import GCN, GIN, MLP, SAGE, build_backbone, pretrain_inductive, to_inductive

__all__ = ["GCN", "SAGE", "GIN", "MLP", "build_backbone", "pretrain_inductive", "to_inductive"]
