"""Tiny Hugging Face causal LMs, exact sequence log-probabilities, a compact trainer, and exact
KL-regularised alignment on an enumerable language.

Models are ordinary ``transformers`` models (GPT-2 or Llama architecture) built from small configs, so every
method that uses them works unchanged on a user's real Hugging Face model. Nothing is downloaded.
"""

from __future__ import annotations

import io
import itertools
import logging
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import torch
from torch import Tensor

from ..errors import InputError
from ..runs import atomic_write_bytes
from ..validation import check_device, check_int

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------------ models
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


# -------------------------------------------------------------------------------------------- log-probs
def token_logprobs(logits: Tensor, input_ids: Tensor, allowed_ids: Tensor | None = None) -> Tensor:
    """Compute ``log p(x_t | x_<t)`` for t >= 1 from next-token logits.

    Parameters
    ----------
    logits : torch.Tensor
        Next-token logits ``(B, T, V)``; position ``t`` predicts token ``t + 1``. Computed in float32.
    input_ids : torch.Tensor
        Token ids ``(B, T)``.
    allowed_ids : torch.Tensor, optional
        Token ids to which the distribution at every position is restricted (renormalised), which is how a
        grammar restricts a model (see :class:`icml24.data.text.EnumerableLanguage`).

    Returns
    -------
    torch.Tensor
        Shape ``(B, T - 1)``; positions whose target is outside ``allowed_ids`` get NaN.
    """
    logits = logits[:, :-1].float()
    target = input_ids[:, 1:]
    if allowed_ids is not None:
        sub = torch.log_softmax(logits[..., allowed_ids], dim=-1)
        pos = torch.full((logits.size(-1),), -1, dtype=torch.long)
        pos[allowed_ids] = torch.arange(allowed_ids.numel())
        idx = pos[target]
        val = sub.gather(-1, idx.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        return torch.where(idx >= 0, val, torch.full_like(val, float("nan")))
    return torch.log_softmax(logits, dim=-1).gather(-1, target.unsqueeze(-1)).squeeze(-1)


def sequence_logprobs(
    model,
    input_ids: Tensor,
    *,
    start: int | Tensor = 1,
    attention_mask: Tensor | None = None,
    allowed_ids: Tensor | None = None,
    end: int | None = None,
    batch_size: int = 4096,
) -> Tensor:
    """Sum ``log p(x_t | x_<t)`` over ``start <= t < end`` for each row (teacher forcing), in batches.

    Differentiable when grad is enabled.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM called as ``model(input_ids=..., attention_mask=...)``.
    input_ids : torch.Tensor
        Token ids ``(B, T)``.
    start : int or torch.Tensor, default 1
        First scored position; may be a per-row tensor ``(B,)`` (e.g. prompt lengths).
    attention_mask : torch.Tensor, optional
        ``(B, T)``; positions where it is 0 are not scored.
    allowed_ids : torch.Tensor, optional
        Restrict every next-token distribution to these tokens (see :func:`token_logprobs`).
    end : int, optional
        One past the last scored position; ``T`` by default.
    batch_size : int, default 4096
        Rows per forward pass.

    Returns
    -------
    torch.Tensor
        Shape ``(B,)``.

    Raises
    ------
    InputError
        If a scored token is outside ``allowed_ids``.
    """
    end = input_ids.size(1) if end is None else end
    outs = []
    for lo in range(0, input_ids.size(0), batch_size):
        ids = input_ids[lo : lo + batch_size]
        am = attention_mask[lo : lo + batch_size] if attention_mask is not None else None
        logits = model(input_ids=ids, attention_mask=am).logits
        lp = token_logprobs(logits[:, :end], ids[:, :end], allowed_ids)  # positions 1..end-1
        t = torch.arange(1, end).unsqueeze(0)
        st = start[lo : lo + batch_size].unsqueeze(1) if isinstance(start, Tensor) else start
        mask = (t >= st).expand_as(lp)
        if am is not None:
            mask = mask & am[:, 1:end].bool()
        if bool(torch.isnan(lp[mask]).any()):
            raise InputError("a scored token is outside allowed_ids")
        outs.append(torch.where(mask, lp, torch.zeros_like(lp)).sum(1))
    return torch.cat(outs)


def response_logprobs(model, lang, *, prompts: Sequence[str] | None = None, grad: bool = False) -> Tensor:
    """Compute the exact log-probabilities of every response of an enumerable language.

    Only the response tokens count, restricted to the language's symbols; ``<eos>`` is implied by the
    grammar (fixed length), so each row sums to one in probability. The responses form a prefix tree, so the
    model runs once on each of the ``k^(L-1)`` length-``L-1`` prefixes, which exposes every node's next-token
    distribution; full-response log-probabilities are sums along the tree (``k`` times fewer rows than
    scoring every response).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM over the language's tokenizer.
    lang : icml24.data.text.EnumerableLanguage
        The language.
    prompts : sequence of str, optional
        The prompts to score (rows, in this order); all of ``lang.prompts()`` by default.
    grad : bool, default False
        Record gradients (for training); otherwise runs under ``torch.no_grad()``.

    Returns
    -------
    torch.Tensor
        Float tensor ``(P, R)``, columns in the order of ``lang.responses()``.
    """
    prompts = lang.prompts() if prompts is None else list(prompts)
    k, L, s0 = len(lang.symbols), lang.response_len, lang.response_start
    rows = []
    for p in prompts:
        seqs = lang.sequences(p)[::k, : s0 + L - 1]  # every prefix of length L-1 once (last symbol varies fastest)
        rows.append(seqs)
    ids = torch.cat(rows)
    ctx = torch.enable_grad() if grad else torch.no_grad()
    with ctx:
        logits = model(input_ids=ids).logits[:, s0 - 1 : s0 + L - 1, :]  # predicts response tokens 0..L-1
        node = torch.log_softmax(logits[..., lang.symbol_ids].float(), dim=-1)  # (P * k^(L-1), L, k)
        node = node.view(len(prompts), k ** (L - 1), L, k)
        grid = torch.tensor(list(itertools.product(range(k), repeat=L)))  # (k^L, L), order of lang.responses()
        row = torch.arange(k**L) // k
        lp = node[:, row.unsqueeze(1), torch.arange(L).unsqueeze(0), grid]  # (P, k^L, L)
        return lp.sum(-1)


def dpo_loss(
    policy_chosen_logp: Tensor,
    policy_rejected_logp: Tensor,
    ref_chosen_logp: Tensor,
    ref_rejected_logp: Tensor,
    beta: float = 0.1,
) -> Tensor:
    """TRL's sigmoid DPO loss, averaged over the pairs: ``-log sigmoid(beta [(log pi_w - log ref_w) - (log pi_l -
    log ref_l)])``; the reference terms carry no gradient.

    Parameters
    ----------
    policy_chosen_logp, policy_rejected_logp : torch.Tensor
        Sequence log-probabilities of the chosen / rejected responses under the policy, ``(pairs,)``, non-empty.
    ref_chosen_logp, ref_rejected_logp : torch.Tensor
        The same under the reference model.
    beta : float, default 0.1
        KL strength (> 0); TRL's default.

    Returns
    -------
    torch.Tensor
        Scalar loss.
    """
    from ..validation import check_float, check_tensor

    names = ("policy_chosen_logp", "policy_rejected_logp", "ref_chosen_logp", "ref_rejected_logp")
    ts = [
        check_tensor(t, n, ndim=1, allow_empty=False)
        for t, n in zip((policy_chosen_logp, policy_rejected_logp, ref_chosen_logp, ref_rejected_logp), names)
    ]
    for t, n in zip(ts[1:], names[1:]):
        if t.shape != ts[0].shape:
            raise InputError(f"{n} has shape {tuple(t.shape)}, expected {tuple(ts[0].shape)}")
    beta = check_float(beta, "beta", min_val=0.0, include_boundaries="neither")
    pc, pr, rc, rr = ts
    margin = (pc - rc.detach()) - (pr - rr.detach())
    return -torch.nn.functional.logsigmoid(beta * margin).mean()


def kl_divergence(logp: Tensor, logq: Tensor) -> Tensor:
    """Compute the exact ``KL(p || q)`` per row from log-probabilities over the same enumerated support.

    Parameters
    ----------
    logp, logq : torch.Tensor
        Log-probabilities ``(..., R)`` of ``p`` and ``q``, each summing to one in probability along the last
        dimension.

    Returns
    -------
    torch.Tensor
        Shape ``(...)``.
    """
    p = logp.exp()
    return (p * (logp - logq)).sum(-1)


def optimal_policy(ref_logp: Tensor, reward: Tensor, beta: float) -> Tensor:
    """Compute ``log pi*_beta = log pi_ref + r / beta - log Z``: the optimum of ``E[r] - beta KL(pi || pi_ref)``.

    Parameters
    ----------
    ref_logp : torch.Tensor
        Reference log-probabilities ``(P, R)`` (e.g. from :func:`response_logprobs`).
    reward : torch.Tensor
        Rewards ``(P, R)`` (e.g. ``SymbolReward.table``).
    beta : float
        KL weight (> 0).

    Returns
    -------
    torch.Tensor
        Float64 log-probabilities ``(P, R)``, normalised over the last dimension.

    Raises
    ------
    InputError
        If ``beta`` is not a positive finite number.
    """
    if not (isinstance(beta, (int, float)) and math.isfinite(beta) and beta > 0):
        raise InputError(f"beta must be a positive number, got {beta!r}")
    z = ref_logp.double() + reward.double() / beta
    return z - torch.logsumexp(z, dim=-1, keepdim=True)


# ----------------------------------------------------------------------------------------------- trainer
@dataclass
class TrainConfig:
    """nanoGPT-style training settings: AdamW, linear warm-up then cosine decay to ``min_lr``, clipping.

    Parameters
    ----------
    steps : int, default 500
        Optimiser steps.
    batch_size : int, default 32
        Sequences per step.
    lr : float, default 3e-3
        Peak learning rate.
    min_lr : float, default 3e-4
        Learning rate at the end of the cosine decay.
    warmup : int, default 20
        Steps of linear warm-up.
    weight_decay : float, default 0.01
        AdamW weight decay.
    betas : tuple of float, default (0.9, 0.95)
        AdamW betas.
    grad_clip : float, default 1.0
        Gradient-norm clipping threshold; 0 disables clipping.
    log_every : int, default 50
        Log the loss every this many steps; 0 disables logging.
    checkpoint_every : int, default 100
        Save a checkpoint every this many steps (when :func:`train_lm` is given a path).
    seed : int, default 0
        Seed of the data generator.
    """

    steps: int = 500
    batch_size: int = 32
    lr: float = 3e-3
    min_lr: float = 3e-4
    warmup: int = 20
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.95)
    grad_clip: float = 1.0
    log_every: int = 50
    checkpoint_every: int = 100
    seed: int = 0

    def lr_at(self, step: int) -> float:
        """Return the learning rate at a step: linear warm-up, then cosine decay to ``min_lr``.

        Parameters
        ----------
        step : int
            Zero-based step.

        Returns
        -------
        float
            ``lr * (step + 1) / warmup`` during warm-up, then ``min_lr`` plus the cosine-weighted gap; stays
            at ``min_lr`` after ``steps``.
        """
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        frac = (step - self.warmup) / max(1, self.steps - self.warmup)
        return self.min_lr + 0.5 * (1.0 + math.cos(math.pi * min(frac, 1.0))) * (self.lr - self.min_lr)


