"""Train a stack of ``torch.nn.Linear`` layers under a chosen learning rule, with ordinary PyTorch optimizers.

:class:`FeedbackNetwork` wraps an ``nn.Sequential`` of Linear layers and elementwise activations. Its
forward pass computes exactly what the model computes; its backward pass (a custom
:class:`torch.autograd.Function` per Linear layer) gives each weight and bias the update of the chosen
rule, ``dW_j = e_j h_{j-1}^T`` and ``db_j = e_j`` summed over the batch, where the error ``e_j`` reaching
layer ``j`` was sent down by the layer above through its *feedback* matrix instead of ``W^T`` (see
:mod:`.rules`). ``loss.backward()`` then fills ``.grad`` with the rule's update direction and any
``torch.optim`` optimizer applies it. The feedback matrices are buffers, never parameters: no optimizer
ever changes them.

References: Lillicrap et al. 2016 (FA); Nokland 2016 (DFA); Liao et al. 2016 (uSF, frSF); the conservation
law these rules obey is in :mod:`.diagnostics` (Robertson & Koyejo, ICML 2024).
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import InputError
from ..validation import check_bool, check_float, check_int, check_seed
from .baselines import BACKPROP, DFA, FRSF, USF
from .rules import FA, Rule

Tensor = torch.Tensor

RULES: dict[str, Rule] = {r.name: r for r in (BACKPROP, FA, DFA, USF, FRSF)}

#: activations with sigma'(z) z = sigma(z): the conservation law holds through them
HOMOGENEOUS = (nn.ReLU, nn.LeakyReLU, nn.Identity)
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


# ------------------------------------------------------------------------------------------ autograd
class _OutputError:
    """Holds the output error ``e_L`` of one forward pass, for DFA's hidden layers (one per forward call)."""

    __slots__ = ("e",)

    def __init__(self) -> None:
        self.e: Optional[Tensor] = None


class FeedbackLinearFunction(torch.autograd.Function):
    """``z = x W^T + b`` forward; backward sends ``e B^T`` down instead of ``e W``.

    ``backward`` reads only the saved input ``x``, the feedback ``B`` and the incoming error: never ``W``.
    With ``store`` given (DFA), the output layer writes its error ``e_L`` there and every hidden layer sends
    ``e_L B^T`` down instead of its own error.
    """

    @staticmethod
    def forward(
        ctx,
        x: Tensor,
        weight: Tensor,
        bias: Optional[Tensor],
        feedback: Tensor,
        store: Optional[_OutputError],
        is_output: bool,
    ) -> Tensor:
        ctx.save_for_backward(x, feedback)
        ctx.has_bias = bias is not None
        ctx.store = store
        ctx.is_output = is_output
        return F.linear(x, weight, bias)

    @staticmethod
    def backward(ctx, grad_out: Tensor):
        x, feedback = ctx.saved_tensors
        e = grad_out.reshape(-1, grad_out.shape[-1])
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[1]:
            grad_w = e.T @ x.reshape(-1, x.shape[-1])
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_b = e.sum(dim=0)
        store = ctx.store
        if store is not None and ctx.is_output:
            store.e = e
        if ctx.needs_input_grad[0]:
            if store is not None and not ctx.is_output:
                if store.e is None:  # pragma: no cover - autograd runs the output layer first
                    raise RuntimeError("DFA: the output error was not recorded before a hidden layer's backward")
                e = store.e
            grad_x = (e @ feedback.T).reshape(x.shape)
        return grad_x, grad_w, grad_b, None, None, None


