"""The peers of SEED-GNN: EGNN (frozen GNN + MLP, single-target edits), plain GNN fine-tuning, and GRE / GRE+
(gradient rewiring, Jiang et al., NeurIPS 2024)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from scipy.optimize import nnls
from torch import Tensor, nn

from ..extras import require

require("torch_geometric", extra="graphs", what="seed_gnn")  # one line naming the extra, not a raw ImportError

from torch_geometric.data import Data
from torch_geometric.utils import k_hop_subgraph

from ..errors import InputError
from ..validation import check_bool, check_float, check_int, check_tensor
from .editor import GnnMlpEditor
from .graph_input import induced, structure_like
from .sequential import SequentialEditor


class EGNNEditor(GnnMlpEditor):
    """EGNN (Liu, Jiang, Zhong et al., arXiv 2305.15529) as in the official ``pipelines/seed_gnn/egnn.py``:
    the same GNN + MLP model and warm-up, but each edit trains on ``[e_i]`` alone (no replay, no anchors),
    Adam at lr 0.01 (also the warm-up's), stopping when ``e_i`` is right; one optimizer for the sequence.

    Parameters
    ----------
    gnn : torch.nn.Module
        A trained node classifier, ``gnn(x, edge_index)``; only read, never modified.
    data : torch_geometric.data.Data
        The graph with its three masks.
    lr : float, default 0.01
        Adam learning rate of the warm-up and the edits (the official EGNN config).
    max_steps : int, default 500
        At most this many steps per edit.
    warmup_iters, warmup_batch : int, default 100 and 32
        The MLP warm-up.
    mlp_hidden, mlp_layers, mlp_dropout : optional
        The MLP's shape; by default the GNN's own.
    seed : int, default 0
        Seeds the MLP and the warm-up batches.
    fast : bool, default True
        Edit steps with the MLP's backward written out.
    inference_batch : int, optional
        Cache the GNN's outputs this many nodes at a time (as :class:`~icml24.seed_gnn.SeedGNNEditor`).

    References
    ----------
    Q. Liu, Z. Jiang, S. Zhong et al. Editable Graph Neural Network for Node Classifications. arXiv 2305.15529.
    """

    name = "egnn"

    def __init__(
        self,
        gnn: nn.Module,
        data: Data,
        *,
        lr: float = 0.01,
        max_steps: int = 500,
        warmup_iters: int = 100,
        warmup_batch: int = 32,
        mlp_hidden: int | None = None,
        mlp_layers: int | None = None,
        mlp_dropout: float | None = None,
        seed: int = 0,
        fast: bool = True,
        inference_batch: int | None = None,
    ) -> None:
        super().__init__(
            gnn,
            data,
            inference_batch=inference_batch,
            lr=lr,
            max_steps=max_steps,
            replay=False,
            beta=0,
            warmup_iters=warmup_iters,
            warmup_batch=warmup_batch,
            mlp_hidden=mlp_hidden,
            mlp_layers=mlp_layers,
            mlp_dropout=mlp_dropout,
            seed=seed,
            fast=fast,
        )


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

    Parameters
    ----------
    gnn : torch.nn.Module
        A trained node classifier; a copy is edited.
    data : torch_geometric.data.Data
        The graph with its three masks.
    lr : float, default 0.01
        Adam learning rate.
    max_steps : int, default 500
        At most this many steps per edit.
    hops : int, optional
        Message-passing layers of the GNN (default ``gnn.num_layers``, else 0: full-graph steps).
    inference_batch : int, optional
        Evaluate the whole graph this many nodes at a time (:func:`~icml24.seed_gnn.graph_input.chunked_outputs`).
    """

    name = "finetune"
    _required_masks = ()

    def __init__(
        self,
        gnn: nn.Module,
        data: Data,
        *,
        lr: float = 0.01,
        max_steps: int = 500,
        hops: int | None = None,
        inference_batch: int | None = None,
    ) -> None:
        super().__init__(gnn, data, inference_batch=inference_batch)
        self._base_out = None
        if hops is None:
            hops = getattr(gnn, "num_layers", 0)
        self.hops = check_int(hops, "hops", min_val=0)
        lr = check_float(lr, "lr", min_val=0.0, include_boundaries="right")
        max_steps = check_int(max_steps, "max_steps", min_val=1)
        self.model = copy.deepcopy(gnn)
        for p in self.model.parameters():
            p.requires_grad_(True)
        self.model.to(self.device)
        self.lr, self.max_steps = float(lr), max_steps
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.lr, fused=True)
        # the predictions of the last full-graph forward, keyed by the model's tensor versions: an edit starts
        # by asking whether the target is already right, which the forward after the previous edit answered
        self._pred_cache: tuple[tuple[tuple[int, int], ...], Tensor] | None = None

    def _model_version(self) -> tuple[tuple[int, int], ...]:
        """The identity and in-place version counter of each parameter and buffer (any update bumps one)."""
        return tuple((id(t), t._version) for t in (*self.model.parameters(), *self.model.buffers()))

    @torch.no_grad()
    def logits(self) -> Tensor:
        """The edited GNN's outputs on the whole graph (eval mode).

        Returns
        -------
        torch.Tensor
            Nodes x classes.
        """
        out = self.outputs_of(self.model)
        self._pred_cache = (self._model_version(), out.argmax(-1))
        return out

    def _current_pred(self) -> Tensor:
        """The model's predictions: from the last forward when no parameter or buffer changed since."""
        cache = self._pred_cache
        if cache is not None and cache[0] == self._model_version():
            return cache[1]
        return self.logits().argmax(-1)

    def _edit(self, node: int, label: int, index: int) -> tuple[int, int, int]:
        self.model.eval()
        y = torch.tensor([label], device=self.device)
        if int(self._current_pred()[node]) == label:
            return 0, 1, 0
        self._pred_cache = None
        self._start_edit()
        x, ei, at = self._receptive_field(node)
        steps = 0
        while steps < self.max_steps:
            steps += 1
            self.optimizer.zero_grad()
            out = self.model(x, ei)[[at]]
            done = bool(out.argmax(-1).item() == label)
            self._set_gradients(F.cross_entropy(out, y))
            self.optimizer.step()
            if done:
                break
        return steps, 1, 0

    def _start_edit(self) -> None:
        """Hook run once per edit before its first step (GRE takes its anchor gradients here)."""

    def _set_gradients(self, loss: Tensor) -> None:
        """Fill ``p.grad`` for the optimizer step from the target's loss (plain fine-tuning: its gradient)."""
        loss.backward()

    def _receptive_field(self, node: int) -> tuple[Tensor, Tensor, int]:
        """Features, edges and the target's position of the subgraph a step needs (the whole graph if
        ``hops == 0``)."""
        d = self.data
        if self.hops == 0:
            return d.x, d.adj, node
        subset, ei, mapping, mask = k_hop_subgraph(
            node, self.hops + 1, d.edge_index, relabel_nodes=True, num_nodes=d.num_nodes
        )
        w = None if d.edge_weight is None else d.edge_weight[mask]
        return d.x[subset], structure_like(d.adj, ei, subset.numel(), w), int(mapping[0])

    def _release(self) -> None:
        self.model = self.optimizer = self._pred_cache = None  # type: ignore[assignment]

    def _state(self) -> dict[str, Any]:
        return {
            "model": {k: v.detach().clone() for k, v in self.model.state_dict().items()},
            "optimizer": self.optimizer.state_dict(),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self._pred_cache = None
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])