@dataclass
class TrainResult:
    """Outcome of :func:`train_lm`.

    Parameters
    ----------
    steps : int
        Steps completed (including those before a resume).
    losses : list of float
        Training loss at each step.
    seconds : float, default 0.0
        Wall-clock time of this call's training loop.
    resumed_from : int, default 0
        Step at which training resumed from a checkpoint (0 for a fresh start).
    """

    steps: int
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0
    resumed_from: int = 0


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


def train_lm(
    model,
    batch_fn: Callable[[torch.Generator, int], dict],
    config: TrainConfig | None = None,
    *,
    loss_fn: Callable | None = None,
    checkpoint: str | Path | None = None,
) -> TrainResult:
    """Train a causal LM (pretraining or SFT) on batches from ``batch_fn(generator, batch_size)``.

    The model is trained in place and left in eval mode.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM.
    batch_fn : callable
        ``batch_fn(generator, batch_size)`` returns a dict for the model (``input_ids``, optionally
        ``attention_mask``, ``labels``; -100 labels are ignored, as in Hugging Face), e.g. from
        :func:`corpus_batches` or :func:`language_batches`.
    config : TrainConfig, optional
        Training settings; ``TrainConfig()`` by default.  Batches are moved to the model's device.
    loss_fn : callable, optional
        ``loss_fn(model, batch) -> loss``; the model's own causal-LM loss by default.
    checkpoint : str or pathlib.Path, optional
        When given, the model, optimizer, step, losses and the data generator's state are saved atomically
        every ``checkpoint_every`` steps and at the end; a later call with the same path resumes where it
        stopped (and returns at once when training is already complete).

    Returns
    -------
    TrainResult
        Steps done, per-step losses, wall-clock seconds and the step resumed from.

    Raises
    ------
    InputError
        If ``steps < 0`` or ``batch_size < 1``, the checkpoint was written with another ``TrainConfig``, or
        the loss becomes non-finite.
    """
    cfg = config or TrainConfig()
    if cfg.steps < 0 or cfg.batch_size < 1:
        raise InputError("steps must be >= 0 and batch_size >= 1")
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)
    gen = torch.Generator().manual_seed(cfg.seed)
    res = TrainResult(steps=0)
    path = Path(checkpoint) if checkpoint is not None else None
    if path is not None and path.is_file():
        state = torch.load(path, map_location="cpu", weights_only=True)
        if state.get("config") != _cfg_dict(cfg):
            raise InputError(
                f"checkpoint {path} was written with another TrainConfig", "delete it or train with the same settings"
            )
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        gen.set_state(state["generator"])
        res.steps, res.losses, res.resumed_from = int(state["step"]), list(state["losses"]), int(state["step"])
    t0 = time.perf_counter()
    device = model_device(model)
    model.train()
    for step in range(res.steps, cfg.steps):
        for g in opt.param_groups:
            g["lr"] = cfg.lr_at(step)
        batch = batch_to(batch_fn(gen, cfg.batch_size), device)
        loss = loss_fn(model, batch) if loss_fn is not None else model(**batch).loss
        if not torch.isfinite(loss):
            raise InputError(f"the training loss became {float(loss)} at step {step}", "lower the learning rate")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        res.losses.append(float(loss.detach()))
        res.steps = step + 1
        if cfg.log_every and res.steps % cfg.log_every == 0:
            log.info("step %d loss %.4f", res.steps, res.losses[-1])
        if path is not None and (res.steps % cfg.checkpoint_every == 0 or res.steps == cfg.steps):
            _save_checkpoint(path, model, opt, gen, res, cfg)
    model.eval()
    res.seconds = time.perf_counter() - t0
    if path is not None and res.steps == cfg.steps and res.resumed_from < cfg.steps and not path.is_file():
        _save_checkpoint(path, model, opt, gen, res, cfg)
    return res


