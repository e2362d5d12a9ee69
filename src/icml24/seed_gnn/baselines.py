"""The peers of SEED-GNN: EGNN (frozen GNN + MLP, single-target edits) and plain GNN fine-tuning."""

from __future__ import annotations

import copy
import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.utils import k_hop_subgraph

from ..errors import InputError
from .editor import GnnMlpEditor, SequentialEditor, gnn_outputs


class EGNNEditor(GnnMlpEditor):
    """EGNN (Liu, Jiang, Zhong et al., arXiv 2305.15529) as in the official ``pipelines/seed_gnn/egnn.py``:
    the same GNN + MLP model and warm-up, but each edit trains on ``[e_i]`` alone (no replay, no anchors),
    Adam at lr 0.01 (also the warm-up's), stopping when ``e_i`` is right; one optimizer for the sequence."""

    name = "egnn"

    def __init__(self, gnn: nn.Module, data: Data, *, lr: float = 0.01, max_steps: int = 500,
                 warmup_iters: int = 100, warmup_batch: int = 32, mlp_hidden: int | None = None,
                 mlp_layers: int | None = None, mlp_dropout: float | None = None, seed: int = 0,
                 fast: bool = True) -> None:
        super().__init__(gnn, data, lr=lr, max_steps=max_steps, replay=False, beta=0, warmup_iters=warmup_iters,
                         warmup_batch=warmup_batch, mlp_hidden=mlp_hidden, mlp_layers=mlp_layers,
                         mlp_dropout=mlp_dropout, seed=seed, fast=fast)


class FineTuneEditor(SequentialEditor):
    """Plain fine-tuning of the whole GNN on each target (an extra baseline; not in the official repo).

    A copy of the GNN (the caller's model is untouched) with every parameter trainable; each edit runs
    full-graph forwards in eval mode and Adam steps on the target's cross-entropy until it is predicted
    right (checked before each step, as the official editors do), at most ``max_steps``; one optimizer
    persists across the sequence. ``lr`` defaults to 0.01, the pretraining rate of the official configs.

    ``hops``: the GNN's number of message-passing layers (read from ``gnn.num_layers`` when present). When
    known, each step runs the GNN on the ``hops + 1``-hop subgraph around the target instead of the whole
    graph: the target's output, loss and gradients are exactly those of the full graph (every node within
    ``hops`` hops keeps all its neighbours, so degrees and aggregations are unchanged; eval mode, so batch
    norm uses its running statistics), at a fraction of the cost. ``hops=0`` forces full-graph steps.
    """

    name = "finetune"

    def __init__(self, gnn: nn.Module, data: Data, *, lr: float = 0.01, max_steps: int = 500,
                 hops: int | None = None) -> None:
        super().__init__(gnn, data)
        if hops is None:
            hops = getattr(gnn, "num_layers", 0)
        if isinstance(hops, bool) or not isinstance(hops, int) or hops < 0:
            raise InputError(f"hops must be a non-negative integer, got {hops!r}")
        self.hops = hops
        if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
            raise InputError(f"lr must be a positive number, got {lr!r}")
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise InputError(f"max_steps must be a positive integer, got {max_steps!r}")
        self.model = copy.deepcopy(gnn)
        for p in self.model.parameters():
            p.requires_grad_(True)
        self.lr, self.max_steps = float(lr), max_steps
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.lr, fused=True)

    @torch.no_grad()
    def logits(self) -> Tensor:
        return gnn_outputs(self.model, self.data.x, self.data.edge_index)

    def _edit(self, node: int, label: int, index: int) -> tuple[int, int, int]:
        self.model.eval()
        y = torch.tensor([label])
        if int(self.logits()[node].argmax()) == label:
            return 0, 1, 0
        x, ei, at = self._receptive_field(node)
        steps = 0
        for steps in range(1, self.max_steps + 1):
            self.optimizer.zero_grad()
            out = self.model(x, ei)[[at]]
            done = bool(out.argmax(-1).item() == label)
            F.cross_entropy(out, y).backward()
            self.optimizer.step()
            if done:
                break
        return steps, 1, 0

    def _receptive_field(self, node: int) -> tuple[Tensor, Tensor, int]:
        """Features, edges and the target's position of the subgraph a step needs (the whole graph if
        ``hops == 0``)."""
        if self.hops == 0:
            return self.data.x, self.data.edge_index, node
        subset, ei, mapping, _ = k_hop_subgraph(node, self.hops + 1, self.data.edge_index, relabel_nodes=True,
                                                num_nodes=self.data.num_nodes)
        return self.data.x[subset], ei, int(mapping[0])

    def _state(self) -> dict[str, Any]:
        return {"model": {k: v.detach().clone() for k, v in self.model.state_dict().items()},
                "optimizer": self.optimizer.state_dict()}

    def _load_state(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])


EDITORS = {"seed": "SeedGNNEditor", "egnn": "EGNNEditor", "finetune": "FineTuneEditor"}
