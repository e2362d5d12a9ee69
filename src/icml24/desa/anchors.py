"""Phases 1 and 2 of DeSA: local anchor synthesis by distribution matching, then the global anchor set.

Distribution matching (DM, Zhao & Bilen 2023) as the official ``condensation.distribution_matching``: the
client's synthetic images ``S`` start from ``N(0, 1)`` (``torch.randn``, in its normalised pixel space); each
iteration draws a *fresh randomly initialised* ConvNet ``psi``, samples ``batch_real`` real images of every
class, applies the same differentiable Siamese augmentation (DSA) to the real and synthetic images of a class
and minimises ``sum_c || mean psi(real_c) - mean psi(S_c) ||^2`` by SGD on the pixels (lr 1, momentum 0.5).
Classes the client does not hold are skipped, as in the code.

The DP option follows the code's ``distribution_matching_DP`` with its vendored pyvacy DP-SGD: real images are
taken in micro-batches of ``ipc``; each micro-batch's gradient on the synthetic pixels is clipped to
``l2_norm_clip`` (2.0), the clipped gradients are summed over the classes and micro-batches of an iteration,
Gaussian noise of std ``noise_multiplier * l2_norm_clip`` (0.6 x 2.0) is added once, and the sum is scaled by
``ipc / minibatch``; no augmentation. The privacy spent is read from Opacus's RDP accountant (sampling rate
``minibatch / (C * min class count)``, delta as the code ``1 / (C * min class count)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

from ..errors import InputError
from ..validation import check_choice, check_float, check_int, check_seed, check_tensor
from .models import ConvNet, check_image_shape
from .optim import SGD

__all__ = ["AnchorSet", "DSA_STRATEGY", "diff_augment", "synthesize_anchors", "global_anchors", "dm_loss"]

DSA_STRATEGY = "color_crop_cutout_flip_scale_rotate"
_OPS = ("color", "crop", "cutout", "flip", "scale", "rotate")
# ParamDiffAug defaults of the condensation benchmark
_P = dict(prob_flip=0.5, ratio_scale=1.2, ratio_rotate=15.0, ratio_crop_pad=0.125, ratio_cutout=0.5)
_P.update(brightness=1.0, saturation=2.0, contrast=0.5)


@dataclass
class AnchorSet:
    """Synthetic anchors: images ``(C * ipc, ch, H, W)`` with labels ``[0]*ipc + [1]*ipc + ...``.

    Parameters
    ----------
    images : torch.Tensor
    labels : torch.Tensor
        int64.
    ipc : int
        Images per class.
    classes_present : tuple of int
        Classes the client held real images of (others kept their initial noise).
    losses : list of float
        DM loss per iteration (empty for a global set).
    epsilon : float or None
        The (epsilon, delta)-DP guarantee of a DP synthesis, else None.
    delta : float or None
    """

    images: torch.Tensor
    labels: torch.Tensor
    ipc: int
    classes_present: tuple[int, ...]
    losses: list[float] = field(default_factory=list)
    epsilon: float | None = None
    delta: float | None = None

    def __post_init__(self) -> None:
        """Check that the images, labels, ``ipc`` and classes describe one anchor set.

        Raises
        ------
        InputError
            On non-finite or non-4-D images, labels that are not one integer per image, ``ipc < 1``, or
            ``classes_present`` that are not class indices.
        """
        self.images = check_tensor(self.images, "images", ndim=4, finite=False)  # global_anchors checks finiteness
        self.labels = check_tensor(self.labels, "labels", shape=(len(self.images),), dtype="integer")
        self.ipc = check_int(self.ipc, "ipc", min_val=1)
        classes = self.classes_present
        if isinstance(classes, (str, bytes)) or not isinstance(classes, Sequence):
            raise InputError(f"classes_present must be a tuple of class indices, got {type(classes).__name__}")
        self.classes_present = tuple(check_int(c, "classes_present", min_val=0) for c in classes)

    def __repr__(self) -> str:
        return f"AnchorSet({tuple(self.images.shape)}, ipc={self.ipc}, classes={len(self.classes_present)})"


# ------------------------------------------------------------------------------------------ augmentation
def _grid(x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    grid = torch.nn.functional.affine_grid(theta, list(x.shape), align_corners=True)
    return torch.nn.functional.grid_sample(x, grid, align_corners=True)


def _scale(x, g, n):
    r = _P["ratio_scale"]
    sx = torch.rand(n, generator=g)[: len(x)] * (r - 1.0 / r) + 1.0 / r
    sy = torch.rand(n, generator=g)[: len(x)] * (r - 1.0 / r) + 1.0 / r
    z = torch.zeros_like(sx)
    theta = torch.stack([torch.stack([sx, z, z], 1), torch.stack([z, sy, z], 1)], 1).to(x.dtype)
    return _grid(x, theta)


def _rotate(x, g, n):
    a = (torch.rand(n, generator=g)[: len(x)] - 0.5) * 2 * _P["ratio_rotate"] / 180 * math.pi
    c, s, z = torch.cos(a), torch.sin(a), torch.zeros_like(a)
    theta = torch.stack([torch.stack([c, s, z], 1), torch.stack([-s, c, z], 1)], 1).to(x.dtype)
    return _grid(x, theta)


def _flip(x, g, n):
    p = torch.rand(n, 1, 1, 1, generator=g)[: len(x)]
    return torch.where(p < _P["prob_flip"], x.flip(3), x)


def _color(x, g, n):
    b = torch.rand(n, 1, 1, 1, generator=g)[: len(x)].to(x.dtype)
    x = x + (b - 0.5) * _P["brightness"]
    s = torch.rand(n, 1, 1, 1, generator=g)[: len(x)].to(x.dtype)
    m = x.mean(dim=1, keepdim=True)
    x = (x - m) * (s * _P["saturation"]) + m
    c = torch.rand(n, 1, 1, 1, generator=g)[: len(x)].to(x.dtype)
    m = x.mean(dim=[1, 2, 3], keepdim=True)
    return (x - m) * (c + _P["contrast"]) + m


def _crop(x, g, n):
    h, w = x.shape[2], x.shape[3]
    sx, sy = int(h * _P["ratio_crop_pad"] + 0.5), int(w * _P["ratio_crop_pad"] + 0.5)
    tx = torch.randint(-sx, sx + 1, (n,), generator=g)[: len(x)]
    ty = torch.randint(-sy, sy + 1, (n,), generator=g)[: len(x)]
    gi, gx, gy = torch.meshgrid(torch.arange(len(x)), torch.arange(h), torch.arange(w), indexing="ij")
    gx = (gx + tx.view(-1, 1, 1) + 1).clamp(0, h + 1)
    gy = (gy + ty.view(-1, 1, 1) + 1).clamp(0, w + 1)
    pad = torch.nn.functional.pad(x, [1, 1, 1, 1, 0, 0, 0, 0])
    return pad.permute(0, 2, 3, 1).contiguous()[gi, gx, gy].permute(0, 3, 1, 2)


def _cutout(x, g, n):
    h, w = x.shape[2], x.shape[3]
    ch, cw = int(h * _P["ratio_cutout"] + 0.5), int(w * _P["ratio_cutout"] + 0.5)
    ox = torch.randint(0, h + (1 - ch % 2), (n,), generator=g)[: len(x)]
    oy = torch.randint(0, w + (1 - cw % 2), (n,), generator=g)[: len(x)]
    gi, gx, gy = torch.meshgrid(torch.arange(len(x)), torch.arange(ch), torch.arange(cw), indexing="ij")
    gx = (gx + ox.view(-1, 1, 1) - ch // 2).clamp(0, h - 1)
    gy = (gy + oy.view(-1, 1, 1) - cw // 2).clamp(0, w - 1)
    mask = torch.ones(len(x), h, w, dtype=x.dtype)
    mask[gi, gx, gy] = 0
    return x * mask.unsqueeze(1)


_FNS = {"color": _color, "crop": _crop, "cutout": _cutout, "flip": _flip, "scale": _scale, "rotate": _rotate}


def check_strategy(strategy, name: str = "strategy") -> str:
    """DSA operations joined by ``_`` among ``color, crop, cutout, flip, scale, rotate``, or ``""`` / ``"none"``.

    Parameters
    ----------
    strategy : str
    name : str, default "strategy"

    Returns
    -------
    str
        ``strategy``.
    """
    if not isinstance(strategy, str):
        raise InputError(f"{name} must be a string of DSA operations, got {type(strategy).__name__}")
    if strategy not in ("", "none"):
        for op in strategy.split("_"):
            if op not in _OPS:
                raise InputError(f"unknown operation {op!r} in {name}", f"choose among {', '.join(_OPS)}")
    return strategy


def diff_augment(x: torch.Tensor, strategy: str, seed: int, *, draws: int | None = None) -> torch.Tensor:
    """Differentiable Siamese augmentation (DSA) as the condensation benchmark's ``DiffAugment``, ``aug_mode 'S'``.

    One operation of ``strategy`` is picked from ``seed``, then applied with per-sample parameters drawn from
    ``seed``: two calls with the same seed (real and synthetic batch of a class) pick the same operation and
    give sample ``k`` of each the same parameters, as the official seeded calls do.

    Parameters
    ----------
    x : torch.Tensor
        ``(N, C, H, W)``; gradients flow through.
    strategy : str
        Operations joined by ``_`` among ``color, crop, cutout, flip, scale, rotate`` (official
        ``'color_crop_cutout_flip_scale_rotate'``); ``""`` or ``"none"`` returns ``x``.
    seed : int
    draws : int, optional
        Parameters drawn per operation (at least ``N``); give the larger batch's size to both calls so that
        the draws coincide. Default ``N``.

    Returns
    -------
    torch.Tensor
    """
    x = check_tensor(x, "x", ndim=4)
    strategy = check_strategy(strategy)
    seed = check_seed(seed)
    n = len(x) if draws is None else check_int(draws, "draws", min_val=len(x))
    if strategy in ("", "none"):
        return x
    ops = strategy.split("_")
    g = torch.Generator().manual_seed(seed)
    op = ops[int(torch.randint(0, len(ops), (1,), generator=g))]
    return _FNS[op](x, g, n)


# ------------------------------------------------------------------------------- distribution matching
def dm_loss(net: torch.nn.Module, real: Sequence[torch.Tensor], syn: Sequence[torch.Tensor]) -> torch.Tensor:
    """The DM objective ``sum_c || mean psi(real_c) - mean psi(syn_c) ||^2`` (classes with no real image skipped).

    Parameters
    ----------
    net : torch.nn.Module
        With ``embed``; its parameters are not trained.
    real, syn : sequence of torch.Tensor
        Per-class batches, same length.

    Returns
    -------
    torch.Tensor
        A scalar; differentiable in ``syn``.
    """
    if not callable(getattr(net, "embed", None)):
        raise InputError(f"net ({type(net).__name__}) has no embed() method", "give a module with embed(x)")
    for name, seq in (("real", real), ("syn", syn)):
        if isinstance(seq, torch.Tensor) or not isinstance(seq, Sequence):
            raise InputError(f"{name} must be a list of per-class image batches")
    if len(real) != len(syn):
        raise InputError(f"real has {len(real)} classes but syn has {len(syn)}")
    for c in range(len(real)):
        check_tensor(real[c], f"real[{c}]", ndim=4, allow_empty=True)
        check_tensor(syn[c], f"syn[{c}]", ndim=4, allow_empty=True)
    keep = [c for c in range(len(real)) if len(real[c])]
    if not keep:
        raise InputError("real holds no image of any class")
    shape = check_image_shape(net, real[keep[0]], f"real[{keep[0]}]")
    for c in keep:
        if not len(syn[c]):
            raise InputError(f"syn[{c}] is empty but real[{c}] is not", "give synthetic images for every real class")
        for name, x in ((f"real[{c}]", real[c]), (f"syn[{c}]", syn[c])):
            if x.shape[1:] != shape:
                raise InputError(f"{name} holds images of shape {tuple(x.shape[1:])}, real[{keep[0]}] {tuple(shape)}")
    sizes_r = [len(real[c]) for c in keep]
    sizes_s = [len(syn[c]) for c in keep]
    with torch.no_grad():
        er = net.embed(torch.cat([real[c] for c in keep]))
    es = net.embed(torch.cat([syn[c] for c in keep]))
    loss = es.new_zeros(())
    for a, b in zip(er.split(sizes_r), es.split(sizes_s)):
        loss = loss + ((a.mean(0) - b.mean(0)) ** 2).sum()
    return loss


def synthesize_anchors(
    images: torch.Tensor,
    labels: torch.Tensor,
    *,
    num_classes: int = 10,
    ipc: int = 50,
    iterations: int = 1000,
    batch_real: int = 256,
    lr: float = 1.0,
    momentum: float = 0.5,
    augment: str = DSA_STRATEGY,
    net_width: int = 128,
    net_depth: int = 3,
    dp: bool = False,
    l2_norm_clip: float = 2.0,
    noise_multiplier: float = 0.6,
    net_factory: Callable[[int], torch.nn.Module] | None = None,
    seed: int = 0,
) -> AnchorSet:
    """A client's local anchors by distribution matching (Sec. 3.2, official ``distribution_matching``).

    Parameters
    ----------
    images : torch.Tensor
        The client's real images ``(N, ch, H, W)``, already normalised (never changed).
    labels : torch.Tensor
        ``(N,)`` integers in ``[0, num_classes)``.
    num_classes : int, default 10
    ipc : int, default 50
        Synthetic images per class (official 50 for digits and CIFAR-10C, 10 for Office).
    iterations : int, default 1000
        DM iterations (official ``inv_iters`` 1000).
    batch_real : int, default 256
        Real images sampled per class and iteration (official 256); a class with fewer uses all it has.
    lr, momentum : float, default 1.0, 0.5
        SGD on the pixels (official).
    augment : str, default ``DSA_STRATEGY``
        DSA operations (official ``'color_crop_cutout_flip_scale_rotate'``); ``"none"`` turns it off.
    net_width, net_depth : int, default 128, 3
        The fresh random ConvNet drawn each iteration (official ``ConvNet``).
    dp : bool, default False
        DP-SGD on the pixels (see the module notes); then ``epsilon`` and ``delta`` are filled in.
    l2_norm_clip, noise_multiplier : float, default 2.0, 0.6
        DP-SGD clipping and noise (official).
    net_factory : callable ``seed -> nn.Module``, optional
        Builds the random embedding network of an iteration instead of the ConvNet.
    seed : int, default 0
        Seeds the initial noise, the batches, the networks and the augmentation.

    Returns
    -------
    AnchorSet
        Images ``(num_classes * ipc, ch, H, W)``, labels class-major.
    """
    images = check_tensor(images, "images", ndim=4)
    labels = check_tensor(labels, "labels", ndim=1, dtype="integer")
    if len(labels) != len(images):
        raise InputError(f"labels has {len(labels)} entries but images has {len(images)}")
    num_classes = check_int(num_classes, "num_classes", min_val=2)
    if int(labels.min()) < 0 or int(labels.max()) >= num_classes:
        raise InputError(f"labels must lie in [0, {num_classes}), got {int(labels.min())}..{int(labels.max())}")
    ipc = check_int(ipc, "ipc", min_val=1)
    iterations = check_int(iterations, "iterations", min_val=0)
    batch_real = check_int(batch_real, "batch_real", min_val=1)
    lr = check_float(lr, "lr", min_val=0.0, include_boundaries="neither")
    momentum = check_float(momentum, "momentum", min_val=0.0, max_val=1.0, include_boundaries="left")
    augment = check_strategy(augment, "augment")
    net_width = check_int(net_width, "net_width", min_val=1)
    net_depth = check_int(net_depth, "net_depth", min_val=1)
    if not isinstance(dp, bool):
        raise InputError(f"dp must be True or False, got {dp!r}")
    l2_norm_clip = check_float(l2_norm_clip, "l2_norm_clip", min_val=0.0, include_boundaries="neither")
    noise_multiplier = check_float(noise_multiplier, "noise_multiplier", min_val=0.0)
    if net_factory is not None and not callable(net_factory):
        raise InputError("net_factory must be callable (seed -> nn.Module with embed)")
    seed = check_seed(seed)
    ch, h, w = images.shape[1:]
    g = torch.Generator().manual_seed(seed)
    by_class = [torch.nonzero(labels == c).flatten() for c in range(num_classes)]
    present = tuple(c for c in range(num_classes) if len(by_class[c]))
    syn = torch.randn(num_classes * ipc, ch, h, w, generator=g).requires_grad_(True)
    opt = SGD([syn], lr=lr, momentum=momentum)
    images = images.detach()

    def fresh_net(s: int) -> torch.nn.Module:
        if net_factory is not None:
            net = net_factory(s)
            if not isinstance(net, torch.nn.Module) or not callable(getattr(net, "embed", None)):
                raise InputError(f"net_factory must return an nn.Module with embed(), got {type(net).__name__}")
        else:
            net = ConvNet(ch, num_classes, net_width, net_depth, im_size=h, seed=s)
        for p in net.parameters():
            p.requires_grad_(False)
        return net.train()

    losses: list[float] = []
    eps = delta = None
    if dp:
        min_count = min(len(by_class[c]) for c in present)
        minibatch = min(batch_real, min_count)
        n_private = min_count * len(present)
        for _ in range(iterations):
            net = fresh_net(int(torch.randint(0, 2**31 - 1, (1,), generator=g)))
            acc = torch.zeros_like(syn)
            total = 0.0
            for c in present:
                idx = by_class[c][torch.randperm(len(by_class[c]), generator=g)[:minibatch]]
                s_c = syn[c * ipc : (c + 1) * ipc]
                for micro in idx.split(ipc):
                    loss = dm_loss(net, [images[micro]], [s_c])
                    (grad,) = torch.autograd.grad(loss, syn)
                    norm = float(grad.norm())
                    acc += grad * min(1.0, l2_norm_clip / (norm + 1e-6))
                    total += float(loss)
            noise = torch.randn(syn.shape, generator=g) * (noise_multiplier * l2_norm_clip)
            syn.grad = (acc + noise) * (ipc / minibatch)
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(total)
        from ..extras import require

        require("opacus", extra="federated", what="the DP option of desa")
        from opacus.accountants import RDPAccountant

        acct = RDPAccountant()
        if iterations and noise_multiplier > 0:
            acct.history = [(noise_multiplier, minibatch / n_private, iterations)]
            delta = 1.0 / n_private
            eps = float(acct.get_epsilon(delta))
        else:
            delta, eps = 1.0 / n_private, math.inf
    else:
        for _ in range(iterations):
            net = fresh_net(int(torch.randint(0, 2**31 - 1, (1,), generator=g)))
            real, fake = [], []
            for c in range(num_classes):
                if not len(by_class[c]):
                    real.append(images[:0])
                    fake.append(syn[:0])
                    continue
                idx = by_class[c][torch.randperm(len(by_class[c]), generator=g)[:batch_real]]
                r, s = images[idx], syn[c * ipc : (c + 1) * ipc]
                if augment not in ("", "none"):
                    aseed = int(torch.randint(0, 2**31 - 1, (1,), generator=g))
                    n = max(len(r), len(s))
                    r = diff_augment(r, augment, aseed, draws=n)
                    s = diff_augment(s, augment, aseed, draws=n)
                real.append(r)
                fake.append(s)
            loss = dm_loss(net, real, fake)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
    out = torch.arange(num_classes).repeat_interleave(ipc)
    return AnchorSet(syn.detach().clone(), out, ipc, present, losses, eps, delta)


def global_anchors(anchor_sets: Sequence[AnchorSet], mode: str = "mean") -> AnchorSet:
    """The global anchor set every client trains with (Phase 2).

    Parameters
    ----------
    anchor_sets : sequence of AnchorSet
        One per client, same shape and ``ipc`` (at least two).
    mode : {"mean", "union"}, default "mean"
        ``"mean"``: element-wise average of the clients' images slot by slot, as the official code
        (``torch.mean(torch.stack(...))``, ``C * ipc`` anchors); a class slot is averaged over the clients
        that hold that class (the code averages all, including never-updated noise). ``"union"``: the
        concatenation of the clients' anchors of the classes they hold, as the paper's ``P^Syn = U_i P_i^Syn``.

    Returns
    -------
    AnchorSet

    Raises
    ------
    InputError
        Fewer than two sets, mismatched shapes, or an anchor class no client holds.
    """
    mode = check_choice(mode, "mode", ("mean", "union"))
    if isinstance(anchor_sets, AnchorSet) or not isinstance(anchor_sets, Sequence) or len(anchor_sets) < 2:
        raise InputError("anchor_sets must hold the anchor sets of at least two clients")
    for k, a in enumerate(anchor_sets):
        if not isinstance(a, AnchorSet):
            raise InputError(f"anchor_sets[{k}] is a {type(a).__name__}, not an AnchorSet")
    first = anchor_sets[0]
    for k, a in enumerate(anchor_sets):
        if a.images.shape != first.images.shape or a.ipc != first.ipc or not torch.equal(a.labels, first.labels):
            raise InputError(f"anchor_sets[{k}] has shape {tuple(a.images.shape)}, ipc {a.ipc}; all must match")
        check_tensor(a.images, f"anchor_sets[{k}].images", ndim=4)
    held = set().union(*[set(a.classes_present) for a in anchor_sets])
    labels = set(first.labels.tolist())
    orphans = sorted(labels - held)
    if orphans:
        raise InputError(
            f"anchor_sets have classes {orphans} that no client holds", "synthesize anchors only for held classes"
        )
    ipc = first.ipc
    if mode == "mean":
        imgs = torch.zeros_like(first.images)
        for c in sorted(labels):
            owners = [a for a in anchor_sets if c in a.classes_present]
            sl = slice(c * ipc, (c + 1) * ipc)
            imgs[sl] = torch.stack([a.images[sl] for a in owners]).mean(0)
        return AnchorSet(imgs, first.labels.clone(), ipc, tuple(sorted(labels)))
    parts, labs = [], []
    for a in anchor_sets:
        keep = torch.isin(a.labels, torch.tensor(sorted(a.classes_present), dtype=a.labels.dtype))
        parts.append(a.images[keep])
        labs.append(a.labels[keep])
    return AnchorSet(torch.cat(parts), torch.cat(labs), ipc, tuple(sorted(held)))
