"""The claim experiments of BRAIn: estimator variance (:func:`run_variance`), distillation of the exact posterior at
equal sampled responses (:func:`run_distillation`), and the DPO special case (:func:`run_dpo_equivalence`).

The claims in :mod:`icml24.brain.paper` judge these metrics. The enumerable language and its exact tables are in
:mod:`icml24.brain.world`; each experiment trains its own SFT prior (:func:`build_world`), so that none finds
another's work. The variance measurements are in :mod:`icml24.brain.variance`, the SmolLM2 arm in
:mod:`icml24.brain.smollm2`.
"""

from __future__ import annotations

import copy
import time

import numpy as np
import torch

from ..claims import Scale
from ..runs import save_figure
from ..threads import single_thread
from ..validation import check_seed
from .baselines import dpo_loss
from .brain import BrainConfig, train_brain
from .losses import brain_dpo_loss, brain_loss
from .variance import FAR_KL, VARIANCE_ESTIMATORS, gaussian_variances, lm_variances
from .world import BETA, World, build_world, exact_metrics, frontier, lang_prompts, sft_steps, table_reward

DISTIL_ESTIMATORS = ("brain", "gdcpp", "dpg", "brain_no_baseline", "gdcpp_est")


# ---------------------------------------------------------------------------------------------- variance
def run_variance(scale: Scale, seed: int) -> dict[str, float]:
    """The variance claim's run: the Gaussian toy (proposal mean 0 -> 1) and the enumerable language at the SFT
    policy (proposal from the posterior to the policy); ratios of GDC++'s and DPG's variance to BRAIn's.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
    """
    seed = check_seed(seed)
    smoke = scale is Scale.SMOKE
    trials = 800 if smoke else 2000
    out: dict[str, float] = {}
    with single_thread():
        t0 = time.perf_counter()
        means = np.linspace(0.0, 1.0, 5 if smoke else 11)
        g = gaussian_variances(means, 8, trials, seed)
        world = build_world(seed, sft_steps(scale))
        lams = (0.0, 0.5, 1.0) if smoke else (0.0, 0.25, 0.5, 0.75, 1.0)
        lm = lm_variances(world, lams, 8, trials, 1 if smoke else 3, seed)
        out["seconds"] = time.perf_counter() - t0
    for name, v in (("gauss", g), ("lm", lm)):
        b = v["brain"]
        for peer in ("gdcpp", "dpg"):
            ratio = v[peer] / b
            out[f"{name}_min_ratio_{peer}"] = float(ratio.min())
            out[f"{name}_min_ratio_{peer}_far"] = float(ratio[v["kl"] >= FAR_KL].min())
            out[f"{name}_last_ratio_{peer}"] = float(ratio[-1])
            gap = v[peer] - b
            out[f"{name}_gap_{peer}_first"] = float(gap[0])
            out[f"{name}_gap_{peer}_last"] = float(gap[-1])
            out[f"{name}_gap_{peer}_increasing"] = float(np.mean(np.diff(gap) > 0))
        out[f"{name}_brain_var_last"] = float(b[-1])
        out[f"{name}_gdcpp_var_last"] = float(v["gdcpp"][-1])
        out[f"{name}_dpg_var_last"] = float(v["dpg"][-1])
        out[f"{name}_kl_last"] = float(v["kl"][-1])
    _plot_variance(g, lm)
    return out


def _plot_variance(g, lm) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4))
    axes = fig.subplots(1, 2)
    for ax, v, title in ((axes[0], g, "1-D Gaussian (author's toy)"), (axes[1], lm, "enumerable language, SFT policy")):
        for e in VARIANCE_ESTIMATORS:
            ax.plot(v["kl"], v[e], "o-", label=e)
        ax.set(yscale="log", xlabel="KL(proposal || posterior)", ylabel="gradient variance", title=title)
        ax.legend()
    save_figure(fig, "brain-variance")


# ------------------------------------------------------------------------------------------ distillation
def distill(world: World, estimator: str, steps: int, n: int, seed: int, *, eval_every: int, refresh_every: int):
    """Train a copy of the SFT model with one estimator; record the exact KL to the posterior along the way.

    Parameters
    ----------
    world : World
    estimator : str
        An estimator of :func:`train_brain`; ``"gdcpp_est"``: GDC++ with ``log Z`` estimated from each prompt's
        samples instead of the exact one.
    steps, n, seed, eval_every, refresh_every : int

    Returns
    -------
    curve : list of (int, float)
        (responses sampled, KL(posterior || policy)).
    final : tuple of float
        :func:`exact_metrics` at the end.
    """
    estimator, log_z = (estimator[:-4], "estimate") if estimator.endswith("_est") else (estimator, world.log_z.float())
    policy = copy.deepcopy(world.prior)
    for p in policy.parameters():
        p.requires_grad_(True)
    prompts = lang_prompts(world.lang)
    pps = 8
    curve = []

    def on_step(step, model):
        if step % eval_every == 0:
            curve.append((step * pps * n, exact_metrics(model, world)[0]))

    cfg = BrainConfig(
        n=n,
        beta=BETA,
        steps=steps,
        prompts_per_step=pps,
        max_new_tokens=world.lang.response_len,
        refresh_every=0 if estimator == "dpo" else refresh_every,
        lr=3e-3,
        estimator=estimator,
        dpo_beta=1.0,
        seed=seed,
    )
    train_brain(
        policy,
        world.prior,
        prompts,
        table_reward(world.lang, world.reward),
        cfg,
        allowed_ids=world.lang.symbol_ids,
        log_z=log_z,
        on_step=on_step,
    )
    final = exact_metrics(policy, world)
    curve.append((steps * pps * n, final[0]))
    return curve, final


