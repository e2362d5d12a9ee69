"""A compact nanoGPT-style trainer for causal LMs (pretraining or SFT) with atomic, resumable checkpoints, the batch
functions that feed it, and the tiny SFT model that dera and brain start from.
"""

from __future__ import annotations

import io
import logging
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import torch
from torch import Tensor

from ..errors import InputError
from ..runs import atomic_write_bytes
from ..validation import check_float, check_int
from .lm_models import batch_to, model_device, tiny_gpt2

log = logging.getLogger(__name__)


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

    Raises
    ------
    InputError
        At construction, naming the field: a negative or non-integer count, ``batch_size`` or
        ``checkpoint_every`` below 1, a learning rate that is not positive and finite, a negative or
        non-finite ``min_lr``, ``weight_decay`` or ``grad_clip``, or ``betas`` that are not two numbers in [0, 1).
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

    def __post_init__(self) -> None:
        ints = {"steps": 0, "batch_size": 1, "warmup": 0, "log_every": 0, "checkpoint_every": 1, "seed": 0}
        for name, low in ints.items():
            setattr(self, name, check_int(getattr(self, name), name, min_val=low))
        self.lr = check_float(self.lr, "lr", min_val=0.0, include_boundaries="neither")
        for name in ("min_lr", "weight_decay", "grad_clip"):
            setattr(self, name, check_float(getattr(self, name), name, min_val=0.0))
        b = self.betas
        if isinstance(b, (str, bytes)) or not hasattr(b, "__len__") or len(b) != 2:
            raise InputError(f"betas must be a pair of numbers in [0, 1), got {b!r}")
        self.betas = tuple(check_float(v, "betas", min_val=0.0, max_val=1.0, include_boundaries="left") for v in b)

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


__all__ = [
    "TrainConfig",
    "TrainResult",
    "train_lm",
    "corpus_batches",
    "language_batches",
    "sft_on_language",
]
