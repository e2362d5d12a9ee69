"""The peers Deep-Align is compared with (Navon et al., ICML 2024, Sec. 6): Weight Matching and Activation
Matching (Ainsworth et al., "Git Re-Basin", ICLR 2023; github.com/samuela/git-re-basin, and the PyTorch port
in deep-align's ``deepalign/matching.py``) and Sinkhorn re-basin (Pena et al., CVPR 2023;
github.com/fagp/sinkhorn-rebasin). All align network ``b`` to network ``a`` and return hard permutations in the
convention of :mod:`icml24.deep_align.weights` (neuron ``i`` of the aligned ``b`` is ``b``'s neuron ``p[i]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from scipy.optimize import linear_sum_assignment
from torch import nn

from ..errors import InputError
from ..validation import check_float, check_int, check_seed, check_tensor
from .conversion import ELEMENTWISE, from_sequential, module_dtype
from .evaluation import lerp, loss_and_accuracy
from .permutations import check_perms, permute_soft
from .sinkhorn import hungarian, sinkhorn
from .weights import WeightBatch, check_same_architecture, check_weight_batch
from .world import LR_MAX, TAU_MIN


def _single(net, name: str) -> WeightBatch:
    """One network given as an ``nn.Module`` MLP or a :class:`WeightBatch` of one network, as a WeightBatch."""
    if isinstance(net, nn.Module):
        return from_sequential(net, name)
    if not isinstance(net, WeightBatch):
        raise InputError(
            f"{name} must be an nn.Module MLP or CNN, or a WeightBatch of one network, got {type(net).__name__}",
            "e.g. nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))",
        )
    if net.size != 1:
        raise InputError(f"{name} must hold one network, got {net.size}")
    check_weight_batch(net, name)
    return net


def _relu_only(net, name: str) -> None:
    if isinstance(net, nn.Module):
        for n, m in net.named_modules():
            if isinstance(m, ELEMENTWISE) and not isinstance(m, (nn.ReLU, nn.Identity, nn.Dropout)):
                raise InputError(
                    f"{name}.{n} is {type(m).__name__}: this method evaluates the network with ReLU",
                    "use weight_matching, which does not depend on the activation",
                )


def _pair(a, b) -> tuple[WeightBatch, WeightBatch]:
    """Two networks of one architecture and dtype, as WeightBatches (everything validated, nothing changed)."""
    wa, wb = _single(a, "a"), _single(b, "b")
    check_same_architecture(wa, wb)
    da = module_dtype(a) if isinstance(a, nn.Module) else wa.weights[0].dtype
    db = module_dtype(b) if isinstance(b, nn.Module) else wb.weights[0].dtype
    if da != db:
        raise InputError(f"b has dtype {db} but a has {da}", f"convert both to one dtype, e.g. b.to({da})")
    return wa, wb


def _shape(x) -> str:
    return f"shape {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__


def _numpy_layers(wb: WeightBatch) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """float64 layers ``(d_in, d_out)``, or ``(d_in, d_out, F)`` for a CNN (kernel entries last)."""
    return ([w[0].detach().double().numpy() for w in wb.weights], [b[0].detach().double().numpy() for b in wb.biases])


def _mlp_only(a: WeightBatch, what: str) -> None:
    if a.convolutional:
        raise InputError(
            f"a is a convolutional network: {what} evaluates MLPs here",
            "use weight_matching, which aligns the channels of CNNs",
        )


def _cost_in(wa: np.ndarray, wb: np.ndarray) -> np.ndarray:
    """``sum_{i,f} wa[i, o, f] wb[i, p, f]``: how alike output neuron (channel) ``o`` of a and ``p`` of b are."""
    return wa.T @ wb if wa.ndim == 2 else np.einsum("iof,ipf->op", wa, wb)


def _cost_out(wa: np.ndarray, wb: np.ndarray) -> np.ndarray:
    """``sum_{j,f} wa[o, j, f] wb[p, j, f]``: how alike input neuron (channel) ``o`` of a and ``p`` of b are."""
    return wa @ wb.T if wa.ndim == 2 else np.einsum("ojf,pjf->op", wa, wb)


def wm_objective(a: WeightBatch, b: WeightBatch, perms: Sequence[torch.Tensor] | None = None) -> float:
    """The weight-matching objective ``sum_k <W_k^a, P_k W_k^b P_{k+1}^T> + <b_k^a, P_{k+1} b_k^b>`` (float64).

    Parameters
    ----------
    a, b : nn.Module or WeightBatch
        One network each (an MLP, see :func:`~icml24.deep_align.conversion.mlp_linears`, or a CNN, see
        :func:`~icml24.deep_align.conversion.network_layers`), of one architecture and dtype.
    perms : list of torch.Tensor, optional
        Alignment of ``b`` to ``a``, one permutation per hidden layer (identity when None).

    Returns
    -------
    float

    References
    ----------
    Ainsworth, Hayase, Srinivasa, "Git Re-Basin", ICLR 2023, Eq. 3.
    """
    a, b = _pair(a, b)
    if perms is None:
        ps = [np.arange(d) for d in a.hidden]
    else:
        ps = [p[0].numpy() for p in check_perms(perms, a.hidden, 1)]
    wa, ba = _numpy_layers(a)
    wb_, bb = _numpy_layers(b)
    return _objective(wa, ba, wb_, bb, ps)


def _objective(wa, ba, wb, bb, ps) -> float:
    M = len(wa)
    total = 0.0
    for k in range(M):
        w = wb[k]
        if k > 0:
            w = w[ps[k - 1], :]
        b = bb[k]
        if k < M - 1:
            w, b = w[:, ps[k]], b[ps[k]]
        total += float((wa[k] * w).sum() + (ba[k] * b).sum())
    return total


@dataclass
class MatchResult:
    """What a matching method returns.

    Parameters
    ----------
    perms : list of torch.Tensor
        One ``(d_l,)`` index tensor per hidden layer (alignment of ``b`` to ``a``).
    sweeps : int
        Sweeps of coordinate descent (``0`` for one-shot methods).
    objective : float
        The weight-matching objective the permutations reach.
    """

    perms: list[torch.Tensor]
    sweeps: int
    objective: float


def weight_matching(
    a: WeightBatch,
    b: WeightBatch,
    *,
    max_iter: int = 100,
    init: Sequence[torch.Tensor] | None = None,
    seed: int = 0,
    tol: float = 1e-12,
) -> MatchResult:
    """Weight Matching: coordinate descent over the hidden layers' permutations.

    The hidden layers are visited in a random order each sweep; each step solves the linear assignment
    ``max_P <P, sum_axes W^a (W^b)^T>`` with scipy's ``linear_sum_assignment``, holding the other permutations
    fixed; it stops after a sweep without improvement or after ``max_iter`` sweeps. For CNNs the hidden neurons
    are channels and the sum runs over the kernel entries too (the official ``cnn_permutation_spec``).

    Parameters
    ----------
    a, b : nn.Module or WeightBatch
        One network each (an MLP, see :func:`~icml24.deep_align.conversion.mlp_linears`, or a CNN, see
        :func:`~icml24.deep_align.conversion.network_layers`), of one architecture and dtype; ``b`` is aligned
        to ``a``.
    max_iter : int, default 100
        Most sweeps (official 100).
    init : list of torch.Tensor, optional
        Starting permutations (identity otherwise); Deep-Align's output here is "Deep-Align + WM" (paper Sec. 6).
    seed : int, default 0
        Seed of the order in which layers are visited.
    tol : float, default 1e-12
        The least improvement that counts (official 1e-12).

    Returns
    -------
    MatchResult
        ``sweeps`` counts every sweep including the last one that found no improvement (the official port
        returns the 0-based index of that sweep, i.e. ``sweeps - 1``).

    References
    ----------
    Ainsworth, Hayase, Srinivasa, "Git Re-Basin", ICLR 2023, Alg. 2.
    """
    a, b = _pair(a, b)
    max_iter = check_int(max_iter, "max_iter", min_val=1)
    seed = check_seed(seed)
    tol = check_float(tol, "tol", min_val=0.0)
    hidden = list(a.hidden)
    if init is None:
        ps = [np.arange(d) for d in hidden]
    else:
        ps = [p[0].numpy().copy() for p in check_perms(init, hidden, 1, "init")]
    wa, ba = _numpy_layers(a)
    wb, bb = _numpy_layers(b)
    M = len(wa)
    rng = np.random.default_rng(seed)
    sweeps = 0
    for _ in range(max_iter):
        sweeps += 1
        progress = False
        for l in rng.permutation(len(hidden)):
            # neurons of hidden layer l+1 are the outputs of W_l (columns) and the inputs of W_{l+1} (rows)
            w_in = wb[l] if l == 0 else wb[l][ps[l - 1], :]
            cost = _cost_in(wa[l], w_in) + np.outer(ba[l], bb[l])  # (d, d): output neuron i of a vs j of b
            w_out = wb[l + 1] if l + 1 == M - 1 else wb[l + 1][:, ps[l + 1]]
            cost = cost + _cost_out(wa[l + 1], w_out)
            _, cols = linear_sum_assignment(cost, maximize=True)
            old = cost[np.arange(len(cols)), ps[l]].sum()
            new = cost[np.arange(len(cols)), cols].sum()
            progress = progress or new > old + tol
            ps[l] = cols
        if not progress:
            break
    perms = [torch.from_numpy(p.astype(np.int64)) for p in ps]
    return MatchResult(perms, sweeps, _objective(wa, ba, wb, bb, ps))


def activation_matching(a: WeightBatch, b: WeightBatch, x: torch.Tensor) -> MatchResult:
    """Activation Matching: per hidden layer, the assignment that maximises the cross moment of activations.

    For each hidden layer independently, the assignment maximises ``sum_i E[z^a_i z^b_{p(i)}]`` over the
    post-ReLU activations on inputs ``x`` (official ``mnist_mlp_activation_matching.py``: the cross moment
    ``E_ab``, one linear assignment per layer). A layer's activations do not depend on the permutations of other
    layers, so no coordinate descent is needed.

    Parameters
    ----------
    a, b : nn.Module or WeightBatch
        One MLP each, of one architecture and dtype, with ReLU activations (the activations are computed
        with ReLU; a module with another activation module is refused, and so is a CNN).
    x : torch.Tensor
        Inputs ``(N, d_0)``.

    Returns
    -------
    MatchResult

    References
    ----------
    Ainsworth, Hayase, Srinivasa, "Git Re-Basin", ICLR 2023, Sec. 3.1.
    """
    _relu_only(a, "a")
    _relu_only(b, "b")
    a, b = _pair(a, b)
    _mlp_only(a, "activation_matching")
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != a.widths[0]:
        raise InputError(f"x must be a (N, {a.widths[0]}) tensor of inputs, got {_shape(x)}")
    check_tensor(x, "x")
    ha, hb = x.double(), x.double()
    perms = []
    with torch.no_grad():
        for k in range(len(a.weights) - 1):
            ha = torch.relu(ha @ a.weights[k][0].double() + a.biases[k][0].double())
            hb = torch.relu(hb @ b.weights[k][0].double() + b.biases[k][0].double())
            corr = (ha.T @ hb / len(x)).numpy()
            _, cols = linear_sum_assignment(corr, maximize=True)
            perms.append(torch.from_numpy(cols.astype(np.int64)))
    return MatchResult(perms, 0, wm_objective(a, b, perms))


def sinkhorn_rebasin(
    a: WeightBatch,
    b: WeightBatch,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    steps: int = 200,
    lr: float = 0.1,
    n_sink: int = 20,
    tau: float = 1.0,
    init_noise: float = 0.1,
    init: Sequence[torch.Tensor] | None = None,
    seed: int = 0,
) -> MatchResult:
    """Sinkhorn re-basin: soft permutations optimised by gradient descent on the mid-point loss.

    Free parameters ``Q_l`` (``eye + init_noise * N(0, 1)``) give soft permutations ``Sinkhorn(Q_l)`` (cost
    ``-Q_l``, implicit differentiation), optimised with AdamW on the cross-entropy of the mid-point
    ``0.5 a + 0.5 P(b)`` on ``(x, y)`` (official ``RebasinNet`` + ``MidLoss``); the Hungarian projection of each
    ``Q_l`` is returned.

    Parameters
    ----------
    a, b : nn.Module or WeightBatch
        One MLP each, of one architecture and dtype, with ReLU activations (the activations are computed
        with ReLU; a module with another activation module is refused, and so is a CNN).
    x, y : torch.Tensor
        Inputs ``(N, d_0)`` and class indices ``(N,)`` of the mid-point loss.
    steps : int, default 200
        Full-batch AdamW steps. Deviation: the official example trains for 20 epochs of 1000-image batches of
        MNIST (180 steps).
    lr : float, default 0.1
        Official 0.1.
    n_sink : int, default 20
        Sinkhorn iterations.
    tau : float, default 1.0
        Sinkhorn's entropy weight.
    init_noise : float, default 0.1
        Official 0.1.
    init : list of torch.Tensor, optional
        Start ``Q_l`` from these permutation matrices (plus the noise).
    seed : int, default 0
        Seed of the noise.

    Returns
    -------
    MatchResult

    References
    ----------
    Pena, Medeiros, Dubail, Aminbeidokhti, Granger, Pedersoli, "Re-basin via implicit Sinkhorn
    differentiation", CVPR 2023.
    """
    _relu_only(a, "a")
    _relu_only(b, "b")
    a, b = _pair(a, b)
    _mlp_only(a, "sinkhorn_rebasin")
    steps = check_int(steps, "steps", min_val=0)
    n_sink = check_int(n_sink, "n_sink", min_val=1)
    lr = check_float(lr, "lr", min_val=0.0, max_val=LR_MAX, include_boundaries="right")
    tau = check_float(tau, "tau", min_val=TAU_MIN)
    init_noise = check_float(init_noise, "init_noise", min_val=0.0)
    seed = check_seed(seed)
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != a.widths[0]:
        raise InputError(f"x must be a (N, {a.widths[0]}) tensor of inputs, got {_shape(x)}")
    check_tensor(x, "x")
    y = check_tensor(y, "y", shape=(len(x),), dtype="integer")
    if len(y) and (int(y.min()) < 0 or int(y.max()) >= a.widths[-1]):
        raise InputError(f"y must hold class indices in 0..{a.widths[-1] - 1}")
    y = y.long()
    x = x.float()
    if init is not None:
        init = [p[0] for p in check_perms(init, a.hidden, 1, "init")]
    g = torch.Generator().manual_seed(seed)
    qs = []
    for l, d in enumerate(a.hidden):
        base = torch.eye(d) if init is None else F.one_hot(init[l], d).float()
        qs.append((base + init_noise * torch.randn(d, d, generator=g)).unsqueeze(0).requires_grad_(True))
    opt = torch.optim.AdamW(qs, lr=lr)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        soft = [sinkhorn(q, n_sink, tau) for q in qs]
        mid = lerp(a, permute_soft(b, soft), 0.5)
        loss = loss_and_accuracy(mid, x, y)[0].mean()
        loss.backward()
        opt.step()
    perms = [hungarian(q.detach())[0] for q in qs]
    return MatchResult(perms, 0, wm_objective(a, b, perms))


__all__ = ["MatchResult", "weight_matching", "activation_matching", "sinkhorn_rebasin", "wm_objective"]
