"""BRAIn's trainer: :func:`train_brain` distils the reward-conditioned posterior ``p(y|x) exp(r(x, y) / beta) / Z(x)``
into any Hugging Face causal LM, drawing responses with the ancestral sampler of :mod:`icml24.nn.decoding` (which
stores the proposal's true log-probabilities) and taking AdamW steps on a loss of :mod:`icml24.brain.losses`
(BRAIn's, or a peer estimator's). The losses and the sampler are importable from here as before.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import os
import pickle
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch
from torch import Tensor

from ..errors import InputError
from ..nn.decoding import sample_responses
from ..nn.lm_models import vocab_size_of
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

    def __post_init__(self) -> None:
        # every field is checked (and normalised) at construction: a bad value fails here, not deep in a run
        self.estimator = check_choice(self.estimator, "estimator", ESTIMATORS)
        self.n = check_int(self.n, "n", min_val=2)
        if self.estimator == "dpo" and self.n != 2:
            raise InputError(f"n = {self.n}: the DPO option draws n = 2 responses per prompt")
        self.refresh_every = check_int(self.refresh_every, "refresh_every", min_val=0)
        if self.estimator == "dpo" and self.refresh_every:
            raise InputError("refresh_every must be 0 for the DPO option (its proposal is the SFT model)")
        for name in ("beta", "lr", "dpo_beta"):
            setattr(self, name, check_float(getattr(self, name), name, min_val=0.0, include_boundaries="neither"))
        self.grad_clip = check_float(self.grad_clip, "grad_clip", min_val=0.0)
        self.steps = check_int(self.steps, "steps", min_val=0)
        self.prompts_per_step = check_int(self.prompts_per_step, "prompts_per_step", min_val=1)
        self.max_new_tokens = check_int(self.max_new_tokens, "max_new_tokens", min_val=1)
        self.seed = check_seed(self.seed)

    def validated(self) -> BrainConfig:
        """Return a checked copy (fields set after construction are checked again; raises
        :class:`~icml24.errors.InputError` naming a bad field).

        Returns
        -------
        BrainConfig
        """
        return dataclasses.replace(self)


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
        The frozen SFT model ``p`` (also the first proposal), with the policy's vocabulary.
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
        Checkpoint file for resuming: an existing checkpoint of this policy, or a new file in a folder that is (or
        can be made) writable; both are checked before training.

    Returns
    -------
    BrainResult
        Steps, responses sampled, losses, effective sample sizes and time.

    Raises
    ------
    InputError
        Before any step, for a bad argument: models that are not causal LMs, have NaN or infinite weights, differ
        in vocabulary or share trainable parameters; token ids outside the vocabulary; responses longer than the
        models' positions; a checkpoint that cannot be read or written. During training, for a ``reward_fn`` that
        returns anything but ``(B,)`` finite real rewards.
    """
    if config is not None and not isinstance(config, BrainConfig):
        raise InputError(f"config must be a BrainConfig or None, got {type(config).__name__}")
    cfg = (config or BrainConfig()).validated()
    if policy is prior:
        raise InputError("policy and prior are the same object", "train a copy: copy.deepcopy(prior)")
    vocab = _check_lm(policy, "policy")
    if _check_lm(prior, "prior") != vocab:
        raise InputError(f"prior has a vocabulary of {vocab_size_of(prior)} tokens, policy of {vocab}: they must agree")
    trainable = {id(p) for p in policy.parameters() if p.requires_grad}
    if not trainable:
        raise InputError("policy has no trainable parameters (requires_grad is False everywhere)")
    if trainable & {id(p) for p in prior.parameters()}:
        raise InputError("policy shares trainable parameters with prior", "wrap a copy: copy.deepcopy(prior)")
    pr = _check_ids(prompts, "prompts", vocab, ndim=2)
    if cfg.prompts_per_step > pr.size(0):
        raise InputError(f"prompts_per_step = {cfg.prompts_per_step} exceeds the {pr.size(0)} prompts")
    for name, m in (("policy", policy), ("prior", prior)):
        limit = getattr(getattr(m, "config", None), "max_position_embeddings", None)
        if isinstance(limit, int) and pr.size(1) + cfg.max_new_tokens > limit:
            raise InputError(
                f"prompts of {pr.size(1)} tokens plus max_new_tokens = {cfg.max_new_tokens} exceed the {limit} "
                f"positions of {name}"
            )
    if not callable(reward_fn):
        raise InputError(f"reward_fn must be callable, got {type(reward_fn).__name__}")
    if allowed_ids is not None:
        allowed_ids = _check_ids(allowed_ids, "allowed_ids", vocab, ndim=1)
        if allowed_ids.unique().numel() != allowed_ids.numel():
            raise InputError("allowed_ids holds repeated token ids", "each token may appear once")
    eos_token_id = check_int(eos_token_id, "eos_token_id", min_val=0, max_val=vocab - 1, allow_none=True)
    if eos_token_id is not None and allowed_ids is not None and not bool((allowed_ids == eos_token_id).any()):
        raise InputError(f"eos_token_id {eos_token_id} is not among allowed_ids, so it can never end a response")
    pad_token_id = check_int(pad_token_id, "pad_token_id", min_val=0, max_val=vocab - 1)
    if log_z is None and cfg.estimator in ("dpg", "gdcpp"):
        raise InputError(f"log_z is required by estimator {cfg.estimator!r}", "pass log Z(x) per prompt or 'estimate'")
    if isinstance(log_z, str):
        if log_z != "estimate":
            raise InputError(f"log_z must be a tensor of log Z(x) per prompt or 'estimate', got {log_z!r}")
    elif log_z is not None:
        log_z = check_tensor(log_z, "log_z", shape=(pr.size(0),), copy=True)
    if on_step is not None and not callable(on_step):
        raise InputError(f"on_step must be callable, got {type(on_step).__name__}")
    path, start = _check_checkpoint(checkpoint, policy)
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
            r = reward_fn(rows, s["input_ids"][:, Tp:])
        try:
            r = torch.as_tensor(r)
        except (TypeError, ValueError, RuntimeError):
            raise InputError(f"reward_fn returned {type(r).__name__}, not a tensor of rewards") from None
        if r.shape != (s["input_ids"].size(0),) or r.is_complex() or not bool(torch.isfinite(r.double()).all()):
            raise InputError(
                f"reward_fn returned shape {tuple(r.shape)}, dtype {r.dtype} or non-finite values; need (B,) real"
            )
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
    state["start"] = start
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


