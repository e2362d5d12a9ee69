"""Momentum Particle Descent (MPD) for maximum likelihood in latent-variable models (Lim, Kuntz, Power &
Johansen, ICML 2024, arXiv 2312.07335): the official ``MPD_Proposed`` integrator, with particle gradient descent
(PGD), alternating back-propagation (ABP) and closed-form EM as its peers on the same API, and the models of the
experiments (the toy hierarchical model, probabilistic PCA, a generator network).
"""

from .baselines import ABP, PGD, ppca_em, toy_em
from .models import PPCA, GeneratorNet, ToyHierarchical, ppca_log_likelihood, ppca_mle, toy_log_likelihood
from .mpd import MPD, FunctionModel, ParticleFit, flow_step, momentum_from_target, noise_covariance, sample_posterior

__all__ = [
    "MPD",
    "PGD",
    "ABP",
    "ParticleFit",
    "FunctionModel",
    "noise_covariance",
    "momentum_from_target",
    "flow_step",
    "sample_posterior",
    "toy_em",
    "ppca_em",
    "ToyHierarchical",
    "PPCA",
    "GeneratorNet",
    "toy_log_likelihood",
    "ppca_log_likelihood",
    "ppca_mle",
]
