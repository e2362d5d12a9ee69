"""Width importance for parameter inheritance (PanGu-pi Pro, Sec. 3.3): which hidden channels, attention heads and
feed-forward neurons of a Llama a child keeps first.

One subset of hidden channels serves the whole residual stream (embeddings, every layer's projections, norms and
the head); heads are kept whole (head dimension unchanged), feed-forward neurons with their gate/up rows and down
columns together. They are ranked by an importance score (:func:`width_scores`): the L1 or L2 norm of each unit's
weights, first-order Taylor importance ``sum |w * dL/dw|`` on corpus batches, or a learnable mask
(:func:`learn_masks`: real-valued scores with a hard top-k forward and straight-through gradients, trained briefly
on corpus batches with the parent frozen). The paper reports learnable > Taylor > L2 > L1 > random (48.08 / 47.90
/ 47.00 / 46.06 / 42.06 average accuracy at 1B). The official code does not release this part: the scores'
aggregation over matrices and the mask parametrisation are ours (stated in the docstrings).
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass

import torch

from ..errors import InputError
from ..validation import check_choice, check_float, check_int, check_seed, check_tensor
from .llama import check_batches, check_llama, llama_dims

CRITERIA = ("l1", "l2", "taylor", "mask", "random")


@dataclass
class WidthScores:
    """Importance of each prunable unit of a Llama model (higher is kept first).

    Parameters
    ----------
    hidden : torch.Tensor
        ``(hidden_size,)``: residual-stream channels.
    heads : torch.Tensor
        ``(layers, num_attention_heads)``: query heads (with their output-projection columns).
    kv : torch.Tensor
        ``(layers, num_key_value_heads)``: key/value heads (added to their query heads' scores when choosing
        whole groups).
    neurons : torch.Tensor
        ``(layers, intermediate_size)``: feed-forward neurons.
    """

    hidden: torch.Tensor
    heads: torch.Tensor
    kv: torch.Tensor
    neurons: torch.Tensor


def check_scores(scores, dims: dict) -> WidthScores:
    """``scores`` as :class:`WidthScores` of finite values shaped for a Llama of :func:`llama_dims` ``dims``."""
    L = dims["layers"]
    want = {
        "hidden": (dims["hidden"],),
        "heads": (L, dims["heads"]),
        "kv": (L, dims["kv"]),
        "neurons": (L, dims["ffn"]),
    }
    if not isinstance(scores, WidthScores):
        raise InputError(f"scores must be WidthScores of a {L}-layer trunk, got {type(scores).__name__}")
    for k, shape in want.items():
        check_tensor(getattr(scores, k), "scores", shape=shape)
    return scores


def _unit_sums(model, stat) -> WidthScores:
    """Sum ``stat(param)`` (elementwise, same shape) over the elements each unit owns."""
    d = llama_dims(model)
    m = model.model
    L, H, KV, hd, D = d["layers"], d["heads"], d["kv"], d["head_dim"], d["hidden"]
    hidden = stat(m.embed_tokens.weight).sum(0)
    head = model.get_output_embeddings()
    if head is not None and head.weight is not m.embed_tokens.weight:
        hidden = hidden + stat(head.weight).sum(0)
    hidden = hidden + stat(m.norm.weight)
    heads = torch.zeros(L, H, dtype=torch.float64)
    kv = torch.zeros(L, KV, dtype=torch.float64)
    neurons = torch.zeros(L, d["ffn"], dtype=torch.float64)
    hidden = hidden.double()
    for i, layer in enumerate(m.layers):
        a, f = layer.self_attn, layer.mlp
        for lin in (a.q_proj, a.k_proj, a.v_proj, f.gate_proj, f.up_proj):
            hidden += stat(lin.weight).sum(0).double()
        for lin in (a.o_proj, f.down_proj):
            hidden += stat(lin.weight).sum(1).double()
        hidden += stat(layer.input_layernorm.weight).double() + stat(layer.post_attention_layernorm.weight).double()
        heads[i] = (
            stat(a.q_proj.weight).view(H, hd, D).sum((1, 2)) + stat(a.o_proj.weight).view(D, H, hd).sum((0, 2))
        ).double()
        kv[i] = (
            stat(a.k_proj.weight).view(KV, hd, D).sum((1, 2)) + stat(a.v_proj.weight).view(KV, hd, D).sum((1, 2))
        ).double()
        neurons[i] = (
            stat(f.gate_proj.weight).sum(1) + stat(f.up_proj.weight).sum(1) + stat(f.down_proj.weight).sum(0)
        ).double()
    return WidthScores(hidden.detach(), heads, kv, neurons)


def width_scores(
    model,
    criterion: str = "l2",
    *,
    batches: torch.Tensor | None = None,
    targets: tuple[int, int, int] | None = None,
    batch_size: int = 8,
    mask_steps: int = 20,
    mask_lr: float = 0.05,
    seed: int = 0,
) -> WidthScores:
    """Importance of every hidden channel, head and FFN neuron of a Llama model (paper Sec. 3.3, Table 4).

    ``l1`` / ``l2``: the L1 / L2 norm of all the weights a unit owns (a hidden channel owns a column of every
    input projection, a row of every output projection, its embedding column and norm entries; a head its
    query rows and output columns; a neuron its gate/up rows and down column). ``taylor``: first-order
    Taylor importance ``sum |w * dL/dw|`` over the same weights, ``L`` the causal-LM loss on ``batches``.
    ``mask``: :func:`learn_masks` toward ``targets``. ``random``: seeded uniform scores.

    Parameters
    ----------
    model : transformers.LlamaForCausalLM
        Not modified (Taylor scores are computed on a copy).
    criterion : {"l1", "l2", "taylor", "mask", "random"}, default "l2"
    batches : torch.Tensor, optional
        Token ids ``(n, seq_len)`` in the model's vocabulary; needed by ``taylor`` and ``mask``.
    targets : tuple of int, optional
        ``(hidden_size, num_heads, intermediate_size)`` kept by the mask; needed by ``mask``.
    batch_size : int, default 8
        Rows per forward pass (Taylor) or per mask step.
    mask_steps, mask_lr : int, float
        Steps and Adam learning rate of :func:`learn_masks`.
    seed : int, default 0

    Returns
    -------
    WidthScores
    """
    check_llama(model, "model")
    criterion = check_choice(criterion, "criterion", CRITERIA)
    seed = check_seed(seed)
    batch_size = check_int(batch_size, "batch_size", min_val=1)
    d = llama_dims(model)
    if criterion == "l1":
        with torch.no_grad():
            return _unit_sums(model, lambda p: p.detach().abs())
    if criterion == "l2":
        with torch.no_grad():
            s = _unit_sums(model, lambda p: p.detach().pow(2))
        return WidthScores(s.hidden.sqrt(), s.heads.sqrt(), s.kv.sqrt(), s.neurons.sqrt())
    if criterion == "random":
        g = torch.Generator().manual_seed(seed)
        L = d["layers"]
        return WidthScores(
            torch.rand(d["hidden"], generator=g, dtype=torch.float64),
            torch.rand(L, d["heads"], generator=g, dtype=torch.float64),
            torch.rand(L, d["kv"], generator=g, dtype=torch.float64),
            torch.rand(L, d["ffn"], generator=g, dtype=torch.float64),
        )
    b = check_batches(batches, d["vocab"])
    if criterion == "mask":
        if isinstance(targets, (str, bytes)) or not hasattr(targets, "__len__") or len(targets) != 3:
            raise InputError(
                f"targets are needed for criterion 'mask' as three sizes, got {targets!r}",
                "pass (hidden_size, num_heads, intermediate_size)",
            )
        h, nh, f = targets
        return learn_masks(
            model,
            b,
            hidden_size=h,
            num_heads=nh,
            intermediate_size=f,
            steps=mask_steps,
            lr=mask_lr,
            batch_size=batch_size,
            seed=seed,
        )
    work = copy.deepcopy(model)
    work.train()
    for p in work.parameters():
        p.requires_grad_(True)
        p.grad = None
    n = b.size(0)
    for i in range(0, n, batch_size):
        x = b[i : i + batch_size]
        (work(input_ids=x, labels=x).loss * x.size(0) / n).backward()
    with torch.no_grad():
        return _unit_sums(work, lambda p: (p * p.grad).abs() if p.grad is not None else torch.zeros_like(p))


def hard_topk_mask(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Hard top-k mask along the last dimension with straight-through gradients.

    The forward value is exactly 1 on the ``k`` highest scores of each row and 0 elsewhere; the gradient is
    that of ``sigmoid(scores)`` (straight-through estimator).

    Parameters
    ----------
    scores : torch.Tensor
        Real-valued scores, any shape with a non-empty last dimension.
    k : int
        Units kept per row, ``1 <= k <= scores.shape[-1]``.

    Returns
    -------
    torch.Tensor
        Same shape as ``scores``.
    """
    s = check_tensor(scores, "scores", ndim=(1, 2, 3))
    k = check_int(k, "k", min_val=1, max_val=s.shape[-1])
    hard = torch.zeros_like(s).scatter_(-1, s.topk(k, dim=-1).indices, 1.0)
    soft = torch.sigmoid(s)
    return hard + (soft - soft.detach())  # exactly 0 or 1 forward, sigmoid gradient backward


