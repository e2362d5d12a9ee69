"""Learning rules as data: what a layer's backward pass sends down instead of ``W^T``, and its potential.

Notation (ours; the paper's Fig. 1 uses the transposed convention): Linear layer
``j`` maps ``h_{j-1}`` (``in_j`` features) to ``z_j = W_j h_{j-1} + b_j`` with ``W_j`` of shape
``(out_j, in_j)``; ``h_j = sigma(z_j)``. Its backward pass sends ``e_j`` (the error at ``z_j``) down as

    backprop:  W_j^T e_j                      (the exact gradient)
    FA:        B_j e_j,   B_j fixed random    (Lillicrap et al. 2016)
    DFA:       B_j e_L,   B_j fixed random    (Nokland 2016: straight from the output error)
    uSF:       B_j = s_j sign(W_j)^T           (Liao et al. 2016, uniform sign-concordant feedback)
    frSF:      B_j = |M_j| o sign(W_j)^T       (Liao et al. 2016, fixed random magnitudes)
    brSF:      B_j = |M_j(t)| o sign(W_j)^T    (Liao et al. 2016, magnitudes redrawn for every batch)
    KP:        B_j learned: dB_j = dW_j^T      (Kolen & Pollack 1994; Akrout et al. 2019)
    WM:        B_j learned by a weight mirror  (Akrout et al. 2019: the adaptive FA variant)

so the feedback matrix ``B_j`` has the shape of ``W_j^T``, ``(in_j, out_j)`` (DFA: ``(in_j, n_L)``). For a
``Conv2d`` layer with kernel ``W_j`` of shape ``(out_c, in_c, kh, kw)`` the feedback is a kernel of the
transposed shape ``(in_c, out_c, kh, kw)``: the backward pass is the transposed convolution with
``B_j.transpose(0, 1)`` in place of ``W_j`` (for backprop, ``B_j = W_j.transpose(0, 1)``).

**Which rules obey the conservation law, and why.** For every rule and every hidden unit ``k`` (a neuron,
or a channel of a convolution) the chain rule and ``sigma'(z) z = sigma(z)`` give, at every instant,
``d/dt 1/2 ||W_l[k]||^2 = <B_{l+1}[k], d/dt W_{l+1}[:, k]>``. A conserved quantity follows exactly when the
right-hand side is the time derivative of a function of the weights, the rule's *potential* ``Phi``:

    rule      Phi_{l+1,k}                                   law
    FA        <B[k,:], W[:,k]>            (B fixed)          exact (the paper's Theorem 5.2)
    backprop  1/2 ||W[:,k]||^2                               exact (balancedness, Du, Hu & Lee 2018)
    uSF       s ||W[:,k]||_1                                 exact ([derived]; Phi is continuous at sign flips)
    frSF      sum_r |M[k,r]| |W[r,k]|                        exact ([derived])
    KP        <B[k,:], W[:,k]> - 1/2 ||W[:,k]||^2            exact without weight decay ([derived]: B - W^T is
                                                            then constant); decay shrinks 1/2||W_l||^2 too
    brSF      E|M| ||W[:,k]||_1  (the expected potential)    in expectation only: the redrawn magnitudes add a
                                                            zero-mean first-order term per step, so the drift
                                                            over a fixed time shrinks like sqrt(eta), not eta
    WM        <B[k,:], W[:,k]>  (current B, reported)        none: B moves by the mirror's noise-driven
                                                            update, which is no gradient of a function of W
    DFA       (FA's, at the last layer only)                 only for the last hidden layer

:attr:`Rule.law` records the third column (``"exact"``, ``"expectation"`` or ``"none"``).

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
sign-symmetry rules, Kolen-Pollack and the weight mirror) are in :mod:`.baselines`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import torch

Tensor = torch.Tensor

# feedback(W, M, scale) -> B (shape of W^T; DFA: (in, n_L)); M is the rule's fixed matrix or None
FeedbackFn = Callable[[Tensor, Optional[Tensor], float], Tensor]
# potential(W, M, scale) -> Phi_k for every input neuron (or channel) k of the layer, shape (in,)
PotentialFn = Callable[[Tensor, Optional[Tensor], float], Tensor]


def transpose(w: Tensor) -> Tensor:
    """``W^T`` for a Linear weight ``(out, in)``; ``W.transpose(0, 1)`` for a conv kernel ``(out, in, kh, kw)``.

    Parameters
    ----------
    w : torch.Tensor
        A weight of at least two dimensions.

    Returns
    -------
    torch.Tensor
        A view of shape ``(in, out, ...)``.
    """
    return w.transpose(0, 1)


def per_input(t: Tensor) -> Tensor:
    """Sum a tensor of the shape of ``W^T`` over everything but its first axis: one value per input unit.

    Parameters
    ----------
    t : torch.Tensor
        Shaped like ``W^T``: ``(in, out)`` for a linear layer, ``(in_c, out_c, kh, kw)`` for a convolution.

    Returns
    -------
    torch.Tensor
        Shape ``(in,)``.
    """
    return t.reshape(t.shape[0], -1).sum(dim=1)


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
    law : {"exact", "expectation", "none"}
        Whether the conservation law with :attr:`potential` holds under gradient flow: exactly, only in
        expectation over the rule's randomness (brSF), or not at all (the weight mirror; DFA below its last
        layer). See the table in the module docstring.
    learned : bool
        The feedback is an ``nn.Parameter`` that the optimizer updates with the gradient the backward pass
        gives it (Kolen-Pollack, weight mirror); otherwise a buffer (or a function of ``W``) never trained.
    redraws : bool
        The random magnitudes are drawn anew for every forward pass with gradients (brSF).
    """

    name: str
    title: str
    direct: bool
    draws: bool
    exact: bool
    feedback: FeedbackFn
    potential: Optional[PotentialFn]
    law: str = "exact"
    learned: bool = False
    redraws: bool = False


def _fa_feedback(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    assert m is not None
    return m


def _fa_potential(w: Tensor, m: Optional[Tensor], scale: float) -> Tensor:
    # Phi_k = <B[k, :], W[:, k]> = sum_r B[k, r] W[r, k]  (conv: summed over the kernel too)
    assert m is not None
    return per_input(m * transpose(w))


FA = Rule(
    name="fa",
    title="feedback alignment (Lillicrap et al. 2016)",
    direct=False,
    draws=True,
    exact=False,
    feedback=_fa_feedback,
    potential=_fa_potential,
)

__all__ = ["Rule", "FA", "FeedbackFn", "PotentialFn", "transpose", "per_input"]
