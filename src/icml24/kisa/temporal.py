"""KISA's temporal enhancement module and the batching of its inputs (Kou et al., ICML 2024).

Only the temporal module is trained; the per-frame image embeddings and the skill-text embeddings come from
frozen encoders. The module follows the official ``Models/net/attention.py`` and ``model_videoliv.py``:
sinusoidal position embeddings (sines then cosines, ``Models/utils/position_embedding.py``) are added to the
frame embeddings, and a standard ``nn.Transformer`` is run with ``src = tgt =`` that sequence, a causal mask on
the decoder's self-attention and no memory mask, so the cross-attention still sees future frames (as
released; ``causal="strict"`` masks the encoder and the cross-attention too).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn

from ..errors import InputError
from ..validation import check_bool, check_choice, check_float, check_int, check_seed, check_tensor

CAUSAL = ("released", "strict", "none")


def position_embedding(length: int, dim: int) -> torch.Tensor:
    """Sinusoidal position embeddings as released: ``[sin(t / 10000^(2i/d)), cos(t / 10000^(2i/d))]``.

    Sines fill the first half of the dimensions and cosines the second (the official layout, not interleaved).

    Parameters
    ----------
    length : int
        Sequence length T.
    dim : int
        Embedding dimension (even).

    Returns
    -------
    torch.Tensor
        ``(T, dim)`` float32.
    """
    length = check_int(length, "length", min_val=1)
    dim = check_int(dim, "dim", min_val=2)
    if dim % 2:
        raise InputError(f"dim must be even, got {dim}")
    pos = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    div = torch.pow(10000.0, torch.arange(0, dim, 2, dtype=torch.float32) / dim).view(1, -1)
    return torch.cat([torch.sin(pos / div), torch.cos(pos / div)], dim=1)


class TemporalModule(nn.Module):
    """The temporal enhancement module: frame embeddings -> video-level frame embeddings ``u_t``.

    Parameters
    ----------
    frame_dim : int
        Dimension of the frozen per-frame embeddings.
    text_dim : int
        Dimension of the frozen skill-text embeddings (``u_t`` is compared with them by cosine).
    d_model : int, optional
        Transformer width. None (the official setting) uses ``frame_dim`` with no input projection; the
        official code also has ``frame_dim == text_dim`` (LIV, 1024) and so no output projection. Linear maps
        are added only where the dimensions differ.
    nhead : int, default 8
        Attention heads (official ``tfm_heads``).
    num_layers : int, default 2
        Encoder layers and decoder layers each (official ``tfm_layers``).
    dim_feedforward : int, default 2048
        Feed-forward width (``nn.Transformer``'s default, as released).
    dropout : float, default 0.0
        As released.
    causal : {"released", "strict", "none"}, default "released"
        ``"released"``: causal mask on the decoder's self-attention only; ``"strict"``: also on the
        encoder and the cross-attention (no future frame reaches ``u_t``); ``"none"``: no mask at all.
    temporal : bool, default True
        False replaces the transformer by the identity (the "w/o temporal module" ablation: a per-frame map
        made of the same projections).
    seed : int, default 0
        Seed of the initial weights.
    """

    def __init__(
        self,
        frame_dim: int,
        text_dim: int,
        d_model: int | None = None,
        nhead: int = 8,
        num_layers: int = 2,
        dim_feedforward: int = 2048,
        dropout: float = 0.0,
        causal: str = "released",
        temporal: bool = True,
        seed: int = 0,
    ):
        super().__init__()
        frame_dim = check_int(frame_dim, "frame_dim", min_val=1)
        text_dim = check_int(text_dim, "text_dim", min_val=1)
        d = frame_dim if d_model is None else check_int(d_model, "d_model", min_val=2)
        nhead = check_int(nhead, "nhead", min_val=1)
        if d % nhead or d % 2:
            raise InputError(f"d_model must be even and divisible by nhead, got d_model={d}, nhead={nhead}")
        self.causal = check_choice(causal, "causal", CAUSAL)
        self.temporal = check_bool(temporal, "temporal")
        check_float(dropout, "dropout", min_val=0.0, max_val=1.0, include_boundaries="left")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(check_seed(seed))
            self.inp = nn.Identity() if d == frame_dim else nn.Linear(frame_dim, d)
            self.transformer = nn.Transformer(
                d_model=d,
                nhead=nhead,
                num_encoder_layers=check_int(num_layers, "num_layers", min_val=1),
                num_decoder_layers=num_layers,
                dim_feedforward=check_int(dim_feedforward, "dim_feedforward", min_val=1),
                dropout=float(dropout),
                batch_first=True,
            )
            self.out = nn.Identity() if d == text_dim else nn.Linear(d, text_dim)
            if not self.temporal and d == frame_dim and d == text_dim:
                self.out = nn.Linear(d, text_dim)  # a trainable per-frame map, else nothing would be trained
        self.frame_dim, self.text_dim, self.d_model = frame_dim, text_dim, d

    def forward(self, frames: torch.Tensor, padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Video-level frame embeddings.

        Parameters
        ----------
        frames : torch.Tensor
            ``(B, T, frame_dim)`` frozen frame embeddings (any floating dtype: cast to the module's).
        padding_mask : torch.Tensor, optional
            ``(B, T)`` bool, True at padded frames.

        Returns
        -------
        torch.Tensor
            ``(B, T, text_dim)``.
        """
        frames = check_tensor(frames, "frames", ndim=3).to(next(self.parameters()).dtype)
        if frames.shape[-1] != self.frame_dim:
            raise InputError(f"frames must have {self.frame_dim} features, got {frames.shape[-1]}")
        b, t, _ = frames.shape
        if padding_mask is not None:
            padding_mask = check_tensor(padding_mask, "padding_mask", shape=(b, t), dtype="bool")
        return self._encode(frames, padding_mask)

    def _encode(self, frames: torch.Tensor, padding_mask: torch.Tensor | None) -> torch.Tensor:
        # the forward pass on checked inputs (the training loop checks its data once, not at every step)
        t = frames.shape[1]
        x = self.inp(frames)
        if self.temporal:
            x = x + position_embedding(t, self.d_model).to(x.dtype).unsqueeze(0)
            square = nn.Transformer.generate_square_subsequent_mask(t, dtype=x.dtype)
            tgt_mask = None if self.causal == "none" else square
            other = square if self.causal == "strict" else None
            # The released code passes no memory padding mask (its videos are resampled to one length);
            # a padded frame is not a frame, so it is masked from the cross-attention here.
            x = self.transformer(
                x,
                x,
                src_mask=other,
                tgt_mask=tgt_mask,
                memory_mask=other,
                src_key_padding_mask=padding_mask,
                tgt_key_padding_mask=padding_mask,
                memory_key_padding_mask=padding_mask,
                src_is_causal=False,
                tgt_is_causal=False,
            )
        return self.out(x)


# ----------------------------------------------------------------------------------------------- inputs
def stack_videos(videos, name: str = "frames", *, pad: bool = False, dim: int | None = None):
    """A batch of frame embeddings and its padding mask from a tensor or a list of per-video tensors.

    Parameters
    ----------
    videos : torch.Tensor or sequence of torch.Tensor
        ``(B, T, D)``, or B tensors ``(T_i, D)``.
    name : str, default "frames"
        Argument name for messages.
    pad : bool, default False
        Allow videos of different lengths, padded at the end with a padding mask. The official code instead
        resamples every video to one length; without ``pad`` mixed lengths are refused.
    dim : int, optional
        Expected feature dimension.

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        ``(B, T, D)`` float32 batch and ``(B, T)`` bool padding mask (True at padded frames).
    """
    pad = check_bool(pad, "pad")
    if isinstance(videos, torch.Tensor):
        x = check_tensor(videos, name, ndim=3).float()
        mask = torch.zeros(x.shape[:2], dtype=torch.bool)
    else:
        if isinstance(videos, (str, bytes)) or not isinstance(videos, Sequence) or not len(videos):
            raise InputError(f"{name} must be a (B, T, D) tensor or a non-empty list of (T, D) tensors")
        vids = [check_tensor(v, f"{name}[{i}]", ndim=2).float() for i, v in enumerate(videos)]
        dims = {v.shape[1] for v in vids}
        if len(dims) > 1:
            raise InputError(f"{name} have different feature dimensions {sorted(dims)}")
        lengths = [v.shape[0] for v in vids]
        if len(set(lengths)) > 1 and not pad:
            raise InputError(
                f"{name} have mixed lengths ({min(lengths)} to {max(lengths)} frames) and no padding mask",
                "pass pad=True to pad them with a mask, or resample them to one length",
            )
        t = max(lengths)
        x = torch.zeros(len(vids), t, vids[0].shape[1])
        mask = torch.ones(len(vids), t, dtype=torch.bool)
        for i, v in enumerate(vids):
            x[i, : len(v)] = v
            mask[i, : len(v)] = False
    if dim is not None and x.shape[-1] != dim:
        raise InputError(f"{name} must have {dim} features, got {x.shape[-1]}")
    return x, mask


def stack_labels(labels, mask: torch.Tensor, n_skills: int, name: str = "labels") -> torch.Tensor:
    """Per-frame skill labels as a ``(B, T)`` long tensor aligned with a padded batch (-1 at padding).

    Parameters
    ----------
    labels : torch.Tensor or sequence
        ``(B, T)`` tensor or B per-video integer sequences, one label per frame.
    mask : torch.Tensor
        ``(B, T)`` padding mask of the frames.
    n_skills : int
        Size of the skill library; labels must lie in ``[0, n_skills)``.
    name : str, default "labels"
        Argument name for messages.

    Returns
    -------
    torch.Tensor
        ``(B, T)`` int64.
    """
    b, t = mask.shape
    if isinstance(labels, torch.Tensor) and labels.ndim == 2:
        rows = list(labels)
    elif isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence):
        raise InputError(f"{name} must be a (B, T) tensor or a list of per-video label sequences")
    else:
        rows = list(labels)
    if len(rows) != b:
        raise InputError(f"{name} has {len(rows)} videos, frames have {b}")
    out = torch.full((b, t), -1, dtype=torch.long)
    for i, row in enumerate(rows):
        arr = np.asarray(row.detach().cpu() if isinstance(row, torch.Tensor) else row)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise InputError(f"{name}[{i}] must be a 1-D sequence of integer skill indices")
        n_valid = int((~mask[i]).sum())
        if len(arr) != n_valid:
            raise InputError(f"{name}[{i}] has {len(arr)} labels for {n_valid} frames", "give one label per frame")
        if len(arr) and (arr.min() < 0 or arr.max() >= n_skills):
            raise InputError(
                f"{name}[{i}] holds a label outside the skill library of {n_skills} skills",
                f"labels index the library: 0 to {n_skills - 1}",
            )
        out[i, : len(arr)] = torch.as_tensor(arr, dtype=torch.long)
    return out


__all__ = ["CAUSAL", "position_embedding", "TemporalModule", "stack_videos", "stack_labels"]
