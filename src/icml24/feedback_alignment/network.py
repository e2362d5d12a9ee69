"""Train a stack of Linear and Conv2d layers under a chosen learning rule, with ordinary PyTorch optimizers.

:class:`FeedbackNetwork` wraps an ``nn.Sequential`` of ``Linear`` and ``Conv2d`` layers, elementwise
activations, average or max pooling and ``Flatten``. Its forward pass computes exactly what the model
computes; its backward pass (:class:`~.autograd.FeedbackFunction` per weighted layer) gives each weight
and bias the update of the chosen rule, ``dW_j = e_j h_{j-1}^T`` and ``db_j = e_j`` summed over the batch
(for a convolution, summed over positions too), where the error ``e_j`` reaching layer ``j`` was sent down
by the layer above through its *feedback* instead of ``W^T`` (a convolution: the transposed convolution
with a feedback kernel of shape ``(in_c, out_c, kh, kw)``; see :mod:`.rules`). ``loss.backward()`` then
fills ``.grad`` with the rule's update direction and any ``torch.optim`` optimizer applies it. Fixed feedback
(FA, DFA, frSF) is a buffer, never a parameter; the learned feedback of Kolen-Pollack and the weight mirror
is an ``nn.Parameter`` the optimizer updates with the gradient the backward pass gives it.

Pooling and flattening pass errors back exactly (they have no weights). The conservation law holds through
them: average and max pooling act channel by channel and are positively homogeneous, so a convolution's
*channel* plays the role of a neuron (see :mod:`.diagnostics`).

Building the models is in :mod:`.models` (:func:`~.models.make_mlp`, :func:`~.models.make_cnn`), training and
scoring them in :mod:`.training` (:func:`~.training.train`, :func:`~.training.accuracy`).

References: Lillicrap et al. 2016 (FA); Nokland 2016 (DFA); Liao et al. 2016 (uSF, frSF, brSF); Akrout et
al. 2019 (Kolen-Pollack, weight mirror); the conservation law these rules obey is in :mod:`.diagnostics`
(Robertson & Koyejo, ICML 2024).
"""

from __future__ import annotations

import math
from typing import Iterable, Optional, Sequence

import torch
from torch import nn

from ..errors import InputError
from ..validation import check_bool, check_float, check_int, check_seed
from .autograd import FeedbackFunction, OutputError, conv_args, mirror_term
from .baselines import BACKPROP, BRSF, DFA, FRSF, KOLEN_POLLACK, SQRT_2_OVER_PI, USF, WEIGHT_MIRROR
from .rules import FA, Rule, transpose

Tensor = torch.Tensor

RULES: dict[str, Rule] = {r.name: r for r in (BACKPROP, FA, DFA, USF, FRSF, BRSF, KOLEN_POLLACK, WEIGHT_MIRROR)}

#: activations with sigma'(z) z = sigma(z): the conservation law holds through them
HOMOGENEOUS = (nn.ReLU, nn.LeakyReLU, nn.Identity)
#: weightless, channel-wise, positively homogeneous maps between convolutions: errors pass back exactly
POOLING = (nn.AvgPool2d, nn.MaxPool2d)
#: the layers with weights, whose backward pass the rule replaces
WEIGHTED = (nn.Linear, nn.Conv2d)
#: noise inputs per forward pass of the weight mirror (Akrout et al. 2019)
MIRROR_SAMPLES = 64
#: other elementwise activations, accepted with ``homogeneous=False`` (the rules train, the law fails)
ELEMENTWISE = (nn.Tanh, nn.Sigmoid, nn.GELU, nn.SiLU, nn.ELU, nn.Softplus, nn.Hardtanh)


def get_rule(rule: "str | Rule") -> Rule:
    """The :class:`Rule` called ``rule``.

    Parameters
    ----------
    rule : str or Rule
        One of :data:`RULES` (case and surrounding spaces ignored), or a :class:`Rule`.

    Returns
    -------
    Rule

    Raises
    ------
    InputError
        For any other name.
    """
    if isinstance(rule, Rule):
        return rule
    if isinstance(rule, str) and rule.strip().lower() in RULES:
        return RULES[rule.strip().lower()]
    raise InputError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")


def _fan_in(layer: nn.Module) -> int:
    w = layer.weight
    return int(w[0].numel())


def _out_units(layer: nn.Module) -> int:
    return int(layer.weight.shape[0])


