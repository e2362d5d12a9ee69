"""BRAIn: the self-normalised distillation loss of the reward-conditioned posterior, its DPO special case, an
ancestral sampler that stores the proposal's true log-probabilities, and a trainer on any Hugging Face causal LM.

Notation (Pandey et al., ICML 2024, Sec. 3-4): ``x`` a prompt, ``y_1..y_n`` responses drawn from a proposal
``q'``, ``p`` the frozen SFT prior, ``r`` the reward, ``q_theta`` the policy. The target is the posterior
``p(y|x) exp(r(x, y) / beta) / Z(x)``.

- target weights (no gradient): ``alpha_i = softmax_i(log p(y_i) + r_i / beta - log q'(y_i))``;
- policy weights (with gradient): ``beta_hat_i = softmax_i(log q_theta(y_i) - log q'(y_i))``;
- loss ``L(x) = -sum_i stopgrad(alpha_i) log beta_hat_i``, whose gradient is the BRAIn estimator
  ``-sum_i (alpha_i - beta_hat_i) grad log q_theta(y_i)``.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch
from torch import Tensor

from ..errors import InputError
from ..nn.decoding import sample_responses
from ..nn.lm import TrainConfig, sequence_logprobs, train_lm
from ..validation import check_bool, check_choice, check_float, check_int, check_seed, check_tensor
from .baselines import dpg_weights, gdcpp_weights

log = logging.getLogger(__name__)

TARGETS = ("soft", "argmax")
ESTIMATORS = ("brain", "brain_no_baseline", "gdcpp", "dpg", "dpo")


def _table(x, name: str, like: Tensor | None = None) -> Tensor:
    t = check_tensor(x, name, ndim=2)
    if like is not None and t.shape != like.shape:
        raise InputError(f"{name} has shape {tuple(t.shape)}, expected {tuple(like.shape)} (prompts, samples)")
    return t


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
    return torch.softmax(scale * (pol - prop.detach()), dim=-1)


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
    if bool((w < 0).any()) or not torch.allclose(w.sum(-1), torch.ones(w.size(0), dtype=w.dtype), atol=1e-4):
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
        logb = torch.log_softmax(policy_scale * (pol - prop.detach()), dim=-1)
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


# ------------------------------------------------------------------------------------------------- trainer
@dataclass
class BrainConfig:
    """Settings of :func:`train_brain` (AdamW with warm-up and cosine decay through the ground's trainer).

    Parameters
    ----------
    n : int, default 8
        Responses sampled per prompt (>= 2; 2 for ``estimator="dpo"``).
    beta : float, default 1.0
        Reward temperature of the posterior ``p exp(r / beta) / Z``.
    steps : int, default 200
        Optimiser steps.
    prompts_per_step : int, default 8
        Prompts per step (drawn without replacement).
    max_new_tokens : int, default 4
        Response length limit of the sampler.
    refresh_every : int, default 0
        Replace the proposal by a snapshot of the policy every this many steps; 0 keeps the SFT proposal.
    lr : float, default 1e-3
        Peak learning rate.
    estimator : {"brain", "brain_no_baseline", "gdcpp", "dpg", "dpo"}, default "brain"
        The loss: BRAIn, BRAIn without the self-normalised baseline, GDC++, DPG, or BRAIn's DPO option.
    dpo_beta : float, default 1.0
        DPO's KL strength (``estimator="dpo"`` only).
    grad_clip : float, default 1.0
        Gradient-norm clipping; 0 disables it.
    seed : int, default 0
        Seed of the prompt draws and the sampler.
    """

    n: int = 8
    beta: float = 1.0
    steps: int = 200
    prompts_per_step: int = 8
    max_new_tokens: int = 4
    refresh_every: int = 0
    lr: float = 1e-3
    estimator: str = "brain"
    dpo_beta: float = 1.0
    grad_clip: float = 1.0
    seed: int = 0

    def validated(self) -> BrainConfig:
        """Return a checked copy (raises :class:`~icml24.errors.InputError` naming a bad field).

        Returns
        -------
        BrainConfig
        """
        est = check_choice(self.estimator, "estimator", ESTIMATORS)
        n = check_int(self.n, "n", min_val=2)
        if est == "dpo" and n != 2:
            raise InputError(f"n = {n}: the DPO option draws n = 2 responses per prompt")
        refresh = check_int(self.refresh_every, "refresh_every", min_val=0)
        if est == "dpo" and refresh:
            raise InputError("refresh_every must be 0 for the DPO option (its proposal is the SFT model)")
        return BrainConfig(
            n=n,
            beta=check_float(self.beta, "beta", min_val=0.0, include_boundaries="neither"),
            steps=check_int(self.steps, "steps", min_val=0),
            prompts_per_step=check_int(self.prompts_per_step, "prompts_per_step", min_val=1),
            max_new_tokens=check_int(self.max_new_tokens, "max_new_tokens", min_val=1),
            refresh_every=refresh,
            lr=check_float(self.lr, "lr", min_val=0.0, include_boundaries="neither"),
            estimator=est,
            dpo_beta=check_float(self.dpo_beta, "dpo_beta", min_val=0.0, include_boundaries="neither"),
            grad_clip=check_float(self.grad_clip, "grad_clip", min_val=0.0),
            seed=check_seed(self.seed),
        )


@dataclass
class BrainResult:
    """Outcome of :func:`train_brain`.

    Parameters
    ----------
    steps : int
        Steps completed (including those before a resume).
    samples : int
        Responses sampled by this call.
    losses : list of float
        Loss at each step.
    ess : list of float
        Mean effective sample size of the target weights at each step of this call.
    seconds : float
        Wall-clock time.
    """

    steps: int
    samples: int = 0
    losses: list[float] = field(default_factory=list)
    ess: list[float] = field(default_factory=list)
    seconds: float = 0.0


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
    if est == "brain":
        return brain_loss(policy_logp, proposal_logp, prior_logp, reward, beta=beta)
    if est == "brain_no_baseline":
        return brain_loss(policy_logp, proposal_logp, prior_logp, reward, beta=beta, baseline=False)
    if est == "dpo":
        return brain_dpo_loss(policy_logp, prior_logp, reward, dpo_beta=dpo_beta)
    pol, prop, prior, r = _check_tables(policy_logp, proposal_logp, prior_logp, reward)
    beta = check_float(beta, "beta", min_val=0.0, include_boundaries="neither")
    if log_z is None:
        raise InputError(f"log_z is required by the un-normalised estimator {est!r}", "pass log Z(x) per prompt")
    if isinstance(log_z, str):
        if log_z != "estimate":
            raise InputError(f"log_z must be a tensor of log Z(x) per prompt or 'estimate', got {log_z!r}")
        lz = _estimate_log_z(prior, r, prop, beta)
    else:
        lz = check_tensor(log_z, "log_z", shape=(pol.size(0),))
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
    if est in ("dpg", "gdcpp"):
        if log_z is None:
            raise InputError(f"log_z is required by the un-normalised estimator {est!r}", "pass log Z(x) per prompt")
        if isinstance(log_z, str):
            if log_z != "estimate":
                raise InputError(f"log_z must be a tensor of log Z(x) per prompt or 'estimate', got {log_z!r}")
            log_z = _estimate_log_z(prior, r, prop, beta)
        if est == "dpg":
            return dpg_weights(prior, r, prop, log_z, beta)
        return gdcpp_weights(prior, r, prop, pol, log_z, beta)
    alpha = target_weights(prior, r, prop, beta)
    if est == "brain_no_baseline":
        return alpha
    return (alpha - policy_weights(pol, prop)).detach()


def train_brain(
    policy,
    prior,
    prompts: Tensor,
    reward_fn: Callable[[Tensor, Tensor], Tensor],
    config: BrainConfig | None = None,
    *,
    allowed_ids: Tensor | None = None,
    eos_token_id: int | None = None,
    pad_token_id: int = 0,
    log_z: Tensor | None = None,
    on_step: Callable[[int, object], None] | None = None,
    checkpoint: str | Path | None = None,
) -> BrainResult:
    """Distil the reward-conditioned posterior into ``policy`` with BRAIn (or a baseline estimator).

    Each step draws ``prompts_per_step`` prompts, samples ``n`` responses for each from the proposal by ancestral
    sampling (storing the proposal's true log-probabilities), scores them under the frozen ``prior`` and
    ``reward_fn``, and takes one AdamW step on the loss (through :func:`icml24.nn.lm.train_lm`, whose checkpoints
    resume; on resume the proposal is re-snapshotted from the restored policy when ``refresh_every > 0``). The
    policy is trained in place and left in eval mode; ``prior`` is never modified.

    Parameters
    ----------
    policy : transformers.PreTrainedModel
        The causal LM to train (usually a copy of the SFT model).
    prior : transformers.PreTrainedModel
        The frozen SFT model ``p`` (also the first proposal).
    prompts : torch.Tensor
        Prompt token ids of equal length, long ``(P, T_p)``.
    reward_fn : callable
        ``reward_fn(prompt_ids (B, T_p), response_ids (B, T)) -> (B,)`` finite rewards (padding after
        ``<eos>`` holds ``pad_token_id``).
    config : BrainConfig, optional
        Settings; ``BrainConfig()`` by default.
    allowed_ids : torch.Tensor, optional
        Restrict sampling and scoring to these token ids (a grammar).
    eos_token_id : int, optional
        End-of-response token; None: fixed-length responses of ``max_new_tokens``.
    pad_token_id : int, default 0
        Padding after ``<eos>``.
    log_z : torch.Tensor or "estimate", optional
        ``log Z(x)`` per prompt ``(P,)``, required by ``"dpg"`` and ``"gdcpp"``; ``"estimate"``: each step's
        importance-sampling estimate from the prompt's n samples (see :func:`estimator_loss`).
    on_step : callable, optional
        ``on_step(step, policy)`` before each step's sampling (e.g. to record the exact KL).
    checkpoint : str or pathlib.Path, optional
        Checkpoint file for resuming.

    Returns
    -------
    BrainResult
        Steps, responses sampled, losses, effective sample sizes and time.
    """
    cfg = (config or BrainConfig()).validated()
    for name, m in (("policy", policy), ("prior", prior)):
        if not isinstance(m, torch.nn.Module):
            raise InputError(f"{name} must be a torch.nn.Module causal LM, got {type(m).__name__}")
    if policy is prior:
        raise InputError("policy and prior are the same object", "train a copy: copy.deepcopy(prior)")
    pr = check_tensor(prompts, "prompts", ndim=2, dtype="integer")
    if cfg.prompts_per_step > pr.size(0):
        raise InputError(f"prompts_per_step = {cfg.prompts_per_step} exceeds the {pr.size(0)} prompts")
    if not callable(reward_fn):
        raise InputError(f"reward_fn must be callable, got {type(reward_fn).__name__}")
    if allowed_ids is not None:
        allowed_ids = check_tensor(allowed_ids, "allowed_ids", ndim=1, dtype="integer")
    eos_token_id = check_int(eos_token_id, "eos_token_id", min_val=0, allow_none=True)
    pad_token_id = check_int(pad_token_id, "pad_token_id", min_val=0)
    if cfg.estimator in ("dpg", "gdcpp"):
        if log_z is None:
            raise InputError(
                f"log_z is required by estimator {cfg.estimator!r}", "pass log Z(x) per prompt or 'estimate'"
            )
        if isinstance(log_z, str):
            if log_z != "estimate":
                raise InputError(f"log_z must be a tensor of log Z(x) per prompt or 'estimate', got {log_z!r}")
        else:
            log_z = check_tensor(log_z, "log_z", shape=(pr.size(0),), copy=True)
    if on_step is not None and not callable(on_step):
        raise InputError(f"on_step must be callable, got {type(on_step).__name__}")
    prior_mode = prior.training
    state = {"proposal": prior, "calls": 0}
    res = BrainResult(steps=0)
    Tp = pr.size(1)

    def batch_fn(gen: torch.Generator, bs: int) -> dict:
        step = state["start"] + state["calls"]
        state["calls"] += 1
        if cfg.refresh_every and step > 0 and (step % cfg.refresh_every == 0 or state["proposal"] is prior):
            state["proposal"] = copy.deepcopy(policy).eval()
            for p in state["proposal"].parameters():
                p.requires_grad_(False)
        if on_step is not None:
            on_step(step, policy)
        idx = torch.randperm(pr.size(0), generator=gen)[:bs]
        s = sample_responses(
            state["proposal"],
            pr[idx],
            cfg.n,
            cfg.max_new_tokens,
            generator=gen,
            allowed_ids=allowed_ids,
            eos_token_id=eos_token_id,
            pad_token_id=pad_token_id,
        )
        with torch.no_grad():
            prior_lp = sequence_logprobs(
                prior, s["input_ids"], start=Tp, attention_mask=s["attention_mask"], allowed_ids=allowed_ids
            )
            rows = pr[idx][s["prompt_index"]]
            r = torch.as_tensor(reward_fn(rows, s["input_ids"][:, Tp:]))
        if r.shape != (s["input_ids"].size(0),) or not bool(torch.isfinite(r.double()).all()):
            raise InputError(f"reward_fn returned shape {tuple(r.shape)} or non-finite values; need finite (B,)")
        res.samples += int(s["input_ids"].size(0))
        B = len(idx)
        return {
            **s,
            "prior_logp": prior_lp.view(B, cfg.n),
            "proposal_logp": s["logprob"].view(B, cfg.n),
            "reward": r.float().view(B, cfg.n),
            "log_z": log_z if log_z is None or isinstance(log_z, str) else log_z[idx],
        }

    def loss_fn(model, batch) -> Tensor:
        pol = sequence_logprobs(
            model, batch["input_ids"], start=Tp, attention_mask=batch["attention_mask"], allowed_ids=allowed_ids
        ).view_as(batch["prior_logp"])
        alpha = target_weights(batch["prior_logp"], batch["reward"], batch["proposal_logp"], cfg.beta)
        res.ess.append(float(effective_sample_size(alpha).mean()))
        return estimator_loss(
            cfg.estimator,
            pol,
            batch["proposal_logp"],
            batch["prior_logp"],
            batch["reward"],
            beta=cfg.beta,
            log_z=batch["log_z"],
            dpo_beta=cfg.dpo_beta,
        )

    tc = TrainConfig(
        steps=cfg.steps,
        batch_size=cfg.prompts_per_step,
        lr=cfg.lr,
        min_lr=cfg.lr / 10,
        warmup=min(10, cfg.steps),
        weight_decay=0.0,
        grad_clip=cfg.grad_clip,
        log_every=0,
        checkpoint_every=max(1, cfg.steps // 4) if cfg.steps else 1,
        seed=cfg.seed,
    )
    path = Path(checkpoint) if checkpoint is not None else None
    state["start"] = 0
    if path is not None and path.is_file():
        state["start"] = int(torch.load(path, map_location="cpu", weights_only=True)["step"])
    was_training = policy.training
    t0 = time.perf_counter()
    try:
        out = train_lm(policy, batch_fn, tc, loss_fn=loss_fn, checkpoint=path)
    finally:
        prior.train(prior_mode)
        if not was_training:
            policy.eval()
    res.steps, res.losses = out.steps, out.losses
    res.seconds = time.perf_counter() - t0
    if res.ess:
        log.info("BRAIn: %d steps, mean ESS %.2f of n = %d", res.steps, sum(res.ess) / len(res.ess), cfg.n)
    if not math.isfinite(sum(res.losses) if res.losses else 0.0):
        raise InputError("the loss became non-finite", "lower the learning rate")
    return res


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
    "sample_responses",
    "BrainConfig",
    "BrainResult",
    "train_brain",
]
