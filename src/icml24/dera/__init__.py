"""DeRa: decoding-time realignment of language models (Liu et al., ICML 2024)."""

from .baselines import interpolate_weights, retrain
from .decoding import (DeRa, DeRaLogitsProcessor, LambdaSearch, dera_generate, dera_logprobs, lambda_search,
                       mix_logprobs)

__all__ = ["DeRa", "DeRaLogitsProcessor", "dera_generate", "dera_logprobs", "lambda_search", "LambdaSearch",
           "mix_logprobs", "retrain", "interpolate_weights"]
