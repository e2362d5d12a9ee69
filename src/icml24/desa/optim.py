"""Plain SGD with heavy-ball momentum, the update of ``torch.optim.SGD`` (no dampening, no weight decay).

Written out so that a client process need not import ``torch.optim`` (whose first ``step`` imports
``torch._dynamo``, seconds of start-up per process); it gives the same numbers as ``torch.optim.SGD``.
"""

from __future__ import annotations

from typing import Iterable

import torch

__all__ = ["SGD"]


class SGD:
    """``buf = momentum * buf + grad`` (``buf = grad`` at the first step), ``p -= lr * buf``; as ``torch.optim.SGD``.

    Parameters
    ----------
    params : iterable of torch.Tensor
    lr : float
    momentum : float, default 0.0
    """

    def __init__(self, params: Iterable[torch.Tensor], lr: float, momentum: float = 0.0) -> None:
        self.params = [p for p in params]
        self.lr, self.momentum = float(lr), float(momentum)
        self.bufs: list[torch.Tensor | None] = [None] * len(self.params)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop the parameters' gradients.

        Parameters
        ----------
        set_to_none : bool, default True
        """
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One update from the current gradients (parameters without a gradient are skipped)."""
        for k, p in enumerate(self.params):
            if p.grad is None:
                continue
            d = p.grad
            if self.momentum != 0:
                if self.bufs[k] is None:
                    self.bufs[k] = d.detach().clone()
                else:
                    self.bufs[k].mul_(self.momentum).add_(d)
                d = self.bufs[k]
            p.add_(d, alpha=-self.lr)
