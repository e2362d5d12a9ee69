"""Trained networks beside the kernels: the official code's fully connected net (500-200) and small CNN, trained
with Adam to interpolation, then measured with the same spurious / test / control accuracies.

Bombari & Mondelli (ICML 2024), Fig. 4 and the official ``main_NN.py`` / ``utils_NN.py``: Adam, learning rate
1e-3, ``StepLR(step_size=100, gamma=0.8)``, mini-batches of 1024, 1000 epochs. The official code regresses the
synthetic labels with the squared loss and classifies images into 10 classes with cross-entropy; our image tasks
are binary, so both are trained here with the squared loss on ``g`` in {-1, +1} (one output), the regression
the kernel models solve. Training stops early once every training sample is fitted to ``|f(z_i) - g_i| < 0.5``
and the mean squared error is below ``tol`` (interpolation), else after ``epochs``.

The user's module is never trained in place: :class:`NetworkInterpolator` trains a deep copy.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ..errors import InputError
from ..validation import check_float, check_int, check_seed
from .features import as_array, finite
from .memorization import check_labels

__all__ = ["FullyConnected", "SmallConvNet", "NetworkInterpolator"]


def _torch():
    import torch

    return torch


def _float32(z: np.ndarray, name: str) -> np.ndarray:
    """``z`` when its values fit float32, the networks' precision."""
    if np.abs(z).max() > np.finfo(np.float32).max:
        raise InputError(f"{name} has values beyond float32's range, the networks' precision", "rescale the inputs")
    return z


def _seeded_init(seed: int):
    """A context in which module construction draws from ``seed`` and leaves the global torch RNG as it was."""
    torch = _torch()
    ctx = torch.random.fork_rng(devices=[])
    ctx.__enter__()
    torch.manual_seed(seed)
    return ctx


def _build_fc(d: int, hidden: tuple[int, ...]):
    torch = _torch()
    layers: list[Any] = []
    width = d
    for h in hidden:
        layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
        width = h
    layers.append(torch.nn.Linear(width, 1))
    return torch.nn.Sequential(*layers)


class FullyConnected:
    """Factory of the official fully connected net ``d -> 500 -> 200 -> 1`` with ReLU (``utils_NN.FullyConnected``).

    Parameters
    ----------
    d : int
        Input dimension.
    hidden : tuple of int, default (500, 200)
        Hidden widths (the official code's).
    seed : int, default 0
        Seeds the initial weights (PyTorch's default initialisation), without touching the global RNG.

    Returns
    -------
    torch.nn.Module
        Takes ``(n, d)`` inputs and returns ``(n, 1)``.
    """

    def __new__(cls, d: int, hidden: tuple[int, ...] = (500, 200), seed: int = 0):
        d = check_int(d, "d", min_val=1)
        if isinstance(hidden, (str, bytes)) or not hasattr(hidden, "__iter__"):
            raise InputError(f"hidden must be a tuple of widths, got {type(hidden).__name__}")
        hidden = tuple(check_int(h, "hidden", min_val=1) for h in hidden)
        seed = check_seed(seed)
        ctx = _seeded_init(seed)
        try:
            return _build_fc(d, hidden)
        finally:
            ctx.__exit__(None, None, None)