def rewire(grad_target: Tensor, anchors: Tensor, gamma: float = 1.0) -> Tensor:
    """GRE's rewired gradient (Jiang et al. 2024, the official ``GRE_Plus.project_grad``).

    The closest vector to the target gradient ``g`` whose inner product with every anchor gradient ``a_k``
    (rows of ``anchors`` [K, P]) is non-negative, so that a small step does not increase any anchor loss,
    scaled by ``1 / (1 + gamma)``: ``(g + A^T v) / (1 + gamma)`` with ``v = argmin_{v >= 0} ||A^T v + g||^2``
    (the dual of the projection; the official code hands the same quadratic programme to ``qpsolvers``, here
    ``scipy.optimize.nnls`` solves it exactly; ``K = 1`` has the closed form ``v = max(0, -<a, g> / ||a||^2)``).

    Parameters
    ----------
    grad_target : torch.Tensor
        The target's gradient (any shape; flattened to P entries).
    anchors : torch.Tensor
        [K, P] (or [P]): one anchor gradient per row.
    gamma : float, default 1.0
        The scaling ``1 / (1 + gamma)``; >= 0.

    Returns
    -------
    torch.Tensor
        The rewired gradient, of ``grad_target``'s shape and dtype.

    References
    ----------
    Z. Jiang et al. Gradient Rewiring for Editable Graph Neural Network Training. NeurIPS 2024.
    """
    check_tensor(grad_target, "grad_target", dtype="float", finite=False, allow_empty=True)
    check_tensor(anchors, "anchors", dtype="float", finite=False, allow_empty=True)
    g = grad_target.detach().double().reshape(-1).cpu()  # a small problem: solved on the CPU
    if anchors.dim() not in (1, 2) or anchors.shape[-1] != g.numel() or anchors.numel() == 0:
        raise InputError(f"anchors must be [K, {g.numel()}] (one row per anchor gradient), got {tuple(anchors.shape)}")
    check_tensor(grad_target, "grad_target", allow_empty=True)
    check_tensor(anchors, "anchors")
    gamma = check_float(gamma, "gamma", min_val=0.0)
    A = anchors.detach().double().reshape(-1, g.numel()).cpu()
    # the cone {d: A d >= 0} does not change when a row of A is scaled by a positive number, and the projection
    # onto it is positively homogeneous: both are scaled to unit size first, so that no product overflows
    A = A / A.abs().amax(1, keepdim=True).clamp_min(torch.finfo(torch.float64).tiny)
    scale = float(g.abs().max()) if g.numel() else 0.0
    scale = scale if scale > 0 else 1.0
    g = g / scale
    if A.shape[0] == 1:
        aa = float(A[0] @ A[0])
        v = torch.tensor([max(0.0, -float(A[0] @ g) / aa) if aa > 0 else 0.0], dtype=torch.float64)
    else:
        v = torch.from_numpy(nnls(A.T.numpy(), -g.numpy())[0])
    out = (g + A.T @ v) * (scale / (1.0 + gamma))
    out = out.to(device=grad_target.device, dtype=grad_target.dtype).view_as(grad_target)
    if not bool(torch.isfinite(out).all()):
        raise InputError(f"grad_target is too large: the rewired gradient overflows {grad_target.dtype}")
    return out


