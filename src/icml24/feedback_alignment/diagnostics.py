"""Why feedback alignment works or fails, measured: the conserved quantity, alignment angles, dominance.

**The conservation law** (Robertson & Koyejo, ICML 2024, Theorem 5.2 / Fig. 1; v1: "Layer-wise feedback
alignment is conserved"). Under gradient flow ``dW/dt = -sum_n e h^T`` with FA's errors
``e_l = (B_{l+1} e_{l+1}) o sigma'(z_l)`` and a positively homogeneous ``sigma`` (``sigma'(z) z = sigma(z)``),
for every hidden neuron ``k`` of layer ``l``

    d/dt [1/2 ||W_l[k,:]||^2 + 1/2 b_l[k]^2] = -sum_n (B_{l+1} e_{l+1})_k h_{l,k} = d/dt <B_{l+1}[k,:], W_{l+1}[:,k]>

(the bias counts as a weight on a constant input), so ``C_{l,k} = 1/2 ||W_l[k,:]||^2 + 1/2 b_l[k]^2 -
<B_{l+1}[k,:], W_{l+1}[:,k]>`` is constant, and layer-wise ``C_l = 1/2 ||W_l||^2 + 1/2 ||b_l||^2 -
tr(B_{l+1} W_{l+1})``. Growth of a neuron's incoming weights forces its outgoing weights toward its
feedback: the *implicit alignment* the paper names. With backprop (``B = W^T``) the same algebra gives the
balancedness law ``1/2 ||W_l[k,:]||^2 + 1/2 b_l[k]^2 - 1/2 ||W_{l+1}[:,k]||^2`` (Du, Hu & Lee 2018); every
rule of :mod:`.rules` has its potential ``Phi``, and :func:`conserved_quantity` uses it. Which rules obey
the law (FA, backprop, uSF, frSF, Kolen-Pollack without weight decay), which only in expectation (brSF) and
which not (the weight mirror, DFA below its last layer), and why, is tabulated in :mod:`.rules`
(``Rule.law``).

*Convolutions.* A ``Conv2d`` channel ``k`` plays the role of a neuron: its incoming weights are the kernel
``W_l[k]`` (all input channels and taps) and its bias, and the potential sums over the kernel taps (and, when
the next layer is a Linear layer after ``Flatten``, over the positions of channel ``k``). The derivation
goes through because convolution is linear in the kernel and pooling acts per channel and is positively
homogeneous.

*Discrete steps* [derived]: one step of gradient descent with rate ``eta`` changes ``C_{l,k}`` by exactly
``1/2 ||dW_l[k,:]||^2 + 1/2 db_l[k]^2 - (Phi(W + dW) - Phi(W) - <grad Phi, dW>)``: second order in ``eta``.
For FA the bracket vanishes (``Phi`` is linear), so ``C`` only *grows*, by ``1/2 eta^2 ||g||^2`` per step, and
over a fixed training time ``eta * steps`` its drift shrinks linearly with ``eta``.

**Alignment dominance** (the paper's convergence condition): with the rule's update direction ``u`` and
the gradient ``g`` on the same batch, the loss decreases to first order by ``eta <g, u>``; the *dominance
ratio* ``rho = <g, u> / ||g||^2`` is positive when the aligned part of the dynamics dominates the misaligned
part (``rho = 1`` for backprop). We expose the diagnostics, not the theorem's constants (which are in the
PDF, not available here [inferred]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from ..errors import InputError
from ..validation import check_bool, check_int
from .network import FeedbackNetwork
from .rules import FA, transpose
from .training import check_batch, loss_fn

Tensor = torch.Tensor


def _check_net(net: object) -> FeedbackNetwork:
    if not isinstance(net, FeedbackNetwork):
        raise InputError(
            f"net must be a FeedbackNetwork, got {type(net).__name__}",
            "wrap your nn.Sequential: FeedbackNetwork(model, rule='fa')",
        )
    return net


@torch.no_grad()
def potential(net: FeedbackNetwork, j: int) -> Tensor:
    """``Phi_j`` per input neuron of Linear layer ``j`` (shape ``(in_j,)``): the feedback-side term of the law.

    FA: ``<B_j[k,:], W_j[:,k]>``; backprop ``1/2 ||W_j[:,k]||^2``; uSF/frSF the sign-weighted L1 norms. NaN
    where the rule has no layer-local law (DFA below its last layer).

    Parameters
    ----------
    net : FeedbackNetwork
    j : int
        Index of the Linear layer (negative indices count from the end).

    Returns
    -------
    torch.Tensor of shape (in_j,)
    """
    net = _check_net(net)
    n = len(net.layers)
    j = net._layer_index(j)
    lay = net.layers[j]
    w = lay.weight.detach()
    m = net._stored(j)
    m = m.detach() if m is not None else None
    rule = net.rule
    if rule.potential is not None:
        return rule.potential(w, m, net.scales[j])
    if rule.direct and j == n - 1 and m is not None and m.shape == transpose(w).shape:
        return FA.potential(w, m, net.scales[j])  # type: ignore[misc]
    return torch.full((w.shape[1],), math.nan, dtype=w.dtype, device=w.device)


def _per_unit(phi: Tensor, units: int) -> Tensor:
    """Sum the potential of a layer's inputs over the inputs that belong to one unit of the layer below."""
    if phi.numel() == units:
        return phi
    return phi.reshape(units, -1).sum(dim=1)  # Flatten after a convolution: channel-major inputs