# ------------------------------------------------------------------------------------------ the wrapper
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
            f"model must be a torch.nn.Sequential of Linear layers and activations, got {type(model).__name__}"
        )
    mods = _flatten(model)
    allowed = HOMOGENEOUS + (() if homogeneous else ELEMENTWISE)
    seen_linear = False
    for i, m in enumerate(mods):
        if isinstance(m, nn.Linear):
            seen_linear = True
        elif isinstance(m, nn.Flatten) and not seen_linear:
            continue
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
                "use nn.Linear layers with ReLU, LeakyReLU or Identity between them "
                "(nn.Flatten only before the first Linear)",
            )
    linears = [m for m in mods if isinstance(m, nn.Linear)]
    if not linears:
        raise InputError("model has no nn.Linear layer")
    if not isinstance(mods[-1], nn.Linear):
        raise InputError(
            f"model must end with an nn.Linear layer, not {type(mods[-1]).__name__}",
            "leave the softmax to the loss (F.cross_entropy)",
        )
    if len({id(m) for m in linears}) != len(linears):
        raise InputError("model uses the same nn.Linear layer twice", "feedback is defined per layer")
    for j, lin in enumerate(linears):
        if not lin.weight.is_floating_point():
            raise InputError(f"model Linear layer {j} has a non-floating weight ({lin.weight.dtype})")
        if j and lin.in_features != linears[j - 1].out_features:
            raise InputError(
                f"model Linear layer {j} takes {lin.in_features} features but layer {j - 1} gives "
                f"{linears[j - 1].out_features}"
            )
    return mods


