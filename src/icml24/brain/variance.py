"""The variance of the gradient estimators (BRAIn, GDC++, DPG) as the proposal moves away from the posterior: on the
author's 1-D Gaussian toy, and exactly on the enumerable language at a fixed policy (through the Gram matrix of
the responses' score functions).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..data.text import EnumerableLanguage
from ..nn.lm import kl_divergence, response_logprobs
from .losses import estimator_weights
from .world import BETA, World

VARIANCE_ESTIMATORS = ("brain", "gdcpp", "dpg")
FAR_KL = 0.08  # proposals at least this far from the posterior (nats): DPG's weights are near-uniform below


def gaussian_variances(proposal_means, n: int, trials: int, seed: int) -> dict[str, np.ndarray]:
    """The author's toy: posterior N(0, 1), policy N(1, 1), proposal N(m, 1); variance of each estimator of the
    gradient with respect to the policy mean, over ``trials`` batches of ``n`` samples.

    Parameters
    ----------
    proposal_means : sequence of float
    n : int
    trials : int
    seed : int

    Returns
    -------
    dict of str to numpy.ndarray
        ``kl`` (``KL(proposal || posterior) = m^2 / 2``) and one variance array per estimator.
    """
    gen = torch.Generator().manual_seed(seed)

    def logn(y, mu):
        return -0.5 * (y - mu) ** 2 - 0.5 * math.log(2 * math.pi)

    out = {e: [] for e in VARIANCE_ESTIMATORS}
    for m in proposal_means:
        y = m + torch.randn(trials, n, generator=gen, dtype=torch.float64)
        pol, prop, prior = logn(y, 1.0), logn(y, m), logn(y, 0.0)
        zero = torch.zeros_like(y)
        for e in VARIANCE_ESTIMATORS:
            w = estimator_weights(e, pol, prop, prior, zero, beta=1.0, log_z=torch.zeros(trials, dtype=torch.float64))
            g = -(w * (y - 1.0)).sum(1)
            out[e].append(float(g.var()))
    res = {e: np.asarray(v) for e, v in out.items()}
    res["kl"] = 0.5 * np.asarray(proposal_means, dtype=float) ** 2
    return res


def response_gram(policy, lang: EnumerableLanguage, prompt: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The Gram matrix ``K[r, s] = <grad log q(y_r|x), grad log q(y_s|x)>`` over every response of a prompt.

    Any estimator ``g = -sum_i w_i grad log q(y_i)`` is ``-G^T c`` with ``c`` the weight mass per response, so
    its total variance (summed over all parameters) is exactly ``trace(K Cov(c))``.

    Parameters
    ----------
    policy : torch.nn.Module
    lang : icml24.data.text.EnumerableLanguage
    prompt : str

    Returns
    -------
    gram : torch.Tensor
        ``(R, R)`` float64.
    logp : torch.Tensor
        ``(R,)`` float64 log-probabilities of the responses.
    """
    params = [p for p in policy.parameters()]
    req = [p.requires_grad for p in params]
    for p in params:
        p.requires_grad_(True)
    try:
        lp = response_logprobs(policy, lang, prompts=[prompt], grad=True)[0]
        rows = []
        for r in range(lp.numel()):
            gs = torch.autograd.grad(lp[r], params, retain_graph=r < lp.numel() - 1, allow_unused=True)
            rows.append(
                torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(gs, params)])
            )
    finally:
        for p, q in zip(params, req):
            p.requires_grad_(q)
    G = torch.stack(rows).double()
    return G @ G.T, lp.detach().double()


def lm_variances(world: World, lambdas, n: int, trials: int, n_prompts: int, seed: int) -> dict[str, np.ndarray]:
    """Variance of each estimator on the enumerable language at a fixed policy (the SFT model), with proposals
    ``q'_lambda ∝ posterior^(1 - lambda) prior^lambda`` (lambda = 0: the posterior; 1: the policy itself).

    Parameters
    ----------
    world : World
    lambdas : sequence of float
    n : int
    trials : int
    n_prompts : int
        Prompts averaged (the first ones of a seeded permutation).
    seed : int

    Returns
    -------
    dict of str to numpy.ndarray
        ``kl`` (mean ``KL(proposal || posterior)``) and one mean total variance per estimator, per lambda.
    """
    gen = torch.Generator().manual_seed(seed)
    prompts = world.lang.prompts()
    order = torch.randperm(len(prompts), generator=gen)[:n_prompts].tolist()
    kls = np.zeros(len(lambdas))
    var = {e: np.zeros(len(lambdas)) for e in VARIANCE_ESTIMATORS}
    for pi in order:
        K, pol_all = response_gram(world.prior, world.lang, prompts[pi])
        post, prior_all, r_all = world.post_lp[pi], world.prior_lp[pi], world.reward[pi]
        for j, lam in enumerate(lambdas):
            q = (1 - lam) * post + lam * pol_all
            q = q - torch.logsumexp(q, 0)
            kls[j] += float(kl_divergence(q, post)) / n_prompts
            idx = torch.multinomial(q.exp().expand(trials, -1), n, replacement=True, generator=gen)
            tabs = [pol_all[idx], q[idx], prior_all[idx], r_all[idx]]
            lz = world.log_z[pi].expand(trials)
            for e in VARIANCE_ESTIMATORS:
                w = estimator_weights(e, *tabs, beta=BETA, log_z=lz)
                c = torch.zeros(trials, K.size(0), dtype=torch.float64).scatter_add_(1, idx, w.double())
                c = c - c.mean(0, keepdim=True)
                var[e][j] += float(((c @ K) * c).sum() / (trials - 1)) / n_prompts
    return {"kl": kls, **var}


__all__ = ["gaussian_variances", "response_gram", "lm_variances"]
