"""The peers of parameter inheritance and of the compact tokenizer.

- :func:`random_init_like`: the same child architecture from random initialisation (the paper's baseline).
- :func:`width_for_params`: the width that gives a model on another vocabulary the same total parameters
  (the uncompressed tokenizer at equal total parameters).
- :func:`sheared_masks`: Sheared-LLaMA-style structured pruning (Xia et al., ICLR 2024): hard-concrete (L0)
  gates per hidden channel, head and FFN neuron (Louizos et al., 2018: temperature 2/3, stretch to
  (-0.1, 1.1)), trained on the LM loss plus a Lagrangian ``l1 (E - t) + l2 (E - t)^2`` that pushes the
  expected kept count ``E`` of each kind toward its target ``t`` (the multipliers by gradient ascent). The
  official method also learns layer gates and trains the weights jointly; here the parent is frozen and the
  depth is chosen beforehand, so that it is compared with :func:`~icml24.tiny_lm.learn_masks` on equal
  terms. Its ``log_alpha`` ranks the units for :func:`~icml24.tiny_lm.inherit` (``scores=``).
"""

from __future__ import annotations

import math

import torch

from ..errors import InputError
from ..validation import check_float, check_int, check_seed
from .importance import WidthScores, unit_masks
from .llama import check_batches, check_llama

BETA, LEFT, RIGHT = 2.0 / 3.0, -0.1, 1.1  # hard-concrete constants of Louizos et al. and Sheared-LLaMA


def random_init_like(model, seed: int = 0):
    """A freshly initialised model with ``model``'s configuration (global RNG untouched).

    Parameters
    ----------
    model : transformers.LlamaForCausalLM
    seed : int, default 0

    Returns
    -------
    transformers.LlamaForCausalLM
        In eval mode.
    """
    from transformers import LlamaForCausalLM

    check_llama(model, "model")
    seed = check_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LlamaForCausalLM(model.config).eval()


def width_for_params(target_params: int, vocab_size: int, num_layers: int, *, ffn_ratio: float = 4.0) -> int:
    """The largest width ``d`` whose Llama (tied embeddings, SwiGLU ``ffn_ratio * d``) has at most the target
    parameters: ``vocab_size * d + num_layers * (4 + 3 * ffn_ratio) * d^2 + (2 num_layers + 1) d``.

    Parameters
    ----------
    target_params : int
    vocab_size : int
    num_layers : int
    ffn_ratio : float, default 4.0

    Returns
    -------
    int
    """
    t, v, n = (
        check_int(x, k, min_val=1, max_val=2**53)
        for x, k in zip((target_params, vocab_size, num_layers), ("target_params", "vocab_size", "num_layers"))
    )
    r = check_float(ffn_ratio, "ffn_ratio", min_val=0.0, include_boundaries="neither")
    a, b = n * (4 + 3 * r), v + 2 * n + 1
    d = int((-b + math.sqrt(b * b + 4 * a * t)) / (2 * a))
    if d < 1:
        raise InputError(f"target_params {t} is too small for a {v}-piece vocabulary", "raise it")
    return d


def _hard_concrete(log_alpha: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    u = torch.rand(log_alpha.shape, generator=g).clamp(1e-6, 1 - 1e-6)
    s = torch.sigmoid((torch.log(u) - torch.log1p(-u) + log_alpha) / BETA)
    return (s * (RIGHT - LEFT) + LEFT).clamp(0.0, 1.0)


def _expected_kept(log_alpha: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(log_alpha - BETA * math.log(-LEFT / RIGHT)).sum(-1)


def sheared_masks(
    model,
    batches: torch.Tensor,
    *,
    hidden_size: int,
    num_heads: int,
    intermediate_size: int,
    steps: int = 20,
    lr: float = 0.05,
    batch_size: int = 8,
    seed: int = 0,
) -> WidthScores:
    """Sheared-LLaMA-style hard-concrete masks toward a target shape, the model frozen (see the module).

    Parameters
    ----------
    model : transformers.LlamaForCausalLM
        Not modified.
    batches : torch.Tensor
        Token ids ``(n, seq_len)`` in the model's vocabulary.
    hidden_size, num_heads, intermediate_size : int
        Target counts (per layer for heads and neurons).
    steps : int, default 20
    lr : float, default 0.05
        Adam learning rate of the ``log_alpha`` (and of the multipliers' ascent).
    batch_size : int, default 8
    seed : int, default 0

    Returns
    -------
    WidthScores
        ``log_alpha`` of each unit (``kv`` zeros).
    """
    check_llama(model, "model")
    c = model.config
    vocab = c.vocab_size
    b = check_batches(batches, vocab)
    L, D, H, F = c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.intermediate_size
    t_h = check_int(hidden_size, "hidden_size", min_val=1, max_val=D)
    t_q = check_int(num_heads, "num_heads", min_val=1, max_val=H)
    t_f = check_int(intermediate_size, "intermediate_size", min_val=1, max_val=F)
    steps = check_int(steps, "steps", min_val=0)
    lr = check_float(lr, "lr", min_val=0.0, include_boundaries="neither")
    batch_size = check_int(batch_size, "batch_size", min_val=1)
    g = torch.Generator().manual_seed(check_seed(seed))
    la = {
        "hidden": torch.full((D,), 3.0, requires_grad=True),
        "heads": torch.full((L, H), 3.0, requires_grad=True),
        "neurons": torch.full((L, F), 3.0, requires_grad=True),
    }
    targets = {"hidden": float(t_h), "heads": float(t_q), "neurons": float(t_f)}
    lam = {k: torch.zeros(2, requires_grad=True) for k in la}
    opt = torch.optim.Adam(list(la.values()), lr=lr)
    opt_lam = torch.optim.Adam(list(lam.values()), lr=lr, maximize=True)
    masks: dict = {}
    with unit_masks(model, masks):
        for _ in range(steps):
            x = b[torch.randint(b.size(0), (min(batch_size, b.size(0)),), generator=g)]
            for k, v in la.items():
                masks[k] = _hard_concrete(v, g)
            loss = model(input_ids=x, labels=x).loss
            for k, v in la.items():
                gap = (_expected_kept(v) - targets[k]).mean() / targets[k]
                loss = loss + lam[k][0] * gap + lam[k][1] * gap**2
            opt.zero_grad(set_to_none=True)
            opt_lam.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            opt_lam.step()
    if not all(bool(torch.isfinite(v).all()) for v in la.values()):
        raise InputError(f"lr {lr:g} makes the masks diverge (NaN or infinite log_alpha)", "lower lr")
    return WidthScores(
        la["hidden"].detach().double(),
        la["heads"].detach().double(),
        torch.zeros(L, getattr(c, "num_key_value_heads", None) or H, dtype=torch.float64),
        la["neurons"].detach().double(),
    )


__all__ = ["random_init_like", "width_for_params", "sheared_masks"]