class FeedbackNetwork(nn.Module):
    """A stack of Linear layers trained by a chosen learning rule, through ordinary autograd and optimizers.

    Parameters
    ----------
    model : nn.Sequential
        Linear layers with ``ReLU``, ``LeakyReLU`` or ``Identity`` between them (positively homogeneous,
        ``sigma'(z) z = sigma(z)``, as the conservation law requires), ending with a Linear layer (the
        logits ``z_L``; leave the softmax to the loss). ``nn.Flatten`` may come first. Nested Sequentials are
        flattened. The model's parameters are shared, not copied: the wrapper trains them in place.
    rule : str
        ``"fa"`` (default), ``"backprop"``, ``"dfa"``, ``"usf"`` or ``"frsf"`` (see :mod:`.rules`).
    seed : int
        Seed of the fixed random feedback matrices (a private ``torch.Generator``; no global RNG state).
    feedback : sequence of tensors, optional
        Your own fixed matrices, one per Linear layer, instead of random ones: shape ``(in_j, out_j)`` (the
        shape of ``W_j^T``) for FA and frSF, ``(in_j, n_L)`` for DFA. Not accepted by backprop and uSF, whose
        feedback follows the weights.
    feedback_std : float, optional
        Standard deviation of the random feedback entries (and the scale ``s`` of uSF). Default
        ``1/sqrt(in_j)`` per layer, the std of :func:`make_mlp`'s Gaussian weight init [inferred: the paper's PDF
        may differ].
    homogeneous : bool
        True (default) refuses activations that are not positively homogeneous (the conservation law does
        not hold through them). False accepts Tanh, Sigmoid, GELU, SiLU, ELU, Softplus and Hardtanh too.

    Notes
    -----
    ``loss.backward()`` fills each parameter's ``.grad`` with the rule's update direction ``u`` (for
    backprop the gradient ``g``); only the output layer always gets its exact gradient. The first layer's
    feedback only shapes the error sent to the *input*, which is computed only if ``x.requires_grad``.
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
        self._linears = [m for m in mods if isinstance(m, nn.Linear)]
        n_out = self._linears[-1].out_features
        self.scales: list[float] = [
            float(feedback_std) if feedback_std is not None else 1.0 / math.sqrt(l.in_features) for l in self._linears
        ]
        shapes = [(l.in_features, n_out if self.rule.direct else l.out_features) for l in self._linears]
        if feedback is not None and not self.rule.draws:
            raise InputError(
                f"feedback: rule {self.rule.name!r} has no fixed feedback matrices",
                "its feedback follows the weights; use rule='fa', 'dfa' or 'frsf'",
            )
        if self.rule.draws:
            mats = self._check_feedback(feedback, shapes) if feedback is not None else self._draw(shapes)
            if self.rule is FRSF:  # only the magnitudes matter: store |M| once
                mats = [m.abs() for m in mats]
            for j, m in enumerate(mats):
                self.register_buffer(f"feedback_{j}", m)

    # -- construction helpers
    def _check_feedback(self, feedback: Sequence[Tensor], shapes: list[tuple[int, int]]) -> list[Tensor]:
        if isinstance(feedback, Tensor) or not isinstance(feedback, Iterable):
            raise InputError("feedback must be a sequence of tensors, one per Linear layer")
        feedback = list(feedback)
        if len(feedback) != len(shapes):
            raise InputError(f"feedback has {len(feedback)} matrices for {len(shapes)} Linear layers")
        out = []
        for j, (b, shape) in enumerate(zip(feedback, shapes)):
            w = self._linears[j].weight
            if not isinstance(b, Tensor):
                raise InputError(f"feedback[{j}] must be a tensor, got {type(b).__name__}")
            if tuple(b.shape) != shape:
                raise InputError(
                    f"feedback[{j}] has shape {tuple(b.shape)}, expected {shape}",
                    "DFA: (in_features, output width)"
                    if self.rule.direct
                    else "the shape of W^T: (in_features, out_features)",
                )
            if not b.is_floating_point() or not bool(torch.isfinite(b).all()):
                raise InputError(f"feedback[{j}] must be a finite floating-point tensor")
            out.append(b.detach().to(dtype=w.dtype, device=w.device).clone())
        return out

    def _draw(self, shapes: list[tuple[int, int]]) -> list[Tensor]:
        gen = torch.Generator(device="cpu").manual_seed(self.seed)
        out = []
        for lin, shape, std in zip(self._linears, shapes, self.scales):
            b = torch.randn(shape, generator=gen, dtype=torch.float64) * std
            out.append(b.to(dtype=lin.weight.dtype, device=lin.weight.device))
        return out

    # -- accessors
    @property
    def linears(self) -> list[nn.Linear]:
        """The Linear layers, input to output."""
        return list(self._linears)

    @property
    def fixed_feedback(self) -> Optional[list[Tensor]]:
        """The fixed random matrices (FA, DFA: the feedback itself; frSF: the magnitudes ``|M|``), else None."""
        if not self.rule.draws:
            return None
        return [getattr(self, f"feedback_{j}") for j in range(len(self._linears))]

    def feedback_matrix(self, j: int) -> Tensor:
        """A copy of the matrix ``B_j`` layer ``j``'s backward pass uses now; ``W_j^T`` for backprop."""
        n = len(self._linears)
        j = check_int(j, "layer index", min_val=-n, max_val=n - 1)
        return self._feedback(j % len(self._linears)).clone()

    def _feedback(self, j: int) -> Tensor:
        m = getattr(self, f"feedback_{j}") if self.rule.draws else None
        return self.rule.feedback(self._linears[j].weight.detach(), m, self.scales[j])

    def feedback_matrices(self) -> list[Tensor]:
        """``[B_1, ..., B_L]`` as the backward pass would use them now."""
        return [self.feedback_matrix(j) for j in range(len(self._linears))]

    # -- forward
    def forward(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor):
            raise InputError(f"x must be a torch.Tensor, got {type(x).__name__}")
        if not x.is_floating_point():
            raise InputError(f"x must be a floating-point tensor, got {x.dtype}")
        first = self._linears[0]
        if not isinstance(self._plan[0], nn.Flatten) and (x.dim() == 0 or x.shape[-1] != first.in_features):
            raise InputError(f"x has shape {tuple(x.shape)}, expected (..., {first.in_features})")
        if self.rule.exact:
            return self.model(x)
        store = _OutputError() if self.rule.direct else None
        last = len(self._linears) - 1
        j = 0
        h = x
        for m in self._plan:
            if isinstance(m, nn.Linear):
                b = self._feedback(j)
                h = FeedbackLinearFunction.apply(h, m.weight, m.bias, b, store, j == last)
                j += 1
            else:
                h = m(h)
        return h

    def extra_repr(self) -> str:
        return f"rule={self.rule.name}, seed={self.seed}"


# ------------------------------------------------------------------------------------------ helpers
_ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "relu": nn.ReLU,
    "leaky_relu": lambda: nn.LeakyReLU(0.1),
    "identity": nn.Identity,
    "linear": nn.Identity,
    "tanh": nn.Tanh,
}


