"""The claim experiments of BRAIn: estimator variance (the author's 1-D Gaussian toy and the enumerable language at
a fixed policy), distillation of the exact posterior at equal sampled responses, and the DPO special case.

The enumerable language (prompts of 2 symbols over ``abcd``, responses of 4: 256 per prompt) makes the posterior
``p exp(r / beta) / Z`` and every KL exact. The claims in :mod:`icml24.brain.paper` judge these metrics; each
experiment trains its own SFT prior (:func:`build_world`), so that none finds another's work.
"""

from __future__ import annotations

import copy
import math
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
from .baselines import dpo_loss
from .brain import BrainConfig, brain_dpo_loss, brain_loss, estimator_weights, train_brain

BETA = 1.0  # reward temperature of the posterior p exp(r / beta) / Z; SymbolReward spans 0-5 nats
VARIANCE_ESTIMATORS = ("brain", "gdcpp", "dpg")
FAR_KL = 0.08  # proposals at least this far from the posterior (nats): DPG's weights are near-uniform below
DISTIL_ESTIMATORS = ("brain", "gdcpp", "dpg", "brain_no_baseline", "gdcpp_est")


# ------------------------------------------------------------------------------------------------ world
@dataclass
class World:
    """The enumerable language, its SFT prior and the exact tables.

    Parameters
    ----------
    lang : icml24.data.text.EnumerableLanguage
        The language.
    prior : torch.nn.Module
        The SFT model (a tiny GPT-2), never modified.
    prior_lp : torch.Tensor
        Exact response log-probabilities of the prior, ``(prompts, responses)``, float64.
    reward : torch.Tensor
        Reward table, same shape.
    post_lp : torch.Tensor
        Exact posterior log-probabilities ``log p + r / beta - log Z``, same shape.
    log_z : torch.Tensor
        ``log Z(x)`` per prompt.
    """

    lang: EnumerableLanguage
    prior: torch.nn.Module
    prior_lp: torch.Tensor
    reward: torch.Tensor
    post_lp: torch.Tensor
    log_z: torch.Tensor