def _cfg_dict(cfg: TrainConfig) -> dict:
    d = asdict(cfg)
    d["betas"] = list(d["betas"])
    return d


def _save_checkpoint(path: Path, model, opt, gen, res: TrainResult, cfg: TrainConfig) -> None:
    buf = io.BytesIO()
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "generator": gen.get_state(),
            "step": res.steps,
            "losses": res.losses,
            "config": _cfg_dict(cfg),
        },
        buf,
    )
    atomic_write_bytes(path, buf.getvalue())


def corpus_batches(token_ids: Tensor, block_size: int) -> Callable[[torch.Generator, int], dict]:
    """Make a batch function drawing random contiguous blocks of a token stream (nanoGPT's ``get_batch``).

    Parameters
    ----------
    token_ids : torch.Tensor
        A 1-D token stream longer than ``block_size + 1``.
    block_size : int
        Tokens per sequence.

    Returns
    -------
    callable
        ``batch(generator, batch_size) -> {"input_ids": x, "labels": x}`` with ``x`` of shape
        ``(batch_size, block_size)``, for :func:`train_lm`.

    Raises
    ------
    InputError
        If ``token_ids`` is not 1-D or not longer than ``block_size + 1``.
    """
    if token_ids.dim() != 1 or token_ids.numel() <= block_size + 1:
        raise InputError(f"need a 1-D token stream longer than block_size + 1 = {block_size + 1}")

    def batch(gen: torch.Generator, bs: int) -> dict:
        ix = torch.randint(token_ids.numel() - block_size - 1, (bs,), generator=gen)
        x = torch.stack([token_ids[i : i + block_size] for i in ix.tolist()])
        return {"input_ids": x, "labels": x}

    return batch


