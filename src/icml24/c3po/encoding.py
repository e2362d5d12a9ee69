"""How a prompt and an answer become model inputs: checks of the model and tokenizer, the prompt template,
the input ids and completion-only labels of one row, and padding a batch of rows."""

from __future__ import annotations

import torch
from torch import Tensor

from ..errors import InputError
from ..nn.lm_models import vocab_size_of
from .config import C3POConfig, check_config, check_prompt_template
from .losses import IGNORE


def check_model_and_tokenizer(model, tokenizer, name: str = "model") -> None:
    """Refuse a model that is not a causal LM or a tokenizer whose ids exceed the model's vocabulary.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM.
    tokenizer : transformers.PreTrainedTokenizerBase
        Its tokenizer.
    name : str, default "model"
        The model's argument name, for the messages.
    """
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "get_output_embeddings"):
        raise InputError(f"{name} must be a Hugging Face causal LM, got {type(model).__name__}")
    if not callable(tokenizer) or not hasattr(tokenizer, "decode") or not hasattr(tokenizer, "__len__"):
        raise InputError(f"tokenizer must be a Hugging Face tokenizer, got {type(tokenizer).__name__}")
    if len(tokenizer) > vocab_size_of(model):
        raise InputError(
            f"tokenizer has {len(tokenizer)} tokens but {name}'s vocabulary has {vocab_size_of(model)}",
            "pass the tokenizer the model was trained with",
        )
    if tokenizer.eos_token_id is None:
        raise InputError("tokenizer has no eos_token_id", "set tokenizer.eos_token")


def format_prompt(tokenizer, prompt: str, template: str | None = None) -> str:
    """Show a prompt to the model: ``template`` with ``{prompt}`` replaced, else the chat template, else
    ``"<bos> {prompt} <sep>"`` with the tokenizer's own tokens.

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerBase
        The tokenizer.
    prompt : str
        The user's request.
    template : str, optional
        A template containing ``{prompt}``.

    Returns
    -------
    str
    """
    if not isinstance(prompt, str) or not prompt.strip():
        raise InputError(f"prompt must be a non-empty str, got {prompt!r}")
    if check_prompt_template(template, "template") is not None:
        return template.replace("{prompt}", prompt)
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )
    bos = tokenizer.bos_token or ""
    sep = tokenizer.sep_token or "\n"
    return f"{bos} {prompt} {sep}".strip()


def encode(tokenizer, prompt: str, response: str, config: C3POConfig | None = None) -> tuple[list[int], list[int]]:
    """Tokenise a prompt and an answer into input ids and completion-only labels (answer plus eos learned).

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerBase
        The tokenizer.
    prompt : str
        The request.
    response : str
        The answer.
    config : C3POConfig, optional
        Supplies ``prompt_template``, ``max_length`` and ``max_prompt_length``.

    Returns
    -------
    (list of int, list of int)
        ``input_ids`` and ``labels`` (``-100`` on the prompt's tokens).
    """
    cfg = check_config(config)
    if not isinstance(response, str):
        raise InputError(f"response must be a str, got {type(response).__name__}")
    p = tokenizer(format_prompt(tokenizer, prompt, cfg.prompt_template), add_special_tokens=False)["input_ids"]
    r = tokenizer(response, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    p = p[-cfg.max_prompt_length :]
    r = r[: max(1, cfg.max_length - len(p))]
    return p + r, [IGNORE] * len(p) + r


def pad_batch(seqs: list[tuple[list[int], list[int]]], pad_id: int, device=None) -> tuple[Tensor, Tensor, Tensor]:
    """Right-pad encoded rows into ``(input_ids, labels, attention_mask)`` tensors (labels ``-100`` on padding).

    Parameters
    ----------
    seqs : list of (list of int, list of int)
        Encoded ``(input_ids, labels)`` rows (:func:`encode`).
    pad_id : int
        Padding token id.
    device : torch.device, optional
        Where the tensors go; the CPU by default.

    Returns
    -------
    (torch.Tensor, torch.Tensor, torch.Tensor)
        Long tensors ``(N, T)`` each.
    """
    n = max(len(s[0]) for s in seqs)
    ids = torch.full((len(seqs), n), pad_id, dtype=torch.long)
    labels = torch.full((len(seqs), n), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(seqs), n), dtype=torch.long)
    for i, (a, b) in enumerate(seqs):
        ids[i, : len(a)] = torch.tensor(a)
        labels[i, : len(b)] = torch.tensor(b)
        mask[i, : len(a)] = 1
    if device is not None:
        return ids.to(device), labels.to(device), mask.to(device)
    return ids, labels, mask


__all__ = ["check_model_and_tokenizer", "format_prompt", "encode"]
