"""The conditional residual energy of CREBM: a char-level encoder-decoder Transformer over SMILES.

``s(T | m) = (1/L) sum_t log p(x_t | x_<t, m)`` over the characters of the route's starting-material string
(sorted canonical SMILES joined by '.'), conditioned on the target ``m``; the energy is ``E = -s`` (the official
``Energy_function/reward_model.py`` and ``get_rerank_scores``). Stage A pre-trains it by maximum likelihood on
``target >> ground-truth materials``; stage C fine-tunes it with the Bradley-Terry loss
``-mean log sigmoid(s(T_chosen) - s(T_rejected))`` on pairs ranked by a criterion (paper Sec. 3, Eq. 6-8).
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass
from typing import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..errors import InputError
from ..validation import check_float, check_int, check_seed, check_tensor
from ._checks import check_config, check_sequence
from .world_routes import check_smiles

# The official 66-symbol alphabet ('^' start, '$' end, ' ' padding at index 0).
CHARS = " ^#%()+-./0123456789=@ABCDEFGHIKLMNOPRSTVXYZ[\\]abcdefgilmnoprstuy$"
CHAR_TO_ID = {c: i for i, c in enumerate(CHARS)}


@dataclass(frozen=True)
class EnergyConfig:
    """Sizes of the energy Transformer; the defaults are the official ones (``rerank.py``).

    Parameters
    ----------
    embedding_size : int, default 64
        Width of the residual stream (the official ``embedding_size``).
    hidden_size : int, default 512
        Width of the attention projections (``hidden_size``).
    num_layers : int, default 6
        Encoder layers, and as many decoder layers.
    num_heads : int, default 8
    intermediate_size : int, default 1024
        Feed-forward width.
    dropout : float, default 0.1
    """

    embedding_size: int = 64
    hidden_size: int = 512
    num_layers: int = 6
    num_heads: int = 8
    intermediate_size: int = 1024
    dropout: float = 0.1

    def __post_init__(self) -> None:
        for name in ("embedding_size", "hidden_size", "num_layers", "num_heads", "intermediate_size"):
            check_int(getattr(self, name), name, min_val=1)
        if self.embedding_size % 2:
            raise InputError(f"embedding_size must be even (sinusoidal positions), got {self.embedding_size}")
        if self.hidden_size % self.num_heads:
            raise InputError(
                f"hidden_size ({self.hidden_size}) must be a multiple of num_heads ({self.num_heads})",
                "change one of them",
            )
        check_float(self.dropout, "dropout", min_val=0.0, max_val=1.0, include_boundaries="left")

    def validated(self) -> "EnergyConfig":
        """Return self (every field is checked when the config is made).

        Returns
        -------
        EnergyConfig
        """
        return self


def encode_smiles(text: str, name: str = "smiles") -> list[int]:
    """Token ids of ``'^' + text + '$'`` in the official alphabet.

    Parameters
    ----------
    text : str
    name : str, default "smiles"
        The argument's name, for the message.

    Returns
    -------
    list of int
    """
    if not isinstance(text, str) or not text:
        raise InputError(f"{name} must be a non-empty SMILES string")
    bad = sorted({c for c in text if c not in CHAR_TO_ID or c in " ^$"})
    if bad:
        raise InputError(f"{name} has characters outside the SMILES alphabet: {''.join(bad)!r}")
    check_smiles(text, name)
    return [CHAR_TO_ID["^"]] + [CHAR_TO_ID[c] for c in text] + [CHAR_TO_ID["$"]]


def _positions(length: int, size: int, device) -> torch.Tensor:
    pos = torch.arange(1, length + 1, device=device, dtype=torch.float32)[:, None]
    bins = 2 * torch.arange(size // 2, device=device, dtype=torch.float32)[None, :]
    ang = pos / torch.pow(10000.0, bins / size)
    return torch.stack([torch.sin(ang), torch.cos(ang)], dim=2).reshape(length, size)


class _Attention(nn.Module):
    def __init__(self, c: EnergyConfig) -> None:
        super().__init__()
        self.h = c.num_heads
        self.q = nn.Linear(c.embedding_size, c.hidden_size)
        self.k = nn.Linear(c.embedding_size, c.hidden_size)
        self.v = nn.Linear(c.embedding_size, c.hidden_size)
        self.out = nn.Linear(c.hidden_size, c.embedding_size)

    def forward(self, q, kv, mask):
        b, lq, _ = q.shape
        lk = kv.shape[1]

        def split(x, n):
            return x.view(b, n, self.h, -1).transpose(1, 2)

        qq, kk, vv = split(self.q(q), lq), split(self.k(kv), lk), split(self.v(kv), lk)
        att = qq @ kk.transpose(-1, -2) / math.sqrt(qq.shape[-1]) + (1.0 - mask[:, None]) * -10000.0
        ctx = (att.softmax(-1) @ vv).transpose(1, 2).reshape(b, lq, -1)
        return self.out(ctx)


class _Layer(nn.Module):
    def __init__(self, c: EnergyConfig, cross: bool) -> None:
        super().__init__()
        self.self_att = _Attention(c)
        self.ln1 = nn.LayerNorm(c.embedding_size, eps=1e-12)
        self.cross = _Attention(c) if cross else None
        self.ln2 = nn.LayerNorm(c.embedding_size, eps=1e-12) if cross else None
        self.ff1 = nn.Linear(c.embedding_size, c.intermediate_size)
        self.ff2 = nn.Linear(c.intermediate_size, c.embedding_size)
        self.ln3 = nn.LayerNorm(c.embedding_size, eps=1e-12)
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x, mask, memory=None, cross_mask=None):
        x = self.ln1(x + self.drop(self.self_att(x, x, mask)))  # post-LN, as the official layers
        if self.cross is not None:
            x = self.ln2(x + self.drop(self.cross(x, memory, cross_mask)))
        return self.ln3(x + self.drop(self.ff2(F.relu(self.ff1(x)))))


class EnergyTransformer(nn.Module):
    """The CREBM energy network: char encoder over the target, causal char decoder over the starting materials.

    Shared token embedding plus sinusoidal positions (from 1), post-LN layers with attention projected to
    ``hidden_size``, and a bias-free output layer, as ``Energy_function/reward_model.py``.

    Parameters
    ----------
    config : EnergyConfig, optional
        Sizes (the official ones by default).
    seed : int, default 0
        Seeds the initial weights.
    """

    def __init__(self, config: EnergyConfig | None = None, seed: int = 0) -> None:
        super().__init__()
        config = check_config(config, EnergyConfig)
        seed = check_seed(seed)
        self.config = config
        g = torch.random.fork_rng(devices=[])
        with g:
            torch.manual_seed(seed)
            self.embed = nn.Embedding(len(CHARS), config.embedding_size)
            self.encoder = nn.ModuleList([_Layer(config, False) for _ in range(config.num_layers)])
            self.decoder = nn.ModuleList([_Layer(config, True) for _ in range(config.num_layers)])
            self.head = nn.Linear(config.embedding_size, len(CHARS), bias=False)
        self.drop = nn.Dropout(config.dropout)

    def _embed(self, ids):
        return self.drop(self.embed(ids) + _positions(ids.shape[1], self.config.embedding_size, ids.device))

    def forward(self, src: torch.Tensor, src_len: torch.Tensor, tgt_in: torch.Tensor, tgt_len: torch.Tensor):
        """Next-character logits of the decoder.

        Parameters
        ----------
        src : torch.Tensor
            ``(B, Ls)`` token ids of ``^target$`` (padded with 0).
        src_len : torch.Tensor
            ``(B,)`` lengths of ``src``.
        tgt_in : torch.Tensor
            ``(B, Lt)`` decoder inputs ``^materials`` (the materials string without its end token).
        tgt_len : torch.Tensor
            ``(B,)`` lengths of ``tgt_in``.

        Returns
        -------
        torch.Tensor
            ``(B, Lt, vocab)`` logits.
        """
        src = check_tensor(src, "src", ndim=2, dtype="integer")
        tgt_in = check_tensor(tgt_in, "tgt_in", shape=(src.shape[0], None), dtype="integer")
        check_tensor(src_len, "src_len", shape=(src.shape[0],), dtype="integer")
        check_tensor(tgt_len, "tgt_len", shape=(src.shape[0],), dtype="integer")
        for name, ids in (("src", src), ("tgt_in", tgt_in)):
            if bool(((ids < 0) | (ids >= len(CHARS))).any()):
                raise InputError(f"{name} must hold token ids in [0, {len(CHARS)})")
        ls, lt = src.shape[1], tgt_in.shape[1]
        s_valid = (torch.arange(ls)[None] < src_len[:, None]).float()
        t_valid = (torch.arange(lt)[None] < tgt_len[:, None]).float()
        enc_mask = s_valid[:, None, :].expand(-1, ls, -1)
        dec_mask = torch.tril(torch.ones(lt, lt))[None] * t_valid[:, None, :]
        cross_mask = s_valid[:, None, :].expand(-1, lt, -1)
        x = self._embed(src)
        for layer in self.encoder:
            x = layer(x, enc_mask)
        y = self._embed(tgt_in)
        for layer in self.decoder:
            y = layer(y, dec_mask, x, cross_mask)
        return self.head(y)


def _strings(targets, materials) -> tuple[list, list]:
    targets, materials = check_sequence(targets, "targets"), check_sequence(materials, "materials")
    if len(targets) != len(materials):
        raise InputError(f"materials ({len(materials)}) and targets ({len(targets)}) must have the same length")
    return targets, materials


def batch_inputs(targets: Sequence[str], materials: Sequence[str]):
    """Pad a batch for :class:`EnergyTransformer` (the official ``convert_symbols_to_inputs``).

    Parameters
    ----------
    targets : sequence of str
        Target SMILES.
    materials : sequence of str
        Starting-material strings (same length as ``targets``).

    Returns
    -------
    tuple of torch.Tensor
        ``src, src_len, tgt_in, tgt_len, tgt_out, out_mask``; ``out_mask`` covers the material characters and
        leaves out the end-token prediction, as the official ``token_mask``.
    """
    targets, materials = _strings(targets, materials)
    s = [encode_smiles(t, "targets") for t in targets]
    m = [encode_smiles(x, "materials") for x in materials]
    b, ls, lt = len(s), max(map(len, s)), max(map(len, m)) - 1
    src = torch.zeros(b, ls, dtype=torch.long)
    tin = torch.zeros(b, lt, dtype=torch.long)
    tout = torch.zeros(b, lt, dtype=torch.long)
    mask = torch.zeros(b, lt)
    for i, (a, c) in enumerate(zip(s, m)):
        src[i, : len(a)] = torch.tensor(a)
        tin[i, : len(c) - 1] = torch.tensor(c[:-1])
        tout[i, : len(c) - 1] = torch.tensor(c[1:])
        mask[i, : len(c) - 2] = 1.0  # the last position predicts '$': masked out
    return src, torch.tensor([len(a) for a in s]), tin, torch.tensor([len(c) - 1 for c in m]), tout, mask


def sequence_scores(model: EnergyTransformer, targets: Sequence[str], materials: Sequence[str]) -> torch.Tensor:
    """Length-normalised log-likelihood ``s`` of each materials string given its target (differentiable).

    Parameters
    ----------
    model : EnergyTransformer
    targets : sequence of str
    materials : sequence of str

    Returns
    -------
    torch.Tensor
        ``(B,)`` scores; the energy is ``-s``.
    """
    if not isinstance(model, EnergyTransformer):
        raise InputError(f"model must be an EnergyTransformer, got {type(model).__name__}")
    src, sl, tin, tl, tout, mask = batch_inputs(targets, materials)
    logp = model(src, sl, tin, tl).log_softmax(-1).gather(2, tout[..., None]).squeeze(2)
    return (logp * mask).sum(-1) / mask.sum(-1).clamp_min(1.0)


@torch.no_grad()
def energies(
    model: EnergyTransformer, targets: Sequence[str], materials: Sequence[str], batch_size: int = 64
) -> torch.Tensor:
    """Energies ``E = -s`` in evaluation mode, batched, without gradients; the model's mode is restored.

    Parameters
    ----------
    model : EnergyTransformer
    targets : sequence of str
    materials : sequence of str
    batch_size : int, default 64

    Returns
    -------
    torch.Tensor
        ``(B,)`` float32 energies (``B >= 1``: empty sequences are refused).
    """
    batch_size = check_int(batch_size, "batch_size", min_val=1)
    if not isinstance(model, EnergyTransformer):
        raise InputError(f"model must be an EnergyTransformer, got {type(model).__name__}")
    targets, materials = _strings(targets, materials)
    for t, m in zip(targets, materials):  # every string checked before any work
        encode_smiles(t, "targets")
        encode_smiles(m, "materials")
    was = model.training
    model.eval()
    try:
        out = [
            -sequence_scores(model, targets[i : i + batch_size], materials[i : i + batch_size])
            for i in range(0, len(targets), batch_size)
        ]
    finally:
        model.train(was)
    return torch.cat(out)


def bradley_terry_loss(chosen: torch.Tensor, rejected: torch.Tensor) -> torch.Tensor:
    """The pairwise preference loss ``-mean log sigmoid(s_chosen - s_rejected)`` (``reward_tune_schedule.py``).

    Parameters
    ----------
    chosen : torch.Tensor
        ``(P,)`` scores ``s`` of the preferred routes.
    rejected : torch.Tensor
        ``(P,)`` scores of the other routes.

    Returns
    -------
    torch.Tensor
        Scalar loss.
    """
    chosen = check_tensor(chosen, "chosen", ndim=1, finite=True)
    rejected = check_tensor(rejected, "rejected", ndim=1, finite=True)
    if chosen.shape != rejected.shape or chosen.numel() == 0:
        raise InputError(f"rejected must have the shape of chosen {tuple(chosen.shape)}, got {tuple(rejected.shape)}")
    return -F.logsigmoid(chosen - rejected).mean()


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings of the two training stages.

    Parameters
    ----------
    epochs : int, default 40
        Passes over the data (official: up to 2000 for pre-training, 40 for fine-tuning).
    batch_size : int, default 32
        Sequences (pre-training) or pairs (fine-tuning) per step (official 32).
    lr : float, default 5e-5
        Peak learning rate of fine-tuning (official 5e-5); pre-training uses the Noam-style schedule
        ``lr_scale * min(1, step / warmup) / max(step, warmup)`` with ``lr_scale`` (official 20).
    warmup : int, default 1000
        Warm-up steps (official 1000 for fine-tuning, 16000 for pre-training).
    lr_scale : float, default 20.0
        Scale of the pre-training schedule.
    max_pairs : int, default 0
        Cap on pairs per epoch (0: all), drawn at random each epoch.
    seed : int, default 0
    """

    epochs: int = 40
    batch_size: int = 32
    lr: float = 5e-5
    warmup: int = 1000
    lr_scale: float = 20.0
    max_pairs: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "warmup"):
            check_int(getattr(self, name), name, min_val=1)
        for name in ("lr", "lr_scale"):
            check_float(getattr(self, name), name, min_val=0.0, include_boundaries="neither")
        check_int(self.max_pairs, "max_pairs", min_val=0)
        check_seed(self.seed)

    def validated(self) -> "TrainConfig":
        """Return self (every field is checked when the config is made).

        Returns
        -------
        TrainConfig
        """
        return self