def make_mlp(
    sizes: Sequence[int],
    activation: str = "relu",
    *,
    init_scale: float = 1.0,
    bias: bool = True,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
) -> nn.Sequential:
    """An MLP ``sizes[0] -> ... -> sizes[-1]`` with Gaussian init ``W ~ N(0, init_scale^2 / fan_in)``, ``b = 0``.

    Parameters
    ----------
    sizes : sequence of int
        Layer widths, at least two.
    activation : {"relu", "leaky_relu", "identity", "linear", "tanh"}, default "relu"
        Between Linear layers; leaky_relu has slope 0.1; tanh is not homogeneous (wrap the MLP with
        ``FeedbackNetwork(..., homogeneous=False)``).
    init_scale : float, default 1.0
        ``0.1`` is the small-initialisation arm of the claims.
    bias : bool, default True
    seed : int, default 0
        Seeds a private generator.
    dtype : torch.dtype, default torch.float32
        ``torch.float32`` or ``torch.float64``.

    Returns
    -------
    torch.nn.Sequential
    """
    if (
        isinstance(sizes, (str, bytes))
        or not isinstance(sizes, Sequence)
        or len(sizes) < 2
        or any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in sizes)
    ):
        raise InputError(f"sizes must be at least two positive integers, got {sizes!r}")
    if activation not in _ACTIVATIONS:
        raise InputError(f"activation must be one of {', '.join(_ACTIVATIONS)}, got {activation!r}")
    init_scale = check_float(init_scale, "init_scale", min_val=0.0, include_boundaries="right")
    seed = check_seed(seed)
    bias = check_bool(bias, "bias")
    if dtype not in (torch.float32, torch.float64):
        raise InputError(f"dtype must be torch.float32 or torch.float64, got {dtype!r}")
    gen = torch.Generator(device="cpu").manual_seed(seed)
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        lin = nn.Linear(a, b, bias=bias, dtype=dtype)
        with torch.no_grad():
            lin.weight.copy_(torch.randn(b, a, generator=gen, dtype=torch.float64) * (init_scale / math.sqrt(a)))
            if bias:
                lin.bias.zero_()
        layers.append(lin)
        if i < len(sizes) - 2:
            layers.append(_ACTIVATIONS[activation]())
    return nn.Sequential(*layers)


@torch.no_grad()
def align_init_(net: FeedbackNetwork, strength: float) -> FeedbackNetwork:
    """Start closer to alignment: ``W_j <- (1 - lam) W_j + lam c B_j^T``, rescaled to keep ``||W_j||``.

    Applied to every layer whose feedback reaches a hidden layer (``j >= 2``), with ``c = ||W_j|| / ||B_j||``.
    The "better-aligned initialisation" arm of the multi-class claim ([inferred]: the paper's exact scheme is
    in its PDF; we keep the norm so that only the direction changes). FA only (DFA: its last layer only).

    Parameters
    ----------
    net : FeedbackNetwork
        Changed in place.
    strength : float
        ``lam`` in ``[0, 1]``.

    Returns
    -------
    FeedbackNetwork
        ``net``.
    """
    if not isinstance(net, FeedbackNetwork):
        raise InputError(f"net must be a FeedbackNetwork, got {type(net).__name__}")
    strength = check_float(strength, "strength", min_val=0.0, max_val=1.0)
    if net.rule.name not in ("fa", "dfa"):
        raise InputError(
            f"align_init_ needs fixed feedback of the shape of W^T; rule {net.rule.name!r} has none", "use rule='fa'"
        )
    layers = range(1, len(net.linears)) if net.rule.name == "fa" else [len(net.linears) - 1]
    for j in layers:
        w = net.linears[j].weight
        b_t = net.feedback_matrix(j).T
        norm = w.norm()
        mixed = (1.0 - strength) * w + strength * (norm / b_t.norm()) * b_t
        w.copy_(mixed * (norm / mixed.norm()))
    return net


LOSSES = ("cross_entropy", "mse")


def loss_fn(name: str) -> Callable[[Tensor, Tensor], Tensor]:
    """The loss called ``name``: ``cross_entropy`` or ``mse`` (``1/2 ||z - onehot(y)||^2``), means over the batch.

    Parameters
    ----------
    name : {"cross_entropy", "mse"}

    Returns
    -------
    callable
        ``loss(logits, labels) -> scalar tensor``.
    """
    if name == "cross_entropy":
        return F.cross_entropy
    if name == "mse":

        def mse(z: Tensor, y: Tensor) -> Tensor:
            target = F.one_hot(y, z.shape[-1]).to(z.dtype)
            return 0.5 * ((z - target) ** 2).sum(dim=-1).mean()

        return mse
    raise InputError(f"loss must be one of {', '.join(LOSSES)}, got {name!r}")