def run_distillation(scale: Scale, seed: int) -> dict[str, float]:
    """The distillation claim's run: BRAIn, GDC++, DPG (exact ``Z`` given to both) and BRAIn without its baseline,
    at equal sampled responses (n = 8, 8 prompts a step, proposal refreshed from the policy every 10 steps), and
    DPO-sft (n = 2, argmax targets, SFT proposal) at the same number of responses. The experiment
    ``brain/distillation``, judged by the claims ``distillation``, ``distillation-gdcpp`` and
    ``distillation-gdcpp-estimated``.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
    """
    seed = check_seed(seed)
    steps = 30 if scale is Scale.SMOKE else 100
    n = 8
    out: dict[str, float] = {}
    curves = {}
    with single_thread():
        t0 = time.perf_counter()
        world = build_world(seed, sft_steps(scale))
        kl0, r0, _ = exact_metrics(world.prior, world)
        out["sft_kl_post"], out["sft_reward"] = kl0, r0
        for e in DISTIL_ESTIMATORS:
            curves[e], (klp, rew, klr) = distill(world, e, steps, n, seed, eval_every=10, refresh_every=10)
            out[f"{e}_kl_post"], out[f"{e}_reward"], out[f"{e}_kl_ref"] = klp, rew, klr
        curves["dpo"], (klp, rew, klr) = distill(world, "dpo", steps * n // 2, 2, seed, eval_every=40, refresh_every=0)
        out["dpo_kl_post"], out["dpo_reward"], out["dpo_kl_ref"] = klp, rew, klr
        out["seconds"] = time.perf_counter() - t0
    fk, fr = frontier(world.prior_lp, world.reward)
    for e in (*DISTIL_ESTIMATORS, "dpo"):
        out[f"{e}_frontier_gap"] = float(np.interp(out[f"{e}_kl_ref"], fk, fr) - out[f"{e}_reward"])
    out["post_reward"] = float((world.post_lp.exp() * world.reward).sum(-1).mean())
    out["responses"] = float(steps * 8 * n)
    _plot_distillation(curves)
    return out


def _plot_distillation(curves) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    for e, c in curves.items():
        x, y = zip(*c)
        ax.plot(x, y, label=e)
    ax.set(yscale="log", xlabel="responses sampled", ylabel="exact KL(posterior || policy)")
    ax.legend()
    save_figure(fig, "brain-distillation")


# ------------------------------------------------------------------------------------------------- DPO
def run_dpo_equivalence(scale: Scale, seed: int) -> dict[str, float]:
    """The DPO claim's run: on random batches (and on real tiny-LM log-probabilities) the BRAIn loss with the DPO
    option equals the DPO loss written from its formula, and so do their gradients.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
    """
    seed = check_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    batches = 20 if scale is Scale.SMOKE else 200
    worst_loss = worst_grad = 0.0
    soft_gap = 0.0
    for _ in range(batches):
        P = int(torch.randint(1, 33, (1,), generator=gen))
        pol = (torch.randn(P, 2, generator=gen, dtype=torch.float64) * 5 - 10).requires_grad_(True)
        ref = torch.randn(P, 2, generator=gen, dtype=torch.float64) * 5 - 10
        r = torch.randn(P, 2, generator=gen, dtype=torch.float64) * 3
        b = float(torch.empty(1).uniform_(0.05, 2.0, generator=gen))
        lb = brain_dpo_loss(pol, ref, r, dpo_beta=b)
        (gb,) = torch.autograd.grad(lb, pol)
        w = r.argmax(1)
        l_ = 1 - w
        rows = torch.arange(P)
        ld = dpo_loss(pol[rows, w], pol[rows, l_], ref[rows, w], ref[rows, l_], beta=b)
        (gd,) = torch.autograd.grad(ld, pol)
        worst_loss = max(worst_loss, abs(float((lb - ld).detach())))
        worst_grad = max(worst_grad, float((gb - gd).abs().max()))
        # the soft-target BRAIn loss differs from DPO (it is not a copy of the baseline)
        ls = brain_loss(pol, ref, ref, r, beta=1.0, policy_scale=b)
        soft_gap = max(soft_gap, abs(float((ls - ld).detach())))
    return {
        "max_abs_loss_diff": worst_loss,
        "max_abs_grad_diff": worst_grad,
        "soft_target_max_diff": soft_gap,
        "batches": float(batches),
    }


__all__ = [
    "run_variance",
    "distill",
    "run_distillation",
    "run_dpo_equivalence",
]
