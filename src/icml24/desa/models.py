"""The two architectures of DeSA's heterogeneous setting, each exposing ``embed(x)`` and ``classify(h)``.

Both follow the dataset-condensation benchmark networks the official code imports (``utils.get_network``):
``ConvNet`` (width 128, depth 3, instance norm as ``GroupNorm(width, width)``, ReLU, 2x2 average pooling) and
``AlexNet`` (five convolutions 128-192-256-192-192, ReLU, max pooling). ``width`` scales both down for CPU
runs; the official defaults are the class defaults. Any user module with ``embed`` and ``classify`` methods
works with the rest of the package.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..errors import InputError
from ..validation import check_choice, check_int, check_seed, check_tensor

__all__ = ["ConvNet", "AlexNet", "check_model", "reinitialise"]


def reinitialise(module: nn.Module, seed: int) -> nn.Module:
    """Re-draw a module's parameters with PyTorch's default initialisation from a seeded generator.

    ``nn.Conv2d`` and ``nn.Linear`` get ``kaiming_uniform_(a=sqrt(5))`` weights and ``U(-1/sqrt(fan_in),
    1/sqrt(fan_in))`` biases (their ``reset_parameters``), norms get weight 1 and bias 0; the global random
    state is not touched, so the same seed gives the same network in any process.

    Parameters
    ----------
    module : torch.nn.Module
        Changed in place.
    seed : int

    Returns
    -------
    torch.nn.Module
        ``module`` itself.
    """
    g = torch.Generator().manual_seed(check_seed(seed))
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_uniform_(m.weight, a=math.sqrt(5), generator=g)
                if m.bias is not None:
                    fan_in = m.weight[0].numel()
                    bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
                    nn.init.uniform_(m.bias, -bound, bound, generator=g)
            elif isinstance(m, (nn.GroupNorm, nn.BatchNorm2d, nn.LayerNorm)) and m.weight is not None:
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
    return module


def _common(channel, num_classes, width, im_size, seed):
    channel = check_int(channel, "channel", min_val=1)
    num_classes = check_int(num_classes, "num_classes", min_val=2)
    width = check_int(width, "width", min_val=1)
    im_size = check_int(im_size, "im_size", min_val=8)
    seed = None if seed is None else check_seed(seed)
    return channel, num_classes, width, im_size, seed


class _Net(nn.Module):
    """What ConvNet and AlexNet share: ``features`` -> flatten -> ``classifier``, with their inputs checked."""

    input_shape: tuple[int, int, int]  # (channel, im_size, im_size)

    def _setup(self, channel: int, num_classes: int, im_size: int, seed) -> None:
        self.input_shape = (channel, im_size, im_size)
        self.num_classes = num_classes
        if seed is not None:
            reinitialise(self, seed)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """The flattened features before the classifier (what DM matches and REG aligns).

        Parameters
        ----------
        x : torch.Tensor
            Floating ``(N, channel, im_size, im_size)``.

        Returns
        -------
        torch.Tensor
            ``(N, features)``.

        Raises
        ------
        InputError
            If ``x`` is not a floating tensor of that shape.
        """
        x = check_tensor(x, "x", shape=(None, *self.input_shape), finite=False, allow_empty=True)
        return self.features(x).flatten(1)

    def classify(self, h: torch.Tensor) -> torch.Tensor:
        """Logits from features.

        Parameters
        ----------
        h : torch.Tensor
            Output of :meth:`embed`, ``(N, features)``.

        Returns
        -------
        torch.Tensor
            ``(N, num_classes)``.
        """
        h = check_tensor(h, "h", shape=(None, self.classifier.in_features), finite=False, allow_empty=True)
        return self.classifier(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits: ``classify(embed(x))``.

        Parameters
        ----------
        x : torch.Tensor
            Finite floating ``(N, channel, im_size, im_size)``.

        Returns
        -------
        torch.Tensor
            ``(N, num_classes)``.

        Raises
        ------
        InputError
            If ``x`` is not a finite floating tensor of that shape.
        """
        with torch.no_grad():  # the finiteness check must not record autograd nodes on x
            x = check_tensor(x, "x", shape=(None, *self.input_shape), allow_empty=True)
        return self.classify(self.embed(x))


class ConvNet(_Net):
    """ConvNet of the condensation benchmark: ``depth`` x [conv3x3 -> norm -> ReLU -> avgpool 2].

    Parameters
    ----------
    channel : int, default 3
    num_classes : int, default 10
    width : int, default 128
        Channels of every convolution (official ``net_width`` 128).
    depth : int, default 3
        Blocks (official ``net_depth`` 3); ``im_size / 2**depth`` must be at least 1.
    im_size : int, default 32
        Side of the square input.
    norm : {"instancenorm", "none"}, default "instancenorm"
        Instance norm as the benchmark builds it, ``GroupNorm(width, width, affine=True)``.
    seed : int, optional
        Initialise from this seed (:func:`reinitialise`) instead of the global random state.
    """

    def __init__(
        self,
        channel: int = 3,
        num_classes: int = 10,
        width: int = 128,
        depth: int = 3,
        im_size: int = 32,
        norm: str = "instancenorm",
        seed: int | None = None,
    ) -> None:
        super().__init__()
        channel, num_classes, width, im_size, seed = _common(channel, num_classes, width, im_size, seed)
        depth = check_int(depth, "depth", min_val=1)
        if im_size >> depth < 1:
            raise InputError(f"depth {depth} pools a {im_size}-pixel image below one pixel", "lower depth")
        norm = check_choice(norm, "norm", ("instancenorm", "none"))
        layers: list[nn.Module] = []
        c = channel
        for _ in range(depth):
            layers.append(nn.Conv2d(c, width, 3, padding=1))
            if norm == "instancenorm":
                layers.append(nn.GroupNorm(width, width, affine=True))
            layers += [nn.ReLU(), nn.AvgPool2d(2, 2)]
            c = width
        self.features = nn.Sequential(*layers)
        side = im_size >> depth
        self.classifier = nn.Linear(width * side * side, num_classes)
        self._setup(channel, num_classes, im_size, seed)


