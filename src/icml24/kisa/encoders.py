"""The frozen encoders KISA sits on: a per-frame image encoder and a skill-text encoder.

The paper uses LIV's (1024-d) image and text towers, frozen. Here the text tower is the real pretrained
all-MiniLM-L6-v2 sentence encoder (384-d, offline from its registry package), and the image tower is a
*stand-in for LIV*: fixed random convolutional features on the 24 x 24 frames of the tabletop world, their
normalisation fitted once on frames unrelated to any demonstration, then a fixed random projection. Neither
is ever trained; KISA trains only its temporal module on top of them.
"""

from __future__ import annotations

import hashlib
import re
import weakref
from typing import Callable, Sequence

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_int, check_seed

# (id(encoder), skills) -> (weak reference to the encoder, embeddings); an entry leaves with its encoder, so a
# later encoder that reuses the id never meets it (encoders that cannot be weakly referenced are not cached)
_SKILL_CACHE: dict[tuple, tuple[Callable[[], object], torch.Tensor]] = {}
_MINILM: list = []


def check_texts(value, name: str) -> list[str]:
    """A list (or tuple) of strings as a new list, or a one-line InputError naming ``name``.

    One string alone is refused, not read as a list of characters: wrap a single text in a list.
    """
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InputError(f"{name} must be a list of strings, got {type(value).__name__}", "wrap one text in a list")
    texts = list(value)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InputError(f"{name}[{i}] must be a string, got {type(text).__name__}")
    return texts


