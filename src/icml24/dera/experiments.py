"""The controlled experiment of the DeRa paper, on an enumerable language where every distribution is exact.

A tiny GPT-2 is trained (SFT) on a synthetic language; a copy is aligned to a programmatic reward at KL
strength ``beta`` by exact policy gradient; for each ``lambda`` a fresh copy is *retrained* at ``beta /
lambda`` (the ground truth), and DeRa(``lambda``), weight interpolation and the exact sequence-level
geometric mixture are compared with it by exact KL divergences, expected rewards and the exact
reward-KL frontier of the optimal policies.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import numpy as np
import torch

from ..claims import Scale
from ..data.text import EnumerableLanguage, SymbolReward
from ..nn.lm import (TrainConfig, kl_divergence, language_batches, optimal_policy, response_logprobs, tiny_gpt2,
                     train_lm)
from ..threads import single_thread
from .baselines import interpolate_weights, retrain
from .decoding import DeRa, dera_generate

LAMBDAS = (0.25, 0.5, 2.0, 4.0)
BETA = 1.0


@dataclass
class World:
    lang: EnumerableLanguage
    ref: torch.nn.Module
    ref_lp: torch.Tensor
    reward: torch.Tensor
    sft_seconds: float


def build_world(seed: int, sft_steps: int) -> World:
    """The language, its reward table and an SFT reference model trained on samples of the language."""
    lang = EnumerableLanguage(symbols="abcd", prompt_len=2, response_len=4, seed=seed)
    ref = tiny_gpt2(lang.vocab_size, n_positions=16, n_embd=64, n_layer=2, n_head=4, tokenizer=lang.tokenizer,
                    seed=seed)
    t0 = time.perf_counter()
    train_lm(ref, language_batches(lang, response_only=True),
             TrainConfig(steps=sft_steps, batch_size=64, lr=3e-3, min_lr=3e-4, log_every=0, seed=seed))
    sft = time.perf_counter() - t0
    return World(lang, ref, response_logprobs(ref, lang).double(), SymbolReward().table(lang), sft)


def frontier(ref_lp: torch.Tensor, reward: torch.Tensor, betas=None) -> tuple[np.ndarray, np.ndarray]:
    """The exact reward-KL frontier of the optimal policies pi*(beta) (mean over prompts), KL ascending."""
    betas = np.geomspace(0.02, 200.0, 400) if betas is None else betas
    kls, rs = [], []
    for b in betas:
        lp = optimal_policy(ref_lp, reward, float(b))
        kls.append(float(kl_divergence(lp, ref_lp).mean()))
        rs.append(float((lp.exp() * reward).sum(-1).mean()))
    order = np.argsort(kls)
    return np.asarray(kls)[order], np.asarray(rs)[order]


def frontier_gap(point_kl: float, point_r: float, fk: np.ndarray, fr: np.ndarray) -> float:
    """How far below the optimal frontier a (KL, reward) point lies, in reward units (>= 0 up to rounding)."""
    return float(np.interp(point_kl, fk, fr) - point_r)


@functools.lru_cache(maxsize=4)
def realignment_experiment(scale: Scale, seed: int) -> dict[str, float]:
    """Run the whole controlled experiment once per (scale, seed); both the realignment and the cost claims
    read it (the retraining times and DeRa's sweep time are measured here, in the same run)."""
    sft_steps = scale.pick(150, 300, 600)
    steps = scale.pick(80, 150, 400)
    pps = scale.pick(4, 4, None)
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
        for lam in LAMBDAS:
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
        out["retrain_seconds_total"] = retrain_total
        out["dera_sweep_seconds"] = dera_total
        # decoding cost of the sweep in practice: 64 sampled responses per lambda
        prompt = torch.tensor([lang.encode(lang.prompts()[0])] * 64)
        t0 = time.perf_counter()
        for i, lam in enumerate(LAMBDAS):
            dera_generate(aligned, ref, prompt, lam=lam, max_new_tokens=lang.response_len, do_sample=True, seed=i)
        out["dera_sample_seconds"] = time.perf_counter() - t0
        out["reward_range"] = float(fr[-1] - out["reward_ref"])
    _plot(fk, fr, out)
    return out


def _plot(fk, fr, m) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..runs import save_figure

    fig, ax = plt.subplots(figsize=(6, 4.2))
    ax.plot(fk, fr, "k-", lw=1, label="optimal frontier pi*(beta')")
    for name, mark in (("retrained", "o"), ("dera", "x"), ("interp", "s")):
        ax.plot([m[f"lam{l:g}_{name}_kl_ref"] for l in LAMBDAS], [m[f"lam{l:g}_{name}_reward"] for l in LAMBDAS],
                mark, label=name, mfc="none")
    ax.set(xscale="symlog", xlabel="KL(policy || reference)", ylabel="expected reward",
           title="DeRa vs retraining at beta/lambda, lambda in {0.25, 0.5, 2, 4}")
    ax.legend(fontsize=8)
    save_figure(fig, "dera-frontier")
