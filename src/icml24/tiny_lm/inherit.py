"""Parameter inheritance (PanGu-pi Pro, Sec. 3.3): derive a small Llama from a larger trained one.

Depth: keep some of the parent's decoder layers (:func:`select_layers`): the paper finds the first and last
layers matter most and middle layers are redundant, so it keeps the first and last few and drops middle
layers intermittently. Width: inside the kept layers keep a subset of hidden channels (one subset for the
whole residual stream: embeddings, every layer's projections, norms and the head), whole attention heads
(head dimension unchanged) and feed-forward neurons (gate/up rows and down columns together), ranked by an
importance score (:func:`width_scores`): the L1 or L2 norm of each unit's weights, first-order Taylor
importance ``sum |w * dL/dw|`` on corpus batches, or a learnable mask (:func:`learn_masks`: real-valued scores
with a hard top-k forward and straight-through gradients, trained briefly on corpus batches with the parent
frozen). The paper reports learnable > Taylor > L2 > L1 > random (48.08 / 47.90 / 47.00 / 46.06 / 42.06 average
accuracy at 1B). Embedding rows follow a compact tokenizer's id map. The official code does not release this
part: the scores' aggregation over matrices and the mask parametrisation are ours (stated in the docstrings).

The child is a plain ``transformers.LlamaForCausalLM``: ``save_pretrained`` / ``from_pretrained`` work as for
any Llama; with all layers and channels kept its logits equal the parent's. By default weights are sliced
as they are (the paper's plain inheritance). With ``rescale_norms=True`` every RMSNorm weight is also
multiplied by ``sqrt(parent width / child width)``, so that the child computes exactly what the parent
computes with the dropped channels zeroed (RMSNorm divides by the root mean square over the kept channels
only); measured on SmolLM2 -> 4 layers x 128 channels this starts from a worse loss (14.5 against 9.4 nats),
so it is off by default.
"""

from __future__ import annotations

import contextlib
import copy
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_bool, check_choice, check_float, check_int, check_seed, check_tensor

CRITERIA = ("l1", "l2", "taylor", "mask", "random")
LAYER_STRATEGIES = ("first_last", "middle", "random")


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


def _dims(model) -> dict:
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


# ------------------------------------------------------------------------------------------------ depth
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


# ------------------------------------------------------------------------------------------------ scores
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


def _unit_sums(model, stat) -> WidthScores:
    """Sum ``stat(param)`` (elementwise, same shape) over the elements each unit owns."""
    d = _dims(model)
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