class FrozenImageEncoder:
    """Fixed random-convolution features of RGB frames: the frozen stand-in for LIV's image tower.

    ``conv3x3(3 -> 32, fixed Gaussian weights) -> ReLU -> 2x2 average pool -> flatten -> standardise
    (statistics of ``fit_frames``) -> fixed Gaussian projection to ``dim````. Nothing is trained; the same
    ``seed`` gives the same encoder.

    Parameters
    ----------
    fit_frames : numpy.ndarray
        ``(N, H, W, 3)`` uint8 frames unrelated to the demonstrations (e.g.
        :func:`icml24.kisa.world.random_frames`), used once for the feature normalisation (its mean and
        sample standard deviation), so N >= 2; frames are at least 2 x 2 pixels.
    dim : int, default 128
        Output dimension.
    seed : int, default 0
        Seed of the random convolution and projection.
    """

    def __init__(self, fit_frames: np.ndarray, dim: int = 128, seed: int = 0):
        self.dim = check_int(dim, "dim", min_val=1)
        fit = _frames_tensor(fit_frames, "fit_frames")
        if fit.shape[0] < 2:
            raise InputError("fit_frames must hold at least 2 frames: one frame has no standard deviation")
        g = torch.Generator().manual_seed(check_seed(seed))
        self._size = tuple(fit.shape[2:])
        self._conv = torch.randn(32, 3, 3, 3, generator=g) / np.sqrt(27.0)
        x = self._features(fit)
        self._mean = x.mean(0)
        self._std = x.std(0) + 1e-3
        self._proj = torch.randn(x.shape[1], self.dim, generator=g) / np.sqrt(x.shape[1])

    def _features(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(torch.nn.functional.conv2d(x, self._conv, padding=1))
        return torch.nn.functional.avg_pool2d(h, 2).flatten(1)

    @torch.no_grad()
    def encode(self, frames: np.ndarray) -> torch.Tensor:
        """Embed frames.

        Parameters
        ----------
        frames : numpy.ndarray or torch.Tensor
            ``(T, H, W, 3)`` uint8 RGB frames of the size the encoder was fitted on.

        Returns
        -------
        torch.Tensor
            ``(T, dim)`` float32 embeddings.
        """
        x = _frames_tensor(frames, "frames")
        if tuple(x.shape[2:]) != self._size:
            raise InputError(f"frames have size {tuple(x.shape[2:])}, the encoder was fitted on {self._size}")
        return ((self._features(x) - self._mean) / self._std) @ self._proj

    __call__ = encode


def _frames_tensor(frames, name: str) -> torch.Tensor:
    if isinstance(frames, torch.Tensor):
        frames = frames.detach().cpu().numpy()
    if not isinstance(frames, np.ndarray):
        raise InputError(f"{name} must be a numpy array of frames, got {type(frames).__name__}")
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.shape[0] == 0 or min(frames.shape[1:3]) < 2:
        raise InputError(f"{name} must have shape (T, H, W, 3) with T >= 1 and H, W >= 2, got {frames.shape}")
    if frames.dtype != np.uint8:
        raise InputError(f"{name} must hold uint8 pixels, got dtype {frames.dtype}")
    return torch.from_numpy(frames.astype(np.float32) / 255.0).permute(0, 3, 1, 2).contiguous()


class HashedTextEncoder:
    """A deterministic bag-of-words text encoder: a fixed stand-in for a sentence encoder in tests.

    Each lower-cased word is hashed (blake2b) to a fixed Gaussian vector; a sentence is the normalised sum
    of its words' vectors. It has the ``encode(list of str) -> array`` interface of sentence-transformers.

    Parameters
    ----------
    dim : int, default 64
        Embedding dimension.
    """

    def __init__(self, dim: int = 64):
        self.dim = check_int(dim, "dim", min_val=1)

    def encode(self, sentences: Sequence[str], **kwargs) -> np.ndarray:
        """Embed sentences.

        Parameters
        ----------
        sentences : list of str
            The texts (a list or tuple; one string alone is refused, as in :func:`encode_skills`: wrap it in a
            list). An empty list gives a ``(0, dim)`` array.
        **kwargs
            Ignored (sentence-transformers' keyword arguments).

        Returns
        -------
        numpy.ndarray
            ``(len(sentences), dim)`` float32 unit vectors.
        """
        sentences = check_texts(sentences, "sentences")
        out = np.zeros((len(sentences), self.dim), np.float32)
        for i, s in enumerate(sentences):
            for w in re.findall(r"[a-z0-9]+", s.lower()):
                h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
                out[i] += np.random.default_rng(h).standard_normal(self.dim).astype(np.float32)
            out[i] /= np.linalg.norm(out[i]) + 1e-8
        return out


def _minilm():
    if not _MINILM:
        from ..nn.pretrained import load_minilm

        _MINILM.append(load_minilm())
    return _MINILM[0]


def encode_skills(skills: Sequence[str], encoder: object | Callable | None = None) -> torch.Tensor:
    """Embed a skill library with a frozen text encoder; cached per (encoder, skill list).

    Parameters
    ----------
    skills : list of str
        The skill library: distinct, non-blank strings (a list or tuple; one string alone is refused).
    encoder : object with ``encode(list of str)``, or callable, optional
        The frozen text tower; it must return a ``(K, d)`` array or tensor of finite numbers. None (default)
        loads the all-MiniLM-L6-v2 sentence encoder once per process (384-d), which needs the ``video`` extra.
        Results are cached per encoder *object* (by identity, for as long as it lives) and skill list.

    Returns
    -------
    torch.Tensor
        ``(K, d)`` float32 embeddings (a copy: editing it never reaches the cache).
    """
    skills = check_texts(skills, "skills")
    if not skills:
        raise InputError("skills is empty", "give at least one skill string")
    if not all(s.strip() for s in skills):
        raise InputError("skills must hold non-blank strings")
    if len(set(skills)) != len(skills):
        raise InputError("skills holds duplicates", "each skill string names one skill")
    if encoder is not None and not (callable(encoder) or callable(getattr(encoder, "encode", None))):
        raise InputError(f"encoder must have an encode method or be callable, got {type(encoder).__name__}")
    key = ("minilm" if encoder is None else id(encoder), tuple(skills))
    hit = _SKILL_CACHE.get(key)
    if hit is None or hit[0]() is not encoder:
        enc = _minilm() if encoder is None else encoder
        fn = enc.encode if callable(getattr(enc, "encode", None)) else enc
        with torch.no_grad():
            emb = _embeddings(fn(skills), len(skills))
        try:
            ref = _no_encoder if encoder is None else weakref.ref(encoder, lambda _, k=key: _SKILL_CACHE.pop(k, None))
        except TypeError:  # not weakly referenceable: not cached (its id may be reused once it is gone)
            return emb
        hit = _SKILL_CACHE[key] = (ref, emb)
    return hit[1].clone()


def _no_encoder() -> None:  # the cache entry's "weak reference" of the default encoder (None)
    return None


def _embeddings(out, n: int) -> torch.Tensor:
    """An encoder's output as a ``(n, d)`` float32 tensor of finite numbers, or an InputError naming encoder."""
    try:
        arr = np.asarray(out.detach().cpu() if isinstance(out, torch.Tensor) else out)
    except (TypeError, ValueError):  # ragged or odd output
        raise InputError(f"encoder must return a (K, d) array of numbers, got {type(out).__name__}") from None
    if arr.dtype.kind not in "fiu":
        raise InputError(f"encoder must return numbers, got an array of dtype {arr.dtype}")
    emb = torch.as_tensor(arr)
    if emb.ndim != 2 or emb.shape[0] != n or emb.shape[1] == 0:
        raise InputError(f"encoder returned shape {tuple(emb.shape)} for {n} skills, expected ({n}, d) with d >= 1")
    if not torch.isfinite(emb).all():
        raise InputError("encoder returned NaN or infinite embeddings")
    return emb.float()


__all__ = ["FrozenImageEncoder", "HashedTextEncoder", "encode_skills"]
