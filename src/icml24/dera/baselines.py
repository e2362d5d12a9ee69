"""The peers of DeRa: retraining at beta / lambda (the ground truth it approximates) and weight-space
interpolation / extrapolation between the reference and aligned weights (WiSE-FT / ExPO style)."""

from __future__ import annotations

import copy

from torch import Tensor, nn

from ..errors import InputError
from ..nn.lm import AlignResult, align_exact
from .decoding import check_lambda, check_pair


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
        The reference's exact response log-probabilities, (prompts, responses).
    reward : torch.Tensor
        The reward table, same shape.
    beta : float
        The KL strength, > 0.
    steps : int, default 300
        Policy-gradient steps.
    lr : float, default 3e-3
        Learning rate.
    prompts_per_step : int, optional
        Prompts per step (default: all).
    seed : int, default 0

    Returns
    -------
    model : torch.nn.Module
        The aligned copy.
    result : icml24.nn.lm.AlignResult
        Its training record (including the KL to the exact optimum).
    """
    model = copy.deepcopy(ref)
    res = align_exact(
        model, lang, ref_logp, reward, beta, steps=steps, lr=lr, prompts_per_step=prompts_per_step, seed=seed
    )
    return model, res


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
    check_pair(aligned, ref)
    lam = check_lambda(lam)
    out = copy.deepcopy(ref)
    sa, sr = aligned.state_dict(), ref.state_dict()
    if sa.keys() != sr.keys() or any(sa[k].shape != sr[k].shape for k in sa):
        raise InputError("weight interpolation needs two models of one architecture")
    mixed = {k: (sr[k] + lam * (sa[k] - sr[k])) if sr[k].is_floating_point() else sr[k] for k in sr}
    out.load_state_dict(mixed)
    return out.eval()