class GREEditor(FineTuneEditor):
    """GRE and GRE+ (Jiang et al., "Gradient Rewiring for Editable Graph Neural Network Training", NeurIPS 2024;
    github.com/zhimengj0326/Gradient_rewiring_editing): fine-tuning of the whole GNN in which every target
    gradient is rewired (:func:`rewire`) against anchor gradients of the training loss.

    At the start of each edit the anchor gradients are taken once, at the current weights: the cross-entropy
    on the training nodes of the training subgraph (the inductive ``train_data`` of the official code), split
    into ``splits`` disjoint consecutive chunks of the training nodes (``splits = 1``: GRE; ``> 1``: GRE+, the
    official runs use 2, 3, 5). Defaults mirror ``scripts/eval_gre*.sh`` on Cora: ``gamma = 1``, Adam at the
    config's lr 0.01 kept for the whole sequence, at most 10 steps per edit (``MAX_NUM_EDIT_STEPS``), stop
    once the target is right (checked on the prediction made before each step, as the official loop does).

    Deviations: the steps run in eval mode on the target's receptive field (as :class:`FineTuneEditor`; the
    official loop runs the whole graph in train mode, i.e. with dropout). ``official_quirk=True`` reproduces
    the official ``GRE.update_model``, which computes the anchor gradient but then steps on the unprojected
    target gradient (GRE+ does project).

    Parameters
    ----------
    gnn : torch.nn.Module
        A trained node classifier; a copy is edited.
    data : torch_geometric.data.Data
        The graph with its three masks.
    gamma : float, default 1.0
        The rewired gradient's scaling ``1 / (1 + gamma)`` (:func:`rewire`).
    splits : int, default 1
        Chunks of training nodes, one anchor gradient each (1: GRE; more: GRE+).
    lr : float, default 0.01
        Adam learning rate.
    max_steps : int, default 10
        At most this many steps per edit.
    hops : int, optional
        As in :class:`FineTuneEditor`.
    official_quirk : bool, default False
        Step on the unprojected gradient when ``splits == 1``, as the official ``GRE.update_model``.

    References
    ----------
    Z. Jiang et al. Gradient Rewiring for Editable Graph Neural Network Training. NeurIPS 2024.
    """

    name = "gre"
    _required_masks = ("train_mask",)

    def __init__(
        self,
        gnn: nn.Module,
        data: Data,
        *,
        gamma: float = 1.0,
        splits: int = 1,
        lr: float = 0.01,
        max_steps: int = 10,
        hops: int | None = None,
        official_quirk: bool = False,
    ) -> None:
        super().__init__(gnn, data, lr=lr, max_steps=max_steps, hops=hops)
        gamma = check_float(gamma, "gamma", min_val=0.0)
        splits = check_int(splits, "splits", min_val=1)
        official_quirk = check_bool(official_quirk, "official_quirk")
        data = self.data
        train = data.train_mask.nonzero().view(-1)
        if train.numel() < splits:
            raise InputError(f"splits={splits} but the graph has only {train.numel()} training nodes")
        self.gamma, self.splits, self.official_quirk = float(gamma), splits, bool(official_quirk)
        if splits > 1:
            self.name = "gre+"
        self._train_x, self._train_ei = induced(data, train)
        self._train_y = data.y[train]
        self._chunks = [torch.from_numpy(c).to(self.device) for c in np.array_split(np.arange(train.numel()), splits)]
        self._params = [p for p in self.model.parameters() if p.requires_grad]

    def _flat_grad(self, loss: Tensor) -> Tensor:
        grads = torch.autograd.grad(loss, self._params, allow_unused=True)
        return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for p, g in zip(self._params, grads)])

    def anchor_gradients(self) -> Tensor:
        """Gradients of the training loss on each chunk of training nodes, at the current weights.

        Returns
        -------
        torch.Tensor
            [splits, P], P the number of trainable parameters.
        """
        self.model.eval()
        rows = []
        for chunk in self._chunks:
            out = self.model(self._train_x, self._train_ei)
            rows.append(self._flat_grad(F.cross_entropy(out[chunk], self._train_y[chunk])))
        return torch.stack(rows)

    def _start_edit(self) -> None:
        self._anchors = self.anchor_gradients()

    def _set_gradients(self, loss: Tensor) -> None:
        g = self._flat_grad(loss)
        if not self.official_quirk or self.splits > 1:
            g = rewire(g, self._anchors, self.gamma)
        offset = 0
        for p in self._params:
            p.grad = g[offset : offset + p.numel()].view_as(p).clone()
            offset += p.numel()
