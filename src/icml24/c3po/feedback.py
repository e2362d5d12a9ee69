"""Verbal feedback and the data pipeline of C3PO (official ``src/sample.py``), every model call replaceable.

The official pipeline, per feedback: GPT-4 proposes categories that slightly over-cover the feedback's domain;
for each category it writes in-scope prompts (inside the domain) and near-scope prompts (superficially related,
outside it); out-of-scope prompts are sampled from a general corpus (LAION OIG ``unified_chip2``); the trained
model answers every prompt (baseline ``y0``) and rewrites its in-scope answers with the feedback's ``effect``
(revised ``y+``); rows with a failed call are dropped; each set is split 90/10 into train and test. Here each of
those calls is a callable argument: a template generator offline, a local model, or an API client.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from ..errors import InputError
from ..validation import check_bool, check_choice, check_float, check_int, check_seed

KINDS = ("quantitative", "qualitative")
COMPARISONS = ("gt", "ge", "lt", "le")
PROMPTS_PER_CATEGORY = 32  # official: 32 prompts per category
TOTAL_PROMPTS = 960  # official: 960 in-scope (and near-scope, and out-of-scope) prompts, K = ceil(960 / 32)
TEST_FRACTION = 0.1  # official: train_test_split(test_size=0.1)


def check_texts(value, name: str, *, allow_blank: bool = False) -> list[str]:
    """A non-empty list (or tuple) of str; a lone str, which would be read character by character, is refused.

    Parameters
    ----------
    value : sequence of str
    name : str
    allow_blank : bool, default False
        Accept empty or whitespace-only entries.

    Returns
    -------
    list of str
    """
    if isinstance(value, (str, bytes)):
        raise InputError(f"{name} must be a list of str, not one str ({value[:30]!r})", f"pass [{name}]")
    if not isinstance(value, (list, tuple)) or not value:
        got = f"an empty {type(value).__name__}" if isinstance(value, (list, tuple)) else type(value).__name__
        raise InputError(f"{name} must be a non-empty list of str, got {got}")
    for i, v in enumerate(value):
        if not isinstance(v, str):
            raise InputError(f"{name}[{i}] must be a str, got {type(v).__name__}")
        if not allow_blank and not v.strip():
            raise InputError(f"{name}[{i}] must be a non-empty str, got {v!r}")
    return list(value)


@dataclass(frozen=True)
class Feedback:
    """One sentence of high-level verbal feedback (official ``src/feedback``: ``content``, ``domain``,
    ``effect``, ``scope``, ``type``, and a programmatic metric for quantitative feedback).

    Parameters
    ----------
    content : str
        The sentence, e.g. ``"use & instead of and in dms to my colleagues"``.
    domain : str
        Where it applies, e.g. ``"dms to my colleagues"``; must not be empty.
    effect : str
        What to change there, e.g. ``"use & instead of and"``; must not be empty.
    kind : {"quantitative", "qualitative"}, default "quantitative"
        Quantitative feedback carries a programmatic ``metric``; qualitative feedback is judged by a model.
    metric : callable, optional
        ``metric(text) -> float`` (quantitative only): e.g. 1.0 when the text uses ``&`` and no ``and``.
    comparison : {"gt", "ge", "lt", "le"}, default "gt"
        How a response improves on the baseline under ``metric``: ``metric(new) > metric(baseline)`` for
        ``"gt"``, and so on (the official ``comparison`` direction).
    rewrite : callable, optional
        ``rewrite(text) -> str``: a programmatic revision of a response that applies the effect, used in
        place of the model's own revision offline.
    """

    content: str
    domain: str
    effect: str
    kind: str = "quantitative"
    metric: Callable[[str], float] | None = field(default=None, compare=False)
    comparison: str = "gt"
    rewrite: Callable[[str], str] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in ("content", "domain", "effect"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v.strip():
                raise InputError(f"Feedback {name} must be a non-empty str, got {v!r}", f"say the feedback's {name}")
        object.__setattr__(self, "kind", check_choice(self.kind, "kind", KINDS))
        object.__setattr__(self, "comparison", check_choice(self.comparison, "comparison", COMPARISONS))
        if self.metric is not None and not callable(self.metric):
            raise InputError(f"Feedback metric must be callable, got {type(self.metric).__name__}")
        if self.rewrite is not None and not callable(self.rewrite):
            raise InputError(f"Feedback rewrite must be callable, got {type(self.rewrite).__name__}")
        if self.kind == "quantitative" and self.metric is None:
            raise InputError("a quantitative Feedback needs a metric", "pass metric=callable or kind='qualitative'")

    def improves(self, response: str, baseline: str) -> bool:
        """Return whether ``response`` implements the feedback better than ``baseline`` (programmatic metric).

        Parameters
        ----------
        response : str
            The answer to judge.
        baseline : str
            The base model's answer ``y0`` to the same prompt.

        Returns
        -------
        bool
        """
        if self.metric is None:
            raise InputError("feedback metric is None: qualitative feedback needs a judge", "pass a metric")
        if not isinstance(response, str) or not isinstance(baseline, str):
            raise InputError("response and baseline must be str")
        a, b = self._score(response), self._score(baseline)
        return {"gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b}[self.comparison]

    def _score(self, text: str) -> float:
        value = self.metric(text)
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise InputError(f"Feedback metric must return a number, got {type(value).__name__}") from None
        if math.isnan(value):
            raise InputError("Feedback metric returned NaN", "make the metric return a number for every text")
        return value

    def revise(self, response: str) -> str:
        """Apply the programmatic rewrite to a response (the offline revision ``y+``).

        Parameters
        ----------
        response : str
            A baseline answer.

        Returns
        -------
        str
        """
        if self.rewrite is None:
            raise InputError("feedback rewrite is None", "pass rewrite=callable or give the pipeline a revise callable")
        if not isinstance(response, str):
            raise InputError(f"response must be a str, got {type(response).__name__}")
        out = self.rewrite(response)
        if not isinstance(out, str):
            raise InputError(f"Feedback rewrite must return a str, got {type(out).__name__}")
        return out


def word_pattern(word: str) -> "re.Pattern[str]":
    """The whole-word pattern of :func:`word_feedback`: delimited by whitespace or punctuation, any case.

    Parameters
    ----------
    word : str
        One word without whitespace.

    Returns
    -------
    re.Pattern
    """
    if not isinstance(word, str) or not word or any(c.isspace() for c in word):
        raise InputError(f"word must be one word without whitespace, got {word!r}")
    return re.compile(rf"(?<![\w']){re.escape(word)}(?![\w'])", re.IGNORECASE)


def word_feedback(old: str, new: str, domain: str, *, content: str | None = None) -> Feedback:
    """Build a quantitative feedback that replaces the word ``old`` by ``new`` in ``domain``.

    Its metric is 1.0 when a text uses ``new`` and never ``old`` (as the official ``contains`` / ``none``
    string metrics), compared ``"gt"`` against the baseline; its rewrite replaces every whole word. A word is
    delimited by whitespace or punctuation (``"and,"`` and ``"You."`` count; ``"band"``, ``"your"`` and ``"I'm"``
    do not), matched regardless of case; a capitalised ``old`` becomes a capitalised ``new``; the text's
    whitespace and newlines are kept.

    Parameters
    ----------
    old, new : str
        Single words (no whitespace), e.g. ``"and"`` and ``"&"``.
    domain : str
        Where the feedback applies, e.g. ``"dms to my colleagues"``.
    content : str, optional
        The sentence; ``"use {new} instead of {old} in {domain}"`` by default.

    Returns
    -------
    Feedback
    """
    for name, w in (("old", old), ("new", new)):
        if not isinstance(w, str) or not w or any(c.isspace() for c in w):
            raise InputError(f"{name} must be one word without whitespace, got {w!r}")
    if old.lower() == new.lower():
        raise InputError(f"old and new must differ (ignoring case), got {old!r} and {new!r}")
    if not isinstance(domain, str) or not domain.strip():
        raise InputError(f"domain must be a non-empty str, got {domain!r}", "say where the feedback applies")
    effect = f"use {new} instead of {old}"

    word_old, word_new = word_pattern(old), word_pattern(new)
    cap = new[:1].upper() + new[1:]

    def metric(text: str) -> float:
        return float(word_new.search(text) is not None and word_old.search(text) is None)

    def rewrite(text: str) -> str:
        return word_old.sub(lambda m: cap if m.group(0)[:1].isupper() else new, text)

    content = f"{effect} in {domain}" if content is None else content
    return Feedback(content, domain, effect, metric=metric, rewrite=rewrite)


@dataclass
class FeedbackData:
    """The per-feedback data set of C3PO, split into train and test.

    Parameters
    ----------
    feedback : Feedback
        The feedback.
    categories : list of str
        The categories the prompts were written for.
    in_scope : dict of str to list of (str, str, str)
        ``"train"`` / ``"test"`` rows ``(prompt, y0, y+)``: baseline and revised answers to in-scope prompts.
    near_scope : dict of str to list of (str, str)
        ``"train"`` / ``"test"`` rows ``(prompt, y0)`` of near-scope prompts.
    out_of_scope : dict of str to list of (str, str)
        ``"train"`` / ``"test"`` rows ``(prompt, y0)`` of out-of-scope prompts.
    dropped : int, default 0
        Rows dropped because a call failed (returned None or an empty answer).
    """

    feedback: Feedback
    categories: list[str]
    in_scope: dict
    near_scope: dict
    out_of_scope: dict
    dropped: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.feedback, Feedback):
            raise InputError(f"feedback must be a Feedback, got {type(self.feedback).__name__}")
        check_texts(self.categories, "categories")
        for name in ("in_scope", "near_scope", "out_of_scope"):
            sets = getattr(self, name)
            if not isinstance(sets, dict) or not all(isinstance(sets.get(k), list) for k in ("train", "test")):
                raise InputError(f"{name} must be a dict of 'train' and 'test' lists of rows, got {sets!r:.40}")
        check_int(self.dropped, "dropped", min_val=0)

    def rows(self, split: str = "train") -> list[tuple]:
        """Return C3PO's training rows: each bundles one in-scope pair, one near-scope and one out-of-scope
        example; the three sets are truncated to the shortest, as the official code does.

        Parameters
        ----------
        split : {"train", "test"}, default "train"

        Returns
        -------
        list of ((str, str, str), (str, str), (str, str))
        """
        split = check_choice(split, "split", ("train", "test"))
        a, b, c = self.in_scope[split], self.near_scope[split], self.out_of_scope[split]
        n = min(len(a), len(b), len(c))
        return list(zip(a[:n], b[:n], c[:n]))


def _call_prompts(fn, name: str, *args) -> list[str]:
    out = fn(*args)
    if not isinstance(out, (list, tuple)) or not all(isinstance(p, str) for p in out):
        raise InputError(f"{name} must return a list of str prompts, got {type(out).__name__}")
    return [p for p in out if p.strip()]


def _split(rows: list, rng: random.Random, test_fraction: float) -> dict:
    rows = list(rows)
    rng.shuffle(rows)
    n_test = int(math.ceil(len(rows) * test_fraction)) if rows else 0
    return {"train": rows[n_test:], "test": rows[:n_test]}


def build_feedback_data(
    feedback: Feedback,
    *,
    categories: Callable[[Feedback], Sequence[str]],
    in_scope: Callable[[Feedback, str, int, random.Random], Sequence[str]],
    near_scope: Callable[[Feedback, str, int, random.Random], Sequence[str]],
    out_of_scope: Callable[[int, random.Random], Sequence[str]],
    respond: Callable[[Sequence[str]], Sequence[str | None]],
    revise: Callable[[Feedback, str, str], str | None] | None = None,
    prompts_per_category: int = PROMPTS_PER_CATEGORY,
    n_out_of_scope: int | None = None,
    test_fraction: float = TEST_FRACTION,
    filter_relevant: bool = False,
    seed: int = 42,
) -> FeedbackData:
    """Run C3PO's data pipeline for one feedback (official ``sample.py``), every model call a callable.

    Parameters
    ----------
    feedback : Feedback
        The feedback (with a domain).
    categories : callable
        ``categories(feedback) -> [str]``: the categories (official: GPT-4 proposes
        ``ceil(960 / 32) = 30``, a slight superset of the domain).
    in_scope : callable
        ``in_scope(feedback, category, n, rng) -> [str]``: ``n`` prompts inside the domain for a category.
    near_scope : callable
        ``near_scope(feedback, category, n, rng) -> [str]``: prompts superficially related but outside it.
    out_of_scope : callable
        ``out_of_scope(n, rng) -> [str]``: general prompts (official: 960 from OIG ``unified_chip2``).
    respond : callable
        ``respond(prompts) -> [str or None]``: the trained model's own baseline answers ``y0``; ``None`` or an
        empty answer drops the row (a failed call).
    revise : callable, optional
        ``revise(feedback, prompt, y0) -> str or None``: the revised answer ``y+``; the feedback's programmatic
        rewrite (:meth:`Feedback.revise`) by default.
    prompts_per_category : int, default 32
        Prompts per category for the in-scope and the near-scope sets (official: 32).
    n_out_of_scope : int, optional
        Out-of-scope prompts; as many as in-scope prompts by default (official: 960 each).
    test_fraction : float, default 0.1
        Fraction of each set held out as test (official: 0.1).
    filter_relevant : bool, default False
        Keep only in-scope rows whose ``y+`` improves on ``y0`` under the feedback's metric (official
        ``filter_relevant_feedback``; quantitative feedback only).
    seed : int, default 42
        Seeds the generators' ``random.Random`` and the split (official: 42).

    Returns
    -------
    FeedbackData
    """
    if not isinstance(feedback, Feedback):
        raise InputError(f"feedback must be a Feedback, got {type(feedback).__name__}")
    for name, fn in (
        ("categories", categories),
        ("in_scope", in_scope),
        ("near_scope", near_scope),
        ("out_of_scope", out_of_scope),
        ("respond", respond),
    ):
        if not callable(fn):
            raise InputError(f"{name} must be callable, got {type(fn).__name__}")
    if revise is not None and not callable(revise):
        raise InputError(f"revise must be callable, got {type(revise).__name__}")
    k = check_int(prompts_per_category, "prompts_per_category", min_val=1)
    test_fraction = check_float(test_fraction, "test_fraction", min_val=0.0, max_val=1.0, include_boundaries="left")
    filter_relevant = check_bool(filter_relevant, "filter_relevant")
    if filter_relevant and feedback.metric is None:
        raise InputError("filter_relevant needs a quantitative feedback (with a metric)", "set filter_relevant=False")
    seed = check_seed(seed)
    n_out_of_scope = check_int(n_out_of_scope, "n_out_of_scope", min_val=1, allow_none=True)
    if revise is None and feedback.rewrite is None:
        raise InputError("revise is None and the feedback has no rewrite", "pass revise=callable")
    rng = random.Random(seed)

    cats = check_texts(categories(feedback), "categories(feedback)")
    in_prompts, near_prompts = [], []
    for c in cats:
        in_prompts += _call_prompts(in_scope, "in_scope", feedback, c, k, rng)
        near_prompts += _call_prompts(near_scope, "near_scope", feedback, c, k, rng)
    n_out = len(in_prompts) if n_out_of_scope is None else n_out_of_scope
    out_prompts = _call_prompts(out_of_scope, "out_of_scope", n_out, rng)
    for name, ps in (("in_scope", in_prompts), ("near_scope", near_prompts), ("out_of_scope", out_prompts)):
        if not ps:
            raise InputError(f"{name} produced an empty prompt set", f"make {name} return prompts")

    def answers(prompts: list[str]) -> list:
        out = respond(prompts)
        if isinstance(out, (str, bytes)) or not isinstance(out, Iterable):
            raise InputError(f"respond must return a list of answers, got {type(out).__name__}")
        out = list(out)
        if len(out) != len(prompts):
            raise InputError(f"respond returned {len(out)} answers for {len(prompts)} prompts")
        for y in out:
            if y is not None and not isinstance(y, str):
                raise InputError(f"respond must return str or None answers, got {type(y).__name__}")
        return out

    dropped = 0
    y0_in = answers(in_prompts)
    in_rows = []
    for p, y0 in zip(in_prompts, y0_in):
        y1 = None
        if isinstance(y0, str) and y0.strip():
            y1 = revise(feedback, p, y0) if revise is not None else feedback.revise(y0)
            if y1 is not None and not isinstance(y1, str):
                raise InputError(f"revise must return a str or None, got {type(y1).__name__}")
        if not (isinstance(y1, str) and y1.strip()):
            dropped += 1
            continue
        if filter_relevant and not feedback.improves(y1, y0):
            continue
        in_rows.append((p, y0, y1))
    near_rows, out_rows = [], []
    for prompts, rows in ((near_prompts, near_rows), (out_prompts, out_rows)):
        for p, y0 in zip(prompts, answers(prompts)):
            if isinstance(y0, str) and y0.strip():
                rows.append((p, y0))
            else:
                dropped += 1
    for name, rows in (("in_scope", in_rows), ("near_scope", near_rows), ("out_of_scope", out_rows)):
        if not rows:
            raise InputError(f"no {name} row survived the pipeline", "check the respond and revise callables")
    return FeedbackData(
        feedback,
        cats,
        _split(in_rows, rng, test_fraction),
        _split(near_rows, rng, test_fraction),
        _split(out_rows, rng, test_fraction),
        dropped,
    )


__all__ = [
    "Feedback",
    "FeedbackData",
    "build_feedback_data",
    "word_feedback",
    "word_pattern",
    "KINDS",
    "COMPARISONS",
]
