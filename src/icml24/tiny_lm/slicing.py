"""Slicing a Llama for parameter inheritance (PanGu-pi Pro, Sec. 3.3): the kept units of each layer
(:func:`plan_width`) and the copy of the kept layers, channels, heads, neurons and vocabulary rows into a new,
smaller ``LlamaForCausalLM`` (:func:`slice_llama`).

The child is a plain ``transformers.LlamaForCausalLM``: ``save_pretrained`` / ``from_pretrained`` work as for
any Llama; with all layers and channels kept its logits equal the parent's. By default weights are sliced
as they are (the paper's plain inheritance). With ``rescale_norms=True`` every RMSNorm weight is also
multiplied by ``sqrt(parent width / child width)``, so that the child computes exactly what the parent
computes with the dropped channels zeroed (RMSNorm divides by the root mean square over the kept channels
only); on SmolLM2 -> 4 layers x 128 channels this starts from a worse loss than plain slicing, so it is off by
default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch

from ..errors import InputError
from .importance import WidthScores
from .llama import llama_dims


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

    d = llama_dims(model)
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


__all__ = ["WidthPlan", "default_kv_heads", "plan_width", "slice_llama"]