def _build_cnn(shape: tuple[int, int], channels: tuple[int, int], hidden: int):
    torch = _torch()
    nn = torch.nn
    h, w = shape

    class _SmallConvNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.shape = (h, w)
            self.conv = nn.Sequential(
                nn.Conv2d(1, channels[0], 3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(channels[0], channels[1], 3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(2),
            )
            self.head = nn.Sequential(
                nn.Linear(channels[1] * (h // 4) * (w // 4), hidden), nn.ReLU(), nn.Linear(hidden, 1)
            )

        def forward(self, x):
            x = x.reshape(x.shape[0], 1, h, w)
            return self.head(self.conv(x).flatten(1))

    return _SmallConvNet()


class SmallConvNet:
    """Factory of the official small CNN (``utils_NN.SmallConvNet``): conv 3x3 (16) - ReLU - maxpool 2 - conv 3x3
    (32) - ReLU - maxpool 2 - linear 256 - ReLU - linear 1, on one-channel images given flattened.

    Parameters
    ----------
    shape : (int, int)
        Image height and width (at least 4 each); inputs are ``(n, H W)`` rows.
    channels : (int, int), default (16, 32)
    hidden : int, default 256
    seed : int, default 0
        Seeds the initial weights, without touching the global RNG.

    Returns
    -------
    torch.nn.Module
        Takes ``(n, H W)`` inputs and returns ``(n, 1)``.
    """

    def __new__(cls, shape: tuple[int, int], channels: tuple[int, int] = (16, 32), hidden: int = 256, seed: int = 0):
        if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__") or len(shape) != 2:
            raise InputError(f"shape must be (height, width), got {shape!r}")
        shape = (check_int(shape[0], "shape", min_val=4), check_int(shape[1], "shape", min_val=4))
        if isinstance(channels, (str, bytes)) or not hasattr(channels, "__len__") or len(channels) != 2:
            raise InputError(f"channels must be two channel counts, got {channels!r}")
        channels = (check_int(channels[0], "channels", min_val=1), check_int(channels[1], "channels", min_val=1))
        hidden = check_int(hidden, "hidden", min_val=1)
        seed = check_seed(seed)
        ctx = _seeded_init(seed)
        try:
            return _build_cnn(shape, channels, hidden)
        finally:
            ctx.__exit__(None, None, None)


class NetworkInterpolator:
    """A torch network trained with Adam on ``(z, g)`` to interpolation (squared loss), with the ``predict`` of
    :class:`~icml24.spurious_memorization.MinNormInterpolator`, so that the same accuracies measure it.

    Parameters
    ----------
    net : torch.nn.Module
        Maps ``(n, d)`` float32 inputs to ``(n, 1)`` or ``(n,)`` outputs; a deep copy is trained, ``net`` is left
        as it was.
    epochs : int, default 1000
        Most epochs (the official code's).
    lr : float, default 1e-3
        Adam's learning rate (the official code's).
    batch_size : int, default 1024
        The official code's.
    step_size : int, default 100
        ``StepLR`` period in epochs (the official code's).
    step_gamma : float, default 0.8
        ``StepLR`` factor (the official code's).
    tol : float, default 1e-3
        Stop once the training mean squared error is below ``tol`` and every sample is within 0.5 of its label;
        0 trains all ``epochs``.
    seed : int, default 0
        Seeds the mini-batch order (only).
    """

    def __init__(
        self,
        net: Any,
        *,
        epochs: int = 1000,
        lr: float = 1e-3,
        batch_size: int = 1024,
        step_size: int = 100,
        step_gamma: float = 0.8,
        tol: float = 1e-3,
        seed: int = 0,
    ) -> None:
        torch = _torch()
        if not isinstance(net, torch.nn.Module):
            raise InputError(f"net must be a torch.nn.Module, got {type(net).__name__}")
        if not any(p.requires_grad for p in net.parameters()):
            raise InputError("net has no trainable parameters", "give a network with weights to train")
        self.epochs = check_int(epochs, "epochs", min_val=1)
        self.lr = check_float(lr, "lr", min_val=0.0, include_boundaries="right")
        self.batch_size = check_int(batch_size, "batch_size", min_val=1)
        self.step_size = check_int(step_size, "step_size", min_val=1)
        self.step_gamma = check_float(step_gamma, "step_gamma", min_val=0.0, max_val=1.0, include_boundaries="right")
        self.tol = check_float(tol, "tol", min_val=0.0)
        self.seed = check_seed(seed)
        self._template = net
        self._net = None
        self.history: dict[str, float] = {}

    def _fitted(self) -> None:
        if self._net is None:
            raise InputError("the network is not fitted", "call fit(z, g) first")

    @property
    def module(self):
        """A copy of the trained network (in eval mode).

        Returns
        -------
        torch.nn.Module
        """
        self._fitted()
        return copy.deepcopy(self._net)

    def _forward(self, net, x):
        out = net(x)
        if out.ndim == 2 and out.shape[1] == 1:
            out = out[:, 0]
        if out.ndim != 1 or out.shape[0] != x.shape[0]:
            raise InputError(f"net must return one output per sample, got shape {tuple(out.shape)}")
        return out

    def fit(self, z: Any, g: Any) -> "NetworkInterpolator":
        """Train a copy of the network on ``(z, g)``.

        Parameters
        ----------
        z : numpy.ndarray or torch.Tensor
            ``(N, d)`` training inputs.
        g : array-like or torch.Tensor
            ``(N,)`` labels in {-1, +1}.

        Returns
        -------
        NetworkInterpolator
            ``self``; ``history`` holds ``epochs`` run, final ``train_mse`` and ``train_acc``.
        """
        torch = _torch()
        z = _float32(as_array(z, "z"), "z")
        g = check_labels(g, z.shape[0])
        net = copy.deepcopy(self._template).float()
        x = torch.from_numpy(z).float()
        y = torch.from_numpy(g).float()
        try:
            with torch.no_grad():
                self._forward(net, x[:1])
        except InputError:
            raise
        except Exception as exc:  # noqa: BLE001 - a net that cannot take these inputs is the user's input error
            raise InputError(f"net cannot take z of shape {tuple(z.shape)}: {type(exc).__name__}") from None
        gen = torch.Generator().manual_seed(self.seed)
        opt = torch.optim.Adam(net.parameters(), lr=self.lr)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=self.step_size, gamma=self.step_gamma)
        n = len(x)
        epoch = 0
        net.train()
        for epoch in range(1, self.epochs + 1):
            order = torch.randperm(n, generator=gen)
            for start in range(0, n, self.batch_size):
                idx = order[start : start + self.batch_size]
                opt.zero_grad()
                loss = torch.mean((self._forward(net, x[idx]) - y[idx]) ** 2)
                loss.backward()
                opt.step()
            sched.step()
            if self.tol > 0 and (epoch % 5 == 0 or epoch == self.epochs):
                with torch.no_grad():
                    resid = self._forward(net, x) - y
                if float(torch.mean(resid**2)) < self.tol and float(resid.abs().max()) < 0.5:
                    break
        net.eval()
        with torch.no_grad():
            f = self._forward(net, x).double().numpy()
        if not np.isfinite(f).all():
            raise InputError(f"lr {self.lr:g} makes the training diverge (NaN or infinite outputs)", "lower lr")
        self._net, self._d = net, z.shape[1]
        self.history = {
            "epochs": float(epoch),
            "train_mse": float(np.mean((f - g) ** 2)),
            "train_acc": float(np.mean(f * g > 0)),
        }
        return self

    def predict(self, z: Any) -> np.ndarray:
        """The trained network's outputs ``f(z)``.

        Parameters
        ----------
        z : numpy.ndarray or torch.Tensor
            ``(n, d)``.

        Returns
        -------
        numpy.ndarray
            ``(n,)`` float64.
        """
        torch = _torch()
        self._fitted()
        z = _float32(as_array(z, "z"), "z")
        if z.shape[1] != self._d:
            raise InputError(f"z must have {self._d} columns (the training inputs'), got {z.shape[1]}")
        out = []
        with torch.no_grad():
            for start in range(0, len(z), 4096):
                out.append(self._forward(self._net, torch.from_numpy(z[start : start + 4096]).float()))
        return finite(torch.cat(out).double().numpy(), "z")
