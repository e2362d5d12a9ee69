"""The torch modules of the loop: :class:`SmallNet`, the classifier of the claims, and the layer P-ClArC inserts.

:class:`Projection` is the affine map ``h <- h - v v^T (h - z)`` that :func:`~icml24.red_xai.correct.p_clarc`
puts after the CAV's layer; :func:`~icml24.red_xai.explain.attribute` gives it the LRP-epsilon rule.
"""

from __future__ import annotations

import torch
from torch import nn

from ..validation import check_int, check_seed

__all__ = ["SmallNet"]


class SmallNet(nn.Module):
    """A small ReLU MLP classifier on images ``(N, C, H, W)``, flattened in ``forward`` (LRP-friendly).

    Parameters
    ----------
    in_features : int
        ``C * H * W``.
    classes : int
        Number of classes (at least 2).
    hidden : int, default 64
        Units of each of the two hidden layers.
    seed : int, default 0
        Seed of the initial weights.
    """

    def __init__(self, in_features: int, classes: int, hidden: int = 64, seed: int = 0):
        super().__init__()
        in_features = check_int(in_features, "in_features", min_val=1)
        classes = check_int(classes, "classes", min_val=2)
        hidden = check_int(hidden, "hidden", min_val=1)
        seed = check_seed(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.net = nn.Sequential(
                nn.Linear(in_features, hidden),
                nn.ReLU(),
                nn.Linear(hidden, hidden),
                nn.ReLU(),
                nn.Linear(hidden, classes),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return logits ``(N, classes)``.

        Parameters
        ----------
        x : torch.Tensor
            Images ``(N, ...)``.

        Returns
        -------
        torch.Tensor
            Logits.
        """
        return self.net(x.flatten(1))


class Projection(nn.Module):
    """h <- h - v v^T (h - z) on a layer's flattened output (P-ClArC).

    Parameters
    ----------
    v : torch.Tensor
        The unit direction removed (flattened activation space).
    z : torch.Tensor
        The reference activation whose component along ``v`` the output takes.
    """

    def __init__(self, v: torch.Tensor, z: torch.Tensor):
        super().__init__()
        self.register_buffer("v", v.clone())
        self.register_buffer("z", z.clone())

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """Return ``h`` with its component along ``v`` set to that of ``z``.

        Parameters
        ----------
        h : torch.Tensor
            The layer's output ``(N, ...)``.

        Returns
        -------
        torch.Tensor
            Same shape as ``h``.
        """
        flat = h.flatten(1)
        out = flat - ((flat - self.z) @ self.v)[:, None] * self.v[None, :]
        return out.view_as(h)
