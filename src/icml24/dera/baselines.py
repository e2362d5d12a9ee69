"""The peers of DeRa: retraining at beta / lambda (the ground truth it approximates), by exact policy gradient
or by DPO on sampled preference pairs (the paper's setting), and weight-space interpolation / extrapolation
between the reference and aligned weights (WiSE-FT / ExPO style)."""

from __future__ import annotations

import copy
import math

import torch
from torch import Tensor, nn

from ..data.text import EnumerableLanguage
from ..errors import InputError
from ..nn.lm import AlignResult, align_exact, response_logprobs
from ..validation import check_float, check_int, check_seed, check_tensor
from .checks import check_finite_weights, check_lambda, check_model, check_pair
from .processors import eval_mode


def retrain(
    ref: nn.Module,
    lang,
    ref_logp: Tensor,
    reward: Tensor,
    beta: float,
    *,
    steps: int = 300,
    lr: float = 3e-3,
    prompts_per_step: int | None = None,
    seed: int = 0,
) -> tuple[nn.Module, AlignResult]:
    """A copy of ``ref`` aligned at KL strength ``beta`` (exact policy gradient on the enumerable language;
    :func:`icml24.nn.lm.align_exact`). Retraining at ``beta / lambda`` is what DeRa(lambda) stands in for.

    Parameters
    ----------
    ref : torch.nn.Module
        The reference (SFT) model; not modified.
    lang : icml24.data.text.EnumerableLanguage
        The language.
    ref_logp : torch.Tensor
        The reference's exact response log-probabilities, (prompts, responses), finite: those of ``ref``
        (``response_logprobs(ref, lang)``, to within 1e-3).
    reward : torch.Tensor
        The reward table, same shape, finite.
    beta : float
        The KL strength, > 0 (``reward / beta`` must stay below 1e6).
    steps : int, default 300
        Policy-gradient steps, >= 1.
    lr : float, default 3e-3
        Learning rate, > 0.
    prompts_per_step : int, optional
        Prompts per step, in [1, prompts] (default: all).
    seed : int, default 0

    Returns
    -------
    model : torch.nn.Module
        The aligned copy.
    result : icml24.nn.lm.AlignResult
        Its training record (including the KL to the exact optimum).
    """
    shape = _check_tables(lang, ref_logp, reward, required=True)
    _check_ref(ref, lang, ref_logp)
    beta = check_float(beta, "beta", min_val=0.0, include_boundaries="neither")
    scale = float(reward.double().abs().max()) / beta
    if not math.isfinite(scale) or scale > 1e6:
        raise InputError(
            f"beta={beta:g} is too small for rewards up to {float(reward.abs().max()):g}: reward/beta overflows"
        )
    steps = check_int(steps, "steps", min_val=1)
    lr = check_float(lr, "lr", min_val=0.0, max_val=1.0, include_boundaries="right")  # Adam's step is ~lr
    if prompts_per_step is not None:
        prompts_per_step = check_int(prompts_per_step, "prompts_per_step", min_val=1, max_val=shape[0])
    seed = check_seed(seed)
    model = copy.deepcopy(ref)
    res = align_exact(
        model, lang, ref_logp, reward, beta, steps=steps, lr=lr, prompts_per_step=prompts_per_step, seed=seed
    )
    return model, res


def _check_ref(ref: nn.Module, lang, ref_logp: Tensor) -> None:
    """``ref`` reads ``lang``'s tokens, has finite weights, and ``ref_logp`` are its response log-probabilities."""
    vocab = check_model(ref, "ref")
    if vocab < lang.vocab_size:
        raise InputError(f"ref has {vocab} tokens, fewer than lang's {lang.vocab_size}")
    check_finite_weights(ref, "ref")
    with eval_mode(ref):
        own = response_logprobs(ref, lang).double()
    gap = float((own - ref_logp.double()).abs().max())
    if gap > 1e-3:
        raise InputError(f"ref_logp differs from ref's response log-probabilities on lang (by up to {gap:.3g})")


