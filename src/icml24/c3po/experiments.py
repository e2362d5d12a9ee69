"""The claim experiments of C3PO on the templated assistant world (:mod:`icml24.data.assistant`).

A tiny Llama (2 layers, width 64, word-level vocabulary of about 230) is pretrained on the world's six domains,
with optional instruction prefixes so that showing it the feedback (the in-context baseline) means something.
For each feedback the official pipeline builds the data (categories = topics or dishes; in-scope, near-scope and
out-of-scope prompts from the world's templates; ``y0`` sampled from the base model at temperature 0.7 and top-p
0.7; ``y+`` the feedback's programmatic rewrite; 90/10 split), and C3PO and its peers each train a LoRA adapter on
the same rows for the same steps. Evaluation uses held-out names and topics: greedy answers, scored against the
base model's own sampled answers by the feedback's metric (adherence in scope, overgeneralization near and out of
scope), plus ``KL(pi_theta || pi_0)`` on out-of-scope prompts along answers sampled from ``pi_theta``.

Feedbacks: ``"ampersand"`` = "use & instead of and in dms to my colleagues" (near scope: DMs to friends and
family, emails to colleagues; out of scope: recipes, math problems, trivia) and ``"u"`` = "use u instead of you
in recipes" (near scope: math problems, which also say "you add ..."; out of scope: the other four domains).

The three claims judge one experiment, :func:`run_assistant`: one :class:`WorldRun` pretrains the base, builds
each feedback's data and trains each adapter once, and keeps them for that run only.
"""

from __future__ import annotations

import copy
import random
import time
from dataclasses import dataclass

import torch

from ..claims import Scale
from ..data.assistant import AssistantWorld, corpus, instruction
from ..errors import InputError, PrerequisiteMissing
from ..nn.lm_models import tiny_llama
from ..nn.lm_train import TrainConfig, train_lm
from ..runs import save_figure
from ..threads import single_thread
from ..validation import check_seed
from .baselines import in_context_prompt, train_dpo, train_scd, train_scd_negatives
from .c3po import feedback_rates, generate, sequence_kl, train_c3po
from .config import C3POConfig
from .encoding import encode
from .feedback import Feedback, FeedbackData, build_feedback_data, word_feedback, word_pattern

WORLD_TEMPLATE = "feedback : {feedback} ; {prompt}"  # the instruction prefix the base model was pretrained with
SAMPLING = dict(do_sample=True, temperature=0.7, top_p=0.7)  # official data-generation sampling
MAX_NEW = 32
LORA_LR = 1e-3  # every fine-tuned method ...
DPO_LR = 5e-4  # ... but DPO, which at 1e-3 diverges here (seed 0: KL to the base 97 nats, adherence 0.2)


@dataclass(frozen=True)
class WorldFeedback:
    """One programmatic feedback of the assistant world and where it applies.

    Parameters
    ----------
    feedback : Feedback
        The feedback (metric and rewrite).
    domain : str
        The in-scope domain.
    near : tuple of str
        Near-scope domains.
    out : tuple of str
        Out-of-scope domains.
    old, new : str
        The word the feedback replaces and its replacement.
    """

    feedback: Feedback
    domain: str
    near: tuple[str, ...]
    out: tuple[str, ...]
    old: str = ""
    new: str = ""


NEAR = {
    "colleague_dm": ("other_dm", "colleague_email"),
    "other_dm": ("colleague_dm",),
    "colleague_email": ("colleague_dm",),
    "recipe": ("math",),
    "math": ("recipe",),
    "trivia": ("recipe",),
}
SHORTCUTS = {"ampersand": ("ampersand", "colleague_dm"), "u": ("u", "recipe")}


