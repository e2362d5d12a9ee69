"""Momentum Particle Descent (MPD) for maximum likelihood in latent-variable models (Lim, Kuntz, Power &
Johansen, ICML 2024, arXiv 2312.07335): the official ``MPD_Proposed`` integrator, with particle gradient descent
(PGD), alternating back-propagation (ABP) and closed-form EM as its peers on the same API, and the models of the
experiments (the toy hierarchical model, probabilistic PCA, a generator network).
"""

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".mpd": (
        "MPD",
        "sample_posterior",
    ),
    ".particles": (
        "ParticleFit",
        "FunctionModel",
    ),
    ".flow": (
        "noise_covariance",
        "momentum_from_target",
        "flow_step",
    ),
    ".baselines": (
        "PGD",
        "ABP",
        "toy_em",
        "ppca_em",
    ),
    ".models": (
        "ToyHierarchical",
        "PPCA",
        "GeneratorNet",
        "toy_log_likelihood",
        "ppca_log_likelihood",
        "ppca_mle",
    ),
}
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
