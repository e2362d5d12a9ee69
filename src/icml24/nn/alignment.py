"""Exact KL-regularised alignment on an enumerable language: the DPO loss, the exact KL between enumerated
distributions, the closed-form optimum ``pi_ref exp(r / beta) / Z``, and a trainer that reaches it by exact
policy gradient (no sampling).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch
from torch import Tensor

from ..errors import InputError
from .lm_train import TrainConfig
from .logprobs import response_logprobs


def dpo_loss(
    policy_chosen_logp: Tensor,
    policy_rejected_logp: Tensor,
    ref_chosen_logp: Tensor,
    ref_rejected_logp: Tensor,
    beta: float = 0.1,
) -> Tensor:
    """TRL's sigmoid DPO loss, averaged over the pairs: ``-log sigmoid(beta [(log pi_w - log ref_w) - (log pi_l -
    log ref_l)])``; the reference terms carry no gradient.

    Parameters
    ----------
    policy_chosen_logp, policy_rejected_logp : torch.Tensor
        Sequence log-probabilities of the chosen / rejected responses under the policy, ``(pairs,)``, non-empty.
    ref_chosen_logp, ref_rejected_logp : torch.Tensor
        The same under the reference model.
    beta : float, default 0.1
        KL strength (> 0); TRL's default.

    Returns
    -------
    torch.Tensor
        Scalar loss.
    """
    from ..validation import check_float, check_tensor

    names = ("policy_chosen_logp", "policy_rejected_logp", "ref_chosen_logp", "ref_rejected_logp")
    ts = [
        check_tensor(t, n, ndim=1, allow_empty=False)
        for t, n in zip((policy_chosen_logp, policy_rejected_logp, ref_chosen_logp, ref_rejected_logp), names)
    ]
    for t, n in zip(ts[1:], names[1:]):
        if t.shape != ts[0].shape:
            raise InputError(f"{n} has shape {tuple(t.shape)}, expected {tuple(ts[0].shape)}")
    beta = check_float(beta, "beta", min_val=0.0, include_boundaries="neither")
    pc, pr, rc, rr = ts
    margin = (pc - rc.detach()) - (pr - rr.detach())
    return -torch.nn.functional.logsigmoid(beta * margin).mean()


def kl_divergence(logp: Tensor, logq: Tensor) -> Tensor:
    """Compute the exact ``KL(p || q)`` per row from log-probabilities over the same enumerated support.

    Parameters
    ----------
    logp, logq : torch.Tensor
        Log-probabilities ``(..., R)`` of ``p`` and ``q``, each summing to one in probability along the last
        dimension.

    Returns
    -------
    torch.Tensor
        Shape ``(...)``.
    """
    p = logp.exp()
    return (p * (logp - logq)).sum(-1)


def optimal_policy(ref_logp: Tensor, reward: Tensor, beta: float) -> Tensor:
    """Compute ``log pi*_beta = log pi_ref + r / beta - log Z``: the optimum of ``E[r] - beta KL(pi || pi_ref)``.

    Parameters
    ----------
    ref_logp : torch.Tensor
        Reference log-probabilities ``(P, R)`` (e.g. from :func:`response_logprobs`).
    reward : torch.Tensor
        Rewards ``(P, R)`` (e.g. ``SymbolReward.table``).
    beta : float
        KL weight (> 0).

    Returns
    -------
    torch.Tensor
        Float64 log-probabilities ``(P, R)``, normalised over the last dimension.

    Raises
    ------
    InputError
        If ``beta`` is not a positive finite number.
    """
    if not (isinstance(beta, (int, float)) and math.isfinite(beta) and beta > 0):
        raise InputError(f"beta must be a positive number, got {beta!r}")
    z = ref_logp.double() + reward.double() / beta
    return z - torch.logsumexp(z, dim=-1, keepdim=True)


@dataclass
class AlignResult:
    """Outcome of :func:`align_exact`.

    Parameters
    ----------
    beta : float
        The KL weight.
    steps : int
        Steps taken.
    kl_to_optimum : float
        Mean over prompts of ``KL(pi_theta || pi*_beta)`` at the end.
    seconds : float
        Wall-clock time of the training loop.
    history : list of float
        The loss (mean KL to the optimum over the step's prompts) at each step.
    """

    beta: float
    steps: int
    kl_to_optimum: float  # mean over prompts of KL(pi_theta || pi*_beta) at the end
    seconds: float
    history: list[float] = field(default_factory=list)


def align_exact(
    policy,
    lang,
    ref_logp: Tensor,
    reward: Tensor,
    beta: float,
    *,
    steps: int = 300,
    lr: float = 3e-3,
    prompts_per_step: int | None = None,
    seed: int = 0,
) -> AlignResult:
    """Align a policy on an enumerable language to the exact KL-regularised optimum ``pi_ref exp(r/beta) / Z``.

    Maximising ``E_pi[r] - beta KL(pi || pi_ref)`` equals minimising ``beta KL(pi || pi*_beta)`` (up to a
    constant), so each step takes the exact gradient of the reverse KL to ``pi*_beta`` over every response of
    the chosen prompts: exact policy gradient, no sampling. Adam with cosine decay; trains in place and
    leaves the policy in eval mode.

    Parameters
    ----------
    policy : transformers.PreTrainedModel
        The causal LM to train.
    lang : icml24.data.text.EnumerableLanguage
        The language.
    ref_logp : torch.Tensor
        Reference log-probabilities, a ``(P, R)`` table (:func:`response_logprobs`).
    reward : torch.Tensor
        Rewards, a ``(P, R)`` table (``SymbolReward.table``).
    beta : float
        KL weight (> 0).
    steps : int, default 300
        Optimiser steps.
    lr : float, default 3e-3
        Peak learning rate (warm-up over ``min(10, steps)`` steps, cosine decay to ``lr / 10``).
    prompts_per_step : int, optional
        Prompts drawn (without replacement) per step; all prompts by default.
    seed : int, default 0
        Seed of the prompt draws.

    Returns
    -------
    AlignResult
        The final mean KL to the optimum, the per-step losses and the time taken.

    Raises
    ------
    InputError
        If ``ref_logp`` and ``reward`` differ in shape or ``beta`` is not positive.
    """
    if ref_logp.shape != reward.shape:
        raise InputError(f"ref_logp {tuple(ref_logp.shape)} and reward {tuple(reward.shape)} differ in shape")
    target = optimal_policy(ref_logp, reward, beta).float()
    prompts = lang.prompts()
    P = len(prompts)
    k = prompts_per_step or P
    cfg = TrainConfig(steps=steps, lr=lr, min_lr=lr / 10, warmup=min(10, steps), weight_decay=0.0, seed=seed)
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    hist = []
    t0 = time.perf_counter()
    policy.train()
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = cfg.lr_at(step)
        idx = torch.randperm(P, generator=gen)[:k] if k < P else torch.arange(P)
        logp = response_logprobs(policy, lang, prompts=[prompts[i] for i in idx], grad=True)
        loss = kl_divergence(logp, target[idx]).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        hist.append(float(loss.detach()))
    policy.eval()
    final = float(kl_divergence(response_logprobs(policy, lang).double(), target.double()).mean())
    return AlignResult(beta, steps, final, time.perf_counter() - t0, hist)


__all__ = ["dpo_loss", "kl_divergence", "optimal_policy", "AlignResult", "align_exact"]
