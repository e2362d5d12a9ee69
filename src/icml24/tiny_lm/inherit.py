"""Parameter inheritance (PanGu-pi Pro, Sec. 3.3): derive a small Llama from a larger trained one.

Depth: keep some of the parent's decoder layers (:func:`select_layers`): the paper finds the first and last
layers matter most and middle layers are redundant, so it keeps the first and last few and drops middle
layers intermittently. Width: inside the kept layers keep a subset of hidden channels, whole attention heads
and feed-forward neurons, ranked by an importance score (:mod:`icml24.tiny_lm.importance`: L1 / L2 norm,
Taylor importance or a learnable mask) and cut out of the parent by :mod:`icml24.tiny_lm.slicing`. Embedding
rows follow a compact tokenizer's id map.

The child is a plain ``transformers.LlamaForCausalLM``: ``save_pretrained`` / ``from_pretrained`` work as for
any Llama; with all layers and channels kept its logits equal the parent's.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_bool, check_choice, check_int, check_seed, check_tensor
from .importance import (  # noqa: F401 - importable from here as before
    CRITERIA,
    WidthScores,
    check_scores,
    hard_topk_mask,
    learn_masks,
    unit_masks,
    width_scores,
)
from .llama import check_batches, check_llama, llama_dims
from .slicing import WidthPlan, default_kv_heads, plan_width, slice_llama  # noqa: F401

LAYER_STRATEGIES = ("first_last", "middle", "random")


def select_layers(num_parent_layers: int, num_layers: int, strategy: str = "first_last", *, seed: int = 0) -> list[int]:
    """Which parent layers the child keeps (paper Sec. 3.3, Fig. 5: ends matter, middles are redundant).

    Parameters
    ----------
    num_parent_layers : int
        Layers of the parent.
    num_layers : int
        Layers of the child, ``1 <= num_layers <= num_parent_layers``.
    strategy : {"first_last", "middle", "random"}, default "first_last"
        ``first_last``: the first and last ``max(1, num_layers // 4)`` layers, the rest evenly spaced
        ("intermittently") between them; ``middle``: a contiguous block centred in the parent; ``random``:
        a sorted random subset (seeded).
    seed : int, default 0
        Seed of the ``random`` strategy.

    Returns
    -------
    list of int
        Sorted parent layer indices.
    """
    p = check_int(num_parent_layers, "num_parent_layers", min_val=1)
    n = check_int(num_layers, "num_layers", min_val=1)
    if n > p:
        raise InputError(f"num_layers {n} is larger than the parent's {p} layers", "a child is not deeper")
    strategy = check_choice(strategy, "strategy", LAYER_STRATEGIES)
    seed = check_seed(seed)
    if n == p:
        return list(range(p))
    if strategy == "middle":
        start = (p - n) // 2
        return list(range(start, start + n))
    if strategy == "random":
        rng = np.random.default_rng(seed)
        return sorted(int(i) for i in rng.choice(p, size=n, replace=False))
    if n == 1:
        return [0]
    e = max(1, n // 4)
    inner = n - 2 * e
    mid = np.linspace(e - 1, p - e, inner + 2)[1:-1] if inner > 0 else []
    chosen = list(range(e)) + [int(round(x)) for x in mid] + list(range(p - e, p))
    return sorted(set(chosen))


def _vocab_ids(vocab, n_parent: int) -> torch.Tensor | None:
    if vocab is None:
        return None
    ids = getattr(vocab, "kept_ids", vocab)
    ids = check_tensor(ids, "vocab", ndim=1, dtype="integer")
    if int(ids.min()) < 0 or int(ids.max()) >= n_parent or ids.unique().numel() != ids.numel():
        raise InputError(f"vocab must hold distinct parent token ids in [0, {n_parent})")
    return ids.long()


def inherit(
    parent,
    *,
    num_layers: int,
    hidden_size: int,
    num_heads: int,
    intermediate_size: int,
    num_kv_heads: int | None = None,
    layers: str | Sequence[int] = "first_last",
    criterion: str = "l2",
    vocab=None,
    batches: torch.Tensor | None = None,
    scores: WidthScores | None = None,
    mask_steps: int = 20,
    rescale_norms: bool = False,
    seed: int = 0,
):
    """Derive a child ``LlamaForCausalLM`` from a trained Llama parent (PanGu-pi Pro, Sec. 3.3).

    The parent is first cut to the kept layers and the compact vocabulary (full width: the "trunk"), the
    width criterion scores the trunk's units, and the child takes the best channels, whole heads and
    neurons. The parent is never modified.

    Parameters
    ----------
    parent : transformers.LlamaForCausalLM
        A trained model of the Llama family (SmolLM2, Llama 2/3, TinyLlama, ...).
    num_layers, hidden_size, num_heads, intermediate_size : int
        The child's shape; at most the parent's. ``num_heads`` keeps whole heads (head dim unchanged).
    num_kv_heads : int, optional
        Key/value heads of the child; by default the largest count that divides ``num_heads`` and fits the
        parent's grouped-query layout (:func:`default_kv_heads`).
    layers : {"first_last", "middle", "random"} or sequence of int, default "first_last"
        Depth selection (:func:`select_layers`) or explicit parent layer indices.
    criterion : {"l1", "l2", "taylor", "mask", "random"}, default "l2"
        Width criterion (:func:`width_scores`); ignored when ``scores`` is given.
    vocab : CompactTokenizer or torch.Tensor, optional
        The compact tokenizer (or its ``kept_ids``): embedding rows follow its id map.
    batches : torch.Tensor, optional
        Token ids ``(n, seq_len)`` in the child's vocabulary, for ``taylor`` and ``mask``.
    scores : WidthScores, optional
        Precomputed scores of the trunk (``num_layers`` layers), to derive several children cheaply.
    mask_steps : int, default 20
        Steps of :func:`learn_masks` for ``criterion="mask"``.
    rescale_norms : bool, default False
        See :mod:`icml24.tiny_lm.slicing`: makes the child equal the channel-masked parent.
    seed : int, default 0
        Seed of random layers/scores and of the mask's batch draws.

    Returns
    -------
    transformers.LlamaForCausalLM
        The child, in eval mode.

    Raises
    ------
    InputError
        If the parent is not a Llama, the child is larger than the parent in any dimension, the head counts
        do not divide, or a criterion lacks its batches.
    """
    check_llama(parent)
    d = llama_dims(parent)
    n = check_int(num_layers, "num_layers", min_val=1)
    if n > d["layers"]:
        raise InputError(f"num_layers {n} is larger than the parent's {d['layers']} layers", "a child is not deeper")
    h = check_int(hidden_size, "hidden_size", min_val=1)
    if h > d["hidden"]:
        raise InputError(f"hidden_size {h} is wider than the parent's {d['hidden']}", "a child is not wider")
    nh = check_int(num_heads, "num_heads", min_val=1)
    if nh > d["heads"]:
        raise InputError(
            f"num_heads {nh} is more than the parent's {d['heads']} heads", "keep at most the parent's heads"
        )
    if h % nh:
        raise InputError(
            f"hidden_size {h} must be a multiple of num_heads {nh}", "transformers' Llama refuses other shapes"
        )
    f = check_int(intermediate_size, "intermediate_size", min_val=1)
    if f > d["ffn"]:
        raise InputError(f"intermediate_size {f} is wider than the parent's {d['ffn']}", "a child is not wider")
    if num_kv_heads is None:
        kv = default_kv_heads(nh, d["heads"], d["kv"])
    else:
        kv = check_int(num_kv_heads, "num_kv_heads", min_val=1, max_val=d["kv"])
        if nh % kv or nh // kv > d["heads"] // d["kv"]:
            raise InputError(
                f"num_heads {nh} is not a multiple of num_kv_heads {kv} within the parent's groups of "
                f"{d['heads'] // d['kv']} heads",
                "choose num_heads = num_kv_heads * g with g dividing the parent's group size",
            )
    rescale_norms = check_bool(rescale_norms, "rescale_norms")
    seed = check_seed(seed)
    if isinstance(layers, str):
        kept_layers = select_layers(d["layers"], n, check_choice(layers, "layers", LAYER_STRATEGIES), seed=seed)
    else:
        try:
            kept_layers = [check_int(i, "layers", min_val=0, max_val=d["layers"] - 1) for i in layers]
        except TypeError:
            raise InputError(f"layers must be a strategy name or a list of ints, got {type(layers).__name__}") from None
        if len(kept_layers) != n or len(set(kept_layers)) != n:
            raise InputError(f"layers must list {n} distinct parent layers, got {list(layers)}")
    vocab_ids = _vocab_ids(vocab, d["vocab"])
    if scores is None:
        criterion = check_choice(criterion, "criterion", CRITERIA)
    else:
        check_scores(scores, {**d, "layers": n})
    if batches is not None:
        batches = check_batches(batches, d["vocab"] if vocab_ids is None else len(vocab_ids))
    mask_steps = check_int(mask_steps, "mask_steps", min_val=0)
    full = WidthPlan(
        torch.arange(d["hidden"]),
        [torch.arange(d["heads"])] * n,
        [torch.arange(d["kv"])] * n,
        [torch.arange(d["ffn"])] * n,
    )
    trunk = slice_llama(parent, kept_layers, full, vocab_ids, rescale_norms=False)
    if (h, nh, kv, f) == (d["hidden"], d["heads"], d["kv"], d["ffn"]):
        return trunk
    if scores is None:
        scores = width_scores(trunk, criterion, batches=batches, targets=(h, nh, f), mask_steps=mask_steps, seed=seed)
    plan = plan_width(scores, h, nh, kv, f)
    return slice_llama(trunk, list(range(n)), plan, None, rescale_norms=rescale_norms)


def count_parameters(model) -> int:
    """Distinct parameters of a model (tied weights counted once).

    Parameters
    ----------
    model : torch.nn.Module

    Returns
    -------
    int
    """
    if not isinstance(model, torch.nn.Module):
        raise InputError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


__all__ = [
    "CRITERIA",
    "LAYER_STRATEGIES",
    "WidthScores",
    "WidthPlan",
    "check_llama",
    "select_layers",
    "width_scores",
    "hard_topk_mask",
    "learn_masks",
    "unit_masks",
    "default_kv_heads",
    "plan_width",
    "slice_llama",
    "inherit",
    "count_parameters",
]
