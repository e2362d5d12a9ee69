"""C3PO's trainer: DPO on in-scope preferences, constrained by the base model's own answers on near- and out-of-scope
prompts (official ``src/lcdpo.py``, ``LocallyConstrainedDPOTrainer``), on any Hugging Face causal LM with LoRA;
the fine-tuned baselines' objectives; generation and evaluation (feedback rates, sequence KL).

The objective's terms live in :mod:`~icml24.c3po.losses`, the settings in :mod:`~icml24.c3po.config`, prompt
encoding in :mod:`~icml24.c3po.encoding`, LoRA and composition in :mod:`~icml24.c3po.adapters`; their names stay
importable from here.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import Sequence

import torch
from torch import Tensor

from ..errors import InputError
from ..nn.alignment import dpo_loss
from ..nn.lm_models import model_device, vocab_size_of
from ..validation import check_bool, check_choice, check_float, check_int, check_seed
from .adapters import (  # noqa: F401 - importable from here as before
    COMPOSE_MODES,
    ComposedFeedback,
    add_lora,
    check_base_model,
    compose_adapters,
    keeping_adapter_state,
    linear_module_names,
    save_adapter,
)
from .config import (  # noqa: F401 - importable from here as before
    METHODS,
    C3POConfig,
    check_config,
    check_prompt_template,
    with_config,
)
from .encoding import check_model_and_tokenizer, encode, format_prompt, pad_batch
from .feedback import Feedback, FeedbackData, check_texts
from .losses import (  # noqa: F401 - importable from here as before
    IGNORE,
    SFT_REDUCTIONS,
    anchor_loss,
    c3po_loss,
    completion_logprobs,
    completion_only_labels,
)


# ----------------------------------------------------------------------------------------------- trainer
@dataclass
class FeedbackResult:
    """Outcome of :func:`train_feedback`.

    Parameters
    ----------
    model : peft.PeftModel
        The base model with the trained adapter (``disable_adapter()`` gives the base model).
    method : str
        ``"c3po"``, ``"dpo"``, ``"scd"`` or ``"scd_negatives"``.
    steps : int
        Optimiser steps taken.
    losses : list of float
        Loss at each step.
    seconds : float
        Wall-clock time of the training loop (reference log-probabilities included).
    """

    model: object
    method: str
    steps: int
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0


def train_feedback(
    model,
    tokenizer,
    data: FeedbackData | Sequence[tuple],
    *,
    method: str = "c3po",
    config: C3POConfig | None = None,
    steps: int | None = None,
) -> FeedbackResult:
    """Fine-tune a LoRA adapter on a copy of ``model`` from one feedback's data, by C3PO or a baseline.

    Each row bundles one in-scope pair ``(x, y0, y+)``, one near-scope and one out-of-scope ``(x, y0)``.
    ``"c3po"``: DPO (chosen ``y+``, rejected ``y0``, reference = the base with the adapter disabled, its
    log-probabilities computed once before training) plus ``lambda_near`` / ``lambda_out`` anchors on the
    base model's own near- and out-of-scope answers (:func:`c3po_loss`); ``"dpo"``: DPO on in-scope pairs only;
    ``"scd"``: supervised context distillation, NLL of ``y+`` on in-scope prompts; ``"scd_negatives"``: SCD plus
    the same weighted NLL anchors (official ``WeightedSFTTrainer``).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The base causal LM; never modified (a copy is adapted).
    tokenizer : transformers.PreTrainedTokenizerBase
        Its tokenizer (same vocabulary).
    data : FeedbackData or sequence of rows
        :class:`FeedbackData` (its ``rows("train")``) or the rows themselves.
    method : {"c3po", "dpo", "scd", "scd_negatives"}, default "c3po"
        The objective.
    config : C3POConfig, optional
        Settings; ``C3POConfig()`` (the official main configuration) by default.
    steps : int, optional
        Optimiser steps; ``ceil(epochs * rows / batch_size)`` by default.

    Returns
    -------
    FeedbackResult
    """
    cfg = check_config(config)
    method = check_choice(method, "method", METHODS)
    check_model_and_tokenizer(model, tokenizer)
    check_base_model(model)
    if isinstance(data, FeedbackData):
        rows = data.rows("train")
    elif isinstance(data, (list, tuple)):
        rows = list(data)
    else:
        raise InputError(f"data must be a FeedbackData or a list of rows, got {type(data).__name__}")
    if not rows:
        raise InputError("data has no training rows", "build data with build_feedback_data() first")
    if not all(_is_row(r) for r in rows):
        raise InputError("data rows must be ((prompt, y0, y+), (prompt, y0), (prompt, y0)) of str")
    n_steps = (
        math.ceil(cfg.epochs * len(rows) / cfg.batch_size) if steps is None else check_int(steps, "steps", min_val=1)
    )
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    enc = []
    for (pi, y0, y1), (pn, yn), (po, yo) in rows:
        enc.append(
            (
                encode(tokenizer, pi, y1, cfg),
                encode(tokenizer, pi, y0, cfg),
                encode(tokenizer, pn, yn, cfg),
                encode(tokenizer, po, yo, cfg),
            )
        )
    policy = add_lora(model, cfg)
    t0 = time.perf_counter()
    ref = None
    if method in ("c3po", "dpo"):
        ref = reference_logprobs(policy, [e[0] for e in enc], [e[1] for e in enc], pad)
    params = [p for p in policy.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    warm = int(math.ceil(cfg.warmup_ratio * n_steps))
    gen = torch.Generator().manual_seed(cfg.seed)
    order: list[int] = []
    losses = []
    policy.train()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        for step in range(n_steps):
            lr = (
                cfg.lr * (step + 1) / warm
                if step < warm
                else 0.5 * cfg.lr * (1 + math.cos(math.pi * (step - warm) / max(1, n_steps - warm)))
            )
            for g in opt.param_groups:
                g["lr"] = lr
            idx = []
            while len(idx) < min(cfg.batch_size, len(enc)):
                if not order:
                    order = torch.randperm(len(enc), generator=gen).tolist()
                idx.append(order.pop())
            loss = _step_loss(policy, [enc[i] for i in idx], idx, ref, method, cfg, pad)
            if not torch.isfinite(loss):
                raise InputError(f"the training loss became {float(loss)} at step {step}", "lower config.lr")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.grad_clip:
                torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            opt.step()
            losses.append(float(loss.detach()))
    policy.eval()
    return FeedbackResult(policy, method, n_steps, losses, time.perf_counter() - t0)


def _is_row(r) -> bool:
    """One training row: ``((prompt, y0, y+), (prompt, y0), (prompt, y0))`` of str."""
    return (
        isinstance(r, tuple)
        and len(r) == 3
        and all(
            isinstance(part, (tuple, list)) and len(part) == n and all(isinstance(t, str) for t in part)
            for part, n in zip(r, (3, 2, 2))
        )
    )


@contextlib.contextmanager
def _evaluating(*models):
    """Put the models in eval mode, and give each its own mode back on leaving, failure included."""
    modes = [(m, m.training) for m in models if m is not None]
    try:
        for m, _ in modes:
            m.eval()
        yield
    finally:
        for m, was in modes:
            m.train(was)


def reference_logprobs(policy, chosen, rejected, pad_id: int, batch_size: int = 64) -> tuple[Tensor, Tensor]:
    """Completion log-probabilities of chosen and rejected answers under the reference: the policy with its
    LoRA adapter disabled (TRL's ``precompute_ref_log_probs`` with ``ref_model=None``), without gradients.

    Parameters
    ----------
    policy : peft.PeftModel
        The adapted model.
    chosen, rejected : list of (list of int, list of int)
        Encoded ``(input_ids, labels)`` pairs (:func:`encode`).
    pad_id : int
        Padding token id.
    batch_size : int, default 64
        Sequences per forward pass.

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        ``(N,)`` each.
    """
    if not hasattr(policy, "disable_adapter"):
        raise InputError("policy must be a PEFT model (add_lora)", "wrap the model with add_lora() first")
    out = []
    with _evaluating(policy), torch.no_grad(), policy.disable_adapter():
        for seqs in (chosen, rejected):
            vals = []
            for lo in range(0, len(seqs), batch_size):
                ids, labels, mask = pad_batch(seqs[lo : lo + batch_size], pad_id, model_device(policy))
                vals.append(completion_logprobs(policy(input_ids=ids, attention_mask=mask).logits, labels))
            out.append(torch.cat(vals))
    return out[0], out[1]


def _step_loss(policy, batch, idx, ref, method: str, cfg: C3POConfig, pad: int) -> Tensor:
    b = len(batch)
    if method == "scd":
        ids, labels, mask = pad_batch([e[0] for e in batch], pad, model_device(policy))
        return anchor_loss(policy(input_ids=ids, attention_mask=mask).logits, labels, reduction=cfg.sft_reduction)
    if method == "dpo":
        seqs = [e[0] for e in batch] + [e[1] for e in batch]
    else:  # c3po and scd_negatives: one forward over all parts of the rows
        head = [e[0] for e in batch] + ([e[1] for e in batch] if method == "c3po" else [])
        seqs = head + [e[2] for e in batch] + [e[3] for e in batch]
    ids, labels, mask = pad_batch(seqs, pad, model_device(policy))
    logits = policy(input_ids=ids, attention_mask=mask).logits
    k = 2 * b if method in ("c3po", "dpo") else b
    teacher = None
    if method != "dpo" and cfg.kd_lambda > 0:
        with torch.no_grad(), policy.disable_adapter():
            teacher = policy(input_ids=ids[k:], attention_mask=mask[k:]).logits

    def anchor(lo: int, hi: int) -> Tensor:
        lab = labels[lo:hi].masked_fill(mask[lo:hi] == 0, IGNORE)
        t = None if teacher is None else teacher[lo - k : hi - k]
        return anchor_loss(
            logits[lo:hi],
            lab,
            teacher_logits=t,
            kd_lambda=cfg.kd_lambda,
            kd_temperature=cfg.kd_temperature,
            use_avg_kl=cfg.use_avg_kl,
            reduction=cfg.sft_reduction,
        )

    if method == "scd_negatives":
        sft = anchor_loss(logits[:b], labels[:b], reduction=cfg.sft_reduction)
        return sft + cfg.lambda_near * anchor(b, 2 * b) + cfg.lambda_out * anchor(2 * b, 3 * b)
    lp = completion_logprobs(logits[: 2 * b], labels[: 2 * b])
    rc, rr = ref[0][idx], ref[1][idx]
    if method == "dpo":
        return dpo_loss(lp[:b], lp[b:], rc, rr, beta=cfg.beta)
    return c3po_loss(
        lp[:b],
        lp[b:],
        rc,
        rr,
        anchor(2 * b, 3 * b),
        anchor(3 * b, 4 * b),
        beta=cfg.beta,
        lambda_near=cfg.lambda_near,
        lambda_out=cfg.lambda_out,
    )


def train_c3po(model, tokenizer, data, *, config: C3POConfig | None = None, steps: int | None = None):
    """Learn one feedback with C3PO (:func:`train_feedback` with ``method="c3po"``).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The base causal LM (not modified).
    tokenizer : transformers.PreTrainedTokenizerBase
        Its tokenizer.
    data : FeedbackData or sequence of rows
        The feedback's data.
    config : C3POConfig, optional
        Settings (official main configuration by default).
    steps : int, optional
        Optimiser steps (one epoch by default).

    Returns
    -------
    FeedbackResult
    """
    return train_feedback(model, tokenizer, data, method="c3po", config=config, steps=steps)


# ------------------------------------------------------------------------------------ generation and eval
def generate(
    model,
    tokenizer,
    prompts: Sequence[str],
    *,
    max_new_tokens: int = 64,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_p: float = 1.0,
    seed: int = 0,
    prompt_template: str | None = None,
    batch_size: int = 64,
) -> list[str]:
    """Answer prompts with a causal LM (``model.generate``, left padding), decoding only the new tokens.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM (a PEFT model included).
    tokenizer : transformers.PreTrainedTokenizerBase
        Its tokenizer.
    prompts : sequence of str
        Requests (non-empty).
    max_new_tokens : int, default 64
        Tokens to generate at most.
    do_sample : bool, default False
        Sample (``temperature``, ``top_p``) instead of greedy decoding.
    temperature, top_p : float, default 1.0
        Sampling settings (official data generation: 0.7 and 0.7).
    seed : int, default 0
        Seeds sampling (global RNG untouched).
    prompt_template : str, optional
        As :attr:`C3POConfig.prompt_template`.
    batch_size : int, default 64
        Prompts per ``generate`` call.

    Returns
    -------
    list of str
    """
    prompts = check_texts(prompts, "prompts")
    check_model_and_tokenizer(model, tokenizer)
    prompt_template = check_prompt_template(prompt_template)
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", min_val=1)
    temperature = check_float(temperature, "temperature", min_val=0.0, include_boundaries="right")
    top_p = check_float(top_p, "top_p", min_val=0.0, max_val=1.0, include_boundaries="right")
    do_sample = check_bool(do_sample, "do_sample")
    seed = check_seed(seed)
    batch_size = check_int(batch_size, "batch_size", min_val=1)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    texts = [format_prompt(tokenizer, p, prompt_template) for p in prompts]
    out: list[str] = []
    with _evaluating(model), torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        for lo in range(0, len(texts), batch_size):
            enc = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts[lo : lo + batch_size]]
            n = max(len(e) for e in enc)
            dev = model_device(model)
            ids = torch.tensor([[pad] * (n - len(e)) + e for e in enc], device=dev)
            mask = torch.tensor([[0] * (n - len(e)) + [1] * len(e) for e in enc], device=dev)
            kw = dict(do_sample=True, temperature=temperature, top_p=top_p) if do_sample else dict(do_sample=False)
            gen = model.generate(
                input_ids=ids,
                attention_mask=mask,
                max_new_tokens=max_new_tokens,
                pad_token_id=pad,
                eos_token_id=tokenizer.eos_token_id,
                **kw,
            )
            for row in gen[:, n:]:
                toks = row.tolist()
                if tokenizer.eos_token_id in toks:
                    toks = toks[: toks.index(tokenizer.eos_token_id)]
                out.append(tokenizer.decode(toks, skip_special_tokens=True).strip())
    return out


def feedback_rates(feedback: Feedback, responses: Sequence[str], baselines: Sequence[str]) -> float:
    """Fraction of responses that implement the feedback better than the baseline answers (official metric:
    adherence on in-scope prompts, overgeneralization on near- and out-of-scope prompts).

    Parameters
    ----------
    feedback : Feedback
        A quantitative feedback.
    responses : sequence of str
        The trained model's answers.
    baselines : sequence of str
        The base model's answers ``y0`` to the same prompts.

    Returns
    -------
    float
    """
    if not isinstance(feedback, Feedback):
        raise InputError(f"feedback must be a Feedback, got {type(feedback).__name__}")
    if feedback.metric is None:
        raise InputError("feedback has no metric: qualitative feedback needs a judge", "pass a quantitative Feedback")
    responses = check_texts(responses, "responses", allow_blank=True)
    baselines = check_texts(baselines, "baselines", allow_blank=True)
    if len(responses) != len(baselines):
        raise InputError(f"responses ({len(responses)}) and baselines ({len(baselines)}) must be equally many")
    return sum(feedback.improves(r, b) for r, b in zip(responses, baselines)) / len(responses)


def sequence_kl(
    policy,
    reference,
    tokenizer,
    prompts: Sequence[str],
    responses: Sequence[str],
    *,
    prompt_template: str | None = None,
) -> Tensor:
    """Exact per-token ``KL(pi_theta || pi_0)`` summed along each response (a sample estimate of the sequence
    KL when the responses are sampled from ``pi_theta``).

    Parameters
    ----------
    policy : transformers.PreTrainedModel
        ``pi_theta``.
    reference : transformers.PreTrainedModel or None
        ``pi_0``; ``None`` uses ``policy`` with its LoRA adapter disabled.
    tokenizer : transformers.PreTrainedTokenizerBase
        The shared tokenizer.
    prompts, responses : sequence of str
        Requests and answers, aligned.
    prompt_template : str, optional
        As :attr:`C3POConfig.prompt_template`.

    Returns
    -------
    torch.Tensor
        ``(N,)`` float64 KLs in nats.
    """
    prompts = check_texts(prompts, "prompts")
    responses = check_texts(responses, "responses", allow_blank=True)
    if len(prompts) != len(responses):
        raise InputError(f"prompts ({len(prompts)}) and responses ({len(responses)}) must be equally many")
    check_model_and_tokenizer(policy, tokenizer, "policy")
    if reference is None and not hasattr(policy, "disable_adapter"):
        raise InputError("reference is None and policy has no adapter to disable", "pass the reference model")
    if reference is not None:
        check_model_and_tokenizer(reference, tokenizer, "reference")
        if vocab_size_of(reference) != vocab_size_of(policy):
            raise InputError(f"reference has {vocab_size_of(reference)} tokens, policy {vocab_size_of(policy)}")
    cfg = C3POConfig(prompt_template=check_prompt_template(prompt_template))
    seqs = [encode(tokenizer, p, r, cfg) for p, r in zip(prompts, responses)]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    ids, labels, mask = pad_batch(seqs, pad, model_device(policy))
    with _evaluating(policy, reference), torch.no_grad():
        lp = torch.log_softmax(policy(input_ids=ids, attention_mask=mask).logits.double(), -1)
        if reference is None:
            with keeping_adapter_state(policy), policy.disable_adapter():
                lq = torch.log_softmax(policy(input_ids=ids, attention_mask=mask).logits.double(), -1)
        else:
            lq = torch.log_softmax(reference(input_ids=ids, attention_mask=mask).logits.double(), -1)
    kl = (lp.exp() * (lp - lq)).sum(-1)[:, :-1]  # position t predicts token t + 1
    scored = labels[:, 1:] != IGNORE
    return torch.where(scored, kl, torch.zeros_like(kl)).sum(1).cpu()


__all__ = [
    "METHODS",
    "COMPOSE_MODES",
    "C3POConfig",
    "ComposedFeedback",
    "FeedbackResult",
    "add_lora",
    "anchor_loss",
    "c3po_loss",
    "check_model_and_tokenizer",
    "completion_logprobs",
    "completion_only_labels",
    "compose_adapters",
    "dpo_loss",
    "encode",
    "feedback_rates",
    "format_prompt",
    "generate",
    "linear_module_names",
    "reference_logprobs",
    "save_adapter",
    "sequence_kl",
    "train_c3po",
    "train_feedback",
    "with_config",
]
