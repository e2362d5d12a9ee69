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
import struct
from dataclasses import asdict, fields
from typing import Iterable, Mapping, Sequence

import torch
from torch import nn

from ..errors import InputError
from ..runs import atomic_write_bytes
from ..validation import check_int, check_seed, check_tensor
from .conversion import architecture, check_same_dtype, from_sequential, from_state_dict
from .encoder import DeepAlignNet, EncoderConfig
from .permutations import mlp_merge, mlp_permute
from .sinkhorn import hungarian
from .training import History, TrainConfig, fit
from .weights import WeightBatch, check_weight_batch
from .zoo import Zoo

NetLike = nn.Sequential | WeightBatch | Iterable[nn.Sequential]


def as_batch(
    nets: NetLike, name: str, widths: Sequence[int] | None = None, features: Sequence[int] | None = None
) -> WeightBatch:
    """Networks given as an ``nn.Module`` MLP, a list of them, a :class:`WeightBatch` or a ``Zoo``, as a
    :class:`WeightBatch` (float32).

    An MLP is any module whose Linear layers chain, with elementwise activations between them (ReLU, GELU,
    Tanh, ...), optionally a leading Flatten and ``bias=False`` layers
    (:func:`~icml24.deep_align.conversion.mlp_linears`); a CNN is a stack of Conv2d layers followed by Linear
    layers (:func:`~icml24.deep_align.conversion.network_layers`).

    Parameters
    ----------
    nets : nn.Module, list of nn.Module, state dict, WeightBatch or Zoo
        A state dict (``net.state_dict()``) holds one MLP (:func:`~icml24.deep_align.conversion.from_state_dict`).
    name : str
        The argument's name in error messages.
    widths : sequence of int, optional
        The architecture the networks must have.
    features : sequence of int, optional
        With ``widths``: the kernel features the networks must have (CNNs; None: MLPs).

    Returns
    -------
    WeightBatch

    Raises
    ------
    InputError
        Naming ``name``, when the networks are not such MLPs, are not finite, or have other widths.
    """
    if isinstance(nets, Zoo):
        nets = nets.nets
    if isinstance(nets, WeightBatch):
        wb = check_weight_batch(nets, name).to(torch.float32)
    elif isinstance(nets, Mapping):
        wb = from_state_dict(nets, name)
    elif isinstance(nets, (nn.Module, list, tuple)):
        wb = from_sequential(nets, name)
    else:
        raise InputError(
            f"{name} must be an nn.Module MLP, a list of them, a state dict, a WeightBatch or a Zoo, got "
            f"{type(nets).__name__}"
        )
    if widths is not None and wb.widths != tuple(widths):
        raise InputError(
            f"{name} has widths {wb.widths}, but this aligner was built for {tuple(widths)}",
            "Deep-Align needs one model per architecture",
        )
    if widths is not None and (wb.features if wb.convolutional else None) != (
        None if features is None else tuple(features)
    ):
        theirs = f"a CNN of kernel features {wb.features}" if wb.convolutional else "an MLP"
        mine = "MLPs" if features is None else f"CNNs of kernel features {tuple(features)}"
        raise InputError(f"{name} is {theirs}, but this aligner was built for {mine}", "one model per architecture")
    return wb


