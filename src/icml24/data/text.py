"""Text data for the language-model methods: real corpora from the data root, Hugging Face tokenizers built
locally (character level, byte-level BPE), an enumerable synthetic language with exact sequence-level
distributions, and programmatic rewards standing in for reward models."""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np
import torch

from ..errors import DataError, InputError
from ._root import check_seed, data_root, require_files

SPECIALS = ("<pad>", "<bos>", "<eos>", "<sep>")
AUSTEN_NOVELS = ("emma", "mansfieldpark", "northangerabbey", "persuasion", "prideprejudice", "sensesensibility")


# ------------------------------------------------------------------------------------------------ corpora
def tiny_shakespeare(*, root: str | os.PathLike | None = None) -> str:
    """Karpathy's tiny Shakespeare (1.1 MB of plain text) from ``<root>/tinyshakespeare/input.txt``."""
    folder = data_root(root) / "tinyshakespeare"
    (path,) = require_files(folder, ["input.txt"], "tiny Shakespeare", "github.com/karpathy/char-rnn, data/")
    return _read_text(path)


def austen(novels: Sequence[str] | None = None, *, root: str | os.PathLike | None = None) -> str:
    """Jane Austen's novels (all six by default) from ``<root>/austen/<name>.txt``, joined by blank lines."""
    names = list(novels) if novels is not None else list(AUSTEN_NOVELS)
    unknown = [n for n in names if n not in AUSTEN_NOVELS]
    if unknown or not names:
        raise InputError(f"unknown novels {unknown}", f"choose from: {', '.join(AUSTEN_NOVELS)}")
    paths = require_files(data_root(root) / "austen", [f"{n}.txt" for n in names], "Austen's novels",
                          "Debian package r-cran-janeaustenr")
    return "\n\n".join(_read_text(p) for p in paths)


def _read_text(path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path} is not readable UTF-8 text: {exc}") from None


def split_text(text: str, val_fraction: float = 0.1) -> tuple[str, str]:
    """The first ``1 - val_fraction`` of the text for training and the rest for validation (nanoGPT's split)."""
    if not 0.0 < val_fraction < 1.0:
        raise InputError(f"val_fraction must be in (0, 1), got {val_fraction!r}")
    cut = int(len(text) * (1.0 - val_fraction))
    return text[:cut], text[cut:]


# --------------------------------------------------------------------------------------------- tokenizers
def _wrap(tok, specials: Sequence[str]):
    from transformers import PreTrainedTokenizerFast

    names = {"<pad>": "pad_token", "<bos>": "bos_token", "<eos>": "eos_token", "<sep>": "sep_token",
             "<unk>": "unk_token"}
    kwargs = {names[s]: s for s in specials if s in names}
    return PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


def char_tokenizer(chars: str | Iterable[str], *, specials: Sequence[str] = SPECIALS, unk: bool = True):
    """A character-level Hugging Face tokenizer (``PreTrainedTokenizerFast``) over the given characters.

    Pass a corpus (its distinct characters become the vocabulary, sorted) or an alphabet. Special tokens come
    first (``<pad>``, ``<bos>``, ``<eos>``, ``<sep>``), then ``<unk>`` when ``unk``, then the characters.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    alphabet = sorted(set(chars))
    if not alphabet:
        raise InputError("char_tokenizer needs at least one character")
    specials = list(specials) + (["<unk>"] if unk else [])
    vocab = {s: i for i, s in enumerate(specials)}
    for ch in alphabet:
        if ch not in vocab:
            vocab[ch] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>" if unk else None))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens(list(specials))
    return _wrap(tok, specials)


def bpe_tokenizer(texts: Iterable[str], vocab_size: int = 512, *, specials: Sequence[str] = SPECIALS,
                  min_frequency: int = 2):
    """A byte-level BPE tokenizer trained locally with the ``tokenizers`` library (GPT-2's scheme)."""
    from tokenizers import ByteLevelBPETokenizer

    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 256 + len(specials):
        raise InputError(f"vocab_size must be an integer >= {256 + len(specials)} (bytes + specials)")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=min_frequency,
                            special_tokens=list(specials), show_progress=False)
    return _wrap(bpe._tokenizer, specials)


