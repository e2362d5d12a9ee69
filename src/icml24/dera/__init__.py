"""DeRa: decoding-time realignment of language models (Liu et al., ICML 2024)."""

from ..extras import require

require("transformers", extra="lm", what="dera")

from .baselines import interpolate_weights, retrain  # noqa: E402
from .decoding import (  # noqa: E402
    DeRa,
    DeRaLogitsProcessor,
    DeRaModel,
    LambdaSearch,
    dera_generate,
    dera_logprobs,
    lambda_search,
    mix_logprobs,
)

__all__ = [
    "DeRa",
    "DeRaLogitsProcessor",
    "DeRaModel",
    "dera_generate",
    "dera_logprobs",
    "lambda_search",
    "LambdaSearch",
    "mix_logprobs",
    "retrain",
    "interpolate_weights",
]
