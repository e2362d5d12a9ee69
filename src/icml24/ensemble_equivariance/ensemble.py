"""Deep ensembles trained together with ``torch.func`` and the metrics of emergent equivariance.

:func:`train_ensemble` stacks the parameters of M members (``torch.func.stack_module_state``) and takes
full-batch gradient steps of the MSE loss for all of them at once through ``vmap(grad(...))`` over
``functional_call``: one vectorised training, not a Python loop of M trainings (Gerken & Kessel, ICML 2024,
train each member independently from its own initialisation, with the same fully augmented data).

Metrics (Gerken & Kessel, Sec. 5): the orbit same prediction ``OSP(x) = #{g : argmax f(g x) = argmax f(x)}``
(1..|G|) and the equivariance error ``|f(g x) - rho_Y(g) f(x)|``, averaged over the group and a data set, for
each member and for the ensemble mean.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Sequence

import torch
from torch import nn
from torch.func import functional_call, grad, stack_module_state, vmap

from ..errors import InputError
from ..validation import check_choice, check_float, check_int, check_seed, check_tensor
from .groups import OUTPUTS, as_group, check_images, check_vectors

__all__ = [
    "Ensemble",
    "train_ensemble",
    "make_members",
    "targets",
    "orbit_outputs",
    "orbit_same_prediction",
    "equivariance_error",
    "ensemble_metrics",
]


def check_factory(factory: Any) -> Callable[[], nn.Module]:
    if not callable(factory) or isinstance(factory, nn.Module):
        raise InputError(
            f"factory must be a callable that returns a new torch.nn.Module, got {type(factory).__name__}",
            "pass e.g. lambda: NTKMLP(64, 128, 10)",
        )
    return factory


def make_members(factory: Callable[[], nn.Module], members: int, seed: int = 0) -> list[nn.Module]:
    """Build ``members`` independently initialised modules; member ``i`` is drawn with seed ``seed * 100003 + i``.

    The global RNG is forked, so the caller's random state is untouched.

    Parameters
    ----------
    factory : callable
        ``factory()`` returns a new ``nn.Module`` (drawing its initialisation from the global RNG, as
        ``nn.Linear`` does).
    members : int
        M >= 1.
    seed : int, default 0

    Returns
    -------
    list of torch.nn.Module
    """
    factory = check_factory(factory)
    members = check_int(members, "members", min_val=1)
    seed = check_seed(seed)
    out = []
    with torch.random.fork_rng(devices=[]):
        for i in range(members):
            torch.manual_seed(seed * 100003 + i)
            m = _call(factory, "factory()")
            if not isinstance(m, nn.Module):
                raise InputError(f"factory must return a torch.nn.Module, got {type(m).__name__}")
            if not any(True for _ in m.parameters()):
                raise InputError("factory must return a module with parameters")
            out.append(m)
    return out


def _call(fn: Callable, what: str, *args: Any) -> Any:
    """``fn(*args)``; an exception raised inside is the caller's bad argument, named by ``what``."""
    try:
        return fn(*args)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's callable failed on what it was given
        first = (str(exc).strip().splitlines() or [""])[0][:160]
        raise InputError(f"{what} failed: {type(exc).__name__}: {first}") from None


