"""Which modules of a model Jetfire converts, and swapping them: linear layers (``nn.Linear`` and transformers'
``Conv1D``), norms (LayerNorm, RMSNorm) and element-wise activations, found by type and by their place inside the
numbered transformer blocks. :func:`icml24.jetfire.convert` and the baselines' ``convert_baseline`` share them.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

import torch
from torch import Tensor, nn

from ..errors import InputError


def is_linear(module: nn.Module) -> bool:
    """Whether a module is an ``nn.Linear`` or a transformers ``Conv1D`` (GPT-2's linear layer).

    Parameters
    ----------
    module : nn.Module

    Returns
    -------
    bool
    """
    return isinstance(module, nn.Linear) or type(module).__name__ == "Conv1D"


def linear_weight(module: nn.Module, name: str) -> tuple[Tensor, Tensor | None]:
    """The weight in ``nn.Linear``'s ``(out, in)`` orientation and the bias of a linear layer (detached).

    Parameters
    ----------
    module : nn.Linear or Conv1D
    name : str
        The argument's name for the message.

    Returns
    -------
    (torch.Tensor, torch.Tensor or None)

    Raises
    ------
    InputError
        If the module is neither.
    """
    if not is_linear(module):
        raise InputError(f"{name} must be an nn.Linear or a transformers Conv1D, got {type(module).__name__}")
    _check_finite(module, name)
    w = module.weight.detach()
    # transformers.pytorch_utils.Conv1D keeps its weight as (in, out)
    return (w if isinstance(module, nn.Linear) else w.t()), None if module.bias is None else module.bias.detach()


def _check_finite(module: nn.Module, name: str) -> None:
    for pname, p in module.named_parameters():
        if p.is_floating_point() and p.numel() and not bool(torch.isfinite(p).all()):
            raise InputError(f"{name} has NaN or infinite entries in its parameter {pname!r}")


def is_norm(module: nn.Module) -> bool:
    """Whether a module is a LayerNorm or an RMSNorm (torch's or a transformers model's).

    Parameters
    ----------
    module : nn.Module

    Returns
    -------
    bool
    """
    return isinstance(module, (nn.LayerNorm, nn.RMSNorm)) or type(module).__name__.endswith(("RMSNorm", "LayerNorm"))


def is_activation(module: nn.Module) -> bool:
    """Whether a module is an element-wise activation (torch's or ``transformers.activations``).

    Parameters
    ----------
    module : nn.Module

    Returns
    -------
    bool
    """
    mod = type(module).__module__
    if isinstance(module, nn.MultiheadAttention):  # lives in torch.nn.modules.activation, but is no activation
        return False
    return mod.startswith("transformers.activations") or mod == "torch.nn.modules.activation"


_IN_BLOCK = re.compile(r"(^|\.)\d+\.")


def jetfire_targets(model: nn.Module) -> dict[str, str]:
    """The modules :func:`convert` swaps by default: linear layers (except the LM head), and the norms and
    activations inside the numbered transformer blocks (the final norm and embeddings stay in FP); in a
    model without numbered blocks (a single block), every norm and activation.

    Parameters
    ----------
    model : nn.Module

    Returns
    -------
    dict of str to str
        Module name -> ``"linear"``, ``"norm"`` or ``"activation"``.
    """
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    named = [(n, m) for n, m in model.named_modules() if n and m is not head]
    # a whole model: only inside its numbered blocks; a single block (no numbered children): everywhere
    numbered = any(_IN_BLOCK.search(n + ".") for n, _ in named)
    out = {}
    for name, m in named:
        inside = not numbered or bool(_IN_BLOCK.search(name + "."))
        if is_linear(m):
            out[name] = "linear"
        elif inside and is_norm(m):
            out[name] = "norm"
        elif inside and is_activation(m):
            out[name] = "activation"
    return out


def replace_modules(model: nn.Module, factory: Callable[[str, nn.Module], nn.Module], names: Sequence[str]):
    """Swap the named submodules of ``model`` in place by ``factory(name, module)``.

    Parameters
    ----------
    model : nn.Module
    factory : callable
        ``factory(name, old_module) -> new_module``.
    names : sequence of str
        Dotted names of submodules.

    Returns
    -------
    nn.Module
        ``model``.
    """
    for name in names:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, factory(name, getattr(parent, child)))
    return model


def check_model_and_modules(model, modules, what: str) -> dict[str, str]:
    """Validate ``model`` and the ``modules`` to convert; the kind of each module to swap.

    Parameters
    ----------
    model : nn.Module
    modules : sequence of str or None
        Names to convert; None for the defaults of :func:`jetfire_targets`.
    what : str
        ``"all"`` (linears, norms, activations) or ``"linear"`` (linear layers only).

    Returns
    -------
    dict of str to str
        Module name -> kind.

    Raises
    ------
    InputError
        If ``model`` is not a module, has nothing to convert, a named module is missing or unsupported, or a module
        to convert has NaN or infinite parameters.
    """
    if not isinstance(model, nn.Module):
        raise InputError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    targets = jetfire_targets(model)
    if what == "linear":
        targets = {k: v for k, v in targets.items() if v == "linear"}
    if modules is None:
        if "linear" not in targets.values():
            raise InputError("model has no linear layer to convert", "give a transformer with nn.Linear or Conv1D")
        return _finite_targets(model, targets)
    if not isinstance(modules, (list, tuple)) or not all(isinstance(m, str) for m in modules):
        raise InputError(f"modules must be a list or tuple of module names (str), got {modules!r:.60}")
    if not modules:
        raise InputError("modules is empty", "name at least one module, or leave modules=None")
    known = dict(model.named_modules())
    out = {}
    for name in modules:
        if name not in known:
            raise InputError(f"modules names {name!r}, which model does not have")
        m = known[name]
        kind = (
            "linear"
            if is_linear(m)
            else "norm"
            if is_norm(m) and what == "all"
            else "activation"
            if is_activation(m) and what == "all"
            else None
        )
        if kind is None:
            raise InputError(
                f"modules names {name!r}, a {type(m).__name__}, which cannot be converted",
                "convert nn.Linear / Conv1D, LayerNorm / RMSNorm and activations",
            )
        out[name] = kind
    return _finite_targets(model, out)


def _finite_targets(model: nn.Module, targets: dict[str, str]) -> dict[str, str]:
    for name in targets:
        _check_finite(model.get_submodule(name), f"model's module {name!r}")
    return targets


__all__ = ["jetfire_targets"]