@torch.no_grad()
def incoming_norms(net: FeedbackNetwork) -> list[Tensor]:
    """``1/2 ||W_l[k,:]||^2 + 1/2 b_l[k]^2`` for every neuron (or channel) ``k`` of every hidden layer.

    Parameters
    ----------
    net : FeedbackNetwork

    Returns
    -------
    list of torch.Tensor
        One ``(n_l,)`` tensor per hidden layer.
    """
    net = _check_net(net)
    out = []
    for lin in net.layers[:-1]:
        w = lin.weight.detach()
        v = 0.5 * (w * w).reshape(w.shape[0], -1).sum(dim=1)
        if lin.bias is not None:
            v = v + 0.5 * lin.bias.detach() ** 2
        out.append(v)
    return out


@torch.no_grad()
def conserved_quantity(net: FeedbackNetwork) -> list[Tensor]:
    """The per-neuron conserved quantity ``C_{l,k}`` of every hidden layer (list of ``(n_l,)`` tensors).

    ``C_{l,k} = 1/2 ||W_l[k,:]||^2 + 1/2 b_l[k]^2 - Phi_{l+1,k}``: for FA ``Phi = <B_{l+1}[k,:],
    W_{l+1}[:,k]>`` (the paper's law), for backprop ``1/2 ||W_{l+1}[:,k]||^2`` (balancedness). Constant under
    gradient flow when the activations are positively homogeneous; NaN for DFA below its last hidden layer.

    Parameters
    ----------
    net : FeedbackNetwork

    Returns
    -------
    list of torch.Tensor
        One ``(n_l,)`` tensor per hidden layer.

    References
    ----------
    Robertson, Koyejo, "Implicit regularization in feedback alignment learning mechanisms for neural networks",
    ICML 2024, the conservation law (Fig. 1); Du, Hu, Lee, NeurIPS 2018, for backprop's balancedness.
    """
    net = _check_net(net)
    return [inc - _per_unit(potential(net, l + 1), inc.numel()) for l, inc in enumerate(incoming_norms(net))]


def layer_conserved_quantity(net: FeedbackNetwork) -> Tensor:
    """``C_l = sum_k C_{l,k} = 1/2 ||W_l||^2 + 1/2 ||b_l||^2 - tr(B_{l+1} W_{l+1})`` per hidden layer.

    Parameters
    ----------
    net : FeedbackNetwork

    Returns
    -------
    torch.Tensor of shape (L - 1,)
    """
    cs = conserved_quantity(net)
    if not cs:
        return torch.zeros(0)
    return torch.stack([c.sum() for c in cs])


@torch.no_grad()
def alignment_angles(net: FeedbackNetwork) -> list[float]:
    """``cos angle(vec B_j, vec W_j^T)`` for the layers ``j = 2..L`` whose feedback reaches a hidden layer.

    Entry ``l`` (0-based) belongs to hidden layer ``l``: the feedback it receives. About 0 for independent
    random matrices (std ``1/sqrt(numel)``), 1 for backprop. NaN for DFA below its last layer (its ``B`` does
    not have the shape of ``W^T``).

    Parameters
    ----------
    net : FeedbackNetwork

    Returns
    -------
    list of float
        Cosines (not angles), one per hidden layer.
    """
    net = _check_net(net)
    out = []
    for j in range(1, len(net.layers)):
        b = net.feedback_matrix(j)
        wt = transpose(net.layers[j].weight.detach())
        if b.shape != wt.shape:
            out.append(math.nan)
            continue
        denom = float(b.norm() * wt.norm())
        out.append(float((b * wt).sum()) / denom if denom > 0 else math.nan)
    return out


@dataclass(frozen=True)
class UpdateAlignment:
    """The rule's update ``u`` against the gradient ``g`` on one batch (the result of :func:`update_alignment`).

    Attributes
    ----------
    cosine : list of float
        ``cos angle(u_j, g_j)`` for Linear layer ``j`` (weight and bias together; the output layer is always 1).
    inner : list of float
        ``<g_j, u_j>``.
    grad_sq : list of float
        ``||g_j||^2``.
    rho : float
        ``<g, u> / ||g||^2`` over all layers: the dominance ratio (``> 0``: the update descends; 1 for backprop).
    loss : float
        The loss on the batch.
    """

    cosine: list[float]
    inner: list[float]
    grad_sq: list[float]
    rho: float
    loss: float


