"""The peers of C3PO in the paper: in-context feedback (with and without an applicability step), supervised
context distillation (SCD), SCD with negatives, and DPO on in-scope data only.

The fine-tuned peers share C3PO's trainer (:func:`icml24.c3po.train_feedback`), so all of them see the same
rows, LoRA settings and steps; only the objective differs.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from ..errors import InputError
from ..validation import check_bool
from .c3po import FeedbackResult, train_feedback
from .config import C3POConfig
from .feedback import Feedback, check_texts

IN_CONTEXT_TEMPLATE = "{prompt}\n\nIf applicable, apply the following feedback to your response: {feedback}"


def _check_feedback_and_template(feedback, template) -> None:
    if not isinstance(feedback, Feedback):
        raise InputError(f"feedback must be a Feedback, got {type(feedback).__name__}")
    if not isinstance(template, str) or "{prompt}" not in template or "{feedback}" not in template:
        raise InputError(f"template must contain {{prompt}} and {{feedback}}, got {template!r}")


def in_context_prompt(feedback: Feedback, prompt: str, template: str = IN_CONTEXT_TEMPLATE) -> str:
    """Put the feedback into the prompt (the paper's In-Context baseline).

    Parameters
    ----------
    feedback : Feedback
        The feedback.
    prompt : str
        The user's request.
    template : str
        Contains ``{prompt}`` and ``{feedback}``; the official wording ("If applicable, apply the following
        feedback") by default. The assistant world uses ``"feedback : {feedback} ; {prompt}"``, the prefix its
        base model was pretrained with.

    Returns
    -------
    str
    """
    _check_feedback_and_template(feedback, template)
    if not isinstance(prompt, str) or not prompt.strip():
        raise InputError(f"prompt must be a non-empty str, got {prompt!r}")
    return template.replace("{feedback}", feedback.content).replace("{prompt}", prompt)


def in_context_cot_prompts(
    feedback: Feedback,
    prompts: Sequence[str],
    applies: Callable[[Feedback, Sequence[str]], Sequence[bool]],
    template: str = IN_CONTEXT_TEMPLATE,
) -> list[str]:
    """The In-Context + CoT baseline: first decide whether the feedback applies to each prompt, then show it
    only where it does.

    Parameters
    ----------
    feedback : Feedback
        The feedback.
    prompts : sequence of str
        The requests.
    applies : callable
        ``applies(feedback, prompts) -> [bool]``: the applicability step (a model asked whether the feedback is
        relevant, or an oracle).
    template : str
        As :func:`in_context_prompt`.

    Returns
    -------
    list of str
        Each prompt with the feedback shown where ``applies`` said yes, unchanged elsewhere.
    """
    _check_feedback_and_template(feedback, template)
    prompts = check_texts(prompts, "prompts")
    if not callable(applies):
        raise InputError(f"applies must be callable, got {type(applies).__name__}")
    flags = applies(feedback, list(prompts))
    if isinstance(flags, (str, bytes)) or not isinstance(flags, Iterable):
        raise InputError(f"applies must return a list of bool, got {type(flags).__name__}")
    flags = [check_bool(f, f"applies(feedback, prompts)[{i}]") for i, f in enumerate(flags)]
    if len(flags) != len(prompts):
        raise InputError(f"applies returned {len(flags)} answers for {len(prompts)} prompts")
    return [in_context_prompt(feedback, p, template) if bool(f) else p for p, f in zip(prompts, flags)]


def train_dpo(model, tokenizer, data, *, config: C3POConfig | None = None, steps: int | None = None) -> FeedbackResult:
    """DPO on the in-scope pairs only (chosen ``y+``, rejected ``y0``; TRL's sigmoid loss, beta 0.1).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The base causal LM (not modified).
    tokenizer : transformers.PreTrainedTokenizerBase
        Its tokenizer.
    data : FeedbackData or sequence of rows
        The feedback's data (near- and out-of-scope parts unused).
    config : C3POConfig, optional
        Settings.
    steps : int, optional
        Optimiser steps.

    Returns
    -------
    FeedbackResult
    """
    return train_feedback(model, tokenizer, data, method="dpo", config=config, steps=steps)


def train_scd(model, tokenizer, data, *, config: C3POConfig | None = None, steps: int | None = None) -> FeedbackResult:
    """Supervised context distillation: NLL of the revised answers ``y+`` on in-scope prompts.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The base causal LM (not modified).
    tokenizer : transformers.PreTrainedTokenizerBase
        Its tokenizer.
    data : FeedbackData or sequence of rows
        The feedback's data.
    config : C3POConfig, optional
        Settings.
    steps : int, optional
        Optimiser steps.

    Returns
    -------
    FeedbackResult
    """
    return train_feedback(model, tokenizer, data, method="scd", config=config, steps=steps)


def train_scd_negatives(
    model, tokenizer, data, *, config: C3POConfig | None = None, steps: int | None = None
) -> FeedbackResult:
    """SCD + negatives (official ``WeightedSFTTrainer``): NLL of ``y+`` in scope plus ``lambda_near`` and
    ``lambda_out`` times the NLL of the base model's own answers near and out of scope.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The base causal LM (not modified).
    tokenizer : transformers.PreTrainedTokenizerBase
        Its tokenizer.
    data : FeedbackData or sequence of rows
        The feedback's data.
    config : C3POConfig, optional
        Settings.
    steps : int, optional
        Optimiser steps.

    Returns
    -------
    FeedbackResult
    """
    return train_feedback(model, tokenizer, data, method="scd_negatives", config=config, steps=steps)


__all__ = [
    "IN_CONTEXT_TEMPLATE",
    "in_context_prompt",
    "in_context_cot_prompts",
    "train_dpo",
    "train_scd",
    "train_scd_negatives",
]
