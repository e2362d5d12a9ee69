"""The Deep-Align architecture: a Siamese weight-space encoder equivariant to hidden-neuron permutations,
per-neuron embeddings and score matrices (Navon et al., "Equivariant Deep Weight Space Alignment", ICML 2024,
Sec. 5 and Fig. 2; official code ``deepalign/nn``).

The encoder is a stack of DWS layers (Navon et al., "Equivariant Architectures for Learning in Deep Weight
Spaces", ICML 2023) in the "hnp" setting: hidden neurons are permuted, input and output neurons are not. A DWS
layer maps the weights ``W_k`` ``(B, d_k, d_{k+1}, F)`` and biases ``b_k`` ``(B, d_{k+1}, F)`` of a batch of
MLPs (every entry carrying ``F`` channels) to new ones with ``F'`` channels, as a sum of blocks weight->weight,
bias->bias, bias->weight and weight->bias. With ``diagonal=True`` (the official MLP default) only blocks between
neighbouring layers are kept. Each block sees the neurons that two tensors share as a *set*:

* an axis of fixed (input or output) neurons is folded into the channels (``d_0 * F`` or ``d_M * F``);
* the other axis of a weight matrix is pooled (``max``, official ``--reduction``);
* a permutation-equivariant set layer maps the per-neuron features (DeepSets ``Gamma(x) - Lambda(max x)``, or
  a set-attention block ``sab``, official ``--set-layer``), and the result is broadcast back.

Internal weight matrices (both axes hidden) map to themselves with the four-term Kronecker set layer. The first
weight matrix's fixed input axis ``d_0`` is down-sampled to ``input_dim_downsample`` by a DeepSets layer with
attention pooling over the hidden set and up-sampled again after every layer, with a skip connection (official
``DownSampleCannibalLayer``). Between layers: BatchNorm (over networks and positions, per channel and tensor),
ReLU, dropout.

Deep-Align keeps the bias channels of hidden layers ``1 .. M-1`` of the last layer as neuron embeddings
``F_l(v)`` ``(B, d_l, F_out)``, L2-normalises each neuron and multiplies by one learned scale
(``NormalizeAndScale``), and scores ``S_l = F_l(v) F_l(v')^T``. One encoder for both inputs gives the two
symmetries of the paper's Prop. 4 exactly: ``S(g v, h v') = G S(v, v') H^T`` and ``S(v', v) = S(v, v')^T``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import InputError
from ..validation import check_bool, check_choice, check_float, check_int, check_seed
from .weights import WeightBatch
from .world import mlp_widths


@dataclass(frozen=True)
class EncoderConfig:
    """Hyper-parameters of the Deep-Align encoder.

    Defaults mirror the official MLP trainer (``experiments/mlp_image_classifier/trainer.py``): ``--dim-hidden
    64 --n-hidden 4 --output-features 128 --reduction max --set-layer sab --n-heads 8 --add-bn true --diagonal
    true --hnp-setup true --input-dim-downsample 8 --init-scale 1.0 --do-rate 0.0 --n-fc-layers 1``. Our claims
    shrink ``hidden`` (16), ``n_hidden`` (2) and ``output_features`` (32), use DeepSets set layers
    (``set_layer="ds"``, 2.5x cheaper than ``"sab"`` on CPU and not worse in our runs) and mean pooling
    (``reduction="mean"``, an official option: at our training budget max pooling plateaued at a 30-60 % higher
    barrier); see ``experiments.py``.

    Parameters
    ----------
    hidden : int, default 64
        Channels of the hidden DWS layers.
    n_hidden : int, default 4
        Hidden DWS layers.
    output_features : int, default 128
        Channels of the neuron embeddings.
    reduction : {"max", "mean", "sum"}, default "max"
        Pooling over sets.
    set_layer : {"sab", "ds"}, default "sab"
        Set attention blocks or DeepSets layers.
    num_heads : int, default 8
        Heads of the set attention blocks.
    bn : bool, default True
        BatchNorm between layers.
    input_dim_downsample : int or None, default 8
        Width the fixed input axis is down-sampled to (None: no down-sampling).
    dropout : float, default 0.0
        In ``[0, 1)``.
    init_scale : float, default 1.0
        Scale of the official initialisation.
    n_fc_layers : int, default 1
        Linear layers inside each set layer.
    normalize_scale : bool, default True
        L2-normalise the embeddings and multiply by one learned scale (official ``NormalizeAndScale``).
    scale_init : float, default 1.0
        The initial value of that scale (official 1).
    """

    hidden: int = 64
    n_hidden: int = 4
    output_features: int = 128
    reduction: str = "max"
    set_layer: str = "sab"
    num_heads: int = 8
    bn: bool = True
    input_dim_downsample: int | None = 8
    dropout: float = 0.0
    init_scale: float = 1.0
    n_fc_layers: int = 1
    normalize_scale: bool = True
    scale_init: float = 1.0

    def __post_init__(self) -> None:
        for name in ("hidden", "n_hidden", "output_features", "num_heads", "n_fc_layers"):
            check_int(getattr(self, name), name, min_val=0 if name == "n_hidden" else 1)
        check_choice(self.reduction, "reduction", ("max", "mean", "sum"), normalise=False)
        check_choice(self.set_layer, "set_layer", ("ds", "sab"), normalise=False)
        check_int(self.input_dim_downsample, "input_dim_downsample", min_val=1, allow_none=True)
        check_float(self.dropout, "dropout", min_val=0.0, max_val=1.0, include_boundaries="left")
        check_float(self.init_scale, "init_scale")
        check_float(self.scale_init, "scale_init")
        check_bool(self.bn, "bn")
        check_bool(self.normalize_scale, "normalize_scale")


# ------------------------------------------------------------------------------------------- set layers
def _pool(x: torch.Tensor, dim, reduction: str, keepdim: bool = True) -> torch.Tensor:
    if reduction == "max":
        if isinstance(dim, tuple):
            for d in sorted(dim, reverse=True):
                x = x.amax(dim=d, keepdim=keepdim)
            return x
        return x.amax(dim=dim, keepdim=keepdim)
    if reduction == "mean":
        return x.mean(dim=dim, keepdim=keepdim)
    return x.sum(dim=dim, keepdim=keepdim)


def _mlp(fin: int, fout: int, bias: bool, n_fc_layers: int) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Linear(fin, fout, bias=bias)]
    for _ in range(n_fc_layers - 1):
        layers += [nn.ReLU(), nn.Linear(fout, fout, bias=bias)]
    return nn.Sequential(*layers)


class DeepSetLayer(nn.Module):
    """``Gamma(x) - Lambda(pool_set(x))`` on ``(B, n, F)`` with the set on dim 1 (Zaheer et al. 2017; official
    ``SetLayer``): permutation equivariant in ``n``."""

    def __init__(self, fin: int, fout: int, reduction: str = "max", n_fc_layers: int = 1) -> None:
        super().__init__()
        self.reduction = reduction
        self.gamma = _mlp(fin, fout, True, n_fc_layers)
        self.lam = _mlp(fin, fout, False, n_fc_layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gamma(x) - self.lam(_pool(x, 1, self.reduction))


class SetAttentionBlock(nn.Module):
    """Set attention block ``SAB(X) = MAB(X, X)`` without layer norm (Lee et al. 2019; official ``SAB``):
    ``O = Q + softmax(Q K^T / sqrt(d)) V`` per head, then ``O + relu(fc_o(O))``. ``heads`` is reduced to the
    largest divisor of ``fout`` that does not exceed it (the official code asserts divisibility instead)."""

    def __init__(self, fin: int, fout: int, heads: int = 8) -> None:
        super().__init__()
        self.heads = math.gcd(heads, fout)
        self.fout = fout
        self.fc_q, self.fc_k, self.fc_v = nn.Linear(fin, fout), nn.Linear(fin, fout), nn.Linear(fin, fout)
        self.fc_o = nn.Linear(fout, fout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape[:-2]
        x = x.reshape(-1, *x.shape[-2:])
        q, k, v = self.fc_q(x), self.fc_k(x), self.fc_v(x)
        b, n, _ = q.shape
        split = lambda t: t.reshape(b, n, self.heads, -1).transpose(1, 2)  # noqa: E731
        qh, kh, vh = split(q), split(k), split(v)
        att = torch.softmax(qh @ kh.transpose(-2, -1) / math.sqrt(self.fout), dim=-1)
        o = (qh + att @ vh).transpose(1, 2).reshape(b, n, self.fout)
        o = o + F.relu(self.fc_o(o))
        return o.reshape(*shape, n, self.fout)


def _set_layer(cfg: EncoderConfig, fin: int, fout: int, heads: int) -> nn.Module:
    if cfg.set_layer == "sab":
        return SetAttentionBlock(fin, fout, heads)
    return DeepSetLayer(fin, fout, cfg.reduction, cfg.n_fc_layers)


class KroneckerSetLayer(nn.Module):
    """Internal weight matrix to itself, both axes hidden sets (official ``SetKroneckerSetLayer``): the mean of
    an entry-wise linear map and linear maps of the row-, column- and all-pooled features."""

    def __init__(self, fin: int, fout: int, reduction: str, n_fc_layers: int) -> None:
        super().__init__()
        self.reduction = reduction
        self.lin_all, self.lin_rows, self.lin_cols, self.lin_both = (
            _mlp(fin, fout, True, n_fc_layers) for _ in range(4)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, r, c, F)
        r = self.reduction
        return (
            self.lin_all(x)
            + self.lin_rows(_pool(x, 1, r))
            + self.lin_cols(_pool(x, 2, r))
            + self.lin_both(_pool(x, (1, 2), r))
        ) / 4.0


class AttentionPool(nn.Module):
    """Softmax-weighted sum over the set dim (dim -2) with a learned query (official ``Attn`` reduction)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.query = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (..., n, dim) -> (..., 1, dim)
        w = torch.softmax((x * self.query).sum(-1, keepdim=True), dim=-2)
        return (w * x).sum(-2, keepdim=True)