def language_batches(lang, response_only: bool = False) -> Callable[[torch.Generator, int], dict]:
    """Make a batch function for SFT batches sampled from an enumerable language's ground-truth process.

    Parameters
    ----------
    lang : icml24.data.text.EnumerableLanguage
        The language (:meth:`~icml24.data.text.EnumerableLanguage.sample` draws the sequences).
    response_only : bool, default False
        Set the labels of the prompt part (``<bos> prompt <sep>``) to -100, so only the response and
        ``<eos>`` are learned.

    Returns
    -------
    callable
        ``batch(generator, batch_size) -> {"input_ids": x, "labels": labels}``, for :func:`train_lm`.
    """

    def batch(gen: torch.Generator, bs: int) -> dict:
        x = lang.sample(bs, gen)
        labels = x.clone()
        if response_only:
            labels[:, : lang.response_start] = -100
        return {"input_ids": x, "labels": labels}

    return batch


def sft_on_language(lang, steps: int, *, seed: int) -> torch.nn.Module:
    """Train the tiny GPT-2 (2 layers, width 64) that dera and brain use as their SFT model on an enumerable
    language: responses sampled from the language's ground-truth process, batches of 64, lr 3e-3 decaying to 3e-4.

    Parameters
    ----------
    lang : icml24.data.text.EnumerableLanguage
        The language; its tokenizer and vocabulary size shape the model.
    steps : int
        SFT steps.
    seed : int
        Seeds the model's initialisation and its training.

    Returns
    -------
    torch.nn.Module
        The trained model (a ``transformers`` GPT-2), in train mode.
    """
    steps = check_int(steps, "steps", min_val=1)
    model = tiny_gpt2(
        lang.vocab_size, n_positions=16, n_embd=64, n_layer=2, n_head=4, tokenizer=lang.tokenizer, seed=seed
    )
    train_lm(
        model,
        language_batches(lang, response_only=True),
        TrainConfig(steps=steps, batch_size=64, lr=3e-3, min_lr=3e-4, log_every=0, seed=seed),
    )
    return model