def _check_pairs(pairs, name: str, width: int):
    if isinstance(pairs, str) or not hasattr(pairs, "__len__") or not len(pairs):
        raise InputError(f"{name} must be a non-empty list of {width}-tuples of strings")
    for p in pairs:
        if not isinstance(p, (tuple, list)) or len(p) != width or not all(isinstance(x, str) and x for x in p):
            raise InputError(f"{name} must hold {width}-tuples of non-empty strings, got {str(p)[:60]}")
    for p in pairs:
        for x in p:
            encode_smiles(x, name)
    return [tuple(p) for p in pairs]


def pretrain_energy(
    model: EnergyTransformer, pairs: Sequence[tuple[str, str]], config: TrainConfig | None = None
) -> EnergyTransformer:
    """Stage A: maximum-likelihood pre-training on ``(target, ground-truth materials)`` (official ``train.py``).

    Token cross-entropy over the material characters with Adam and the Noam-style schedule. The model passed
    in is not modified: a trained copy is returned.

    Parameters
    ----------
    model : EnergyTransformer
    pairs : sequence of (str, str)
        ``(target SMILES, materials string)``.
    config : TrainConfig, optional
        Defaults: ``TrainConfig(epochs=2000, warmup=16000)`` is the official setting; here the default is the
        dataclass's (40 epochs, warm-up 1000).

    Returns
    -------
    EnergyTransformer
        The trained copy, in evaluation mode.
    """
    if not isinstance(model, EnergyTransformer):
        raise InputError(f"model must be an EnergyTransformer, got {type(model).__name__}")
    config = check_config(config, TrainConfig)
    pairs = _check_pairs(pairs, "pairs", 2)
    net = copy.deepcopy(model).train()
    opt = torch.optim.Adam(net.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: config.lr_scale * min(1.0, (s + 1) / config.warmup) / max(s + 1, config.warmup)
    )
    g = torch.Generator().manual_seed(config.seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        for _ in range(config.epochs):
            order = torch.randperm(len(pairs), generator=g).tolist()
            for i in range(0, len(order), config.batch_size):
                batch = [pairs[j] for j in order[i : i + config.batch_size]]
                src, sl, tin, tl, tout, mask = batch_inputs([a for a, _ in batch], [b for _, b in batch])
                logits = net(src, sl, tin, tl)
                ce = F.cross_entropy(logits.transpose(1, 2), tout, reduction="none")
                loss = (ce * mask).sum() / mask.sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
    return net.eval()


def finetune_energy(
    model: EnergyTransformer, pairs: Sequence[tuple[str, str, str]], config: TrainConfig | None = None
) -> EnergyTransformer:
    """Stage C: Bradley-Terry preference fine-tuning on ``(target, chosen, rejected)`` triples.

    Adam with linear warm-up then linear decay to 0 over all steps (official ``reward_tune_schedule.py``: lr
    5e-5, warm-up 1000, 40 epochs, batch 32 pairs); no reference-model or KL term. When a run has fewer steps
    than ten warm-up lengths the warm-up is cut to a tenth of the steps (a deviation for short CPU runs). The
    model passed in is not modified: a trained copy is returned.

    Parameters
    ----------
    model : EnergyTransformer
    pairs : sequence of (str, str, str)
        ``(target, chosen materials, rejected materials)``.
    config : TrainConfig, optional

    Returns
    -------
    EnergyTransformer
        The fine-tuned copy, in evaluation mode.
    """
    if not isinstance(model, EnergyTransformer):
        raise InputError(f"model must be an EnergyTransformer, got {type(model).__name__}")
    config = check_config(config, TrainConfig)
    pairs = _check_pairs(pairs, "pairs", 3)
    net = copy.deepcopy(model).train()
    per_epoch = len(pairs) if not config.max_pairs else min(config.max_pairs, len(pairs))
    total = config.epochs * math.ceil(per_epoch / config.batch_size)
    opt = torch.optim.Adam(net.parameters(), lr=config.lr)
    w = min(config.warmup, max(1, total // 10))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / w if s < w else max(0.0, (total - s) / max(1, total - w))
    )
    g = torch.Generator().manual_seed(config.seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        for _ in range(config.epochs):
            order = torch.randperm(len(pairs), generator=g).tolist()[:per_epoch]
            for i in range(0, len(order), config.batch_size):
                batch = [pairs[j] for j in order[i : i + config.batch_size]]
                t = [b[0] for b in batch]
                s = sequence_scores(net, t + t, [b[1] for b in batch] + [b[2] for b in batch])
                loss = bradley_terry_loss(s[: len(batch)], s[len(batch) :])
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
    return net.eval()


def config_dict(config: EnergyConfig) -> dict:
    """The config as a plain dict (for run records).

    Parameters
    ----------
    config : EnergyConfig

    Returns
    -------
    dict
    """
    if not isinstance(config, EnergyConfig):
        raise InputError("config must be an EnergyConfig")
    return asdict(config)
