"""The shallow graph transformer of Li, Wang, Ma, Liu, Zhang & Chen (ICML 2024, arXiv 2406.01977), Section 3.

One self-attention layer over each node's Z-hop context with a trainable relative positional encoding ``b``
(one scalar per hop distance, added to the attention logit), followed by a two-layer perceptron whose output
vector ``a`` is fixed (entries +-1/sqrt(m)) and not trained (their Eq. 2):

    F(x_n) = a^T ReLU( W_O sum_{s in T^n} W_V x_s softmax_s( (W_K x_s)^T W_Q x_n + b_{dist(s, n)} ) )

trained with the hinge loss ``max(0, 1 - y_n F(x_n))`` by mini-batch SGD over the labelled nodes (their Eq. 3).
The context ``T^n`` holds the node itself (distance 0) and every node within ``hops`` hops; ``b`` therefore
has ``hops + 1`` entries, ``b[z]`` for distance ``z``. Two switches give the paper's ablations: ``pe="none"``
fixes ``b = 0``, ``attention="uniform"`` replaces the softmax by the mean over the context (the GCN-style
aggregation of Section 4.3).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from ..errors import InputError
from ..validation import check_choice, check_float, check_int, check_seed, check_tensor

__all__ = ["HopContext", "hop_context", "sample_context", "ShallowGT", "fit_hinge", "attention_stats", "History"]


@dataclass(frozen=True, eq=False)
class HopContext:
    """The Z-hop context of every node as flat (target, source, distance) triples, sorted by target.

    Parameters
    ----------
    target, source, dist : torch.Tensor
        ``(P,)`` integers (stored as int64): pair ``p`` says that ``source[p]`` is at shortest-path distance
        ``dist[p]`` (0 for the node itself, at most ``hops``) from ``target[p]``; ``target`` is sorted and both
        index nodes in ``[0, num_nodes)``. Checked on construction.
    num_nodes, hops : int
        >= 1.
    """

    target: torch.Tensor
    source: torch.Tensor
    dist: torch.Tensor
    num_nodes: int
    hops: int

    def __post_init__(self) -> None:
        n = check_int(self.num_nodes, "num_nodes", min_val=1)
        hops = check_int(self.hops, "hops", min_val=1)
        fields = {k: check_tensor(getattr(self, k), k, ndim=1, dtype="integer", allow_empty=True) for k in _PAIRS}
        fields = {k: v.long() for k, v in fields.items()}
        t, s, d = fields.values()
        if not len(t) == len(s) == len(d):
            raise InputError(f"target, source and dist differ in length ({len(t)}, {len(s)}, {len(d)})")
        for k, hi in (("target", n - 1), ("source", n - 1), ("dist", hops)):
            v = fields[k]
            if v.numel() and (int(v.min()) < 0 or int(v.max()) > hi):
                raise InputError(f"{k} holds values outside [0, {hi}]", "build the context with hop_context")
        if bool((t[1:] < t[:-1]).any()):
            raise InputError("target is not sorted", "build the context with hop_context")
        for k, v in {**fields, "num_nodes": n, "hops": hops}.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "_ptr", torch.searchsorted(t, torch.arange(n + 1)))

    def restrict(self, nodes: torch.Tensor) -> "HopContext":
        """Return the pairs whose target is in ``nodes``.

        Parameters
        ----------
        nodes : torch.Tensor
            ``(B,)`` integer node indices in ``[0, num_nodes)``, not empty.

        Returns
        -------
        HopContext
            The sub-context (same node numbering).
        """
        ptr = self._ptr
        nodes = torch.unique(check_nodes(nodes, "nodes", self.num_nodes))
        start, count = ptr[nodes], ptr[nodes + 1] - ptr[nodes]
        offset = torch.arange(int(count.sum())) - torch.repeat_interleave(torch.cumsum(count, 0) - count, count)
        keep = torch.repeat_interleave(start, count) + offset
        return HopContext(self.target[keep], self.source[keep], self.dist[keep], self.num_nodes, self.hops)


_PAIRS = ("target", "source", "dist")


def _check_graph(edge_index, num_nodes, name: str = "edge_index") -> tuple[torch.Tensor, int]:
    num_nodes = check_int(num_nodes, "num_nodes", min_val=1)
    edge_index = check_tensor(edge_index, name, ndim=2, dtype="integer", allow_empty=True)
    if edge_index.shape[0] != 2:
        raise InputError(f"{name} has shape {tuple(edge_index.shape)}", "give a (2, E) tensor of node indices")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        raise InputError(f"{name} holds indices outside [0, {num_nodes})", "check num_nodes or the edges")
    return edge_index.long(), num_nodes


def hop_context(edge_index: torch.Tensor, num_nodes: int, hops: int) -> HopContext:
    """Shortest-path distances up to ``hops`` by sparse powers of the (symmetrised) adjacency.

    Parameters
    ----------
    edge_index : torch.Tensor
        ``(2, E)`` integer edges, read as undirected (PyG's ``to_scipy_sparse_matrix`` plus its transpose).
    num_nodes : int
    hops : int
        Z >= 1, the radius of the context.

    Returns
    -------
    HopContext
        Every (target, source) pair at distance 0..hops.
    """
    from torch_geometric.utils import to_scipy_sparse_matrix

    edge_index, num_nodes = _check_graph(edge_index, num_nodes)
    hops = check_int(hops, "hops", min_val=1)
    adj = to_scipy_sparse_matrix(edge_index, num_nodes=num_nodes).tocsr()
    adj = ((adj + adj.T) > 0).astype(np.int8)
    reached = sp.identity(num_nodes, dtype=np.int8, format="csr")
    frontier = reached
    rows, cols, dists = [np.arange(num_nodes)], [np.arange(num_nodes)], [np.zeros(num_nodes, dtype=np.int64)]
    for z in range(1, hops + 1):
        nxt = ((frontier @ adj) > 0).astype(np.int8)
        new = (nxt - nxt.multiply(reached)).tocoo()
        new.eliminate_zeros()
        rows.append(new.row)
        cols.append(new.col)
        dists.append(np.full(new.nnz, z, dtype=np.int64))
        reached = ((reached + new.tocsr()) > 0).astype(np.int8)
        frontier = new.tocsr()
        if not new.nnz:  # nothing farther: every later hop is empty too
            break
    t, s, d = (np.concatenate(a).astype(np.int64) for a in (rows, cols, dists))
    order = np.lexsort((s, t))
    return HopContext(
        torch.from_numpy(t[order]), torch.from_numpy(s[order]), torch.from_numpy(d[order]), num_nodes, hops
    )


def sample_context(
    context: HopContext, per_hop: int, *, seed: int = 0, hop_weights: torch.Tensor | None = None
) -> HopContext:
    """Sample each node's context: the node itself plus ``per_hop * hops`` others, drawn hop by hop.

    With ``hop_weights=None`` every hop gets ``per_hop`` draws (uniform graph sampling); with weights (e.g.
    ``softmax(b[1:])`` of a trained model, the paper's "PE-based sampling") the ``per_hop * hops`` draws are
    shared among hops in proportion to the weights. Draws within a hop are without replacement.

    Parameters
    ----------
    context : HopContext
    per_hop : int
        >= 1.
    seed : int, default 0
    hop_weights : torch.Tensor, optional
        ``(hops,)`` non-negative, finite, not all zero: weights of distances 1..hops.

    Returns
    -------
    HopContext
        The sampled context.
    """
    if not isinstance(context, HopContext):
        raise InputError(f"context is a {type(context).__name__}", "build it with hop_context")
    per_hop = check_int(per_hop, "per_hop", min_val=1)
    seed = check_seed(seed)
    hops = context.hops
    if hop_weights is None:
        quota = np.full(hops, per_hop)
    else:
        w = check_tensor(hop_weights, "hop_weights", shape=(hops,)).detach().cpu().double().numpy()
        with np.errstate(over="ignore"):
            total = w.sum()
        if (w < 0).any() or not 0 < total < np.inf:
            raise InputError("hop_weights has negative entries or sums to 0 or overflows", "give non-negative weights")
        quota = np.floor(w / w.sum() * per_hop * hops + 1e-9).astype(int)
    rng = np.random.default_rng(seed)
    t, d = context.target.numpy(), context.dist.numpy()
    key = t * (hops + 1) + d
    keep = d == 0
    order = rng.permutation(len(t))
    order = order[np.argsort(key[order], kind="stable")]  # random order within each (target, hop) group
    ks = key[order]
    starts = np.searchsorted(ks, ks, side="left")
    rank = np.arange(len(ks)) - starts
    q = np.concatenate([[0], quota])[d[order]]
    keep[order] |= (rank < q) & (d[order] > 0)
    idx = np.flatnonzero(keep)
    return HopContext(context.target[idx], context.source[idx], context.dist[idx], context.num_nodes, hops)


class ShallowGT(nn.Module):
    """The one-layer graph transformer with trainable relative PE (Eq. 2 of the paper).

    Parameters
    ----------
    in_channels : int
        Feature size d.
    hops : int, default 3
        Z, the context radius; ``b`` has ``hops + 1`` entries (distance 0 is the node itself).
    hidden : int, default 32
        m = m_a, the width of the attention values and of the perceptron.
    pe : {"trainable", "none"}, default "trainable"
        "none" fixes ``b = 0`` (the GT-without-PE ablation).
    attention : {"softmax", "uniform"}, default "softmax"
        "uniform" averages the context (the GCN-style ablation; ``b`` and W_Q, W_K are then unused).
    init_scale : float, default 1.0
        W_Q, W_K, W_V start as ``init_scale * I`` plus Gaussian noise of std ``init_noise / sqrt(d)``
        (small "initial model errors", as the analysis assumes; the first min(d, m) coordinates).
    init_noise : float, default 0.1
    seed : int, default 0
    """

    def __init__(
        self,
        in_channels: int,
        hops: int = 3,
        hidden: int = 32,
        *,
        pe: str = "trainable",
        attention: str = "softmax",
        init_scale: float = 1.0,
        init_noise: float = 0.1,
        seed: int = 0,
    ) -> None:
        d = check_int(in_channels, "in_channels", min_val=1)
        hops = check_int(hops, "hops", min_val=1)
        m = check_int(hidden, "hidden", min_val=1)
        pe = check_choice(pe, "pe", ("trainable", "none"))
        attention = check_choice(attention, "attention", ("softmax", "uniform"))
        init_scale = check_float(init_scale, "init_scale", min_val=0.0)
        init_noise = check_float(init_noise, "init_noise", min_val=0.0)
        g = torch.Generator().manual_seed(check_seed(seed))
        super().__init__()
        self.in_channels, self.hops, self.hidden, self.pe, self.attention = d, hops, m, pe, attention

        def init(rows: int, cols: int, scale: float) -> nn.Parameter:
            w = init_noise / d**0.5 * torch.randn(rows, cols, generator=g)
            k = min(rows, cols)
            w[:k, :k] += scale * torch.eye(k)
            return nn.Parameter(w)

        self.W_Q, self.W_K, self.W_V = init(m, d, init_scale), init(m, d, init_scale), init(m, d, 1.0)
        self.W_O = nn.Parameter(torch.randn(m, m, generator=g) / m**0.5)
        self.b = nn.Parameter(torch.zeros(hops + 1), requires_grad=pe == "trainable")
        signs = torch.ones(m)
        signs[m // 2 :] = -1.0
        self.register_buffer("a", signs / m**0.5)

    def _check_inputs(self, x, context, nodes):
        x = check_tensor(x, "x", ndim=2).to(self.W_V.dtype)
        if x.shape[1] != self.in_channels:
            raise InputError(
                f"x has {x.shape[1]} features, the model {self.in_channels}", "build the model with in_channels=d"
            )
        if not isinstance(context, HopContext):
            raise InputError(f"context is a {type(context).__name__}", "build it with hop_context")
        if context.num_nodes != x.shape[0]:
            raise InputError(f"context is for {context.num_nodes} nodes, x has {x.shape[0]}", "rebuild the context")
        if context.hops > self.hops:
            raise InputError(f"context reaches {context.hops} hops, the model {self.hops}", "match hops")
        return x, None if nodes is None else check_nodes(nodes, "nodes", x.shape[0])

    def attend(self, x: torch.Tensor, context: HopContext) -> torch.Tensor:
        """Attention weight of every context pair (rows sum to 1 over each target's context).

        Parameters
        ----------
        x : torch.Tensor
            ``(N, d)`` features.
        context : HopContext
            Of the same graph (``N`` nodes), at most ``hops`` hops.

        Returns
        -------
        torch.Tensor
            ``(P,)`` weights, aligned with ``context``.
        """
        x, _ = self._check_inputs(x, context, None)
        return self._attend(x, context)

    def _attend(self, x: torch.Tensor, context: HopContext) -> torch.Tensor:
        from torch_geometric.utils import softmax

        if self.attention == "uniform":
            ones = torch.ones(context.target.shape[0], dtype=x.dtype)
            count = torch.zeros(context.num_nodes, dtype=x.dtype).index_add_(0, context.target, ones)
            return ones / count[context.target]
        q = x[context.target] @ self.W_Q.T
        k = x[context.source] @ self.W_K.T
        logits = (k * q).sum(-1) + self.b[context.dist]
        return softmax(logits, context.target, num_nodes=context.num_nodes)

    def forward(self, x: torch.Tensor, context: HopContext, nodes: torch.Tensor | None = None) -> torch.Tensor:
        """Scores F(x_n) of ``nodes`` (default: all); the predicted label is ``sign(F)``.

        Parameters
        ----------
        x : torch.Tensor
            ``(N, d)`` node features (``data.x``).
        context : HopContext
            From :func:`hop_context` (or :func:`sample_context`) of the same graph.
        nodes : torch.Tensor, optional
            ``(B,)`` target nodes.

        Returns
        -------
        torch.Tensor
            ``(B,)`` scores (``(N,)`` when ``nodes`` is None).
        """
        x, nodes = self._check_inputs(x, context, nodes)
        ctx = context if nodes is None else context.restrict(nodes)
        w = self._attend(x, ctx)
        v = x[ctx.source] @ self.W_V.T
        agg = torch.zeros(context.num_nodes, self.hidden, dtype=v.dtype).index_add_(0, ctx.target, w[:, None] * v)
        out = torch.relu(agg @ self.W_O.T) @ self.a
        return out if nodes is None else out[nodes]


@dataclass
class History:
    """What :func:`fit_hinge` recorded: per recorded step, the loss and the instruments of :func:`attention_stats`.

    Parameters
    ----------
    steps : list of int
    loss : list of float
    stats : list of dict
        :func:`attention_stats` on the monitored nodes (empty when not monitored).
    b : list of list of float
        The PE entries ``b[0..hops]``.
    """

    steps: list = field(default_factory=list)
    loss: list = field(default_factory=list)
    stats: list = field(default_factory=list)
    b: list = field(default_factory=list)


def label_signs(y: torch.Tensor, used: torch.Tensor, name: str = "data.y") -> torch.Tensor:
    """+1/-1 per node: of the (at most two) label values on the ``used`` nodes the larger is +1, the smaller -1, so
    0/1 and -1/+1 labels read as usual; a single value reads by sign (> 0 is +1). More than two is an InputError."""
    values = torch.unique(y[used])
    if values.numel() > 2:
        shown = ", ".join(str(v) for v in values.tolist()[:5]) + (", ..." if values.numel() > 5 else "")
        raise InputError(
            f"{name} holds {values.numel()} distinct labels ({shown}) on the nodes used; the hinge classifier is "
            "binary",
            "give two classes (e.g. 0/1 or -1/+1), or train one model per class",
        )
    threshold = values[0] if values.numel() == 2 else 0
    return torch.where(y > threshold, 1.0, -1.0)


def fit_hinge(
    model: ShallowGT,
    data,
    train_idx: torch.Tensor,
    *,
    context: HopContext | None = None,
    steps: int = 300,
    lr: float = 0.1,
    batch_size: int = 16,
    seed: int = 0,
    record_every: int = 0,
    monitor: torch.Tensor | None = None,
) -> History:
    """Train ``model`` in place by mini-batch SGD on the hinge loss over the labelled nodes (Eq. 3).

    Parameters
    ----------
    model : ShallowGT
    data : torch_geometric.data.Data
        With ``x``, ``edge_index`` and integer ``y``. The classifier is binary: the labels of the nodes used
        (``train_idx`` and ``monitor``) must take exactly two values; the larger is the +1 class, the smaller the
        -1 class (so 0/1 and -1/+1 labels read as usual). More values are refused: train one model per class.
    train_idx : torch.Tensor
        ``(L,)`` labelled nodes; both classes must be present.
    context : HopContext, optional
        Default: ``hop_context(data.edge_index, data.num_nodes, model.hops)``.
    steps : int, default 300
        At most that many SGD steps; training stops early, checked every 25 steps, once the hinge loss is 0 on
        every labelled node (from then on every mini-batch gradient is 0 and SGD would not move).
    lr : float, default 0.1
    batch_size : int, default 16
    seed : int, default 0
        Order of the mini-batches (at most 2**64 - 1).
    record_every : int, default 0
        Record the loss, ``b`` and the instruments every that many steps (0: only at the start and end).
    monitor : torch.Tensor, optional
        Nodes on which :func:`attention_stats` is recorded (its ground-truth entries only where ``data`` carries
        the generator's metadata).

    Returns
    -------
    History
    """
    if not isinstance(model, ShallowGT):
        raise InputError(f"model is a {type(model).__name__}", "give a ShallowGT")
    x, y = check_data(data, model)
    steps = check_int(steps, "steps", min_val=1)
    lr = check_float(lr, "lr", min_val=0.0, include_boundaries="neither")
    batch_size = check_int(batch_size, "batch_size", min_val=1)
    seed = check_seed(seed)
    record_every = check_int(record_every, "record_every", min_val=0)
    train_idx = check_nodes(train_idx, "train_idx", x.shape[0])
    if torch.unique(y[train_idx]).numel() < 2:
        raise InputError("train_idx holds labelled nodes of one class only", "label nodes of both classes")
    used = train_idx
    if monitor is not None:
        monitor = check_nodes(monitor, "monitor", x.shape[0])
        used = torch.cat([train_idx, monitor])
    sign = label_signs(y, used)
    disc, core = _ground_truth(data, x.shape[0])
    truth = (disc, core, None if disc is None or core is None else sign)
    if context is None:
        context = hop_context(data.edge_index, x.shape[0], model.hops)
    model._check_inputs(x, context, train_idx)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=lr)
    g = torch.Generator().manual_seed(seed)
    hist = History()
    was_training = model.training
    model.train()

    def record(step: int, loss: float) -> None:
        hist.steps.append(step)
        hist.loss.append(loss)
        hist.b.append(model.b.detach().tolist())
        if monitor is not None:
            hist.stats.append(_stats(model, x, context, monitor, *truth))

    try:
        with torch.no_grad():
            loss0 = torch.relu(1 - sign[train_idx] * model(x, context, train_idx)).mean().item()
        record(0, loss0)
        perm, pos = torch.randperm(len(train_idx), generator=g), 0
        for step in range(1, steps + 1):
            if pos + batch_size > len(perm):
                perm, pos = torch.randperm(len(train_idx), generator=g), 0
            batch = train_idx[perm[pos : pos + batch_size]]
            pos += batch_size
            loss = torch.relu(1 - sign[batch] * model(x, context, batch)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            done = False
            if step % 25 == 0:
                with torch.no_grad():
                    done = bool((sign[train_idx] * model(x, context, train_idx) >= 1).all())
            if (record_every and step % record_every == 0) or step == steps or done:
                record(step, loss.item())
            if done:
                break
    finally:
        model.train(was_training)
    return hist


def check_data(data, model: ShallowGT | None = None, *, labels: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    from torch_geometric.data import Data

    if not isinstance(data, Data):
        raise InputError(f"data is a {type(data).__name__}", "give a torch_geometric.data.Data")
    x = check_tensor(getattr(data, "x", None), "data.x", ndim=2)
    y = check_tensor(getattr(data, "y", None), "data.y", shape=(x.shape[0],), dtype="integer") if labels else None
    if model is not None and x.shape[1] != model.in_channels:
        raise InputError(f"data.x has {x.shape[1]} features, the model {model.in_channels}", "match in_channels")
    _check_graph(getattr(data, "edge_index", None), x.shape[0], "data.edge_index")
    return x, y


def check_nodes(nodes, name: str, n: int) -> torch.Tensor:
    nodes = check_tensor(nodes, name, ndim=1, dtype="integer").long()
    if int(nodes.min()) < 0 or int(nodes.max()) >= n:
        raise InputError(f"{name} holds indices outside the graph", f"use indices in [0, {n})")
    return nodes


def _ground_truth(data, n: int) -> tuple[torch.Tensor | None, int | None]:
    """The generator's ``disc`` and ``core_dist``, checked, where ``data`` has them (None where not)."""
    disc, core = getattr(data, "disc", None), getattr(data, "core_dist", None)
    if disc is not None:
        disc = check_tensor(disc, "data.disc", shape=(n,), dtype="integer").long()
        if bool((disc.abs() > 1).any()):
            raise InputError("data.disc holds values other than -1, 0, +1", "use data made by pattern_graph")
    if core is not None:
        core = check_int(core, "data.core_dist", min_val=1)
    return disc, core


@torch.no_grad()
def _stats(model, x, context, nodes, disc, core_dist, sign) -> dict[str, float]:
    ctx = context.restrict(nodes)
    w = model._attend(x, ctx).double()

    def per_node(v: torch.Tensor) -> torch.Tensor:
        return torch.zeros(x.shape[0], dtype=torch.float64).index_add_(0, ctx.target, v)[nodes]

    out = {}
    if sign is not None:
        core = (ctx.dist == core_dist) & (disc[ctx.source] == sign.long()[ctx.target])
        out["core_mass"] = per_node(w * core).mean().item()
    if disc is not None:
        out["disc_mass"] = per_node(w * (disc[ctx.source] != 0)).mean().item()
    out["entropy"] = per_node(-w * torch.log(w.clamp_min(1e-300))).mean().item()
    for z in range(context.hops + 1):
        out[f"hop_mass_{z}"] = per_node(w * (ctx.dist == z)).mean().item()
    return out


def attention_stats(
    model: ShallowGT, data, nodes: torch.Tensor, *, context: HopContext | None = None
) -> dict[str, float]:
    """The paper's attention instruments on ``nodes``, averaged over them, on any graph.

    Always: ``entropy``, the attention entropy (nats), and ``hop_mass_z``, the attention at distance z for
    z = 0..context.hops. Only where ``data`` carries the generator's ground truth (as :func:`pattern_graph` makes
    it): ``disc_mass``, the attention on any discriminative node (needs ``data.disc``), and ``core_mass``, the
    attention on the label-relevant nodes of the core neighbourhood (distance ``data.core_dist``, discriminative
    pattern of the node's own class; Theorem 4.3's concentration; needs ``disc`` and ``core_dist``, and then an
    integer ``y``, read as in :func:`fit_hinge`: of the two label values on ``nodes`` the larger is the +1 class, a
    single value reads by sign).

    Parameters
    ----------
    model : ShallowGT
    data : torch_geometric.data.Data
        ``x`` and ``edge_index``; optionally ``disc`` ((N,) in {-1, 0, +1}), ``core_dist`` (int >= 1) and ``y``.
    nodes : torch.Tensor
        ``(B,)`` nodes.
    context : HopContext, optional
        Default: ``hop_context(data.edge_index, data.num_nodes, model.hops)``.

    Returns
    -------
    dict of str to float
    """
    if not isinstance(model, ShallowGT):
        raise InputError(f"model is a {type(model).__name__}", "give a ShallowGT")
    x, _ = check_data(data, model, labels=False)
    nodes = check_nodes(nodes, "nodes", x.shape[0])
    disc, core = _ground_truth(data, x.shape[0])
    sign = None
    if disc is not None and core is not None:
        y = check_tensor(getattr(data, "y", None), "data.y", shape=(x.shape[0],), dtype="integer")
        sign = label_signs(y, nodes)
    if context is None:
        context = hop_context(data.edge_index, x.shape[0], model.hops)
    model._check_inputs(x, context, nodes)
    return _stats(model, x, context, nodes, disc, core, sign)