def world_feedback(key: str) -> WorldFeedback:
    """Return a feedback of the assistant world: ``"ampersand"`` ("use & instead of and in dms to my
    colleagues"), ``"u"`` ("use u instead of you in recipes"), or ``"<effect>:<domain>"`` for any effect of
    :data:`icml24.data.assistant.EFFECTS` and domain of :data:`icml24.data.assistant.DOMAINS`.

    Parameters
    ----------
    key : str
        Which feedback.

    Returns
    -------
    WorldFeedback
        Near scope: the domains that look alike (other DMs and colleague emails for colleague DMs, math for
        recipes, ...); out of scope: every other domain.
    """
    from ..data.assistant import DOMAINS, EFFECTS

    effect, domain = SHORTCUTS.get(key, tuple(str(key).split(":", 1)) if ":" in str(key) else (key, ""))
    if effect not in EFFECTS or domain not in DOMAINS:
        raise InputError(f"unknown feedback {key!r}", "use 'ampersand', 'u' or '<effect>:<domain>'")
    old, new = EFFECTS[effect]
    fb = word_feedback(old, new, instruction(effect, domain).split(" in ", 1)[1], content=instruction(effect, domain))
    near = NEAR[domain]
    out = tuple(d for d in DOMAINS if d != domain and d not in near)
    return WorldFeedback(fb, domain, near, out, old, new)


def parse_feedback(text: str) -> str:
    """Find the world feedback whose sentence is ``text`` (e.g. "use & instead of and in dms to my colleagues").

    Parameters
    ----------
    text : str
        The sentence.

    Returns
    -------
    str
        Its key ``"<effect>:<domain>"`` for :func:`world_feedback`.
    """
    world = AssistantWorld()
    said = " ".join(str(text).lower().replace("'", " ").replace('"', " ").split())
    for effect, domain, sentence in world.instructions():
        if said == sentence:
            return f"{effect}:{domain}"
    examples = "; ".join(s for _, _, s in world.instructions()[:3])
    raise InputError(f"--feedback {text!r} is not a feedback of the assistant world", f"say e.g.: {examples}")


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


# ---------------------------------------------------------------------------------------------- claims
PARETO_METHODS = ("in_context", "scd", "scd_negatives", "dpo", "c3po")


def compare(key: str, scale: Scale, seed: int, *, run: WorldRun | None = None) -> dict[str, float]:
    """C3PO against in-context, SCD, SCD + negatives and DPO on one world feedback; writes the Pareto plot.

    Parameters
    ----------
    key : str
        A feedback key (:func:`world_feedback`).
    scale : Scale
    seed : int
    run : WorldRun, optional
        The run whose base, data and adapters to use (a new one by default).

    Returns
    -------
    dict of str to float
        ``<method>_<metric>`` for the base model and every method; ``seconds``.
    """
    run = WorldRun(scale, seed) if run is None else run
    with single_thread():
        t0 = time.perf_counter()
        m = {}
        for method in ("base",) + PARETO_METHODS:
            for k, v in run.scores(method, key).items():
                m[f"{method}_{k}"] = v
        m["seconds"] = time.perf_counter() - t0
    pareto_plot(m, world_feedback(key).feedback.content, f"c3po-pareto-seed{run.seed}")
    return m


def run_assistant(scale: Scale, seed: int) -> dict[str, float]:
    """The experiment ``c3po/assistant`` of the three claims, on one base model of the assistant world: the "&"
    comparison (:func:`run_adherence`), the anchor ablations (:func:`run_anchors`) and the composition of the "&"
    and "u" adapters (:func:`run_composition`), which share the base, the "&" data and C3PO's "&" adapter.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
        The union of their metrics; their times as ``adherence_seconds`` and ``composition_seconds``.
    """
    run = WorldRun(scale, seed)
    m = run_adherence(scale, seed, run=run)
    m["adherence_seconds"] = m.pop("seconds")
    m.update(run_anchors(scale, seed, run=run))
    comp = run_composition(scale, seed, run=run)
    comp["composition_seconds"] = comp.pop("seconds")
    m.update(comp)
    return m


def run_adherence(scale: Scale, seed: int, *, run: WorldRun | None = None) -> dict[str, float]:
    """C3PO against in-context, SCD, SCD + negatives and DPO on the "&" feedback; writes the Pareto plot.

    Parameters
    ----------
    scale : Scale
    seed : int
    run : WorldRun, optional
        The run to share (a new one by default).

    Returns
    -------
    dict of str to float
    """
    return compare("ampersand", scale, seed, run=run)


