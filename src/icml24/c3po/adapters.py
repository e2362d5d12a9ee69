"""LoRA adapters for C3PO and their composition: the layers LoRA adapts, a fresh adapter on a copy of the model,
saving one adapter per feedback, and serving several feedbacks from one base model (mixed weights or logits)."""

from __future__ import annotations

import contextlib
import copy
import os
from typing import Iterable, Sequence

import torch
from torch import Tensor

from ..errors import InputError
from ..extras import require
from ..nn.decoding import cache_keyword, decode, model_step
from ..nn.lm_models import vocab_size_of
from ..validation import check_choice, check_float, check_tensor, check_torch_generator
from .config import C3POConfig, check_config
from .feedback import check_texts


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
        if name and isinstance(mod, (torch.nn.Linear, Conv1D)) and mod is not head:
            names.add(name.split(".")[-1])
    return sorted(names)


def check_base_model(model, name: str = "model") -> None:
    """Refuse what is not a base causal LM: not a ``torch.nn.Module``, without an output head, or a PEFT model.

    Parameters
    ----------
    model : object
    name : str, default "model"
    """
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "get_output_embeddings"):
        raise InputError(f"{name} must be a Hugging Face causal LM, got {type(model).__name__}")
    if hasattr(model, "peft_config"):
        raise InputError(f"{name} must be the base model, not a PEFT model", "pass the model the adapters were made on")


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
    cfg = check_config(config)
    require("peft", extra="lm", what="c3po")
    from peft import LoraConfig, get_peft_model

    check_base_model(model)
    present = linear_module_names(model)
    if not present:
        raise InputError("model has no linear layer for LoRA to adapt (its output head aside)")
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


def save_adapter(model, path) -> None:
    """Save a trained LoRA adapter (safetensors) to a folder, one folder per feedback.

    Parameters
    ----------
    model : peft.PeftModel
        The adapted model (``FeedbackResult.model``).
    path : str or pathlib.Path
        The folder (created; an existing folder's adapter files are replaced).
    """
    if not hasattr(model, "save_pretrained") or not hasattr(model, "peft_config"):
        raise InputError(f"model must be a PEFT model, got {type(model).__name__}")
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise InputError(f"path must be a folder name (str or pathlib.Path), got {path!r:.60}")
    if os.path.exists(path) and not os.path.isdir(path):
        raise InputError(f"path {str(path)!r} is a file, not a folder")
    model.save_pretrained(str(path), safe_serialization=True)


COMPOSE_MODES = ("weights", "logits")


@contextlib.contextmanager
def keeping_adapter_state(model):
    """Give back a model's parameters' ``requires_grad`` (and a PEFT model's active adapter) on leaving, failure
    included: PEFT's ``set_adapter`` and the end of ``disable_adapter`` turn the active adapter's ``requires_grad`` on.

    Parameters
    ----------
    model : torch.nn.Module
    """
    active = model.active_adapter if hasattr(model, "peft_config") else None
    grads = [(p, p.requires_grad) for p in model.parameters()]
    try:
        yield
    finally:
        if active is not None:
            model.set_adapter(active)
        for p, g in grads:
            p.requires_grad_(g)


