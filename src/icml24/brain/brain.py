"""BRAIn's trainer: :func:`train_brain` distils the reward-conditioned posterior ``p(y|x) exp(r(x, y) / beta) / Z(x)``
into any Hugging Face causal LM, drawing responses with the ancestral sampler of :mod:`icml24.nn.decoding` (which
stores the proposal's true log-probabilities) and taking AdamW steps on a loss of :mod:`icml24.brain.losses`
(BRAIn's, or a peer estimator's). The losses and the sampler are importable from here as before.
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
from ..nn.lm_train import TrainConfig, train_lm
from ..nn.logprobs import sequence_logprobs
from ..validation import check_choice, check_float, check_int, check_seed, check_tensor
from .losses import (  # noqa: F401 - importable from here as before
    ESTIMATORS,
    TARGETS,
    brain_dpo_loss,
    brain_loss,
    effective_sample_size,
    estimator_loss,
    estimator_weights,
    policy_weights,
    target_weights,
)

log = logging.getLogger(__name__)


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


__all__ = ["BrainConfig", "BrainResult", "train_brain"]