def _check_tables(lang, ref_logp: Tensor, reward: Tensor | None = None, *, required: bool = False) -> tuple[int, int]:
    if not isinstance(lang, EnumerableLanguage):
        raise InputError(f"lang must be an icml24.data.text.EnumerableLanguage, got {type(lang).__name__}")
    shape = (len(lang.prompts()), len(lang.responses()))
    check_tensor(ref_logp, "ref_logp", shape=shape)
    if bool((ref_logp > 1e-4).any()):
        raise InputError("ref_logp holds positive values", "give log-probabilities (response_logprobs of ref)")
    if reward is not None or required:
        check_tensor(reward, "reward", shape=shape)
    return shape


def preference_pairs(ref_logp: Tensor, reward: Tensor, pairs_per_prompt: int, *, seed: int = 0) -> Tensor:
    """Preference data as in RLHF: two responses per prompt sampled from the reference, labelled by a
    Bradley-Terry annotator (the first wins with probability ``sigmoid(r1 - r2)``); pairs of one response
    twice are redrawn.

    Parameters
    ----------
    ref_logp : torch.Tensor
        The reference's exact response log-probabilities, (prompts, responses).
    reward : torch.Tensor
        The annotator's reward table, same shape, finite.
    pairs_per_prompt : int
        Pairs per prompt, >= 1.
    seed : int, default 0
        Seeds the sampling and the labels.

    Returns
    -------
    torch.Tensor
        ``(prompts, pairs_per_prompt, 2)`` response indices: winner, loser.
    """
    check_tensor(ref_logp, "ref_logp", ndim=2)
    check_tensor(reward, "reward", shape=tuple(ref_logp.shape))
    if ref_logp.size(1) < 2:
        raise InputError("ref_logp has fewer than 2 responses per prompt: no pair to compare")
    if bool((ref_logp > 1e-4).any()):
        raise InputError("ref_logp holds positive values", "give log-probabilities (response_logprobs of ref)")
    n = check_int(pairs_per_prompt, "pairs_per_prompt", min_val=1)
    seed = check_seed(seed)
    g = torch.Generator().manual_seed(seed)
    probs = ref_logp.double().exp()
    probs = probs / probs.sum(1, keepdim=True)
    y1 = torch.multinomial(probs, n, replacement=True, generator=g)
    y2 = torch.multinomial(probs, n, replacement=True, generator=g)
    for _ in range(100):  # redraw ties (a peaked reference may need several draws)
        tie = y1 == y2
        if not bool(tie.any()):
            break
        y2 = torch.where(tie, torch.multinomial(probs, n, replacement=True, generator=g), y2)
    r1, r2 = reward.double().gather(1, y1), reward.double().gather(1, y2)
    first_wins = torch.rand(r1.shape, generator=g, dtype=torch.float64) < torch.sigmoid(r1 - r2)
    return torch.stack([torch.where(first_wins, y1, y2), torch.where(first_wins, y2, y1)], -1)