def update_alignment(net: FeedbackNetwork, x: Tensor, y: Tensor, loss: str = "cross_entropy") -> UpdateAlignment:
    """Compare the rule's update direction with the true gradient on the batch ``(x, y)``.

    Runs two backward passes on the same weights: ordinary autograd through ``net.model`` (``g``) and the
    rule's (``u``). Leaves the parameters' ``.grad`` untouched.

    Parameters
    ----------
    net : FeedbackNetwork
    x : torch.Tensor of shape (n, ...)
    y : torch.Tensor of shape (n,)
        Integer class labels.
    loss : {"cross_entropy", "mse"}, default "cross_entropy"

    Returns
    -------
    UpdateAlignment
    """
    net = _check_net(net)
    x, y = check_batch(net, x, y)
    lf = loss_fn(loss)
    groups = [[p for p in (lin.weight, lin.bias) if p is not None and p.requires_grad] for lin in net.layers]
    params = [p for g in groups for p in g]
    if not params:
        raise InputError("net has no trainable parameters")
    value = lf(net.model(x), y)
    g = torch.autograd.grad(value, params)
    u = torch.autograd.grad(lf(net(x), y), params)
    cos, inner, gsq = [], [], []
    i = 0
    for grp in groups:
        gg = torch.cat([t.reshape(-1) for t in g[i : i + len(grp)]]) if grp else torch.zeros(1)
        uu = torch.cat([t.reshape(-1) for t in u[i : i + len(grp)]]) if grp else torch.zeros(1)
        i += len(grp)
        ip, gn, un = float(gg @ uu), float(gg @ gg), float(uu @ uu)
        inner.append(ip)
        gsq.append(gn)
        cos.append(ip / math.sqrt(gn * un) if gn > 0 and un > 0 else math.nan)
    total = sum(gsq)
    rho = sum(inner) / total if total > 0 else math.nan
    return UpdateAlignment(cos, inner, gsq, rho, float(value.detach()))


@dataclass
class AlignmentRecorder:
    """A training callback that records the diagnostics: ``recorder(step)`` every ``every`` steps.

    Each record holds ``step``, the layer-wise ``conserved`` quantity, ``incoming`` (``1/2 ||W_l||^2 +
    1/2 ||b_l||^2``) and ``potential`` (``tr(B_{l+1} W_{l+1})`` for FA), the ``alignment`` angles, and, with
    ``update=True``, the per-layer update-gradient ``update_cosine``, the dominance ratio ``rho`` and the
    ``loss`` on ``(x, y)``. Pass it as ``train(..., callback=recorder)`` or call it from your own loop.

    Parameters
    ----------
    net : FeedbackNetwork
    x, y : torch.Tensor, optional
        The batch the update is compared with the gradient on (required with ``update=True``).
    loss : {"cross_entropy", "mse"}, default "cross_entropy"
    every : int, default 1
        Record at the steps divisible by it.
    update : bool, default True
        Also record the update alignment (two extra backward passes per record).
    history : list of dict, optional
        The records (starts empty).
    """

    net: FeedbackNetwork
    x: Optional[Tensor] = None
    y: Optional[Tensor] = None
    loss: str = "cross_entropy"
    every: int = 1
    update: bool = True
    history: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        _check_net(self.net)
        self.every = check_int(self.every, "every", min_val=1)
        self.update = check_bool(self.update, "update")
        if self.update and (self.x is None or self.y is None):
            raise InputError("update=True needs the batch x and y to compare the update with the gradient")
        if self.x is not None or self.y is not None:
            check_batch(self.net, self.x, self.y)  # refused now, not at the first record
        loss_fn(self.loss)  # validates the name
        if not isinstance(self.history, list):
            raise InputError(f"history must be a list of records, got {type(self.history).__name__}")

    def _keys(self) -> tuple[str, ...]:
        base = ("step", "incoming", "potential", "conserved", "alignment")
        return base + (("update_cosine", "rho", "loss") if self.update else ())

    def __call__(self, step: int) -> None:
        step = check_int(step, "step", min_val=0)
        if step % self.every:
            return
        inc = [float(v.sum()) for v in incoming_norms(self.net)]
        pot = [float(potential(self.net, l + 1).sum()) for l in range(len(inc))]
        rec: dict[str, Any] = {
            "step": int(step),
            "incoming": inc,
            "potential": pot,
            "conserved": [a - b for a, b in zip(inc, pot)],
            "alignment": alignment_angles(self.net),
        }
        if self.update:
            ua = update_alignment(self.net, self.x, self.y, self.loss)  # type: ignore[arg-type]
            rec.update(update_cosine=ua.cosine, rho=ua.rho, loss=ua.loss)
        self.history.append(rec)

    def series(self, key: str) -> list[Any]:
        """``[record[key] for record in history]``.

        Parameters
        ----------
        key : str
            A recorded name (``"conserved"``, ``"alignment"``, ``"rho"``, ...).

        Returns
        -------
        list
        """
        keys = tuple(self.history[0]) if self.history else self._keys()
        if not isinstance(key, str) or key not in keys:
            raise InputError(f"no recorded series {key!r} (key)", f"recorded: {', '.join(keys)}")
        return [r[key] for r in self.history]


__all__ = [
    "potential",
    "incoming_norms",
    "conserved_quantity",
    "layer_conserved_quantity",
    "alignment_angles",
    "UpdateAlignment",
    "update_alignment",
    "AlignmentRecorder",
]