def _in_units(layer: nn.Module) -> int:
    return int(layer.weight.shape[1])


def _flatten(model: nn.Module) -> list[nn.Module]:
    if isinstance(model, nn.Sequential):
        out: list[nn.Module] = []
        for m in model:
            out.extend(_flatten(m))
        return out
    return [model]


def _check_stack(model: object, homogeneous: bool) -> list[nn.Module]:
    if isinstance(model, (list, tuple)):
        raise InputError(
            "model must be a torch.nn.Sequential, got a " + type(model).__name__,
            "wrap the layers: nn.Sequential(*layers)",
        )
    if not isinstance(model, nn.Sequential):
        raise InputError(
            f"model must be a torch.nn.Sequential of Linear/Conv2d layers and activations, got {type(model).__name__}"
        )
    mods = _flatten(model)
    allowed = HOMOGENEOUS + POOLING + (() if homogeneous else ELEMENTWISE)
    seen_linear = False
    for i, m in enumerate(mods):
        if isinstance(m, nn.Linear):
            seen_linear = True
        elif isinstance(m, nn.Conv2d):
            if seen_linear:
                raise InputError(f"model layer {i} (Conv2d) comes after a Linear layer", "convolutions come first")
            if m.groups != 1 or m.padding_mode != "zeros" or isinstance(m.padding, str):
                raise InputError(
                    f"model layer {i} (Conv2d) must have groups=1, padding_mode='zeros' and integer padding",
                    "the feedback kernel is defined for plain convolutions",
                )
        elif isinstance(m, nn.Flatten) and not seen_linear:
            continue
        elif isinstance(m, POOLING) and seen_linear:
            raise InputError(f"model layer {i} ({type(m).__name__}) comes after a Linear layer")
        elif isinstance(m, allowed):
            continue
        elif isinstance(m, ELEMENTWISE):
            raise InputError(
                f"model layer {i} ({type(m).__name__}) is not positively homogeneous",
                "the conservation law needs ReLU, LeakyReLU or Identity; pass homogeneous=False to train anyway",
            )
        else:
            raise InputError(
                f"model layer {i} ({type(m).__name__}) is not supported",
                "use nn.Linear / nn.Conv2d layers with ReLU, LeakyReLU or Identity between them, "
                "AvgPool2d / MaxPool2d after convolutions, and nn.Flatten only before the first Linear",
            )
    layers = [m for m in mods if isinstance(m, WEIGHTED)]
    linears = [m for m in layers if isinstance(m, nn.Linear)]
    if not linears:
        raise InputError("model has no nn.Linear layer")
    if not isinstance(mods[-1], nn.Linear):
        raise InputError(
            f"model must end with an nn.Linear layer, not {type(mods[-1]).__name__}",
            "leave the softmax to the loss (F.cross_entropy)",
        )
    if len({id(m) for m in layers}) != len(layers):
        raise InputError("model uses the same layer twice", "feedback is defined per layer")
    for j, lay in enumerate(layers):
        kind = type(lay).__name__
        if not lay.weight.is_floating_point():
            raise InputError(f"model {kind} layer {j} has a non-floating weight ({lay.weight.dtype})")
        if j and _in_units(lay) != _out_units(layers[j - 1]) and not isinstance(layers[j - 1], nn.Conv2d):
            raise InputError(
                f"model Linear layer {j} takes {_in_units(lay)} features but layer {j - 1} gives "
                f"{_out_units(layers[j - 1])}"
            )
        if j and isinstance(layers[j - 1], nn.Conv2d) and _in_units(lay) % _out_units(layers[j - 1]):
            raise InputError(
                f"model {kind} layer {j} takes {_in_units(lay)} inputs, not a multiple of the "
                f"{_out_units(layers[j - 1])} channels of layer {j - 1}"
            )
    return mods