def _check_batches(batches, vocab: int, name: str = "batches") -> torch.Tensor:
    if batches is None:
        raise InputError(f"{name} are needed for this criterion", "pass token ids of shape (n, seq_len)")
    b = check_tensor(batches, name, ndim=2, dtype="integer")
    if b.size(1) < 2:
        raise InputError(f"{name} need at least 2 tokens per row, got shape {tuple(b.shape)}")
    if int(b.min()) < 0 or int(b.max()) >= vocab:
        raise InputError(f"{name} hold token ids outside [0, {vocab})", "encode with the model's (compact) tokenizer")
    return b


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
    d = _dims(model)
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
    b = _check_batches(batches, d["vocab"])
    if criterion == "mask":
        if targets is None:
            raise InputError(
                "targets are needed for criterion 'mask'", "pass (hidden_size, num_heads, intermediate_size)"
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
    hd = _dims(model)["head_dim"]
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
    d = _dims(model)
    b = _check_batches(batches, d["vocab"])
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


# ------------------------------------------------------------------------------------------------ slicing
@dataclass
class WidthPlan:
    """Which units of each kept layer the child takes (indices into the parent's, sorted).

    Parameters
    ----------
    hidden : torch.Tensor
        Kept residual channels.
    q_heads : list of torch.Tensor
        Per layer, kept query heads, grouped by their key/value head.
    kv_heads : list of torch.Tensor
        Per layer, kept key/value heads.
    neurons : list of torch.Tensor
        Per layer, kept FFN neurons.
    """

    hidden: torch.Tensor
    q_heads: list
    kv_heads: list
    neurons: list


def default_kv_heads(num_heads: int, parent_heads: int, parent_kv: int) -> int:
    """The largest key/value head count that divides ``num_heads`` and fits the parent's groups.

    Parameters
    ----------
    num_heads : int
        Query heads of the child.
    parent_heads, parent_kv : int
        Query and key/value heads of the parent.

    Returns
    -------
    int
    """
    gs = parent_heads // parent_kv
    for kv in range(min(num_heads, parent_kv), 0, -1):
        if num_heads % kv == 0 and num_heads // kv <= gs:
            return kv
    raise InputError(
        f"num_heads {num_heads} cannot be taken from the parent's {parent_kv} key/value groups of {gs} heads",
        f"use at most {parent_heads} heads, a multiple of the key/value heads kept",
    )


def plan_width(
    scores: WidthScores, hidden_size: int, num_heads: int, num_kv_heads: int, intermediate_size: int
) -> WidthPlan:
    """Turn unit scores into the kept indices: top channels, top key/value groups and heads in them, top neurons.

    Parameters
    ----------
    scores : WidthScores
    hidden_size, num_heads, num_kv_heads, intermediate_size : int
        The child's width.

    Returns
    -------
    WidthPlan
    """
    L, H = scores.heads.shape
    KV = scores.kv.shape[1]
    gs_p, gs_c = H // KV, num_heads // num_kv_heads
    hidden = scores.hidden.topk(hidden_size).indices.sort().values
    q_heads, kv_heads, neurons = [], [], []
    for i in range(L):
        hs = scores.heads[i].view(KV, gs_p)
        groups = (scores.kv[i] + hs.sum(1)).topk(num_kv_heads).indices.sort().values
        kv_heads.append(groups)
        q = [g * gs_p + hs[g].topk(gs_c).indices.sort().values for g in groups.tolist()]
        q_heads.append(torch.cat(q))
        neurons.append(scores.neurons[i].topk(intermediate_size).indices.sort().values)
    return WidthPlan(hidden, q_heads, kv_heads, neurons)


def _rows(w: torch.Tensor, heads: torch.Tensor, hd: int) -> torch.Tensor:
    idx = (heads[:, None] * hd + torch.arange(hd)).reshape(-1)
    return w.index_select(0, idx)


def slice_llama(
    model,
    layers: Sequence[int],
    plan: WidthPlan,
    vocab_ids: torch.Tensor | None = None,
    *,
    rescale_norms: bool = False,
):
    """Copy the kept layers, channels, heads, neurons and vocabulary rows of a Llama into a new, smaller one.

    Parameters
    ----------
    model : transformers.LlamaForCausalLM
        Not modified.
    layers : sequence of int
        Parent layers to keep, in order.
    plan : WidthPlan
        Kept units; per-layer lists are indexed like ``layers``.
    vocab_ids : torch.Tensor, optional
        Parent token ids of the child's vocabulary, in the child's order (``CompactTokenizer.kept_ids``).
    rescale_norms : bool, default False
        Multiply RMSNorm weights by ``sqrt(parent width / child width)`` (exactness, see the module).

    Returns
    -------
    transformers.LlamaForCausalLM
        The child, in eval mode, on the CPU, in float32.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    d = _dims(model)
    hd = d["head_dim"]
    vocab_ids = torch.arange(d["vocab"]) if vocab_ids is None else vocab_ids.long()
    pos = {int(o): n for n, o in enumerate(vocab_ids.tolist())}
    cfg = model.config.to_dict()
    for k in ("quantization_config", "_name_or_path", "architectures", "transformers_version", "dtype", "torch_dtype"):
        cfg.pop(k, None)
    nq, nkv = len(plan.q_heads[0]), len(plan.kv_heads[0])

    def tok(i):
        return pos.get(int(i)) if i is not None and not isinstance(i, (list, tuple)) else None

    cfg.update(
        num_hidden_layers=len(layers),
        hidden_size=int(plan.hidden.numel()),
        num_attention_heads=nq,
        num_key_value_heads=nkv,
        head_dim=hd,
        intermediate_size=int(plan.neurons[0].numel()),
        vocab_size=int(vocab_ids.numel()),
        bos_token_id=tok(cfg.get("bos_token_id")),
        eos_token_id=tok(cfg.get("eos_token_id")),
        pad_token_id=tok(cfg.get("pad_token_id")),
    )
    cfg.pop("unk_token_id", None)
    config = LlamaConfig(**cfg)
    with torch.random.fork_rng(devices=[]):
        child = LlamaForCausalLM(config)
    h = plan.hidden
    scale = math.sqrt(d["hidden"] / h.numel()) if rescale_norms else 1.0
    src, dst = model.model, child.model
    with torch.no_grad():
        dst.embed_tokens.weight.copy_(src.embed_tokens.weight.index_select(0, vocab_ids)[:, h])
        head_s, head_d = model.get_output_embeddings(), child.get_output_embeddings()
        if head_d.weight is not dst.embed_tokens.weight:
            head_d.weight.copy_(head_s.weight.index_select(0, vocab_ids)[:, h])
        dst.norm.weight.copy_(src.norm.weight[h] * scale)
        for j, li in enumerate(layers):
            a, b = src.layers[li], dst.layers[j]
            q, kv, f = plan.q_heads[j], plan.kv_heads[j], plan.neurons[j]
            b.input_layernorm.weight.copy_(a.input_layernorm.weight[h] * scale)
            b.post_attention_layernorm.weight.copy_(a.post_attention_layernorm.weight[h] * scale)
            sa, sb = a.self_attn, b.self_attn
            sb.q_proj.weight.copy_(_rows(sa.q_proj.weight, q, hd)[:, h])
            sb.k_proj.weight.copy_(_rows(sa.k_proj.weight, kv, hd)[:, h])
            sb.v_proj.weight.copy_(_rows(sa.v_proj.weight, kv, hd)[:, h])
            sb.o_proj.weight.copy_(_rows(sa.o_proj.weight.t(), q, hd).t()[h])
            for name, idx in (("q_proj", q), ("k_proj", kv), ("v_proj", kv)):
                if getattr(sa, name).bias is not None:
                    getattr(sb, name).bias.copy_(_rows(getattr(sa, name).bias[:, None], idx, hd)[:, 0])
            if sa.o_proj.bias is not None:
                sb.o_proj.bias.copy_(sa.o_proj.bias[h])
            ma, mb = a.mlp, b.mlp
            mb.gate_proj.weight.copy_(ma.gate_proj.weight[f][:, h])
            mb.up_proj.weight.copy_(ma.up_proj.weight[f][:, h])
            mb.down_proj.weight.copy_(ma.down_proj.weight[h][:, f])
            if ma.gate_proj.bias is not None:
                mb.gate_proj.bias.copy_(ma.gate_proj.bias[f])
                mb.up_proj.bias.copy_(ma.up_proj.bias[f])
                mb.down_proj.bias.copy_(ma.down_proj.bias[h])
    return child.float().eval()


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
        See the module: makes the child equal the channel-masked parent.
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
    d = _dims(parent)
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
        criterion = check_choice(criterion, "criterion", CRITERIA)
        scores = width_scores(trunk, criterion, batches=batches, targets=(h, nh, f), mask_steps=mask_steps, seed=seed)
    elif not isinstance(scores, WidthScores) or scores.heads.shape[0] != n:
        raise InputError(f"scores must be WidthScores of a {n}-layer trunk")
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
