"""C3PO on the real SmolLM2-135M-Instruct, offline (``icml24 c3po learn --model smollm2``): a check that the
pipeline runs on a pretrained Hugging Face chat model; its figures are reported, not judged.
"""

from __future__ import annotations

import random
import time

from ..validation import check_seed
from .baselines import in_context_prompt
from .c3po import feedback_rates, generate, sequence_kl, train_c3po
from .feedback import build_feedback_data, word_pattern
from .scopes import world_feedback
from .world import AssistantWorld
from .world_run import SAMPLING, lora_config


def smollm2_arm(
    steps: int = 30, *, key: str = "ampersand", per_category: int = 3, n_eval: int = 16, max_new_tokens: int = 40,
    lora_rank: int = 8, lr: float = 5e-4, batch: int = 4, seed: int = 0, device="cpu",
) -> dict[str, float]:  # fmt: skip
    """C3PO on the real SmolLM2-135M-Instruct: a check that the pipeline runs on a pretrained Hugging Face chat
    model offline (its figures are reported, not judged).

    The assistant world's prompts (train names and topics for the data, test ones for evaluation) go through the
    model's chat template; SmolLM2 answers them itself (``y0``, official sampling T 0.7, top-p 0.7), the
    feedback's programmatic rewrite gives ``y+``, and C3PO trains a LoRA adapter (every linear layer but the head)
    for ``steps`` steps. Adherence and near / out-of-scope overgeneralization are measured on held-out prompts
    against the base model's own sampled answers, for the base model (greedy), the in-context baseline (the
    feedback in the prompt) and C3PO; with C3PO's out-of-scope KL to the base.

    Parameters
    ----------
    steps : int, default 30
        C3PO steps.
    key : str, default "ampersand"
        The world feedback (see :func:`world_feedback`).
    per_category : int, default 3
        In- and near-scope training prompts per category.
    n_eval : int, default 16
        Held-out prompts of each kind.
    max_new_tokens : int, default 40
        Answer length limit.
    lora_rank : int, default 8
        LoRA rank (alpha twice the rank).
    lr : float, default 5e-4
        Peak learning rate.
    batch : int, default 4
        Rows per step.
    seed : int, default 0
        Seed of the prompts, samplers and adapter.
    device : str or torch.device, default "cpu"
        Where the model runs (``"auto"``: CUDA when present).

    Returns
    -------
    dict of str to float
        ``<method>_adherence``, ``<method>_near``, ``<method>_out``, ``<method>_overgen`` for ``base``,
        ``in_context`` and ``c3po``, and ``<method>_new_share``: of the feedback's two words in the in-scope
        answers, the share of the new one (partial adherence, where an answer replaces some but not all);
        ``c3po_kl_out``; ``rows``, ``seconds_per_step``, ``load_seconds``, ``data_seconds``.
    """
    from ..nn.pretrained import load_smollm2
    from ..validation import check_device, check_int

    device = check_device(device)
    steps = check_int(steps, "steps", min_val=1)
    n_eval = check_int(n_eval, "n_eval", min_val=1)
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", min_val=1)
    seed = check_seed(seed)
    wf = world_feedback(key)
    t0 = time.perf_counter()
    model, tok = load_smollm2()
    model = model.to(device)
    m: dict[str, float] = {"load_seconds": time.perf_counter() - t0}
    world = AssistantWorld()
    t0 = time.perf_counter()

    def respond(prompts, gen_seed=seed):
        return generate(model, tok, list(prompts), max_new_tokens=max_new_tokens, seed=gen_seed, **SAMPLING)

    data = build_feedback_data(
        wf.feedback,
        categories=lambda fb: world.categories(wf.domain, "train"),
        in_scope=lambda fb, cat, n, rng: [world.prompt(wf.domain, rng, "train", topic=cat) for _ in range(n)],
        near_scope=lambda fb, cat, n, rng: [
            world.prompt(rng.choice(wf.near), rng, "train", topic=cat) for _ in range(n)
        ],
        out_of_scope=lambda n, rng: [world.prompt(rng.choice(wf.out), rng, "train") for _ in range(n)],
        respond=respond,
        prompts_per_category=per_category,
        seed=seed,
    )
    rng = random.Random(10_000 + seed)
    ev = {}
    for kind, doms in (("in", (wf.domain,)), ("near", wf.near), ("out", wf.out)):
        prompts = [world.prompt(rng.choice(doms), rng, "test") for _ in range(n_eval)]
        ev[kind] = (prompts, respond(prompts, 20_000 + seed))
    m["data_seconds"] = time.perf_counter() - t0
    cfg = lora_config(
        seed, lora_r=lora_rank, lora_alpha=2 * lora_rank, lr=lr, batch_size=batch, max_length=160, max_prompt_length=96
    )
    t0 = time.perf_counter()
    res = train_c3po(model, tok, data, config=cfg, steps=steps)
    m["seconds_per_step"] = (time.perf_counter() - t0) / steps
    m["rows"] = float(len(data.rows("train")))
    m["in_scope_with_effect"] = float(len(data.in_scope["train"]))
    arms = (("base", model, None), ("in_context", model, wf.feedback), ("c3po", res.model, None))
    p_old, p_new = word_pattern(wf.old), word_pattern(wf.new)
    for name, mdl, shown_fb in arms:
        for kind, metric in (("in", "adherence"), ("near", "near"), ("out", "out")):
            prompts, y0 = ev[kind]
            shown = [in_context_prompt(shown_fb, p) for p in prompts] if shown_fb is not None else prompts
            ys = generate(mdl, tok, shown, max_new_tokens=max_new_tokens)
            m[f"{name}_{metric}"] = feedback_rates(wf.feedback, ys, y0)
            if kind == "in":
                n_old, n_new = (sum(len(p.findall(y)) for y in ys) for p in (p_old, p_new))
                m[f"{name}_new_share"] = n_new / (n_old + n_new) if n_old + n_new else 0.0
        m[f"{name}_overgen"] = 0.5 * (m[f"{name}_near"] + m[f"{name}_out"])
    prompts = ev["out"][0]
    samples = generate(res.model, tok, prompts, max_new_tokens=max_new_tokens, do_sample=True, seed=seed)
    m["c3po_kl_out"] = float(sequence_kl(res.model, None, tok, prompts, samples).mean())
    return m


__all__ = ["smollm2_arm"]
