"""The exact alternatives a user would choose instead of an augmented deep ensemble, and the loop peer.

- :class:`OrbitAveraged`: test-time orbit averaging (symmetrisation, Puny et al. 2021): exactly invariant, at
  |G| times the inference cost of one model.
- :class:`GroupCNN`: a small group-convolution CNN (Cohen & Welling 2016) for C4 or D4, written on torch ops
  (lifting convolution, group convolutions, pooling over the group and the plane): exactly invariant by
  construction. escnn is not used: it does not install beside our torch pin.
- :func:`train_members_loop`: the same full-batch training as :func:`~.ensemble.train_ensemble`, one member
  after another in a Python loop with autograd (the benchmark's peer; the numbers agree).
- A single augmented model and a model trained without augmentation are ensembles of one member
  (:func:`~.ensemble.train_ensemble` with ``members=1``, on the augmented or the plain set).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
from torch import nn

from ..errors import InputError
from ..validation import check_int, check_seed, check_tensor
from .ensemble import check_factory, check_fit, check_training, diverged, make_members, member_loss, orbit_stack
from .groups import as_group, check_images

__all__ = ["OrbitAveraged", "GroupCNN", "train_members_loop"]


class OrbitAveraged(nn.Module):
    """``f_sym(x) = (1/|G|) sum_g rho_Y(g)^{-1} f(g x)`` for invariant outputs: ``mean_g f(g x)``.

    Parameters
    ----------
    model : torch.nn.Module or callable
        The model to symmetrise (e.g. a single augmented network); it is not copied or modified.
    grp : Group or {"c4", "d4"}, default "c4"
    """

    def __init__(self, model: Callable[[torch.Tensor], torch.Tensor], grp: Any = "c4") -> None:
        super().__init__()
        if not callable(model):
            raise InputError(f"model must be a torch.nn.Module or callable, got {type(model).__name__}")
        self.grp = as_group(grp, "grp")
        self._model = [model]  # not registered: the user's module stays theirs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The orbit average of the model's outputs.

        Parameters
        ----------
        x : torch.Tensor
            Square images ``(N, ..., H, H)``.

        Returns
        -------
        torch.Tensor
        """
        x = check_images(check_tensor(x, "x", dtype="any"))
        return orbit_stack(self._model[0], x, self.grp, "model").mean(0)


