"""The checks of DeRa's inputs: the realignment strength, the two models, token ids and attention masks.

Each raises :class:`~icml24.errors.InputError` naming the bad argument; the decoding, scoring and baseline
modules call them before touching a model.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..errors import InputError
from ..nn.lm_models import vocab_size_of
from ..validation import check_float, check_tensor

LAM_MAX = 1e6


def check_lambda(lam, name: str = "lam") -> float:
    """A realignment strength: a finite real number >= 0 (Python, numpy or 0-d torch scalar).

    Parameters
    ----------
    lam : float
        0 is the reference, 1 the aligned model, > 1 extrapolates; at most ``LAM_MAX`` (1e6: beyond it the
        mixed logits overflow).
    name : str, default "lam"
        The argument's name in the message.

    Returns
    -------
    float
    """
    try:
        return check_float(lam, name, min_val=0.0, max_val=LAM_MAX)
    except InputError as exc:
        raise InputError(exc.message, "0 is the reference, 1 the aligned model, > 1 extrapolates") from None


def check_model(model, name: str) -> int:
    """Check that ``model`` is a Hugging Face causal LM and return its vocabulary size.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The model.
    name : str
        The argument's name in the message.

    Returns
    -------
    int
    """
    if not isinstance(model, nn.Module) or not hasattr(model, "get_output_embeddings"):
        raise InputError(
            f"{name} must be a Hugging Face causal LM (transformers PreTrainedModel), got {type(model).__name__}"
        )
    return vocab_size_of(model)


def check_pair(aligned, ref) -> int:
    """Check that two causal LMs share one vocabulary (same output size).

    Parameters
    ----------
    aligned, ref : transformers.PreTrainedModel
        The aligned model and its reference.

    Returns
    -------
    int
        The vocabulary size.
    """
    va, vr = check_model(aligned, "aligned"), check_model(ref, "ref")
    if va != vr:
        raise InputError(
            f"ref has a different vocabulary from aligned ({vr} vs {va} tokens)",
            "DeRa needs an aligned model and its own reference, with one tokenizer",
        )
    return va


def check_finite_weights(model: nn.Module, name: str) -> None:
    """Refuse a model with a NaN or infinite parameter or buffer, naming it ``name``.

    Parameters
    ----------
    model : torch.nn.Module
    name : str
        The argument's name in the message.
    """
    if any(t.is_floating_point() and not bool(torch.isfinite(t).all()) for t in model.state_dict().values()):
        raise InputError(f"{name} has NaN or infinite weights")


def check_positions(model: nn.Module, length: int, name: str) -> None:
    """Refuse sequences longer than a model with learned positions (``config.n_positions``, GPT-2) can read.

    Parameters
    ----------
    model : torch.nn.Module
    length : int
        Tokens in the longest sequence.
    name : str
        The argument's name in the message.
    """
    limit = getattr(getattr(model, "config", None), "n_positions", None)
    if isinstance(limit, int) and length > limit:
        raise InputError(f"{name} reaches {length} tokens, more than the model's {limit} positions (n_positions)")


def check_token_ids(ids, name: str, vocab_size: int) -> Tensor:
    """Token ids: a non-empty 2-d integer tensor with every id in ``[0, vocab_size)``.

    Parameters
    ----------
    ids : torch.Tensor
        (batch, length).
    name : str
        The argument's name in the message.
    vocab_size : int
        The models' vocabulary size.

    Returns
    -------
    torch.Tensor
        ``ids`` itself.
    """
    check_tensor(ids, name, ndim=2, dtype="integer")
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi >= vocab_size:
        raise InputError(
            f"{name} holds token ids outside the vocabulary [0, {vocab_size}) (min {lo}, max {hi})",
            "encode with the models' own tokenizer",
        )
    return ids


def check_mask(mask, name: str, shape: tuple | None = None, *, left_padded: bool = True) -> Tensor:
    """An attention mask of 0/1 entries (integer or bool), each row attending to something; a long copy."""
    check_tensor(mask, name, ndim=2, shape=shape, dtype=None)
    if mask.is_floating_point() or mask.is_complex():
        raise InputError(f"{name} must hold integer or bool entries (0/1), got dtype {mask.dtype}")
    m = mask.detach().long().clone()
    if bool(((m != 0) & (m != 1)).any()):
        raise InputError(f"{name} must hold only 0 and 1")
    if bool((m.sum(1) == 0).any()):
        raise InputError(f"{name} has a row with no token to attend to")
    if left_padded and bool((m[:, -1] == 0).any()):
        raise InputError(f"{name} is right-padded", "pad on the left for generation (padding_side='left')")
    return m


__all__ = ["check_lambda", "check_model", "check_pair", "check_token_ids", "check_finite_weights", "check_positions"]
