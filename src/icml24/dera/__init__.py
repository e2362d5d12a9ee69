"""DeRa: decoding-time realignment of language models (Liu et al., ICML 2024)."""

from ..extras import require
from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".model": (
        "DeRa",
        "DeRaModel",
    ),
    ".processors": ("DeRaLogitsProcessor",),
    ".decoding": ("dera_generate",),
    ".scoring": (
        "dera_logprobs",
        "lambda_search",
        "LambdaSearch",
    ),
    ".mixture": ("mix_logprobs",),
    ".baselines": (
        "retrain",
        "interpolate_weights",
    ),
}
__getattr__, __dir__, __all__ = lazy_package(
    __name__, _EXPORTS, require=lambda: require("transformers", extra="lm", what="dera")
)
