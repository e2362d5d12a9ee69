"""Memorization of spurious features by random-feature and NTK regression (Bombari & Mondelli, ICML 2024,
arXiv 2305.12100): min-norm interpolation solved through the kernel, the leave-one-out decomposition
``f(z^s) - f_{-i}(z^s) = F (g_i - f_{-i}(z_i))``, the feature alignment ``F`` and its predicted limit ``gamma``.
``baselines`` holds the re-sampled control, kernel ridge and the refit-based alignment; ``networks`` the
official FC and small CNN trained with Adam to interpolation, measured with the same accuracies.
"""

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".features": (
        "ACTIVATIONS",
        "FEATURE_MAPS",
        "FeatureMap",
        "RandomFeatures",
        "NTKFeatures",
        "feature_map",
        "activation",
        "activation_energy",
        "hermite",
        "hermite_coefficients",
    ),
    ".memorization": (
        "REGIMES",
        "MinNormInterpolator",
        "accuracy",
        "check_mask",
        "spurious_queries",
        "spurious_accuracy",
        "test_accuracy",
        "loo_errors",
        "feature_alignment",
        "predicted_gamma",
    ),
    ".baselines": (
        "KernelRidge",
        "control_accuracy",
        "resample_spurious",
        "feature_alignment_refits",
        "loo_refits",
    ),
    ".networks": (
        "FullyConnected",
        "SmallConvNet",
        "NetworkInterpolator",
    ),
}
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
