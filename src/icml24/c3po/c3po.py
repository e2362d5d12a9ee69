"""C3PO: DPO on in-scope preferences, constrained by the base model's own answers on near- and out-of-scope
prompts (official ``src/lcdpo.py``, ``LocallyConstrainedDPOTrainer``), on any Hugging Face causal LM with LoRA.

The objective of one training row (official ``compute_loss``)::

    L = L_DPO(x_in, y+ > y0) + sigma_hard * L_anchor(x_near, y0) + sigma_soft * L_anchor(x_out, y0)

with TRL's sigmoid DPO (``beta = 0.1``, the reference being the base model with the LoRA adapter disabled) and
``L_anchor = (1 - kd_lambda) * NLL + kd_lambda * T^2 * KL(teacher || student)`` over the completion tokens
(``kd_lambda = 0`` in the paper's main configuration: pure NLL of the base model's answers, a sample estimate of
the forward KL to it). ``sigma_hard`` weighs near-scope (``lambda_near``) and ``sigma_soft`` out-of-scope
(``lambda_out``) data.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field, replace
from typing import Sequence

import torch
from torch import Tensor

from ..errors import InputError
from ..extras import require
from ..nn.lm import dpo_loss, model_device, vocab_size_of
from ..validation import check_bool, check_choice, check_float, check_int, check_seed, check_tensor
from .feedback import Feedback, FeedbackData

METHODS = ("c3po", "dpo", "scd", "scd_negatives")
SFT_REDUCTIONS = ("token_mean", "sum")
IGNORE = -100


# ------------------------------------------------------------------------------------------------- losses
def completion_only_labels(input_ids: Sequence[int], response_template_ids: Sequence[int]) -> list[int]:
    """Mask every token up to and including the last occurrence of the response template (official
    ``get_completion_only_labels``, TRL's completion-only collator): only the answer is learned.

    Parameters
    ----------
    input_ids : sequence of int
        One tokenised prompt-and-answer.
    response_template_ids : sequence of int
        The tokens that end the prompt (e.g. ``[/INST]``, or ``<sep>`` in the assistant world).

    Returns
    -------
    list of int
        Labels: ``-100`` through the template's end, the token ids after it; all ``-100`` when the template is
        absent (the official code then ignores the row).
    """

    def ints(x, name: str) -> list[int]:
        if isinstance(x, Tensor):
            x = x.tolist()
        if isinstance(x, (str, bytes)) or not isinstance(x, Sequence) or not x:
            raise InputError(f"{name} must be a non-empty sequence of token ids, got {x!r}")
        if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in x):
            raise InputError(f"{name} must hold non-negative int token ids")
        return list(x)

    ids = ints(input_ids, "input_ids")
    tmpl = ints(response_template_ids, "response_template_ids")
    end = None
    for i in range(len(ids) - len(tmpl) + 1):
        if ids[i : i + len(tmpl)] == tmpl:
            end = i + len(tmpl)
    if end is None:
        return [IGNORE] * len(ids)
    return [IGNORE] * end + ids[end:]


def anchor_loss(
    logits: Tensor,
    labels: Tensor,
    *,
    teacher_logits: Tensor | None = None,
    kd_lambda: float = 0.0,
    kd_temperature: float = 5.0,
    use_avg_kl: bool = False,
    reduction: str = "token_mean",
) -> Tensor:
    """The anchor term of C3PO on near- or out-of-scope data (official ``compute_knowledge_distillation_loss``).

    ``(1 - kd_lambda) * NLL(labels) + kd_lambda * T^2 * KL(teacher_T || student_T)``, the KL summed over the
    completion positions of each sequence (averaged over them when ``use_avg_kl``) and averaged over the batch,
    at temperature ``T``. As in the official code, the KL mask is the attention mask times ``labels != -100``
    at the logits' own positions.

    Parameters
    ----------
    logits : torch.Tensor
        Student logits ``(B, T, V)``.
    labels : torch.Tensor
        ``(B, T)`` token ids with ``-100`` on ignored positions (prompt and padding).
    teacher_logits : torch.Tensor, optional
        Reference logits ``(B, T, V)``; required when ``kd_lambda > 0``.
    kd_lambda : float, default 0.0
        Weight of the distillation term in [0, 1] (official main configuration: 0; ``config_lcdpo_kl``: 1).
    kd_temperature : float, default 5.0
        Distillation temperature (official code default 5).
    use_avg_kl : bool, default False
        Average the KL over a sequence's positions instead of summing (official ``use_avg_kl``).
    reduction : {"token_mean", "sum"}, default "token_mean"
        NLL per sequence as the mean over its completion tokens (Hugging Face's loss with the official batch
        size 1) or their sum (official ``custom_sft_loss``), then averaged over the batch.

    Returns
    -------
    torch.Tensor
        Scalar loss.
    """
    logits = check_tensor(logits, "logits", ndim=3, allow_empty=False)
    labels = check_tensor(labels, "labels", ndim=2, dtype="integer")
    if labels.shape != logits.shape[:2]:
        raise InputError(f"labels has shape {tuple(labels.shape)}, expected {tuple(logits.shape[:2])}")
    kd_lambda = check_float(kd_lambda, "kd_lambda", min_val=0.0, max_val=1.0)
    kd_temperature = check_float(kd_temperature, "kd_temperature", min_val=0.0, include_boundaries="right")
    reduction = check_choice(reduction, "reduction", SFT_REDUCTIONS)
    use_avg_kl = check_bool(use_avg_kl, "use_avg_kl")
    tgt = labels[:, 1:]
    mask = tgt != IGNORE
    lp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, tgt.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    nll_tok = torch.where(mask, -lp, torch.zeros_like(lp))
    count = mask.sum(1)
    per_seq = nll_tok.sum(1)
    if reduction == "token_mean":
        per_seq = per_seq / count.clamp(min=1)
    nll = per_seq[count > 0].mean() if bool((count > 0).any()) else per_seq.sum() * 0.0
    if kd_lambda == 0.0:
        return nll
    if teacher_logits is None:
        raise InputError("teacher_logits is None but kd_lambda > 0", "pass the reference logits or kd_lambda=0")
    teacher_logits = check_tensor(teacher_logits, "teacher_logits", ndim=3)
    if teacher_logits.shape != logits.shape:
        raise InputError(f"teacher_logits has shape {tuple(teacher_logits.shape)}, expected {tuple(logits.shape)}")
    t = kd_temperature
    s_lp = torch.log_softmax(logits.float() / t, -1)
    t_lp = torch.log_softmax(teacher_logits.float() / t, -1)
    kl_tok = (t_lp.exp() * (t_lp - s_lp)).sum(-1) * (labels != IGNORE)
    kl = kl_tok.sum(-1)
    if use_avg_kl:
        kl = kl / (labels != IGNORE).sum(-1).clamp(min=1)
    return (1.0 - kd_lambda) * nll + kd_lambda * kl.mean() * t**2


def c3po_loss(
    policy_chosen_logp: Tensor,
    policy_rejected_logp: Tensor,
    ref_chosen_logp: Tensor,
    ref_rejected_logp: Tensor,
    near_loss: Tensor,
    out_loss: Tensor,
    *,
    beta: float = 0.1,
    lambda_near: float = 0.1,
    lambda_out: float = 0.2,
) -> Tensor:
    """The C3PO objective: ``L_DPO + lambda_near * L_near + lambda_out * L_out`` (official ``compute_loss``:
    ``dpo_loss + sigma_soft * kd_soft_loss + sigma_hard * kd_hard_loss``).

    Parameters
    ----------
    policy_chosen_logp, policy_rejected_logp, ref_chosen_logp, ref_rejected_logp : torch.Tensor
        As for :func:`dpo_loss`.
    near_loss, out_loss : torch.Tensor
        Scalar anchor losses (:func:`anchor_loss`) on near-scope and out-of-scope baseline answers.
    beta : float, default 0.1
        DPO's temperature.
    lambda_near : float, default 0.1
        Weight of the near-scope anchor (official ``sigma_hard``, main configuration 0.1).
    lambda_out : float, default 0.2
        Weight of the out-of-scope anchor (official ``sigma_soft``, main configuration 0.2).

    Returns
    -------
    torch.Tensor
        Scalar loss.
    """
    lambda_near = check_float(lambda_near, "lambda_near", min_val=0.0)
    lambda_out = check_float(lambda_out, "lambda_out", min_val=0.0)
    near_loss = check_tensor(near_loss, "near_loss", ndim=0)
    out_loss = check_tensor(out_loss, "out_loss", ndim=0)
    dpo = dpo_loss(policy_chosen_logp, policy_rejected_logp, ref_chosen_logp, ref_rejected_logp, beta=beta)
    return dpo + lambda_near * near_loss + lambda_out * out_loss


# ------------------------------------------------------------------------------------------------ config
@dataclass(frozen=True)
class C3POConfig:
    """Training settings of C3PO and its fine-tuned baselines; defaults mirror the official main configuration
    (``configs/config_lcdpo.json`` with Mistral-7B-Instruct-v0.2).

    Parameters
    ----------
    beta : float, default 0.1
        DPO temperature.
    lambda_near : float, default 0.1
        Near-scope anchor weight (official ``sigma_hard``).
    lambda_out : float, default 0.2
        Out-of-scope anchor weight (official ``sigma_soft``).
    kd_lambda : float, default 0.0
        Distillation share of the anchor terms (0: pure NLL, the main configuration; 1: pure KL).
    kd_temperature : float, default 5.0
        Distillation temperature (official code default).
    use_avg_kl : bool, default False
        Average the distillation KL over tokens.
    sft_reduction : {"token_mean", "sum"}, default "token_mean"
        NLL per sequence: token mean (Hugging Face) or sum (official ``custom_sft_loss``).
    lora_r, lora_alpha, lora_dropout : int, int, float, default 64, 128, 0.05
        LoRA rank, scale and dropout (official).
    target_modules : tuple of str, optional
        Module names LoRA adapts; every linear layer except the output head by default (official).
    lr : float, default 5e-5
        Peak learning rate (official), AdamW, cosine schedule with ``warmup_ratio`` linear warm-up.
    warmup_ratio : float, default 0.05
        Fraction of the steps spent warming up (official 5 %).
    weight_decay : float, default 0.0
        AdamW weight decay (Hugging Face default).
    grad_clip : float, default 1.0
        Gradient-norm clipping (Hugging Face default); 0 disables it.
    batch_size : int, default 16
        Rows per optimiser step (official: 1 per device x 16 accumulation steps).
    epochs : float, default 1.0
        Passes over the rows (official: 1).
    max_length, max_prompt_length : int, default 2048, 1024
        Truncation (official); prompts are cut from the left, answers from the right.
    prompt_template : str, optional
        How a prompt is shown to the model: ``"{prompt}"`` is replaced by the prompt. By default the tokenizer's
        chat template when it has one, else ``"<bos> {prompt} <sep>"`` with its own bos and sep tokens.
    seed : int, default 0
        Seeds the LoRA initialisation, the dropout and the row order.
    """

    beta: float = 0.1
    lambda_near: float = 0.1
    lambda_out: float = 0.2
    kd_lambda: float = 0.0
    kd_temperature: float = 5.0
    use_avg_kl: bool = False
    sft_reduction: str = "token_mean"
    lora_r: int = 64
    lora_alpha: int = 128
    lora_dropout: float = 0.05
    target_modules: tuple[str, ...] | None = None
    lr: float = 5e-5
    warmup_ratio: float = 0.05
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    batch_size: int = 16
    epochs: float = 1.0
    max_length: int = 2048
    max_prompt_length: int = 1024
    prompt_template: str | None = None
    seed: int = 0

    def validated(self) -> "C3POConfig":
        """Check every field and return the config.

        Returns
        -------
        C3POConfig
            ``self``.
        """
        check_float(self.beta, "beta", min_val=0.0, include_boundaries="right")
        check_float(self.lambda_near, "lambda_near", min_val=0.0)
        check_float(self.lambda_out, "lambda_out", min_val=0.0)
        check_float(self.kd_lambda, "kd_lambda", min_val=0.0, max_val=1.0)
        check_float(self.kd_temperature, "kd_temperature", min_val=0.0, include_boundaries="right")
        check_bool(self.use_avg_kl, "use_avg_kl")
        check_choice(self.sft_reduction, "sft_reduction", SFT_REDUCTIONS)
        check_int(self.lora_r, "lora_r", min_val=1)
        check_float(self.lora_alpha, "lora_alpha", min_val=0.0, include_boundaries="right")
        check_float(self.lora_dropout, "lora_dropout", min_val=0.0, max_val=1.0, include_boundaries="left")
        check_float(self.lr, "lr", min_val=0.0, include_boundaries="right")
        check_float(self.warmup_ratio, "warmup_ratio", min_val=0.0, max_val=1.0)
        check_float(self.weight_decay, "weight_decay", min_val=0.0)
        check_float(self.grad_clip, "grad_clip", min_val=0.0)
        check_int(self.batch_size, "batch_size", min_val=1)
        check_float(self.epochs, "epochs", min_val=0.0, include_boundaries="right")
        check_int(self.max_length, "max_length", min_val=2)
        check_int(self.max_prompt_length, "max_prompt_length", min_val=1)
        check_seed(self.seed)
        if self.target_modules is not None and (
            isinstance(self.target_modules, str)
            or not all(isinstance(m, str) and m for m in self.target_modules)
            or not self.target_modules
        ):
            raise InputError(f"target_modules must be a tuple of module names, got {self.target_modules!r}")
        if self.prompt_template is not None and (
            not isinstance(self.prompt_template, str) or "{prompt}" not in self.prompt_template
        ):
            raise InputError(f"prompt_template must contain '{{prompt}}', got {self.prompt_template!r}")
        return self


# -------------------------------------------------------------------------------------------- tokenising
def check_model_and_tokenizer(model, tokenizer) -> None:
    """Refuse a model that is not a causal LM or a tokenizer whose ids exceed the model's vocabulary.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM.
    tokenizer : transformers.PreTrainedTokenizerBase
        Its tokenizer.
    """
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "get_output_embeddings"):
        raise InputError(f"model must be a Hugging Face causal LM, got {type(model).__name__}")
    if not callable(tokenizer) or not hasattr(tokenizer, "decode") or not hasattr(tokenizer, "__len__"):
        raise InputError(f"tokenizer must be a Hugging Face tokenizer, got {type(tokenizer).__name__}")
    if len(tokenizer) > vocab_size_of(model):
        raise InputError(
            f"tokenizer has {len(tokenizer)} tokens but the model's vocabulary has {vocab_size_of(model)}",
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
    if template is not None:
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
    cfg = config or C3POConfig()
    if not isinstance(response, str):
        raise InputError(f"response must be a str, got {type(response).__name__}")
    p = tokenizer(format_prompt(tokenizer, prompt, cfg.prompt_template), add_special_tokens=False)["input_ids"]
    r = tokenizer(response, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    p = p[-cfg.max_prompt_length :]
    r = r[: max(1, cfg.max_length - len(p))]
    return p + r, [IGNORE] * len(p) + r


def _pad(seqs: list[tuple[list[int], list[int]]], pad_id: int, device=None) -> tuple[Tensor, Tensor, Tensor]:
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


def completion_logprobs(logits: Tensor, labels: Tensor) -> Tensor:
    """Sum of the log-probabilities of the labelled tokens per sequence (TRL's ``get_batch_logps``).

    Parameters
    ----------
    logits : torch.Tensor
        ``(B, T, V)``; position ``t`` predicts token ``t + 1``.
    labels : torch.Tensor
        ``(B, T)`` with ``-100`` where not scored.

    Returns
    -------
    torch.Tensor
        ``(B,)``.
    """
    logits = check_tensor(logits, "logits", ndim=3)
    labels = check_tensor(labels, "labels", ndim=2, dtype="integer")
    if labels.shape != logits.shape[:2]:
        raise InputError(f"labels has shape {tuple(labels.shape)}, expected {tuple(logits.shape[:2])}")
    tgt = labels[:, 1:]
    mask = tgt != IGNORE
    lp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, tgt.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return torch.where(mask, lp, torch.zeros_like(lp)).sum(1)


# -------------------------------------------------------------------------------------------------- LoRA
def linear_module_names(model) -> list[str]:
    """Return the leaf names of every linear layer except the output head (LoRA's default targets).

    Parameters
    ----------
    model : torch.nn.Module
        A causal LM (``nn.Linear`` layers, or transformers' ``Conv1D`` as in GPT-2).

    Returns
    -------
    list of str
        Sorted unique leaf names, e.g. ``["down_proj", "gate_proj", "k_proj", ...]``.
    """
    from transformers.pytorch_utils import Conv1D

    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    names = set()
    for name, mod in model.named_modules():
        if isinstance(mod, (torch.nn.Linear, Conv1D)) and mod is not head:
            names.add(name.split(".")[-1])
    return sorted(names)


def add_lora(model, config: C3POConfig | None = None):
    """Wrap a copy of ``model`` with a fresh LoRA adapter (PEFT); the user's model is left untouched.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The base causal LM.
    config : C3POConfig, optional
        ``lora_r``, ``lora_alpha``, ``lora_dropout``, ``target_modules`` and ``seed``.

    Returns
    -------
    peft.PeftModel
        The adapted copy, in eval mode; with ``disable_adapter()`` it is the base model exactly.
    """
    cfg = (config or C3POConfig()).validated()
    require("peft", extra="lm", what="c3po")
    from peft import LoraConfig, get_peft_model

    if not isinstance(model, torch.nn.Module):
        raise InputError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    present = linear_module_names(model)
    targets = list(cfg.target_modules) if cfg.target_modules is not None else present
    missing = [t for t in targets if t not in present]
    if missing or not targets:
        raise InputError(
            f"target_modules {missing or targets} are not linear layers of the model",
            f"choose among: {', '.join(present) or 'none'}",
        )
    lcfg = LoraConfig(
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=targets,
        bias="none",
        task_type="CAUSAL_LM",
    )
    base = copy.deepcopy(model)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        peft_model = get_peft_model(base, lcfg)
    return peft_model.eval()


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
    cfg = (config or C3POConfig()).validated()
    method = check_choice(method, "method", METHODS)
    check_model_and_tokenizer(model, tokenizer)
    rows = data.rows("train") if isinstance(data, FeedbackData) else list(data) if data is not None else []
    if not rows:
        raise InputError("data has no training rows", "build data with build_feedback_data() first")
    for r in rows:
        if not (isinstance(r, tuple) and len(r) == 3 and len(r[0]) == 3 and len(r[1]) == 2 and len(r[2]) == 2):
            raise InputError("data rows must be ((prompt, y0, y+), (prompt, y0), (prompt, y0))")
    n_steps = (
        math.ceil(cfg.epochs * len(rows) / cfg.batch_size) if steps is None else check_int(steps, "steps", min_val=1)
    )
    policy = add_lora(model, cfg)
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
    was = policy.training
    policy.eval()
    with torch.no_grad(), policy.disable_adapter():
        for seqs in (chosen, rejected):
            vals = []
            for lo in range(0, len(seqs), batch_size):
                ids, labels, mask = _pad(seqs[lo : lo + batch_size], pad_id, model_device(policy))
                vals.append(completion_logprobs(policy(input_ids=ids, attention_mask=mask).logits, labels))
            out.append(torch.cat(vals))
    policy.train(was)
    return out[0], out[1]


def _step_loss(policy, batch, idx, ref, method: str, cfg: C3POConfig, pad: int) -> Tensor:
    b = len(batch)
    if method == "scd":
        ids, labels, mask = _pad([e[0] for e in batch], pad, model_device(policy))
        return anchor_loss(policy(input_ids=ids, attention_mask=mask).logits, labels, reduction=cfg.sft_reduction)
    if method == "dpo":
        seqs = [e[0] for e in batch] + [e[1] for e in batch]
    else:  # c3po and scd_negatives: one forward over all parts of the rows
        head = [e[0] for e in batch] + ([e[1] for e in batch] if method == "c3po" else [])
        seqs = head + [e[2] for e in batch] + [e[3] for e in batch]
    ids, labels, mask = _pad(seqs, pad, model_device(policy))
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
    if isinstance(prompts, str) or not isinstance(prompts, Sequence) or not prompts:
        raise InputError("prompts must be a non-empty list of str", "pass at least one prompt")
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", min_val=1)
    temperature = check_float(temperature, "temperature", min_val=0.0, include_boundaries="right")
    top_p = check_float(top_p, "top_p", min_val=0.0, max_val=1.0, include_boundaries="right")
    do_sample = check_bool(do_sample, "do_sample")
    seed = check_seed(seed)
    batch_size = check_int(batch_size, "batch_size", min_val=1)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    texts = [format_prompt(tokenizer, p, prompt_template) for p in prompts]
    out: list[str] = []
    was = model.training
    model.eval()
    with torch.random.fork_rng(devices=[]), torch.no_grad():
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
    model.train(was)
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
    if len(responses) != len(baselines) or not responses:
        raise InputError(f"responses ({len(responses)}) and baselines ({len(baselines)}) must be equal and non-empty")
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
    if len(prompts) != len(responses) or not prompts:
        raise InputError(f"prompts ({len(prompts)}) and responses ({len(responses)}) must be equal and non-empty")
    if reference is None and not hasattr(policy, "disable_adapter"):
        raise InputError("reference is None and policy has no adapter to disable", "pass the reference model")
    cfg = C3POConfig(prompt_template=prompt_template)
    seqs = [encode(tokenizer, p, r, cfg) for p, r in zip(prompts, responses)]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    ids, labels, mask = _pad(seqs, pad, model_device(policy))
    with torch.no_grad():
        lp = torch.log_softmax(policy(input_ids=ids, attention_mask=mask).logits.double(), -1)
        if reference is None:
            with policy.disable_adapter():
                lq = torch.log_softmax(policy(input_ids=ids, attention_mask=mask).logits.double(), -1)
        else:
            lq = torch.log_softmax(reference(input_ids=ids, attention_mask=mask).logits.double(), -1)
    kl = (lp.exp() * (lp - lq)).sum(-1)[:, :-1]  # position t predicts token t + 1
    scored = labels[:, 1:] != IGNORE
    return torch.where(scored, kl, torch.zeros_like(kl)).sum(1).cpu()


# --------------------------------------------------------------------------------------------- adapters
def save_adapter(model, path) -> None:
    """Save a trained LoRA adapter (safetensors) to a folder, one folder per feedback.

    Parameters
    ----------
    model : peft.PeftModel
        The adapted model (``FeedbackResult.model``).
    path : str or pathlib.Path
        The folder.
    """
    if not hasattr(model, "save_pretrained") or not hasattr(model, "peft_config"):
        raise InputError(f"model must be a PEFT model, got {type(model).__name__}")
    model.save_pretrained(str(path), safe_serialization=True)


COMPOSE_MODES = ("weights", "logits")


class ComposedFeedback(torch.nn.Module):
    """Several feedback adapters served together in logit space: one base model carrying every adapter, and
    at each position ``logits = base + sum_i w_i (logits_i - base)`` (a product of experts relative to the base).

    Where each adapter leaves the base model's answers alone outside its own scope (what C3PO's anchor terms train
    for), the composition is the adapter that owns a prompt's scope and the base model elsewhere. Built by
    :func:`compose_adapters` with ``mode="logits"``; it costs one forward per adapter plus one of the base.

    Parameters
    ----------
    peft_model : peft.PeftModel
        The base model with the adapters loaded under ``names`` (owned by this object).
    names : sequence of str
        Adapter names.
    weights : sequence of float
        One weight per adapter.
    """

    def __init__(self, peft_model, names: Sequence[str], weights: Sequence[float]):
        super().__init__()
        self.peft_model = peft_model
        self.names = list(names)
        self.weights = [float(w) for w in weights]
        self.config = peft_model.config

    def _one(self, name, **kw):
        if name is None:
            with self.peft_model.disable_adapter():
                return self.peft_model(**kw)
        self.peft_model.set_adapter(name)
        return self.peft_model(**kw)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, **kwargs):
        """Composed logits of a batch.

        Parameters
        ----------
        input_ids : torch.Tensor
            ``(B, T)`` token ids.
        attention_mask : torch.Tensor, optional
            ``(B, T)`` mask.
        **kwargs
            Passed to every forward (e.g. ``position_ids``).

        Returns
        -------
        transformers.modeling_outputs.CausalLMOutput
            ``.logits`` of shape ``(B, T, V)``.
        """
        from transformers.modeling_outputs import CausalLMOutput

        kw = dict(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        base = self._one(None, **kw).logits
        out = base.clone()
        for name, w in zip(self.names, self.weights):
            out = out + w * (self._one(name, **kw).logits - base)
        return CausalLMOutput(logits=out)

    def disable_adapter(self):
        """Context manager in which the forward is the base model's alone (``PeftModel.disable_adapter``).

        Returns
        -------
        contextlib.AbstractContextManager
        """
        return self.peft_model.disable_adapter()

    @torch.no_grad()
    def generate(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        *,
        max_new_tokens: int = 64,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_p: float = 1.0,
        pad_token_id: int | None = None,
        eos_token_id: int | None = None,
        **unused,
    ) -> Tensor:
        """Decode from the composed distribution, greedy or sampled (temperature, top-p by transformers'
        warpers), one KV cache per adapter and one for the base; left padding as ``model.generate``.

        Parameters
        ----------
        input_ids : torch.Tensor
            ``(B, T)`` prompts, left padded.
        attention_mask : torch.Tensor, optional
            ``(B, T)``; all ones by default.
        max_new_tokens : int, default 64
            Tokens to add at most.
        do_sample : bool, default False
            Sample instead of taking the argmax.
        temperature, top_p : float, default 1.0
            Sampling settings.
        pad_token_id, eos_token_id : int, optional
            Rows that produced ``eos_token_id`` continue with ``pad_token_id``.
        **unused
            Other ``generate`` keywords, ignored.

        Returns
        -------
        torch.Tensor
            ``(B, T + n)`` prompts followed by the new tokens.
        """
        from transformers import DynamicCache
        from transformers.generation.logits_process import TemperatureLogitsWarper, TopPLogitsWarper

        ids = input_ids
        mask = torch.ones_like(ids) if attention_mask is None else attention_mask.to(ids.dtype)
        pad = eos_token_id if pad_token_id is None else pad_token_id
        import inspect

        arms = [None, *self.names]
        caches = [DynamicCache() for _ in arms]
        params = inspect.signature(self.peft_model.get_base_model().forward).parameters
        cache_kw = "cache" if "cache" in params else "past_key_values"  # renamed in transformers 5.x
        done = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
        step_ids, pos = ids, (mask.cumsum(-1) - 1).clamp(min=0)
        warpers = [TemperatureLogitsWarper(temperature)] if do_sample and temperature != 1.0 else []
        if do_sample and top_p < 1.0:
            warpers.append(TopPLogitsWarper(top_p))
        for _ in range(max_new_tokens):
            lg = []
            for arm, cache in zip(arms, caches):
                kw = {"input_ids": step_ids, "attention_mask": mask, "position_ids": pos, cache_kw: cache}
                out = self._one(arm, use_cache=True, **kw)
                lg.append(out.logits[:, -1].float())
            nxt = lg[0].clone()
            for w, l in zip(self.weights, lg[1:]):
                nxt = nxt + w * (l - lg[0])
            if do_sample:
                for warp in warpers:
                    nxt = warp(ids, nxt)
                tok = torch.multinomial(torch.softmax(nxt, -1), 1).squeeze(1)
            else:
                tok = nxt.argmax(-1)
            if pad is not None:
                tok = torch.where(done, torch.full_like(tok, pad), tok)
            ids = torch.cat([ids, tok[:, None]], 1)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
            step_ids, pos = tok[:, None], pos[:, -1:] + 1
            if eos_token_id is not None:
                done = done | (tok == eos_token_id)
                if bool(done.all()):
                    break
        return ids


def compose_adapters(
    model, adapters: Sequence, *, weights: Sequence[float] | None = None, mode: str = "weights"
):  # fmt: skip
    """Serve several feedbacks together from one copy of the base model.

    ``mode="weights"`` (default) sums the adapters' weight updates into one LoRA adapter (PEFT
    ``add_weighted_adapter`` with ``combination_type="cat"``, exact for any ranks): the paper's mixing of LoRA
    parameters. ``mode="logits"`` (not in the paper) adds the adapters' logit shifts to the base model's logits
    (:class:`ComposedFeedback`); measured on the assistant world (``icml24 verify c3po``), it keeps adherence less
    well than mixing, because an adapter's out-of-scope anchor (NLL on the base model's answers) sharpens the base
    distribution there rather than leaving it alone, and that shift opposes the other feedback.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The base model the adapters were trained on (not modified).
    adapters : sequence of peft.PeftModel or path
        Trained adapted models (:class:`FeedbackResult` ``.model``) or folders written by :func:`save_adapter`.
    weights : sequence of float, optional
        One weight per adapter; all 1 by default.
    mode : {"weights", "logits"}, default "weights"
        Where the adapters are combined.

    Returns
    -------
    peft.PeftModel or ComposedFeedback
        ``mode="weights"``: the PEFT model, its active adapter ``"composed"``; ``mode="logits"``: a module with
        ``forward``, ``generate`` and ``disable_adapter`` like a PEFT model.
    """
    require("peft", extra="lm", what="c3po")
    from pathlib import Path

    from peft import PeftModel, get_peft_model_state_dict, set_peft_model_state_dict

    mode = check_choice(mode, "mode", COMPOSE_MODES)
    if isinstance(adapters, (str, Path)) or not isinstance(adapters, Sequence) or len(adapters) < 1:
        raise InputError("adapters must be a non-empty list of PEFT models or folders")
    w = [1.0] * len(adapters) if weights is None else [check_float(x, "weights") for x in weights]
    if len(w) != len(adapters):
        raise InputError(f"weights has {len(w)} entries for {len(adapters)} adapters")
    if not isinstance(model, torch.nn.Module) or hasattr(model, "peft_config"):
        raise InputError("model must be the base model (not a PEFT model)", "pass the model the adapters were made on")
    names = [f"feedback_{i}" for i in range(len(adapters))]
    composed = None
    for name, a in zip(names, adapters):
        if isinstance(a, (str, Path)):
            if not (Path(a) / "adapter_config.json").is_file():
                raise InputError(f"adapters: {a} holds no saved adapter", "write it with save_adapter()")
            if composed is None:
                composed = PeftModel.from_pretrained(copy.deepcopy(model), str(a), adapter_name=name)
            else:
                composed.load_adapter(str(a), adapter_name=name)
            continue
        if not hasattr(a, "peft_config"):
            raise InputError(f"adapters must be PEFT models or folders, got {type(a).__name__}")
        cfg = copy.deepcopy(a.peft_config[a.active_adapter])
        cfg.inference_mode = True
        if composed is None:
            composed = PeftModel(copy.deepcopy(model), cfg, adapter_name=name)
        else:
            composed.add_adapter(name, cfg)
        state = get_peft_model_state_dict(a, adapter_name=a.active_adapter)
        res = set_peft_model_state_dict(composed, state, adapter_name=name)
        if getattr(res, "unexpected_keys", None):
            raise InputError("adapters do not fit the base model", "pass the model the adapters were trained on")
    for p in composed.parameters():
        p.requires_grad_(False)
    composed.eval()
    if mode == "logits":
        return ComposedFeedback(composed, names, w).eval()
    if len(names) == 1 and w[0] == 1.0:
        composed.set_adapter(names[0])
        return composed
    composed.add_weighted_adapter(names, w, "composed", combination_type="cat")
    composed.set_adapter("composed")
    return composed.eval()


def with_config(config: C3POConfig | None = None, **changes) -> C3POConfig:
    """Return a copy of a config with some fields changed (validated).

    Parameters
    ----------
    config : C3POConfig, optional
        The starting point; ``C3POConfig()`` by default.
    **changes
        Fields to change.

    Returns
    -------
    C3POConfig
    """
    base = config or C3POConfig()
    try:
        return replace(base, **changes).validated()
    except TypeError as e:
        raise InputError(f"with_config: {e}", "use the fields of C3POConfig") from None


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
