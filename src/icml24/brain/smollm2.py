"""BRAIn with LoRA on the real SmolLM2-135M-Instruct with a sentiment-lexicon reward (:func:`smollm2_arm`): a check
that the API runs on a pretrained Hugging Face model offline, reported and not judged.
"""

from __future__ import annotations

import copy
import time

import torch

from ..validation import check_int, check_seed
from .brain import BrainConfig, train_brain

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
        ``reward_before``, ``reward_after``, ``kl_after`` (nats, Monte Carlo) and
        ``kl_after_se`` (its standard error over the sampled responses), ``ess_first``, ``ess_last``,
        ``seconds_per_step``, ``trainable_params``, ``load_seconds``.
    """
    from ..data.text import LexiconReward
    from ..extras import require
    from ..nn.decoding import sample_responses
    from ..nn.lm import sequence_logprobs
    from ..nn.pretrained import load_smollm2

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

    def evaluate(model, gen_seed: int) -> tuple[float, float, float]:
        s = sample_responses(
            model, prompts, eval_samples, max_new_tokens, generator=torch.Generator().manual_seed(gen_seed),
            eos_token_id=eos, pad_token_id=pad,
        )  # fmt: skip
        with torch.no_grad():
            prior_lp = sequence_logprobs(prior, s["input_ids"], start=length, attention_mask=s["attention_mask"])
        r = reward_fn(None, s["input_ids"][:, length:])
        d = s["logprob"] - prior_lp  # one Monte Carlo term of KL(model || prior) per sampled response
        se = float(d.std() / d.numel() ** 0.5) if d.numel() > 1 else float("nan")
        return float(r.mean()), float(d.mean()), se

    reward_before, _, _ = evaluate(prior, seed + 1000)
    cfg = BrainConfig(
        n=n, beta=beta, steps=steps, prompts_per_step=min(prompts_per_step, prompts.size(0)),
        max_new_tokens=max_new_tokens, lr=lr, seed=seed,
    )  # fmt: skip
    t1 = time.perf_counter()
    res = train_brain(policy, prior, prompts, reward_fn, cfg, eos_token_id=eos, pad_token_id=pad)
    per_step = (time.perf_counter() - t1) / steps
    reward_after, kl_after, kl_after_se = evaluate(policy, seed + 1000)
    return {
        "reward_before": reward_before,
        "reward_after": reward_after,
        "kl_after": kl_after,
        "kl_after_se": kl_after_se,
        "ess_first": float(res.ess[0]) if res.ess else float("nan"),
        "ess_last": float(res.ess[-1]) if res.ess else float("nan"),
        "seconds_per_step": per_step,
        "trainable_params": float(trainable),
        "load_seconds": load_s,
        "prompts": float(prompts.size(0)),
    }


__all__ = ["smollm2_arm"]
