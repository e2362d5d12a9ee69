"""The data of the claim experiments: the parent SmolLM2-135M-Instruct, its tokenizer, and the corpus.

Corpus: Jane Austen's six novels and tiny Shakespeare from the data root; each text is split at 90 % (the
first 90 % trains, the last 10 % validates): a fixed split. The parent's weights and its tokenizer are read
once per process (:mod:`icml24.nn.pretrained`); each experiment counts, prunes and tokenises the corpus itself
(a :class:`Corpus` of its own), so that no experiment finds another's work. Batches are contiguous blocks of
the token streams, in corpus order or drawn at random.
"""

from __future__ import annotations

import torch

from .tokenizer import compact_tokenizer, token_frequencies


def parent_model():
    """SmolLM2-135M-Instruct with its parameters frozen, a fresh copy each call (children are built from it).

    :func:`icml24.nn.pretrained.smollm2_model`: the weights :func:`~icml24.nn.pretrained.load_smollm2` loads (float32,
    offline, bit for bit), read once per process by transformers' fast GGUF reader and copied on each call.

    Returns
    -------
    transformers.LlamaForCausalLM
    """
    from ..nn.pretrained import smollm2_model

    model = smollm2_model(torch.float32)
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def parent_tokenizer():
    """SmolLM2's tokenizer (49,152 byte-level BPE pieces), read from the GGUF file without the weights.

    :func:`icml24.nn.pretrained.smollm2_tokenizer` (built once per process).

    Returns
    -------
    transformers.PreTrainedTokenizerFast
    """
    from ..nn.pretrained import smollm2_tokenizer

    return smollm2_tokenizer()


def corpus(max_chars: int | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Train and validation texts: each Austen novel and tiny Shakespeare, split at 90 %.

    Parameters
    ----------
    max_chars : int or None
        Characters kept from the start of each text (None: all).

    Returns
    -------
    (tuple of str, tuple of str)
        Train parts and validation parts, Austen's novels first.

    Raises
    ------
    DataUnavailable
        When Austen's novels or tiny Shakespeare are not under the data root.
    """
    from ..data.text import AUSTEN_NOVELS, austen, tiny_shakespeare

    docs = [austen([n]) for n in AUSTEN_NOVELS] + [tiny_shakespeare()]
    docs = [d[:max_chars] if max_chars else d for d in docs]
    cut = [int(0.9 * len(d)) for d in docs]
    return tuple(d[:c] for d, c in zip(docs, cut)), tuple(d[c:] for d, c in zip(docs, cut))


class Corpus:
    """The corpus of one experiment at one length, with what the experiment derives from it.

    SmolLM2's token counts, the compact tokenizers and the token streams are computed on first use and kept by
    this object only: an experiment builds its own and drops it when it returns, so that nothing one experiment
    computes is found by another.

    Parameters
    ----------
    max_chars : int or None
        Characters kept from the start of each text (None: all); see :func:`corpus`.

    Attributes
    ----------
    train, val : tuple of str
        Train and validation texts.
    """

    def __init__(self, max_chars: int | None) -> None:
        self.max_chars = max_chars
        self.train, self.val = corpus(max_chars)
        self._counts: dict = {}
        self._compact: dict = {}
        self._streams: dict = {}

    def counts(self, split: str):
        """SmolLM2 token frequencies of the train or validation texts.

        Parameters
        ----------
        split : {"train", "val"}

        Returns
        -------
        numpy.ndarray
        """
        if split not in self._counts:
            self._counts[split] = token_frequencies(parent_tokenizer(), self.train if split == "train" else self.val)
        return self._counts[split]

    def compact(self, vocab_size: int):
        """The compact tokenizer of ``vocab_size`` pieces, counted on the train texts.

        Parameters
        ----------
        vocab_size : int

        Returns
        -------
        CompactTokenizer
        """
        if vocab_size not in self._compact:
            self._compact[vocab_size] = compact_tokenizer(parent_tokenizer(), self.counts("train"), vocab_size)
        return self._compact[vocab_size]

    def streams(self, vocab_size: int | None) -> tuple[torch.Tensor, torch.Tensor, float]:
        """Token streams of the train and validation texts, and the validation tokens per byte.

        Parameters
        ----------
        vocab_size : int or None
            A compact vocabulary size, or None for SmolLM2's own tokenizer.

        Returns
        -------
        (torch.Tensor, torch.Tensor, float)
        """
        if vocab_size not in self._streams:
            tok = parent_tokenizer() if vocab_size is None else self.compact(vocab_size).tokenizer

            def enc(texts):  # the Rust backend directly: what tok(...) does underneath, without its BatchEncoding
                chunks = [t[i : i + 200_000] for t in texts for i in range(0, len(t), 200_000)]
                out = tok.backend_tokenizer.encode_batch(chunks, add_special_tokens=False)
                return torch.tensor([i for e in out for i in e.ids], dtype=torch.long)

            tv = enc(self.val)
            tpb = tv.numel() / sum(len(t.encode("utf-8")) for t in self.val)
            self._streams[vocab_size] = (enc(self.train), tv, tpb)
        return self._streams[vocab_size]


def compact(vocab_size: int, max_chars: int | None):
    """The compact tokenizer of ``vocab_size`` pieces, counted on the train texts of :func:`corpus`.

    Parameters
    ----------
    vocab_size : int
    max_chars : int or None

    Returns
    -------
    CompactTokenizer
    """
    return Corpus(max_chars).compact(vocab_size)


def ordered_batches(stream: torch.Tensor, n_batches: int, batch_size: int, seq_len: int) -> torch.Tensor:
    """``n_batches`` batches of contiguous blocks taken in corpus order (batch ``i`` from the ``i``-th stretch).

    Parameters
    ----------
    stream : torch.Tensor
    n_batches, batch_size, seq_len : int

    Returns
    -------
    torch.Tensor
        ``(n_batches, batch_size, seq_len)``.
    """
    n_blocks = n_batches * batch_size
    starts = torch.linspace(0, stream.numel() - seq_len - 1, n_blocks).long()
    return torch.stack([stream[s : s + seq_len] for s in starts.tolist()]).view(n_batches, batch_size, seq_len)


def random_batches(stream: torch.Tensor, n_batches: int, batch_size: int, seq_len: int, seed: int) -> torch.Tensor:
    """``n_batches`` batches of blocks drawn uniformly from the stream (seeded).

    Parameters
    ----------
    stream : torch.Tensor
    n_batches, batch_size, seq_len : int
    seed : int

    Returns
    -------
    torch.Tensor
    """
    g = torch.Generator().manual_seed(seed)
    starts = torch.randint(stream.numel() - seq_len - 1, (n_batches * batch_size,), generator=g)
    return torch.stack([stream[s : s + seq_len] for s in starts.tolist()]).view(n_batches, batch_size, seq_len)


def val_blocks(stream: torch.Tensor, n: int, seq_len: int) -> torch.Tensor:
    """``n`` evenly spaced validation blocks.

    Parameters
    ----------
    stream : torch.Tensor
    n, seq_len : int

    Returns
    -------
    torch.Tensor
    """
    starts = torch.linspace(0, stream.numel() - seq_len - 1, n).long()
    return torch.stack([stream[s : s + seq_len] for s in starts.tolist()])


__all__ = [
    "parent_model",
    "parent_tokenizer",
    "corpus",
    "Corpus",
    "compact",
    "ordered_batches",
    "random_batches",
    "val_blocks",
]