def _standardise(x: torch.Tensor) -> torch.Tensor:
    x = torch.log(x.double().clamp_min(1e-12))
    return ((x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True).clamp_min(1e-6)).float()


@contextlib.contextmanager
def unit_masks(model, masks: dict):
    """Within the block, multiply a Llama's units by the masks in ``masks`` (read at every forward pass).

    ``masks["hidden"]`` ``(hidden_size,)`` scales the residual-stream writers (embedding, attention output,
    FFN output), ``masks["heads"]`` ``(layers, heads)`` each head's attention output, ``masks["neurons"]``
    ``(layers, intermediate_size)`` each FFN activation; a missing key leaves those units alone. The model is
    frozen inside the block (gradients reach only the masks) and its flags and mode are restored after.

    Parameters
    ----------
    model : transformers.LlamaForCausalLM
    masks : dict
        Filled (and refilled) by the caller; may be empty on entry.

    Yields
    ------
    transformers.LlamaForCausalLM
        ``model``.
    """
    check_llama(model, "model")
    if not isinstance(masks, dict):
        raise InputError(f"masks must be a dict, got {type(masks).__name__}")
    hd = llama_dims(model)["head_dim"]
    m = model.model

    def writer(mod, inp, out):
        return out * masks["hidden"] if "hidden" in masks else out

    hooks = [m.embed_tokens.register_forward_hook(writer)]
    for i, layer in enumerate(m.layers):
        a, f = layer.self_attn, layer.mlp

        def heads(mod, inp, i=i):
            return (inp[0] * masks["heads"][i].repeat_interleave(hd),) if "heads" in masks else None

        def neurons(mod, inp, i=i):
            return (inp[0] * masks["neurons"][i],) if "neurons" in masks else None

        hooks += [
            a.o_proj.register_forward_pre_hook(heads),
            a.o_proj.register_forward_hook(writer),
            f.down_proj.register_forward_pre_hook(neurons),
            f.down_proj.register_forward_hook(writer),
        ]
    flags = [p.requires_grad for p in model.parameters()]
    was_training = model.training
    try:
        for p in model.parameters():
            p.requires_grad_(False)
        model.eval()
        yield model
    finally:
        for h in hooks:
            h.remove()
        for p, fl in zip(model.parameters(), flags):
            p.requires_grad_(fl)
        model.train(was_training)


