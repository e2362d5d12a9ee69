"""The controlled experiment of the DeRa paper, on an enumerable language where every distribution is exact.

A tiny GPT-2 is trained (SFT) on a synthetic language; a copy is aligned to a programmatic reward at KL
strength ``beta`` by exact policy gradient; for each ``lambda`` a fresh copy is *retrained* at ``beta /
lambda`` (the ground truth), and DeRa(``lambda``), weight interpolation and the exact sequence-level
geometric mixture are compared with it by exact KL divergences, expected rewards and the exact
reward-KL frontier of the optimal policies. The claims in :mod:`icml24.dera.paper` judge the metrics of two
experiments: :func:`run_realignment` (the aligned model trained by exact policy gradient) and
:func:`run_dpo_realignment` (trained by DPO). Each trains its own SFT reference (:func:`build_world`), so that
neither finds the other's work.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from ..claims import Scale
from ..data.text import EnumerableLanguage, SymbolReward
from ..nn.lm import (
    kl_divergence,
    optimal_policy,
    response_logprobs,
    sft_on_language,
)
from ..runs import save_figure
from ..threads import single_thread
from ..validation import check_int, check_seed
from .baselines import interpolate_weights, preference_pairs, retrain, retrain_dpo
from .decoding import dera_generate
from .model import DeRa
from .paper import BETA, LAMBDAS, SMOKE_LAMBDAS, TARGET_BETAS, measured_lambdas
from .scoring import lambda_search


def lambdas_for(scale: Scale) -> tuple[float, ...]:
    """The realignment strengths measured at ``scale``: {0.5, 2} at smoke scale (the tests), else
    {0.25, 0.5, 2, 4}.

    Parameters
    ----------
    scale : Scale

    Returns
    -------
    tuple of float
    """
    return scale.pick(SMOKE_LAMBDAS, LAMBDAS, LAMBDAS)


@dataclass
class World:
    """The controlled setting: the language, the SFT reference model and the exact tables.

    Parameters
    ----------
    lang : icml24.data.text.EnumerableLanguage
        The language (prompts of 2 symbols, responses of 4).
    ref : torch.nn.Module
        The SFT reference model (a tiny GPT-2).
    ref_lp : torch.Tensor
        Its exact response log-probabilities, (prompts, responses), float64.
    reward : torch.Tensor
        The reward of every (prompt, response), same shape.
    sft_seconds : float
        Time spent on SFT.
    """

    lang: EnumerableLanguage
    ref: torch.nn.Module
    ref_lp: torch.Tensor
    reward: torch.Tensor
    sft_seconds: float


def build_world(seed: int, sft_steps: int) -> World:
    """The language, its reward table and an SFT reference model trained on samples of the language.

    Parameters
    ----------
    seed : int
        Seeds the language, the model and its training.
    sft_steps : int
        SFT steps (batches of 64).

    Returns
    -------
    World
    """
    seed = check_seed(seed)
    sft_steps = check_int(sft_steps, "sft_steps", min_val=1)
    lang = EnumerableLanguage(symbols="abcd", prompt_len=2, response_len=4, seed=seed)
    t0 = time.perf_counter()
    ref = sft_on_language(lang, sft_steps, seed=seed)
    sft = time.perf_counter() - t0
    return World(lang, ref, response_logprobs(ref, lang).double(), SymbolReward().table(lang), sft)


def frontier(ref_lp: torch.Tensor, reward: torch.Tensor, betas=None) -> tuple[np.ndarray, np.ndarray]:
    """The exact reward-KL frontier of the optimal policies pi*(beta) (mean over prompts), KL ascending.

    Parameters
    ----------
    ref_lp : torch.Tensor
        Reference response log-probabilities, (prompts, responses).
    reward : torch.Tensor
        Rewards, same shape.
    betas : sequence of float, optional
        KL strengths (default 400 from 0.02 to 200, geometric).

    Returns
    -------
    kl : numpy.ndarray
        Mean KL to the reference of each optimal policy, ascending.
    reward : numpy.ndarray
        Its mean expected reward.

    References
    ----------
    The optimum of KL-regularised reward maximisation, ``pi*(beta) ∝ pi_ref exp(r / beta)``, as derived in
    T. Liu et al., Decoding-time Realignment of Language Models, ICML 2024.
    """
    betas = np.geomspace(0.02, 200.0, 400) if betas is None else betas
    kls, rs = [], []
    for b in betas:
        lp = optimal_policy(ref_lp, reward, float(b))
        kls.append(float(kl_divergence(lp, ref_lp).mean()))
        rs.append(float((lp.exp() * reward).sum(-1).mean()))
    order = np.argsort(kls)
    return np.asarray(kls)[order], np.asarray(rs)[order]


def frontier_gap(point_kl: float, point_r: float, fk: np.ndarray, fr: np.ndarray) -> float:
    """How far below the optimal frontier a (KL, reward) point lies, in reward units (>= 0 up to rounding).

    Parameters
    ----------
    point_kl, point_r : float
        The point's KL to the reference and expected reward.
    fk, fr : numpy.ndarray
        The frontier of :func:`frontier`.

    Returns
    -------
    float
    """
    return float(np.interp(point_kl, fk, fr) - point_r)


def split_prompts(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A seeded half/half split of the prompts: validation (where lambda is chosen) and held-out.

    Parameters
    ----------
    n : int
        Number of prompts.
    seed : int

    Returns
    -------
    validation, held_out : torch.Tensor
        Prompt indices.
    """
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed + 1000))
    return perm[: n // 2].sort().values, perm[n // 2 :].sort().values


def regularised_reward(lp: torch.Tensor, ref_lp: torch.Tensor, reward: torch.Tensor, beta: float) -> float:
    """The KL-regularised objective ``E_pi[r] - beta KL(pi || pi_ref)``, mean over prompts (exact).

    Parameters
    ----------
    lp, ref_lp : torch.Tensor
        Response log-probabilities of the policy and the reference, (prompts, responses).
    reward : torch.Tensor
        Rewards, same shape.
    beta : float
        The target KL strength.

    Returns
    -------
    float
    """
    return float(((lp.exp() * reward).sum(-1) - beta * kl_divergence(lp, ref_lp)).mean())


def realignment_experiment(scale: Scale, seed: int) -> dict[str, float]:
    """Run the whole controlled experiment (the retraining times and DeRa's sweep time are measured here, in the
    same run).

    Parameters
    ----------
    scale : Scale
        Sets the SFT and alignment steps and the lambdas (:func:`lambdas_for`).
    seed : int

    Returns
    -------
    dict of str to float
        Per lambda (``lam<l>_``): exact KL divergences of DeRa, weight interpolation, the exact geometric
        mixture and the reference to the retrained model, expected rewards, KL to the reference, gaps below
        the frontier; plus the retraining and DeRa sweep times.
    """
    sft_steps = scale.pick(150, 300, 600)
    steps = scale.pick(40, 150, 400)
    pps = scale.pick(4, 4, None)
    lambdas = lambdas_for(scale)
    out: dict[str, float] = {}
    with single_thread():
        w = build_world(seed, sft_steps)
        lang, ref, ref_lp, R = w.lang, w.ref, w.ref_lp, w.reward
        t0 = time.perf_counter()
        aligned, res = retrain(ref, lang, ref_lp, R, BETA, steps=steps, prompts_per_step=pps, seed=seed)
        out["align_seconds"] = time.perf_counter() - t0
        out["aligned_kl_to_optimum"] = res.kl_to_optimum
        al_lp = response_logprobs(aligned, lang).double()
        fk, fr = frontier(ref_lp, R)
        out["reward_ref"] = float((ref_lp.exp() * R).sum(-1).mean())

        def reward_kl(lp):
            return float((lp.exp() * R).sum(-1).mean()), float(kl_divergence(lp, ref_lp).mean())

        retrain_total, dera_total = 0.0, 0.0
        val, held = split_prompts(len(lang.prompts()), seed)
        held_scores = {bt: {} for bt in TARGET_BETAS}
        for lam in lambdas:
            key = f"lam{lam:g}"
            t0 = time.perf_counter()
            rt, rres = retrain(ref, lang, ref_lp, R, BETA / lam, steps=steps, prompts_per_step=pps, seed=seed + 1)
            retrain_total += time.perf_counter() - t0
            rt_lp = response_logprobs(rt, lang).double()
            t0 = time.perf_counter()
            d_lp = response_logprobs(DeRa(aligned, ref, lam), lang).double()
            dera_total += time.perf_counter() - t0
            w_lp = response_logprobs(interpolate_weights(ref, aligned, lam), lang).double()
            geo = (1 - lam) * ref_lp + lam * al_lp
            geo = geo - torch.logsumexp(geo, dim=-1, keepdim=True)
            opt = optimal_policy(ref_lp, R, BETA / lam)

            def kl(a, b):
                return float(kl_divergence(a, b).mean())

            out[f"{key}_kl_dera_to_retrained"] = kl(d_lp, rt_lp)
            out[f"{key}_kl_interp_to_retrained"] = kl(w_lp, rt_lp)
            out[f"{key}_kl_geometric_to_retrained"] = kl(geo, rt_lp)
            out[f"{key}_kl_ref_to_retrained"] = kl(ref_lp, rt_lp)
            out[f"{key}_kl_retrained_to_optimum"] = kl(rt_lp, opt)
            out[f"{key}_kl_dera_to_optimum"] = kl(d_lp, opt)
            for name, lp in (("dera", d_lp), ("interp", w_lp), ("retrained", rt_lp)):
                r, k = reward_kl(lp)
                out[f"{key}_{name}_reward"], out[f"{key}_{name}_kl_ref"] = r, k
                out[f"{key}_{name}_frontier_gap"] = frontier_gap(k, r, fk, fr)
            out[f"{key}_reward_gap_dera"] = abs(out[f"{key}_dera_reward"] - out[f"{key}_retrained_reward"])
            out[f"{key}_reward_gap_interp"] = abs(out[f"{key}_interp_reward"] - out[f"{key}_retrained_reward"])
            for bt in TARGET_BETAS:
                held_scores[bt][lam] = regularised_reward(rt_lp[held], ref_lp[held], R[held], bt)
        prompts = lang.prompts()
        for bt in TARGET_BETAS:

            def metric(model, bt=bt):
                lp = response_logprobs(model, lang, prompts=[prompts[i] for i in val]).double()
                return regularised_reward(lp, ref_lp[val], R[val], bt)

            picked = lambda_search(aligned, ref, lambdas, metric).best
            best = max(held_scores[bt], key=held_scores[bt].get)
            out[f"target{bt:g}_lambda_dera_validation"] = picked
            out[f"target{bt:g}_lambda_retrained_heldout"] = best
            out[f"target{bt:g}_log2_distance"] = abs(float(np.log2(picked / best)))
        out["retrain_seconds_total"] = retrain_total
        out["dera_sweep_seconds"] = dera_total
        # decoding cost of the sweep in practice: 64 sampled responses per lambda
        prompt = torch.tensor([lang.encode(lang.prompts()[0])] * 64)
        t0 = time.perf_counter()
        for i, lam in enumerate(lambdas):
            dera_generate(aligned, ref, prompt, lam=lam, max_new_tokens=lang.response_len, do_sample=True, seed=i)
        out["dera_sample_seconds"] = time.perf_counter() - t0
        out["reward_range"] = float(fr[-1] - out["reward_ref"])
    plot_frontier(fk, fr, out)
    return out


def dpo_experiment(scale: Scale, seed: int) -> dict[str, float]:
    """The paper's setting: the aligned model trained by DPO on preference pairs sampled from the reference
    and labelled by a Bradley-Terry annotator of the reward; for each lambda, DeRa from that model and weight
    interpolation against the DPO model retrained at ``beta / lambda`` on the same pairs (exact KL).

    Parameters
    ----------
    scale : Scale
        Sets the SFT and DPO steps, the number of pairs and the lambdas (:func:`lambdas_for`).
    seed : int

    Returns
    -------
    dict of str to float
        Per lambda (``lam<l>_``): exact KL of DeRa, weight interpolation, the reference and the DPO model at
        ``beta`` to the DPO model retrained at ``beta / lambda``; expected rewards of DeRa and of the retrained
        model.
    """
    sft_steps = scale.pick(150, 300, 600)
    steps = scale.pick(80, 150, 400)
    pairs_per_prompt = scale.pick(64, 128, 256)
    lambdas = lambdas_for(scale)
    out: dict[str, float] = {}
    with single_thread():
        w = build_world(seed, sft_steps)
        lang, ref, ref_lp, R = w.lang, w.ref, w.ref_lp, w.reward
        pairs = preference_pairs(ref_lp, R, pairs_per_prompt, seed=seed)
        aligned, _ = retrain_dpo(ref, lang, ref_lp, pairs, BETA, steps=steps, prompts_per_step=4, seed=seed)
        al_lp = response_logprobs(aligned, lang).double()
        out["dpo_kl_to_ref"] = float(kl_divergence(al_lp, ref_lp).mean())
        out["dpo_kl_to_optimum"] = float(kl_divergence(al_lp, optimal_policy(ref_lp, R, BETA)).mean())
        for lam in lambdas:
            key = f"lam{lam:g}"
            rt, _ = retrain_dpo(ref, lang, ref_lp, pairs, BETA / lam, steps=steps, prompts_per_step=4, seed=seed + 1)
            rt_lp = response_logprobs(rt, lang).double()
            d_lp = response_logprobs(DeRa(aligned, ref, lam), lang).double()
            w_lp = response_logprobs(interpolate_weights(ref, aligned, lam), lang).double()
            for name, lp in (("dera", d_lp), ("interp", w_lp), ("ref", ref_lp), ("aligned", al_lp)):
                out[f"{key}_kl_{name}_to_dpo_retrained"] = float(kl_divergence(lp, rt_lp).mean())
            out[f"{key}_dera_reward"] = float((d_lp.exp() * R).sum(-1).mean())
            out[f"{key}_dpo_retrained_reward"] = float((rt_lp.exp() * R).sum(-1).mean())
    return out


def run_dpo_realignment(scale: Scale, seed: int) -> dict[str, float]:
    """The experiment ``dera/dpo`` of the claims ``dpo-realignment`` and ``dpo-interpolation``:
    :func:`dpo_experiment` plus summaries over lambda.

    Parameters
    ----------
    scale : Scale
        Sets the SFT and DPO steps, the number of pairs and the lambdas (:func:`lambdas_for`).
    seed : int

    Returns
    -------
    dict of str to float
        The experiment's metrics; the means ``mean_kl_dera_to_dpo_retrained`` and
        ``mean_kl_interp_to_dpo_retrained``; ``worst_ratio_dera_over_interp``; over the lambdas below 1,
        the geometric means ``lt1_geomean_kl_dera_to_dpo_retrained`` and
        ``lt1_geomean_kl_interp_to_dpo_retrained``, and ``lt1_dera_wins`` of ``lt1_lambdas`` (at how many of
        them DeRa is strictly closer than interpolation).
    """
    out = dpo_experiment(scale, check_seed(seed))
    lams = measured_lambdas(out, "_kl_dera_to_dpo_retrained")
    dera = [out[f"lam{l:g}_kl_dera_to_dpo_retrained"] for l in lams]
    interp = [out[f"lam{l:g}_kl_interp_to_dpo_retrained"] for l in lams]
    out["mean_kl_dera_to_dpo_retrained"] = sum(dera) / len(dera)
    out["mean_kl_interp_to_dpo_retrained"] = sum(interp) / len(interp)
    out["worst_ratio_dera_over_interp"] = max(d / i for d, i in zip(dera, interp))
    low = [(d, i) for lam, d, i in zip(lams, dera, interp) if lam < 1]
    out["lt1_lambdas"] = float(len(low))
    out["lt1_dera_wins"] = float(sum(d < i for d, i in low))
    out["lt1_geomean_kl_dera_to_dpo_retrained"] = float(np.exp(np.mean(np.log([d for d, _ in low]))))
    out["lt1_geomean_kl_interp_to_dpo_retrained"] = float(np.exp(np.mean(np.log([i for _, i in low]))))
    return out


def plot_frontier(fk: np.ndarray, fr: np.ndarray, m: dict[str, float]) -> None:
    """The frontier with the retrained, DeRa and interpolated points, saved as ``dera-frontier.png``.

    Parameters
    ----------
    fk, fr : numpy.ndarray
        The frontier of :func:`frontier`.
    m : dict of str to float
        The metrics of :func:`realignment_experiment`.
    """
    from matplotlib.figure import Figure

    lams = measured_lambdas(m, "_dera_kl_ref")
    fig = Figure(figsize=(6, 4.2))
    ax = fig.subplots()
    ax.plot(fk, fr, "k-", lw=1, label="optimal frontier pi*(beta')")
    for name, mark in (("retrained", "o"), ("dera", "x"), ("interp", "s")):
        ax.plot(
            [m[f"lam{l:g}_{name}_kl_ref"] for l in lams],
            [m[f"lam{l:g}_{name}_reward"] for l in lams],
            mark,
            label=name,
            mfc="none",
        )
    ax.set(
        xscale="symlog",
        xlabel="KL(policy || reference)",
        ylabel="expected reward",
        title=f"DeRa vs retraining at beta/lambda, lambda in {{{', '.join(f'{l:g}' for l in lams)}}}",
    )
    ax.legend(fontsize=8)
    save_figure(fig, "dera-frontier")


def lambda_search_summary(m: dict[str, float]) -> dict[str, float]:
    """The lambda-selection metrics of a :func:`realignment_experiment` (no extra training): for each target
    strength ``beta_t`` in :data:`~icml24.dera.paper.TARGET_BETAS`, the lambda that
    :func:`~icml24.dera.lambda_search` picks with DeRa on validation prompts (objective ``E[r] - beta_t KL``)
    and the lambda whose retrained model scores best on the held-out prompts.

    Parameters
    ----------
    m : dict of str to float
        The metrics of :func:`realignment_experiment`.

    Returns
    -------
    dict of str to float
        Per target (``target<beta_t>_``): both lambdas and their distance in octaves (``log2_distance``);
        ``max_log2_distance`` over targets, ``matches`` (how many targets agree) and ``targets``.
    """
    out = {k: v for k, v in m.items() if k.startswith("target")}
    dist = [m[f"target{bt:g}_log2_distance"] for bt in TARGET_BETAS]
    out["max_log2_distance"] = max(dist)
    out["matches"] = float(sum(d == 0.0 for d in dist))
    out["targets"] = float(len(TARGET_BETAS))
    return out


def run_realignment(scale: Scale, seed: int) -> dict[str, float]:
    """The experiment ``dera/realignment`` of the claims ``realignment`` and ``lambda-search``:
    :func:`realignment_experiment` plus the means over lambda and the lambda search (:func:`lambda_search_summary`).

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
        The experiment's metrics, ``worst_ratio_dera_over_interp`` (the largest ratio of DeRa's KL to the
        retrained model over weight interpolation's), ``mean_kl_dera_to_retrained`` and
        ``mean_kl_interp_to_retrained``, and ``retrain_over_dera``: the retraining time over DeRa's sweep
        (exact evaluation plus 64 samples per lambda), reported, not judged; the metrics of
        :func:`lambda_search_summary`.
    """
    m = realignment_experiment(scale, check_seed(seed))
    lams = measured_lambdas(m, "_kl_dera_to_retrained")
    m["worst_ratio_dera_over_interp"] = max(
        m[f"lam{l:g}_kl_dera_to_retrained"] / m[f"lam{l:g}_kl_interp_to_retrained"] for l in lams
    )
    m["mean_kl_dera_to_retrained"] = sum(m[f"lam{l:g}_kl_dera_to_retrained"] for l in lams) / len(lams)
    m["mean_kl_interp_to_retrained"] = sum(m[f"lam{l:g}_kl_interp_to_retrained"] for l in lams) / len(lams)
    m["retrain_over_dera"] = m["retrain_seconds_total"] / (m["dera_sweep_seconds"] + m["dera_sample_seconds"])
    m.update(lambda_search_summary(m))
    return m


__all__ = [
    "BETA",
    "LAMBDAS",
    "World",
    "build_world",
    "frontier",
    "frontier_gap",
    "realignment_experiment",
    "dpo_experiment",
    "lambdas_for",
    "plot_frontier",
    "run_realignment",
    "run_dpo_realignment",
    "lambda_search_summary",
    "split_prompts",
    "regularised_reward",
]