def train(
    net: FeedbackNetwork,
    x: Tensor,
    y: Tensor,
    *,
    lr: float,
    steps: int,
    loss: str = "cross_entropy",
    batch_size: Optional[int] = None,
    seed: int = 0,
    callback: Optional[Callable[[int], None]] = None,
) -> list[float]:
    """Plain (stochastic) gradient descent with ``torch.optim.SGD`` under the network's rule.

    Full batch by default: the setting of the conservation law (gradient descent approximating gradient
    flow; momentum, weight decay or adaptive optimizers break it). ``callback(step)`` runs before the first
    update (step 0) and after each update.

    Parameters
    ----------
    net : FeedbackNetwork
    x : torch.Tensor of shape (n, features)
        Finite inputs.
    y : torch.Tensor of shape (n,)
        Integer class labels in ``0..n_out-1``.
    lr : float
        Learning rate, positive.
    steps : int
        Number of updates (0: none).
    loss : {"cross_entropy", "mse"}, default "cross_entropy"
    batch_size : int, optional
        Minibatches drawn with replacement; default the full batch.
    seed : int, default 0
        Seeds the minibatch draws.
    callback : callable, optional
        ``callback(step)``.

    Returns
    -------
    list of float
        The training loss before each update.
    """
    if not isinstance(net, FeedbackNetwork):
        raise InputError(f"net must be a FeedbackNetwork, got {type(net).__name__}")
    if (
        not isinstance(x, Tensor)
        or not isinstance(y, Tensor)
        or x.dim() < 2
        or y.dim() != 1
        or x.shape[0] != y.shape[0]
        or x.shape[0] == 0
    ):
        raise InputError("x must be (n, features) and y (n,) integer labels, with the same non-zero n")
    if y.dtype not in (torch.int64, torch.int32):
        raise InputError(f"y must hold integer class labels, got {y.dtype}")
    if not bool(torch.isfinite(x).all()):
        raise InputError("x contains NaN or inf")
    n_out = net.linears[-1].out_features
    if int(y.min()) < 0 or int(y.max()) >= n_out:
        raise InputError(f"y must hold labels in 0..{n_out - 1}")
    lr = check_float(lr, "lr", min_val=0.0, include_boundaries="right")
    steps = check_int(steps, "steps", min_val=0)
    batch_size = check_int(batch_size, "batch_size", min_val=1, allow_none=True)
    seed = check_seed(seed)
    lf = loss_fn(loss)
    opt = torch.optim.SGD(net.parameters(), lr=float(lr))
    gen = torch.Generator(device="cpu").manual_seed(seed)
    y = y.long()
    losses = []
    if callback is not None:
        callback(0)
    for step in range(1, steps + 1):
        if batch_size is None or batch_size >= x.shape[0]:
            xb, yb = x, y
        else:
            idx = torch.randint(0, x.shape[0], (batch_size,), generator=gen)
            xb, yb = x[idx], y[idx]
        opt.zero_grad(set_to_none=True)
        value = lf(net(xb), yb)
        value.backward()
        opt.step()
        losses.append(float(value.detach()))
        if callback is not None:
            callback(step)
    return losses


@torch.no_grad()
def accuracy(net: nn.Module, x: Tensor, y: Tensor) -> float:
    """Fraction of ``x`` whose arg-max logit is ``y``.

    Parameters
    ----------
    net : torch.nn.Module
    x : torch.Tensor
    y : torch.Tensor
        Class labels.

    Returns
    -------
    float
    """
    return float((net(x).argmax(dim=-1) == y).double().mean())


__all__ = [
    "RULES",
    "HOMOGENEOUS",
    "ELEMENTWISE",
    "FeedbackLinearFunction",
    "FeedbackNetwork",
    "get_rule",
    "make_mlp",
    "align_init_",
    "train",
    "loss_fn",
    "accuracy",
    "LOSSES",
]
