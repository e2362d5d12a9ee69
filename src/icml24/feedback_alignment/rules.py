"""Learning rules as data: what a layer's backward pass sends down instead of ``W^T``, and its potential.

Notation (ours; the paper's Fig. 1 uses the transposed convention): Linear layer
``j`` maps ``h_{j-1}`` (``in_j`` features) to ``z_j = W_j h_{j-1} + b_j`` with ``W_j`` of shape
``(out_j, in_j)``; ``h_j = sigma(z_j)``. Its backward pass sends ``e_j`` (the error at ``z_j``) down as

    backprop:  W_j^T e_j                      (the exact gradient)
    FA:        B_j e_j,   B_j fixed random    (Lillicrap et al. 2016)
    DFA:       B_j e_L,   B_j fixed random    (Nokland 2016: straight from the output error)
    uSF:       B_j = s_j sign(W_j)^T           (Liao et al. 2016, uniform sign-concordant feedback)
    frSF:      B_j = |M_j| o sign(W_j)^T       (Liao et al. 2016, fixed random magnitudes)

so the feedback matrix ``B_j`` has the shape of ``W_j^T``, ``(in_j, out_j)`` (DFA: ``(in_j, n_L)``).

The *potential* of a rule is the function ``Phi_j(W_j)`` whose gradient with respect to column ``k`` of
``W_j`` is row ``k`` of ``B_j``. It turns the paper's conservation law into one formula for every rule:
for hidden neuron ``k`` of layer ``l``, under gradient flow (derivation in :mod:`.diagnostics`),

    C_{l,k} = 1/2 ||W_l[k,:]||^2 + 1/2 b_l[k]^2 - Phi_{l+1,k}(W_{l+1}[:,k])   is constant.

For FA ``Phi = <B[k,:], W[:,k]>`` (the paper's law, Theorem 5.2 of the ICML version); for backprop
``Phi = 1/2 ||W[:,k]||^2`` (the balancedness law of Du, Hu & Lee 2018); for sign symmetry
``Phi = sum_r s |W[r,k]|`` resp. ``sum_r |M[k,r]| |W[r,k]|`` ([derived]: the paper says its analysis covers
sign-FA; ``Phi`` is continuous through sign flips so the law holds there too). DFA has such a law only at
its last layer, where it coincides with FA.

This module defines the :class:`Rule` type and feedback alignment itself; the peers (backprop, DFA, the
sign-symmetry rules) are in :mod:`.baselines`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import torch

Tensor = torch.Tensor

# feedback(W, M, scale) -> B (shape of W^T; DFA: (in, n_L)); M is the rule's fixed matrix or None
FeedbackFn = Callable[[Tensor, Optional[Tensor], float], Tensor]
# potential(W, M, scale) -> Phi_k for every input neuron k of the layer, shape (in,)
PotentialFn = Callable[[Tensor, Optional[Tensor], float], Tensor]


@dataclass(frozen=True)
class Rule:
    """A learning rule for a stack of Linear layers.

    Attributes
    ----------
    name : str
        What users pass as ``rule=`` (``"fa"``, ``"backprop"``, ``"dfa"``, ``"usf"``, ``"frsf"``).
    title : str
        The rule's name and reference, for tables.
    direct : bool
        The error each layer sends down is computed from the *output* error ``e_L`` (DFA), not from the
        layer's own error.
    draws : bool
        The rule holds a fixed random matrix per layer, drawn once at construction (FA, DFA, frSF).
    exact : bool
        The rule is backpropagation (computed by ordinary autograd, the reference).
    feedback : FeedbackFn
        The matrix ``B_j`` the layer's backward pass uses, from its weight, fixed matrix and scale.
    potential : PotentialFn or None
        ``Phi_j`` per input neuron (see the module docstring); None where the rule has no layer-local law.
    """

    name: str
    title: str
    direct: bool
    draws: bool
    exact: bool
    feedback: FeedbackFn
    potential: Optional[PotentialFn]


def _fa_feedback(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    assert m is not None
    return m


def _fa_potential(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    # Phi_k = <B[k, :], W[:, k]> = sum_r B[k, r] W[r, k]
    assert m is not None
    return (m * w.T).sum(dim=1)


FA = Rule(
    name="fa",
    title="feedback alignment (Lillicrap et al. 2016)",
    direct=False,
    draws=True,
    exact=False,
    feedback=_fa_feedback,
    potential=_fa_potential,
)

__all__ = ["Rule", "FA", "FeedbackFn", "PotentialFn"]
