"""The training recipe of PanGu-pi Pro (official ``configs/LLM1B.py``) and multiple-round data selection.

:func:`train_on_batches` trains a causal LM on a fixed sequence of batches, one optimiser step per batch,
with AdamW (betas 0.9/0.95, eps 1e-8, weight decay 0.1), 3 % linear warm-up then cosine decay to a tenth of
the peak, gradient clipping at 1.0 (:func:`recipe`). Under ``torchrun`` (``torch.distributed`` initialised,
gloo on CPU, nccl on GPUs) the same call wraps the model in ``DistributedDataParallel`` and gives each process
its slice of every global batch: the loss and the update equal one process's on the same global batch.

Multiple-round training (official README): after a round, the frozen model scores every batch (mean loss
``l_i``), ``p_i = exp(l_i) / sum_j exp(l_j)`` (stabilised), and the next round trains on ``N_0`` batches drawn
without replacement with probability ``p`` (``torch.multinomial(p, N_0, replacement=False)``), ``N_0`` the
sampling rate times the number of batches (:func:`resample_batches`).
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field

import torch

from ..errors import InputError
from ..nn.lm import TrainConfig
from ..validation import check_choice, check_float, check_generator, check_int, check_tensor

SAMPLING = ("loss", "uniform")


def recipe(steps: int, *, lr: float = 1e-4, batch_size: int = 30) -> TrainConfig:
    """The official optimiser settings as a :class:`icml24.nn.lm.TrainConfig`.

    Parameters
    ----------
    steps : int
        Optimiser steps (one per batch).
    lr : float, default 1e-4
        Peak learning rate (the official continued-training value); cosine decay to ``lr / 10``.
    batch_size : int, default 30
        Sequences per global batch (the official 15 per micro-step x 2 micro-steps per GPU).

    Returns
    -------
    TrainConfig
        AdamW (0.9, 0.95), weight decay 0.1, warm-up ``ceil(0.03 * steps)``, clipping 1.0.
    """
    steps = check_int(steps, "steps", min_val=0)
    lr = check_float(lr, "lr", min_val=0.0, include_boundaries="neither")
    batch_size = check_int(batch_size, "batch_size", min_val=1)
    return TrainConfig(
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        min_lr=lr / 10,
        warmup=max(1, math.ceil(0.03 * steps)) if steps else 0,
        weight_decay=0.1,
        betas=(0.9, 0.95),
        grad_clip=1.0,
        log_every=0,
    )


@dataclass
class RoundResult:
    """Outcome of :func:`train_on_batches`.

    Parameters
    ----------
    losses : list of float
        Training loss of each step (averaged over processes under DDP).
    tokens_per_second : float
        Training throughput of this process group (global tokens per wall-clock second).
    seconds : float
        Wall-clock time of the loop.
    world_size : int
        Processes that trained.
    """

    losses: list = field(default_factory=list)
    tokens_per_second: float = 0.0
    seconds: float = 0.0
    world_size: int = 1


def check_batches(batches, name: str = "batches", vocab_size: int | None = None) -> torch.Tensor:
    """Validate a stack of token batches ``(n_batches, batch_size, seq_len)``.

    Parameters
    ----------
    batches : torch.Tensor
    name : str
    vocab_size : int, optional
        Ids must be below it.

    Returns
    -------
    torch.Tensor
    """
    b = check_tensor(batches, name, ndim=3, dtype="integer")
    if b.size(2) < 2:
        raise InputError(f"{name} need at least 2 tokens per sequence, got shape {tuple(b.shape)}")
    if int(b.min()) < 0 or (vocab_size is not None and int(b.max()) >= vocab_size):
        raise InputError(f"{name} hold token ids outside the model's vocabulary [0, {vocab_size})")
    return b


@contextlib.contextmanager
def _guarded(model, name: str, *, weights: bool = False, modes: bool = True):
    """Run a block that uses ``model`` on ``name``: torch's errors inside it become an InputError naming ``name``;
    on such a failure the model's modes (and, with ``weights``, its state) are restored; with ``modes`` also on
    success. Out-of-memory errors and interruptions pass through untouched (the training done so far is kept)."""
    kept = [(m, m.training) for m in model.modules()]
    saved = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()} if weights else None
    refused = False
    try:
        yield
    except torch.OutOfMemoryError:
        raise
    except InputError:
        refused = True
        raise
    except (IndexError, RuntimeError, ValueError) as exc:
        refused = True
        first = (str(exc).strip().splitlines() or [""])[0][:160]
        raise InputError(f"{name} do not fit the model: {type(exc).__name__}: {first}") from None
    finally:
        if saved is not None and refused:
            model.load_state_dict(saved)
        if modes or refused:
            for m, mode in kept:
                m.train(mode)


def _vocab(model) -> int:
    emb = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    if emb is None:
        raise InputError(f"model must be a transformers causal LM, got {type(model).__name__}")
    return emb.weight.shape[0]


def train_on_batches(model, batches: torch.Tensor, config: TrainConfig | None = None) -> RoundResult:
    """Train ``model`` in place on ``batches`` in order, one optimiser step per batch (the recipe's trainer).

    Under an initialised ``torch.distributed`` process group the model is wrapped in
    ``DistributedDataParallel`` and process ``r`` of ``w`` trains on rows ``r::w`` of each global batch (the
    batch size must divide by ``w``); run the same script with ``torchrun --nproc_per_node w``.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM; trained in place and left in eval mode.
    batches : torch.Tensor
        Token ids ``(n_batches, batch_size, seq_len)``; the labels are the inputs (causal LM).
    config : TrainConfig, optional
        :func:`recipe` settings; ``recipe(len(batches))`` by default. ``config.steps`` steps are run, cycling
        through the batches.

    Returns
    -------
    RoundResult
    """
    b = check_batches(batches, vocab_size=_vocab(model))
    cfg = config or recipe(b.size(0))
    if not isinstance(cfg, TrainConfig):
        raise InputError(f"config must be a TrainConfig, got {type(cfg).__name__}", "use tiny_lm.recipe(steps)")
    dist = torch.distributed if torch.distributed.is_available() and torch.distributed.is_initialized() else None
    world, rank = (dist.get_world_size(), dist.get_rank()) if dist else (1, 0)
    if b.size(1) % world:
        raise InputError(f"batches of {b.size(1)} sequences do not split over {world} processes")
    net = model
    if dist is not None:
        from torch.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=cfg.betas, eps=1e-8, weight_decay=cfg.weight_decay)
    res = RoundResult(world_size=world)
    with _guarded(model, "batches", weights=True, modes=False):
        model.train()
        t0 = time.perf_counter()
        tokens = 0
        for step in range(cfg.steps):
            for g in opt.param_groups:
                g["lr"] = cfg.lr_at(step)
            x = b[step % b.size(0)][rank::world]
            loss = net(input_ids=x, labels=x).loss
            if not torch.isfinite(loss):
                raise InputError(
                    f"the training loss became {loss.item()} at step {step} with config.lr = {cfg.lr:g}",
                    "lower the learning rate",
                )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.grad_clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            opt.step()
            val = loss.detach().clone()
            if dist is not None:
                dist.all_reduce(val)
                val /= world
            res.losses.append(float(val))
            tokens += b.size(1) * b.size(2)
    res.seconds = time.perf_counter() - t0
    res.tokens_per_second = tokens / max(res.seconds, 1e-9)
    model.eval()
    return res


@torch.no_grad()
def batch_losses(model, batches: torch.Tensor) -> torch.Tensor:
    """Mean causal-LM loss (nats per predicted token) of ``model`` on each batch, with the model frozen.

    Parameters
    ----------
    model : transformers.PreTrainedModel
    batches : torch.Tensor
        ``(n_batches, batch_size, seq_len)`` token ids.

    Returns
    -------
    torch.Tensor
        ``float64`` of shape ``(n_batches,)``.
    """
    b = check_batches(batches, vocab_size=_vocab(model))
    with _guarded(model, "batches"):
        model.eval()
        return torch.tensor([float(model(input_ids=x, labels=x).loss) for x in b], dtype=torch.float64)


def evaluate(model, blocks: torch.Tensor, *, batch_size: int = 16) -> float:
    """Mean causal-LM loss in nats per predicted token on held-out blocks ``(n, seq_len)``.

    Parameters
    ----------
    model : transformers.PreTrainedModel
    blocks : torch.Tensor
    batch_size : int, default 16

    Returns
    -------
    float
    """
    x = check_tensor(blocks, "blocks", ndim=2, dtype="integer")
    if x.size(1) < 2 or int(x.min()) < 0 or int(x.max()) >= _vocab(model):
        raise InputError(f"blocks must hold ids in [0, {_vocab(model)}) and at least 2 tokens per row")
    batch_size = check_int(batch_size, "batch_size", min_val=1)
    total = 0.0
    with _guarded(model, "blocks"), torch.no_grad():
        model.eval()
        for i in range(0, x.size(0), batch_size):
            chunk = x[i : i + batch_size]
            total += float(model(input_ids=chunk, labels=chunk).loss) * chunk.size(0)
    return total / x.size(0)


def sampling_probabilities(losses: torch.Tensor) -> torch.Tensor:
    """``p_i = exp(l_i) / sum_j exp(l_j)``, computed stably (the README's batch-sampling distribution).

    Parameters
    ----------
    losses : torch.Tensor
        1-D per-batch losses in nats.

    Returns
    -------
    torch.Tensor
        ``float64`` probabilities summing to 1.
    """
    x = check_tensor(losses, "losses", ndim=1).double()
    return torch.softmax(x - x.max(), dim=0)


def resample_batches(losses: torch.Tensor, rate: float, *, mode: str = "loss", seed=0) -> torch.Tensor:
    """Indices of the batches the next round trains on: ``round(rate * n)`` drawn without replacement.

    Parameters
    ----------
    losses : torch.Tensor
        1-D per-batch losses of the previous round's model (:func:`batch_losses`).
    rate : float
        Sampling rate in (0, 1]; the official recipe uses about 0.5.
    mode : {"loss", "uniform"}, default "loss"
        ``loss``: probabilities :func:`sampling_probabilities`; ``uniform``: all batches equally likely.
    seed : int or torch.Generator, default 0

    Returns
    -------
    torch.Tensor
        ``int64`` distinct indices in the order drawn (``torch.multinomial(p, N_0, replacement=False)``).
    """
    x = check_tensor(losses, "losses", ndim=1)
    rate = check_float(rate, "rate", min_val=0.0, max_val=1.0, include_boundaries="right")
    mode = check_choice(mode, "mode", SAMPLING)
    gen = seed if isinstance(seed, torch.Generator) else check_generator(seed)
    n0 = max(1, round(rate * x.numel()))
    p = sampling_probabilities(x) if mode == "loss" else torch.full((x.numel(),), 1.0 / x.numel(), dtype=torch.float64)
    return torch.multinomial(p, n0, replacement=False, generator=gen)


@torch.no_grad()
def greedy_decode_speed(model, prompt: torch.Tensor, new_tokens: int = 32) -> float:
    """Tokens per second of greedy decoding with the key/value cache (batch of ``prompt`` rows).

    Parameters
    ----------
    model : transformers.PreTrainedModel
    prompt : torch.Tensor
        ``(batch, prompt_len)`` token ids.
    new_tokens : int, default 32

    Returns
    -------
    float
        Generated tokens (all rows) per wall-clock second.
    """
    x = check_tensor(prompt, "prompt", ndim=2, dtype="integer")
    if int(x.min()) < 0 or int(x.max()) >= _vocab(model):
        raise InputError(f"prompt holds token ids outside [0, {_vocab(model)})")
    new_tokens = check_int(new_tokens, "new_tokens", min_val=1)
    with _guarded(model, "prompt and new_tokens"):
        model.eval()
        t0 = time.perf_counter()
        model.generate(
            input_ids=x,
            attention_mask=torch.ones_like(x),
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=False,
            pad_token_id=0,
        )
        return x.size(0) * new_tokens / (time.perf_counter() - t0)


__all__ = [
    "SAMPLING",
    "recipe",
    "RoundResult",
    "check_batches",
    "train_on_batches",
    "batch_losses",
    "evaluate",
    "sampling_probabilities",
    "resample_batches",
    "greedy_decode_speed",
]