# ----------------------------------------------------------------------------------- exact alignment
@dataclass
class AlignResult:
    """Outcome of :func:`align_exact`.

    Parameters
    ----------
    beta : float
        The KL weight.
    steps : int
        Steps taken.
    kl_to_optimum : float
        Mean over prompts of ``KL(pi_theta || pi*_beta)`` at the end.
    seconds : float
        Wall-clock time of the training loop.
    history : list of float
        The loss (mean KL to the optimum over the step's prompts) at each step.
    """

    beta: float
    steps: int
    kl_to_optimum: float  # mean over prompts of KL(pi_theta || pi*_beta) at the end
    seconds: float
    history: list[float] = field(default_factory=list)


def align_exact(
    policy,
    lang,
    ref_logp: Tensor,
    reward: Tensor,
    beta: float,
    *,
    steps: int = 300,
    lr: float = 3e-3,
    prompts_per_step: int | None = None,
    seed: int = 0,
) -> AlignResult:
    """Align a policy on an enumerable language to the exact KL-regularised optimum ``pi_ref exp(r/beta) / Z``.

    Maximising ``E_pi[r] - beta KL(pi || pi_ref)`` equals minimising ``beta KL(pi || pi*_beta)`` (up to a
    constant), so each step takes the exact gradient of the reverse KL to ``pi*_beta`` over every response of
    the chosen prompts: exact policy gradient, no sampling. Adam with cosine decay; trains in place and
    leaves the policy in eval mode.

    Parameters
    ----------
    policy : transformers.PreTrainedModel
        The causal LM to train.
    lang : icml24.data.text.EnumerableLanguage
        The language.
    ref_logp : torch.Tensor
        Reference log-probabilities, a ``(P, R)`` table (:func:`response_logprobs`).
    reward : torch.Tensor
        Rewards, a ``(P, R)`` table (``SymbolReward.table``).
    beta : float
        KL weight (> 0).
    steps : int, default 300
        Optimiser steps.
    lr : float, default 3e-3
        Peak learning rate (warm-up over ``min(10, steps)`` steps, cosine decay to ``lr / 10``).
    prompts_per_step : int, optional
        Prompts drawn (without replacement) per step; all prompts by default.
    seed : int, default 0
        Seed of the prompt draws.

    Returns
    -------
    AlignResult
        The final mean KL to the optimum, the per-step losses and the time taken.

    Raises
    ------
    InputError
        If ``ref_logp`` and ``reward`` differ in shape or ``beta`` is not positive.
    """
    if ref_logp.shape != reward.shape:
        raise InputError(f"ref_logp {tuple(ref_logp.shape)} and reward {tuple(reward.shape)} differ in shape")
    target = optimal_policy(ref_logp, reward, beta).float()
    prompts = lang.prompts()
    P = len(prompts)
    k = prompts_per_step or P
    cfg = TrainConfig(steps=steps, lr=lr, min_lr=lr / 10, warmup=min(10, steps), weight_decay=0.0, seed=seed)
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    hist = []
    t0 = time.perf_counter()
    policy.train()
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = cfg.lr_at(step)
        idx = torch.randperm(P, generator=gen)[:k] if k < P else torch.arange(P)
        logp = response_logprobs(policy, lang, prompts=[prompts[i] for i in idx], grad=True)
        loss = kl_divergence(logp, target[idx]).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        hist.append(float(loss.detach()))
    policy.eval()
    final = float(kl_divergence(response_logprobs(policy, lang).double(), target.double()).mean())
    return AlignResult(beta, steps, final, time.perf_counter() - t0, hist)


__all__ = [
    "tiny_gpt2",
    "tiny_llama",
    "vocab_size_of",
    "model_device",
    "batch_to",
    "token_logprobs",
    "sequence_logprobs",
    "response_logprobs",
    "kl_divergence",
    "optimal_policy",
    "TrainConfig",
    "TrainResult",
    "train_lm",
    "corpus_batches",
    "language_batches",
    "align_exact",
    "AlignResult",
]
