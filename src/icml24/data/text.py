"""Text data for the language-model methods: real corpora from the data root, Hugging Face tokenizers built
locally (character level, byte-level BPE), an enumerable synthetic language with exact sequence-level
distributions, and programmatic rewards standing in for reward models."""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np
import torch

from ..errors import DataError, InputError
from ..validation import check_seed
from ._root import data_root, require_files

SPECIALS = ("<pad>", "<bos>", "<eos>", "<sep>")
AUSTEN_NOVELS = ("emma", "mansfieldpark", "northangerabbey", "persuasion", "prideprejudice", "sensesensibility")


# ------------------------------------------------------------------------------------------------ corpora
def tiny_shakespeare(*, root: str | os.PathLike | None = None) -> str:
    """Read Karpathy's tiny Shakespeare (1.1 MB of plain text) from ``<root>/tinyshakespeare/input.txt``.

    Parameters
    ----------
    root : str or os.PathLike, optional
        The data root (default ``$ICML24_DATA`` or ``~/.cache/icml24``); it may be read-only.

    Returns
    -------
    str
        The whole text.

    Raises
    ------
    DataUnavailable
        If ``input.txt`` is missing (it comes from github.com/karpathy/char-rnn, folder ``data/``).
    DataError
        If the file is not readable UTF-8 text.
    """
    folder = data_root(root) / "tinyshakespeare"
    (path,) = require_files(
        folder, ["input.txt"], "tiny Shakespeare", "github.com/karpathy/char-rnn, data/", fetch_name="tinyshakespeare"
    )
    return _read_text(path)


def austen(novels: Sequence[str] | None = None, *, root: str | os.PathLike | None = None) -> str:
    """Read Jane Austen's novels (all six by default) from ``<root>/austen/<name>.txt``, joined by blank lines.

    Parameters
    ----------
    novels : sequence of str, optional
        Names from :data:`AUSTEN_NOVELS` (``"emma"``, ``"mansfieldpark"``, ``"northangerabbey"``,
        ``"persuasion"``, ``"prideprejudice"``, ``"sensesensibility"``), read in the given order; all six by
        default.
    root : str or os.PathLike, optional
        The data root (default ``$ICML24_DATA`` or ``~/.cache/icml24``); it may be read-only.

    Returns
    -------
    str
        The novels' texts joined by blank lines.

    Raises
    ------
    InputError
        If ``novels`` is empty or names an unknown novel.
    DataUnavailable
        If a novel's file is missing (the texts come from the Debian package r-cran-janeaustenr).
    DataError
        If a file is not readable UTF-8 text.
    """
    names = list(novels) if novels is not None else list(AUSTEN_NOVELS)
    unknown = [n for n in names if n not in AUSTEN_NOVELS]
    if unknown or not names:
        raise InputError(f"unknown novels {unknown}", f"choose from: {', '.join(AUSTEN_NOVELS)}")
    paths = require_files(
        data_root(root) / "austen", [f"{n}.txt" for n in names], "Austen's novels", "Debian package r-cran-janeaustenr"
    )
    return "\n\n".join(_read_text(p) for p in paths)


def _read_text(path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path} is not readable UTF-8 text: {exc}") from None


def split_text(text: str, val_fraction: float = 0.1) -> tuple[str, str]:
    """Split a text into its first ``1 - val_fraction`` for training and the rest for validation (nanoGPT's split).

    Parameters
    ----------
    text : str
        The corpus.
    val_fraction : float, default 0.1
        Fraction of the characters, taken from the end, used for validation; in (0, 1).

    Returns
    -------
    train, val : str
        The two contiguous parts; ``train + val == text``.

    Raises
    ------
    InputError
        If ``val_fraction`` is not in (0, 1).
    """
    if not 0.0 < val_fraction < 1.0:
        raise InputError(f"val_fraction must be in (0, 1), got {val_fraction!r}")
    cut = int(len(text) * (1.0 - val_fraction))
    return text[:cut], text[cut:]


