"""The DeRa model as one causal LM: mixed next-token log-probabilities from ``forward``, decoding from
:meth:`DeRa.generate` (a drop-in for a Hugging Face model, and for TRL's ``GeometricMixtureWrapper``)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..errors import InputError
from ..nn.lm_models import model_device
from ..validation import check_int
from .checks import check_lambda, check_mask, check_pair, check_positions, check_token_ids
from .mixture import mix
from .processors import eval_mode, positions


class DeRa(nn.Module):
    """The DeRa model as one causal LM: ``forward`` returns mixed next-token log-probs as ``.logits``, and
    :meth:`generate` decodes like a Hugging Face model's ``generate``.

    Use it wherever a model is scored (sequence log-likelihoods, exact distributions on an enumerable
    language, a lambda search) or decoded (a drop-in for TRL's ``GeometricMixtureWrapper``, whose
    ``mixture_coef`` is ``1 - lam``). Also exported as ``DeRaModel``. ``forward`` runs both models in eval
    mode and restores the modes they had; the models themselves are never modified.

    Parameters
    ----------
    aligned : transformers.PreTrainedModel
        The model aligned at KL strength ``beta``.
    ref : transformers.PreTrainedModel
        Its reference (SFT) model, with the same vocabulary.
    lam : float
        The realignment strength, >= 0: DeRa(``lam``) approximates the model aligned at ``beta / lam``.

    References
    ----------
    T. Liu et al. Decoding-time Realignment of Language Models. ICML 2024.
    """

    def __init__(self, aligned: nn.Module, ref: nn.Module, lam: float) -> None:
        lam = check_lambda(lam, "lam")
        vocab = check_pair(aligned, ref)
        super().__init__()
        self.vocab_size, self.lam = vocab, lam
        self.aligned, self.ref = aligned, ref

    def get_output_embeddings(self):
        """The aligned model's LM head (for vocabulary checks).

        Returns
        -------
        torch.nn.Module
        """
        return self.aligned.get_output_embeddings()

    @property
    def device(self) -> torch.device:
        """The aligned model's device.

        Returns
        -------
        torch.device
        """
        return model_device(self.aligned)

    @property
    def generation_config(self):
        """The aligned model's generation settings (defaults of :meth:`generate`).

        Returns
        -------
        transformers.GenerationConfig
        """
        return self.aligned.generation_config

    def generate(self, input_ids: Tensor | None = None, attention_mask: Tensor | None = None, **kwargs):
        """Decode from DeRa(``lam``) as from a causal LM: greedy, sampling, beam search, streaming.

        A drop-in for ``model.generate`` (and for TRL's ``GeometricMixtureWrapper.generate``): takes a
        ``generation_config`` and the usual settings, with transformers' defaults where a setting is not given
        (the aligned model's ``generation_config``, then ``do_sample=False``, ``temperature=1``, ``top_k=50``,
        ``top_p=1``, ``max_length=20``); ``streamer`` (e.g. a ``TextStreamer``), ``logits_processor`` and
        ``stopping_criteria`` pass through. ``eos_token_id=None`` given explicitly means no EOS. Decoding is
        :func:`dera_generate` (the mixture before temperature, top-k and top-p; the reference's cache follows
        the beams).

        Parameters
        ----------
        input_ids : torch.Tensor
            Prompt ids, (batch, length), left-padded (``inputs`` is accepted as its other name).
        attention_mask : torch.Tensor, optional
            (batch, length) of 0/1.
        **kwargs
            ``generation_config``, generation settings, ``seed`` and the other arguments of
            :func:`dera_generate`.

        Returns
        -------
        torch.Tensor or transformers.generation.utils.GenerateOutput
            As :func:`dera_generate`.
        """
        from transformers import GenerationConfig

        from .decoding import MODEL_DEFAULT, dera_generate  # here: decoding.py imports this module

        if input_ids is None:
            input_ids = kwargs.pop("inputs", None)
        check_token_ids(input_ids, "input_ids", self.vocab_size)
        cfg = kwargs.pop("generation_config", None)
        if cfg is not None and not isinstance(cfg, GenerationConfig):
            raise InputError(f"generation_config must be a transformers.GenerationConfig, got {type(cfg).__name__}")
        settings = {}
        if cfg is not None:
            settings = {k: v for k, v in cfg.to_diff_dict().items() if not k.startswith("_")}
            settings.pop("transformers_version", None)
            if "eos_token_id" not in settings:
                settings["eos_token_id"] = MODEL_DEFAULT
        settings.update(kwargs)
        model_cfg = getattr(self.aligned, "generation_config", None)
        defaults = {"do_sample": False, "temperature": 1.0, "top_k": 50, "top_p": 1.0, "max_length": 20}
        for key, value in defaults.items():
            if settings.get(key) is None:
                own = getattr(model_cfg, key, None) if model_cfg is not None else None
                settings[key] = own if own is not None else value
        max_length = check_int(settings.pop("max_length"), "max_length", min_val=1)
        if settings.get("max_new_tokens") is None:
            settings["max_new_tokens"] = max(1, max_length - input_ids.size(1))
        if not settings["do_sample"]:
            for key in ("temperature", "top_k", "top_p"):
                settings.pop(key)
        return dera_generate(self.aligned, self.ref, input_ids, lam=self.lam, attention_mask=attention_mask, **settings)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, **kwargs):
        """Mixed next-token log-probabilities at every position.

        Parameters
        ----------
        input_ids : torch.Tensor
            (batch, length).
        attention_mask : torch.Tensor, optional
            (batch, length) of 0/1, for left-padded batches.
        **kwargs
            Ignored (accepted for compatibility with scoring code).

        Returns
        -------
        transformers.modeling_outputs.CausalLMOutput
            With ``logits`` the mixed log-probabilities (normalised), (batch, length, vocabulary).
        """
        from transformers.modeling_outputs import CausalLMOutput

        check_token_ids(input_ids, "input_ids", self.vocab_size)
        for model in (self.aligned, self.ref):
            check_positions(model, input_ids.size(1), "input_ids")
        kw = {}
        if attention_mask is not None:
            mask = check_mask(attention_mask, "attention_mask", tuple(input_ids.shape), left_padded=False)
            kw = {"attention_mask": mask.to(input_ids.device), "position_ids": positions(mask).to(input_ids.device)}
        with eval_mode(self.aligned, self.ref):
            a = self.aligned(input_ids=input_ids, **kw).logits
            rdev = model_device(self.ref)
            r = self.ref(input_ids=input_ids.to(rdev), **{k: v.to(rdev) for k, v in kw.items()}).logits
        for name, t in (("aligned", a), ("ref", r)):
            if bool(torch.isnan(t).any()) or bool(torch.isposinf(t).any()):
                raise InputError(f"{name} produced non-finite logits (NaN or +inf)")
        return CausalLMOutput(logits=mix(a, r.to(a.device), self.lam))


DeRaModel = DeRa  # the name of the drop-in wrapper

__all__ = ["DeRa", "DeRaModel"]