class DeepAlign:
    """Deep-Align (Navon et al., "Equivariant Deep Weight Space Alignment", ICML 2024): a Siamese DWS encoder
    (:class:`~icml24.deep_align.encoder.DeepAlignNet`) trained without labels on a zoo of networks; alignment is
    one forward pass and a Hungarian assignment per hidden layer.

    Convolutional networks (the paper's CNN setting) are aligned over their channels: give a CNN as ``widths``
    (or its channels and ``features``); the kernel entries of every channel pair are the features of the
    encoder's input (see :mod:`icml24.deep_align.weights`).

    Parameters
    ----------
    widths : sequence of int or nn.Module
        The MLP architecture ``(d_0, ..., d_M)`` to align, or a network of it: any MLP accepted by
        :func:`~icml24.deep_align.conversion.mlp_linears` or CNN accepted by
        :func:`~icml24.deep_align.conversion.network_layers`. One model per architecture.
    seed : int
        Seed of the encoder's initialisation.
    features : sequence of int, optional
        With integer ``widths`` (a CNN's channels): the kernel features of each layer
        (:attr:`~icml24.deep_align.weights.WeightBatch.features`); None aligns MLPs.
    **encoder : see :class:`~icml24.deep_align.encoder.EncoderConfig`
        ``hidden`` (official 64), ``n_hidden`` (4), ``output_features`` (128), ``set_layer`` ("sab"),
        ``num_heads`` (8), ``reduction`` ("max"), ``bn`` (True), ``input_dim_downsample`` (8), ``dropout`` (0),
        ``init_scale`` (1.0).
    """

    def __init__(
        self, widths: Sequence[int] | nn.Module, *, seed: int = 0, features: Sequence[int] | None = None, **encoder
    ) -> None:
        if isinstance(widths, nn.Module):
            if features is not None:
                raise InputError("features must be None when widths is a network", "they are read from it")
            widths, features = architecture(widths, "widths")
        seed = check_seed(seed)
        names = {f.name for f in fields(EncoderConfig)}
        unknown = sorted(set(encoder) - names)
        if unknown:
            raise InputError(f"unknown encoder options {unknown}", f"choose from {sorted(names)}")
        if isinstance(widths, (str, bytes)) or not isinstance(widths, Iterable):
            raise InputError(f"widths must be a sequence of integers or an nn.Sequential, got {widths!r}")
        widths = tuple(check_int(w, "widths", min_val=1) for w in widths)
        self.seed = seed
        self.net = DeepAlignNet(widths, EncoderConfig(**encoder), seed=seed, features=features)
        self.net.eval()
        self.history: History | None = None

    @property
    def widths(self) -> tuple[int, ...]:
        """The architecture ``(d_0, ..., d_M)`` this aligner aligns."""
        return self.net.widths

    @property
    def features(self) -> tuple[int, ...] | None:
        """The kernel features of each layer of the CNNs this aligner aligns (None: MLPs)."""
        return self.net.features

    @property
    def config(self) -> EncoderConfig:
        """The encoder's hyper-parameters."""
        return self.net.cfg

    # ------------------------------------------------------------------------------------------- training
    def fit(
        self,
        nets: NetLike,
        x: torch.Tensor,
        y: torch.Tensor,
        *,
        val: NetLike | None = None,
        x_val: torch.Tensor | None = None,
        y_val: torch.Tensor | None = None,
        seed: int = 0,
        config: TrainConfig | None = None,
        **train,
    ) -> History:
        """Train the encoder without labels on a zoo of networks (paper Sec. 5.2).

        Parameters
        ----------
        nets : nn.Sequential list, WeightBatch or Zoo
            The training networks, of this aligner's architecture.
        x, y : torch.Tensor
            Inputs ``(N, d_0)`` and int64 labels ``(N,)`` of the networks' task; they feed the interpolation
            (LMC) part of the reconstruction loss, which evaluates the networks as ReLU MLPs (for a zoo with
            another activation, train with ``recon="l2"``; the alignment itself does not depend on it). For CNNs:
            images ``(N, channels, H, W)``, and ``recon`` must be ``"l2"`` (deviation: the official code has CNN
            losses, ``deepalign.losses.cnn_losses``, with the interpolation term; ours evaluates MLPs only).
        val : nn.Sequential list, WeightBatch or Zoo, optional
            Validation networks: every ``eval_every`` steps their reconstruction loss is measured and the best
            state is kept (the official model selection).
        x_val, y_val : torch.Tensor, optional
            Validation data (default ``x, y``).
        seed : int, default 0
            Seed of the pairs, augmentations and image batches.
        config : TrainConfig, optional
            All training options at once; or give them as keyword arguments (``steps``, ``lr``, ...).
            Official defaults: lr 5e-4, batch 32, AdamW with amsgrad.

        Returns
        -------
        History
            The losses of every step and the validation evaluations.
        """
        if config is not None and train:
            raise InputError("give either config or keyword training options, not both")
        if config is not None and not isinstance(config, TrainConfig):
            raise InputError(f"config must be a TrainConfig, got {type(config).__name__}", "or give keyword options")
        names = {f.name for f in fields(TrainConfig)}
        unknown = sorted(set(train) - names)
        if unknown:
            raise InputError(f"unknown training options {unknown}", f"choose from {sorted(names)}")
        cfg = config or TrainConfig(**train)
        if self.features is not None and cfg.recon != "l2":
            raise InputError(
                f"recon is {cfg.recon!r}: the interpolation (LMC) loss evaluates ReLU MLPs",
                "train an aligner of convolutional networks with recon='l2' (the supervised and weight losses)",
            )
        tr = as_batch(nets, "nets", self.widths, self.features)
        vb = as_batch(val, "val", self.widths, self.features) if val is not None else None
        conv = self.features is not None
        x, y = _check_data(x, y, self.widths, "x", "y", conv)
        if x_val is not None or y_val is not None:
            x_val, y_val = _check_data(x_val, y_val, self.widths, "x_val", "y_val", conv)
        self.history = fit(self.net, tr, x, y, cfg, val=vb, x_val=x_val, y_val=y_val, seed=seed)
        return self.history

    # ---------------------------------------------------------------------------------------- inference
    @torch.no_grad()
    def scores_batch(self, a: NetLike, b: NetLike) -> list[torch.Tensor]:
        """Score matrices ``S_l(a_i, b_i)`` for every pair and hidden layer, in one encoder pass.

        Parameters
        ----------
        a, b : list of nn.Sequential, WeightBatch or Zoo
            ``B`` networks each, aligned in pairs ``(a_i, b_i)``.

        Returns
        -------
        list of torch.Tensor
            Per hidden layer ``l`` a ``(B, d_l, d_l)`` tensor: entry ``[i, r, c]`` scores neuron ``r`` of ``a_i``
            against neuron ``c`` of ``b_i`` (paper Eq. 6, ``S = F(a) F(b)^T``).
        """
        wa, wb = as_batch(a, "a", self.widths, self.features), as_batch(b, "b", self.widths, self.features)
        if isinstance(a, nn.Module) and isinstance(b, nn.Module):
            check_same_dtype(a, b)
        if wa.size != wb.size:
            raise InputError(f"a holds {wa.size} networks but b holds {wb.size}", "align them in pairs")
        self.net.eval()
        emb = self.net.embed(WeightBatch.cat([wa, wb]))
        return self.net.scores_from([e[: wa.size] for e in emb], [e[wa.size :] for e in emb])

    def scores(self, a: NetLike, b: NetLike) -> list[torch.Tensor]:
        """The score matrices of one pair.

        Parameters
        ----------
        a, b : nn.Sequential or WeightBatch of one network

        Returns
        -------
        list of torch.Tensor
            Per hidden layer a ``(d_l, d_l)`` matrix: ``S[i, j]`` scores neuron ``i`` of ``a`` against ``j`` of ``b``.
        """
        return [s[0] for s in self.scores_batch(_one(a, "a"), _one(b, "b"))]

    def align_batch(self, a: NetLike, b: NetLike) -> list[torch.Tensor]:
        """Hard alignments of ``b_i`` to ``a_i`` (Hungarian algorithm on each score matrix).

        Parameters
        ----------
        a, b : list of nn.Sequential, WeightBatch or Zoo
            ``B`` networks each.

        Returns
        -------
        list of torch.Tensor
            Per hidden layer an index tensor ``(B, d_l)``.
        """
        return [hungarian(s) for s in self.scores_batch(a, b)]

    def align(self, a: NetLike, b: NetLike) -> list[torch.Tensor]:
        """Permutations aligning network ``b`` to ``a`` in one forward pass.

        Parameters
        ----------
        a, b : nn.Sequential or WeightBatch of one network

        Returns
        -------
        list of torch.Tensor
            Per hidden layer ``l`` an index tensor ``p`` ``(d_l,)``: ``permute(b, perms)`` has its neuron ``i``
            matched to neuron ``i`` of ``a``.
        """
        return [p[0] for p in self.align_batch(_one(a, "a"), _one(b, "b"))]

    # ------------------------------------------------------------------------------------------ storage
    def save(self, path: str | os.PathLike) -> None:
        """Write the configuration and weights (a plain state dict, read back with ``weights_only=True``).

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (atomically).
        """
        import io

        if not isinstance(path, (str, os.PathLike)) or not str(path) or os.path.isdir(path):
            raise InputError(f"path must be a file name (str or os.PathLike), got {path!r}")
        buf = io.BytesIO()
        torch.save(
            {
                "widths": list(self.widths),
                "features": None if self.features is None else list(self.features),
                "encoder": asdict(self.config),
                "seed": self.seed,
                "state_dict": self.net.state_dict(),
            },
            buf,
        )
        atomic_write_bytes(path, buf.getvalue())

    @classmethod
    def load(cls, path: str | os.PathLike) -> "DeepAlign":
        """Read an aligner written by :meth:`save` (``torch.load`` with ``weights_only=True``).

        Parameters
        ----------
        path : str or os.PathLike

        Returns
        -------
        DeepAlign

        Raises
        ------
        InputError
            When the file is not such a checkpoint.
        """
        if not isinstance(path, (str, os.PathLike)):
            raise InputError(f"path must be a file name (str or os.PathLike), got {type(path).__name__}")
        try:
            blob = torch.load(path, map_location="cpu", weights_only=True)
            obj = cls(blob["widths"], seed=int(blob["seed"]), features=blob.get("features"), **blob["encoder"])
            obj.net.load_state_dict(blob["state_dict"])
        except (OSError, KeyError, RuntimeError, TypeError, ValueError, pickle.UnpicklingError, struct.error) as exc:
            raise InputError(
                f"path {str(path)!r}: cannot load a Deep-Align model: {' '.join(str(exc).split())[:120]}"
            ) from None
        obj.net.eval()
        return obj


