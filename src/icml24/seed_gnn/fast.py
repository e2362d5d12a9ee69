"""The fast edit step of the GNN + MLP editors (``fast=True``, their default): the MLP's backward written out and
Adam applied to one flat buffer per quantity.

Same gradients and update as autograd and ``torch.optim.Adam`` up to float rounding (the editors' ``fast=False``
is the autograd reference); several times fewer operations per step.
"""

from __future__ import annotations

import math
import warnings
from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["fused_mlp_step", "flat_adam"]


def fused_mlp_step(
    mlp: nn.Module,
    optimizer: torch.optim.Optimizer,
    xb: Tensor,
    gb: Tensor,
    y: Tensor,
    n_targets: int,
    num_classes: int,
    *,
    sparse_x: bool,
    flat: Tensor | None = None,
) -> tuple[Callable[[], bool], Tensor | None]:
    """One edit step of ``gb + mlp(xb)`` (mean cross-entropy, one Adam step) with the MLP's backward written out.

    Eval mode: Linear and ReLU, no dropout. The first layer runs on sparse features when they are sparse
    (bag-of-words); gradients are written straight into one flat buffer and Adam is applied to it
    (:func:`flat_adam`).

    Parameters
    ----------
    mlp : icml24.nn.gnn.MLP
        The MLP, whose ``layers`` are its ``Linear`` layers.
    optimizer : torch.optim.Adam
        The editor's optimizer over the MLP's parameters (its state stays the one source of truth).
    xb, gb : torch.Tensor
        The batch's features and cached GNN outputs (fixed within an edit).
    y : torch.Tensor
        The batch's labels, targets first.
    n_targets : int
        The first ``n_targets`` rows are the targets whose predictions stop the edit.
    num_classes : int
        Classes of the GNN.
    sparse_x : bool
        The graph's features are sparse and on the CPU (the first layer then uses sparse products).
    flat : torch.Tensor, optional
        The flat parameter buffer returned by an earlier call for the same MLP (made here when absent).

    Returns
    -------
    step : callable
        One step; returns whether every target was predicted right on the logits before the step.
    flat : torch.Tensor or None
        The flat parameter buffer, to give back as ``flat`` next time.
    """
    lins = list(mlp.layers)
    params = [p for lin in lins for p in (lin.weight, lin.bias)]
    sparse = sparse_x and xb.numel() > 0
    with warnings.catch_warnings():  # torch calls CSR support "beta"; these two products are exact
        warnings.simplefilter("ignore", UserWarning)
        xs = xb.to_sparse_csr() if sparse else None
        xt = xb.t().contiguous().to_sparse_csr() if sparse else None
    onehot = F.one_hot(y, num_classes).to(gb.dtype)
    inv_b = 1.0 / y.numel()
    # with sparse features the first weight is stored transposed (in x in, out order) so that both of
    # its sparse products read and write contiguous memory
    adam, grads, flat = flat_adam(optimizer, params, transposed=(0,) if sparse else (), flat=flat)
    last = len(lins) - 1
    wt = [lin.weight.t() for lin in lins]  # views: they follow the in-place updates
    g0t = grads[0].t()  # (in x out), contiguous when the first weight is stored transposed

    @torch.no_grad()
    def step() -> bool:
        hs, zs = [xb], []
        h = xb
        for i, lin in enumerate(lins):
            z = torch.addmm(lin.bias, xs if (i == 0 and sparse) else h, wt[i])
            zs.append(z)
            h = torch.relu(z) if i < last else z
            hs.append(h)
        out = gb + h
        done = bool((out[:n_targets].argmax(-1) == y[:n_targets]).all())
        dz = torch.softmax(out, -1).sub_(onehot).mul_(inv_b)
        for i in range(last, -1, -1):
            if i == 0 and sparse:
                torch.mm(xt, dz, out=g0t)
            else:
                torch.mm(dz.t(), hs[i], out=grads[2 * i])
            torch.sum(dz, 0, out=grads[2 * i + 1])
            if i:
                dz = (dz @ lins[i].weight).mul_(zs[i - 1] > 0)
        adam()
        return done

    return step, flat


