"""The settings of C3PO and its fine-tuned baselines (defaults: the official main configuration)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import InputError
from ..validation import check_bool, check_choice, check_float, check_int, check_seed
from .feedback import check_texts
from .losses import SFT_REDUCTIONS

METHODS = ("c3po", "dpo", "scd", "scd_negatives")


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

    Raises
    ------
    InputError
        At construction, naming the first field of the wrong type or out of range (``max_prompt_length`` must be
        below ``max_length``; ``prompt_template`` must contain ``{prompt}``).
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

    def __post_init__(self) -> None:
        self.validated()

    def validated(self) -> "C3POConfig":
        """Check every field (done at construction) and return the config.

        Returns
        -------
        C3POConfig
            ``self``, its ``sft_reduction`` spelled as in :data:`SFT_REDUCTIONS` and ``target_modules`` a tuple.

        Raises
        ------
        InputError
            Naming the first field that is out of range or of the wrong type.
        """
        positive = dict(min_val=0.0, include_boundaries="right")
        check_float(self.beta, "beta", **positive)
        check_float(self.lambda_near, "lambda_near", min_val=0.0)
        check_float(self.lambda_out, "lambda_out", min_val=0.0)
        check_float(self.kd_lambda, "kd_lambda", min_val=0.0, max_val=1.0)
        check_float(self.kd_temperature, "kd_temperature", **positive)
        check_bool(self.use_avg_kl, "use_avg_kl")
        object.__setattr__(self, "sft_reduction", check_choice(self.sft_reduction, "sft_reduction", SFT_REDUCTIONS))
        check_int(self.lora_r, "lora_r", min_val=1)
        check_float(self.lora_alpha, "lora_alpha", **positive)
        check_float(self.lora_dropout, "lora_dropout", min_val=0.0, max_val=1.0, include_boundaries="left")
        check_float(self.lr, "lr", **positive)
        check_float(self.warmup_ratio, "warmup_ratio", min_val=0.0, max_val=1.0)
        check_float(self.weight_decay, "weight_decay", min_val=0.0)
        check_float(self.grad_clip, "grad_clip", min_val=0.0)
        check_int(self.batch_size, "batch_size", min_val=1)
        check_float(self.epochs, "epochs", **positive)
        check_int(self.max_length, "max_length", min_val=2)
        check_int(self.max_prompt_length, "max_prompt_length", min_val=1, max_val=self.max_length - 1)
        check_seed(self.seed)
        if self.target_modules is not None:
            object.__setattr__(self, "target_modules", tuple(check_texts(self.target_modules, "target_modules")))
        check_prompt_template(self.prompt_template)
        return self


def check_config(config, name: str = "config") -> C3POConfig:
    """``config`` itself when it is a :class:`C3POConfig`, ``C3POConfig()`` for None; else a one-line InputError.

    Parameters
    ----------
    config : C3POConfig or None
    name : str, default "config"

    Returns
    -------
    C3POConfig
    """
    if config is None:
        return C3POConfig()
    if not isinstance(config, C3POConfig):
        raise InputError(f"{name} must be a C3POConfig or None, got {type(config).__name__}", "build C3POConfig(...)")
    return config


def check_prompt_template(template, name: str = "prompt_template") -> str | None:
    """A prompt template: None (the tokenizer's own) or a str containing ``{prompt}``.

    Parameters
    ----------
    template : str or None
    name : str, default "prompt_template"

    Returns
    -------
    str or None
    """
    if template is not None and (not isinstance(template, str) or "{prompt}" not in template):
        raise InputError(f"{name} must be None or a str containing '{{prompt}}', got {template!r}")
    return template


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
    base = check_config(config)
    try:
        return replace(base, **changes)
    except TypeError as e:
        raise InputError(f"with_config: {e}", "use the fields of C3POConfig") from None


__all__ = ["METHODS", "C3POConfig", "with_config"]
