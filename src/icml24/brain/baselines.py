"""The peers of BRAIn on the same ``(prompts, n)`` tables: the un-normalised distribution-matching estimators DPG
(Khalifa et al., ICLR 2021) and GDC++ (Korbak et al., NeurIPS 2022), the DPO loss (Rafailov et al., 2023) written
from its formula (TRL is not installed beside our torch pin), and best-of-n distillation.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..errors import InputError
from ..nn.lm import dpo_loss
from ..validation import check_float, check_tensor


def _tables(**tables) -> list[Tensor]:
    out, shape = [], None
    for name, t in tables.items():
        t = check_tensor(t, name, ndim=2)
        if shape is None:
            shape = t.shape
        elif t.shape != shape:
            raise InputError(f"{name} has shape {tuple(t.shape)}, expected {tuple(shape)} (prompts, samples)")
        out.append(t)
    return out


def dpg_weights(prior_logp: Tensor, reward: Tensor, proposal_logp: Tensor, log_z: Tensor, beta: float = 1.0) -> Tensor:
    """DPG's importance weights ``w_i = p(y_i) exp(r_i / beta) / (n Z q'(y_i))`` (no baseline).

    The estimate of ``grad KL(posterior || q_theta)`` is ``-sum_i w_i grad log q_theta(y_i)``.

    Parameters
    ----------
    prior_logp, reward, proposal_logp : torch.Tensor
        ``(prompts, n)`` tables: ``log p``, ``r``, ``log q'``.
    log_z : torch.Tensor
        ``log Z(x)`` per prompt, ``(prompts,)``.
    beta : float, default 1.0
        Reward temperature (> 0).

    Returns
    -------
    torch.Tensor
        ``(prompts, n)`` weights, detached.
    """
    prior, r, prop = _tables(prior_logp=prior_logp, reward=reward, proposal_logp=proposal_logp)
    lz = check_tensor(log_z, "log_z", shape=(prior.size(0),))
    beta = check_float(beta, "beta", min_val=0.0, include_boundaries="neither")
    a = prior.detach().double() + r.detach().double() / beta - lz.detach().double().unsqueeze(1) - prop.detach()
    w = (torch.exp(a) / prior.size(1)).to(prior.dtype)
    if not bool(torch.isfinite(w).all()):
        raise InputError(f"the weights p exp(r / beta) / (n Z q') overflow: log_z is far too small (beta = {beta:g})")
    return w


def gdcpp_weights(
    prior_logp: Tensor, reward: Tensor, proposal_logp: Tensor, policy_logp: Tensor, log_z: Tensor, beta: float = 1.0
) -> Tensor:
    """GDC++'s weights ``w_i = (P(y_i) / Z - q_theta(y_i)) / (n q'(y_i))``: DPG minus the un-normalised baseline.

    Parameters
    ----------
    prior_logp, reward, proposal_logp, policy_logp : torch.Tensor
        ``(prompts, n)`` tables: ``log p``, ``r``, ``log q'``, ``log q_theta``.
    log_z : torch.Tensor
        ``log Z(x)`` per prompt, ``(prompts,)``.
    beta : float, default 1.0
        Reward temperature (> 0).

    Returns
    -------
    torch.Tensor
        ``(prompts, n)`` weights, detached.
    """
    (pol,) = _tables(policy_logp=policy_logp)
    w = dpg_weights(prior_logp, reward, proposal_logp, log_z, beta)
    if pol.shape != w.shape:
        raise InputError(f"policy_logp has shape {tuple(pol.shape)}, expected {tuple(w.shape)}")
    out = w - torch.exp(pol.detach().double() - proposal_logp.detach().double()).to(w.dtype) / w.size(1)
    if not bool(torch.isfinite(out).all()):
        raise InputError("the ratios q_theta / q' overflow: policy_logp far exceeds proposal_logp")
    return out


def best_of_n_loss(policy_logp: Tensor, reward: Tensor) -> Tensor:
    """Best-of-n distillation: ``-mean_x log q_theta(y_best)``, ``y_best`` the highest-reward sample (first on ties).

    Parameters
    ----------
    policy_logp : torch.Tensor
        ``(prompts, n)`` policy log-probabilities, with gradient.
    reward : torch.Tensor
        ``(prompts, n)`` rewards.

    Returns
    -------
    torch.Tensor
        Scalar loss.
    """
    pol, r = _tables(policy_logp=policy_logp, reward=reward)
    return -pol.gather(1, r.argmax(1, keepdim=True)).mean()


__all__ = ["dpg_weights", "gdcpp_weights", "dpo_loss", "best_of_n_loss"]