class InputResample(nn.Module):
    """Re-sample the fixed input axis ``d_0`` of the first weight matrix to ``d_out`` (official down-sampling
    ``GeneralSetLayer(..., reduction="attn", set_layer="ds")``): for every channel separately, a DeepSets layer
    over the hidden neurons ``d_1`` whose per-neuron vectors live along ``d_0``, with attention pooling."""

    def __init__(self, d_in: int, d_out: int, n_fc_layers: int) -> None:
        super().__init__()
        self.gamma = _mlp(d_in, d_out, True, n_fc_layers)
        self.lam = _mlp(d_in, d_out, False, n_fc_layers)
        self.pool = AttentionPool(d_in)

    def forward(self, w: torch.Tensor) -> torch.Tensor:  # (B, d_in, d1, F) -> (B, d_out, d1, F)
        x = w.permute(0, 3, 2, 1)  # (B, F, d1, d_in)
        x = self.gamma(x) - self.lam(self.pool(x))
        return x.permute(0, 3, 2, 1)


# ------------------------------------------------------------------------------------------- DWS layer
class DWSLayer(nn.Module):
    """One diagonal DWS layer in the hnp setting (official ``CannibalLayer`` with ``diagonal=True``) for MLP
    widths ``(d_0, ..., d_M)``, ``M >= 2``. Outputs are summed over blocks and divided by the number of tensors
    ``2M``, as in the official code. With ``input_dim_downsample`` (official ``DownSampleCannibalLayer``) the
    first weight matrix's input axis is down-sampled before the blocks and up-sampled after them, plus a skip
    connection from the full-resolution input. ``weights_out=False`` skips the weight outputs (the encoder's
    last layer: only its bias channels are read)."""

    def __init__(
        self, widths: Sequence[int], fin: int, fout: int, cfg: EncoderConfig, heads: int, weights_out: bool = True
    ) -> None:
        super().__init__()
        self.widths = tuple(int(w) for w in widths)
        M = self.M = len(widths) - 1
        self.fout, self.weights_out = fout, weights_out
        ds = cfg.input_dim_downsample
        self.resample = ds is not None and ds < widths[0]
        if self.resample:  # official DownSampleCannibalLayer: down-sample d_0, DWS layer, up-sample, skip
            self.down = InputResample(widths[0], ds, cfg.n_fc_layers)
            if weights_out:
                self.up = InputResample(ds, widths[0], cfg.n_fc_layers)
                self.skip = _mlp(fin, fout, True, cfg.n_fc_layers)
        r0, dM = self.r0, self.dM = (ds if self.resample else widths[0]), widths[-1]
        S = lambda a, b: _set_layer(cfg, a, b, heads)  # noqa: E731
        # per-neuron feature sizes of the summaries of W_k on its columns / rows, and of outputs to them
        col_in = lambda k: (r0 * fin) if k == 0 else fin  # noqa: E731
        col_out = lambda k: (r0 * fout) if k == 0 else fout  # noqa: E731
        row_in = lambda k: (dM * fin) if k == M - 1 else fin  # noqa: E731
        row_out = lambda k: (dM * fout) if k == M - 1 else fout  # noqa: E731
        blocks = nn.ModuleDict()
        for j in range(M):
            if weights_out:  # weight -> weight and bias -> weight
                if j == 0:
                    blocks["w0_w0"] = S(col_in(0), col_out(0))
                elif j == M - 1:
                    blocks[f"w{j}_w{j}"] = S(row_in(j), row_out(j))
                else:
                    blocks[f"w{j}_w{j}"] = KroneckerSetLayer(fin, fout, cfg.reduction, cfg.n_fc_layers)
                if j >= 1:
                    blocks[f"w{j - 1}_w{j}"] = S(col_in(j - 1), row_out(j))
                    blocks[f"b{j - 1}_w{j}"] = S(fin, row_out(j))
                if j <= M - 2:
                    blocks[f"w{j + 1}_w{j}"] = S(row_in(j + 1), col_out(j))
                    blocks[f"b{j}_w{j}"] = S(fin, col_out(j))
                else:
                    blocks[f"b{j}_w{j}"] = _mlp(dM * fin, dM * fout, True, cfg.n_fc_layers)
            # weight -> bias and bias -> bias
            if j < M - 1:
                blocks[f"w{j}_b{j}"] = S(col_in(j), fout)
                blocks[f"w{j + 1}_b{j}"] = S(row_in(j + 1), fout)
                blocks[f"b{j}_b{j}"] = S(fin, fout)
            else:
                blocks[f"w{j}_b{j}"] = _mlp(dM * fin, dM * fout, True, cfg.n_fc_layers)
                blocks[f"b{j}_b{j}"] = _mlp(dM * fin, dM * fout, True, cfg.n_fc_layers)
        self.blocks = blocks
        self.reduction = cfg.reduction

    # views of a weight tensor as per-neuron features on its column (output) or row (input) neurons
    def _col_summary(self, w: torch.Tensor, k: int) -> torch.Tensor:
        if k == 0:  # (B, r0, d1, F) -> (B, d1, r0 * F)
            return w.transpose(1, 2).flatten(2)
        return _pool(w, 1, self.reduction, keepdim=False)

    def _row_summary(self, w: torch.Tensor, k: int) -> torch.Tensor:
        if k == self.M - 1:  # (B, d_{M-1}, d_M, F) -> (B, d_{M-1}, d_M * F)
            return w.flatten(2)
        return _pool(w, 2, self.reduction, keepdim=False)

    # per-neuron outputs back onto a weight tensor: broadcastable (B, 1, c, F') / (B, r, 1, F'), or full when a
    # fixed axis was folded into the channels
    def _to_cols(self, y: torch.Tensor, k: int) -> torch.Tensor:
        if k == 0:  # (B, d1, r0 * F') -> (B, r0, d1, F')
            return y.reshape(y.shape[0], y.shape[1], self.r0, self.fout).transpose(1, 2)
        return y.unsqueeze(1)

    def _to_rows(self, y: torch.Tensor, k: int) -> torch.Tensor:
        if k == self.M - 1:  # (B, d_{M-1}, d_M * F') -> (B, d_{M-1}, d_M, F')
            return y.reshape(y.shape[0], y.shape[1], self.dM, self.fout)
        return y.unsqueeze(2)

    def forward(self, x: tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]):
        weights, biases = x
        if self.resample:
            w0 = weights[0]
            weights = (self.down(w0),) + tuple(weights[1:])
        M, blk, norm = self.M, self.blocks, 1.0 / (2 * self.M)
        out_w, out_b = [], []
        for j in range(M):
            w = weights[j]
            B = w.shape[0]
            if self.weights_out:
                if j == 0:
                    acc = self._to_cols(blk["w0_w0"](self._col_summary(w, 0)), 0)
                elif j == M - 1:
                    acc = self._to_rows(blk[f"w{j}_w{j}"](self._row_summary(w, j)), j)
                else:
                    acc = blk[f"w{j}_w{j}"](w)
                rows = cols = 0.0
                if j >= 1:
                    rows = blk[f"w{j - 1}_w{j}"](self._col_summary(weights[j - 1], j - 1)) + blk[f"b{j - 1}_w{j}"](
                        biases[j - 1]
                    )
                    rows = self._to_rows(rows, j)
                if j <= M - 2:
                    cols = blk[f"w{j + 1}_w{j}"](self._row_summary(weights[j + 1], j + 1)) + blk[f"b{j}_w{j}"](
                        biases[j]
                    )
                    cols = self._to_cols(cols, j)
                else:
                    cols = blk[f"b{j}_w{j}"](biases[j].flatten(1)).reshape(B, 1, self.dM, self.fout)
                out_w.append((acc + (rows + cols)) * norm)
            if j < M - 1:
                bj = (
                    blk[f"w{j}_b{j}"](self._col_summary(w, j))
                    + blk[f"w{j + 1}_b{j}"](self._row_summary(weights[j + 1], j + 1))
                    + blk[f"b{j}_b{j}"](biases[j])
                )
            else:  # last layer: its output neurons are fixed, one vector of d_M * F channels
                wpool = _pool(w, 1, self.reduction, keepdim=False).flatten(1)
                bj = (blk[f"w{j}_b{j}"](wpool) + blk[f"b{j}_b{j}"](biases[j].flatten(1))).reshape(B, self.dM, self.fout)
            out_b.append(bj * norm)
        if self.resample and self.weights_out:
            out_w[0] = self.up(out_w[0]) + self.skip(w0)
        return tuple(out_w), tuple(out_b)


