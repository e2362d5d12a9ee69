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
- brSF (same paper; biotorch's ``brsf``): batchwise random magnitudes, ``B = |M_t| o sign(W)^T`` with ``M_t``
  drawn anew (from the network's private generator) for every forward pass that records gradients. It has
  no potential: the law holds only in expectation (see :mod:`.rules`); we report the expected potential
  ``E|M| ||W[:,k]||_1`` with ``E|M| = s sqrt(2/pi)`` for Gaussian ``M``.
- Kolen-Pollack (Kolen & Pollack 1994; Akrout, Wilson, Humphreys, Lillicrap & Tweed 2019, "Deep learning
  without weight transport", NeurIPS, Eq. 4): the feedback ``B`` is learned with *the same* update as
  ``W^T``, ``dB = -eta h e^T = (dW)^T``, and the same weight decay ``lambda``, so that
  ``W - B^T <- (1 - eta lambda)(W - B^T)`` every step and the two converge. ``B`` is an ``nn.Parameter``
  whose gradient the backward pass sets to ``(grad W)^T``; pass ``weight_decay`` to the optimizer (plain
  ``torch.optim.SGD(..., weight_decay=lambda)``: momentum or Adam change the update and break the
  geometric decay).
- Weight mirror (Akrout et al. 2019, Sec. 3, Eq. 5-6), our *adaptive FA variant*: ``B`` is learned from
  the layer's own forward activity on noise: at every forward pass with gradients the layer also sees
  ``n`` inputs ``xi ~ N(0, I)`` and computes ``y = W xi``; the backward pass gives ``B`` the gradient
  ``B - xi^T y / n``, whose expectation ``B - W^T`` is the gradient of ``1/2 ||B - W^T||^2`` (the mirror's
  Hebbian term plus its decay, the decay rate set equal to the mirror's rate), so gradient descent drives
  ``B`` toward ``W^T`` without ever transporting ``W``. (The paper's
  "adaFA" is not defined in the sources we can read; the weight mirror is the published adaptive FA we
  implement [inferred].) Its update is no gradient of a function of ``W``: no conservation law.
"""

from __future__ import annotations

import math
from typing import Optional

import torch

from .rules import FA, Rule, per_input, transpose

Tensor = torch.Tensor

#: ``E|M|`` for ``M ~ N(0, s^2)`` is ``s * SQRT_2_OVER_PI``: brSF's expected magnitude
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _bp_feedback(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    return transpose(w)


def _bp_potential(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    # Phi_k = 1/2 ||W[:, k]||^2: the balancedness law (Du, Hu & Lee 2018)
    return 0.5 * per_input(transpose(w * w))


def _usf_feedback(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    return transpose(torch.sign(w).mul_(scale))


def _usf_potential(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    return scale * per_input(transpose(w.abs()))


def _frsf_feedback(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    assert m is not None  # FeedbackNetwork stores the magnitudes |M| (non-negative) for frSF and brSF
    return transpose(torch.sign(w)).mul(m)


def _frsf_potential(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    assert m is not None
    return per_input(m.abs() * transpose(w.abs()))


def _brsf_potential(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    # the expected potential: E|M| ||W[:, k]||_1 with E|M| = s sqrt(2/pi), uSF's potential at scale E|M|
    return _usf_potential(w, m, scale * SQRT_2_OVER_PI)


def _kp_potential(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    # Phi_k = <B[k,:], W[:,k]> - 1/2 ||W[:,k]||^2: with dB = dW^T, d Phi = <B[k,:], dW[:,k]>
    assert m is not None
    wt = transpose(w)
    return per_input(m * wt - 0.5 * wt * wt)


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
    feedback=FA.feedback,  # the fixed matrix itself, of shape (in, n_L)
    potential=None,  # a layer-local law only at the last layer (same as FA there)
    law="none",
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

BRSF = Rule(
    name="brsf",
    title="sign-concordant feedback with batchwise random magnitudes, brSF (Liao et al. 2016)",
    direct=False,
    draws=False,
    exact=False,
    feedback=_frsf_feedback,
    potential=_brsf_potential,
    law="expectation",
    redraws=True,
)

KOLEN_POLLACK = Rule(
    name="kp",
    title="Kolen-Pollack: B learned with W's update and decay (Akrout et al. 2019)",
    direct=False,
    draws=True,
    exact=False,
    feedback=FA.feedback,
    potential=_kp_potential,
    learned=True,
)

WEIGHT_MIRROR = Rule(
    name="wm",
    title="adaptive FA by weight mirror: B learned from noise, B -> W^T (Akrout et al. 2019)",
    direct=False,
    draws=True,
    exact=False,
    feedback=FA.feedback,
    potential=FA.potential,  # reported with the current B; no law holds
    law="none",
    learned=True,
)

__all__ = ["BACKPROP", "DFA", "USF", "FRSF", "BRSF", "KOLEN_POLLACK", "WEIGHT_MIRROR", "SQRT_2_OVER_PI"]
