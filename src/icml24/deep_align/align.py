"""The user-facing Deep-Align aligner: train it once on a zoo of networks of one architecture, then align any two
networks of that architecture in one forward pass (Navon et al., ICML 2024).

    >>> aligner = DeepAlign((64, 32, 32, 10), hidden=16, n_hidden=2, output_features=32, set_layer="ds")
    >>> aligner.fit(zoo.split("train"), x_train, y_train, val=zoo.split("val"), steps=300, lr=1e-2)
    >>> perms = aligner.align(net_a, net_b)          # one index tensor per hidden layer
    >>> merged = merge(net_a, net_b, 0.5, perms)     # 0.5 a + 0.5 permute(b, perms)
"""

from __future__ import annotations

import os
import pickle
from dataclasses import asdict, fields
from typing import Iterable, Sequence

import torch
from torch import nn

from ..errors import InputError
from ..runs import atomic_write_bytes
from .encoder import DeepAlignNet, EncoderConfig
from .sinkhorn import hungarian
from .training import History, TrainConfig, fit
from .weights import WeightBatch, check_mlp, from_sequential, mlp_merge, mlp_permute

NetLike = nn.Sequential | WeightBatch | Iterable[nn.Sequential]


def as_batch(nets: NetLike, name: str, widths: Sequence[int] | None = None) -> WeightBatch:
    """Networks given as an ``nn.Sequential``, a list of them, a :class:`WeightBatch` or a ``Zoo`` as a
    :class:`WeightBatch`, checked against ``widths`` when given (:class:`InputError` naming ``name``)."""
    if hasattr(nets, "nets") and isinstance(getattr(nets, "nets"), WeightBatch):  # a Zoo
        nets = nets.nets
    if isinstance(nets, WeightBatch):
        wb = nets
        for k, (w, b) in enumerate(zip(wb.weights, wb.biases)):
            if w.dim() != 3 or b.dim() != 2 or w.shape[0] != b.shape[0] or w.shape[2] != b.shape[1]:
                raise InputError(f"{name}: layer {k} has weight {tuple(w.shape)} and bias {tuple(b.shape)}",
                                 "expected (B, d_in, d_out) and (B, d_out)")
            if k and w.shape[1] != wb.weights[k - 1].shape[2]:
                raise InputError(f"{name}: layer {k} takes {w.shape[1]} inputs, layer {k - 1} gives "
                                 f"{wb.weights[k - 1].shape[2]}")
        if len(wb.weights) < 2:
            raise InputError(f"{name} needs at least one hidden layer")
        wb = wb.to(torch.float32)
    elif isinstance(nets, (nn.Module, list, tuple)):
        wb = from_sequential(nets, name)
    else:
        raise InputError(f"{name} must be an nn.Sequential, a list of them, a WeightBatch or a Zoo, "
                         f"got {type(nets).__name__}")
    if widths is not None and wb.widths != tuple(widths):
        raise InputError(f"{name} has widths {wb.widths}, but this aligner was built for {tuple(widths)}",
                         "Deep-Align needs one model per architecture")
    return wb