class _WeightSpaceBN(nn.Module):
    """BatchNorm per tensor and channel, over networks and positions (official ``BN``)."""

    def __init__(self, features: int, M: int) -> None:
        super().__init__()
        self.w = nn.ModuleList(nn.BatchNorm1d(features) for _ in range(M))
        self.b = nn.ModuleList(nn.BatchNorm1d(features) for _ in range(M))

    def forward(self, x):
        ws = tuple(bn(w.reshape(-1, w.shape[-1])).reshape(w.shape) for bn, w in zip(self.w, x[0]))
        bs = tuple(bn(b.reshape(-1, b.shape[-1])).reshape(b.shape) for bn, b in zip(self.b, x[1]))
        return ws, bs


class _Pointwise(nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return tuple(self.fn(t) for t in x[0]), tuple(self.fn(t) for t in x[1])


class DWSEncoder(nn.Module):
    """``n_hidden + 1`` DWS layers: ``1 -> hidden`` (``max(features) -> hidden`` for a CNN), then ``n_hidden``
    times [BN], ReLU, [dropout], DWS layer (the last to ``output_features`` channels, one attention head, bias
    outputs only), as the official ``DWSModel``."""

    def __init__(self, widths: Sequence[int], cfg: EncoderConfig, features: Sequence[int] | None = None) -> None:
        super().__init__()
        M = len(widths) - 1
        inner = tuple(widths)
        self.in_features = max(features) if features else 1
        dims = [self.in_features] + [cfg.hidden] * cfg.n_hidden + [cfg.output_features]
        layers: list[nn.Module] = []
        for i in range(len(dims) - 1):
            if i > 0:
                if cfg.bn:
                    layers.append(_WeightSpaceBN(dims[i], M))
                layers.append(_Pointwise(F.relu))
                if cfg.dropout > 0:
                    layers.append(_Pointwise(nn.Dropout(cfg.dropout)))
            last = i == len(dims) - 2
            layers.append(
                DWSLayer(
                    inner, dims[i], dims[i + 1], cfg, 1 if (last and i > 0) else cfg.num_heads, weights_out=not last
                )
            )
        self.layers = nn.Sequential(*layers)

    def forward(self, wb: WeightBatch):
        if not wb.convolutional:
            return self.layers((tuple(w.unsqueeze(-1) for w in wb.weights), tuple(b.unsqueeze(-1) for b in wb.biases)))
        # a CNN: each entry's kernel (or spatial) features are its input channels, zero-padded to the largest
        # layer's; biases carry one feature, padded alike (as DWSNets reads convolutional weight spaces)
        n = self.in_features
        ws = tuple(F.pad(w, (0, n - w.shape[-1])) for w in wb.weights)
        bs = tuple(F.pad(b.unsqueeze(-1), (0, n - 1)) for b in wb.biases)
        return self.layers((ws, bs))


def _init_like_official(module: nn.Module, scale: float, generator: torch.Generator) -> None:
    """Official ``CannibalLayer._init_model_params``: Xavier-normal weights times ``sqrt(2 fan_in / fan_out) *
    init_scale``, biases uniform in ``[-1e-4, 1e-4]``; applied to every linear map of the encoder."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            out_c, in_c = m.weight.shape
            with torch.no_grad():
                nn.init.xavier_normal_(m.weight, generator=generator)
                m.weight.mul_((2 * in_c / out_c) ** 0.5 * scale)
                if m.bias is not None:
                    m.bias.uniform_(-1e-4, 1e-4, generator=generator)


class DeepAlignNet(nn.Module):
    """The Deep-Align network: the DWS encoder, per-neuron embeddings and score matrices (paper Sec. 5, Fig. 2).

    Parameters
    ----------
    widths : sequence of int
        The MLP widths ``(d_0, ..., d_M)`` of the architecture this model aligns (one model per architecture, as
        in the paper).
    cfg : EncoderConfig, optional
        Hyper-parameters (official defaults when None).
    seed : int, default 0
        Seed of the initialisation (the official ``init_scale`` scheme).
    features : sequence of int, optional
        For convolutional networks, the features of each layer's weight entries
        (:attr:`~icml24.deep_align.weights.WeightBatch.features`: ``kh * kw`` per Conv2d, the spatial positions
        per channel read by the first Linear layer, 1 after it); then ``widths`` are the channels. None: MLPs.
    """

    def __init__(
        self,
        widths: Sequence[int],
        cfg: EncoderConfig | None = None,
        seed: int = 0,
        features: Sequence[int] | None = None,
    ) -> None:
        super().__init__()
        widths = mlp_widths(widths)
        seed = check_seed(seed)
        if cfg is not None and not isinstance(cfg, EncoderConfig):
            raise InputError(f"cfg must be an EncoderConfig, got {type(cfg).__name__}")
        if features is not None:
            if isinstance(features, (str, bytes)) or not isinstance(features, Sequence):
                raise InputError(
                    f"features must be a sequence of {len(widths) - 1} positive integers, got {features!r}"
                )
            if len(features) != len(widths) - 1:
                raise InputError(f"features must give one value per layer ({len(widths) - 1}), got {len(features)}")
            features = tuple(check_int(f, "features", min_val=1) for f in features)
        self.widths = widths
        self.features = features
        self.cfg = cfg or EncoderConfig()
        self.encoder = DWSEncoder(widths, self.cfg, features)
        self.scale = nn.Parameter(torch.full((1,), float(self.cfg.scale_init))) if self.cfg.normalize_scale else None
        _init_like_official(self.encoder, self.cfg.init_scale, torch.Generator().manual_seed(int(seed)))

    def config_dict(self) -> dict:
        """The widths, the kernel features (CNNs) and the encoder configuration as a plain dict."""
        feats = None if self.features is None else list(self.features)
        return {"widths": list(self.widths), "features": feats, **asdict(self.cfg)}

    def embed(self, wb: WeightBatch) -> list[torch.Tensor]:
        """Per-neuron embeddings of the hidden layers, unit norm times the learned scale (``NormalizeAndScale``).

        Parameters
        ----------
        wb : WeightBatch
            ``B`` networks of this model's architecture.

        Returns
        -------
        list of torch.Tensor
            Per hidden layer ``l = 1 .. M-1`` a ``(B, d_l, output_features)`` tensor.

        Raises
        ------
        InputError
            When ``wb`` is not a WeightBatch of this model's architecture.
        """
        if not isinstance(wb, WeightBatch):
            raise InputError(f"wb must be a WeightBatch, got {type(wb).__name__}", "see weights.from_sequential")
        if wb.widths != self.widths:
            raise InputError(f"wb has widths {wb.widths}, this model aligns {self.widths}")
        if (wb.features if wb.convolutional else None) != self.features:
            mine = "MLPs" if self.features is None else f"CNNs of kernel features {self.features}"
            theirs = f"kernel features {wb.features}" if wb.convolutional else "an MLP"
            raise InputError(f"wb has {theirs}, this model aligns {mine}")
        _, biases = self.encoder(wb)
        out = []
        for b in biases[:-1]:  # no permutation acts on the last bias
            e = F.normalize(b, dim=-1, eps=1e-12)  # official NormalizeAndScale (plus an epsilon against 0/0)
            out.append(e * self.scale if self.scale is not None else e)
        return out

    @staticmethod
    def scores_from(ea: Sequence[torch.Tensor], eb: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Score matrices ``S_l[i, j] = <F_l(a)_i, F_l(b)_j>`` (official ``extract_pred``).

        Parameters
        ----------
        ea, eb : sequence of torch.Tensor
            Embeddings of :meth:`embed`, per hidden layer ``(B, d_l, F)``.

        Returns
        -------
        list of torch.Tensor
            Per hidden layer ``(B, d_l, d_l)``.
        """
        for name, e in (("ea", ea), ("eb", eb)):
            if (
                not isinstance(e, (list, tuple))
                or not e
                or not all(isinstance(t, torch.Tensor) and t.dim() == 3 for t in e)
            ):
                raise InputError(f"{name} must be a non-empty list of (B, d_l, F) tensors, as embed returns")
        if len(ea) != len(eb) or any(
            x.shape[2] != y.shape[2] or (x.shape[0] != y.shape[0] and 1 not in (x.shape[0], y.shape[0]))
            for x, y in zip(ea, eb)
        ):
            shapes = [tuple(t.shape) for t in eb], [tuple(t.shape) for t in ea]
            raise InputError(f"eb {shapes[0]} does not match ea {shapes[1]} (layers, batch, features)")
        return [torch.einsum("bid,bjd->bij", x, y) for x, y in zip(ea, eb)]

    def forward(self, a: WeightBatch, b: WeightBatch) -> list[torch.Tensor]:
        """The score matrices of the pairs ``(a_i, b_i)``: ``scores_from(embed(a), embed(b))``.

        Parameters
        ----------
        a, b : WeightBatch
            ``B`` networks each.

        Returns
        -------
        list of torch.Tensor
            Per hidden layer ``(B, d_l, d_l)``.
        """
        return self.scores_from(self.embed(a), self.embed(b))


__all__ = [
    "EncoderConfig",
    "DeepAlignNet",
    "DWSEncoder",
    "DWSLayer",
    "DeepSetLayer",
    "SetAttentionBlock",
    "KroneckerSetLayer",
]