def _one(x: NetLike, name: str) -> NetLike:
    if isinstance(x, WeightBatch) and x.size != 1:
        raise InputError(f"{name} must be one network, got a batch of {x.size}", "use align_batch")
    if isinstance(x, (list, tuple)):
        raise InputError(f"{name} must be one network, got a list", "use align_batch")
    return x


def _check_data(x, y, widths, xn: str, yn: str, conv: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    x = check_tensor(x, xn, shape=(None, widths[0], None, None) if conv else (None, widths[0]))
    y = check_tensor(y, yn, dtype="integer", shape=(x.shape[0],))
    if y.dtype != torch.int64:
        raise InputError(f"{yn} must be a ({x.shape[0]},) int64 tensor of labels, got dtype {y.dtype}")
    if int(y.min()) < 0 or int(y.max()) >= widths[-1]:
        raise InputError(f"{yn} must hold class indices in 0..{widths[-1] - 1}")
    return x.float(), y


def permute(net: nn.Module, perms: Sequence[torch.Tensor]) -> nn.Module:
    """A copy of ``net`` with its hidden neurons permuted; the function it computes is unchanged (official
    ``deepalign.utils.permute_weights``).

    Parameters
    ----------
    net : nn.Module
        An MLP: Linear layers with elementwise activations between them, optionally a leading Flatten and
        ``bias=False`` layers (see :func:`~icml24.deep_align.conversion.mlp_linears`); or a CNN of Conv2d then
        Linear layers, whose channels are permuted (see :func:`~icml24.deep_align.conversion.network_layers`).
    perms : list of torch.Tensor
        Per hidden layer ``l`` an index tensor: neuron ``i`` of the result is old neuron ``perms[l][i]``.

    Returns
    -------
    nn.Module
        A deep copy of ``net`` (same class, activations and dtype) with permuted weights.
    """
    return mlp_permute(net, perms)


def merge(a: nn.Module, b: nn.Module, alpha: float = 0.5, perms: Sequence[torch.Tensor] | None = None) -> nn.Module:
    """The weight average ``alpha * a + (1 - alpha) * permute(b, perms)`` (official ``avg_weights_and_biases``).

    Parameters
    ----------
    a, b : nn.Module
        Two MLPs or CNNs of one architecture and dtype (see :func:`permute`).
    alpha : float, default 0.5
        The weight of ``a``.
    perms : list of torch.Tensor, optional
        Alignment of ``b`` to ``a`` (e.g. :meth:`DeepAlign.align`); None merges without alignment.

    Returns
    -------
    nn.Module
        A deep copy of ``a`` holding the merged weights.
    """
    return mlp_merge(a, b, alpha, perms)


__all__ = ["DeepAlign", "as_batch", "permute", "merge"]
