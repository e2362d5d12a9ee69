"""The peers of feedback alignment, as :class:`~.rules.Rule` objects: backprop, DFA, uSF and frSF.

Backpropagation is the reference (exact gradient, computed by ordinary autograd). The others replace the
transposed forward weights in the backward pass (see :mod:`.rules` for the notation):

- DFA (Nokland 2016, "Direct feedback alignment provides learning in deep neural networks"): hidden layer
  ``l`` receives ``(B e_L) o sigma'(z_l)`` straight from the output error, with a fixed random ``B`` of
  shape ``(n_l, n_L)``. At the last layer DFA and FA coincide.
- uSF (Liao, Leibo & Poggio 2016, "How important is weight symmetry in backpropagation?"): uniform
  sign-concordant feedback ``B = s sign(W)^T``, recomputed from the current weights every step. biotorch
  scales it by the Xavier std ``sqrt(2 / (fan_in + fan_out))``; we use the same per-layer scale ``s`` as
  the random feedback of FA (``feedback_std``, default ``1/sqrt(fan_in)``) so that all rules send errors
  of the same typical size [inferred].
- frSF (same paper): fixed random magnitudes, ``B = |M| o sign(W)^T`` with ``M`` drawn once (the network
  stores ``|M|``).

The batch-random-magnitude variant brSF (``M`` redrawn every step) is left out: it has no potential, so
the conservation law does not apply.
"""

from __future__ import annotations

from typing import Optional

import torch

from .rules import Rule

Tensor = torch.Tensor


def _bp_feedback(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    return w.T


def _bp_potential(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    # Phi_k = 1/2 ||W[:, k]||^2: the balancedness law (Du, Hu & Lee 2018)
    return 0.5 * (w * w).sum(dim=0)


def _dfa_feedback(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    assert m is not None
    return m


def _usf_feedback(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    return torch.sign(w).mul_(scale).T


def _usf_potential(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    return scale * w.abs().sum(dim=0)


def _frsf_feedback(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    assert m is not None  # FeedbackNetwork stores the magnitudes |M| (non-negative) for frSF
    return torch.sign(w).T.mul_(m)


def _frsf_potential(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    assert m is not None
    return (m.abs() * w.abs().T).sum(dim=1)


BACKPROP = Rule(
    name="backprop",
    title="backpropagation (exact gradient, the reference)",
    direct=False,
    draws=False,
    exact=True,
    feedback=_bp_feedback,
    potential=_bp_potential,
)

DFA = Rule(
    name="dfa",
    title="direct feedback alignment (Nokland 2016)",
    direct=True,
    draws=True,
    exact=False,
    feedback=_dfa_feedback,
    potential=None,  # a layer-local law only at the last layer (same as FA there)
)

USF = Rule(
    name="usf",
    title="uniform sign-concordant feedback, uSF (Liao et al. 2016)",
    direct=False,
    draws=False,
    exact=False,
    feedback=_usf_feedback,
    potential=_usf_potential,
)

FRSF = Rule(
    name="frsf",
    title="sign-concordant feedback with fixed random magnitudes, frSF (Liao et al. 2016)",
    direct=False,
    draws=True,
    exact=False,
    feedback=_frsf_feedback,
    potential=_frsf_potential,
)

__all__ = ["BACKPROP", "DFA", "USF", "FRSF"]
