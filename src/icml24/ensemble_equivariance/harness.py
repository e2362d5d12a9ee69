"""What the ensemble experiments share: MLP members, one-hot targets, the closed-form NTK mean matched to the
trainer, its outputs over a group orbit and training time, and the curves of a metric over ensemble size.

Helpers of :mod:`.experiments`, :mod:`.emergence` and :mod:`.curves`, not part of the package's API.
"""

from __future__ import annotations

import math
from typing import Callable, Iterator, Sequence

import numpy as np
import torch

from .groups import Group
from .ntk import NTKMLP, NTKEnsembleMean

#: the training times at which the closed-form mean's invariance is checked
TIMES = (0.0, 1.0, 10.0, math.inf)
#: the query sets: name -> key of :func:`~.images.load_images`' dict (test digits and Gaussian noise)
QUERIES = {"test": "x_test", "noise": "noise"}


def mlp_factory(d_in: int, width: int, classes: int) -> Callable[[], NTKMLP]:
    """A factory of two-hidden-layer members ``d_in -> width -> width -> classes``.

    Parameters
    ----------
    d_in, width, classes : int

    Returns
    -------
    callable
        ``factory()`` returns a new :class:`~.ntk.NTKMLP`.
    """
    return lambda: NTKMLP(d_in, width, classes, 2)


def slope(sizes: Sequence[int], errs: Sequence[float]) -> float:
    """The fitted log-log slope of ``errs`` against ``sizes``.

    Parameters
    ----------
    sizes : sequence of int
    errs : sequence of float
        Positive.

    Returns
    -------
    float
    """
    return float(np.polyfit(np.log(np.asarray(sizes, float)), np.log(np.asarray(errs, float)), 1)[0])


def onehot(y: torch.Tensor) -> torch.Tensor:
    """One-hot targets over the ten digit classes (a small subset may lack the largest label).

    Parameters
    ----------
    y : torch.Tensor
        Integer labels ``(N,)``.

    Returns
    -------
    torch.Tensor
        ``(N, 10)`` float32.
    """
    return torch.nn.functional.one_hot(y, 10).float()


def ntk_mean(x: torch.Tensor, y: torch.Tensor, classes: int | None = 10) -> NTKEnsembleMean:
    """The closed-form mean matched to :func:`~.ensemble.train_ensemble`: the loss averages over the N rows, so
    gradient flow runs at eta = 1 / N, and step s of learning rate 1 is time t = s.

    Parameters
    ----------
    x : torch.Tensor
        Training inputs ``(N, ...)``.
    y : torch.Tensor
        Integer labels (one-hot over ``classes``) or, with ``classes=None``, float targets.
    classes : int or None, default 10

    Returns
    -------
    NTKEnsembleMean
        Fitted, in float64.
    """
    yy = torch.nn.functional.one_hot(y, classes).double() if classes else y.double()
    return NTKEnsembleMean(2, lr=1.0 / len(x)).fit(x.double(), yy)


def orbit_predictions(
    model: NTKEnsembleMean, queries: dict[str, torch.Tensor], grp: Group
) -> Iterator[tuple[str, str, np.ndarray]]:
    """A closed-form mean's outputs on the orbit of every query set at every time in :data:`TIMES`.

    Parameters
    ----------
    model : NTKEnsembleMean
        Fitted.
    queries : dict of str to torch.Tensor
        Images per query-set name.
    grp : Group

    Yields
    ------
    tuple of (str, str, numpy.ndarray)
        The query-set name, the time's tag (``"0"``, ``"1"``, ``"10"`` or ``"inf"``) and the outputs
        ``(|G|, N, C)`` on the transformed queries (entry 0: the queries themselves).
    """
    for qn, q in queries.items():
        orbit = grp.orbit(q)
        for t in TIMES:
            outs = np.stack([model.predict(orbit[g], t) for g in range(grp.order)])
            tag = "inf" if t == math.inf else f"{t:g}"
            yield qn, tag, outs


def size_curves(
    m: dict[str, float], r: dict[str, float], arm: str, qn: str, sizes: Sequence[int], osp: bool = True
) -> None:
    """Record a metric curve over ensemble size: ``<arm>_osp_m<M>_<qn>`` and ``<arm>_err_m<M>_<qn>`` for every
    size, and the error's log-log slope against M as ``<arm>_err_slope_<qn>``.

    Parameters
    ----------
    m : dict of str to float
        The experiment's metrics, extended in place.
    r : dict of str to float
        What :func:`~.ensemble.ensemble_metrics` returned for these sizes.
    arm, qn : str
        The arm's and the query set's names, in the keys.
    sizes : sequence of int
    osp : bool, default True
        False records the errors only (vector outputs have no OSP).
    """
    for s in sizes:
        if osp:
            m[f"{arm}_osp_m{s}_{qn}"] = r[f"osp_m{s}"]
        m[f"{arm}_err_m{s}_{qn}"] = r[f"err_m{s}"]
    m[f"{arm}_err_slope_{qn}"] = slope(sizes, [r[f"err_m{s}"] for s in sizes])


def accuracy(model: Callable[[torch.Tensor], torch.Tensor], d: dict) -> float:
    """Test accuracy of a classifier (an ensemble's mean or one model).

    Parameters
    ----------
    model : callable
        Images to logits.
    d : dict
        What :func:`~.images.load_images` returned.

    Returns
    -------
    float
    """
    return float((model(d["x_test"]).argmax(1) == d["y_test"]).float().mean())
