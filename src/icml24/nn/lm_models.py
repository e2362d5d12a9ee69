"""Tiny Hugging Face causal LMs built from small configs (GPT-2 or Llama architecture), and where a model lives.

Models are ordinary ``transformers`` models, so every method that uses them works unchanged on a user's real
Hugging Face model. Nothing is downloaded.
"""

from __future__ import annotations

import torch

from ..errors import InputError
from ..validation import check_device


def _token_ids(tokenizer) -> dict:
    if tokenizer is None:
        return {}
    return {k: getattr(tokenizer, f"{k}_id", None) for k in ("pad_token", "bos_token", "eos_token")}


def tiny_gpt2(
    vocab_size: int,
    *,
    n_positions: int = 128,
    n_embd: int = 64,
    n_layer: int = 2,
    n_head: int = 4,
    dropout: float = 0.0,
    tokenizer=None,
    seed: int = 0,
):
    """Build a small ``GPT2LMHeadModel`` initialised with ``seed`` (global RNG untouched).

    Parameters
    ----------
    vocab_size : int
        Vocabulary size (e.g. ``len(tokenizer)``).
    n_positions : int, default 128
        Maximum sequence length.
    n_embd : int, default 64
        Embedding width.
    n_layer : int, default 2
        Number of transformer blocks.
    n_head : int, default 4
        Attention heads per block.
    dropout : float, default 0.0
        Residual, embedding and attention dropout.
    tokenizer : optional
        When given, its ``pad_token_id``, ``bos_token_id`` and ``eos_token_id`` go into the config.
    seed : int, default 0
        Seed of the initialisation.

    Returns
    -------
    transformers.GPT2LMHeadModel
        The model, in eval mode.
    """
    from transformers import GPT2Config, GPT2LMHeadModel

    ids = _token_ids(tokenizer)
    cfg = GPT2Config(
        vocab_size=vocab_size,
        n_positions=n_positions,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        resid_pdrop=dropout,
        embd_pdrop=dropout,
        attn_pdrop=dropout,
        bos_token_id=ids.get("bos_token"),
        eos_token_id=ids.get("eos_token"),
        pad_token_id=ids.get("pad_token"),
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return GPT2LMHeadModel(cfg).eval()


def tiny_llama(
    vocab_size: int,
    *,
    max_position_embeddings: int = 128,
    hidden_size: int = 64,
    num_hidden_layers: int = 2,
    num_attention_heads: int = 4,
    intermediate_size: int | None = None,
    tokenizer=None,
    seed: int = 0,
):
    """Build a small ``LlamaForCausalLM`` (RMSNorm, SwiGLU, RoPE) initialised with ``seed`` (global RNG untouched).

    Parameters
    ----------
    vocab_size : int
        Vocabulary size (e.g. ``len(tokenizer)``).
    max_position_embeddings : int, default 128
        Maximum sequence length.
    hidden_size : int, default 64
        Model width.
    num_hidden_layers : int, default 2
        Number of decoder layers.
    num_attention_heads : int, default 4
        Attention heads per layer (as many key-value heads: no grouped-query attention).
    intermediate_size : int, optional
        Width of the SwiGLU feed-forward layer; ``4 * hidden_size`` by default.
    tokenizer : optional
        When given, its ``pad_token_id``, ``bos_token_id`` and ``eos_token_id`` go into the config.
    seed : int, default 0
        Seed of the initialisation.

    Returns
    -------
    transformers.LlamaForCausalLM
        The model, in eval mode.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    ids = _token_ids(tokenizer)
    cfg = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=num_attention_heads,
        intermediate_size=intermediate_size or 4 * hidden_size,
        max_position_embeddings=max_position_embeddings,
        bos_token_id=ids.get("bos_token"),
        eos_token_id=ids.get("eos_token"),
        pad_token_id=ids.get("pad_token"),
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LlamaForCausalLM(cfg).eval()


def vocab_size_of(model) -> int:
    """Return the model's output vocabulary size (its LM head's rows).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM; ``config.vocab_size`` is used when it has no output embeddings.

    Returns
    -------
    int
    """
    emb = model.get_output_embeddings()
    return int(emb.weight.shape[0]) if emb is not None else int(model.config.vocab_size)


def model_device(model) -> torch.device:
    """The device of a module's first parameter (the CPU for a module without parameters).

    Parameters
    ----------
    model : torch.nn.Module

    Returns
    -------
    torch.device
    """
    if not isinstance(model, torch.nn.Module):
        raise InputError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    p = next(iter(model.parameters()), None)
    return p.device if p is not None else torch.device("cpu")


def batch_to(batch, device: torch.device):
    """A batch dict with its tensors on ``device`` (the data generators build them on the CPU).

    Parameters
    ----------
    batch : dict or object
        A batch of tensors; anything but a dict is returned as it is.
    device : torch.device or str
        Where the model runs.

    Returns
    -------
    dict or object
    """
    device = check_device(device)
    if device.type == "cpu" or not isinstance(batch, dict):
        return batch
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


__all__ = ["tiny_gpt2", "tiny_llama", "vocab_size_of", "model_device", "batch_to"]
