"""SEED-GNN: sequential editing of a trained GNN through a frozen-GNN + trainable-MLP model.

Faithful to the official code (github.com/henryzhongsc/gnn_editing at 7e0064e; ``pipelines/seed_gnn``):

1. The GNN ``g`` is never trained (the caller's model is only read: its outputs are cached under
   ``torch.no_grad``; nothing is frozen in place); the model is ``f(v) = g(v) + MLP(x_v)`` with an MLP of
   the GNN's depth, width and dropout (EGNN's design). Only the MLP is ever trained.
2. Warm-up (``finetune_mlp``): 100 iterations, each on 32 training nodes drawn with replacement, minimising
   ``CE(MLP(x) + g, y) + KL(p_g || p_{MLP+g})`` (batchmean), Adam at the *edit* learning rate. As in the
   official code the GNN outputs of the warm-up come from the inductive train-node subgraph, and the model is
   in eval mode (no dropout).
3. Editing uses cached GNN outputs on the whole graph: ``out_v = g_cached(v) + MLP(x_v)``; no message passing.
4. Edit ``i`` (``seed_gnn_edit`` / ``select_mixup_training_nodes`` / ``edit``): the batch is all targets so far
   with their labels plus ``beta = 100`` anchors: ``floor(alpha * beta) = 25`` correctly predicted training
   nodes from the smallest k-hop neighbourhood (k <= 4) of the target holding at least ``beta`` nodes, and
   75 more from all correctly predicted training nodes; "correctly predicted" by the post-warm-up model,
   not the edited one; anchor labels are the ground truth. If the current model already predicts the target
   right the edit is skipped (0 steps). Otherwise up to 500 Adam steps (lr 1e-3) on the mean cross-entropy
   of the batch, stopping as soon as every target so far is predicted right. One Adam optimizer persists
   across all edits. Editing runs in eval mode (the official checks switch it and never switch back).
5. The official RNG is reseeded with the edit index before each edit (``set_seeds_all(i)``); we draw anchors
   from a private generator seeded with ``seed + i`` (``seed = 0`` by default), so results are reproducible
   without touching global state, though not bit-identical to the official run.

Two official-code details we keep, each with a switch:

- ``official_neighbor_quirk``: the official neighbour filter compares *positions within the training set*
  with *global node ids*, so few anchors are really near the target. ``False`` (default) filters by global
  ids as intended; ``True`` reproduces the quirk for parity checks.
- The stopping test reads the predictions computed *before* the optimizer step of the same iteration (the
  model that stops has had one more step than the one checked). This is kept as is.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..extras import require

require("torch_geometric", extra="graphs", what="seed_gnn")  # one line naming the extra, not a raw ImportError

from torch_geometric.data import Data
from torch_geometric.utils import k_hop_subgraph, subgraph

from ..nn.gnn import MLP
from ..validation import check_bool, check_float, check_int, check_probability
from .fast import fused_mlp_step
from .graph_input import (  # noqa: F401 - importable from here as before
    EVAL_MASKS,
    check_graph,
    check_seed,
    chunked_outputs,
    edges_of,
    gnn_outputs,
    induced,
    placement,
    prepare_graph,
    structure_like,
)
from .records import EditRecord, summarize  # noqa: F401 - importable from here as before
from .sequential import SequentialEditor

__all__ = ["GnnMlpEditor", "SeedGNNEditor", "mlp_shape"]


def mlp_shape(
    gnn: nn.Module, hidden: int | None = None, layers: int | None = None, dropout: float | None = None
) -> tuple[int, int, float]:
    """The MLP's width, depth and dropout: those given, else the GNN's own, else 32, 2 and 0.1 (the official
    Cora config).

    The GNN's own are its ``hidden_channels``, ``num_layers`` and ``dropout`` attributes, which
    :mod:`icml24.nn` backbones and PyG's ``torch_geometric.nn.models`` (``GCN``, ``GraphSAGE``, ``GIN``,
    ``GAT``) expose; PyG keeps ``dropout`` as a ``torch.nn.Dropout`` module, whose ``p`` is read.

    Parameters
    ----------
    gnn : torch.nn.Module
    hidden, layers : int, optional
        Positive integers.
    dropout : float, optional
        In ``[0, 1)``.

    Returns
    -------
    tuple of (int, int, float)
    """

    def own(name: str, default):
        v = getattr(gnn, name, None)
        if isinstance(v, nn.Dropout):
            v = v.p
        return default if isinstance(v, (nn.Module, Tensor)) or v is None else v

    h = check_int(hidden if hidden is not None else own("hidden_channels", 32), "mlp_hidden", min_val=1)
    n = check_int(layers if layers is not None else own("num_layers", 2), "mlp_layers", min_val=1)
    p = check_float(
        dropout if dropout is not None else own("dropout", 0.1),
        "mlp_dropout",
        min_val=0.0,
        max_val=1.0,
        include_boundaries="left",
    )
    return h, n, p


class GnnMlpEditor(SequentialEditor):
    """The frozen-GNN + MLP editor with SEED-GNN's batch (``replay=True``, ``beta`` anchors) or EGNN's
    single-target batch (``replay=False``, ``beta=0``). See the module docstring for the procedure.

    Parameters
    ----------
    gnn : torch.nn.Module
        A trained node classifier, ``gnn(x, edge_index)``; only read, never modified.
    data : torch_geometric.data.Data
        The graph with its three masks.
    lr : float
        Adam learning rate of the warm-up and the edits (> 0).
    max_steps : int, default 500
        At most this many steps per edit.
    replay : bool, default True
        Train each edit on all targets so far (SEED-GNN) instead of the current one (EGNN).
    alpha : float, default 0.25
        Fraction of the anchors drawn from the target's neighbourhood, in [0, 1].
    beta : int, default 100
        Anchors per edit (0: none).
    warmup_iters, warmup_batch : int, default 100 and 32
        The MLP warm-up.
    mlp_hidden, mlp_layers, mlp_dropout : optional
        The MLP's shape (:func:`mlp_shape`).
    official_neighbor_quirk : bool, default False
        Reproduce the official neighbour-index bug.
    seed : int, default 0
        Seeds the MLP, the warm-up batches and the anchors.
    fast : bool, default True
        Edit steps with the MLP's backward written out (same gradients as autograd up to rounding).
    inference_batch : int, optional
        Cache the GNN's outputs this many nodes at a time (:func:`~icml24.seed_gnn.graph_input.chunked_outputs`; needs
        ``gnn.num_layers``), for graphs whose full-graph forward does not fit in memory. Default: one
        full-graph forward.
    """

    name = "gnn_mlp"

    def __init__(
        self,
        gnn: nn.Module,
        data: Data,
        *,
        lr: float,
        max_steps: int = 500,
        replay: bool = True,
        alpha: float = 0.25,
        beta: int = 100,
        warmup_iters: int = 100,
        warmup_batch: int = 32,
        mlp_hidden: int | None = None,
        mlp_layers: int | None = None,
        mlp_dropout: float | None = None,
        official_neighbor_quirk: bool = False,
        seed: int = 0,
        fast: bool = True,
        inference_batch: int | None = None,
    ) -> None:
        super().__init__(gnn, data, inference_batch=inference_batch)
        self.fast = check_bool(fast, "fast")
        lr = check_float(lr, "lr", min_val=0.0, include_boundaries="right")
        max_steps = check_int(max_steps, "max_steps", min_val=1)
        beta = check_int(beta, "beta", min_val=0)
        warmup_iters = check_int(warmup_iters, "warmup_iters", min_val=0)
        warmup_batch = check_int(warmup_batch, "warmup_batch", min_val=1)
        seed = check_seed(seed)
        alpha = check_probability(alpha, "alpha")
        self.lr, self.max_steps, self.replay = lr, max_steps, check_bool(replay, "replay")
        self.alpha, self.beta, self.seed = alpha, beta, seed
        self.quirk = check_bool(official_neighbor_quirk, "official_neighbor_quirk")
        # the caller's GNN is only read, under no_grad and with its mode restored: never frozen in place
        self.gnn = gnn
        data = self.data
        h, layers, p = mlp_shape(gnn, mlp_hidden, mlp_layers, mlp_dropout)
        gen = torch.Generator().manual_seed(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
            self.mlp = MLP(data.num_features, h, self.num_classes, layers, p)
        self.mlp.to(device=self.device, dtype=data.x.dtype)
        self.g, self._base_out = self._base_out, None  # the GNN's outputs, cached once on the whole graph
        self._ei_cpu = data.edge_index.cpu()  # the anchors' neighbourhoods are found on the CPU
        # sparse (bag-of-words) features on the CPU: the fused step's first layer uses sparse products
        x = data.x
        self._sparse_x = x.numel() > 0 and x.device.type == "cpu" and float((x != 0).float().mean()) < 0.2
        self._flat: Tensor | None = None  # the fast step's flat parameter buffer, made at the first fast edit
        self.optimizer = self._adam()
        self._warmup(warmup_iters, warmup_batch, gen)
        # anchors come from the post-warm-up model, fixed for the whole sequence
        pred = self.predict().cpu()
        y = data.y.cpu()
        self.train_nodes = data.train_mask.cpu().nonzero().view(-1)
        self.correct_pos = (pred[self.train_nodes] == y[self.train_nodes]).nonzero().view(-1)
        self.warm_acc = self.accuracy_from(pred.to(self.device))
        # the official finetune_mlp uses its own optimizer; editing starts with a fresh one that persists
        self.optimizer = self._adam()

    def _adam(self) -> torch.optim.Adam:
        # fused: the same update as the official (single-tensor) Adam, in one kernel per step
        return torch.optim.Adam(self.mlp.parameters(), lr=self.lr, fused=True)

    def _release(self) -> None:
        self.gnn = self.mlp = self.g = self.optimizer = None  # type: ignore[assignment]

    def _warmup(self, iters: int, batch: int, gen: torch.Generator) -> None:
        d, mask = self.data, self.data.train_mask
        train_x, train_adj = induced(d, mask)
        train_y = d.y[mask]
        if self.inference_batch is None:
            g_train = gnn_outputs(self.gnn, train_x, train_adj)
        else:
            ei, w = subgraph(mask, d.edge_index, d.edge_weight, relabel_nodes=True, num_nodes=d.num_nodes)
            sub = Data(x=train_x, edge_index=ei, num_nodes=train_x.size(0))
            sub.edge_weight, sub.adj = w, train_adj
            g_train = chunked_outputs(self.gnn, sub, self.gnn.num_layers, self.inference_batch)
        log_p_gnn = F.log_softmax(g_train, dim=-1)
        self.mlp.eval()  # as in the official finetune_mlp: the model is in eval mode
        for _ in range(iters):
            idx = torch.randint(0, train_x.size(0), (batch,), generator=gen).to(self.device)
            self.optimizer.zero_grad()
            out = self.mlp(train_x[idx]) + g_train[idx]
            log_q = F.log_softmax(out, dim=-1)
            loss = F.cross_entropy(out, train_y[idx]) + F.kl_div(
                log_q, log_p_gnn[idx], log_target=True, reduction="batchmean"
            )
            loss.backward()
            self.optimizer.step()

    @torch.no_grad()
    def logits(self) -> Tensor:
        self.mlp.eval()
        return self.g + self.mlp(self.data.x)

    def forward_nodes(self, nodes: Tensor) -> Tensor:
        """Cached forward: ``g_cached[nodes] + MLP(x[nodes])`` (no message passing).

        Parameters
        ----------
        nodes : torch.Tensor
            Node ids.

        Returns
        -------
        torch.Tensor
            Logits, one row per node.
        """
        return self.g[nodes] + self.mlp(self.data.x[nodes])

    def anchors(self, node: int, index: int) -> tuple[Tensor, int]:
        """SEED-GNN's anchors for the edit of ``node`` and how many come from its neighbourhood.

        Parameters
        ----------
        node : int
            The target.
        index : int
            The edit's position in the sequence (seeds the draw with ``seed + index``).

        Returns
        -------
        anchors : torch.Tensor
            Global node ids of the anchors.
        near : int
            How many of them lie in the target's neighbourhood.
        """
        if self.beta == 0:
            return torch.zeros(0, dtype=torch.long), 0
        gen = torch.Generator().manual_seed(self.seed + index)
        ei = self._ei_cpu
        hops, hood = 0, torch.zeros(0, dtype=torch.long)
        while hood.numel() < self.beta and hops < 4:
            hops += 1
            hood, _, _, _ = k_hop_subgraph(node, hops, ei, num_nodes=self.data.num_nodes)
        in_hood = torch.zeros(self.data.num_nodes, dtype=torch.bool)
        in_hood[hood] = True
        if self.quirk:  # official: positions within the train set tested against global ids
            keep = self.correct_pos[(self.correct_pos < self.data.num_nodes) & in_hood[self.correct_pos]]
        else:
            keep = self.correct_pos[in_hood[self.train_nodes[self.correct_pos]]]
        n_near = int(self.beta * self.alpha)
        near = keep[torch.randperm(keep.numel(), generator=gen)[:n_near]]
        rand = self.correct_pos[torch.randperm(self.correct_pos.numel(), generator=gen)[n_near : self.beta]]
        pos = torch.cat([near, rand])
        anchors = self.train_nodes[pos]
        true_near = int(in_hood[self.train_nodes[near]].sum())
        return anchors, true_near

    def _edit(self, node: int, label: int, index: int) -> tuple[int, int, int]:
        if self.replay:
            nodes, labels = list(self.targets), list(self.labels)
        else:
            nodes, labels = [node], [label]
        n_targets = len(nodes)
        anchors, near = self.anchors(node, index)
        batch = torch.cat([torch.tensor(nodes), anchors]).to(self.device)
        y = torch.cat([torch.tensor(labels, device=self.device), self.data.y[batch[n_targets:]]])
        self.mlp.eval()  # editing runs without dropout, as in the official code after its first check
        with torch.no_grad():
            if int(self.forward_nodes(batch[n_targets - 1 : n_targets]).argmax(-1)) == label:
                return 0, int(batch.numel()), near
        xb, gb = self.data.x[batch], self.g[batch]  # the batch is fixed within an edit: gather once
        step = self._fused_step(xb, gb, y, n_targets) if self.fast else self._autograd_step(xb, gb, y, n_targets)
        steps = 0
        while steps < self.max_steps:
            steps += 1
            if step():  # all targets right, checked on the logits before the step (as the official code)
                break
        return steps, int(batch.numel()), near

    def _autograd_step(self, xb: Tensor, gb: Tensor, y: Tensor, n_targets: int):
        """One edit step with autograd: mean cross-entropy of ``gb + MLP(xb)``, one Adam step."""

        def step() -> bool:
            self.optimizer.zero_grad()
            out = gb + self.mlp(xb)
            loss = F.cross_entropy(out, y)
            done = bool((out[:n_targets].argmax(-1) == y[:n_targets]).all())
            loss.backward()
            self.optimizer.step()
            return done

        return step

    def _fused_step(self, xb: Tensor, gb: Tensor, y: Tensor, n_targets: int):
        """The same step with the MLP's backward written out and Adam on flat buffers
        (:func:`~icml24.seed_gnn.fast.fused_mlp_step`); the flat parameter buffer is made once per editor."""
        step, self._flat = fused_mlp_step(
            self.mlp,
            self.optimizer,
            xb,
            gb,
            y,
            n_targets,
            self.num_classes,
            sparse_x=self._sparse_x,
            flat=self._flat,
        )
        return step

    def _state(self) -> dict[str, Any]:
        return {
            "mlp": {k: v.detach().clone() for k, v in self.mlp.state_dict().items()},
            "optimizer": self.optimizer.state_dict(),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self.mlp.load_state_dict(state["mlp"])
        self.optimizer.load_state_dict(state["optimizer"])

    def _fingerprint(self) -> Tensor:
        return torch.cat([super()._fingerprint(), self.g.sum(0).double().float().cpu()])


class SeedGNNEditor(GnnMlpEditor):
    """SEED-GNN (Zhong et al., ICML 2024): GNN + MLP editing with replayed targets and anchors.

    Parameters
    ----------
    gnn : a trained node classifier, ``gnn(x, edge_index) -> (nodes x classes)``: our backbones, PyG's own
        ``torch_geometric.nn.models.GCN``/``GraphSAGE``/``GIN`` or any module with that forward. It is only
        read (under ``torch.no_grad``, its mode restored) and never modified: no parameter, ``requires_grad``
        flag or mode of the caller's model changes, during editing or after :meth:`close`. The editor runs
        on the model's device and in its floating dtype.
    data : the graph: ``x``, ``edge_index`` or ``adj_t`` (torch sparse or ``SparseTensor``; the model is called
        with what the graph has), ``y`` and ``train_mask``; ``val_mask`` and ``test_mask`` are optional (needed
        only for the accuracies and the drawdown, NaN without them). The user's ``Data`` is not modified.
    lr : edit (and warm-up) learning rate, Adam; official default 1e-3.
    max_steps : at most this many steps per edit (500).
    alpha, beta : the anchor batch: ``floor(alpha * beta)`` from the target's neighbourhood, ``beta`` in all
        (0.25 and 100).
    warmup_iters, warmup_batch : the MLP warm-up (100 iterations of 32 nodes; the official code uses 512
        for Amazon and Coauthor).
    mlp_hidden, mlp_layers, mlp_dropout : the MLP's shape; by default the GNN's own (``hidden_channels``,
        ``num_layers``, ``dropout`` attributes, as ours and PyG's models have them; :func:`mlp_shape`), else
        32, 2, 0.1. Give them for a model without those attributes.
    official_neighbor_quirk : reproduce the official neighbour-index bug (see the module docstring).
    seed : seeds the MLP initialisation, the warm-up batches and (``seed + i``) the anchors of edit ``i``.
    fast : edit steps with the MLP's backward written out and sparse first-layer products (default); ``False``
        uses autograd. Both give the same gradients up to float rounding.
    inference_batch : cache the GNN's outputs this many nodes at a time, for graphs whose full-graph forward
        does not fit in memory (:func:`~icml24.seed_gnn.graph_input.chunked_outputs`; needs
        ``gnn.num_layers``). Default: one full forward.

    References
    ----------
    S. Zhong et al. GNNs Also Deserve Editing, and They Need It More Than Once. ICML 2024, PMLR 235:61727.
    """

    name = "seed_gnn"

    def __init__(
        self,
        gnn: nn.Module,
        data: Data,
        *,
        lr: float = 1e-3,
        max_steps: int = 500,
        alpha: float = 0.25,
        beta: int = 100,
        warmup_iters: int = 100,
        warmup_batch: int = 32,
        mlp_hidden: int | None = None,
        mlp_layers: int | None = None,
        mlp_dropout: float | None = None,
        official_neighbor_quirk: bool = False,
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
            replay=True,
            alpha=alpha,
            beta=beta,
            warmup_iters=warmup_iters,
            warmup_batch=warmup_batch,
            mlp_hidden=mlp_hidden,
            mlp_layers=mlp_layers,
            mlp_dropout=mlp_dropout,
            official_neighbor_quirk=official_neighbor_quirk,
            seed=seed,
            fast=fast,
        )