def flat_adam(
    optimizer: torch.optim.Optimizer,
    params: list[Tensor],
    transposed: Sequence[int] = (),
    flat: Tensor | None = None,
) -> tuple[Callable[[], None], list[Tensor], Tensor | None]:
    """``torch.optim.Adam``'s update (its single-tensor formula) on one flat buffer per quantity, with
    public tensor operations only: eight operations per step instead of the optimizer's per-call
    Python overhead (replacing the earlier call into torch's private functional Adam).

    The parameters, their gradients and the optimizer's ``exp_avg``/``exp_avg_sq`` become views of flat
    buffers (``params[i]`` for ``i`` in ``transposed`` stored transposed); the optimizer's state is
    copied into the buffers at each edit and stays the one source of truth (state_dict, undo, save).
    The second-moment buffer is read through ``max(v, 1e-30)`` before the square root: on these CPUs
    the square root of zero or of tiny numbers takes a slow path (4-50 times slower), and the change,
    at most ``3e-14`` on a denominator of at least ``eps = 1e-8``, is below float32 resolution there.
    Falls back to ``optimizer.step`` for settings it does not cover (amsgrad, weight decay, maximize,
    several groups).

    Parameters
    ----------
    optimizer : torch.optim.Adam
        The optimizer over ``params``.
    params : list of torch.Tensor
        The parameters, in the order of the gradients the caller writes.
    transposed : sequence of int, default ()
        Positions of the parameters stored transposed in the flat buffer.
    flat : torch.Tensor, optional
        The flat parameter buffer of an earlier call (:func:`flat_params`), reused while the parameters
        are still its views.

    Returns
    -------
    step : callable
        One Adam step from the gradients in ``grads``.
    grads : list of torch.Tensor
        Views of the flat gradient buffer, one per parameter (also set as ``p.grad``).
    flat : torch.Tensor or None
        The flat parameter buffer (``flat`` unchanged on the fallback).
    """
    opt = optimizer
    group = opt.param_groups[0]
    if len(opt.param_groups) != 1 or group.get("amsgrad") or group.get("weight_decay") or group.get("maximize"):
        grads = [torch.zeros_like(p) for p in params]
        for p, g in zip(params, grads):
            p.grad = g
        return opt.step, grads, flat
    sizes = [p.numel() for p in params]
    dev, dt = params[0].device, params[0].dtype

    def views(flat: Tensor) -> list[Tensor]:
        return [
            v.view(p.shape[::-1]).t() if i in transposed else v.view_as(p)
            for i, (v, p) in enumerate(zip(flat.split(sizes), params))
        ]

    flat_p = flat_params(params, views, flat)
    flat_g, flat_m, flat_v = (torch.zeros(sum(sizes), device=dev, dtype=dt) for _ in range(3))
    grads = views(flat_g)
    step_t = None
    for p, g, m, v in zip(params, grads, views(flat_m), views(flat_v)):
        p.grad = g
        st = opt.state[p]
        if st:
            m.copy_(st["exp_avg"])
            v.copy_(st["exp_avg_sq"])
            step_t = st["step"] if step_t is None else step_t
        st["exp_avg"], st["exp_avg_sq"] = m, v
    if step_t is None:
        step_t = torch.zeros((), dtype=torch.float32, device=dev if group.get("fused") else None)
    for p in params:  # one step counter, shared (Adam keeps equal counters for one group anyway)
        opt.state[p]["step"] = step_t
    b1, b2 = group["betas"]
    lr, eps = float(group["lr"]), float(group["eps"])
    count = [int(step_t)]
    denom = torch.empty_like(flat_v)

    def step() -> None:
        count[0] += 1
        step_t.add_(1)
        t = count[0]
        bc1, bc2 = 1.0 - b1**t, 1.0 - b2**t
        flat_m.lerp_(flat_g, 1.0 - b1)
        flat_v.mul_(b2).addcmul_(flat_g, flat_g, value=1.0 - b2)
        torch.clamp(flat_v, min=1e-30, out=denom).sqrt_().div_(math.sqrt(bc2)).add_(eps)
        flat_p.addcdiv_(flat_m, denom, value=-lr / bc1)

    return step, grads, flat_p


def flat_params(params: list[Tensor], views: Callable[[Tensor], list[Tensor]], flat: Tensor | None = None) -> Tensor:
    """One flat buffer holding the parameters (each parameter a view of it, laid out by ``views``), made once
    per editor: ``flat`` itself while the parameters are still its views.

    Parameters
    ----------
    params : list of torch.Tensor
        The parameters; their ``data`` becomes views of the buffer when it is made.
    views : callable
        The buffer -> one view per parameter.
    flat : torch.Tensor, optional
        The buffer made by an earlier call.

    Returns
    -------
    torch.Tensor
        The flat buffer.
    """
    if flat is not None and all(p.data_ptr() == v.data_ptr() for p, v in zip(params, views(flat))):
        return flat
    with torch.no_grad():
        flat = torch.empty(sum(p.numel() for p in params), device=params[0].device, dtype=params[0].dtype)
        for p, v in zip(params, views(flat)):
            v.copy_(p)
            p.data = v
    return flat