class FeedbackNetwork(nn.Module):
    """A stack of Linear (and Conv2d) layers trained by a chosen learning rule, through ordinary autograd.

    Parameters
    ----------
    model : nn.Sequential
        ``Conv2d`` layers (``groups=1``, zero padding) with ``AvgPool2d`` / ``MaxPool2d`` between them, then
        ``Flatten`` and ``Linear`` layers; ``ReLU``, ``LeakyReLU`` or ``Identity`` between weighted layers
        (positively homogeneous, ``sigma'(z) z = sigma(z)``, as the conservation law requires); ending with a
        Linear layer (the logits ``z_L``; leave the softmax to the loss). Nested Sequentials are flattened. The
        model's parameters are shared, not copied: the wrapper trains them in place.
    rule : str
        ``"fa"`` (default), ``"backprop"``, ``"dfa"``, ``"usf"``, ``"frsf"``, ``"brsf"``, ``"kp"``
        (Kolen-Pollack) or ``"wm"`` (weight mirror, the adaptive variant); see :mod:`.rules`.
    seed : int
        Seed of the random feedback (a private ``torch.Generator``; no global RNG state): the fixed matrices,
        brSF's per-batch magnitudes, the weight mirror's noise.
    feedback : sequence of tensors, optional
        Your own matrices, one per weighted layer, instead of random ones: the shape of ``W_j^T`` (Linear:
        ``(in_j, out_j)``; Conv2d: ``(in_c, out_c, kh, kw)``) for FA, frSF (magnitudes: their absolute value
        is used), Kolen-Pollack and the weight mirror (the initial ``B``); ``(numel of layer j's input, n_L)``
        for DFA. Not accepted by backprop, uSF and brSF.
    feedback_std : float, optional
        Standard deviation of the random feedback entries (and the scale ``s`` of uSF; brSF's ``|M|`` has
        ``E|M| = s sqrt(2/pi)``). Default ``1/sqrt(fan_in_j)`` per layer, the std of :func:`~.models.make_mlp`'s and
        :func:`~.models.make_cnn`'s Gaussian init [inferred: the paper's PDF may differ].
    homogeneous : bool
        True (default) refuses activations that are not positively homogeneous (the conservation law does
        not hold through them). False accepts Tanh, Sigmoid, GELU, SiLU, ELU, Softplus and Hardtanh too.
    input_shape : sequence of int, optional
        The shape of one example, e.g. ``(1, 28, 28)``: needed by DFA when the model has convolutions (its
        feedback maps ``e_L`` to each layer's whole input).

    Notes
    -----
    ``loss.backward()`` fills each parameter's ``.grad`` with the rule's update direction ``u`` (for
    backprop the gradient ``g``); only the output layer always gets its exact gradient. The first layer's
    feedback only shapes the error sent to the *input*, which is computed only if ``x.requires_grad``.
    Kolen-Pollack's and the weight mirror's ``B`` are parameters of this wrapper (not of ``model``): give the
    optimizer ``net.parameters()`` and, for Kolen-Pollack's decay of ``W - B^T``, a ``weight_decay``.
    """

    def __init__(
        self,
        model: nn.Sequential,
        rule: "str | Rule" = "fa",
        *,
        seed: int = 0,
        feedback: Optional[Sequence[Tensor]] = None,
        feedback_std: Optional[float] = None,
        homogeneous: bool = True,
        input_shape: Optional[Sequence[int]] = None,
    ) -> None:
        super().__init__()
        homogeneous = check_bool(homogeneous, "homogeneous")
        self.rule = get_rule(rule)
        seed = check_seed(seed)
        feedback_std = check_float(
            feedback_std, "feedback_std", min_val=0.0, include_boundaries="right", allow_none=True
        )
        mods = _check_stack(model, homogeneous)
        self.model = model
        self.seed = seed
        self.homogeneous = homogeneous
        self._plan = mods
        self._layers = [m for m in mods if isinstance(m, WEIGHTED)]
        self.scales: list[float] = [
            float(feedback_std) if feedback_std is not None else 1.0 / math.sqrt(_fan_in(l)) for l in self._layers
        ]
        shapes = self._shapes(input_shape)
        if feedback is not None and not self.rule.draws:
            raise InputError(
                f"feedback: rule {self.rule.name!r} has no fixed feedback matrices",
                "its feedback follows the weights; use rule='fa', 'dfa', 'frsf', 'kp' or 'wm'",
            )
        self._gen = torch.Generator(device="cpu").manual_seed(seed + 7919)  # brSF magnitudes, mirror noise
        self._magnitudes: list[Tensor] = []
        if self.rule.draws:
            mats = self._check_feedback(feedback, shapes) if feedback is not None else self._draw(shapes)
            if self.rule is FRSF:  # only the magnitudes matter: store |M| once
                mats = [m.abs() for m in mats]
            for j, m in enumerate(mats):
                if self.rule.learned:
                    self.register_parameter(f"feedback_{j}", nn.Parameter(m))
                else:
                    self.register_buffer(f"feedback_{j}", m)
        if self.rule.redraws:
            self._redraw()

    # -- construction helpers
    def _shapes(self, input_shape: Optional[Sequence[int]]) -> list[tuple[int, ...]]:
        if not self.rule.direct:
            return [tuple(transpose(l.weight).shape) for l in self._layers]
        n_out = self._layers[-1].out_features
        if not any(isinstance(l, nn.Conv2d) for l in self._layers):
            return [(l.in_features, n_out) for l in self._layers]
        if (
            input_shape is None
            or isinstance(input_shape, (str, bytes))
            or not isinstance(input_shape, Sequence)
            or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in input_shape)
        ):
            raise InputError(
                f"input_shape must be the shape of one example (positive integers), got {input_shape!r}",
                "DFA with convolutions sends e_L to each layer's whole input: give input_shape=(C, H, W)",
            )
        sizes: list[int] = []
        hooks = [l.register_forward_pre_hook(lambda m, a: sizes.append(a[0][0].numel())) for l in self._layers]
        try:
            w = self._layers[0].weight
            with torch.no_grad():
                self.model(torch.zeros(1, *input_shape, dtype=w.dtype, device=w.device))
        except RuntimeError as err:
            raise InputError(f"input_shape {tuple(input_shape)} does not fit the model: {err}") from None
        finally:
            for h in hooks:
                h.remove()
        return [(n, n_out) for n in sizes]

    def _check_feedback(self, feedback: Sequence[Tensor], shapes: list[tuple[int, ...]]) -> list[Tensor]:
        if isinstance(feedback, Tensor) or not isinstance(feedback, Iterable):
            raise InputError("feedback must be a sequence of tensors, one per weighted layer")
        feedback = list(feedback)
        if len(feedback) != len(shapes):
            raise InputError(f"feedback has {len(feedback)} matrices for {len(shapes)} Linear layers")
        out = []
        for j, (b, shape) in enumerate(zip(feedback, shapes)):
            w = self._layers[j].weight
            if not isinstance(b, Tensor):
                raise InputError(f"feedback[{j}] must be a tensor, got {type(b).__name__}")
            if tuple(b.shape) != shape:
                raise InputError(
                    f"feedback[{j}] has shape {tuple(b.shape)}, expected {shape}",
                    "DFA: (size of the layer's input, output width)"
                    if self.rule.direct
                    else "the shape of W^T: (in_features, out_features) or (in_c, out_c, kh, kw)",
                )
            if not b.is_floating_point() or not bool(torch.isfinite(b).all()):
                raise InputError(f"feedback[{j}] must be a finite floating-point tensor")
            out.append(b.detach().to(dtype=w.dtype, device=w.device).clone())
        return out

    def _draw(self, shapes: list[tuple[int, ...]]) -> list[Tensor]:
        gen = torch.Generator(device="cpu").manual_seed(self.seed)
        out = []
        for lin, shape, std in zip(self._layers, shapes, self.scales):
            b = torch.randn(shape, generator=gen, dtype=torch.float64) * std
            out.append(b.to(dtype=lin.weight.dtype, device=lin.weight.device))
        return out

    def _redraw(self) -> None:
        """brSF: new magnitudes ``|M_j| ~ |N(0, s_j^2)|`` for every layer, from the private generator."""
        self._magnitudes = []
        for lay, std in zip(self._layers, self.scales):
            w = lay.weight
            m = torch.randn(tuple(transpose(w).shape), generator=self._gen, dtype=torch.float64).abs_() * std
            self._magnitudes.append(m.to(dtype=w.dtype, device=w.device))

    # -- accessors
    @property
    def layers(self) -> list[nn.Module]:
        """The weighted layers (``nn.Linear`` and ``nn.Conv2d``), input to output."""
        return list(self._layers)

    @property
    def linears(self) -> list[nn.Linear]:
        """The ``nn.Linear`` layers, input to output (for an MLP, all of :attr:`layers`)."""
        return [l for l in self._layers if isinstance(l, nn.Linear)]

    @property
    def fixed_feedback(self) -> Optional[list[Tensor]]:
        """The fixed random matrices (FA, DFA: the feedback itself; frSF: the magnitudes ``|M|``), else None.

        None as well for the learned feedback of Kolen-Pollack and the weight mirror (see :meth:`feedback_matrix`).
        """
        if not self.rule.draws or self.rule.learned:
            return None
        return [getattr(self, f"feedback_{j}") for j in range(len(self._layers))]

    def feedback_matrix(self, j: int) -> Tensor:
        """A copy of the feedback ``B_j`` layer ``j``'s backward pass uses now.

        ``W_j^T`` for backprop; for brSF the signs of the current ``W_j`` with the magnitudes of the latest
        forward pass; for a convolution a kernel of shape ``(in_c, out_c, kh, kw)``.

        Parameters
        ----------
        j : int
            Index of the weighted layer (negative indices count from the end).

        Returns
        -------
        torch.Tensor
        """
        return self._feedback(self._layer_index(j)).detach().clone()

    def _layer_index(self, j: int) -> int:
        """``j`` checked against the weighted layers (negative counts from the end), as a non-negative index."""
        n = len(self._layers)
        return check_int(j, "j (layer index)", min_val=-n, max_val=n - 1) % n

    def _stored(self, j: int) -> Optional[Tensor]:
        if self.rule.redraws:
            return self._magnitudes[j]
        return getattr(self, f"feedback_{j}") if self.rule.draws else None

    def _feedback(self, j: int) -> Tensor:
        return self.rule.feedback(self._layers[j].weight.detach(), self._stored(j), self.scales[j])

    def feedback_matrices(self) -> list[Tensor]:
        """``[B_1, ..., B_L]`` as the backward pass would use them now.

        Returns
        -------
        list of torch.Tensor
        """
        return [self.feedback_matrix(j) for j in range(len(self._layers))]

    def expected_magnitude(self, j: int) -> float:
        """``E|M_j|`` of brSF's magnitudes (``s_j sqrt(2/pi)``), the scale of its expected potential.

        Parameters
        ----------
        j : int
            Index of the weighted layer (negative indices count from the end).

        Returns
        -------
        float
        """
        return self.scales[self._layer_index(j)] * SQRT_2_OVER_PI

    # -- forward
    def forward(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor):
            raise InputError(f"x must be a torch.Tensor, got {type(x).__name__}")
        if not x.is_floating_point():
            raise InputError(f"x must be a real floating-point tensor, got {x.dtype}")
        first = self._layers[0]
        if isinstance(self._plan[0], nn.Linear) and (x.dim() == 0 or x.shape[-1] != first.in_features):
            raise InputError(f"x has shape {tuple(x.shape)}, expected (..., {first.in_features})")
        if isinstance(self._plan[0], nn.Conv2d) and (x.dim() != 4 or x.shape[1] != first.in_channels):
            raise InputError(f"x has shape {tuple(x.shape)}, expected (n, {first.in_channels}, H, W)")
        if x.numel() and not bool(torch.isfinite(x).all()):
            raise InputError("x contains NaN or infinite entries")
        if x.dtype != first.weight.dtype:  # float64 data into a float32 network (or back): the network's dtype
            x = x.to(first.weight.dtype)
        return self._forward_checked(x)

    def _forward_checked(self, x: Tensor) -> Tensor:
        """The forward pass on an input already validated and cast (:func:`~.training.check_batch`): what
        :func:`~.training.train` runs at every step, without checking the same batch again."""
        if self.rule.exact:
            return self.model(x)
        grad = torch.is_grad_enabled()
        if self.rule.redraws and grad:
            self._redraw()
        store = OutputError() if self.rule.direct else None
        last = len(self._layers) - 1
        learn = self.rule.name if self.rule.learned else None
        j = 0
        h = x
        for m in self._plan:
            if isinstance(m, WEIGHTED):
                if self.rule.learned:
                    b = getattr(self, f"feedback_{j}")
                else:
                    b = self._feedback(j)
                mirror = None
                if learn == "wm" and grad:
                    mirror = mirror_term(m.weight, b, self._gen, MIRROR_SAMPLES)
                h = FeedbackFunction.apply(h, m.weight, m.bias, b, store, j == last, conv_args(m), learn, mirror)
                j += 1
            else:
                h = m(h)
        return h

    def extra_repr(self) -> str:
        return f"rule={self.rule.name}, seed={self.seed}"


__all__ = [
    "RULES",
    "HOMOGENEOUS",
    "ELEMENTWISE",
    "POOLING",
    "WEIGHTED",
    "MIRROR_SAMPLES",
    "FeedbackNetwork",
    "get_rule",
]
