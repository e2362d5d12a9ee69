"""Every public callable of icml24.c3po refuses bad input with a one-line InputError naming the argument, and
leaves the objects passed in (models, tensors) unchanged."""

import random
import tempfile
from pathlib import Path

import pytest
import torch

import icml24.c3po as c3po
from icml24.c3po import (
    C3POConfig,
    ComposedFeedback,
    Feedback,
    FeedbackData,
    add_lora,
    anchor_loss,
    build_feedback_data,
    c3po_loss,
    completion_only_labels,
    compose_adapters,
    dpo_loss,
    feedback_rates,
    generate,
    in_context_cot_prompts,
    in_context_prompt,
    save_adapter,
    sequence_kl,
    train_c3po,
    train_dpo,
    train_feedback,
    train_scd,
    train_scd_negatives,
    word_feedback,
)
from icml24.c3po.world import AssistantWorld
from icml24.nn.lm import tiny_llama
from icml24.testing import assert_refuses, bad, coverage_gaps

NAN = float("nan")
WORLD = AssistantWorld()
TOK = WORLD.tokenizer()
MODEL = tiny_llama(
    len(TOK), max_position_embeddings=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, tokenizer=TOK
)
SMALL = tiny_llama(10, max_position_embeddings=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2)
FB = word_feedback("and", "&", "dms to my colleagues")
QUAL = Feedback("be nice", "dms", "be nicer", kind="qualitative")
CFG = C3POConfig(lora_r=2, lora_alpha=4, batch_size=2, max_length=64, max_prompt_length=48)
PEFT = add_lora(MODEL, CFG)
PEFT2 = add_lora(MODEL, C3POConfig(**{**CFG.__dict__, "seed": 1}))
COMP = compose_adapters(MODEL, [PEFT, PEFT2], mode="logits")
IDS = torch.tensor([[5, 6, 7]])
WIDE = tiny_llama(len(TOK), max_position_embeddings=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2)
V = torch.randn(4)
V3 = torch.randn(3)
LOGITS = torch.randn(2, 5, 7)
LABELS = torch.randint(0, 7, (2, 5))
S = torch.tensor(0.5)
ROW = (
    ("write a dm to my colleague ravi about the budget", "hi and bye", "hi & bye"),
    ("write a dm to my friend lena about the budget", "hi and bye"),
    ("trivia : tell me about peru", "peru and"),
)
ROWS = [ROW, ROW]
R0 = random.Random(0)


def pipe(**kw):
    args = dict(
        categories=lambda fb: ["budget"],
        in_scope=lambda fb, c, n, rng: [WORLD.prompt("colleague_dm", rng, topic=c) for _ in range(n)],
        near_scope=lambda fb, c, n, rng: [WORLD.prompt("other_dm", rng, topic=c) for _ in range(n)],
        out_of_scope=lambda n, rng: [WORLD.prompt("trivia", rng) for _ in range(n)],
        respond=lambda ps: [WORLD.respond(p, R0) for p in ps],
        prompts_per_category=2,
    )
    args.update(kw)
    fb = args.pop("feedback", FB)
    return build_feedback_data(fb, **args)


def cfg(**kw):
    return C3POConfig(**{**CFG.__dict__, **kw})


def save_to_file():
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "file").write_text("x")
        save_adapter(PEFT, Path(d) / "file")


def data(**kw):
    sets = {"train": [], "test": []}
    args = dict(feedback=FB, categories=["a"], in_scope=sets, near_scope=sets, out_of_scope=sets)
    return FeedbackData(**{**args, **kw})


# one bad value for every field of C3POConfig: the constructor refuses each
BAD_FIELDS = {
    "beta": 0.0,
    "lambda_near": NAN,
    "lambda_out": -1.0,
    "kd_lambda": 1.5,
    "kd_temperature": 0.0,
    "use_avg_kl": 1,
    "sft_reduction": None,
    "lora_r": 2.5,
    "lora_alpha": True,
    "lora_dropout": 1.0,
    "target_modules": [],
    "lr": "5e-5",
    "warmup_ratio": 2.0,
    "weight_decay": -0.1,
    "grad_clip": float("inf"),
    "batch_size": None,
    "epochs": 0.0,
    "max_length": 1,
    "max_prompt_length": 2048,
    "prompt_template": "Q: {question}",
    "seed": -1,
}