def _check_weights(weights, n: int) -> list[float]:
    """One finite weight per adapter."""
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Iterable):
        raise InputError(f"weights must be a list of numbers, got {type(weights).__name__}")
    w = [check_float(x, f"weights[{i}]") for i, x in enumerate(weights)]
    if len(w) != n:
        raise InputError(f"weights has {len(w)} entries for {n} adapters")
    return w


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
        if not isinstance(peft_model, torch.nn.Module) or not hasattr(peft_model, "peft_config"):
            raise InputError(f"peft_model must be a PEFT model, got {type(peft_model).__name__}")
        names = check_texts(names, "names")
        unknown = [n for n in names if n not in peft_model.peft_config]
        if unknown:
            raise InputError(
                f"names {unknown} are not adapters of peft_model", f"choose among {list(peft_model.peft_config)}"
            )
        weights = _check_weights(weights, len(names))
        super().__init__()
        self.peft_model = peft_model
        self.names = names
        self.weights = weights
        self.config = peft_model.config

    def _one(self, name, **kw):
        if name is None:
            with self.peft_model.disable_adapter():
                return self.peft_model(**kw)
        self.peft_model.set_adapter(name)
        return self.peft_model(**kw)

    def get_output_embeddings(self):
        """The output head shared by the base model and every adapter.

        Returns
        -------
        torch.nn.Module
        """
        return self.peft_model.get_output_embeddings()

    def _checked(self, input_ids, attention_mask) -> None:
        ids = check_tensor(input_ids, "input_ids", ndim=2, dtype="integer")
        vocab = vocab_size_of(self.peft_model)
        if bool(((ids < 0) | (ids >= vocab)).any()):
            raise InputError(f"input_ids must be token ids in [0, {vocab}), got {int(ids.min())}..{int(ids.max())}")
        if attention_mask is not None:
            check_tensor(attention_mask, "attention_mask", shape=tuple(ids.shape), dtype="any")

    def _kept(self):
        return keeping_adapter_state(self.peft_model)

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

        self._checked(input_ids, attention_mask)
        kw = dict(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        with self._kept():
            base = self._one(None, **kw).logits
            out = base.clone()
            for name, w in zip(self.names, self.weights):
                out = out + w * (self._one(name, **kw).logits - base)
        return CausalLMOutput(logits=out)

    @contextlib.contextmanager
    def disable_adapter(self):
        """Context manager in which the forward is the base model's alone (``PeftModel.disable_adapter``).

        Returns
        -------
        contextlib.AbstractContextManager
        """
        with self._kept(), self.peft_model.disable_adapter():
            yield

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
        generator: torch.Generator | None = None,
        **others,
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
        generator : torch.Generator, optional
            The only source of randomness when sampling; None draws from torch's global generator (as
            ``model.generate`` does, so that :func:`~icml24.c3po.generate`'s ``seed`` governs it).
        **others
            Refused: the keywords of ``model.generate`` this decoder does not implement (``seed``,
            ``num_beams``, ...) raise :class:`~icml24.errors.InputError` rather than be ignored.

        Returns
        -------
        torch.Tensor
            ``(B, T + n)`` prompts followed by the new tokens.
        """
        if others:
            raise InputError(
                f"ComposedFeedback.generate does not take {', '.join(sorted(others))}",
                "use max_new_tokens, do_sample, temperature, top_p, pad_token_id, eos_token_id or generator",
            )
        generator = check_torch_generator(generator)
        self._checked(input_ids, attention_mask)
        keyword = cache_keyword(self.peft_model)  # renamed in transformers 5.x
        steps = [
            model_step(lambda arm=arm, **kw: self._one(arm, **kw), keyword=keyword) for arm in [None, *self.names]
        ]  # fmt: skip

        def composed(seq, mask, new):
            lg = [s(seq, mask, new).float() for s in steps]
            nxt = lg[0].clone()
            for w, l in zip(self.weights, lg[1:]):
                nxt = nxt + w * (l - lg[0])
            return nxt

        with self._kept():
            out = decode(
                composed,
                input_ids,
                attention_mask,
                max_new_tokens=max_new_tokens,
                do_sample=do_sample,
                temperature=temperature,
                top_p=top_p,
                generator=generator,
                eos_token_id=eos_token_id,
                pad_token_id=pad_token_id,
            )
        return out["input_ids"]


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
    check_base_model(model)
    if isinstance(adapters, (str, os.PathLike)) or not isinstance(adapters, Sequence) or len(adapters) < 1:
        raise InputError("adapters must be a non-empty list of PEFT models or folders")
    for a in adapters:
        if isinstance(a, (str, os.PathLike)):
            if not (Path(a) / "adapter_config.json").is_file():
                raise InputError(f"adapters: {a} holds no saved adapter", "write it with save_adapter()")
        elif not isinstance(a, torch.nn.Module) or not hasattr(a, "peft_config"):
            raise InputError(f"adapters must be PEFT models or folders, got {type(a).__name__}")
        elif vocab_size_of(a) != vocab_size_of(model):
            raise InputError(
                f"adapters: an adapter's model has {vocab_size_of(a)} tokens, model {vocab_size_of(model)}",
                "pass the model the adapters were trained on",
            )
    w = [1.0] * len(adapters) if weights is None else _check_weights(weights, len(adapters))
    names = [f"feedback_{i}" for i in range(len(adapters))]
    unfit = InputError("adapters do not fit the base model", "pass the model the adapters were trained on")
    composed = None
    for name, a in zip(names, adapters):
        try:
            if isinstance(a, (str, os.PathLike)):
                if composed is None:
                    composed = PeftModel.from_pretrained(copy.deepcopy(model), str(a), adapter_name=name)
                else:
                    composed.load_adapter(str(a), adapter_name=name)
                continue
            cfg = copy.deepcopy(a.peft_config[a.active_adapter])
            cfg.inference_mode = True
            if composed is None:
                composed = PeftModel(copy.deepcopy(model), cfg, adapter_name=name)
            else:
                composed.add_adapter(name, cfg)
            state = get_peft_model_state_dict(a, adapter_name=a.active_adapter)
            res = set_peft_model_state_dict(composed, state, adapter_name=name)
        except RuntimeError:  # torch's size mismatch on loading the adapter's weights
            raise unfit from None
        if getattr(res, "unexpected_keys", None):
            raise unfit
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


__all__ = ["COMPOSE_MODES", "ComposedFeedback", "add_lora", "compose_adapters", "linear_module_names", "save_adapter"]