# --------------------------------------------------------------------------------------------- tokenizers
def _wrap(tok, specials: Sequence[str]):
    from transformers import PreTrainedTokenizerFast

    names = {
        "<pad>": "pad_token",
        "<bos>": "bos_token",
        "<eos>": "eos_token",
        "<sep>": "sep_token",
        "<unk>": "unk_token",
    }
    kwargs = {names[s]: s for s in specials if s in names}
    return PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


def char_tokenizer(chars: str | Iterable[str], *, specials: Sequence[str] = SPECIALS, unk: bool = True):
    """Build a character-level Hugging Face tokenizer (``PreTrainedTokenizerFast``) over the given characters.

    Special tokens come first (``<pad>``, ``<bos>``, ``<eos>``, ``<sep>``), then ``<unk>`` when ``unk``, then
    the characters. Built locally; nothing is downloaded.

    Parameters
    ----------
    chars : str or iterable of str
        A corpus (its distinct characters become the vocabulary, sorted) or an alphabet.
    specials : sequence of str, default SPECIALS
        Special tokens, placed first in the vocabulary; the usual names are mapped to the tokenizer's
        ``pad_token``, ``bos_token``, ``eos_token`` and ``sep_token``.
    unk : bool, default True
        Add an ``<unk>`` token for characters outside the vocabulary.

    Returns
    -------
    transformers.PreTrainedTokenizerFast
        The tokenizer; ``decode`` joins characters without spaces.

    Raises
    ------
    InputError
        If ``chars`` has no characters.
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


def bpe_tokenizer(
    texts: Iterable[str], vocab_size: int = 512, *, specials: Sequence[str] = SPECIALS, min_frequency: int = 2
):
    """Train a byte-level BPE tokenizer locally with the ``tokenizers`` library (GPT-2's scheme).

    Parameters
    ----------
    texts : iterable of str
        The training texts.
    vocab_size : int, default 512
        Target vocabulary size, at least ``256 + len(specials)`` (the bytes and the special tokens).
    specials : sequence of str, default SPECIALS
        Special tokens added to the vocabulary.
    min_frequency : int, default 2
        Minimum count of a pair to be merged.

    Returns
    -------
    transformers.PreTrainedTokenizerFast
        The trained tokenizer.

    Raises
    ------
    InputError
        If ``vocab_size`` is not an integer of at least ``256 + len(specials)``.
    """
    from tokenizers import ByteLevelBPETokenizer

    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 256 + len(specials):
        raise InputError(f"vocab_size must be an integer >= {256 + len(specials)} (bytes + specials)")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        texts, vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=list(specials), show_progress=False
    )
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

    Parameters
    ----------
    symbols : str, default "abcd"
        The alphabet: at least two distinct characters, none of them whitespace, ``<`` or ``>``.
    prompt_len : int, default 2
        Symbols per prompt (>= 1).
    response_len : int, default 4
        Symbols per response (>= 1); ``len(symbols) ** response_len`` may not exceed 100,000.
    seed : int, default 0
        Seed of the ground-truth process.
    concentration : float, default 0.7
        Dirichlet concentration of the ground-truth next-symbol distributions (smaller is peakier).

    Attributes
    ----------
    tokenizer : transformers.PreTrainedTokenizerFast
        A character tokenizer over the symbols (:func:`char_tokenizer`, no ``<unk>``).
    symbol_ids : torch.Tensor
        Token ids of the symbols, in the order of ``symbols``.
    bos_id, sep_id, eos_id, pad_id : int
        Token ids of the special tokens.

    Raises
    ------
    InputError
        If an argument is invalid or there are too many responses to enumerate.
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
        self._first = rng.dirichlet(np.full(k, self.concentration), size=k**self.prompt_len)
        self._trans = rng.dirichlet(np.full(k, self.concentration), size=k)

    @property
    def vocab_size(self) -> int:
        """Number of tokens of the tokenizer (special tokens and symbols).

        Returns
        -------
        int
        """
        return len(self.tokenizer)

    @property
    def seq_len(self) -> int:
        """Length of a complete sequence ``<bos> prompt <sep> response <eos>``: ``prompt_len + response_len + 3``.

        Returns
        -------
        int
        """
        return self.prompt_len + self.response_len + 3

    @property
    def response_start(self) -> int:
        """Index of the first response token in a sequence: ``prompt_len + 2``.

        Returns
        -------
        int
        """
        return self.prompt_len + 2

    def prompts(self) -> list[str]:
        """Return every prompt, in lexicographic order of the symbols' positions in ``symbols``.

        Returns
        -------
        list of str
            ``len(symbols) ** prompt_len`` strings.
        """
        return ["".join(p) for p in itertools.product(self.symbols, repeat=self.prompt_len)]

    def responses(self) -> list[str]:
        """Return every response, in lexicographic order of the symbols' positions (the last varies fastest).

        This order indexes the columns of :meth:`true_logprobs`, :meth:`sequences` and reward tables.

        Returns
        -------
        list of str
            ``len(symbols) ** response_len`` strings.
        """
        return ["".join(r) for r in itertools.product(self.symbols, repeat=self.response_len)]

    def _ids(self, text: str) -> list[int]:
        return [int(self.symbol_ids[self.symbols.index(c)]) for c in text]

    def encode(self, prompt: str, response: str = "") -> list[int]:
        """Return the token ids of ``<bos> prompt <sep> response`` (+ ``<eos>`` when the response is complete).

        Parameters
        ----------
        prompt : str
            A prompt of ``prompt_len`` symbols.
        response : str, default ""
            A response or a prefix of one.

        Returns
        -------
        list of int
            The token ids.

        Raises
        ------
        InputError
            If the prompt has the wrong length or either string holds a character outside ``symbols``.
        """
        if len(prompt) != self.prompt_len or any(c not in self.symbols for c in prompt + response):
            raise InputError(f"prompt {prompt!r} / response {response!r} is not in the language")
        ids = [self.bos_id] + self._ids(prompt) + [self.sep_id] + self._ids(response)
        return ids + [self.eos_id] if len(response) == self.response_len else ids

    def sequences(self, prompt: str) -> torch.Tensor:
        """Return all ``<bos> prompt <sep> response <eos>`` for one prompt.

        Parameters
        ----------
        prompt : str
            A prompt of the language.

        Returns
        -------
        torch.Tensor
            Long tensor ``(R, seq_len)``, one row per response in the order of :meth:`responses`.
        """
        head = [self.bos_id] + self._ids(prompt) + [self.sep_id]
        grid = torch.tensor(list(itertools.product(range(len(self.symbols)), repeat=self.response_len)))
        body = self.symbol_ids[grid]
        n = body.size(0)
        return torch.cat([torch.tensor(head).expand(n, -1), body, torch.full((n, 1), self.eos_id)], dim=1)

    def decode_response(self, ids: Sequence[int]) -> str:
        """Turn token ids back into symbols; ids that are not symbols become ``"?"``.

        Parameters
        ----------
        ids : sequence of int
            Token ids, e.g. a response's slice of a sequence.

        Returns
        -------
        str
            One character per id.
        """
        inv = {int(t): s for s, t in zip(self.symbols, self.symbol_ids)}
        return "".join(inv.get(int(t), "?") for t in ids)

    def true_logprobs(self, prompt: str) -> torch.Tensor:
        """Return the log-probabilities of every response under the ground-truth process.

        Parameters
        ----------
        prompt : str
            A prompt of the language.

        Returns
        -------
        torch.Tensor
            Float64 tensor ``(R,)`` in the order of :meth:`responses`; its exponentials sum to one.

        Raises
        ------
        ValueError
            If ``prompt`` is not one of :meth:`prompts`.
        """
        pi = self.prompts().index(prompt)
        grid = np.array(list(itertools.product(range(len(self.symbols)), repeat=self.response_len)))
        lp = np.log(self._first[pi][grid[:, 0]])
        for t in range(1, self.response_len):
            lp = lp + np.log(self._trans[grid[:, t - 1], grid[:, t]])
        return torch.from_numpy(lp)

    def sample(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """Draw ``n`` sequences from the ground-truth process.

        Prompts are uniform; the first response symbol follows the prompt's distribution and the rest the
        Markov chain.

        Parameters
        ----------
        n : int
            Number of sequences.
        generator : torch.Generator
            Source of randomness (the draws are reproducible from its state).

        Returns
        -------
        torch.Tensor
            Long tensor ``(n, seq_len)`` of complete sequences ``<bos> prompt <sep> response <eos>``.
        """
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
    """A programmatic reward on the enumerable language, standing in for a reward model.

    The reward is ``weight`` per occurrence of ``symbol`` in the response, plus ``bonus`` when the response
    starts with the prompt's first symbol (prompt-dependent).

    Parameters
    ----------
    symbol : str, default "a"
        The rewarded symbol.
    weight : float, default 1.0
        Reward per occurrence of ``symbol`` in the response.
    bonus : float, default 1.0
        Reward when the response starts with the prompt's first symbol.
    """

    symbol: str = "a"
    weight: float = 1.0
    bonus: float = 1.0

    def __call__(self, prompt: str, response: str) -> float:
        """Return the reward of ``response`` to ``prompt``."""
        return self.weight * response.count(self.symbol) + (self.bonus if response[:1] == prompt[:1] else 0.0)

    def table(self, lang: EnumerableLanguage) -> torch.Tensor:
        """Return the rewards of every (prompt, response) of a language.

        Parameters
        ----------
        lang : EnumerableLanguage
            The language whose prompts and responses are enumerated.

        Returns
        -------
        torch.Tensor
            Float64 tensor ``(P, R)``, rows in the order of ``lang.prompts()``, columns of
            ``lang.responses()``.
        """
        return torch.tensor([[self(p, r) for r in lang.responses()] for p in lang.prompts()], dtype=torch.float64)


@dataclass(frozen=True)
class LexiconReward:
    """A lexicon score for free text: the summed weights of lexicon words found, per 100 words.

    Words are split on whitespace, stripped of surrounding punctuation and lower-cased before lookup; an
    empty text scores 0.

    Parameters
    ----------
    weights : dict of str to float
        Weight of each (lower-case) lexicon word; other words weigh 0.
    """

    weights: dict[str, float]

    def __call__(self, text: str) -> float:
        """Return the score of ``text``."""
        words = [w.strip(".,;:!?\"'()").lower() for w in text.split()]
        if not words:
            return 0.0
        return 100.0 * sum(self.weights.get(w, 0.0) for w in words) / len(words)


def count_reward(targets: str | Sequence[str]) -> Callable[[str], float]:
    """Make a reward counting occurrences of the target strings in a text.

    Parameters
    ----------
    targets : str or sequence of str
        One non-empty target string, or several.

    Returns
    -------
    callable
        ``reward(text) -> float``: the total number of (non-overlapping) occurrences of all targets.

    Raises
    ------
    InputError
        If no target is given or a target is empty.
    """
    items = [targets] if isinstance(targets, str) else list(targets)
    if not items or any(not t for t in items):
        raise InputError("count_reward needs non-empty target strings")
    return lambda text: float(sum(text.count(t) for t in items))


__all__ = [
    "tiny_shakespeare",
    "austen",
    "split_text",
    "char_tokenizer",
    "bpe_tokenizer",
    "EnumerableLanguage",
    "SymbolReward",
    "LexiconReward",
    "count_reward",
    "SPECIALS",
]
