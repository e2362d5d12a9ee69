"""BRAIn's losses: the self-normalised distillation loss of the reward-conditioned posterior, its DPO special
case, and the surrogate losses and gradient weights of every estimator (BRAIn with and without its baseline,
DPG, GDC++, DPO), on per-prompt ``(prompts, n)`` tables.

Notation (Pandey et al., ICML 2024, Sec. 3-4): ``x`` a prompt, ``y_1..y_n`` responses drawn from a proposal
``q'``, ``p`` the frozen SFT prior, ``r`` the reward, ``q_theta`` the policy. The target is the posterior
``p(y|x) exp(r(x, y) / beta) / Z(x)``.

- target weights (no gradient): ``alpha_i = softmax_i(log p(y_i) + r_i / beta - log q'(y_i))``;
- policy weights (with gradient): ``beta_hat_i = softmax_i(log q_theta(y_i) - log q'(y_i))``;
- loss ``L(x) = -sum_i stopgrad(alpha_i) log beta_hat_i``, whose gradient is the BRAIn estimator
  ``-sum_i (alpha_i - beta_hat_i) grad log q_theta(y_i)``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ..errors import InputError
from ..validation import check_bool, check_choice, check_float, check_tensor
from .baselines import dpg_weights, gdcpp_weights

TARGETS = ("soft", "argmax")
ESTIMATORS = ("brain", "brain_no_baseline", "gdcpp", "dpg", "dpo")


def _table(x, name: str, like: Tensor | None = None) -> Tensor:
    t = check_tensor(x, name, ndim=2)
    if like is not None and t.shape != like.shape:
        raise InputError(f"{name} has shape {tuple(t.shape)}, expected {tuple(like.shape)} (prompts, samples)")
    return t


def _finite(x: Tensor, message: str) -> Tensor:
    """``x`` itself when all its entries are finite; otherwise an InputError (an overflow the inputs caused)."""
    if not bool(torch.isfinite(x).all()):
        raise InputError(message)
    return x


def _check_log_z(log_z, est: str, prior: Tensor, reward: Tensor, proposal: Tensor, beta: float) -> Tensor | None:
    """``log Z(x)`` per prompt: the given tensor, the estimate (``"estimate"``, DPG and GDC++ only) or None; checked
    whenever given, required by DPG and GDC++."""
    if log_z is None:
        if est in ("dpg", "gdcpp"):
            raise InputError(f"log_z is required by the un-normalised estimator {est!r}", "pass log Z(x) per prompt")
        return None
    if isinstance(log_z, str):
        if log_z != "estimate":
            raise InputError(f"log_z must be a tensor of log Z(x) per prompt or 'estimate', got {log_z!r}")
        if est not in ("dpg", "gdcpp"):
            return None
        return _finite(
            _estimate_log_z(prior, reward, proposal, beta), f"the estimate of log_z overflows (beta = {beta:g})"
        )
    return check_tensor(log_z, "log_z", shape=(prior.size(0),))


def _check_tables(policy_logp, proposal_logp, prior_logp, reward) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    pol = _table(policy_logp, "policy_logp")
    if pol.size(1) < 2:
        raise InputError(f"policy_logp has n = {pol.size(1)} samples per prompt", "self-normalisation needs n >= 2")
    return (
        pol,
        _table(proposal_logp, "proposal_logp", pol),
        _table(prior_logp, "prior_logp", pol),
        _table(reward, "reward", pol),
    )


def target_weights(prior_logp: Tensor, reward: Tensor, proposal_logp: Tensor, beta: float = 1.0) -> Tensor:
    """Self-normalised importance weights of the posterior, ``softmax_i(log p + r / beta - log q')`` (step 4).

    Parameters
    ----------
    prior_logp : torch.Tensor
        ``log p(y_i | x)`` under the SFT prior, ``(prompts, n)``.
    reward : torch.Tensor
        ``r(x, y_i)``, same shape.
    proposal_logp : torch.Tensor
        ``log q'(y_i | x)`` under the proposal that drew the samples, same shape.
    beta : float, default 1.0
        Reward temperature (> 0); the posterior is ``p exp(r / beta) / Z``.

    Returns
    -------
    torch.Tensor
        ``alpha`` of shape ``(prompts, n)``, detached, each row summing to one (per prompt, never across).
    """
    prior = _table(prior_logp, "prior_logp")
    if prior.size(1) < 2:
        raise InputError(f"prior_logp has n = {prior.size(1)} samples per prompt", "self-normalisation needs n >= 2")
    r = _table(reward, "reward", prior)
    prop = _table(proposal_logp, "proposal_logp", prior)
    beta = check_float(beta, "beta", min_val=0.0, include_boundaries="neither")
    a = prior.detach().double() + r.detach().double() / beta - prop.detach().double()
    _finite(a, f"the log-weights log p + r / beta - log q' overflow (beta = {beta:g})")
    return torch.softmax(a, dim=-1).to(prior.dtype)


def policy_weights(policy_logp: Tensor, proposal_logp: Tensor, scale: float = 1.0) -> Tensor:
    """Self-normalised policy weights ``softmax_i(scale * (log q_theta - log q'))`` (step 5), with gradient.

    Parameters
    ----------
    policy_logp : torch.Tensor
        ``log q_theta(y_i | x)``, ``(prompts, n)``; may carry gradient.
    proposal_logp : torch.Tensor
        ``log q'(y_i | x)``, same shape.
    scale : float, default 1.0
        Multiplies the log-ratios (DPO's ``beta`` in the DPO special case; 1 for BRAIn).

    Returns
    -------
    torch.Tensor
        ``beta_hat`` of shape ``(prompts, n)``, rows summing to one; uniform when the proposal is the policy.
    """
    pol = _table(policy_logp, "policy_logp")
    prop = _table(proposal_logp, "proposal_logp", pol)
    scale = check_float(scale, "scale", min_val=0.0, include_boundaries="neither")
    z = _finite(scale * (pol - prop.detach()), f"the scaled log-ratios overflow (scale = {scale:g})")
    return torch.softmax(z, dim=-1)


def effective_sample_size(weights: Tensor) -> Tensor:
    """Effective sample size ``1 / sum_i w_i^2`` of normalised weights, per prompt.

    Parameters
    ----------
    weights : torch.Tensor
        Non-negative weights ``(prompts, n)``, rows summing to one.

    Returns
    -------
    torch.Tensor
        ``(prompts,)``, between 1 and ``n``.
    """
    w = check_tensor(weights, "weights", ndim=2)
    if bool((w < 0).any()) or not torch.allclose(w.sum(-1), w.new_ones(w.size(0)), atol=1e-4):
        raise InputError("weights must be non-negative with rows summing to one", "pass target_weights(...)")
    return 1.0 / (w.detach() ** 2).sum(-1)


def brain_loss(
    policy_logp: Tensor,
    proposal_logp: Tensor,
    prior_logp: Tensor,
    reward: Tensor,
    *,
    beta: float = 1.0,
    targets: str = "soft",
    policy_scale: float = 1.0,
    baseline: bool = True,
) -> Tensor:
    """The BRAIn loss ``mean_x [-sum_i stopgrad(alpha_i) log beta_hat_i]`` (step 7), averaged over prompts.

    Its gradient is ``-sum_i (alpha_i - beta_hat_i) grad log q_theta(y_i)`` (step 6); ``baseline=False`` drops
    the self-normalised baseline (gradient ``-sum_i alpha_i grad log q_theta(y_i)``). With ``n = 2``, the
    proposal equal to the prior, ``targets="argmax"`` and ``policy_scale = beta_DPO`` it equals the DPO loss
    (step 8; :func:`brain_dpo_loss`).

    Parameters
    ----------
    policy_logp : torch.Tensor
        ``log q_theta(y_i | x)`` (sums of response-token log-probabilities), ``(prompts, n)``, with gradient.
    proposal_logp : torch.Tensor
        ``log q'(y_i | x)`` stored when the samples were drawn, same shape.
    prior_logp : torch.Tensor
        ``log p(y_i | x)`` under the frozen SFT model, same shape.
    reward : torch.Tensor
        ``r(x, y_i)``, same shape.
    beta : float, default 1.0
        Reward temperature of the posterior ``p exp(r / beta) / Z`` (> 0).
    targets : {"soft", "argmax"}, default "soft"
        Self-normalised target weights, or weight one on the highest reward (first on ties).
    policy_scale : float, default 1.0
        Scale of the policy log-ratios inside the softmax (> 0).
    baseline : bool, default True
        Keep the self-normalised baseline ``beta_hat``; False gives ``-sum_i alpha_i log q_theta(y_i)``.

    Returns
    -------
    torch.Tensor
        Scalar loss.
    """
    pol, prop, prior, r = _check_tables(policy_logp, proposal_logp, prior_logp, reward)
    beta = check_float(beta, "beta", min_val=0.0, include_boundaries="neither")
    targets = check_choice(targets, "targets", TARGETS)
    policy_scale = check_float(policy_scale, "policy_scale", min_val=0.0, include_boundaries="neither")
    baseline = check_bool(baseline, "baseline")
    if targets == "soft":
        alpha = target_weights(prior, r, prop, beta).to(pol.dtype)
    else:
        alpha = torch.nn.functional.one_hot(r.argmax(-1), r.size(1)).to(pol.dtype)
    if baseline:
        z = policy_scale * (pol - prop.detach())
        logb = torch.log_softmax(_finite(z, f"the scaled log-ratios overflow (policy_scale = {policy_scale:g})"), -1)
    else:
        logb = pol
    return -(alpha * logb).sum(-1).mean()


def brain_dpo_loss(policy_logp: Tensor, prior_logp: Tensor, reward: Tensor, *, dpo_beta: float = 1.0) -> Tensor:
    """BRAIn's DPO option: two SFT samples per prompt, argmax targets, policy weights scaled by ``dpo_beta``.

    Numerically the DPO loss ``-log sigmoid(dpo_beta [(log q_w - log p_w) - (log q_l - log p_l)])`` on the
    reward-labelled pair (winner: the higher reward).

    Parameters
    ----------
    policy_logp : torch.Tensor
        ``log q_theta`` of the two responses, ``(prompts, 2)``.
    prior_logp : torch.Tensor
        ``log p`` (SFT, which is also the proposal), ``(prompts, 2)``.
    reward : torch.Tensor
        Rewards, ``(prompts, 2)``.
    dpo_beta : float, default 1.0
        DPO's KL strength (> 0).

    Returns
    -------
    torch.Tensor
        Scalar loss.
    """
    pol = _table(policy_logp, "policy_logp")
    if pol.size(1) != 2:
        raise InputError(f"policy_logp has n = {pol.size(1)} samples per prompt; the DPO option needs n = 2")
    _table(prior_logp, "prior_logp", pol)
    _table(reward, "reward", pol)
    dpo_beta = check_float(dpo_beta, "dpo_beta", min_val=0.0, include_boundaries="neither")
    return brain_loss(
        pol, prior_logp, prior_logp, reward, targets="argmax", policy_scale=dpo_beta, baseline=True, beta=1.0
    )


def _estimate_log_z(prior: Tensor, reward: Tensor, proposal: Tensor, beta: float) -> Tensor:
    """Per-prompt importance-sampling estimate ``log mean_i p(y_i) exp(r_i / beta) / q'(y_i)``, detached."""
    lw = prior.detach().double() + reward.detach().double() / beta - proposal.detach().double()
    return torch.logsumexp(lw, dim=-1) - math.log(lw.size(-1))


def estimator_loss(
    estimator: str,
    policy_logp: Tensor,
    proposal_logp: Tensor,
    prior_logp: Tensor,
    reward: Tensor,
    *,
    beta: float = 1.0,
    log_z: Tensor | None = None,
    dpo_beta: float = 1.0,
) -> Tensor:
    """A surrogate loss whose gradient is the named estimator of ``grad KL(posterior || q_theta)``, per prompt.

    ``"brain"``, ``"brain_no_baseline"`` and ``"dpo"`` are :func:`brain_loss` options; ``"dpg"`` and ``"gdcpp"``
    are ``-sum_i stopgrad(w_i) log q_theta(y_i)`` with DPG's ``w_i = P(y_i) / (n Z q'(y_i))`` and GDC++'s
    ``w_i = (P(y_i) / Z - q_theta(y_i)) / (n q'(y_i))`` (``P = p exp(r / beta)``), which need ``log Z(x)``.

    Parameters
    ----------
    estimator : {"brain", "brain_no_baseline", "gdcpp", "dpg", "dpo"}
        The estimator.
    policy_logp, proposal_logp, prior_logp, reward : torch.Tensor
        ``(prompts, n)`` tables as in :func:`brain_loss`.
    beta : float, default 1.0
        Reward temperature.
    log_z : torch.Tensor or "estimate", optional
        ``log Z(x) = log sum_y p(y|x) exp(r(x, y) / beta)`` per prompt, ``(prompts,)``; required by DPG and
        GDC++ (an oracle here: on the enumerable language it is exact). ``"estimate"``: the importance-sampling
        estimate from the prompt's own n samples, ``log mean_i P(y_i) / q'(y_i)``, as conditional GDC++/CDPG
        do in practice (then DPG's weights equal BRAIn's target weights alpha, and GDC++'s are
        ``alpha_i - q_theta(y_i) / (n q'(y_i))``: BRAIn with an un-normalised baseline).
    dpo_beta : float, default 1.0
        DPO's KL strength (``"dpo"`` only).

    Returns
    -------
    torch.Tensor
        Scalar loss.
    """
    est = check_choice(estimator, "estimator", ESTIMATORS)
    pol, prop, prior, r = _check_tables(policy_logp, proposal_logp, prior_logp, reward)
    beta = check_float(beta, "beta", min_val=0.0, include_boundaries="neither")
    dpo_beta = check_float(dpo_beta, "dpo_beta", min_val=0.0, include_boundaries="neither")
    lz = _check_log_z(log_z, est, prior, r, prop, beta)
    if est == "brain":
        return brain_loss(pol, prop, prior, r, beta=beta)
    if est == "brain_no_baseline":
        return brain_loss(pol, prop, prior, r, beta=beta, baseline=False)
    if est == "dpo":
        return brain_dpo_loss(pol, prior, r, dpo_beta=dpo_beta)
    if est == "dpg":
        w = dpg_weights(prior, r, prop, lz, beta)
    else:
        w = gdcpp_weights(prior, r, prop, pol, lz, beta)
    return -(w.to(pol.dtype) * pol).sum(-1).mean()


def estimator_weights(
    estimator: str,
    policy_logp: Tensor,
    proposal_logp: Tensor,
    prior_logp: Tensor,
    reward: Tensor,
    *,
    beta: float = 1.0,
    log_z: Tensor | None = None,
) -> Tensor:
    """The weights ``w_i`` of an estimator written as ``g = -sum_i w_i grad log q_theta(y_i)`` (step 6).

    BRAIn: ``alpha_i - beta_hat_i``; without baseline: ``alpha_i``; DPG and GDC++: :func:`dpg_weights`,
    :func:`gdcpp_weights` (they need ``log_z``).

    Parameters
    ----------
    estimator : {"brain", "brain_no_baseline", "gdcpp", "dpg"}
        The estimator.
    policy_logp, proposal_logp, prior_logp, reward : torch.Tensor
        ``(prompts, n)`` tables as in :func:`brain_loss`.
    beta : float, default 1.0
        Reward temperature.
    log_z : torch.Tensor or "estimate", optional
        ``log Z(x)`` per prompt (DPG and GDC++); ``"estimate"`` as in :func:`estimator_loss`.

    Returns
    -------
    torch.Tensor
        ``(prompts, n)`` weights, detached.
    """
    est = check_choice(estimator, "estimator", ESTIMATORS[:4])
    pol, prop, prior, r = _check_tables(policy_logp, proposal_logp, prior_logp, reward)
    beta = check_float(beta, "beta", min_val=0.0, include_boundaries="neither")
    lz = _check_log_z(log_z, est, prior, r, prop, beta)
    if est == "dpg":
        return dpg_weights(prior, r, prop, lz, beta)
    if est == "gdcpp":
        return gdcpp_weights(prior, r, prop, pol, lz, beta)
    alpha = target_weights(prior, r, prop, beta)
    if est == "brain_no_baseline":
        return alpha
    return (alpha - policy_weights(pol, prop)).detach()


__all__ = [
    "TARGETS",
    "ESTIMATORS",
    "target_weights",
    "policy_weights",
    "effective_sample_size",
    "brain_loss",
    "brain_dpo_loss",
    "estimator_loss",
    "estimator_weights",
]
