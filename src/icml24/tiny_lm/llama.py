"""What parameter inheritance reads of a Hugging Face Llama: the type check, its dimensions, and token batches
for it."""

from __future__ import annotations

import torch

from ..errors import InputError
from ..validation import check_tensor


def check_llama(model, name: str = "parent"):
    """Refuse anything but a Hugging Face ``LlamaForCausalLM``.

    Parameters
    ----------
    model : object
    name : str
        The argument's name, for the message.

    Returns
    -------
    transformers.LlamaForCausalLM
        ``model`` itself.
    """
    from transformers import LlamaForCausalLM

    if not isinstance(model, LlamaForCausalLM):
        raise InputError(
            f"{name} must be a transformers LlamaForCausalLM, got {type(model).__name__}",
            "parameter inheritance needs a parent of the same (Llama) family",
        )
    return model


def llama_dims(model) -> dict:
    """The sizes of a Llama: layers, hidden width, query and key/value heads, head dimension, FFN width, vocabulary.

    Parameters
    ----------
    model : transformers.LlamaForCausalLM

    Returns
    -------
    dict
        ``layers``, ``hidden``, ``heads``, ``kv``, ``head_dim``, ``ffn``, ``vocab``.
    """
    c = model.config
    hd = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    kv = getattr(c, "num_key_value_heads", None) or c.num_attention_heads
    return {
        "layers": c.num_hidden_layers,
        "hidden": c.hidden_size,
        "heads": c.num_attention_heads,
        "kv": kv,
        "head_dim": hd,
        "ffn": c.intermediate_size,
        "vocab": c.vocab_size,
    }


def check_batches(batches, vocab: int, name: str = "batches") -> torch.Tensor:
    """Token ids ``(n, seq_len)`` with at least 2 tokens per row, all in ``[0, vocab)``.

    Parameters
    ----------
    batches : torch.Tensor or None
        The value to check.
    vocab : int
        The model's vocabulary size.
    name : str, default "batches"
        The argument's name for the message.

    Returns
    -------
    torch.Tensor
        ``batches``.

    Raises
    ------
    InputError
        If they are missing, not an integer matrix, too short or out of the vocabulary.
    """
    if batches is None:
        raise InputError(f"{name} are needed for this criterion", "pass token ids of shape (n, seq_len)")
    b = check_tensor(batches, name, ndim=2, dtype="integer")
    if b.size(1) < 2:
        raise InputError(f"{name} need at least 2 tokens per row, got shape {tuple(b.shape)}")
    if int(b.min()) < 0 or int(b.max()) >= vocab:
        raise InputError(f"{name} hold token ids outside [0, {vocab})", "encode with the model's (compact) tokenizer")
    return b


__all__ = ["check_llama"]
