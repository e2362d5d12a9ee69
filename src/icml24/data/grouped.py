"""Grouped classification data: a real data set with a planted minority group, for group-robust training.

:func:`fashion_mnist_inverted` reads Fashion-MNIST from the data root (:func:`~icml24.data.tabular.fashion_mnist`)
and inverts the pixels (``x -> 1 - x``) of a small fraction of the images of every class, in the training and
in the test set. The inverted images form a minority group that plain ERM under-serves; a group-robust loss
(:class:`icml24.group_dro.GroupDROLoss`) should raise its accuracy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch

from ..validation import check_bool, check_choice, check_probability, check_seed
from .tabular import Split, fashion_mnist


@dataclass(kw_only=True)
class GroupedSplit(Split):
    """A :class:`~icml24.data.tabular.Split` whose examples also carry group ids.

    Parameters
    ----------
    x_train, y_train, x_test, y_test, classes, info
        As in :class:`~icml24.data.tabular.Split`.
    g_train, g_test : torch.Tensor
        Group ids ``(N,)`` and ``(M,)`` (int64), in ``0 .. len(group_names) - 1``.
    group_names : tuple of str
        The groups' names, indexed by group id.
    """

    g_train: torch.Tensor
    g_test: torch.Tensor
    group_names: tuple[str, ...]

    @property
    def num_groups(self) -> int:
        """Number of groups, ``len(group_names)``.

        Returns
        -------
        int
        """
        return len(self.group_names)

    def group_counts(self) -> torch.Tensor:
        """Training examples per group (int64, length :attr:`num_groups`), the ``n_g`` of the generalisation
        adjustment of :class:`icml24.group_dro.GroupDROLoss`.

        Returns
        -------
        torch.Tensor
        """
        return torch.bincount(self.g_train, minlength=self.num_groups)

    def __repr__(self) -> str:
        return (
            f"GroupedSplit(train={tuple(self.x_train.shape)}, test={tuple(self.x_test.shape)}, "
            f"classes={self.num_classes}, groups={self.num_groups})"
        )


def _plant(y: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """A boolean mask marking ``round(fraction * n_c)`` random examples of every class ``c`` (at least one)."""
    mask = np.zeros(len(y), dtype=bool)
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        k = min(len(idx), max(1, int(round(fraction * len(idx)))))
        mask[rng.choice(idx, size=k, replace=False)] = True
    return mask


def fashion_mnist_inverted(
    *,
    fraction: float = 0.05,
    groups: str = "inverted",
    root: str | os.PathLike | None = None,
    n_train: int | None = None,
    n_test: int | None = None,
    seed: int = 0,
    flatten: bool = True,
) -> GroupedSplit:
    """Fashion-MNIST with a planted minority group: a fraction of every class's images inverted (``1 - x``).

    In the training and in the test set, ``round(fraction * n_c)`` images of every class ``c`` are chosen at
    random and their pixels inverted (white garment on black becomes black on white). Labels are unchanged.

    Parameters
    ----------
    fraction : float, default 0.05
        Fraction of every class's images that are inverted, in (0, 1).
    groups : {"inverted", "class_inverted"}, default "inverted"
        ``"inverted"``: two groups, 0 = as recorded, 1 = inverted (class-agnostic). ``"class_inverted"``: 20
        groups, ``2 * label + inverted``.
    root : str or os.PathLike, optional
        The data root (default ``$ICML24_DATA`` or ``~/.cache/icml24``).
    n_train, n_test : int, optional
        Sizes of class-stratified subsets, as in :func:`~icml24.data.tabular.fashion_mnist`; the full sets
        (60,000 and 10,000) when None.
    seed : int, default 0
        Seed of the subsets and of which images are inverted.
    flatten : bool, default True
        Inputs of shape ``(N, 784)``; ``False`` gives images ``(N, 1, 28, 28)``.

    Returns
    -------
    GroupedSplit
        Float32 inputs in [0, 1], int64 labels and group ids; ``info`` holds ``source``, ``fraction``,
        ``inverted_train`` and ``inverted_test`` (the boolean masks).

    Raises
    ------
    InputError
        If an argument is invalid.
    DataUnavailable
        If Fashion-MNIST is not under the data root.
    """
    fraction = check_probability(fraction, "fraction", open_left=True, open_right=True)
    groups = check_choice(groups, "groups", ("inverted", "class_inverted"))
    seed = check_seed(seed)
    flatten = check_bool(flatten, "flatten")
    base = fashion_mnist(root=root, n_train=n_train, n_test=n_test, seed=seed, flatten=flatten)
    rng = np.random.default_rng([seed, 0x1A7E])
    inv = []
    xs = []
    for x, y in ((base.x_train, base.y_train), (base.x_test, base.y_test)):
        mask = _plant(y.numpy(), fraction, rng)
        m = torch.from_numpy(mask)
        x = x.clone()
        x[m] = 1.0 - x[m]
        inv.append(m)
        xs.append(x)
    if groups == "inverted":
        g_train, g_test = inv[0].long(), inv[1].long()
        names: tuple[str, ...] = ("as recorded", "inverted")
    else:
        g_train = 2 * base.y_train + inv[0].long()
        g_test = 2 * base.y_test + inv[1].long()
        names = tuple(f"{c}{suffix}" for c in base.classes for suffix in ("", " (inverted)"))
    return GroupedSplit(
        xs[0],
        base.y_train,
        xs[1],
        base.y_test,
        base.classes,
        {**base.info, "fraction": fraction, "inverted_train": inv[0], "inverted_test": inv[1]},
        g_train=g_train,
        g_test=g_test,
        group_names=names,
    )


__all__ = ["GroupedSplit", "fashion_mnist_inverted"]