class AlexNet(_Net):
    """AlexNet of the condensation benchmark: five convolutions, ReLU, three max-pools, one linear layer.

    Parameters
    ----------
    channel : int, default 3
    num_classes : int, default 10
    width : int, default 128
        Channels of the first convolution; the others are 1.5x, 2x, 1.5x, 1.5x of it (the official
        128-192-256-192-192).
    im_size : int, default 32
    norm : {"none", "instancenorm"}, default "none"
        ``"none"`` is the official network; ``"instancenorm"`` adds ``GroupNorm(c, c)`` after every convolution
        (our option: the un-normalised network barely trains at the narrow widths of CPU runs).
    seed : int, optional
        Initialise from this seed (:func:`reinitialise`).
    """

    def __init__(
        self,
        channel: int = 3,
        num_classes: int = 10,
        width: int = 128,
        im_size: int = 32,
        seed: int | None = None,
        norm: str = "none",
    ) -> None:
        super().__init__()
        channel, num_classes, width, im_size, seed = _common(channel, num_classes, width, im_size, seed)
        norm = check_choice(norm, "norm", ("none", "instancenorm"))
        w1, w2, w3 = width, (3 * width) // 2, 2 * width

        def block(cin, cout, k, pad):
            layers = [nn.Conv2d(cin, cout, k, padding=pad)]
            if norm == "instancenorm":
                layers.append(nn.GroupNorm(cout, cout, affine=True))
            return layers + [nn.ReLU()]

        self.features = nn.Sequential(
            *block(channel, w1, 5, 4 if channel == 1 else 2),
            nn.MaxPool2d(2, 2),
            *block(w1, w2, 5, 2),
            nn.MaxPool2d(2, 2),
            *block(w2, w3, 3, 1),
            *block(w3, w2, 3, 1),
            *block(w2, w2, 3, 1),
            nn.MaxPool2d(2, 2),
        )
        side = (im_size + (4 if channel == 1 else 0)) // 8
        self.classifier = nn.Linear(w2 * side * side, num_classes)
        self._setup(channel, num_classes, im_size, seed)


def check_model(model, name: str = "model") -> nn.Module:
    """A ``torch.nn.Module`` with callable ``embed`` and ``classify`` methods.

    Parameters
    ----------
    model : object
    name : str, default "model"

    Returns
    -------
    torch.nn.Module
        ``model`` itself.
    """
    if not isinstance(model, nn.Module):
        raise InputError(f"{name} must be a torch.nn.Module, got {type(model).__name__}")
    for method in ("embed", "classify"):
        if not callable(getattr(model, method, None)):
            raise InputError(
                f"{name} ({type(model).__name__}) has no {method}() method",
                "give a module with embed(x) -> features and classify(h) -> logits",
            )
    return model


def check_image_shape(model, x: torch.Tensor, name: str, model_name: str = "model") -> torch.Size:
    """``x``'s image shape ``(channel, H, W)``, refused where ``model`` declares another (``input_shape``).

    Parameters
    ----------
    model : torch.nn.Module
    x : torch.Tensor
        Images ``(N, channel, H, W)``.
    name, model_name : str
        The arguments' names for the message.

    Returns
    -------
    torch.Size
    """
    want = getattr(model, "input_shape", None)
    if want is not None and tuple(x.shape[1:]) != tuple(want):
        raise InputError(f"{name} holds images of shape {tuple(x.shape[1:])}; {model_name} takes {tuple(want)}")
    return x.shape[1:]


def check_classifier(model, x: torch.Tensor, name: str, model_name: str, num_classes: int | None = None) -> int:
    """The number of classes ``model`` predicts, after checking that it takes the images ``x``.

    ConvNet and AlexNet declare their input shape and classes; any other module is run on one image of ``x``
    (eval mode, no gradients; every submodule's mode restored), so that a mismatch fails here, before any work.

    Parameters
    ----------
    model : torch.nn.Module
    x : torch.Tensor
        Images ``(N, channel, H, W)``, ``N >= 1``.
    name, model_name : str
        The arguments' names for the message.
    num_classes : int, optional
        The classes the model must predict.

    Returns
    -------
    int
    """
    check_image_shape(model, x, name, model_name)
    k = getattr(model, "num_classes", None) if isinstance(model, _Net) else None
    lazy = any(isinstance(p, nn.parameter.UninitializedParameter) for p in model.parameters())
    if k is None and not lazy:
        modes = [(m, m.training) for m in model.modules()]
        try:
            with torch.no_grad():
                out = model.eval()(x[:1])
        except (RuntimeError, ValueError, TypeError, IndexError) as e:
            first = (str(e).splitlines() or [""])[0][:120]
            raise InputError(f"{model_name} cannot take {name} of shape {tuple(x.shape[1:])}: {first}") from None
        finally:
            for m, mode in modes:
                m.training = mode
        if not isinstance(out, torch.Tensor) or out.dim() != 2 or len(out) != 1:
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise InputError(f"{model_name} returns {got} for one image of {name}, not (1, classes) logits")
        k = out.shape[1]
    if num_classes is not None and k is not None and k != num_classes:
        raise InputError(f"{model_name} predicts {k} classes, but num_classes is {num_classes}")
    return k