class GroupCNN(nn.Module):
    """A G-CNN invariant to C4 or D4: a lifting convolution, group convolutions, mean over group and plane.

    Lifting: ``F(g) = (g psi) * x``; group convolution: ``F'(g) = sum_k (g psi(g^{-1} k)) * F(k)`` (Cohen &
    Welling 2016, Eq. 10-11), with odd kernels, zero padding and 2x2 average pooling on even sides (all of
    which commute with the pixel action), ReLU, and a linear read-out of the features averaged over the
    group and the plane.

    Parameters
    ----------
    in_channels : int
    channels : sequence of int
        Channels (per group element) of each layer, e.g. ``(8, 16)``.
    classes : int
    grp : Group or {"c4", "d4"}, default "c4"
    kernel : int, default 3
        Odd kernel size.
    seed : int, optional
        Private seed of the initialisation; None uses the global RNG.
    """

    def __init__(
        self,
        in_channels: int,
        channels: Sequence[int],
        classes: int,
        grp: Any = "c4",
        *,
        kernel: int = 3,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        in_channels = check_int(in_channels, "in_channels", min_val=1)
        if isinstance(channels, (str, bytes)) or not hasattr(channels, "__len__") or len(channels) == 0:
            raise InputError("channels must be a non-empty sequence of positive ints, e.g. (8, 16)")
        channels = [check_int(c, "channels", min_val=1) for c in channels]
        classes = check_int(classes, "classes", min_val=1)
        self.grp = as_group(grp, "grp")
        self.kernel = check_int(kernel, "kernel", min_val=1)
        if self.kernel % 2 == 0:
            raise InputError(f"kernel must be odd (centred filters), got {kernel}")
        gen = None if seed is None else torch.Generator().manual_seed(check_seed(seed))
        n = self.grp.order
        k = self.kernel
        self.lift = nn.Parameter(
            torch.randn(channels[0], in_channels, k, k, generator=gen) / (in_channels * k * k) ** 0.5
        )
        self.convs = nn.ParameterList(
            [
                nn.Parameter(torch.randn(co, ci, n, k, k, generator=gen) / (ci * n * k * k) ** 0.5)
                for ci, co in zip(channels[:-1], channels[1:])
            ]
        )
        self.biases = nn.ParameterList([nn.Parameter(torch.zeros(c)) for c in channels])
        self.head = nn.Linear(channels[-1], classes)
        if gen is not None:
            with torch.no_grad():
                self.head.weight.copy_(torch.randn(self.head.weight.shape, generator=gen) / channels[-1] ** 0.5)
                self.head.bias.zero_()
        # index[g, k] = g^{-1} k
        idx = torch.tensor([[int(self.grp.table[self.grp.inverses[g], kk]) for kk in range(n)] for g in range(n)])
        self.register_buffer("index", idx, persistent=False)

    def _lift_weight(self) -> torch.Tensor:
        w = torch.stack([self.grp._apply(self.lift, g) for g in range(self.grp.order)], dim=1)  # (Co, G, Ci, k, k)
        return w.reshape(-1, *self.lift.shape[1:])

    def _group_weight(self, psi: torch.Tensor) -> torch.Tensor:
        co, ci, n, k, _ = psi.shape
        ws = [self.grp._apply(psi[:, :, self.index[g]], g) for g in range(n)]  # each (Co, Ci, G, k, k)
        return torch.stack(ws, dim=1).reshape(co * n, ci * n, k, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores ``(N, classes)``, exactly invariant (up to float round-off) under the group.

        Parameters
        ----------
        x : torch.Tensor
            Images ``(N, in_channels, H, H)``.

        Returns
        -------
        torch.Tensor
        """
        x = check_images(check_tensor(x, "x", ndim=4))
        if x.shape[1] != self.lift.shape[1] or x.dtype != self.lift.dtype:
            raise InputError(
                f"x must be (N, {self.lift.shape[1]}, H, H) images of dtype {self.lift.dtype}, "
                f"got shape {tuple(x.shape)} and dtype {x.dtype}"
            )
        n = self.grp.order
        pad = self.kernel // 2
        h = nn.functional.conv2d(x, self._lift_weight(), padding=pad)
        h = torch.relu(h + self.biases[0].repeat_interleave(n)[None, :, None, None])
        for i, psi in enumerate(self.convs):
            if h.shape[-1] % 2 == 0 and h.shape[-1] >= 4:
                h = nn.functional.avg_pool2d(h, 2)
            h = nn.functional.conv2d(h, self._group_weight(psi), padding=pad)
            h = torch.relu(h + self.biases[i + 1].repeat_interleave(n)[None, :, None, None])
        h = h.reshape(h.shape[0], -1, n, *h.shape[-2:]).mean(dim=(2, 3, 4))
        return self.head(h)


def train_members_loop(
    factory: Callable[[], nn.Module],
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    members: int = 16,
    steps: int = 300,
    lr: float = 1.0,
    seed: int = 0,
) -> list[nn.Module]:
    """Train the members one by one with autograd (same initialisations, loss and steps as ``train_ensemble``).

    Parameters
    ----------
    factory : callable
        ``factory()`` returns a new ``nn.Module``.
    x : torch.Tensor
        Training inputs ``(N, ...)``.
    y : torch.Tensor
        ``(N,)`` labels or ``(N, C)`` float targets.
    members : int, default 16
    steps : int, default 300
    lr : float, default 1.0
    seed : int, default 0

    Returns
    -------
    list of torch.nn.Module
        The trained members (new modules).
    """
    factory = check_factory(factory)
    members, steps, lr, seed, x, y = check_training(members, steps, lr, seed, x, y)
    mods = make_members(factory, members, seed)
    check_fit(mods[0], x, y)
    out = []
    for m in mods:
        dtype = next(m.parameters()).dtype
        xx, yy = x.to(dtype), y.to(dtype)
        for _ in range(steps):
            m.zero_grad(set_to_none=True)
            pred = m(xx)
            loss = member_loss(pred, yy)
            loss.backward()
            with torch.no_grad():
                for p in m.parameters():
                    p -= lr * p.grad
        m.zero_grad(set_to_none=True)
        diverged(dict(m.named_parameters()), lr)
        out.append(m)
    return out
