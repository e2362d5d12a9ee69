"""DeRa's per-token mixture of an aligned model and its reference (Liu et al., ICML 2024, arXiv 2402.02992).

An aligned model trained with KL strength ``beta`` and its reference (SFT) model define, for any
``lambda >= 0``, the per-token geometric mixture

    pi_hat(y_t | x, y_<t) = softmax( lambda * h_aligned + (1 - lambda) * h_ref ),

which approximates the model one would get by retraining at strength ``beta / lambda`` (the sequence-level
identity pi*(beta/lambda) ∝ pi*(beta)^lambda pi_ref^(1-lambda) is the paper's Proposition; DeRa applies it
token by token). ``lambda = 0`` is the reference, ``lambda = 1`` the aligned model, ``lambda > 1``
extrapolates. Every value DeRa calls a log-probability is the normalised ``log_softmax`` of that
mixture (its logsumexp over the vocabulary is 0), at every lambda; a token banned (``-inf``) in either
input stays banned.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..errors import InputError
from ..validation import check_tensor
from .checks import check_lambda


def _check_logits(t, name: str) -> Tensor:
    check_tensor(t, name, dtype="float", finite=False)
    if t.ndim == 0:
        raise InputError(f"{name} must have a vocabulary dimension, got a 0-d tensor")
    if bool(torch.isnan(t).any()) or bool(torch.isposinf(t).any()):
        raise InputError(f"{name} holds non-finite logits (NaN or +inf)")
    return t


def mix(aligned_logits: Tensor, ref_logits: Tensor, lam: float) -> Tensor:
    """``log_softmax(lam * a + (1 - lam) * r)``, computed from the two log-softmaxes; ``-inf`` stays ``-inf``."""
    dtype = torch.promote_types(aligned_logits.dtype, ref_logits.dtype)
    if dtype not in (torch.float32, torch.float64):
        dtype = torch.float32
    a = aligned_logits.to(dtype)
    r = ref_logits.to(device=a.device, dtype=dtype)
    banned = torch.isneginf(a) | torch.isneginf(r)
    la, lr = torch.log_softmax(a, dim=-1), torch.log_softmax(r, dim=-1)
    if lam in (0.0, 1.0) and not bool(banned.any()):
        return lr if lam == 0.0 else la  # exact: the reference, the aligned model
    if lam == 0.0:
        z = lr
    elif lam == 1.0:
        z = la
    else:  # per-row constants cancel in the final log_softmax, as the weights sum to one
        z = lam * la.masked_fill(banned, 0.0) + (1.0 - lam) * lr.masked_fill(banned, 0.0)
    out = torch.log_softmax(z.masked_fill(banned, float("-inf")), dim=-1)
    return out.masked_fill(banned.all(-1, keepdim=True), float("-inf"))  # a row with every token banned


def mix_logprobs(aligned_logits: Tensor, ref_logits: Tensor, lam: float) -> Tensor:
    """DeRa's per-token mixture, normalised: ``log_softmax(lam * aligned_logits + (1 - lam) * ref_logits)``.

    Raw logits or log-probabilities give the same result (the weights sum to one). Normalised at every
    ``lam`` (its logsumexp over the last dimension is 0), exact at ``lam`` 0 and 1. A token that is
    ``-inf`` in either input (banned by an earlier processor) stays ``-inf``; NaN or ``+inf`` logits are
    refused. Computed in float32 (float64 when an input is float64).

    Parameters
    ----------
    aligned_logits, ref_logits : torch.Tensor
        Next-token logits of the two models, same shape (..., vocabulary).
    lam : float
        The realignment strength, >= 0.

    Returns
    -------
    torch.Tensor
        Mixed next-token log-probabilities, same shape.

    References
    ----------
    T. Liu et al. Decoding-time Realignment of Language Models. ICML 2024 (the per-token approximation of
    the geometric mixture, Section 3).
    """
    lam = check_lambda(lam, "lam")
    _check_logits(aligned_logits, "aligned_logits")
    _check_logits(ref_logits, "ref_logits")
    if aligned_logits.shape != ref_logits.shape:
        raise InputError(
            f"ref_logits {tuple(ref_logits.shape)} and aligned_logits {tuple(aligned_logits.shape)} differ in shape"
        )
    return mix(aligned_logits, ref_logits, lam)


__all__ = ["mix_logprobs"]