def retrain_dpo(
    ref: nn.Module,
    lang,
    ref_logp: Tensor,
    pairs: Tensor,
    beta: float,
    *,
    steps: int = 300,
    lr: float = 3e-3,
    prompts_per_step: int | None = None,
    seed: int = 0,
) -> tuple[nn.Module, list[float]]:
    """A copy of ``ref`` aligned by DPO at KL strength ``beta`` on preference pairs (Rafailov et al., 2023):
    minimises ``-log sigmoid(beta * (log pi/pi_ref (y_w) - log pi/pi_ref (y_l)))`` with exact sequence
    log-probabilities on the enumerable language. Adam with warm-up and cosine decay, as the exact aligner.

    Parameters
    ----------
    ref : torch.nn.Module
        The reference (SFT) model; not modified.
    lang : icml24.data.text.EnumerableLanguage
        The language.
    ref_logp : torch.Tensor
        The reference's exact response log-probabilities, (prompts, responses).
    pairs : torch.Tensor
        ``(prompts, pairs per prompt, 2)`` winner and loser indices (:func:`preference_pairs`).
    beta : float
        The KL strength, > 0.
    steps : int, default 300
        Optimiser steps, >= 1.
    lr : float, default 3e-3
        Peak learning rate, > 0.
    prompts_per_step : int, optional
        Prompts per step, in [1, prompts] (default: all).
    seed : int, default 0
        Seeds the prompt draws.

    Returns
    -------
    model : torch.nn.Module
        The aligned copy, in eval mode.
    losses : list of float
        The DPO loss at each step.

    References
    ----------
    R. Rafailov et al. Direct Preference Optimization. NeurIPS 2023 (the loss); T. Liu et al., ICML 2024
    (DeRa on DPO-aligned models).
    """
    from ..nn.lm import TrainConfig

    check_model(ref, "ref")
    n_prompts, n_resp = _check_tables(lang, ref_logp)
    check_tensor(pairs, "pairs", ndim=3, dtype="integer")
    if pairs.size(0) != n_prompts or pairs.size(2) != 2:
        raise InputError(f"pairs must have shape ({n_prompts}, pairs per prompt, 2), got {tuple(pairs.shape)}")
    if int(pairs.min()) < 0 or int(pairs.max()) >= n_resp:
        raise InputError(f"pairs holds response indices outside [0, {n_resp})")
    beta = check_float(beta, "beta", min_val=0.0, include_boundaries="neither")
    steps = check_int(steps, "steps", min_val=1)
    lr = check_float(lr, "lr", min_val=0.0, include_boundaries="neither")
    k = n_prompts if prompts_per_step is None else check_int(prompts_per_step, "prompts_per_step", min_val=1)
    if k > n_prompts:
        raise InputError(f"prompts_per_step must be in [1, {n_prompts}], got {k}")
    seed = check_seed(seed)
    model = copy.deepcopy(ref)
    prompts = lang.prompts()
    cfg = TrainConfig(steps=steps, lr=lr, min_lr=lr / 10, warmup=min(10, steps), weight_decay=0.0, seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    ref_lp = ref_logp.float()
    losses = []
    model.train()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = cfg.lr_at(step)
        idx = torch.randperm(n_prompts, generator=gen)[:k] if k < n_prompts else torch.arange(n_prompts)
        logp = response_logprobs(model, lang, prompts=[prompts[i] for i in idx], grad=True)
        ratio = logp - ref_lp[idx]
        w, lo = pairs[idx, :, 0], pairs[idx, :, 1]
        margin = beta * (ratio.gather(1, w) - ratio.gather(1, lo))
        loss = torch.nn.functional.softplus(-margin).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    model.eval()
    return model, losses


def interpolate_weights(ref: nn.Module, aligned: nn.Module, lam: float) -> nn.Module:
    """Weight interpolation ``theta_ref + lam * (theta_aligned - theta_ref)``, parameter-wise (WiSE-FT style;
    extrapolation for ``lam > 1``, ExPO style).

    Parameters
    ----------
    ref, aligned : torch.nn.Module
        Two models of one architecture.
    lam : float
        The interpolation weight, >= 0.

    Returns
    -------
    torch.nn.Module
        A new model, in eval mode.
    """
    lam = check_lambda(lam, "lam")
    check_pair(aligned, ref)
    sa, sr = aligned.state_dict(), ref.state_dict()
    if sa.keys() != sr.keys() or any(sa[k].shape != sr[k].shape for k in sa):
        raise InputError("aligned and ref must share one architecture (the same parameter names and shapes)")
    check_finite_weights(aligned, "aligned")
    check_finite_weights(ref, "ref")
    out = copy.deepcopy(ref)
    mixed = {k: (sr[k] + lam * (sa[k] - sr[k])) if sr[k].is_floating_point() else sr[k] for k in sr}
    out.load_state_dict(mixed)
    return out.eval()
