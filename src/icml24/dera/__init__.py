"""DeRa: decoding-time realignment of language models (Liu et al., ICML 2024)."""

from typing import TYPE_CHECKING

from ..extras import require
from ..lazy import lazy_package

require("transformers", extra="lm", what="dera")  # cheap (find_spec): a missing extra is one line at import

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".decoding": (
        "DeRa",
        "DeRaLogitsProcessor",
        "DeRaModel",
        "dera_generate",
        "dera_logprobs",
        "lambda_search",
        "LambdaSearch",
        "mix_logprobs",
    ),
    ".baselines": (
        "retrain",
        "interpolate_weights",
    ),
}
__getattr__, __dir__ = lazy_package(__name__, _EXPORTS)
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

if TYPE_CHECKING:  # the same names, for readers, IDEs and type checkers
    from .baselines import interpolate_weights, retrain
    from .decoding import (
        DeRa,
        DeRaLogitsProcessor,
        DeRaModel,
        LambdaSearch,
        dera_generate,
        dera_logprobs,
        lambda_search,
        mix_logprobs,
    )
