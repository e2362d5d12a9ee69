"""A templated "assistant" world for learning from verbal feedback (C3PO's CPU-scale reproduction).

Six domains of user requests, each answered by template sentences that naturally contain the words ``and`` and
``you``: direct messages to a colleague, direct messages to others (a friend, a sister, ...), emails to a
colleague, recipes, math word problems and trivia. Names, topics, dishes and countries are split into a
training and a held-out test set: a pretraining corpus (world knowledge) draws from both (``split="all"``), while
fine-tuning prompts draw from the training set and evaluation prompts from the test set, so the two never share
a name or a topic.

Feedback on this world is programmatic: a word replacement (``and`` -> ``&``, ``you`` -> ``u``) scoped to one or
more domains. The pretraining corpus optionally prefixes a request with such an instruction
(``feedback : use & instead of and in dms to my colleagues ;``), after which the response applies the
replacement in its scope and, with probability ``leak``, also outside it -- the imperfect scope-following of
prompted language models that the in-context baseline of C3PO measures.

Everything is whitespace-separated lower-case words, tokenised by a word-level Hugging Face tokenizer
(:meth:`AssistantWorld.tokenizer`). Nothing is downloaded; the same seed gives the same text.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Sequence

from ..errors import InputError
from ..validation import check_choice, check_int, check_probability, check_seed

DOMAINS = ("colleague_dm", "other_dm", "colleague_email", "recipe", "math", "trivia")
SPLITS = ("train", "test", "all")
SPECIALS = ("<pad>", "<bos>", "<eos>", "<sep>", "<unk>")

_NAMES = {
    "train": (
        "maddie jared ravi lena omar tina pablo greta ivan nora sam elif bruno yuki hana dev carla felix mina otto"
    ).split(),
    "test": "zoe amir kate luca priya tom".split(),
}
_TOPICS = {
    "train": "budget launch report roadmap review offsite hiring demo survey audit invoice schedule".split(),
    "test": "migration contract webinar".split(),
}
_DISHES = {
    "train": "soup curry salad omelette pancakes risotto chili tacos stew pasta".split(),
    "test": "paella dumplings lasagna".split(),
}
_COUNTRIES = {
    "train": "peru japan egypt norway kenya chile india spain canada greece".split(),
    "test": "mexico vietnam iceland".split(),
}
_RELATIONS = "friend sister brother neighbor cousin".split()
_INGREDIENTS = "onion garlic rice beans tomato pepper butter cheese flour carrot".split()
_THINGS = "food music mountains history coffee rivers art markets".split()
_FRUITS = "apples pears books coins stamps".split()
_NUMBERS = [str(i) for i in range(2, 10)]
_DAYS = "today tomorrow friday monday".split()

_PROMPTS = {
    "colleague_dm": "write a dm to my colleague {name} about the {topic}",
    "other_dm": "write a dm to my {rel} {name} about the {topic}",
    "colleague_email": "write an email to my colleague {name} about the {topic}",
    "recipe": "give me a recipe for {dish}",
    "math": "math : {name} has {a} {fruit} and gets {b} more . how many {fruit} ?",
    "trivia": "trivia : tell me about {country}",
}
_RESPONSES = {
    "colleague_dm": (
        "hi {name} , can we talk about the {topic} and the {topic2} {day} ? thanks and see you soon",
        "hey {name} , quick note on the {topic} : the draft and the numbers are ready . let me know if you agree",
        "hi {name} , i looked at the {topic} and it looks good . can you check the {topic2} and reply {day} ?",
    ),
    "other_dm": (
        "hi {name} , can we talk about the {topic} and the {topic2} {day} ? thanks and see you soon",
        "hey {name} , about the {topic} : i miss you and i hope you are well . call me {day}",
        "hi {name} , i heard about the {topic} and it sounds fun . do you want to meet {day} ?",
    ),
    "colleague_email": (
        "dear {name} , i am writing about the {topic} and the {topic2} . could you send the notes {day} ? best regards",
        "dear {name} , thank you for the {topic} . the plan and the budget are attached . kind regards",
    ),
    "recipe": (
        "you chop the {ing} and the {ing2} , then you cook the {dish} for {a} minutes and serve it",
        "first you mix the {ing} and the {ing2} . you add it to the {dish} and bake for {a} minutes",
    ),
    "math": (
        "{name} has {a} {fruit} and gets {b} more , so you add {a} and {b} to count the {fruit}",
        "you start with {a} {fruit} and add {b} more {fruit} to find how many {name} has",
    ),
    "trivia": (
        "did you know that {country} is famous for its {thing} and its {thing2} ?",
        "{country} has great {thing} and {thing2} , and you can visit it all year",
    ),
}
_DOMAIN_PHRASES = {
    "colleague_dm": "dms to my colleagues",
    "other_dm": "dms to friends and family",
    "colleague_email": "emails to my colleagues",
    "recipe": "recipes",
    "math": "math problems",
    "trivia": "trivia answers",
}
EFFECTS = {"ampersand": ("and", "&"), "u": ("you", "u")}


def rewrite_words(text: str, old: str, new: str) -> str:
    """Replace every whole word ``old`` of a whitespace-separated text by ``new``.

    Parameters
    ----------
    text : str
        Whitespace-separated words.
    old, new : str
        The word to replace and its replacement.

    Returns
    -------
    str
        The text with single spaces between words.
    """
    return " ".join(new if w == old else w for w in text.split())


def instruction(effect: str, domain: str) -> str:
    """Return the one-sentence feedback for a word-replacement effect scoped to one domain.

    Parameters
    ----------
    effect : str
        A key of :data:`EFFECTS` (``"ampersand"``: ``and`` -> ``&``; ``"u"``: ``you`` -> ``u``).
    domain : str
        One of :data:`DOMAINS`.

    Returns
    -------
    str
        E.g. ``"use & instead of and in dms to my colleagues"``.
    """
    effect = check_choice(effect, "effect", EFFECTS)
    domain = check_choice(domain, "domain", DOMAINS)
    old, new = EFFECTS[effect]
    return f"use {new} instead of {old} in {_DOMAIN_PHRASES[domain]}"


@dataclass(frozen=True)
class AssistantWorld:
    """The templated assistant world: prompts and responses of six domains, with held-out names and topics.

    Parameters
    ----------
    leak : float, default 0.5
        In the pretraining corpus, the probability that an instruction prefix is also applied to a response
        outside its scope (inside it, it is always applied).
    instruction_rate : float, default 0.3
        Fraction of pretraining sequences prefixed with an instruction.
    """

    leak: float = 0.5
    instruction_rate: float = 0.3

    def __post_init__(self) -> None:
        check_probability(self.leak, "leak")
        check_probability(self.instruction_rate, "instruction_rate")

    # ------------------------------------------------------------------------------------------ text
    def prompt(self, domain: str, rng: random.Random, split: str = "train", *, topic: str | None = None) -> str:
        """Draw one user request of a domain.

        Parameters
        ----------
        domain : str
            One of :data:`DOMAINS`.
        rng : random.Random
            The source of randomness.
        split : {"train", "test", "all"}, default "train"
            Which names, topics, dishes and countries to draw from (train and test are disjoint; all is both).
        topic : str, optional
            Fix the topic (or dish, or country) instead of drawing it.

        Returns
        -------
        str
        """
        domain = check_choice(domain, "domain", DOMAINS)
        split = check_choice(split, "split", SPLITS)
        if not isinstance(rng, random.Random):
            raise InputError(f"rng must be a random.Random, got {type(rng).__name__}")
        slots = self._slots(rng, split, topic)
        return _PROMPTS[domain].format(**slots)

    def respond(self, prompt: str, rng: random.Random) -> str:
        """Write the world's own (ground-truth) response to a request, from its templates.

        Parameters
        ----------
        prompt : str
            A request made by :meth:`prompt` (possibly behind an instruction prefix, which is ignored).
        rng : random.Random
            Picks the template and the free slots.

        Returns
        -------
        str
        """
        domain, slots = self.parse(prompt)
        free = self._slots(rng, "train", None)
        filled = {**free, **slots}
        return rng.choice(_RESPONSES[domain]).format(**filled)

    def domain_of(self, prompt: str) -> str:
        """Return the domain of a request made by :meth:`prompt`.

        Parameters
        ----------
        prompt : str
            The request.

        Returns
        -------
        str
            One of :data:`DOMAINS`.
        """
        return self.parse(prompt)[0]

    def parse(self, prompt: str) -> tuple[str, dict]:
        """Recover the domain and the slot values of a request (an instruction prefix is skipped).

        Parameters
        ----------
        prompt : str
            The request.

        Returns
        -------
        (str, dict)
            The domain and the slots that the response templates reuse.
        """
        if not isinstance(prompt, str):
            raise InputError(f"prompt must be a str, got {type(prompt).__name__}")
        w = prompt.split(" ; ")[-1].split()
        if w[:6] == "write a dm to my colleague".split() and len(w) > 6:
            return "colleague_dm", {"name": w[6], "topic": w[-1]}
        if w[:5] == "write a dm to my".split() and len(w) > 7:
            return "other_dm", {"rel": w[5], "name": w[6], "topic": w[-1]}
        if w[:6] == "write an email to my colleague".split() and len(w) > 6:
            return "colleague_email", {"name": w[6], "topic": w[-1]}
        if w[:5] == "give me a recipe for".split() and len(w) > 5:
            return "recipe", {"dish": w[5]}
        if w[:2] == ["math", ":"] and len(w) > 6:
            return "math", {"name": w[2], "a": w[4], "fruit": w[5], "b": w[8]}
        if w[:2] == ["trivia", ":"] and len(w) > 5:
            return "trivia", {"country": w[-1]}
        raise InputError(f"prompt {prompt!r} is not a request of the assistant world", "make it with prompt()")

    def _slots(self, rng: random.Random, split: str, topic: str | None) -> dict:
        if split == "all":
            pools = {
                k: v["train"] + v["test"] for k, v in (("n", _NAMES), ("t", _TOPICS), ("d", _DISHES), ("c", _COUNTRIES))
            }
        else:
            pools = {"n": _NAMES[split], "t": _TOPICS[split], "d": _DISHES[split], "c": _COUNTRIES[split]}
        topics = pools["t"]
        t1 = topic if topic is not None else rng.choice(topics)
        others = [t for t in _TOPICS["train"] + _TOPICS["test"] if t != t1]
        ing = rng.sample(_INGREDIENTS, 2)
        th = rng.sample(_THINGS, 2)
        a, b = rng.sample(_NUMBERS, 2)
        return {
            "name": rng.choice(pools["n"]),
            "topic": t1,
            "topic2": rng.choice(others),
            "rel": rng.choice(_RELATIONS),
            "dish": topic if topic is not None else rng.choice(pools["d"]),
            "country": topic if topic is not None else rng.choice(pools["c"]),
            "ing": ing[0],
            "ing2": ing[1],
            "thing": th[0],
            "thing2": th[1],
            "fruit": rng.choice(_FRUITS),
            "a": a,
            "b": b,
            "day": rng.choice(_DAYS),
        }

    def categories(self, domain: str, split: str = "train") -> list[str]:
        """Return the categories (topics, dishes or countries) that requests of a domain are about.

        Parameters
        ----------
        domain : str
            One of :data:`DOMAINS`.
        split : {"train", "test", "all"}, default "train"

        Returns
        -------
        list of str
        """
        domain = check_choice(domain, "domain", DOMAINS)
        split = check_choice(split, "split", SPLITS)
        pick = (lambda g: g["train"] + g["test"]) if split == "all" else (lambda g: g[split])
        if domain == "recipe":
            return list(pick(_DISHES))
        if domain == "trivia":
            return list(pick(_COUNTRIES))
        return list(pick(_TOPICS))

    # ---------------------------------------------------------------------------------------- corpus
    def instructions(self) -> list[tuple[str, str, str]]:
        """Return every (effect, domain, sentence) instruction the pretraining corpus uses.

        Returns
        -------
        list of (str, str, str)
            Each effect of :data:`EFFECTS` scoped to each domain.
        """
        return [(e, d, instruction(e, d)) for e in EFFECTS for d in DOMAINS]

    def sample(self, rng: random.Random, split: str = "all") -> tuple[str, str]:
        """Draw one pretraining example: a request (with an instruction prefix at ``instruction_rate``) and its
        response (with the instruction applied in scope, and outside it with probability ``leak``).

        Parameters
        ----------
        rng : random.Random
            The source of randomness.
        split : {"train", "test", "all"}, default "all"

        Returns
        -------
        (str, str)
            The request and the response.
        """
        domain = rng.choice(DOMAINS)
        prompt = self.prompt(domain, rng, split)
        response = self.respond(prompt, rng)
        if rng.random() < self.instruction_rate:
            effect, scope, text = rng.choice(self.instructions())
            prompt = f"feedback : {text} ; {prompt}"
            if scope == domain or rng.random() < self.leak:
                response = rewrite_words(response, *EFFECTS[effect])
        return prompt, response

    def vocabulary(self) -> list[str]:
        """Return every word the world can write, sorted (the tokenizer's non-special tokens).

        Returns
        -------
        list of str
        """
        words: set[str] = set()
        for table in (_PROMPTS, _DOMAIN_PHRASES):
            for t in table.values():
                words.update(w for w in t.split() if not w.startswith("{"))
        for ts in _RESPONSES.values():
            for t in ts:
                words.update(w for w in t.split() if not w.startswith("{"))
        for group in (_NAMES, _TOPICS, _DISHES, _COUNTRIES):
            for v in group.values():
                words.update(v)
        words.update(_RELATIONS + _INGREDIENTS + _THINGS + _FRUITS + _NUMBERS + _DAYS)
        words.update(["feedback", ";", "use", "instead", "of", "in"])
        for old, new in EFFECTS.values():
            words.update([old, new])
        return sorted(words)

    def tokenizer(self):
        """Return the world's word-level Hugging Face tokenizer (cached; do not modify it).

        Special tokens first (``<pad> <bos> <eos> <sep> <unk>``), then :meth:`vocabulary`; words are split on
        whitespace and ``decode`` joins them with spaces.

        Returns
        -------
        transformers.PreTrainedTokenizerFast
        """
        return _word_tokenizer(tuple(self.vocabulary()))


@functools.lru_cache(maxsize=4)
def _word_tokenizer(words: Sequence[str]):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {s: i for i, s in enumerate(SPECIALS)}
    for w in words:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens(list(SPECIALS))
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        bos_token="<bos>",
        eos_token="<eos>",
        sep_token="<sep>",
        unk_token="<unk>",
    )


def corpus(world: AssistantWorld, n: int, *, seed: int, split: str = "all") -> list[tuple[str, str]]:
    """Draw ``n`` pretraining examples of the world.

    Parameters
    ----------
    world : AssistantWorld
        The world.
    n : int
        Number of examples (>= 1).
    seed : int
        Seed of the draw.
    split : {"train", "test", "all"}, default "all"

    Returns
    -------
    list of (str, str)
        Requests and responses.
    """
    if not isinstance(world, AssistantWorld):
        raise InputError(f"world must be an AssistantWorld, got {type(world).__name__}")
    n = check_int(n, "n", min_val=1)
    rng = random.Random(check_seed(seed))
    return [world.sample(rng, split) for _ in range(n)]


__all__ = ["AssistantWorld", "DOMAINS", "EFFECTS", "SPLITS", "corpus", "instruction", "rewrite_words"]