class DeepAlign:
    """Deep-Align (Navon et al., "Equivariant Deep Weight Space Alignment", ICML 2024): a Siamese DWS encoder
    (:class:`~icml24.deep_align.encoder.DeepAlignNet`) trained without labels on a zoo of networks; alignment is
    one forward pass and a Hungarian assignment per hidden layer.

    Parameters
    ----------
    widths : sequence of int or nn.Sequential
        The MLP architecture ``(d_0, ..., d_M)`` to align (or a network of it). One model per architecture.
    seed : int
        Seed of the encoder's initialisation.
    **encoder : see :class:`~icml24.deep_align.encoder.EncoderConfig`
        ``hidden`` (official 64), ``n_hidden`` (4), ``output_features`` (128), ``set_layer`` ("sab"),
        ``num_heads`` (8), ``reduction`` ("max"), ``bn`` (True), ``input_dim_downsample`` (8), ``dropout`` (0),
        ``init_scale`` (1.0).
    """

    def __init__(self, widths: Sequence[int] | nn.Sequential, *, seed: int = 0, **encoder) -> None:
        if isinstance(widths, nn.Module):
            widths = check_mlp(widths, "widths")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InputError(f"seed must be a non-negative integer, got {seed!r}")
        names = {f.name for f in fields(EncoderConfig)}
        unknown = sorted(set(encoder) - names)
        if unknown:
            raise InputError(f"unknown encoder options {unknown}", f"choose from {sorted(names)}")
        try:
            widths = tuple(int(w) for w in widths)
        except (TypeError, ValueError):
            raise InputError(f"widths must be a sequence of integers or an nn.Sequential, got {widths!r}") from None
        self.seed = seed
        self.net = DeepAlignNet(widths, EncoderConfig(**encoder), seed=seed)
        self.net.eval()
        self.history: History | None = None

    @property
    def widths(self) -> tuple[int, ...]:
        return self.net.widths

    @property
    def config(self) -> EncoderConfig:
        return self.net.cfg

    # ------------------------------------------------------------------------------------------- training
    def fit(self, nets: NetLike, x: torch.Tensor, y: torch.Tensor, *, val: NetLike | None = None,
            x_val: torch.Tensor | None = None, y_val: torch.Tensor | None = None, seed: int = 0,
            config: TrainConfig | None = None, **train) -> History:
        """Train on the networks ``nets`` (their data ``(x, y)`` feeds the interpolation loss), selecting the state
        with the lowest validation reconstruction loss on ``val``. ``config`` or keyword arguments set
        :class:`~icml24.deep_align.training.TrainConfig` (official defaults: lr 5e-4, batch 32, AdamW amsgrad)."""
        if config is not None and train:
            raise InputError("give either config or keyword training options, not both")
        names = {f.name for f in fields(TrainConfig)}
        unknown = sorted(set(train) - names)
        if unknown:
            raise InputError(f"unknown training options {unknown}", f"choose from {sorted(names)}")
        cfg = config or TrainConfig(**train)
        tr = as_batch(nets, "nets", self.widths)
        vb = as_batch(val, "val", self.widths) if val is not None else None
        x, y = _check_data(x, y, self.widths, "x", "y")
        if x_val is not None or y_val is not None:
            x_val, y_val = _check_data(x_val, y_val, self.widths, "x_val", "y_val")
        self.history = fit(self.net, tr, x, y, cfg, val=vb, x_val=x_val, y_val=y_val, seed=seed)
        return self.history

    # ---------------------------------------------------------------------------------------- inference
    @torch.no_grad()
    def scores_batch(self, a: NetLike, b: NetLike) -> list[torch.Tensor]:
        """Score matrices ``S_l(a_i, b_i)`` ``(B, d_l, d_l)`` for every hidden layer (one encoder pass)."""
        wa, wb = as_batch(a, "a", self.widths), as_batch(b, "b", self.widths)
        if wa.size != wb.size:
            raise InputError(f"a holds {wa.size} networks but b holds {wb.size}", "align them in pairs")
        self.net.eval()
        emb = self.net.embed(WeightBatch.cat([wa, wb]))
        return self.net.scores_from([e[: wa.size] for e in emb], [e[wa.size:] for e in emb])

    def scores(self, a: NetLike, b: NetLike) -> list[torch.Tensor]:
        """``S_l(a, b)`` ``(d_l, d_l)`` for one pair: ``S[i, j]`` scores neuron ``i`` of ``a`` against ``j`` of ``b``."""
        return [s[0] for s in self.scores_batch(_one(a, "a"), _one(b, "b"))]

    def align_batch(self, a: NetLike, b: NetLike) -> list[torch.Tensor]:
        """Hard alignments of ``b_i`` to ``a_i``: per hidden layer an index tensor ``(B, d_l)``."""
        return [hungarian(s) for s in self.scores_batch(a, b)]

    def align(self, a: NetLike, b: NetLike) -> list[torch.Tensor]:
        """Permutations aligning network ``b`` to ``a``: per hidden layer ``l`` an index tensor ``p`` ``(d_l,)``;
        ``permute(b, perms)`` has its neuron ``i`` matched to neuron ``i`` of ``a``."""
        return [p[0] for p in self.align_batch(_one(a, "a"), _one(b, "b"))]

    # ------------------------------------------------------------------------------------------ storage
    def save(self, path: str | os.PathLike) -> None:
        """Write the configuration and weights (a plain state dict, read back with ``weights_only=True``)."""
        import io

        buf = io.BytesIO()
        torch.save({"widths": list(self.widths), "encoder": asdict(self.config), "seed": self.seed,
                    "state_dict": self.net.state_dict()}, buf)
        atomic_write_bytes(path, buf.getvalue())

    @classmethod
    def load(cls, path: str | os.PathLike) -> "DeepAlign":
        try:
            blob = torch.load(path, map_location="cpu", weights_only=True)
            obj = cls(blob["widths"], seed=int(blob["seed"]), **blob["encoder"])
            obj.net.load_state_dict(blob["state_dict"])
        except (OSError, KeyError, RuntimeError, TypeError, ValueError, pickle.UnpicklingError) as exc:
            raise InputError(f"cannot load a Deep-Align model from {path}: {exc}") from None
        obj.net.eval()
        return obj


def _one(x: NetLike, name: str) -> NetLike:
    if isinstance(x, WeightBatch) and x.size != 1:
        raise InputError(f"{name} must be one network, got a batch of {x.size}", "use align_batch")
    if isinstance(x, (list, tuple)):
        raise InputError(f"{name} must be one network, got a list", "use align_batch")
    return x


def _check_data(x, y, widths, xn: str, yn: str) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != widths[0]:
        raise InputError(f"{xn} must be a (N, {widths[0]}) float tensor of inputs")
    if not isinstance(y, torch.Tensor) or y.shape != (x.shape[0],) or y.dtype != torch.int64:
        raise InputError(f"{yn} must be a ({x.shape[0]},) int64 tensor of labels")
    if len(y) and (int(y.min()) < 0 or int(y.max()) >= widths[-1]):
        raise InputError(f"{yn} must hold class indices in 0..{widths[-1] - 1}")
    if not torch.isfinite(x).all():
        raise InputError(f"{xn} has non-finite values")
    return x.float(), y


def permute(net: nn.Sequential, perms: Sequence[torch.Tensor]) -> nn.Sequential:
    """A copy of ``net`` with hidden neurons permuted (neuron ``i`` of layer ``l`` <- old ``perms[l][i]``);
    the function it computes is unchanged (official ``deepalign.utils.permute_weights``)."""
    return mlp_permute(net, perms)


def merge(a: nn.Sequential, b: nn.Sequential, alpha: float = 0.5,
          perms: Sequence[torch.Tensor] | None = None) -> nn.Sequential:
    """``alpha * a + (1 - alpha) * permute(b, perms)`` (official ``avg_weights_and_biases``); ``perms=None``
    merges without alignment."""
    return mlp_merge(a, b, alpha, perms)


__all__ = ["DeepAlign", "as_batch", "permute", "merge"]
