"""Compact tokenizer (PanGu-pi Pro, Sec. 3.1): prune a large model's vocabulary to the pieces a corpus uses.

The official scripts (``RethinkTinyLM/tokenizer_compression``) count how often each token id of the parent
tokenizer occurs in the tokenised corpus, keep the special pieces, then the most frequent pieces up to the
target size, and delete every other piece from the SentencePiece model: pruning, not re-training. SmolLM2 and
other Llama-family models on the Hub use byte-level BPE instead; pruning a BPE vocabulary must also keep its
merges consistent, so here a piece is only kept together with the pieces its merge is made of (its merge
ancestors), and the base alphabet (the 256 byte pieces of byte-level BPE, our byte fallback) is always kept.
With that closure a word whose parent tokens are all kept is tokenised exactly as by the parent, and any
other text still round-trips, in more (shorter) pieces.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_array, check_int

_CHUNK = 200_000  # characters per tokenizer call when counting


def _backend(tokenizer) -> dict:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise InputError(
            f"tokenizer must be a fast (Rust-backed) transformers tokenizer, got {type(tokenizer).__name__}",
            "load it with AutoTokenizer.from_pretrained(..., use_fast=True)",
        )
    spec = json.loads(backend.to_str())
    kind = spec.get("model", {}).get("type")
    if kind not in ("BPE", "WordLevel"):
        raise InputError(
            f"tokenizer has a {kind} model; compact_tokenizer prunes BPE and WordLevel vocabularies",
            "use a byte-level BPE tokenizer (Llama 3, SmolLM2, GPT-2) or a WordLevel one",
        )
    return spec


def _texts(texts, name: str = "texts") -> list[str]:
    if isinstance(texts, str):
        texts = [texts]
    if isinstance(texts, dict):
        raise InputError(f"{name} must be a string or an iterable of strings, got a dict")
    try:
        out = list(texts)
    except TypeError:
        raise InputError(f"{name} must be a string or an iterable of strings, got {type(texts).__name__}") from None
    if not out or not all(isinstance(t, str) for t in out):
        raise InputError(f"{name} must be a non-empty string or a non-empty list of strings")
    if not any(out):
        raise InputError(f"{name} holds only empty strings", "give the corpus text")
    return out


def _check_counts(counts, n: int, name: str) -> np.ndarray:
    """Token counts: a numpy array of ``n`` finite, non-negative whole numbers, as ``int64``."""
    if not isinstance(counts, np.ndarray):
        raise InputError(f"{name} must be a numpy array of token counts, got {type(counts).__name__}")
    arr = check_array(counts, name, shape=(n,), allow_empty=True)
    if (arr < 0).any() or (arr != np.round(arr)).any():
        raise InputError(f"{name} must hold non-negative whole counts (token_frequencies), got other values")
    return arr.astype(np.int64)


def _encode(tokenizer, text: str) -> list[int]:
    # chunk boundaries may split a word: negligible for counting. The Rust backend encodes the chunks directly
    # (what the transformers call does underneath, without building its BatchEncoding, which is faster)
    chunks = [text[i : i + _CHUNK] for i in range(0, len(text), _CHUNK)]
    return [i for e in tokenizer.backend_tokenizer.encode_batch(chunks, add_special_tokens=False) for i in e.ids]


def token_frequencies(tokenizer, texts: str | Iterable[str]) -> np.ndarray:
    """Count how often each token id of ``tokenizer`` occurs in the tokenised corpus (the official step 1).

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerFast
        The parent's tokenizer.
    texts : str or iterable of str
        The corpus.

    Returns
    -------
    numpy.ndarray
        ``int64`` counts of shape ``(len(tokenizer),)``; ids never seen count 0.
    """
    _backend(tokenizer)
    counts = np.zeros(len(tokenizer), dtype=np.int64)
    for t in _texts(texts):
        ids = np.asarray(_encode(tokenizer, t), dtype=np.int64)
        counts += np.bincount(ids, minlength=counts.size)[: counts.size]
    return counts


def tokens_per_byte(tokenizer, texts: str | Iterable[str]) -> float:
    """Tokens the tokenizer makes per UTF-8 byte of ``texts`` (lower is a denser tokenizer).

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerFast
    texts : str or iterable of str

    Returns
    -------
    float
    """
    _backend(tokenizer)
    texts = _texts(texts)
    n_tok = sum(len(_encode(tokenizer, t)) for t in texts)
    return n_tok / sum(len(t.encode("utf-8")) for t in texts)


@dataclass(frozen=True)
class CompactTokenizer:
    """A pruned tokenizer and how it maps to its parent.

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerFast
        The compact tokenizer; a working ``transformers`` tokenizer (``save_pretrained`` writes it).
    kept_ids : torch.Tensor
        ``int64`` of shape ``(vocab_size,)``: the parent id of each new id (new ids keep the parent's order).
    old_to_new : torch.Tensor
        ``int64`` of shape ``(parent vocabulary,)``: the new id of each parent id, -1 where it was removed.
    coverage : float
        Fraction of the counted corpus tokens (parent tokenisation) whose piece was kept.
    required : int
        Pieces that were kept whatever their count: specials and the base alphabet.
    """

    tokenizer: object
    kept_ids: torch.Tensor
    old_to_new: torch.Tensor
    coverage: float
    required: int

    @property
    def vocab_size(self) -> int:
        """Return the number of pieces of the compact tokenizer.

        Returns
        -------
        int
        """
        return int(self.kept_ids.numel())


def _merge_pairs(model: dict) -> list[tuple[str, str]]:
    pairs = []
    for m in model.get("merges", []) or []:
        a, b = m if isinstance(m, (list, tuple)) else m.split(" ", 1)
        pairs.append((a, b))
    return pairs


def compact_tokenizer(
    tokenizer,
    corpus: str | Iterable[str] | np.ndarray,
    vocab_size: int,
) -> CompactTokenizer:
    """Prune ``tokenizer`` to the ``vocab_size`` pieces the corpus uses most (PanGu-pi Pro, Sec. 3.1).

    Specials (the tokenizer's special and added tokens) and, for BPE, the base alphabet (pieces no merge
    produces: the byte pieces of byte-level BPE) are always kept; then pieces in descending corpus frequency,
    each with the merge ancestors it needs, until ``vocab_size`` pieces are kept. The official code keeps
    specials then the top pieces of a SentencePiece model (48,000 of 100,883 for PanGu-pi-1B Pro).

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerFast
        The parent's tokenizer (BPE or WordLevel model); it is not modified.
    corpus : str, iterable of str, or numpy.ndarray
        The corpus text, or the counts of :func:`token_frequencies` (shape ``(len(tokenizer),)``).
    vocab_size : int
        Pieces of the compact tokenizer; at least the number of required pieces.

    Returns
    -------
    CompactTokenizer
        The new tokenizer, the id maps and the coverage of the counted tokens.

    Raises
    ------
    InputError
        If ``vocab_size`` is smaller than the required pieces or larger than the parent's vocabulary, the
        tokenizer is not a fast BPE/WordLevel tokenizer, or the counts have the wrong shape.
    """
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    spec = _backend(tokenizer)
    n_old = len(tokenizer)
    vocab_size = check_int(vocab_size, "vocab_size", min_val=1)
    if vocab_size > n_old:
        raise InputError(f"vocab_size {vocab_size} is larger than the parent's {n_old} pieces", "prune, not grow")
    if isinstance(corpus, np.ndarray):
        counts = _check_counts(corpus, n_old, "corpus")
    else:
        counts = token_frequencies(tokenizer, _texts(corpus, "corpus"))
    if counts.sum() == 0:
        raise InputError("corpus has no tokens", "give the corpus text")

    model = spec["model"]
    vocab: dict[str, int] = dict(model["vocab"])
    id_to_piece = {i: p for p, i in vocab.items()}
    added = {a["id"]: a["content"] for a in spec.get("added_tokens", [])}
    special_ids = set(added) | {int(i) for i in tokenizer.all_special_ids if i is not None}
    pairs = _merge_pairs(model)
    parents: dict[str, tuple[str, str]] = {}
    for a, b in pairs:
        parents.setdefault(a + b, (a, b))
    base = {i for p, i in vocab.items() if p not in parents} if model["type"] == "BPE" else set()
    if model.get("unk_token") in vocab:
        base.add(vocab[model["unk_token"]])
    required = sorted(special_ids | base)
    if vocab_size < len(required):
        raise InputError(
            f"vocab_size {vocab_size} is smaller than the {len(required)} pieces that must be kept "
            f"({len(special_ids)} specials, {len(base)} base pieces)",
            f"ask for at least {len(required)} pieces",
        )
    kept = set(required)

    def closure(i: int, acc: set[int]) -> None:
        stack = [i]
        while stack:
            j = stack.pop()
            if j in kept or j in acc:
                continue
            acc.add(j)
            piece = id_to_piece.get(j)
            if piece in parents:
                stack.extend(vocab[x] for x in parents[piece] if x in vocab)

    for i in np.lexsort((np.arange(n_old), -counts)):  # by count, ties by id
        if len(kept) >= vocab_size:
            break
        if counts[i] == 0:
            break
        i = int(i)
        if i in kept:
            continue
        acc: set[int] = set()
        closure(i, acc)
        if len(kept) + len(acc) <= vocab_size:
            kept |= acc
    kept_ids = torch.tensor(sorted(kept), dtype=torch.long)
    old_to_new = torch.full((n_old,), -1, dtype=torch.long)
    old_to_new[kept_ids] = torch.arange(kept_ids.numel())

    o2n = old_to_new.tolist()  # plain ints: indexing a tensor 49k times is slow
    # a deep copy of everything but the vocabulary and merges, which are rebuilt below
    new_spec = copy.deepcopy({k: v for k, v in spec.items() if k != "model"})
    new_spec["model"] = copy.deepcopy({k: v for k, v in model.items() if k not in ("vocab", "merges")})
    new_spec["model"]["vocab"] = {p: o2n[i] for p, i in vocab.items() if o2n[i] >= 0}
    if model["type"] == "BPE":
        keep_piece = set(new_spec["model"]["vocab"])
        new_spec["model"]["merges"] = [
            [a, b] for a, b in pairs if a in keep_piece and b in keep_piece and a + b in keep_piece
        ]
    new_spec["added_tokens"] = [{**a, "id": o2n[a["id"]]} for a in spec.get("added_tokens", []) if o2n[a["id"]] >= 0]
    _remap_post_processor(new_spec.get("post_processor"), old_to_new)
    backend = Tokenizer.from_str(json.dumps(new_spec))
    specials = {}
    for name in ("bos_token", "eos_token", "unk_token", "pad_token"):
        tok = getattr(tokenizer, name, None)
        if tok is not None and str(tok) in vocab and old_to_new[vocab[str(tok)]] >= 0:
            specials[name] = str(tok)
    new = PreTrainedTokenizerFast(tokenizer_object=backend, **specials)
    if getattr(tokenizer, "chat_template", None):
        new.chat_template = tokenizer.chat_template
    coverage = float(counts[kept_ids.numpy()].sum() / counts.sum())
    return CompactTokenizer(new, kept_ids, old_to_new, coverage, len(required))


def _remap_post_processor(pp, old_to_new: torch.Tensor) -> None:
    if not isinstance(pp, dict):
        return
    for p in pp.get("processors", []) or []:
        _remap_post_processor(p, old_to_new)
    st = pp.get("special_tokens")
    if isinstance(st, dict):
        for v in st.values():
            if isinstance(v, dict) and "ids" in v:
                v["ids"] = [int(old_to_new[i]) for i in v["ids"] if old_to_new[i] >= 0]


def token_coverage(compact: CompactTokenizer, counts: np.ndarray) -> float:
    """Fraction of the counted parent tokens (e.g. of held-out text) whose piece the compact tokenizer kept.

    Parameters
    ----------
    compact : CompactTokenizer
    counts : numpy.ndarray
        :func:`token_frequencies` of the parent tokenizer on some text.

    Returns
    -------
    float
    """
    if not isinstance(compact, CompactTokenizer):
        raise InputError(f"compact must be a CompactTokenizer, got {type(compact).__name__}")
    counts = _check_counts(counts, compact.old_to_new.numel(), "counts")
    if counts.sum() <= 0:
        raise InputError("counts must have a positive sum", "count the tokens of some text")
    return float(counts[compact.kept_ids.numpy()].sum() / counts.sum())


def embedding_share(model) -> float:
    """Fraction of a causal LM's parameters in its token embedding and (untied) output head.

    Parameters
    ----------
    model : transformers.PreTrainedModel

    Returns
    -------
    float
        About 0.38 for PanGu-pi-1B with 100k pieces, 0.18 with 48k (the paper's motivation).
    """
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "get_input_embeddings"):
        raise InputError(f"model must be a transformers causal LM, got {type(model).__name__}")
    seen = {id(p): p for p in model.parameters()}
    total = sum(p.numel() for p in seen.values())
    emb = {id(model.get_input_embeddings().weight): model.get_input_embeddings().weight}
    head = model.get_output_embeddings()
    if head is not None:
        emb[id(head.weight)] = head.weight
    return sum(p.numel() for p in emb.values()) / total


def bits_per_byte(nats_per_token: float, token_rate: float) -> float:
    """Convert a mean loss in nats per token to bits per byte of text.

    Parameters
    ----------
    nats_per_token : float
    token_rate : float
        Of the tokenizer on the same text.

    Returns
    -------
    float
    """
    if not (math.isfinite(nats_per_token) and math.isfinite(token_rate) and token_rate > 0):
        raise InputError("nats_per_token and token_rate must be finite, token_rate positive")
    return nats_per_token * token_rate / math.log(2)


__all__: Sequence[str] = [
    "CompactTokenizer",
    "compact_tokenizer",
    "token_frequencies",
    "tokens_per_byte",
    "token_coverage",
    "embedding_share",
    "bits_per_byte",
]