# ------------------------------------------------------------------------------------ enumerable language
@dataclass
class EnumerableLanguage:
    """A synthetic prompt -> response language small enough to enumerate every response.

    Prompts are all strings of ``prompt_len`` symbols; responses all strings of ``response_len`` symbols
    (``len(symbols) ** response_len`` per prompt). A sequence is ``<bos> prompt <sep> response <eos>``. The
    language's grammar allows only symbols in a response, so a model's distribution over responses is the
    product of its next-token distributions *restricted to the symbols* at each response position: it sums
    to one over the enumerated responses, and sequence-level quantities (probabilities, KL, expected reward)
    are exact.

    ``sample(n, generator)`` draws training sequences from a seeded ground-truth process: the first response
    symbol depends on the prompt, the rest follow a random Markov chain (Dirichlet(``concentration``) rows).
    """

    symbols: str = "abcd"
    prompt_len: int = 2
    response_len: int = 4
    seed: int = 0
    concentration: float = 0.7
    tokenizer: object = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if len(set(self.symbols)) != len(self.symbols) or len(self.symbols) < 2:
            raise InputError(f"symbols must be at least two distinct characters, got {self.symbols!r}")
        if any(s in "<>" or s.isspace() for s in self.symbols):
            raise InputError("symbols may not be whitespace, '<' or '>'")
        for name in ("prompt_len", "response_len"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{name} must be a positive integer, got {v!r}")
        if len(self.symbols) ** self.response_len > 100_000:
            raise InputError("too many responses to enumerate", "use fewer symbols or a shorter response_len")
        check_seed(self.seed)
        self.tokenizer = char_tokenizer(self.symbols, unk=False)
        self.symbol_ids = torch.tensor([self.tokenizer.convert_tokens_to_ids(s) for s in self.symbols])
        self.bos_id = self.tokenizer.bos_token_id
        self.sep_id = self.tokenizer.sep_token_id
        self.eos_id = self.tokenizer.eos_token_id
        self.pad_id = self.tokenizer.pad_token_id
        rng = np.random.default_rng(self.seed)
        k = len(self.symbols)
        self._first = rng.dirichlet(np.full(k, self.concentration), size=k ** self.prompt_len)
        self._trans = rng.dirichlet(np.full(k, self.concentration), size=k)

    @property
    def vocab_size(self) -> int:
        return len(self.tokenizer)

    @property
    def seq_len(self) -> int:
        return self.prompt_len + self.response_len + 3

    @property
    def response_start(self) -> int:
        """Index of the first response token in a sequence."""
        return self.prompt_len + 2

    def prompts(self) -> list[str]:
        return ["".join(p) for p in itertools.product(self.symbols, repeat=self.prompt_len)]

    def responses(self) -> list[str]:
        return ["".join(r) for r in itertools.product(self.symbols, repeat=self.response_len)]

    def _ids(self, text: str) -> list[int]:
        return [int(self.symbol_ids[self.symbols.index(c)]) for c in text]

    def encode(self, prompt: str, response: str = "") -> list[int]:
        """Token ids of ``<bos> prompt <sep> response`` (+ ``<eos>`` when the response is complete)."""
        if len(prompt) != self.prompt_len or any(c not in self.symbols for c in prompt + response):
            raise InputError(f"prompt {prompt!r} / response {response!r} is not in the language")
        ids = [self.bos_id] + self._ids(prompt) + [self.sep_id] + self._ids(response)
        return ids + [self.eos_id] if len(response) == self.response_len else ids

    def sequences(self, prompt: str) -> torch.Tensor:
        """All ``<bos> prompt <sep> response <eos>`` for one prompt: a long tensor ``(R, seq_len)``."""
        head = [self.bos_id] + self._ids(prompt) + [self.sep_id]
        grid = torch.tensor(list(itertools.product(range(len(self.symbols)), repeat=self.response_len)))
        body = self.symbol_ids[grid]
        n = body.size(0)
        return torch.cat([torch.tensor(head).expand(n, -1), body, torch.full((n, 1), self.eos_id)], dim=1)

    def decode_response(self, ids: Sequence[int]) -> str:
        inv = {int(t): s for s, t in zip(self.symbols, self.symbol_ids)}
        return "".join(inv.get(int(t), "?") for t in ids)

    def true_logprobs(self, prompt: str) -> torch.Tensor:
        """Log-probabilities of every response under the ground-truth process (order of :meth:`responses`)."""
        pi = self.prompts().index(prompt)
        grid = np.array(list(itertools.product(range(len(self.symbols)), repeat=self.response_len)))
        lp = np.log(self._first[pi][grid[:, 0]])
        for t in range(1, self.response_len):
            lp = lp + np.log(self._trans[grid[:, t - 1], grid[:, t]])
        return torch.from_numpy(lp)

    def sample(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """``n`` sequences from the ground-truth process, shape ``(n, seq_len)``."""
        prompts = self.prompts()
        out = []
        pidx = torch.randint(len(prompts), (n,), generator=generator).tolist()
        u = torch.rand(n, self.response_len, generator=generator).numpy()
        for row, pi in enumerate(pidx):
            probs = self._first[pi]
            resp = []
            for t in range(self.response_len):
                c = int(np.searchsorted(np.cumsum(probs), u[row, t] * probs.sum()))
                c = min(c, len(self.symbols) - 1)
                resp.append(self.symbols[c])
                probs = self._trans[c]
            out.append(self.encode(prompts[pi], "".join(resp)))
        return torch.tensor(out)


# ------------------------------------------------------------------------------------------------ rewards
@dataclass(frozen=True)
class SymbolReward:
    """A programmatic reward on the enumerable language: ``weight`` per occurrence of ``symbol`` in the
    response, plus ``bonus`` when the response starts with the prompt's first symbol (prompt-dependent)."""

    symbol: str = "a"
    weight: float = 1.0
    bonus: float = 1.0

    def __call__(self, prompt: str, response: str) -> float:
        return self.weight * response.count(self.symbol) + (self.bonus if response[:1] == prompt[:1] else 0.0)

    def table(self, lang: EnumerableLanguage) -> torch.Tensor:
        """Rewards of every (prompt, response): a float64 tensor ``(P, R)``."""
        return torch.tensor([[self(p, r) for r in lang.responses()] for p in lang.prompts()], dtype=torch.float64)


@dataclass(frozen=True)
class LexiconReward:
    """A lexicon score for free text: the summed weights of lexicon words found, per 100 words."""

    weights: dict[str, float]

    def __call__(self, text: str) -> float:
        words = [w.strip(".,;:!?\"'()").lower() for w in text.split()]
        if not words:
            return 0.0
        return 100.0 * sum(self.weights.get(w, 0.0) for w in words) / len(words)


def count_reward(targets: str | Sequence[str]) -> Callable[[str], float]:
    """A reward counting occurrences of the target strings in a text."""
    items = [targets] if isinstance(targets, str) else list(targets)
    if not items or any(not t for t in items):
        raise InputError("count_reward needs non-empty target strings")
    return lambda text: float(sum(text.count(t) for t in items))


__all__ = ["tiny_shakespeare", "austen", "split_text", "char_tokenizer", "bpe_tokenizer", "EnumerableLanguage",
           "SymbolReward", "LexiconReward", "count_reward", "SPECIALS"]