def pareto_plot(m: dict, title: str, name: str):
    """Draw every method's (overgeneralization, adherence) point and save it in the current run directory.

    Parameters
    ----------
    m : dict
        Metrics of :func:`compare`.
    title : str
        The feedback.
    name : str
        File stem.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 4))
    ax = fig.subplots()
    for i, method in enumerate(PARETO_METHODS):
        point = (m[f"{method}_overgen"], m[f"{method}_adherence"])
        ax.scatter(*point, s=40)
        # labels stagger vertically, so that methods on the same point (SCD and DPO often are) stay readable
        ax.annotate(method, point, xytext=(4, 4 - 10 * (i % 3)), textcoords="offset points", fontsize=8)
    ax.set_xlabel("overgeneralization (near + out of scope, lower is better)")
    ax.set_ylabel("feedback adherence (in scope)")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.05, 1.05)
    ax.set_title(title, fontsize=9)
    save_figure(fig, name)
    return fig


def run_anchors(scale: Scale, seed: int, *, run: WorldRun | None = None) -> dict[str, float]:
    """C3PO against itself without the near-scope term and without the out-of-scope term.

    Parameters
    ----------
    scale : Scale
    seed : int
    run : WorldRun, optional
        The run to share (a new one by default).

    Returns
    -------
    dict of str to float
    """
    run = WorldRun(scale, seed) if run is None else run
    with single_thread():
        m = {}
        for name, ln, lo in (("c3po", 0.1, 0.2), ("no_near", 0.0, 0.2), ("no_out", 0.1, 0.0)):
            for k, v in run.scores("c3po", "ampersand", ln, lo).items():
                m[f"{name}_{k}"] = v
    return m


def run_composition(scale: Scale, seed: int, *, run: WorldRun | None = None) -> dict[str, float]:
    """Two C3PO adapters ("&" in colleague DMs, "u" in recipes) alone and served together: their LoRA updates
    summed (the paper's mixing, the default of :func:`compose_adapters`) and composed in logit space.

    The claim ``c3po/composition``, a declared seed-dependent finding (its text holds the six runs): it holds on
    quick seeds 0 and 1 and fails on quick seed 2 and on every smoke seed, because the "u" adapter does not learn
    its feedback reliably on its own (C3PO's DPO term degenerates the recipe answers). Tried beside it, not
    judged: C3PO at lr 5e-4 instead of 1e-3 learned "u" less often (alone 0.00 on smoke seeds 0 and 2 and quick
    seed 0); the KL-distillation anchors (``kd_lambda=1``, ``kd_temperature=1``, the official
    ``config_lcdpo_kl``) learned it on seeds 0 and 1 (1.00) and not on seed 2 (0.00), at both scales. "u" in
    other domains learned no better (alone, quick seeds 2 / 0: trivia 0.0 / 0.0; colleague DMs 0.52 / 0.25), and
    "&" in recipes not at all (0.0 on six runs): the look-alike near scope (math answers also say "you add 2 and
    9") holds it back at 120 steps.

    Parameters
    ----------
    scale : Scale
    seed : int
    run : WorldRun, optional
        The run to share (a new one by default).

    Returns
    -------
    dict of str to float
        ``<key>_alone_<metric>``, ``<key>_mixed_<metric>`` (summed updates) and ``<key>_logits_<metric>`` (logit
        space) for both feedbacks; ``seconds``.
    """
    from .adapters import compose_adapters

    run = WorldRun(scale, seed) if run is None else run
    with single_thread():
        t0 = time.perf_counter()
        m = {}
        base, tok, _ = run.base()
        adapters = [run.trained("c3po", key).model for key in ("ampersand", "u")]
        served = {mode: compose_adapters(base, adapters, mode=mode) for mode in ("logits", "weights")}
        for key in ("ampersand", "u"):
            for k, v in run.scores("c3po", key).items():
                m[f"{key}_alone_{k}"] = v
            for mode, name in (("weights", "mixed"), ("logits", "logits")):
                for k, v in run.evaluate(served[mode], tok, key, kl=False).items():
                    m[f"{key}_{name}_{k}"] = v
        m["seconds"] = time.perf_counter() - t0
    return m


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


__all__ = [
    "smollm2_arm",
    "Setting",
    "SETTINGS",
    "WorldFeedback",
    "world_feedback",
    "parse_feedback",
    "compare",
    "pareto_plot",
    "setting",
    "lora_config",
    "pretrained_base",
    "responder",
    "WorldRun",
    "run_assistant",
    "run_adherence",
    "run_anchors",
    "run_composition",
]