def check_fit(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> None:
    """Refuse ``x`` the model cannot take and ``y`` unlike its outputs (one probe row; the RNG is untouched)."""
    dtype = next(model.parameters()).dtype
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        out = _call(model, "the members' forward on x", x[:1].to(dtype))
    if tuple(out.shape[1:]) != tuple(y.shape[1:]):
        raise InputError(f"y must match the output shape {tuple(out.shape[1:])} per row, got {tuple(y.shape[1:])}")


def diverged(params: dict, lr: float) -> None:
    """Refuse a training whose parameters became NaN or infinite (the step size was too large)."""
    if not all(bool(torch.isfinite(v).all()) for v in params.values()):
        raise InputError(f"lr {lr:g} makes the training diverge (NaN or infinite parameters)", "lower lr")


def targets(y: torch.Tensor, classes: int | None = None) -> torch.Tensor:
    """MSE targets: one-hot rows for integer labels, float targets unchanged (copied).

    Parameters
    ----------
    y : torch.Tensor
        ``(N,)`` integer labels or ``(N, ...)`` float targets.
    classes : int, optional
        Number of classes for labels (default: largest label + 1).

    Returns
    -------
    torch.Tensor
        float32 targets.
    """
    y = check_tensor(y, "y", dtype="any")
    if y.dtype == torch.bool or y.is_complex():
        raise InputError(f"y must hold integer labels or real targets, got dtype {y.dtype}")
    if y.ndim == 0:
        raise InputError("y must have a leading sample dimension (N,) or (N, ...), got a scalar")
    if y.is_floating_point():
        if classes is not None:
            raise InputError("classes applies to integer labels, but y holds float targets", "leave classes=None")
        return y.detach().clone().float()
    if y.ndim != 1:
        raise InputError(f"y must be (N,) labels when it holds integers, got shape {tuple(y.shape)}")
    if int(y.min()) < 0:
        raise InputError("y must hold labels >= 0")
    classes = check_int(classes, "classes", min_val=int(y.max()) + 1, allow_none=True)
    return nn.functional.one_hot(y.long(), classes or int(y.max()) + 1).float()


def check_training(
    members: Any, steps: Any, lr: Any, seed: Any, x: Any, y: Any
) -> tuple[int, int, float, int, torch.Tensor, torch.Tensor]:
    """The arguments every ensemble trainer shares, checked: ``(members, steps, lr, seed, x, y)``, with ``y``
    as float targets (:func:`targets`) of as many rows as ``x``."""
    members = check_int(members, "members", min_val=1)
    steps = check_int(steps, "steps", min_val=0)
    lr = check_float(lr, "lr", min_val=0.0, include_boundaries="neither")
    seed = check_seed(seed)
    x = check_tensor(x, "x", dtype="float")
    if x.ndim < 2:
        raise InputError(f"x must be a batch (N, ...) with N >= 1, got shape {tuple(x.shape)}")
    y = targets(y)
    if len(y) != len(x):
        raise InputError(f"y must have {len(x)} rows like x, got {len(y)}")
    return members, steps, lr, seed, x, y


def member_loss(pred: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """One member's loss ``mean_i |f(x_i) - y_i|^2 / 2`` (summed over the outputs): the MSE of the theorem."""
    return 0.5 * ((pred - y) ** 2).reshape(len(y), -1).sum(1).mean()


class Ensemble:
    """M members of one architecture with stacked parameters; call it for the ensemble mean.

    Parameters
    ----------
    base : torch.nn.Module
        A template of the architecture (its own parameters are not used).
    params : dict of str to torch.Tensor
        Parameters stacked on a leading member axis (``stack_module_state``'s layout).
    buffers : dict of str to torch.Tensor, optional
        Buffers, stacked the same way.
    """

    def __init__(self, base: nn.Module, params: dict, buffers: dict | None = None) -> None:
        if not isinstance(base, nn.Module):
            raise InputError(f"base must be a torch.nn.Module, got {type(base).__name__}")
        stacked = {}
        for arg, value, names in (
            ("params", params, base.named_parameters()),
            ("buffers", buffers or {}, base.named_buffers()),
        ):
            if not isinstance(value, dict) or (arg == "params" and not value):
                raise InputError(f"{arg} must be a non-empty dict of stacked tensors, got {type(value).__name__}")
            shapes = {n: tuple(t.shape) for n, t in names}
            for k, v in value.items():
                v = check_tensor(v, arg, dtype="any" if arg == "buffers" else "float")
                if k not in shapes or tuple(v.shape[1:]) != shapes[k]:
                    raise InputError(
                        f"{arg} entry {k!r} of shape {tuple(v.shape)} is not a stacked {type(base).__name__} {arg[:-1]}"
                    )
                stacked[k] = v
        if set(params) != {n for n, _ in base.named_parameters()}:
            raise InputError(f"params must hold every parameter of {type(base).__name__}, got {sorted(params)}")
        sizes = {int(v.shape[0]) for v in stacked.values()}
        if len(sizes) != 1:
            raise InputError(f"params must share one leading member dimension, got sizes {sorted(sizes)}")
        self.base = copy.deepcopy(base)
        self.params = {k: v.detach() for k, v in params.items()}
        self.buffers = {k: v.detach() for k, v in (buffers or {}).items()}
        self.snapshots: dict[int, Ensemble] = {}

    @property
    def members(self) -> int:
        """Number of members M.

        Returns
        -------
        int
        """
        return int(next(iter(self.params.values())).shape[0])

    def subset(self, index: Sequence[int]) -> "Ensemble":
        """A new ensemble of the members at ``index``.

        Parameters
        ----------
        index : sequence of int
            Member indices in ``0..M-1``, at least one.

        Returns
        -------
        Ensemble
        """
        if isinstance(index, (str, bytes)) or not hasattr(index, "__len__"):
            raise InputError(f"index must be a sequence of member indices, got {type(index).__name__}")
        idx = [check_int(i, "index", min_val=0, max_val=self.members - 1) for i in index]
        if not idx:
            raise InputError("index is empty", "give at least one member")
        if len(set(idx)) != len(idx):
            raise InputError(f"index must list distinct members, got {idx}")
        t = torch.tensor(idx)
        return Ensemble(
            self.base, {k: v[t] for k, v in self.params.items()}, {k: v[t] for k, v in self.buffers.items()}
        )

    def _check_x(self, x: Any) -> torch.Tensor:
        return check_tensor(x, "x", dtype="float")

    def member_outputs(self, x: torch.Tensor) -> torch.Tensor:
        """Every member's outputs.

        Parameters
        ----------
        x : torch.Tensor
            A batch of inputs the architecture accepts.

        Returns
        -------
        torch.Tensor
            ``(M, N, ...)``.
        """
        x = self._check_x(x)
        dtype = next(iter(self.params.values())).dtype

        def one(p, b, xx):
            return functional_call(self.base, (p, b), (xx,))

        with torch.no_grad():
            try:
                return vmap(one, in_dims=(0, 0, None))(self.params, self.buffers, x.to(dtype))
            except RuntimeError as exc:
                raise InputError(f"x does not fit the members' architecture: {str(exc).splitlines()[0]}") from None

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """The ensemble mean ``(1/M) sum_i f_i(x)``.

        Parameters
        ----------
        x : torch.Tensor

        Returns
        -------
        torch.Tensor
            ``(N, ...)``.
        """
        return self.member_outputs(x).mean(0)

    def __repr__(self) -> str:
        return f"Ensemble(members={self.members}, base={type(self.base).__name__})"


def train_ensemble(
    factory: Callable[[], nn.Module],
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    members: int = 16,
    steps: int = 300,
    lr: float = 1.0,
    seed: int = 0,
    checkpoints: Sequence[int] = (),
) -> Ensemble:
    """Train ``members`` networks from independent initialisations by full-batch gradient descent on the MSE.

    The loss of a member is ``mean_i |f(x_i) - y_i|^2 / 2`` (sum over outputs), the MSE of the theorem; all
    members see the same data. Members are trained together: ``vmap(grad(loss))`` over the parameters stacked
    by ``torch.func.stack_module_state``. Modules with batch-dependent layers (batch norm) are refused.

    Parameters
    ----------
    factory : callable
        ``factory()`` returns a new ``nn.Module`` (see :func:`make_members` for seeding).
    x : torch.Tensor
        Training inputs ``(N, ...)`` (e.g. the orbit-closed set of :func:`~.groups.augment`).
    y : torch.Tensor
        ``(N,)`` integer labels (one-hot targets) or ``(N, C)`` float targets.
    members : int, default 16
        M >= 1.
    steps : int, default 300
        Gradient steps (300 full-batch steps in the digits experiment of the paper's setting).
    lr : float, default 1.0
        Step size (NTK parametrisation tolerates O(1)).
    seed : int, default 0
        Seeds the members' initialisation.
    checkpoints : sequence of int, default ()
        Steps (``0..steps``) at which a copy of the ensemble is kept in ``result.snapshots``.

    Returns
    -------
    Ensemble
        The trained ensemble; ``snapshots[s]`` the ensemble after ``s`` steps.
    """
    factory = check_factory(factory)
    members, steps, lr, seed, x, y = check_training(members, steps, lr, seed, x, y)
    if isinstance(checkpoints, (str, bytes)) or not hasattr(checkpoints, "__iter__"):
        raise InputError(f"checkpoints must be a sequence of steps, got {type(checkpoints).__name__}")
    checkpoints = sorted({check_int(c, "checkpoints", min_val=0, max_val=steps) for c in checkpoints})
    mods = make_members(factory, members, seed)
    if any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in mods[0].modules()):
        raise InputError("factory must not build batch norm layers (members are trained with vmap)")
    params, buffers = stack_module_state(mods)
    params = {k: v.detach().clone() for k, v in params.items()}
    buffers = {k: v.detach().clone() for k, v in buffers.items()}
    base = copy.deepcopy(mods[0])
    dtype = next(iter(params.values())).dtype
    x = x.to(dtype)
    y = y.to(dtype)
    check_fit(mods[0], x, y)

    def loss(p, b, xx, yy):
        pred = functional_call(base, (p, b), (xx,))
        return member_loss(pred, yy)

    step_fn = vmap(grad(loss), in_dims=(0, 0, None, None))
    result_snaps: dict[int, Ensemble] = {}
    for s in range(steps + 1):
        if s in checkpoints:
            diverged(params, lr)
            result_snaps[s] = Ensemble(base, {k: v.clone() for k, v in params.items()}, buffers)
        if s == steps:
            break
        grads = step_fn(params, buffers, x, y)
        params = {k: v - lr * grads[k] for k, v in params.items()}
    diverged(params, lr)
    ens = Ensemble(base, params, buffers)
    ens.snapshots = result_snaps
    return ens


def _check_f(f: Any) -> Callable:
    if not callable(f):
        raise InputError(f"f must be callable (a model or an Ensemble), got {type(f).__name__}")
    return f


def orbit_outputs(f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, grp: Any = "c4") -> torch.Tensor:
    """``f(g x)`` for every group element, stacked: the input of :func:`orbit_same_prediction`.

    Parameters
    ----------
    f : callable
        A model, an :class:`Ensemble` (its mean) or ``Ensemble.member_outputs``.
    x : torch.Tensor
        Images ``(N, ..., H, H)``.
    grp : Group or {"c4", "d4"}, default "c4"

    Returns
    -------
    torch.Tensor
        ``(order, *f(x).shape)``; entry 0 is ``f(x)``.
    """
    f = _check_f(f)
    grp = as_group(grp, "grp")
    x = check_images(x)
    if not isinstance(x, torch.Tensor):
        raise InputError("x must be a torch.Tensor", "convert it with torch.as_tensor")
    was = [(m, m.training) for m in f.modules()] if isinstance(f, nn.Module) else []
    try:
        for m, _ in was:
            m.train(False)
        with torch.no_grad():
            return orbit_stack(f, x, grp)
    finally:
        for m, mode in was:
            m.train(mode)


def orbit_stack(f: Callable, x: torch.Tensor, grp, name: str = "f") -> torch.Tensor:
    """``f(g x)`` for every element, stacked; what ``f`` returns must be a finite tensor (or array)."""
    outs = []
    for g in range(grp.order):
        out = _call(lambda v: torch.as_tensor(f(v)), f"{name}(x)", grp._apply(x, g))
        if out.is_complex() or (out.is_floating_point() and not bool(torch.isfinite(out.detach()).all())):
            raise InputError(f"{name} returned complex, NaN or infinite outputs on x")
        outs.append(out)
    return torch.stack(outs)


def _check_outputs(outputs: Any, name: str = "outputs") -> torch.Tensor:
    out = check_tensor(outputs, name, dtype="float")
    if out.ndim < 3:
        raise InputError(f"{name} must have shape (|G|, N, C) (from orbit_outputs), got {tuple(out.shape)}")
    if out.shape[0] not in (4, 8):
        raise InputError(f"{name} must have the group order 4 or 8 as first dimension, got {out.shape[0]}")
    return out


def orbit_same_prediction(outputs: torch.Tensor, *, per_sample: bool = False):
    """Orbit same prediction: how many ``g`` give ``argmax f(g x) = argmax f(x)`` (1..|G|).

    Parameters
    ----------
    outputs : torch.Tensor
        ``(|G|, N, C)`` from :func:`orbit_outputs` (or ``(|G|, M, N, C)`` for members: averaged over them).
    per_sample : bool, default False
        Return the OSP of every example instead of its mean.

    Returns
    -------
    float or torch.Tensor
        The mean OSP over the examples (and members), or the per-example counts.
    """
    out = _check_outputs(outputs)
    if not isinstance(per_sample, bool):
        raise InputError(f"per_sample must be a bool, got {type(per_sample).__name__}")
    pred = out.argmax(-1)
    same = (pred == pred[0:1]).sum(0).to(torch.float64)
    return same if per_sample else float(same.mean())


def equivariance_error(outputs: torch.Tensor, grp: Any = "c4", *, output: str = "invariant") -> float:
    """Mean over the group and the data of ``|f(g x) - rho_Y(g) f(x)|`` (Euclidean norm per example).

    Parameters
    ----------
    outputs : torch.Tensor
        ``(|G|, N, ...)`` from :func:`orbit_outputs`.
    grp : Group or {"c4", "d4"}, default "c4"
        Must match ``outputs.shape[0]``.
    output : {"invariant", "image", "vector"}, default "invariant"
        How outputs transform; ``"image"`` needs square outputs ``(..., H, H)``, ``"vector"`` plane vectors
        ``(..., 2)`` (rotated and reflected by :meth:`~.groups.Group.vector_rep`).

    Returns
    -------
    float
    """
    out = _check_outputs(outputs)
    grp = as_group(grp, "grp")
    output = check_choice(output, "output", OUTPUTS)
    if out.shape[0] != grp.order:
        raise InputError(f"outputs must have {grp.order} rows for {grp.name}, got {out.shape[0]}")
    if output == "image":
        check_images(out[0], "outputs")
    if output == "vector":
        check_vectors(out, "outputs")
    errs = []
    for g in range(grp.order):
        if output == "image":
            ref = grp._apply(out[0], g)
        elif output == "vector":
            ref = grp._apply_vector(out[0], g)
        else:
            ref = out[0]
        errs.append((out[g] - ref).reshape(out.shape[1], -1).norm(dim=1))
    return float(torch.stack(errs).mean())


def ensemble_metrics(
    ensemble: Ensemble, x: torch.Tensor, grp: Any = "c4", *, sizes: Sequence[int] = (), output: str = "invariant"
) -> dict:
    """OSP and equivariance error of the members and of the ensemble mean (and of sub-ensembles).

    Sub-ensembles of size ``m`` are the ``M // m`` disjoint groups of consecutive members; their metrics are
    averaged.

    Parameters
    ----------
    ensemble : Ensemble
    x : torch.Tensor
        Images ``(N, ..., H, H)``.
    grp : Group or {"c4", "d4"}, default "c4"
    sizes : sequence of int, default ()
        Sub-ensemble sizes ``m`` (each 1..M) to report as ``osp_m{m}`` and ``err_m{m}``.
    output : {"invariant", "image", "vector"}, default "invariant"
        How the outputs transform (:func:`equivariance_error`); the OSP entries are reported for
        ``"invariant"`` (class scores) only.

    Returns
    -------
    dict of str to float
        ``member_osp``, ``member_err``, ``ensemble_osp``, ``ensemble_err`` and the sub-ensemble entries.
    """
    if not isinstance(ensemble, Ensemble):
        raise InputError(f"ensemble must be an Ensemble, got {type(ensemble).__name__}")
    grp = as_group(grp, "grp")
    output = check_choice(output, "output", OUTPUTS)
    x = check_images(x)
    if not isinstance(x, torch.Tensor):
        raise InputError("x must be a torch.Tensor", "convert it with torch.as_tensor")
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
        raise InputError(f"sizes must be a sequence of ints, got {type(sizes).__name__}")
    sizes = [check_int(m, "sizes", min_val=1, max_val=ensemble.members) for m in sizes]
    mo = orbit_outputs(ensemble.member_outputs, x, grp)  # (G, M, N, C)
    osp = output == "invariant"

    def err(o):
        return equivariance_error(o, grp, output=output)

    res = {
        "member_err": float(sum(err(mo[:, i]) for i in range(mo.shape[1])) / mo.shape[1]),
        "ensemble_err": err(mo.mean(1)),
    }
    if osp:
        res["member_osp"] = orbit_same_prediction(mo)
        res["ensemble_osp"] = orbit_same_prediction(mo.mean(1))
    for m in sizes:
        groups = [mo[:, j * m : (j + 1) * m].mean(1) for j in range(ensemble.members // m)]
        if osp:
            res[f"osp_m{m}"] = float(sum(orbit_same_prediction(o) for o in groups) / len(groups))
        res[f"err_m{m}"] = float(sum(err(o) for o in groups) / len(groups))
    return res
