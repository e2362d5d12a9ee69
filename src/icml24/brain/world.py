"""The enumerable language world of BRAIn's experiments: prompts of 2 symbols over ``abcd``, responses of 4 (256
per prompt), a trained SFT prior and the exact tables that make the posterior ``p exp(r / beta) / Z`` and every KL
exact (:func:`build_world`), with the exact metrics of a policy and the exact reward-vs-KL frontier.
"""

from __future__ import annotations

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
from ..validation import check_int, check_seed

BETA = 1.0  # reward temperature of the posterior p exp(r / beta) / Z; SymbolReward spans 0-5 nats


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


__all__ = [
    "BETA",
    "World",
    "build_world",
    "sft_steps",
    "lang_prompts",
    "table_reward",
    "exact_metrics",
    "frontier",
]