def trainer_cases(name, fn):
    return [
        bad(name, "tokenizer", lambda: fn(SMALL, TOK, ROWS, config=CFG, steps=1), SMALL, kind="vocab"),
        bad(name, "data", lambda: fn(MODEL, TOK, [], config=CFG, steps=1), MODEL, kind="empty"),
        bad(name, "data", lambda: fn(MODEL, TOK, [ROW[0]], config=CFG, steps=1), MODEL, kind="row"),
        bad(
            name,
            "lambda_near",
            lambda: fn(MODEL, TOK, ROWS, config=cfg(lambda_near=-0.1), steps=1),
            MODEL,
            kind="negative",
        ),
        bad(
            name,
            "lambda_out",
            lambda: fn(MODEL, TOK, ROWS, config=cfg(lambda_out=-1.0), steps=1),
            MODEL,
            kind="negative",
        ),
        bad(
            name,
            "target_modules",
            lambda: fn(MODEL, TOK, ROWS, config=cfg(target_modules=("c_attn",)), steps=1),
            MODEL,
            kind="missing",
        ),
        bad(name, "steps", lambda: fn(MODEL, TOK, ROWS, config=CFG, steps=0), MODEL, kind="range"),
    ]


CASES = [
    # ------------------------------------------------------------------------------------------- Feedback
    bad("Feedback", "domain", lambda: Feedback("use &", "", "use &", metric=len), kind="empty"),
    bad("Feedback", "content", lambda: Feedback(None, "dms", "use &", metric=len), kind="none"),
    bad("Feedback", "kind", lambda: Feedback("a", "b", "c", kind="numeric", metric=len), kind="name"),
    bad("Feedback", "comparison", lambda: Feedback("a", "b", "c", comparison=">", metric=len), kind="name"),
    bad("Feedback", "metric", lambda: Feedback("a", "b", "c", metric=3), kind="type"),
    bad("Feedback", "metric", lambda: Feedback("a", "b", "c"), kind="missing"),
    bad("Feedback.improves", "response", lambda: FB.improves(None, "x"), kind="type"),
    bad("Feedback.revise", "rewrite", lambda: QUAL.revise("x"), kind="missing"),
    bad(
        "Feedback.revise",
        "rewrite",
        lambda: Feedback("a", "b", "c", metric=len, rewrite=lambda t: 3).revise("x"),
        kind="returns-int",
    ),
    bad(
        "Feedback.improves",
        "metric",
        lambda: Feedback("a", "b", "c", metric=lambda t: None).improves("a", "b"),
        kind="returns-none",
    ),
    bad(
        "Feedback.improves",
        "metric",
        lambda: Feedback("a", "b", "c", metric=lambda t: NAN).improves("a", "b"),
        kind="nan",
    ),
    bad("Feedback", "kind", lambda: Feedback("a", "b", "c", kind=None, metric=len), kind="none"),
    # ---------------------------------------------------------------------------------------- word_feedback
    bad("word_feedback", "old", lambda: word_feedback("a b", "&", "dms"), kind="space"),
    bad("word_feedback", "new", lambda: word_feedback("and", "", "dms"), kind="empty"),
    bad("word_feedback", "old", lambda: word_feedback("and", "and", "dms"), kind="same"),
    bad("word_feedback", "domain", lambda: word_feedback("and", "&", " "), kind="empty"),
    bad("word_feedback", "old", lambda: word_feedback(3, "&", "dms"), kind="type"),
    bad("word_feedback", "old", lambda: word_feedback("And", "and", "dms"), kind="same-but-case"),
    bad("word_feedback", "content", lambda: word_feedback("and", "&", "dms", content=""), kind="empty"),
    # -------------------------------------------------------------------------------- build_feedback_data
    bad("build_feedback_data", "feedback", lambda: pipe(feedback="use &"), kind="type"),
    bad("build_feedback_data", "in_scope", lambda: pipe(in_scope=lambda fb, c, n, rng: []), kind="empty"),
    bad("build_feedback_data", "categories", lambda: pipe(categories=lambda fb: []), kind="empty"),
    bad("build_feedback_data", "respond", lambda: pipe(respond="model"), kind="type"),
    bad("build_feedback_data", "respond", lambda: pipe(respond=lambda ps: ["x"]), kind="count"),
    bad("build_feedback_data", "test_fraction", lambda: pipe(test_fraction=1.0), kind="range"),
    bad("build_feedback_data", "prompts_per_category", lambda: pipe(prompts_per_category=0), kind="range"),
    bad(
        "build_feedback_data",
        "filter_relevant",
        lambda: pipe(feedback=QUAL, filter_relevant=True, revise=lambda f, p, y: y),
        kind="qualitative",
    ),
    bad("build_feedback_data", "out_of_scope", lambda: pipe(out_of_scope=lambda n, rng: "x"), kind="type"),
    bad("build_feedback_data", "categories", lambda: pipe(categories=lambda fb: "budget"), kind="str"),
    bad("build_feedback_data", "categories", lambda: pipe(categories=lambda fb: [1, 2]), kind="type"),
    bad("build_feedback_data", "categories", lambda: pipe(categories=lambda fb: None), kind="none"),
    bad("build_feedback_data", "categories", lambda: pipe(categories=lambda fb: [" "]), kind="blank"),
    bad("build_feedback_data", "respond", lambda: pipe(respond=lambda ps: "x" * len(ps)), kind="str"),
    bad("build_feedback_data", "respond", lambda: pipe(respond=lambda ps: None), kind="none"),
    bad("build_feedback_data", "respond", lambda: pipe(respond=lambda ps: [1] * len(ps)), kind="item-type"),
    bad("build_feedback_data", "revise", lambda: pipe(revise=lambda f, p, y: 3), kind="returns-int"),
    bad("build_feedback_data", "n_out_of_scope", lambda: pipe(n_out_of_scope=0), kind="range"),
    bad("build_feedback_data", "seed", lambda: pipe(seed=-1), kind="range"),
    # ----------------------------------------------------------------------------------------- FeedbackData
    bad("FeedbackData.rows", "split", lambda: pipe().rows("dev"), kind="name"),
    bad("FeedbackData", "feedback", lambda: data(feedback=None), kind="none"),
    bad("FeedbackData", "categories", lambda: data(categories="budget"), kind="str"),
    bad("FeedbackData", "in_scope", lambda: data(in_scope=None), kind="none"),
    bad("FeedbackData", "near_scope", lambda: data(near_scope={"train": []}), kind="missing-test"),
    bad("FeedbackData", "dropped", lambda: data(dropped=-1), kind="range"),
    # ------------------------------------------------------------------------------------------ C3POConfig
    bad("C3POConfig.validated", "lambda_near", lambda: cfg(lambda_near=-0.1).validated(), kind="negative"),
    bad("C3POConfig.validated", "lambda_out", lambda: cfg(lambda_out=NAN).validated(), kind="nan"),
    bad("C3POConfig.validated", "beta", lambda: cfg(beta=0.0).validated(), kind="range"),
    bad("C3POConfig.validated", "kd_lambda", lambda: cfg(kd_lambda=1.5).validated(), kind="range"),
    bad("C3POConfig.validated", "target_modules", lambda: cfg(target_modules="q_proj").validated(), kind="str"),
    bad("C3POConfig.validated", "prompt_template", lambda: cfg(prompt_template="{x}").validated(), kind="slot"),
    bad("C3POConfig.validated", "sft_reduction", lambda: cfg(sft_reduction="max").validated(), kind="name"),
    *[bad("C3POConfig", f, lambda f=f, v=v: C3POConfig(**{f: v}), kind="construct") for f, v in BAD_FIELDS.items()],
    bad("C3POConfig", "target_modules", lambda: C3POConfig(target_modules=("q_proj", 3)), kind="item-type"),
    bad("C3POConfig", "prompt_template", lambda: C3POConfig(prompt_template=3), kind="type"),
    # ---------------------------------------------------------------------------------------------- add_lora
    bad("add_lora", "target_modules", lambda: add_lora(MODEL, cfg(target_modules=("c_attn",))), MODEL, kind="missing"),
    bad("add_lora", "target_modules", lambda: add_lora(MODEL, cfg(target_modules=("lm_head",))), MODEL, kind="head"),
    bad("add_lora", "model", lambda: add_lora("gpt2", CFG), kind="type"),
    bad("add_lora", "lora_r", lambda: add_lora(MODEL, cfg(lora_r=0)), MODEL, kind="range"),
    bad("add_lora", "lora_dropout", lambda: add_lora(MODEL, cfg(lora_dropout=1.0)), MODEL, kind="range"),
    bad("add_lora", "config", lambda: add_lora(MODEL, {"lora_r": 2}), MODEL, kind="dict"),
    bad("add_lora", "config", lambda: add_lora(MODEL, 0), MODEL, kind="falsy"),
    bad("add_lora", "model", lambda: add_lora(PEFT, CFG), PEFT, kind="peft"),
    bad("add_lora", "model", lambda: add_lora(torch.nn.Linear(3, 3), CFG), kind="not-an-lm"),
    # -------------------------------------------------------------------------------------------- dpo_loss
    bad("dpo_loss", "beta", lambda: dpo_loss(V, V, V, V, beta=0.0), kind="range"),
    bad("dpo_loss", "policy_rejected_logp", lambda: dpo_loss(V, V3, V, V), kind="shape"),
    bad("dpo_loss", "ref_chosen_logp", lambda: dpo_loss(V, V, torch.full((4,), NAN), V), kind="nan"),
    bad("dpo_loss", "policy_chosen_logp", lambda: dpo_loss(LOGITS, V, V, V), kind="ndim"),
    bad("dpo_loss", "ref_rejected_logp", lambda: dpo_loss(V, V, V, None), kind="none"),
    # ------------------------------------------------------------------------------------------- c3po_loss
    bad("c3po_loss", "lambda_near", lambda: c3po_loss(V, V, V, V, S, S, lambda_near=-0.1), kind="negative"),
    bad("c3po_loss", "lambda_out", lambda: c3po_loss(V, V, V, V, S, S, lambda_out=-0.2), kind="negative"),
    bad("c3po_loss", "near_loss", lambda: c3po_loss(V, V, V, V, V, S), kind="ndim"),
    bad("c3po_loss", "out_loss", lambda: c3po_loss(V, V, V, V, S, torch.tensor(NAN)), kind="nan"),
    bad("c3po_loss", "ref_chosen_logp", lambda: c3po_loss(V, V, V3, V, S, S), kind="shape"),
    # ----------------------------------------------------------------------------------------- anchor_loss
    bad("anchor_loss", "logits", lambda: anchor_loss(LOGITS[0], LABELS), kind="ndim"),
    bad("anchor_loss", "labels", lambda: anchor_loss(LOGITS, LABELS[:, :3]), kind="shape"),
    bad("anchor_loss", "labels", lambda: anchor_loss(LOGITS, LABELS.float()), kind="dtype"),
    bad("anchor_loss", "kd_lambda", lambda: anchor_loss(LOGITS, LABELS, kd_lambda=2.0), kind="range"),
    bad("anchor_loss", "teacher_logits", lambda: anchor_loss(LOGITS, LABELS, kd_lambda=0.5), kind="missing"),
    bad("anchor_loss", "reduction", lambda: anchor_loss(LOGITS, LABELS, reduction="mean"), kind="name"),
    bad("anchor_loss", "labels", lambda: anchor_loss(LOGITS, LABELS + 100), kind="out-of-vocab"),
    bad("anchor_loss", "labels", lambda: anchor_loss(LOGITS, LABELS - 50), kind="negative"),
    bad("anchor_loss", "teacher_logits", lambda: anchor_loss(LOGITS, LABELS, teacher_logits=V), kind="shape"),
    bad("anchor_loss", "use_avg_kl", lambda: anchor_loss(LOGITS, LABELS, use_avg_kl=1), kind="type"),
    # ------------------------------------------------------------------------------ completion_only_labels
    bad("completion_only_labels", "response_template_ids", lambda: completion_only_labels([1, 2], []), kind="empty"),
    bad("completion_only_labels", "input_ids", lambda: completion_only_labels("1 2", [1]), kind="str"),
    bad("completion_only_labels", "input_ids", lambda: completion_only_labels([1, -3], [1]), kind="negative"),
    bad("completion_only_labels", "input_ids", lambda: completion_only_labels([], [1]), kind="empty"),
    bad("completion_only_labels", "response_template_ids", lambda: completion_only_labels([1], [1.5]), kind="float"),
    # ---------------------------------------------------------------------------------------- trainers
    *trainer_cases("train_feedback", train_feedback),
    bad(
        "train_feedback",
        "method",
        lambda: train_feedback(MODEL, TOK, ROWS, method="ppo", config=CFG),
        MODEL,
        kind="name",
    ),
    bad("train_feedback", "config", lambda: train_feedback(MODEL, TOK, ROWS, config={"lr": 1}), MODEL, kind="dict"),
    bad("train_feedback", "data", lambda: train_feedback(MODEL, TOK, 3, config=CFG), MODEL, kind="type"),
    bad(
        "train_feedback",
        "data",
        lambda: train_feedback(MODEL, TOK, [("abc", "ab", "ab")], config=CFG),
        MODEL,
        kind="strs",
    ),
    bad("train_feedback", "model", lambda: train_feedback(PEFT, TOK, ROWS, config=CFG, steps=1), PEFT, kind="peft"),
    *trainer_cases("train_c3po", train_c3po),
    bad("train_c3po", "config", lambda: train_c3po(MODEL, TOK, ROWS, config="c3po"), MODEL, kind="str"),
    *trainer_cases("train_dpo", train_dpo),
    *trainer_cases("train_scd", train_scd),
    *trainer_cases("train_scd_negatives", train_scd_negatives),
    # -------------------------------------------------------------------------------------------- generate
    bad("generate", "prompts", lambda: generate(MODEL, TOK, []), MODEL, kind="empty"),
    bad("generate", "prompts", lambda: generate(MODEL, TOK, "write a dm"), MODEL, kind="str"),
    bad("generate", "max_new_tokens", lambda: generate(MODEL, TOK, ["a"], max_new_tokens=0), MODEL, kind="range"),
    bad("generate", "temperature", lambda: generate(MODEL, TOK, ["a"], temperature=0.0), MODEL, kind="range"),
    bad("generate", "top_p", lambda: generate(MODEL, TOK, ["a"], top_p=2.0), MODEL, kind="range"),
    bad("generate", "prompt", lambda: generate(MODEL, TOK, [" "]), MODEL, kind="blank"),
    bad(
        "generate",
        "prompt_template",
        lambda: generate(MODEL, TOK, ["a"], prompt_template="Q: {question}"),
        MODEL,
        kind="slot",
    ),
    bad("generate", "prompt_template", lambda: generate(MODEL, TOK, ["a"], prompt_template=3), MODEL, kind="type"),
    bad("generate", "model", lambda: generate(None, TOK, ["a"]), kind="none"),
    bad("generate", "tokenizer", lambda: generate(MODEL, None, ["a"]), MODEL, kind="none"),
    bad("generate", "tokenizer", lambda: generate(SMALL, TOK, ["a"]), SMALL, kind="vocab"),
    bad("generate", "prompts", lambda: generate(MODEL, TOK, [3]), MODEL, kind="item-type"),
    bad("generate", "prompts", lambda: generate(MODEL, TOK, None), MODEL, kind="none"),
    # --------------------------------------------------------------------------------------- feedback_rates
    bad("feedback_rates", "feedback", lambda: feedback_rates("use &", ["a"], ["b"]), kind="type"),
    bad("feedback_rates", "responses", lambda: feedback_rates(FB, ["a", "b"], ["b"]), kind="count"),
    bad("feedback_rates", "responses", lambda: feedback_rates(FB, [], []), kind="empty"),
    bad("feedback_rates", "feedback", lambda: feedback_rates(QUAL, ["a"], ["b"]), kind="qualitative"),
    bad("feedback_rates", "response", lambda: feedback_rates(FB, [None], ["b"]), kind="type"),
    bad("feedback_rates", "responses", lambda: feedback_rates(FB, "ab", "cd"), kind="str"),
    bad("feedback_rates", "baselines", lambda: feedback_rates(FB, ["a"], None), kind="none"),
    bad("feedback_rates", "baselines", lambda: feedback_rates(FB, ["a"], [None]), kind="item-none"),
    bad(
        "feedback_rates",
        "metric",
        lambda: feedback_rates(Feedback("a", "b", "c", metric=lambda t: "x"), ["a"], ["b"]),
        kind="returns-str",
    ),
    # ------------------------------------------------------------------------------------------ sequence_kl
    bad("sequence_kl", "prompts", lambda: sequence_kl(PEFT, None, TOK, ["a", "b"], ["c"]), PEFT, kind="count"),
    bad("sequence_kl", "prompts", lambda: sequence_kl(PEFT, None, TOK, [], []), PEFT, kind="empty"),
    bad("sequence_kl", "reference", lambda: sequence_kl(MODEL, None, TOK, ["a"], ["b"]), MODEL, kind="none"),
    bad("sequence_kl", "prompt", lambda: sequence_kl(PEFT, None, TOK, [""], ["b"]), PEFT, kind="blank"),
    bad("sequence_kl", "response", lambda: sequence_kl(PEFT, None, TOK, ["a"], [3]), PEFT, kind="type"),
    bad(
        "sequence_kl",
        "prompt_template",
        lambda: sequence_kl(PEFT, None, TOK, ["a"], ["b"], prompt_template="Q: {question}"),
        PEFT,
        kind="slot",
    ),
    bad("sequence_kl", "prompts", lambda: sequence_kl(PEFT, None, TOK, "ab", "cd"), PEFT, kind="str"),
    bad("sequence_kl", "reference", lambda: sequence_kl(PEFT, "ref", TOK, ["a"], ["b"]), PEFT, kind="type"),
    bad("sequence_kl", "reference", lambda: sequence_kl(PEFT, SMALL, TOK, ["a"], ["b"]), PEFT, SMALL, kind="vocab"),
    bad("sequence_kl", "tokenizer", lambda: sequence_kl(PEFT, None, None, ["a"], ["b"]), PEFT, kind="none"),
    bad("sequence_kl", "policy", lambda: sequence_kl(None, MODEL, TOK, ["a"], ["b"]), MODEL, kind="none"),
    bad("sequence_kl", "responses", lambda: sequence_kl(PEFT, None, TOK, ["a"], 3), PEFT, kind="type"),
    # ----------------------------------------------------------------------------------------- save_adapter
    bad("save_adapter", "model", lambda: save_adapter(MODEL, "/tmp/never"), MODEL, kind="base"),
    bad("save_adapter", "model", lambda: save_adapter(None, "/tmp/never"), kind="none"),
    bad("save_adapter", "model", lambda: save_adapter(V, "/tmp/never"), V, kind="tensor"),
    bad("save_adapter", "model", lambda: save_adapter("adapter", "/tmp/never"), kind="str"),
    bad("save_adapter", "model", lambda: save_adapter(SMALL, "/tmp/never"), SMALL, kind="other-base"),
    bad("save_adapter", "path", lambda: save_adapter(PEFT, None), PEFT, kind="none"),
    bad("save_adapter", "path", lambda: save_adapter(PEFT, 3), PEFT, kind="type"),
    bad("save_adapter", "path", lambda: save_adapter(PEFT, " "), PEFT, kind="empty"),
    bad("save_adapter", "path", save_to_file, PEFT, kind="file"),
    # ------------------------------------------------------------------------------------- compose_adapters
    bad("compose_adapters", "adapters", lambda: compose_adapters(MODEL, []), MODEL, kind="empty"),
    bad(
        "compose_adapters",
        "weights",
        lambda: compose_adapters(MODEL, [PEFT], weights=[1.0, 1.0]),
        MODEL,
        PEFT,
        kind="count",
    ),
    bad("compose_adapters", "model", lambda: compose_adapters(PEFT, [PEFT]), PEFT, kind="peft"),
    bad(
        "compose_adapters", "adapters", lambda: compose_adapters(MODEL, ["/nonexistent-adapter"]), MODEL, kind="folder"
    ),
    bad("compose_adapters", "adapters", lambda: compose_adapters(MODEL, [MODEL]), MODEL, kind="base"),
    bad("compose_adapters", "weights", lambda: compose_adapters(MODEL, [PEFT], weights=[NAN]), MODEL, kind="nan"),
    bad("compose_adapters", "mode", lambda: compose_adapters(MODEL, [PEFT], mode="sum"), MODEL, kind="unknown"),
    bad("compose_adapters", "weights", lambda: compose_adapters(MODEL, [PEFT], weights=5), MODEL, PEFT, kind="type"),
    bad("compose_adapters", "adapters", lambda: compose_adapters(MODEL, None), MODEL, kind="none"),
    bad("compose_adapters", "model", lambda: compose_adapters(None, [PEFT]), PEFT, kind="none"),
    bad("compose_adapters", "adapters", lambda: compose_adapters(SMALL, [PEFT]), SMALL, PEFT, kind="other-vocab"),
    bad("compose_adapters", "adapters", lambda: compose_adapters(WIDE, [PEFT]), WIDE, PEFT, kind="other-width"),
    # ------------------------------------------------------------------------------------ ComposedFeedback
    bad(
        "ComposedFeedback.generate", "seed", lambda: COMP.generate(IDS, max_new_tokens=2, seed=3), COMP, kind="unknown"
    ),
    bad(
        "ComposedFeedback.generate",
        "input_ids",
        lambda: COMP.generate(IDS + 10_000, max_new_tokens=2),
        COMP,
        kind="vocab",
    ),
    bad(
        "ComposedFeedback.generate",
        "input_ids",
        lambda: COMP.generate(IDS.float(), max_new_tokens=2),
        COMP,
        kind="dtype",
    ),
    bad(
        "ComposedFeedback.generate", "attention_mask", lambda: COMP.generate(IDS, torch.ones(1, 2)), COMP, kind="shape"
    ),
    bad("ComposedFeedback.forward", "input_ids", lambda: COMP(None), COMP, kind="none"),
    bad("ComposedFeedback.forward", "input_ids", lambda: COMP(IDS[0]), COMP, kind="ndim"),
    bad("ComposedFeedback.forward", "input_ids", lambda: COMP(IDS - 10), COMP, kind="negative"),
    bad("ComposedFeedback", "peft_model", lambda: ComposedFeedback(None, ["a"], [1.0]), kind="none"),
    bad("ComposedFeedback", "names", lambda: ComposedFeedback(PEFT, ["nope"], [1.0]), PEFT, kind="unknown"),
    bad("ComposedFeedback", "names", lambda: ComposedFeedback(PEFT, "default", [1.0]), PEFT, kind="str"),
    bad("ComposedFeedback", "weights", lambda: ComposedFeedback(PEFT, ["default"], [1.0, 2.0]), PEFT, kind="count"),
    bad("ComposedFeedback", "weights", lambda: ComposedFeedback(PEFT, ["default"], [NAN]), PEFT, kind="nan"),
    # ------------------------------------------------------------------------------------ in_context_prompt
    bad("in_context_prompt", "feedback", lambda: in_context_prompt(None, "x"), kind="none"),
    bad("in_context_prompt", "prompt", lambda: in_context_prompt(FB, ""), kind="empty"),
    bad("in_context_prompt", "template", lambda: in_context_prompt(FB, "x", "{prompt}"), kind="slot"),
    bad("in_context_prompt", "template", lambda: in_context_prompt(FB, "x", 3), kind="type"),
    bad("in_context_prompt", "prompt", lambda: in_context_prompt(FB, ["x"]), kind="list"),
    # ------------------------------------------------------------------------------- in_context_cot_prompts
    bad("in_context_cot_prompts", "prompts", lambda: in_context_cot_prompts(FB, [], lambda f, p: []), kind="empty"),
    bad("in_context_cot_prompts", "prompts", lambda: in_context_cot_prompts(FB, "x", lambda f, p: [1]), kind="str"),
    bad("in_context_cot_prompts", "applies", lambda: in_context_cot_prompts(FB, ["x"], True), kind="type"),
    bad("in_context_cot_prompts", "applies", lambda: in_context_cot_prompts(FB, ["x"], lambda f, p: []), kind="count"),
    bad(
        "in_context_cot_prompts",
        "feedback",
        lambda: in_context_cot_prompts("f", ["x"], lambda f, p: [True]),
        kind="type",
    ),
    bad(
        "in_context_cot_prompts",
        "prompts",
        lambda: in_context_cot_prompts(FB, ["a", 3], lambda f, p: [True, False]),
        kind="item-type",
    ),
    bad(
        "in_context_cot_prompts",
        "applies",
        lambda: in_context_cot_prompts(FB, ["a", "b"], lambda f, p: "yn"),
        kind="returns-str",
    ),
    bad(
        "in_context_cot_prompts",
        "applies",
        lambda: in_context_cot_prompts(FB, ["a"], lambda f, p: None),
        kind="returns-none",
    ),
    bad(
        "in_context_cot_prompts",
        "applies",
        lambda: in_context_cot_prompts(FB, ["a"], lambda f, p: ["no"]),
        kind="returns-word",
    ),
    bad(
        "in_context_cot_prompts",
        "template",
        lambda: in_context_cot_prompts(FB, ["a"], lambda f, p: [False], template="x"),
        kind="slot",
    ),
    bad(
        "in_context_cot_prompts",
        "feedback",
        lambda: in_context_cot_prompts(None, ["a"], lambda f, p: [False]),
        kind="none",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_is_covered():
    exempt = {"FeedbackResult": "plain record of a training run's outcome"}
    assert coverage_gaps(c3po, CASES, exempt=exempt) == {}
