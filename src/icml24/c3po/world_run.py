"""One scale and seed of the assistant world, as the claims' experiment runs it.

A tiny Llama (2 layers, width 64, word-level vocabulary of about 230) is pretrained on the world's six domains,
with optional instruction prefixes so that showing it the feedback (the in-context baseline) means something.
For each feedback the official pipeline builds the data (categories = topics or dishes; in-scope, near-scope and
out-of-scope prompts from the world's templates; ``y0`` sampled from the base model at temperature 0.7 and top-p
0.7; ``y+`` the feedback's programmatic rewrite; 90/10 split), and C3PO and its peers each train a LoRA adapter on
the same rows for the same steps. Evaluation uses held-out names and topics: greedy answers, scored against the
base model's own sampled answers by the feedback's metric (adherence in scope, overgeneralization near and out of
scope), plus ``KL(pi_theta || pi_0)`` on out-of-scope prompts along answers sampled from ``pi_theta``.

:class:`WorldRun` computes each of these once and keeps it for that run only; :func:`setting` gives the sizes of a
scale and :func:`lora_config` the LoRA settings of the tiny world.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass

import torch

from ..claims import Scale
from ..errors import PrerequisiteMissing
from ..nn.lm_models import tiny_llama
from ..nn.lm_train import TrainConfig, train_lm
from ..validation import check_seed
from .baselines import in_context_prompt, train_dpo, train_scd, train_scd_negatives
from .c3po import feedback_rates, generate, sequence_kl, train_c3po
from .config import C3POConfig
from .encoding import encode
from .feedback import Feedback, FeedbackData, build_feedback_data
from .scopes import world_feedback
from .world import AssistantWorld, corpus

WORLD_TEMPLATE = "feedback : {feedback} ; {prompt}"  # the instruction prefix the base model was pretrained with
SAMPLING = dict(do_sample=True, temperature=0.7, top_p=0.7)  # official data-generation sampling
MAX_NEW = 32
LORA_LR = 1e-3  # every fine-tuned method ...
DPO_LR = 5e-4  # ... but DPO, which at 1e-3 diverges here (seed 0: KL to the base 97 nats, adherence 0.2)


@dataclass(frozen=True)
class Setting:
    """Sizes of one scale.

    Parameters
    ----------
    pretrain_steps : int
        Pretraining steps of the base model (batches of 48, lr 5e-3 with cosine decay).
    corpus : int
        Pretraining examples.
    per_category : int
        In-scope and near-scope prompts per category.
    steps : int
        LoRA steps of every fine-tuned method.
    batch : int
        Rows per step.
    n_eval : int
        Held-out prompts of each kind (official: 75).
    """

    pretrain_steps: int
    corpus: int
    per_category: int
    steps: int
    batch: int
    n_eval: int


SETTINGS = {
    Scale.SMOKE: Setting(pretrain_steps=250, corpus=3000, per_category=4, steps=120, batch=8, n_eval=40),
    Scale.QUICK: Setting(pretrain_steps=250, corpus=3000, per_category=8, steps=120, batch=8, n_eval=75),
}


def setting(scale: Scale) -> Setting:
    """Return the sizes of a scale; PAPER scale needs the official data and a 7B model.

    Parameters
    ----------
    scale : Scale

    Returns
    -------
    Setting

    Raises
    ------
    PrerequisiteMissing
        At PAPER scale (declared as the experiment's paper needs, so that ``verify`` says so before any work).
    """
    if scale not in SETTINGS:
        raise PrerequisiteMissing(
            "the paper scale needs the official feedback data (GPT-4 generated prompts for 100 feedbacks) and "
            "Mistral-7B-Instruct-v0.2, which are not available offline",
            "run at quick scale, or build FeedbackData from your own model with build_feedback_data()",
        )
    return SETTINGS[scale]


def lora_config(seed: int, **changes) -> C3POConfig:
    """The LoRA settings of the tiny world: rank 8 (alpha 16, dropout 0.05) on every linear layer but the head,
    lr 1e-3 (the tiny model needs a larger step than the official 5e-5), batches of 8 rows, anchor NLL summed
    over each answer's tokens (the official ``custom_sft_loss``: a per-sequence estimate of the forward KL; the
    token mean is ~25x weaker on these 25-token answers and lets near-scope leakage through), otherwise official
    (beta 0.1, lambda_near 0.1, lambda_out 0.2, warm-up 5 %, cosine).

    Parameters
    ----------
    seed : int
        Seed of the adapter and row order.
    **changes
        Other fields of :class:`C3POConfig`.

    Returns
    -------
    C3POConfig
    """
    base = dict(
        lora_r=8,
        lora_alpha=16,
        lr=LORA_LR,
        sft_reduction="sum",
        batch_size=8,
        max_length=64,
        max_prompt_length=48,
        seed=seed,
    )
    return C3POConfig(**{**base, **changes}).validated()


# ------------------------------------------------------------------------------------------- the world
def _pretrain(seed: int, steps: int, n_corpus: int):
    world = AssistantWorld()
    tok = world.tokenizer()
    model = tiny_llama(
        len(tok),
        max_position_embeddings=64,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        tokenizer=tok,
        seed=seed,
    )
    seqs = [
        encode(tok, p, r, C3POConfig(max_length=64, max_prompt_length=48))
        for p, r in corpus(world, n_corpus, seed=seed)
    ]
    n = max(len(s[0]) for s in seqs)
    ids = torch.full((len(seqs), n), tok.pad_token_id)
    labels = torch.full((len(seqs), n), -100)
    mask = torch.zeros((len(seqs), n), dtype=torch.long)
    for i, (a, b) in enumerate(seqs):
        ids[i, : len(a)] = torch.tensor(a)
        labels[i, : len(b)] = torch.tensor(b)
        mask[i, : len(a)] = 1

    def batch(gen: torch.Generator, bs: int) -> dict:
        ix = torch.randint(len(seqs), (bs,), generator=gen)
        n = int(mask[ix].sum(1).max())  # trim the padding shared by the whole batch
        return {"input_ids": ids[ix, :n], "labels": labels[ix, :n], "attention_mask": mask[ix, :n]}

    cfg = TrainConfig(steps=steps, batch_size=48, lr=5e-3, min_lr=5e-4, warmup=20, log_every=0, seed=seed)
    train_lm(model, batch, cfg)
    model.eval()
    return model, tok, world


def pretrained_base(scale: Scale, seed: int):
    """The tiny base model of the assistant world, pretrained for ``scale`` and ``seed`` (on each call).

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    (transformers.LlamaForCausalLM, tokenizer, AssistantWorld)
    """
    s = setting(scale)
    return _pretrain(check_seed(seed), s.pretrain_steps, s.corpus)


def responder(model, tokenizer, seed: int, template: str | None = None):
    """A ``respond(prompts) -> answers`` callable sampling the model (official sampling: T 0.7, top-p 0.7).

    Parameters
    ----------
    model : transformers.PreTrainedModel
    tokenizer : tokenizer
    seed : int
    template : str, optional
        Prompt template.

    Returns
    -------
    callable
    """

    def respond(prompts):
        return generate(
            model, tokenizer, list(prompts), max_new_tokens=MAX_NEW, seed=seed, prompt_template=template, **SAMPLING
        )

    return respond


TRAINERS = {"c3po": train_c3po, "dpo": train_dpo, "scd": train_scd, "scd_negatives": train_scd_negatives}


class WorldRun:
    """One scale and seed of the assistant world, as one experiment runs it.

    The pretrained base, each feedback's data and held-out evaluation set, and each trained adapter and its scores
    are computed on first use and kept by this object only: the claims that judge them are claims of one
    experiment (``c3po/assistant``), and nothing is kept once it returns.

    Parameters
    ----------
    scale : Scale
    seed : int
    """

    def __init__(self, scale: Scale, seed: int) -> None:
        self.scale = Scale.parse(scale)
        self.seed = check_seed(seed)
        self.setting = setting(self.scale)
        self._base = None
        self._data: dict = {}
        self._eval: dict = {}
        self._trained: dict = {}
        self._scores: dict = {}

    def base(self):
        """The pretrained base model (pretrained once per run; a fresh copy each call), its tokenizer and world.

        Returns
        -------
        (transformers.LlamaForCausalLM, tokenizer, AssistantWorld)
        """
        if self._base is None:
            self._base = pretrained_base(self.scale, self.seed)
        model, tok, world = self._base
        return copy.deepcopy(model), tok, world

    def data(self, key: str) -> FeedbackData:
        """Run the data pipeline for a world feedback with the base model's own answers.

        Parameters
        ----------
        key : str
            A feedback key (:func:`world_feedback`).

        Returns
        -------
        FeedbackData
        """
        if key not in self._data:
            self._data[key] = self._build_data(key)
        return self._data[key]

    def _build_data(self, key: str) -> FeedbackData:
        s, seed = self.setting, self.seed
        wf = world_feedback(key)
        model, tok, world = self.base()

        def categories(fb):
            return world.categories(wf.domain, "train")

        def in_scope(fb, cat, n, rng):
            return [world.prompt(wf.domain, rng, "train", topic=cat) for _ in range(n)]

        def near_scope(fb, cat, n, rng):
            return [world.prompt(rng.choice(wf.near), rng, "train", topic=cat) for _ in range(n)]

        def out_of_scope(n, rng):
            return [world.prompt(rng.choice(wf.out), rng, "train") for _ in range(n)]

        return build_feedback_data(
            wf.feedback,
            categories=categories,
            in_scope=in_scope,
            near_scope=near_scope,
            out_of_scope=out_of_scope,
            respond=responder(model, tok, seed),
            prompts_per_category=s.per_category,
            seed=seed,
        )

    def eval_set(self, key: str) -> dict:
        """Held-out evaluation prompts (test names and topics) of each kind with the base model's sampled answers.

        Parameters
        ----------
        key : str

        Returns
        -------
        dict
            ``{"in" | "near" | "out": (prompts, y0)}``.
        """
        if key not in self._eval:
            wf = world_feedback(key)
            model, tok, world = self.base()
            rng = random.Random(10_000 + self.seed)
            out = {}
            for kind, doms in (("in", (wf.domain,)), ("near", wf.near), ("out", wf.out)):
                prompts = [world.prompt(rng.choice(doms), rng, "test") for _ in range(self.setting.n_eval)]
                out[kind] = (prompts, responder(model, tok, 20_000 + self.seed)(prompts))
            self._eval[key] = out
        return self._eval[key]

    def evaluate(
        self,
        model,
        tokenizer,
        key: str,
        *,
        template: str | None = None,
        kl: bool = True,
        feedback: Feedback | None = None,
    ) -> dict[str, float]:
        """Adherence, near- and out-of-scope overgeneralization (and out-of-scope KL to the base) of a model.

        Parameters
        ----------
        model : transformers.PreTrainedModel
            A PEFT model (KL against its disabled adapter) or the base model itself (KL 0, not computed).
        tokenizer : tokenizer
        key : str
            A feedback key.
        template : str, optional
            Prompt template (the in-context baseline shows the feedback through it).
        kl : bool, default True
            Compute the out-of-scope KL (needs a PEFT model).
        feedback : Feedback, optional
            Shown in context through ``template``.

        Returns
        -------
        dict of str to float
            ``adherence``, ``near``, ``out``, ``overgen`` (mean of near and out) and, with ``kl``, ``kl_out``.
        """
        wf = world_feedback(key)
        ev = self.eval_set(key)
        res = {}
        for kind, name in (("in", "adherence"), ("near", "near"), ("out", "out")):
            prompts, y0 = ev[kind]
            shown = [in_context_prompt(feedback, p, template) for p in prompts] if feedback is not None else prompts
            ys = generate(model, tokenizer, shown, max_new_tokens=MAX_NEW)
            res[name] = feedback_rates(wf.feedback, ys, y0)
        res["overgen"] = 0.5 * (res["near"] + res["out"])
        if kl:
            prompts = ev["out"][0]
            samples = generate(model, tokenizer, prompts, max_new_tokens=MAX_NEW, do_sample=True, seed=self.seed)
            res["kl_out"] = float(sequence_kl(model, None, tokenizer, prompts, samples).mean())
        return res

    def trained(self, method: str, key: str, lambda_near: float = 0.1, lambda_out: float = 0.2):
        """One method's adapter trained on a world feedback (trained once per run; do not modify it).

        Parameters
        ----------
        method : {"c3po", "dpo", "scd", "scd_negatives"}
        key : str
        lambda_near, lambda_out : float
            Anchor weights (C3PO and SCD + negatives).

        Returns
        -------
        FeedbackResult
        """
        k = (method, key, lambda_near, lambda_out)
        if k not in self._trained:
            s = self.setting
            model, tok, _ = self.base()
            data = self.data(key)
            lr = DPO_LR if method == "dpo" else LORA_LR
            cfg = lora_config(self.seed, lambda_near=lambda_near, lambda_out=lambda_out, batch_size=s.batch, lr=lr)
            self._trained[k] = TRAINERS[method](model, tok, data, config=cfg, steps=s.steps)
        return self._trained[k]

    def scores(self, method: str, key: str, lambda_near: float = 0.1, lambda_out: float = 0.2) -> dict[str, float]:
        """One method evaluated on a world feedback (once per run).

        Parameters
        ----------
        method : {"c3po", "dpo", "scd", "scd_negatives", "in_context", "base"}
        key : str
        lambda_near, lambda_out : float

        Returns
        -------
        dict of str to float
        """
        k = (method, key, lambda_near, lambda_out)
        if k not in self._scores:
            if method in ("in_context", "base"):
                model, tok, _ = self.base()
                fb = world_feedback(key).feedback if method == "in_context" else None
                tpl = WORLD_TEMPLATE if fb else None
                self._scores[k] = self.evaluate(model, tok, key, template=tpl, kl=False, feedback=fb)
            else:
                res = self.trained(method, key, lambda_near, lambda_out)
                _, tok, _ = self.base()
                self._scores[k] = self.evaluate(res.model, tok, key)
        return dict(self._scores[k])


__all__ = [
    "Setting",
    "SETTINGS",
    "setting",
    "lora_config",
    "pretrained_base",
    "responder",
    "WorldRun",
]