def _check_lm(model, name: str) -> int:
    """A Hugging Face causal LM (PEFT wrappers included) with finite weights; returns its vocabulary size."""
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "get_output_embeddings"):
        raise InputError(f"{name} must be a Hugging Face causal LM (a torch.nn.Module), got {type(model).__name__}")
    for pname, p in model.named_parameters():
        if p.is_floating_point() and not bool(torch.isfinite(p).all()):
            raise InputError(f"{name} has NaN or infinite weights ({pname})")
    return vocab_size_of(model)


def _check_ids(ids, name: str, vocab: int, ndim: int) -> Tensor:
    """Token ids: a non-empty integer tensor of ``ndim`` dimensions, each in ``[0, vocab)``."""
    ids = check_tensor(ids, name, ndim=ndim, dtype="integer")
    if int(ids.min()) < 0 or int(ids.max()) >= vocab:
        raise InputError(
            f"{name} holds token ids outside the vocabulary [0, {vocab}) (min {int(ids.min())}, max {int(ids.max())})"
        )
    return ids


def _check_checkpoint(checkpoint, policy) -> tuple[Path | None, int]:
    """The checkpoint path and the step it resumes from: an existing checkpoint of ``policy`` (read now), or a
    new file whose nearest existing folder can be written; checked before any training."""
    if checkpoint is None:
        return None, 0
    if not isinstance(checkpoint, (str, os.PathLike)):
        raise InputError(f"checkpoint must be a file path (str or pathlib.Path), got {type(checkpoint).__name__}")
    path = Path(checkpoint)
    if path.exists() and not path.is_file():
        raise InputError(f"checkpoint {path} exists and is not a file", "name a file")
    folder = next(p for p in path.absolute().parents if p.exists())
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise InputError(f"checkpoint {path} cannot be written: {folder} is not a writable folder")
    if not path.is_file():
        return path, 0
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
        step, weights = int(saved["step"]), dict(saved["model"])
    except (OSError, RuntimeError, pickle.UnpicklingError, EOFError, KeyError, TypeError, ValueError) as exc:
        raise InputError(f"checkpoint {path} is not a train_brain checkpoint ({type(exc).__name__})") from None
    own = policy.state_dict()
    if set(weights) != set(own) or any(tuple(weights[k].shape) != tuple(v.shape) for k, v in own.items()):
        raise InputError(f"checkpoint {path} holds the weights of another model", "delete it or name another file")
    if any(t.is_floating_point() and not bool(torch.isfinite(t).all()) for t in weights.values()):
        raise InputError(f"checkpoint {path} holds NaN or infinite weights")
    return path, step


__all__ = ["BrainConfig", "BrainResult", "train_brain"]