def learn_masks(
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
    """Learn keep-scores of hidden channels, heads and FFN neurons with the model frozen (paper's learnable mask).

    Each unit has a real score, initialised from its standardised log L2 norm. The forward pass multiplies
    the residual-stream writers (embedding, attention and FFN outputs) by the hard top-``hidden_size`` mask
    of the channel scores, each layer's attention output by the top-``num_heads`` head mask and each FFN's
    activations by the top-``intermediate_size`` neuron mask (:func:`hard_topk_mask`, straight-through), and
    Adam lowers the causal-LM loss on ``batches`` with respect to the scores only. The model's weights and
    ``requires_grad`` flags are left as they were. (The paper does not give the parametrisation; this one
    is ours.)

    Parameters
    ----------
    model : transformers.LlamaForCausalLM
    batches : torch.Tensor
        Token ids ``(n, seq_len)`` in the model's vocabulary.
    hidden_size, num_heads, intermediate_size : int
        Units kept by the masks (per layer for heads and neurons).
    steps : int, default 20
    lr : float, default 0.05
    batch_size : int, default 8
        Rows of ``batches`` per step (drawn with ``seed``).
    seed : int, default 0

    Returns
    -------
    WidthScores
        The learned scores (``kv`` zeros: key/value groups are ranked by their query heads).
    """
    check_llama(model, "model")
    d = llama_dims(model)
    b = check_batches(batches, d["vocab"])
    k_h = check_int(hidden_size, "hidden_size", min_val=1, max_val=d["hidden"])
    k_q = check_int(num_heads, "num_heads", min_val=1, max_val=d["heads"])
    k_f = check_int(intermediate_size, "intermediate_size", min_val=1, max_val=d["ffn"])
    steps = check_int(steps, "steps", min_val=0)
    lr = check_float(lr, "lr", min_val=0.0, include_boundaries="neither")
    batch_size = check_int(batch_size, "batch_size", min_val=1)
    g = torch.Generator().manual_seed(check_seed(seed))
    with torch.no_grad():
        init = width_scores(model, "l2")
    s_h = _standardise(init.hidden).requires_grad_(True)
    s_q = _standardise(init.heads).requires_grad_(True)
    s_f = _standardise(init.neurons).requires_grad_(True)
    masks: dict = {}
    opt = torch.optim.Adam([s_h, s_q, s_f], lr=lr)
    with unit_masks(model, masks):
        for _ in range(steps):
            x = b[torch.randint(b.size(0), (min(batch_size, b.size(0)),), generator=g)]
            masks["hidden"] = hard_topk_mask(s_h, k_h)
            masks["heads"] = hard_topk_mask(s_q, k_q)
            masks["neurons"] = hard_topk_mask(s_f, k_f)
            loss = model(input_ids=x, labels=x).loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    L = d["layers"]
    return WidthScores(
        s_h.detach().double(),
        s_q.detach().double(),
        torch.zeros(L, d["kv"], dtype=torch.float64),
        s_f.detach().double(),
    )


__all__ = [
    "CRITERIA",
    "WidthScores",
    "width_scores",
    "hard_topk_mask",
    "learn_masks",
    "unit_masks",
]