def build_world(seed: int, sft_steps: int) -> World:
    """Train the SFT prior on samples of the language and tabulate the exact posterior.

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
    prior = sft_on_language(lang, sft_steps, seed=seed)
    for p in prior.parameters():
        p.requires_grad_(False)
    prior_lp = response_logprobs(prior, lang).double()
    reward = SymbolReward().table(lang)
    z = prior_lp + reward / BETA
    log_z = torch.logsumexp(z, dim=-1)
    return World(lang, prior, prior_lp, reward, optimal_policy(prior_lp, reward, BETA), log_z)


def lang_prompts(lang: EnumerableLanguage) -> torch.Tensor:
    """Token ids ``<bos> prompt <sep>`` of every prompt, ``(P, prompt_len + 2)``.

    Parameters
    ----------
    lang : icml24.data.text.EnumerableLanguage

    Returns
    -------
    torch.Tensor
    """
    return torch.tensor([lang.encode(p) for p in lang.prompts()])


def table_reward(lang: EnumerableLanguage, table: torch.Tensor):
    """A ``reward_fn(prompt_ids, response_ids)`` reading a ``(prompts, responses)`` reward table.

    Parameters
    ----------
    lang : icml24.data.text.EnumerableLanguage
    table : torch.Tensor

    Returns
    -------
    callable
    """
    k = len(lang.symbols)
    pos = torch.full((lang.vocab_size,), -1, dtype=torch.long)
    pos[lang.symbol_ids] = torch.arange(k)
    pw = k ** torch.arange(lang.prompt_len - 1, -1, -1)
    rw = k ** torch.arange(lang.response_len - 1, -1, -1)

    def reward_fn(prompt_ids: torch.Tensor, response_ids: torch.Tensor) -> torch.Tensor:
        pi = (pos[prompt_ids[:, 1 : 1 + lang.prompt_len]] * pw).sum(1)
        ri = (pos[response_ids[:, : lang.response_len]] * rw).sum(1)
        return table[pi, ri].float()

    return reward_fn


# ---------------------------------------------------------------------------------------------- variance
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
def sft_steps(scale: Scale) -> int:
    """SFT steps of the prior at a scale (60 at smoke, 200 otherwise).

    Parameters
    ----------
    scale : Scale

    Returns
    -------
    int
    """
    return 60 if scale is Scale.SMOKE else 200


def exact_metrics(policy, world: World) -> tuple[float, float, float]:
    """Exact mean ``KL(posterior || policy)``, expected reward and ``KL(policy || SFT)`` over every prompt.

    Parameters
    ----------
    policy : torch.nn.Module
    world : World

    Returns
    -------
    tuple of float
    """
    lp = response_logprobs(policy, world.lang).double()
    kl_post = float(kl_divergence(world.post_lp, lp).mean())
    rew = float((lp.exp() * world.reward).sum(-1).mean())
    kl_ref = float(kl_divergence(lp, world.prior_lp).mean())
    return kl_post, rew, kl_ref


def frontier(prior_lp: torch.Tensor, reward: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """The exact reward-vs-KL(policy || SFT) frontier of the posteriors ``p exp(r / b) / Z`` over ``b``.

    Parameters
    ----------
    prior_lp, reward : torch.Tensor

    Returns
    -------
    kl, reward : numpy.ndarray
        KL ascending.
    """
    kls, rs = [], []
    for b in np.geomspace(0.02, 200.0, 300):
        lp = optimal_policy(prior_lp, reward, float(b))
        kls.append(float(kl_divergence(lp, prior_lp).mean()))
        rs.append(float((lp.exp() * reward).sum(-1).mean()))
    o = np.argsort(kls)
    return np.asarray(kls)[o], np.asarray(rs)[o]


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


# ------------------------------------------------------------------------------------------ SmolLM2 arm
SMOLLM2_TOPICS = (
    "dogs", "music", "rain", "friends", "coffee", "work", "summer", "books",
    "the sea", "my city", "winter", "cooking", "school", "trains", "gardens", "the news",
)  # fmt: skip
SMOLLM2_LEXICON = {
    **dict.fromkeys(("happy", "love", "wonderful", "great", "good", "beautiful", "joy", "lovely", "best"), 1.0),
    **dict.fromkeys(("enjoy", "fun", "amazing", "delightful", "warm", "bright", "nice", "perfect"), 1.0),
    **dict.fromkeys(("sad", "bad", "terrible", "awful", "hate", "boring", "cold", "worst", "angry"), -1.0),
}


def smollm2_arm(
    steps: int = 20, *, n: int = 4, prompts_per_step: int = 4, max_new_tokens: int = 12, beta: float = 5.0,
    lora_rank: int = 8, lr: float = 1e-3, eval_samples: int = 4, seed: int = 0,
) -> dict[str, float]:  # fmt: skip
    """BRAIn with LoRA on the real SmolLM2-135M-Instruct, with a lexicon reward: a check that the API runs on a
    pretrained Hugging Face model offline (its figures are reported, not judged).

    The prompts are the model's chat template around "Write one sentence about <topic>." for sixteen topics of
    equal token length; the reward is :class:`icml24.data.text.LexiconReward` with a small sentiment lexicon
    (per 100 words); LoRA (PEFT) on the attention's q and v projections; the prior is the frozen base model.
    Before and after training, ``eval_samples`` responses per prompt are drawn from the policy and scored: mean
    reward, and the Monte-Carlo estimate of KL(policy || SFT) (mean of ``log q - log p`` over those samples).

    Parameters
    ----------
    steps : int, default 20
        BRAIn steps.
    n : int, default 4
        Responses per prompt.
    prompts_per_step : int, default 4
        Prompts per step.
    max_new_tokens : int, default 12
        Response length limit.
    beta : float, default 5.0
        Reward temperature (the lexicon score is per 100 words).
    lora_rank : int, default 8
        LoRA rank.
    lr : float, default 1e-3
        Peak learning rate.
    eval_samples : int, default 4
        Responses per prompt in each evaluation.
    seed : int, default 0
        Seed of the prompt draws and the samplers.

    Returns
    -------
    dict of str to float
        ``reward_before``, ``reward_after``, ``kl_after`` (nats, Monte Carlo), ``ess_first``, ``ess_last``,
        ``seconds_per_step``, ``trainable_params``, ``load_seconds``.
    """
    from ..data.text import LexiconReward
    from ..extras import require
    from ..nn.lm import sequence_logprobs
    from ..nn.pretrained import load_smollm2
    from .brain import sample_responses

    require("peft", extra="lm", what="brain's LoRA arm")
    from peft import LoraConfig, get_peft_model

    steps = check_int(steps, "steps", min_val=1)
    seed = check_seed(seed)
    t0 = time.perf_counter()
    prior, tok = load_smollm2()
    load_s = time.perf_counter() - t0
    for p in prior.parameters():
        p.requires_grad_(False)
    texts = [
        tok.apply_chat_template(
            [{"role": "user", "content": f"Write one sentence about {t}."}], tokenize=False, add_generation_prompt=True
        )
        for t in SMOLLM2_TOPICS
    ]
    enc = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    length = max(set(map(len, enc)), key=[len(e) for e in enc].count)
    prompts = torch.tensor([e for e in enc if len(e) == length])
    lexicon = LexiconReward(SMOLLM2_LEXICON)
    eos = tok.eos_token_id
    pad = tok.pad_token_id if tok.pad_token_id is not None else eos

    def reward_fn(_prompt_ids, response_ids):
        return torch.tensor([lexicon(tok.decode([t for t in r.tolist() if t != pad])) for r in response_ids])

    policy = get_peft_model(
        copy.deepcopy(prior),
        LoraConfig(r=lora_rank, lora_alpha=2 * lora_rank, lora_dropout=0.0, target_modules=["q_proj", "v_proj"]),
    )
    trainable = sum(p.numel() for p in policy.parameters() if p.requires_grad)

    def evaluate(model, gen_seed: int) -> tuple[float, float]:
        s = sample_responses(
            model, prompts, eval_samples, max_new_tokens, generator=torch.Generator().manual_seed(gen_seed),
            eos_token_id=eos, pad_token_id=pad,
        )  # fmt: skip
        with torch.no_grad():
            prior_lp = sequence_logprobs(prior, s["input_ids"], start=length, attention_mask=s["attention_mask"])
        r = reward_fn(None, s["input_ids"][:, length:])
        return float(r.mean()), float((s["logprob"] - prior_lp).mean())

    reward_before, _ = evaluate(prior, seed + 1000)
    cfg = BrainConfig(
        n=n, beta=beta, steps=steps, prompts_per_step=min(prompts_per_step, prompts.size(0)),
        max_new_tokens=max_new_tokens, lr=lr, seed=seed,
    )  # fmt: skip
    t1 = time.perf_counter()
    res = train_brain(policy, prior, prompts, reward_fn, cfg, eos_token_id=eos, pad_token_id=pad)
    per_step = (time.perf_counter() - t1) / steps
    reward_after, kl_after = evaluate(policy, seed + 1000)
    return {
        "reward_before": reward_before,
        "reward_after": reward_after,
        "kl_after": kl_after,
        "ess_first": float(res.ess[0]) if res.ess else float("nan"),
        "ess_last": float(res.ess[-1]) if res.ess else float("nan"),
        "seconds_per_step": per_step,
        "trainable_params": float(trainable),
        "load_seconds": load_s,
        "prompts": float(prompts.size(0)),
    }


__all__ = [
    "BETA",
    "World",
    "build_world",
    "lang_prompts",
    "table_reward",
    "gaussian_variances",
    "response_gram",
    "lm_variances",
    "run_variance",
    "exact_metrics",
    "sft_steps",
    "frontier",
    "distill",
    "run_distillation",
    "run_dpo_equivalence",
    "smollm2_arm",
]
